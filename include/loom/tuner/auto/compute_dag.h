// The auto-scheduler's view of a te computation: its stages in topological order with what
// the sketch rules ask of them (reductions, data reuse, how producers are read), its floating
// point work, and a structural hash that names it across processes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::tuner::autosched {

/// How a stage reads one producer (over all of its reads of it).
struct ProducerReads {
  /// Every read indexes the producer by the stage's own axis variables, in order, and the
  /// two have the same extents: out[i, j] = f(p[i, j]).
  bool identity = true;
  /// A reduction's reads of the producer index its last dimension by exactly the stage's
  /// innermost spatial axis of extent > 1 and miss another spatial axis of extent > 1 (matmul's
  /// B[k, j]): the tile of one iteration of the outer tiles is a panel reused across the
  /// missed axis, worth copying into a contiguous buffer (packing).
  bool panel = false;
};

/// One operation of the computation.
struct StageInfo {
  te::Operation op;
  /// The operation's name, or "name#k" for the k-th (from 1) later operation of that name.
  std::string label;
  bool placeholder = false;
  bool output = false;
  /// Stages this one reads and stages that read it (indices into ComputeDag::stages()),
  /// each once, in ascending order.
  std::vector<int> producers, consumers;
  std::map<int, ProducerReads> reads;
  /// Constant extents of the spatial and reduce axes (1 for a non-constant one).
  std::vector<int64_t> spatial, reduce;
  int64_t spatial_size = 1, reduce_size = 1;
  /// The body is a reduction.
  bool reduction = false;
  /// A reduction some of whose reads miss a spatial axis of extent > 1 (matmul: A misses j):
  /// the same element is read for several outputs, so tiling keeps it in cache (Ansor's
  /// "needs multi-level tiling").
  bool data_reuse = false;
  /// Computes a transcendental (exp, erf, …): worth computing once for several consumers.
  bool expensive = false;
  /// Has a select (padding, boundary conditions).
  bool has_select = false;
  /// The innermost reduce axis indexes the last dimension of some read, without the innermost
  /// spatial axis of extent > 1: partial sums along it vectorize (rfactor).
  bool reduce_innermost_contiguous = false;
  /// The innermost spatial axis of extent > 1 indexes the last dimension of every read of a
  /// tensor with more than one element: vectors run along it (pooling, column sums).
  bool spatial_innermost_contiguous = false;
  /// Floating point (or integer) operations of one run of the stage.
  double flop = 0;
};

/// The stages of `outputs` and everything they read, inputs first (te::post_dfs_order).
class ComputeDag {
 public:
  explicit ComputeDag(std::vector<te::Tensor> outputs);

  const std::vector<te::Tensor>& outputs() const { return outputs_; }
  const std::vector<StageInfo>& stages() const { return stages_; }
  /// The index of `op`, or -1.
  int index_of(const te::Operation& op) const;
  /// Operations of one run, summed over the stages.
  double flop() const;
  /// 16 hex digits of a hash of the computation's structure: operation kinds, names and tags,
  /// shapes, dtypes and bodies, with variables named by position. Equal for two builds of the
  /// same computation (in any process, whatever its variables are called); different, but
  /// for hash collisions, for computations that differ otherwise.
  std::string hash() const;
  /// One line per computed stage: label, extents and what the rules see, for reading.
  std::string str() const;

 private:
  std::vector<te::Tensor> outputs_;
  std::vector<StageInfo> stages_;
  std::map<const te::OperationNode*, int> index_;
};

}  // namespace loom::tuner::autosched
