// Task extraction: each fused group is handed to the tuner as compile hands it
// (tuner::kernel_tasks of graph_opt::fused_kernel), and contributes the tasks whose records
// compile looks up for it: its anchor template's bare workload, and the auto-scheduler's task
// of the whole group; equal workloads are one task whose weight counts its kernels.
#include "loom/graph_opt/task_extraction.h"

#include <map>

#include "loom/runtime/error.h"
#include "schedule_group.h"

namespace loom::graph_opt {

TaskExtraction extract_tasks(const Graph& graph, const Target& target, const CompileOptions& opt,
                             tuner::SearchKind search) {
  TaskExtraction out;
  out.fused = optimize_for_compile(graph, opt);
  const Graph& g = out.fused;
  std::map<std::string, size_t> index;  // workload key → task
  auto add = [&](const tuner::Task& task, const std::string& kernel) {
    auto it = index.find(task.key());
    if (it == index.end()) {
      out.tasks.push_back({task, 0, {}});
      it = index.emplace(task.key(), out.tasks.size() - 1).first;
    }
    ExtractedTask& t = out.tasks[it->second];
    ++t.weight;
    t.kernels.push_back(kernel);
  };
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const FusedGroup& grp = g.groups[i];
    if (is_view_group(g, grp)) continue;  // no kernel (memory_plan.h)
    const tuner::FusedKernel k = fused_kernel(g, int(i));
    tuner::KernelTasks kt =
        tuner::kernel_tasks(k, target, search == tuner::SearchKind::kAuto ? search : tuner::SearchKind::kTemplate);
    if (kt.templated) {
      // The bare workload: what the kernel's records are keyed on, with the same config space.
      add(tuner::Task::create(kt.templated->workload(), target), grp.name);
      if (search == tuner::SearchKind::kBoth) kt = tuner::kernel_tasks(k, target, tuner::SearchKind::kAuto);
    } else if (search != tuner::SearchKind::kAuto) {
      kt = tuner::kernel_tasks(k, target, tuner::SearchKind::kAuto);
    }
    if (kt.automatic) add(*kt.automatic, grp.name);
    else if (!kt.templated)
      out.untuned.push_back({grp.name, tuner::auto_workload(k).key(),
                             kt.auto_note.empty() ? kt.template_note : kt.auto_note});
  }
  return out;
}

}  // namespace loom::graph_opt
