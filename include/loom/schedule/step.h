// A step of a schedule trace: one primitive application, its stage and iteration variables
// named by position (trace.h records, prints, serializes and replays them).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::schedule {

/// The primitive a step applies.
enum class StepKind : uint8_t {
  kSplit, kSplitNparts, kFuse, kReorder, kUnroll, kVectorize, kParallel, kBind, kPragma, kTensorize,
  kComputeAt, kComputeInline, kComputeRoot, kStorageAlign, kSetScope, kDoubleBuffer,
  kCacheRead, kCacheWrite, kRfactor, kExternParam, kStorageOrder, kComputePadded,
};
/// "split", "split_nparts", "fuse", … (the primitive's name; the "p" field of the JSON form).
const char* to_string(StepKind k);
/// Inverse of to_string; throws loom::Error listing the kinds for any other string.
StepKind step_kind_from_string(const std::string& s);

/// A reference to a stage or an iteration variable: its position (authoritative) and its
/// name when recorded (for reading; a replay checks stage names, not variable names).
/// Stages are numbered by their position in Schedule::stages() at the time of the step;
/// iteration variables by their position in the stage's StageNode::all_iter_vars (roots
/// first: spatial axes, then reduce axes; then each variable a split or fuse made, in order).
struct StepRef {
  int index = -1;
  std::string name;
  /// "name@index", the JSON form.
  std::string str() const;
  /// Parses "name@index" (the name may contain '@'); throws loom::Error naming `what`.
  static StepRef parse(const std::string& s, const std::string& what);
  bool operator==(const StepRef& o) const = default;
};

/// One primitive application. Which fields a kind uses:
///   split          stage, axes[0]; ints "factor"
///   split_nparts   stage, axes[0]; ints "nparts"
///   fuse, reorder  stage, axes (in the order given)
///   unroll, vectorize, parallel   stage, axes[0]
///   bind           stage, axes[0]; strs "thread" (tag); ints "thread_id" (the same id: the same
///                  thread axis object), "extent" (absent: the axis has no range)
///   pragma         stage, axes[0]; strs "key"; ints "value"
///   tensorize      stage, axes[0]; strs "intrin" (recorded for reading: not replayable)
///   compute_at     stage, at (the parent stage), axes[0] (the parent's loop)
///   compute_inline, compute_root, double_buffer   stage
///   storage_align  stage, axes[0]; ints "factor", "offset"
///   set_scope      stage; strs "scope"
///   cache_read     stage (of the tensor read), readers; ints "output"; strs "scope"
///   cache_write    stage; ints "output"; strs "scope"
///   rfactor        stage, axes[0]; ints "output", "factor_axis"
///   extern_param   stage; strs "key"; ints "value"
///   storage_order  stage, axes (its root spatial axes, outermost first)
///   compute_padded stage; strs "value" (the constant pad value, printed exactly), "dtype"
struct Step {
  StepKind kind = StepKind::kSplit;
  StepRef stage;
  std::vector<StepRef> axes;
  StepRef at;
  std::vector<StepRef> readers;
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::string> strs;
  /// Set when an argument was not a constant (a symbolic split factor or pragma value): the
  /// step is recorded for reading but cannot be serialized or replayed.
  std::string not_replayable;
  bool operator==(const Step& o) const = default;
};

}  // namespace loom::schedule
