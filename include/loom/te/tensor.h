// Tensors and the operations that produce them: placeholder, compute and extern.
#pragma once
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/te/expr.h"

namespace loom::te {

enum class OpKind : uint8_t { kPlaceholder, kCompute, kExtern };

struct OperationNode;
using Operation = std::shared_ptr<const OperationNode>;

/// What computes an extern operation's outputs: opaque to te and schedule, defined by the
/// layer that lowers it (lowering::LoopBody, a loop-IR kernel built at lowering time, as
/// TVM's te.extern takes a TIR body). te only carries it.
struct ExternBody {
  virtual ~ExternBody() = default;
  /// One line naming the body, for printing.
  virtual std::string describe() const = 0;
};

struct TensorNode {
  std::vector<Expr> shape;
  DataType dtype;
  Operation op;
  int value_index = 0;  // which output of `op`
};

/// A multi-dimensional array produced by an operation. `A(i, j)` reads an element.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const TensorNode* operator->() const { return node_.get(); }
  const TensorNode* get() const { return node_.get(); }
  const std::shared_ptr<const TensorNode>& node() const { return node_; }

  const std::vector<Expr>& shape() const { return node_->shape; }
  size_t ndim() const { return node_->shape.size(); }
  DataType dtype() const { return node_->dtype; }
  const Operation& op() const { return node_->op; }
  int value_index() const { return node_->value_index; }
  const std::string& name() const;

  /// Element read; checks the number of indices.
  Expr operator()(std::vector<Expr> indices) const;
  template <typename... Args>
  Expr operator()(Args&&... args) const {
    return (*this)(std::vector<Expr>{Expr(std::forward<Args>(args))...});
  }

  /// Two handles name the same tensor if they are the same output of the same op.
  bool operator==(const Tensor& o) const;
  bool operator!=(const Tensor& o) const { return !(*this == o); }
  bool operator<(const Tensor& o) const;

 private:
  std::shared_ptr<const TensorNode> node_;
};

/// Operation: a named producer of one or more tensors.
struct OperationNode {
  OpKind kind;
  std::string name;
  std::string tag;  // e.g. "matmul", "conv2d_nchw", "elemwise", "broadcast", "injective"
  std::map<std::string, std::string> attrs;
  // placeholder
  std::vector<Expr> shape;
  DataType dtype;
  // compute
  std::vector<IterVar> axis;         // spatial axes, one per output dimension
  std::vector<IterVar> reduce_axis;  // reduce axes (from the Reduce body)
  std::vector<Expr> body;            // one per output
  // extern
  std::vector<Tensor> inputs;                     // the tensors the body reads, in order
  std::vector<std::vector<Expr>> output_shapes;   // one per output
  std::vector<DataType> output_dtypes;            // one per output
  std::shared_ptr<const ExternBody> extern_body;
  /// The body's parameters (block sizes, …) with their defaults; a schedule may set them
  /// (Stage::extern_param).
  std::map<std::string, int64_t> params;
  /// The reference computation of the outputs (te::evaluate runs it): `reference` computed
  /// from `reference_inputs`, placeholders standing for `inputs` position by position.
  std::vector<Tensor> reference_inputs, reference;
  /// Number of output tensors.
  int num_outputs() const;
  DataType output_dtype(int i) const;
  std::vector<Expr> output_shape(int i) const;
  /// The tensors this operation reads, in first-use order.
  std::vector<Tensor> input_tensors() const;
};

/// The i-th output tensor of an operation.
Tensor output(const Operation& op, int i = 0);

/// An input tensor of the given shape and dtype.
Tensor placeholder(std::vector<Expr> shape, DataType dtype = DataType::Float(32), std::string name = "placeholder");

/// A reduction axis over `dom` = {min, extent} (as Halide's RDom; not {begin, end}),
/// e.g. reduce_axis({0, 512}, "k") ranges over 0..511.
IterVar reduce_axis(Range dom, std::string name = "rv");
/// A GPU thread axis ("blockIdx.x", "threadIdx.y", "vthread"), optionally with a range.
IterVar thread_axis(std::string tag, Range dom = Range());

using FCompute = std::function<Expr(const std::vector<Var>&)>;
using FComputeMulti = std::function<std::vector<Expr>(const std::vector<Var>&)>;

/// A tensor whose element at index vars is `f(vars)`. The body may be a reduction at the top.
Tensor compute(std::vector<Expr> shape, FCompute f, std::string name = "compute", std::string tag = "",
               std::map<std::string, std::string> attrs = {});
/// Several outputs of one compute (tuple reductions such as argmax).
std::vector<Tensor> compute_multi(std::vector<Expr> shape, FComputeMulti f, std::string name = "compute",
                                  std::string tag = "", std::map<std::string, std::string> attrs = {});

/// compute with a lambda of 1..6 Var arguments: compute({n, m}, [&](Var i, Var j) { … }).
template <typename F, typename = std::enable_if_t<!std::is_convertible_v<F, FCompute>>>
Tensor compute(std::vector<Expr> shape, F f, std::string name = "compute", std::string tag = "",
               std::map<std::string, std::string> attrs = {}) {
  FCompute g = [f](const std::vector<Var>& v) -> Expr {
    if constexpr (std::is_invocable_v<F, Var>) { LOOM_ICHECK(v.size() == 1); return f(v[0]); }
    else if constexpr (std::is_invocable_v<F, Var, Var>) { LOOM_ICHECK(v.size() == 2); return f(v[0], v[1]); }
    else if constexpr (std::is_invocable_v<F, Var, Var, Var>) { LOOM_ICHECK(v.size() == 3); return f(v[0], v[1], v[2]); }
    else if constexpr (std::is_invocable_v<F, Var, Var, Var, Var>) { LOOM_ICHECK(v.size() == 4); return f(v[0], v[1], v[2], v[3]); }
    else if constexpr (std::is_invocable_v<F, Var, Var, Var, Var, Var>) { LOOM_ICHECK(v.size() == 5); return f(v[0], v[1], v[2], v[3], v[4]); }
    else { static_assert(std::is_invocable_v<F, Var, Var, Var, Var, Var, Var>, "compute: lambda must take 1..6 te::Var"); LOOM_ICHECK(v.size() == 6); return f(v[0], v[1], v[2], v[3], v[4], v[5]); }
  };
  return compute(std::move(shape), std::move(g), std::move(name), std::move(tag), std::move(attrs));
}

// ---------------------------------------------------------------- reductions
/// A user-defined commutative reducer: `fcombine(lhs, rhs)` and `fidentity(dtypes)`.
CommReducer comm_reducer(std::function<std::vector<Expr>(const std::vector<Var>&, const std::vector<Var>&)> fcombine,
                         std::function<std::vector<Expr>(const std::vector<DataType>&)> fidentity,
                         const std::vector<DataType>& dtypes);
/// Applies a reducer: returns one Reduce expression per reducer value.
std::vector<Expr> reduce(const CommReducer& r, std::vector<Expr> source, std::vector<IterVar> axis, Expr condition = Expr());

Expr sum(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr max_reduce(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr min_reduce(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr prod(Expr source, std::vector<IterVar> axis, Expr condition = Expr());

// ---------------------------------------------------------------- extern
/// Builds the reference computation of an extern operation from placeholders standing for
/// its inputs (same shapes, dtypes and names).
using FReference = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

/// An operation whose outputs (shapes `shapes`, types `dtypes`) a hand-written body computes
/// from `inputs`, as TVM's te.extern: the body is opaque here (lowering::loop_body makes one);
/// `params` are its tunable parameters with their defaults, which Stage::extern_param sets.
/// A schedule places the stage at the root and cannot split or inline it. `reference`, if
/// given, computes the same outputs with ordinary te operations, so that te::evaluate (and
/// anything built on it, such as constant folding) can run the operation; it must return
/// tensors of the outputs' shapes and dtypes (checked).
std::vector<Tensor> extern_op(std::string name, std::vector<std::vector<Expr>> shapes, std::vector<DataType> dtypes,
                              std::vector<Tensor> inputs, std::shared_ptr<const ExternBody> body,
                              std::map<std::string, int64_t> params = {}, const FReference& reference = {},
                              std::string tag = "", std::map<std::string, std::string> attrs = {});

/// Every operation reachable from `outputs`, inputs first (a topological order).
std::vector<Operation> post_dfs_order(const std::vector<Tensor>& outputs);

/// `outputs` with every read of a key of `map` turned into a read of its value (same shape
/// and dtype; throws naming both otherwise): each operation that reads a replaced tensor,
/// directly or through others, is rebuilt as a new operation with the same name, tag, axes
/// and attributes; operations upstream of the replacements are shared. An output that is
/// itself a key is replaced by its value.
std::vector<Tensor> replace_tensors(const std::vector<Tensor>& outputs, const std::map<Tensor, Tensor>& map);

}  // namespace loom::te
