// Task extraction: each fused group is scheduled as compile schedules it (schedule_group,
// without a log), and a group scheduled by its anchor's template contributes that template's
// workload; equal workloads are one task whose weight counts its kernels.
#include "loom/graph_opt/task_extraction.h"

#include <map>

#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "loom/te/op_registry.h"
#include "schedule_group.h"

namespace loom::graph_opt {

std::optional<records::Workload> anchor_workload(const Graph& fused, int group, const Target& target) {
  LOOM_CHECK(group >= 0 && size_t(group) < fused.groups.size(), "anchor_workload: graph '{}' has no group {}",
             fused.name, group);
  const FusedGroup& grp = fused.groups[size_t(group)];
  if (grp.anchor < 0) return std::nullopt;
  const Node& a = fused.nodes[size_t(grp.anchor)];
  const te::ops::OpDef& def = te::ops::get_op(a.op);
  auto s = def.strategy.find(target.kind());
  if (s == def.strategy.end()) return std::nullopt;
  std::vector<TensorType> in;
  for (ValueRef v : a.inputs) in.push_back(fused.type(v));
  std::optional<te::ops::TemplateCall> c = s->second(in, a.attrs);
  if (!c) return std::nullopt;
  return records::Workload{c->name, c->shape, c->dtype, c->attrs};
}

TaskExtraction extract_tasks(const Graph& graph, const Target& target, const CompileOptions& opt) {
  TaskExtraction out;
  out.fused = optimize_for_compile(graph, opt);
  const Graph& g = out.fused;
  std::map<std::string, size_t> index;  // workload key → task
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const FusedGroup& grp = g.groups[i];
    GroupSchedule s = schedule_group(g, int(i), compose_group(g, int(i)), target, nullptr);
    if (s.workload.empty()) {
      out.untuned.push_back({grp.name, "", s.note});
      continue;
    }
    std::optional<records::Workload> w = anchor_workload(g, int(i), target);
    LOOM_CHECK(w && w->key() == s.workload,
               "task extraction: graph '{}', group {} ('{}'): compile looks up workload {} but the anchor's "
               "strategy gives {}",
               g.name, i, grp.name, s.workload, w ? w->key() : "none");
    auto it = index.find(s.workload);
    if (it == index.end()) {
      try {
        out.tasks.push_back({tuner::Task::create(*w, target), 0, {}});
      } catch (const Error& e) {
        out.untuned.push_back({grp.name, s.workload, e.what()});
        continue;
      }
      it = index.emplace(s.workload, out.tasks.size() - 1).first;
    }
    ExtractedTask& t = out.tasks[it->second];
    ++t.weight;
    t.kernels.push_back(grp.name);
  }
  return out;
}

}  // namespace loom::graph_opt
