// Fused kernels: a group of operators the graph level fused, composed from the operator
// registry's computes, scheduled as one kernel: by its anchor's template, with the rest of
// the group as an epilogue in the anchor's output tile and the log's tuned config of the
// anchor's workload (AutoTVM's rule: the epilogue does not change the task key), or, without
// a template, by a schedule generated from the group's pattern (schedule_by_pattern.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"
#include "loom/te/op_registry.h"

namespace loom::tuner {

/// A fused group as the compile step composes it: placeholders for its inputs, then each
/// node's registry compute (te::ops::get_op(op).compute) over them, in order.
struct FusedGroup {
  /// The kernel's inputs (placeholders), in call order.
  std::vector<te::Tensor> inputs;
  /// The kernel's outputs, in call order (a template schedules a group of one output).
  std::vector<te::Tensor> outputs;
  /// The anchor node's output (as its registry compute returned it) and its inputs in the
  /// operator's input order (placeholders among `inputs`, or tensors computed in the group);
  /// undefined/empty without an anchor.
  te::Tensor anchor;
  std::vector<te::Tensor> anchor_inputs;
  /// The anchor operator's strategy for the target (OpDef::strategy), when it gave one.
  std::optional<te::ops::TemplateCall> call;
};

/// Where a fused kernel's schedule came from.
enum class ScheduleSource {
  kTuned,    // the anchor template with the log's best config of the anchor's workload
  kDefault,  // the anchor template's default config (no record for the workload)
  kPattern,  // schedule_by_pattern (no template, or the template could not take the group)
};
/// "tuned", "default", "pattern".
const char* to_string(ScheduleSource s);

/// A fused kernel's schedule and the tensors to lower and build it with.
struct FusedSchedule {
  schedule::Schedule schedule;
  /// `inputs` then `outputs` of the group, position for position; under a template the
  /// anchor's inputs are the template's own placeholders (same shapes and dtypes) and the
  /// outputs its rebuilt epilogue, so bind the group's buffers by position.
  std::vector<te::Tensor> args;
  ScheduleSource source = ScheduleSource::kPattern;
  /// The anchor's workload (records::Workload::key()) on a template; "" for a pattern.
  std::string workload_key;
  /// The config used under a template (-1 for a pattern).
  int64_t config_index = -1;
  /// One line saying how the kernel was scheduled and why, e.g. "conv2d_nchwc(…): no tuning
  /// record on llvm; the template's default config 4163" (a missing workload is a warning
  /// the compile step passes on).
  std::string note;
};

/// The schedule of a fused group on `target`. With `group.call` naming a template for the
/// target that takes an epilogue (Template::schedule_epilogue) and a group of one output
/// whose other operators are elementwise/broadcast stages of the anchor's output shape (and
/// injective stages feeding them): the anchor's reduction (or, for a computation of several
/// stages, its stage tagged with the template's name) is replaced by the template's
/// computation of the same workload, the group rebuilt on it, and scheduled with the best
/// config in `best` for the workload (under any of the template's names) or else the
/// template's default. Otherwise, or if the template rejects the group or its config, the
/// group gets schedule_by_pattern, and `note` says why (also when an anchor input is computed
/// in the group, e.g. a fused pad: a template reads kernel inputs). Throws loom::Error only
/// for a malformed group (no outputs, an input that is not a placeholder, an anchor input
/// that is neither an input nor computed in the group).
FusedSchedule schedule_fused(const FusedGroup& group, const Target& target,
                             const records::ApplyHistoryBest* best = nullptr);

}  // namespace loom::tuner
