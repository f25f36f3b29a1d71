// Task extraction: the tuning tasks of a network. A task is a (template, workload) pair whose
// config compile looks up in a tuning log for some kernel of the compiled graph (after the
// passes, fusion and layout, exactly as compile fuses it); its weight is how many kernels run
// it. `loom tune-model` tunes them with the task scheduler (tuner/task_scheduler.h).
#pragma once
#include <string>
#include <vector>

#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/graph.h"
#include "loom/records/record.h"
#include "loom/runtime/target.h"
#include "loom/tuner/task.h"

namespace loom::graph_opt {

/// A task with the kernels that run it.
struct ExtractedTask {
  tuner::Task task;
  /// Kernels of the compiled graph that run this workload.
  int weight = 0;
  /// Their fused groups' names, in execution order.
  std::vector<std::string> kernels;
};

/// A kernel no task covers, and why.
struct UntunedKernel {
  std::string kernel;    // the fused group's name
  std::string workload;  // the key compile looks up for it ("" when it has no template)
  std::string reason;    // "pattern injective", or why no task can be made of the workload
};

struct TaskExtraction {
  /// The graph as compile fuses it.
  Graph fused;
  /// The distinct tasks, in the order of their first kernel.
  std::vector<ExtractedTask> tasks;
  /// Kernels that no task covers: scheduled from their group's pattern, or with a workload
  /// no task can be made of (its template is not registered, or rejects the workload).
  std::vector<UntunedKernel> untuned;
};

/// The tasks of `graph` compiled for `target` with `opt` (optimized and fused first, as
/// compile does, unless it has groups).
TaskExtraction extract_tasks(const Graph& graph, const Target& target, const CompileOptions& opt = {});

}  // namespace loom::graph_opt
