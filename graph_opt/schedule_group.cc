// schedule_group until the tuner's fused-group entry point lands: every stage that is not an
// output and not a reduction inlined, outputs' outer axis parallel. The anchor's template
// call is resolved (and its record looked up) so that compile reports and warns as it will.
#include "schedule_group.h"

#include <fmt/ranges.h>

#include <set>

#include "loom/te/op_registry.h"

namespace loom::graph_opt {

namespace {

records::Workload workload_of(const te::ops::TemplateCall& c) { return {c.name, c.shape, c.dtype, c.attrs}; }

std::optional<te::ops::TemplateCall> anchor_template(const Graph& g, const FusedGroup& grp, const Target& target) {
  if (grp.anchor < 0) return std::nullopt;
  const Node& a = g.nodes[size_t(grp.anchor)];
  const te::ops::OpDef& def = te::ops::get_op(a.op);
  auto s = def.strategy.find(target.kind());
  if (s == def.strategy.end()) return std::nullopt;
  std::vector<TensorType> in;
  for (ValueRef v : a.inputs) in.push_back(g.type(v));
  return s->second(in, a.attrs);
}

}  // namespace

GroupSchedule schedule_group(const Graph& g, int group, const GroupCompute& c, const Target& target,
                             const records::ApplyHistoryBest* best) {
  const FusedGroup& grp = g.groups[size_t(group)];
  GroupSchedule out;
  out.sched = schedule::create_schedule(c.outputs);
  out.args = c.inputs;
  out.args.insert(out.args.end(), c.outputs.begin(), c.outputs.end());
  std::set<te::Operation> outputs;
  for (const auto& t : c.outputs) outputs.insert(t.op());
  for (schedule::Stage st : out.sched.stages()) {
    const te::Operation& op = st->op;
    if (op->kind != te::OpKind::kCompute || outputs.count(op)) continue;
    if (op->reduce_axis.empty()) st.compute_inline();
  }
  for (const auto& t : c.outputs) {
    schedule::Stage st = out.sched[t];
    if (!st.leaf_iter_vars().empty()) st.parallel(st.leaf_iter_vars()[0]);
  }
  if (auto call = anchor_template(g, grp, target)) {
    records::Workload w = workload_of(*call);
    out.workload = w.key();
    std::optional<records::Record> r = best ? best->best(w, target.str()) : std::nullopt;
    out.tuned = r.has_value();
    out.note = fmt::format("{} {}", w.key(), r ? fmt::format("record config {}", r->config.index) : "no record");
  } else {
    out.note = fmt::format("pattern {}", te::ops::to_string(grp.pattern));
  }
  return out;
}

}  // namespace loom::graph_opt
