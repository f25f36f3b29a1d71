// Graph passes, one file each under graph_opt/passes/, each a function from graph to graph,
// and the pass manager that orders them (docs/graph.md lists the order and why).
#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "loom/graph_opt/graph.h"
#include "loom/records/record.h"
#include "loom/runtime/target.h"

namespace loom::graph_opt {

/// batch_norm(x, gamma, beta, mean, var) → x * scale + shift with per-channel
/// scale = gamma / sqrt(var + eps) and shift = beta - mean * scale (computed by graph ops on
/// the batch-norm parameters, which fold_constants turns into constants).
Graph simplify_inference(const Graph& g);

/// Bounds on what constant folding computes at compile time (fold_constants, and the ONNX
/// importer's folding at import). A node past them is not folded: it stays an operator,
/// computed at run time. Decided from the node's types and te computation, before evaluating.
struct FoldLimits {
  /// Bytes one node's results (and each step of its computation) may take, unless no more
  /// than its largest input (a transpose or scaling of a big weight folds).
  int64_t max_result_bytes = int64_t(64) << 20;
  /// Element evaluations of one node (elements times reduction steps, summed over its steps).
  int64_t max_work = int64_t(1) << 26;
  /// Bytes of all results folded by one run together, or the bytes of the constants the
  /// graph held before, if more (a network's weights transformed once); past it only small
  /// results fold. Small, since each of the pipeline's folding runs may spend it again.
  int64_t max_total_bytes = int64_t(32) << 20;
  /// Results of at most this many bytes fold whatever the total.
  int64_t small_result_bytes = int64_t(64) << 10;
};

/// One folding run's account against FoldLimits.
class FoldBudget {
 public:
  /// `constant_bytes`: the bytes of the constants of the graph before folding.
  explicit FoldBudget(const FoldLimits& limits = {}, int64_t constant_bytes = 0);
  /// Whether op node `n` (outputs inferred) on constant inputs of types `inputs` may be
  /// folded; when it may, its results are charged to the run. `where` prefixes errors of the
  /// node's computation (attributes its operator rejects).
  bool admit(const Node& n, const std::vector<TensorType>& inputs, const std::string& where);
  /// Why the last refused node was refused.
  const std::string& reason() const { return reason_; }

 private:
  FoldLimits limits_;
  int64_t total_limit_ = 0;
  int64_t used_bytes_ = 0;
  std::string reason_;
};

/// Replaces every op node whose inputs are all constants by constants holding its outputs,
/// computed at compile time with te::evaluate (so any constant subgraph folds, node by node),
/// within the default FoldLimits.
Graph fold_constants(const Graph& g);
/// fold_constants within `limits`.
Graph fold_constants_within(const Graph& g, const FoldLimits& limits);

/// Folds a per-output-channel scale and shift after conv2d/dense into its weights and bias:
/// conv2d(x, W, b) * s + t → conv2d(x, W * s, b * s + t) (the new weights and bias are
/// graph ops on constants; fold_constants evaluates them). Also takes bias_add and
/// add/multiply by scalars or [K,1,1]-shaped constants.
Graph fold_scale_axis(const Graph& g);

/// Drops nodes that no graph output depends on (graph inputs stay: they are the signature).
Graph eliminate_dead_code(const Graph& g);

/// Merges op nodes with the same operator, attributes and inputs, and constants with equal
/// types and contents.
Graph eliminate_common_subexpr(const Graph& g);

/// Moves reshapes (reshape, flatten, squeeze, unsqueeze) below the elementwise and numpy-
/// broadcast operators that read them, op(reshape(x), c) → reshape(op(x, c')), where the other
/// operands vary only along the trailing dims the reshape keeps; merges reshapes of reshapes
/// and drops reshapes to the shape their input has. An anchor's bias and activation behind
/// a reshape then fuse into its kernel.
Graph sink_reshapes(const Graph& g);

/// Rewrites scaled dot-product attention written as a chain of operators (matmul or einsum
/// of Q and Kᵀ, scalar scales, an additive bias, a softmax along the last axis, matmul by V,
/// with the reshapes and transposes around the heads) into one `attention` operator, reading
/// [batch, seq, heads·head_dim] projections directly when the heads were split and merged by
/// transposes (0, 2, 1, 3). Chains whose softmax runs along another axis, whose mask is not
/// added, whose scale is not a scalar constant or whose intermediate values are read elsewhere
/// stay as they are.
Graph fuse_attention(const Graph& g);

/// How alter_layout picks channel blocks.
struct LayoutOptions {
  /// Candidate blocks, tried in order; a conv2d takes the first that divides both its input
  /// and output channels (a conv with none stays NCHW).
  std::vector<int64_t> blocks = {16, 8};
  /// If set, the block for a given conv2d node (0: keep it NCHW); overrides `blocks`, e.g.
  /// with the block of the tuned config of its workload.
  std::function<int64_t(const Graph&, int node)> choose_block;
  /// dense with a constant weight becomes dense_pack with the weight packed OI{b}o, b this
  /// (0: dense stays).
  int64_t dense_block = 16;
  /// Winograd F(m×m, 3×3): a conv2d that can take it (3×3, stride 1, dilation 1, groups 1,
  /// padding symmetric and at most 2, a constant weight, blocked input, at least
  /// `winograd_min_channels` input and output channels) becomes conv2d_nchwc_winograd with m
  /// this (2..6) and its weight transformed by winograd_weight_transform (folded with the
  /// constant); 0 (the default): it stays conv2d_nchwc.
  int64_t winograd_tile = 0;
  int64_t winograd_min_channels = 64;
  /// If set, m for a given conv2d node that can take Winograd (0: direct) instead of
  /// `winograd_tile`, given the data and output channel blocks `ib`, `ob` chosen for it, e.g.
  /// winograd_if_faster.
  std::function<int64_t(const Graph&, int node, int64_t ib, int64_t ob)> choose_winograd;
};

/// A LayoutOptions::choose_winograd that compares tuning records: for a convolution, the m
/// of `tiles` whose conv2d_nchwc_winograd workload (tile_size m) has the fastest best record
/// in `best` on `target`, if that is faster than the best record of the conv2d_nchwc
/// workload the node would otherwise be; 0 (direct) when the direct workload has no record,
/// no Winograd one has, or direct is faster. Workloads are those of the operators'
/// strategies (te::ops::select_template), so `loom tune` logs of them apply.
std::function<int64_t(const Graph&, int, int64_t, int64_t)> winograd_if_faster(
    std::shared_ptr<const records::ApplyHistoryBest> best, const Target& target,
    std::vector<int64_t> tiles = {2, 3, 4, 5, 6});

/// Converts NCHW conv2d regions to channel-blocked layouts: conv2d runs on NCHW{b}c data
/// with OIHW{b}i{b}o weights (weights transformed by layout_transform on the constant, folded
/// later); elementwise, broadcast and pooling ops inside the region run blocked (their
/// constant operands transformed); layout_transform nodes appear only at the region's
/// boundaries (one per value and layout, shared by every consumer); graph outputs keep their
/// layout.
Graph alter_layout(const Graph& g, const LayoutOptions& opt = {});

/// Removes layout_transform(layout_transform(x, A→B), B→A) pairs, and transforms to the
/// layout a value already has.
Graph cancel_layout_transforms(const Graph& g);

struct FuseOptions {
  /// 0: every op node its own group; 1: fuse by pattern.
  int level = 1;
  /// Most op nodes in one group.
  int max_group_size = 256;
};

/// Partitions the op nodes into fused groups with TVM's FuseOps rules on the post-dominator
/// tree: an out_elemwise_fusable anchor (conv2d, dense, …) takes the elementwise/broadcast
/// chain up to its immediate post-dominator (bias, residual add, relu); elementwise and
/// broadcast ops fuse into an injective or reduction consumer; injective chains fuse. The
/// graph's nodes are unchanged; `groups` is set, in execution order.
Graph fuse_ops(const Graph& g, const FuseOptions& opt = {});

/// One pass as the pass manager runs it.
struct PassInfo {
  std::string name;  // what disable/print name it by
  int opt_level;     // runs when the manager's level is at least this
  std::function<Graph(const Graph&)> run;
};

/// What the pass manager does.
struct PassOptions {
  /// 0: fuse_ops with no fusion only; 1: + simplify_inference, fold_constants, DCE and
  /// fusion; 2: + fold_scale_axis and CSE; 3: + alter_layout and cancel_layout_transforms.
  int opt_level = 3;
  /// Pass names to skip.
  std::set<std::string> disabled;
  /// Where print_after_all / print_after print the graph (nothing is printed if null).
  std::ostream* print_to = nullptr;
  /// Print the graph after every pass that runs.
  bool print_after_all = false;
  /// Pass names to print the graph after.
  std::set<std::string> print_after;
  /// Verify the graph after every pass (cheap; on by default).
  bool verify_each = true;
  LayoutOptions layout;
  FuseOptions fuse;
};

/// Runs the graph passes in their order (pass_names()), the last being fuse_ops (disabling
/// it leaves the graph unpartitioned).
class PassManager {
 public:
  explicit PassManager(PassOptions opt = {});
  /// Every pass of the pipeline, in order, whatever the level.
  const std::vector<PassInfo>& passes() const { return passes_; }
  /// The optimized, fused graph.
  Graph run(const Graph& g) const;

 private:
  PassOptions opt_;
  std::vector<PassInfo> passes_;
};

/// Names of the pipeline's passes in order (a name may run more than once).
std::vector<std::string> pass_names();

/// PassManager(opt).run(g).
Graph optimize(const Graph& g, const PassOptions& opt = {});

}  // namespace loom::graph_opt
