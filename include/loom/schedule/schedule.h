// Schedule and Stage: how each operation of a tensor program runs.
//
// A Stage owns the iteration variables of one operation and the relations between them
// (split, fuse); its leaf variables, in order, are the loops it lowers to.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/schedule/step.h"
#include "loom/te/tensor.h"
#include "loom/te/tensor_intrin.h"

namespace loom::schedule {

using te::Expr;
using te::IterVar;
using te::Operation;
using te::Tensor;

/// parent = outer * factor + inner (factor or nparts given; the other follows from bounds).
struct SplitRelation { IterVar parent, outer, inner; Expr factor, nparts; };
/// fused = outer * extent(inner) + inner.
struct FuseRelation { IterVar outer, inner, fused; };
/// rebased = parent - min(parent): a zero-based copy of an axis (used by compute_at).
struct RebaseRelation { IterVar parent, rebased; };

enum class RelationKind : uint8_t { kSplit, kFuse, kRebase };
struct IterVarRelation {
  RelationKind kind;
  SplitRelation split;
  FuseRelation fuse;
  RebaseRelation rebase;
};

enum class AttachType : uint8_t {
  kRoot,     // computed at the top level of the function
  kInline,   // substituted into its consumers
  kScope,    // computed inside a loop of another stage (compute_at)
};

enum class IterAnnotation : uint8_t { kNone, kVectorize, kUnroll, kParallel, kThreadBind, kTensorize };

/// Per-iteration-variable annotations.
struct IterVarAttr {
  IterAnnotation annotation = IterAnnotation::kNone;
  IterVar bind_thread;                     // for kThreadBind
  te::TensorIntrin tensor_intrin;          // for kTensorize
  std::map<std::string, Expr> pragmas;     // pragma_unroll_explicit, …
};

struct StageNode;
struct ScheduleNode;

/// One operation's schedule. A handle: copies refer to the same stage.
class Stage {
 public:
  Stage() = default;
  explicit Stage(std::shared_ptr<StageNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  StageNode* operator->() const { return node_.get(); }
  StageNode* get() const { return node_.get(); }
  bool operator==(const Stage& o) const { return node_ == o.node_; }

  /// The i-th spatial / reduce axis of the operation (as created by compute).
  IterVar axis(size_t i) const;
  IterVar reduce_axis(size_t i) const;
  /// Current loop order, outermost first.
  const std::vector<IterVar>& leaf_iter_vars() const;

  std::pair<IterVar, IterVar> split(const IterVar& parent, Expr factor);
  std::pair<IterVar, IterVar> split_nparts(const IterVar& parent, Expr nparts);
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  /// Fuses several adjacent leaf axes, outermost first.
  IterVar fuse(const std::vector<IterVar>& axes);
  void reorder(const std::vector<IterVar>& order);
  /// Splits x and y and orders the result (xo, yo, xi, yi).
  std::tuple<IterVar, IterVar, IterVar, IterVar> tile(const IterVar& x, const IterVar& y, Expr x_factor, Expr y_factor);
  void unroll(const IterVar& iv);
  void vectorize(const IterVar& iv);
  void parallel(const IterVar& iv);
  void bind(const IterVar& iv, const IterVar& thread);
  void pragma(const IterVar& iv, const std::string& key, Expr value = Expr(1));
  /// Replaces the loops under `axis` (it and every leaf after it) by the tensor intrinsic
  /// `intrin`. Lowering checks that those loops compute exactly what `intrin` declares
  /// (the same loop extents in the order: its spatial axes, then its reduce axes; the same
  /// expression, up to which buffers are read and at which offsets and strides) and throws
  /// loom::Error naming the part that differs. Tiles cut short by a split that does not
  /// divide run the loops as they are. One tensorized axis per stage.
  void tensorize(const IterVar& axis, const te::TensorIntrin& intrin);
  /// Computes this stage inside loop `scope` of `parent`, covering what its consumers read
  /// per iteration of it. Every consumer must run inside that loop (be `parent`, or be
  /// computed at `scope` or a loop inside it); lowering checks this.
  void compute_at(const Stage& parent, const IterVar& scope);
  void compute_inline();
  void compute_root();
  /// Pads the stride of dimension `axis`'s dimension so that stride % factor == offset.
  void storage_align(const IterVar& axis, int factor, int offset);
  /// Lays the stage's buffer out with its dimensions in the order of `axes` (every spatial
  /// root axis of the operation once, outermost first); loops and indexing are unchanged.
  /// A shared tile A[m, k] stored k-major, say, so that a thread reads consecutive m at once.
  void storage_order(const std::vector<IterVar>& axes);
  void set_scope(const std::string& scope);
  void double_buffer();
  /// Sets parameter `key` of an extern operation's body (te::extern_op's `params`: a block
  /// size, …) to `value` for this schedule. Throws naming the stage when it is not an extern
  /// operation's, or naming the parameters it has when it has no `key`.
  void extern_param(const std::string& key, int64_t value);
  /// Computes the stage over its whole loop nest, past its operation's shape where a tile
  /// overshoots it, with no bounds guards; its reads of placeholders outside their shape give
  /// `pad_value` instead, and every other stage it reads must be computed padded too (or be
  /// inlined), which lowering checks. Points outside the shape hold values no consumer may
  /// use: for the tiles of a matmul (shared and register caches of A and B padded with 0, and
  /// the accumulator), a tile that overshoots M, N or K adds zeros to the accumulators the
  /// output keeps and computes others its guarded store drops, with no guard in its inner loop.
  void compute_padded(Expr pad_value);

 private:
  std::shared_ptr<StageNode> node_;
};

struct StageNode {
  Operation op;         // the operation as scheduled (cache/rfactor may replace it)
  Operation origin_op;  // the operation the user created
  std::vector<IterVar> all_iter_vars;   // roots and every var made by a relation
  std::vector<IterVar> leaf_iter_vars;  // the loops, outermost first
  std::vector<IterVarRelation> relations;
  std::unordered_map<const te::IterVarNode*, IterVarAttr> iter_var_attrs;
  AttachType attach_type = AttachType::kRoot;
  Stage attach_stage;
  IterVar attach_ivar;
  std::string scope;  // storage scope; empty means the default ("global")
  std::map<int, std::pair<int, int>> storage_align;  // dim → (factor, offset)
  std::vector<int> storage_order;                      // dims outermost first; empty: natural
  bool double_buffer = false;
  Expr pad_value;  // compute_padded: defined when the stage is computed padded
  bool is_output = false;
  /// Parameters of an extern operation's body set by extern_param (the rest keep the
  /// operation's defaults).
  std::map<std::string, int64_t> extern_params;
  /// The schedule the stage belongs to, whose trace records its primitives (expired: none).
  std::weak_ptr<ScheduleNode> schedule;
  std::string name() const;
  /// Root spatial axes followed by root reduce axes.
  std::vector<IterVar> root_iter_vars() const;
};

/// The schedule of a whole tensor program: one Stage per operation reachable from outputs.
class Schedule {
 public:
  Schedule() = default;
  explicit Schedule(std::shared_ptr<ScheduleNode> n) : node_(std::move(n)) {}
  ScheduleNode* operator->() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }

  /// The stage of the operation that produces `t`; throws if it is not in this schedule.
  Stage operator[](const Tensor& t) const;
  Stage operator[](const Operation& op) const;
  /// Stages in topological order (inputs first).
  const std::vector<Stage>& stages() const;
  const std::vector<Operation>& outputs() const;

  /// A copy of `t` in `scope`, read by `readers` instead of `t`.
  Tensor cache_read(const Tensor& t, const std::string& scope, const std::vector<Operation>& readers);
  Tensor cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers);
  /// Computes `t` into a new stage in `scope`; `t`'s own stage becomes a copy out of it.
  Tensor cache_write(const Tensor& t, const std::string& scope);
  /// Factors the reduce axis `axis` out: returns the partial-result tensor whose new spatial
  /// axis (at `factor_axis`) ranges over `axis`; `t` then reduces over it.
  Tensor rfactor(const Tensor& t, const IterVar& axis, int factor_axis = 0);
  /// A deep copy (tuners try variants of one schedule).
  Schedule copy() const;

 private:
  std::shared_ptr<ScheduleNode> node_;
};

struct ScheduleNode {
  std::vector<Operation> outputs;
  std::vector<Stage> stages;
  /// Every operation a stage has had, the user's and each one a primitive made, to its stage
  /// (a consumer may still read a replaced one until the dataflow is refreshed).
  std::unordered_map<const te::OperationNode*, Stage> stage_map;
  /// Operations stages no longer have, kept alive so that their stage_map keys stay unique.
  std::vector<Operation> retired_ops;
  /// Every primitive applied so far, as replayable steps (trace.h).
  std::vector<Step> trace;
  /// The thread axes the trace's bind steps name, in order of first use (a step's "thread_id").
  std::vector<IterVar> trace_threads;
  Stage stage_of(const Operation& op) const;
  /// Re-sorts stages topologically after a primitive added operations.
  void sort_stages();
};

/// A schedule for computing `outputs`, every stage at the root with its natural loops.
Schedule create_schedule(const std::vector<Tensor>& outputs);
Schedule create_schedule(const std::vector<Operation>& outputs);

}  // namespace loom::schedule
