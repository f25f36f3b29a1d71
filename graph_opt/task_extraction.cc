// Task extraction: each fused group is scheduled as compile schedules it (schedule_group,
// without a log), and a group scheduled by its anchor's template contributes that template's
// workload (GroupSchedule::task); equal workloads are one task whose weight counts its kernels.
#include "loom/graph_opt/task_extraction.h"

#include <map>

#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "schedule_group.h"

namespace loom::graph_opt {

TaskExtraction extract_tasks(const Graph& graph, const Target& target, const CompileOptions& opt) {
  TaskExtraction out;
  out.fused = optimize_for_compile(graph, opt);
  const Graph& g = out.fused;
  std::map<std::string, size_t> index;  // workload key → task
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const FusedGroup& grp = g.groups[i];
    if (is_view_group(g, grp)) continue;  // no kernel (memory_plan.h)
    GroupSchedule s = schedule_group(g, int(i), compose_group(g, int(i)), target, nullptr);
    if (s.workload.empty()) {
      out.untuned.push_back({grp.name, "", s.note});
      continue;
    }
    LOOM_CHECK(s.task.key() == s.workload, "task extraction: graph '{}', group {} ('{}'): compile looks up workload {} "
               "for a kernel of task {}", g.name, i, grp.name, s.workload, s.task.key());
    auto it = index.find(s.workload);
    if (it == index.end()) {
      try {
        out.tasks.push_back({tuner::Task::create(s.task, target), 0, {}});
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
