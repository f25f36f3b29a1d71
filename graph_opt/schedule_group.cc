// schedule_group: a fused group handed to the tuner's fused-kernel scheduling
// (tuner/fused.h): its anchor's template with the epilogue in the output tile and the log's
// config (or the template's default), else a schedule generated from its pattern.
#include "schedule_group.h"

#include "loom/te/op_registry.h"
#include "loom/tuner/fused.h"

namespace loom::graph_opt {

GroupSchedule schedule_group(const Graph& g, int group, const GroupCompute& c, const Target& target,
                             const records::ApplyHistoryBest* best) {
  const FusedGroup& grp = g.groups[size_t(group)];
  tuner::FusedGroup fg;
  fg.inputs = c.inputs;
  fg.outputs = c.outputs;
  if (grp.anchor >= 0) {
    const Node& a = g.nodes[size_t(grp.anchor)];
    fg.anchor = c.anchor;
    for (ValueRef v : a.inputs) fg.anchor_inputs.push_back(c.values.at(v));
    const te::ops::OpDef& def = te::ops::get_op(a.op);
    if (auto s = def.strategy.find(target.kind()); s != def.strategy.end()) {
      std::vector<TensorType> in;
      for (ValueRef v : a.inputs) in.push_back(g.type(v));
      fg.call = s->second(in, a.attrs);
    }
  }
  tuner::FusedSchedule fs = tuner::schedule_fused(fg, target, best);
  GroupSchedule out;
  out.sched = fs.schedule;
  out.args = fs.args;
  out.note = fs.note;
  out.workload = fs.workload_key;
  out.tuned = fs.source == tuner::ScheduleSource::kTuned;
  if (fs.source != tuner::ScheduleSource::kPattern && fg.call)
    out.task = records::Workload{fg.call->name, fg.call->shape, fg.call->dtype, fg.call->attrs};
  return out;
}

}  // namespace loom::graph_opt
