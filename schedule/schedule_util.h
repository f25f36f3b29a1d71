// Helpers shared by the schedule primitives: building operations, swapping a stage's
// operation, keeping the dataflow between stages consistent, and argument checks.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/schedule/schedule.h"
#include "loom/te/expr_functor.h"

namespace loom::schedule::detail {

/// A new compute operation with the given parts (body[i] yields output i).
te::Operation make_compute_op(std::string name, std::string tag, std::map<std::string, std::string> attrs,
                              std::vector<IterVar> axis, std::vector<IterVar> reduce_axis, std::vector<Expr> body);

/// A fresh stage for `op`, every loop at its root position.
Stage make_stage(const te::Operation& op);

/// Root spatial axes then root reduce axes of `op` (none for a placeholder).
std::vector<IterVar> root_iter_vars(const te::Operation& op);

/// True if the body of `op` is a reduction.
bool is_reduction(const te::Operation& op);

/// Points `stage` at `op` and keeps stage_map and outputs in step: the stage stays reachable
/// through every operation it has had (replaced ones kept alive in retired_ops), and
/// outputs lists current operations.
void set_stage_op(ScheduleNode* sch, const Stage& stage, const te::Operation& op);

/// The stage of the operation `t` was produced by, or an Error naming `what` and `t`.
Stage stage_of_tensor(const ScheduleNode* sch, const Tensor& t, const char* what);

/// Rewrites every stage's body so that each tensor read refers to the current operation of
/// the stage that produces it (after a primitive replaced operations). Stages are visited in
/// order, so a rewritten producer propagates to its consumers.
void refresh_dataflow(ScheduleNode* sch);

/// Replaces reads of tensors by reads of other tensors: `map` is keyed by (stage, output
/// index) of the producer read.
struct LoadKey {
  const StageNode* stage;
  int value_index;
  bool operator==(const LoadKey& o) const { return stage == o.stage && value_index == o.value_index; }
};
struct LoadKeyHash {
  size_t operator()(const LoadKey& k) const { return std::hash<const void*>()(k.stage) ^ size_t(k.value_index); }
};
using LoadMap = std::unordered_map<LoadKey, Tensor, LoadKeyHash>;
/// `body` with reads of the producers in `map` redirected; `changed` reports whether any was.
std::vector<Expr> redirect_loads(const ScheduleNode* sch, const std::vector<Expr>& body, const LoadMap& map,
                                 bool* changed);

/// An unused stage name: `base`, or `base.1`, `base.2`, … if a stage already has it.
std::string unique_stage_name(const ScheduleNode* sch, const std::string& base);

/// A step of the schedule's trace (trace.h) being made by a primitive: references are resolved
/// as they are added, before the primitive changes the stage; commit() appends the step to
/// the trace of the schedule that owns the stage (nothing when it has none).
class StepRecorder {
 public:
  StepRecorder(const StageNode* stage, StepKind kind);
  /// The stage's iteration variable `iv` (axes, in order).
  StepRecorder& axis(const IterVar& iv);
  /// compute_at's target: `parent` and its loop `iv`.
  StepRecorder& at(const StageNode* parent, const IterVar& iv);
  StepRecorder& reader(const StageNode* reader);
  /// bind's thread axis: its tag, extent (if it has one) and identity ("thread_id").
  StepRecorder& thread(const IterVar& thread);
  /// A constant integer argument; a symbolic one makes the step not replayable.
  StepRecorder& num(const std::string& key, const Expr& e);
  StepRecorder& num(const std::string& key, int64_t v);
  StepRecorder& str(const std::string& key, std::string v);
  void commit();

 private:
  StepRef stage_ref(const StageNode* s) const;
  std::shared_ptr<ScheduleNode> sch_;
  const StageNode* stage_;
  Step step_;
};

/// Checks a storage scope name ("global", "shared", "local", "warp", "wmma.*", "mma.*", "shared.dyn").
void check_scope(const std::string& where, const std::string& scope);

}  // namespace loom::schedule::detail
