// Fused kernels: a group of registry operators the graph level fused, handed to the tuner
// whole (an autosched::OpGraph and its anchor). The tuner answers with the tasks that can
// schedule it, each a tuner::Task whose search space builds the kernel's computation and
// schedules it together:
//   - the anchor's template (its strategy, te::ops::TemplateCall): the template's own
//     computation of its workload stands for the anchor (TemplateCall::finish adds what the
//     operator computes beyond it, a bias), the rest of the group is composed on its output
//     and scheduled in its output tile (Template::schedule_epilogue); records key on the
//     template's workload, so a config tuned for the bare workload schedules every kernel it
//     anchors (AutoTVM's rule);
//   - the auto-scheduler's task of the whole group (tuner/auto), keyed on the group itself.
// schedule_fused picks the faster of their records, or without one the template's default
// config, or the schedule generated from the group's pattern (schedule_by_pattern.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"
#include "loom/tuner/auto/workload.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

/// A fused kernel as the graph hands it over.
struct FusedKernel {
  /// The group's operators, inputs and outputs in the kernel's call order.
  autosched::OpGraph graph;
  /// The anchor (an index into graph.nodes): the operator whose strategy may name a template;
  /// -1 for none.
  int anchor = -1;
};

/// Which searches tune a kernel that has a template: its template, the auto-scheduler, or both
/// (compile then takes the faster record). A kernel without a template has only the auto task.
enum class SearchKind { kTemplate, kAuto, kBoth };
/// "template", "auto", "both".
const char* to_string(SearchKind k);
/// Parses to_string's names; loom::Error listing them otherwise.
SearchKind parse_search_kind(const std::string& s);

/// The tasks that can schedule a fused kernel.
struct KernelTasks {
  /// The anchor's template with the group composed on it (search space kind "template"): its
  /// workload is the template's, its config space the bare workload's.
  std::optional<Task> templated;
  /// The auto-scheduler's task of the whole group (workload "auto:…" keyed on the group).
  std::optional<Task> automatic;
  /// Why there is no template task ("" when there is one, or the kernel has no anchor).
  std::string template_note;
  /// Why there is no auto task ("" when there is one, or it was not asked for).
  std::string auto_note;
};

/// The tasks of kernel `k` on `target`: the template one unless `kind` is kAuto, the auto one
/// unless it is kTemplate. A task that cannot be made (no strategy or template for the target,
/// a template whose computation does not fit the anchor — it reads an input the group computes,
/// its placeholders or output differ from the operator's —, a computation the auto-scheduler
/// does not take) is left out with a note. Throws loom::Error for a malformed kernel (no
/// outputs, an anchor out of range).
KernelTasks kernel_tasks(const FusedKernel& k, const Target& target, SearchKind kind = SearchKind::kBoth);

/// The auto-scheduled workload of kernel `k` (what its records are keyed on).
records::Workload auto_workload(const FusedKernel& k);

/// Where a fused kernel's schedule came from.
enum class ScheduleSource {
  kTuned,    // the anchor template with the log's best config of the template's workload
  kAuto,     // the auto-scheduler with the log's best record of the group's workload
  kDefault,  // the anchor template's default config (no record)
  kPattern,  // schedule_by_pattern (no template, no record)
};
/// "tuned", "auto", "default", "pattern".
const char* to_string(ScheduleSource s);

/// A fused kernel's schedule and the tensors to lower and build it with.
struct FusedSchedule {
  schedule::Schedule schedule;
  /// Tensors standing for the kernel's inputs then its outputs, position for position (the
  /// chosen task's own build of the computation: bind the group's buffers by position).
  std::vector<te::Tensor> args;
  ScheduleSource source = ScheduleSource::kPattern;
  /// The key of the workload whose records were looked up: the template's (kTuned, kDefault)
  /// or the group's (kAuto); "" for a pattern.
  std::string workload_key;
  /// That workload (op "" for a pattern).
  records::Workload workload;
  /// The config used (-1 for a pattern).
  int64_t config_index = -1;
  /// One line saying how the kernel was scheduled and why, e.g. "conv2d_nchwc(…): no tuning
  /// record on llvm; the template's default config 4163".
  std::string note;
};

/// The schedule of fused kernel `k` on `target` with the records of `best`: of the template
/// task's best record (looked up under any of the template's names) and the auto task's best
/// record, the one with the lower mean cost; without either, the template's default config,
/// or else the pattern schedule. A record that does not apply (a template's config from before
/// its knobs changed, steps that no longer replay) is passed over, and `note` says so. Throws
/// loom::Error only for a malformed kernel.
FusedSchedule schedule_fused(const FusedKernel& k, const Target& target,
                             const records::ApplyHistoryBest* best = nullptr);

}  // namespace loom::tuner
