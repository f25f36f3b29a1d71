// Task extraction: the tuning tasks of a network. A task is a workload whose records compile
// looks up for some kernel of the compiled graph (after the passes, fusion and layout, exactly
// as compile fuses it): the bare workload of a kernel's anchor template, or the auto-scheduler's
// task of a whole fused kernel (tuner/fused.h); its weight is how many kernels run it.
// `loom tune-model` tunes them with the task scheduler (tuner/task_scheduler.h).
#pragma once
#include <string>
#include <vector>

#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/graph.h"
#include "loom/records/record.h"
#include "loom/runtime/target.h"
#include "loom/tuner/fused.h"
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
  std::string workload;  // the auto-scheduled workload no task could be made of
  std::string reason;    // why (the auto-scheduler's error, or the template's)
};

struct TaskExtraction {
  /// The graph as compile fuses it.
  Graph fused;
  /// The distinct tasks, in the order of their first kernel.
  std::vector<ExtractedTask> tasks;
  /// Kernels that no task covers: neither a template nor the auto-scheduler takes them; they
  /// are scheduled from their group's pattern.
  std::vector<UntunedKernel> untuned;
};

/// The tasks of `graph` compiled for `target` with `opt` (optimized and fused first, as
/// compile does, unless it has groups). `search` says what tunes a kernel that has a template:
/// kTemplate its template's bare workload, kAuto an auto task of the kernel, kBoth the two
/// (compile takes the faster record); a kernel without a template always gets an auto task.
TaskExtraction extract_tasks(const Graph& graph, const Target& target, const CompileOptions& opt = {},
                             tuner::SearchKind search = tuner::SearchKind::kTemplate);

}  // namespace loom::graph_opt
