// matmul, batch_matmul and dense: reductions over a shared K dimension.
#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// Names of A's dims as the message describes them.
std::string k_role(bool transposed, const char* normal, const char* when_transposed) {
  return transposed ? when_transposed : normal;
}

}  // namespace

Tensor matmul(const Tensor& A, const Tensor& B, bool transpose_a, bool transpose_b, const std::string& name) {
  auto a = const_shape(A, 2, "matmul", "A", transpose_a ? "[K,M]" : "[M,K]");
  auto b = const_shape(B, 2, "matmul", "B", transpose_b ? "[N,K]" : "[K,N]");
  detail::check_same_dtype(A, B, "matmul", "A", "B");
  int64_t M = transpose_a ? a[1] : a[0], K = transpose_a ? a[0] : a[1];
  int64_t KB = transpose_b ? b[1] : b[0], N = transpose_b ? b[0] : b[1];
  LOOM_CHECK(K == KB, "matmul: A is {} but B is {}; A's {} must equal B's {}", shape_str(a), shape_str(b),
             k_role(transpose_a, "columns", "rows (transpose_a)"), k_role(transpose_b, "rows", "columns (transpose_b)"));
  IterVar k = reduce_axis(Range(0, detail::int_const(K)), "k");
  return compute(to_exprs({M, N}), [&](Var i, Var j) {
    Expr x = transpose_a ? A(k, i) : A(i, k);
    Expr y = transpose_b ? B(j, k) : B(k, j);
    return sum(x * y, {k});
  }, name, "matmul");
}

Tensor batch_matmul(const Tensor& A, const Tensor& B, bool transpose_a, bool transpose_b, const std::string& name) {
  auto a = const_shape(A, 3, "batch_matmul", "A", transpose_a ? "[batch,K,M]" : "[batch,M,K]");
  auto b = const_shape(B, 3, "batch_matmul", "B", transpose_b ? "[batch,N,K]" : "[batch,K,N]");
  detail::check_same_dtype(A, B, "batch_matmul", "A", "B");
  LOOM_CHECK(a[0] == b[0] || a[0] == 1 || b[0] == 1,
             "batch_matmul: A is {} but B is {}; batch sizes {} and {} must be equal or one of them 1", shape_str(a),
             shape_str(b), a[0], b[0]);
  int64_t M = transpose_a ? a[2] : a[1], K = transpose_a ? a[1] : a[2];
  int64_t KB = transpose_b ? b[2] : b[1], N = transpose_b ? b[1] : b[2];
  LOOM_CHECK(K == KB, "batch_matmul: A is {} but B is {}; A's {} must equal B's {}", shape_str(a), shape_str(b),
             k_role(transpose_a, "columns", "rows (transpose_a)"), k_role(transpose_b, "rows", "columns (transpose_b)"));
  int64_t batch = std::max(a[0], b[0]);
  bool a_bcast = a[0] == 1 && batch > 1, b_bcast = b[0] == 1 && batch > 1;
  IterVar k = reduce_axis(Range(0, detail::int_const(K)), "k");
  return compute(to_exprs({batch, M, N}), [&](Var n, Var i, Var j) {
    Expr na = a_bcast ? Expr(0) : Expr(n), nb = b_bcast ? Expr(0) : Expr(n);
    Expr x = transpose_a ? A(na, k, i) : A(na, i, k);
    Expr y = transpose_b ? B(nb, j, k) : B(nb, k, j);
    return sum(x * y, {k});
  }, name, "batch_matmul");
}

Tensor dense(const Tensor& data, const Tensor& weight, const Tensor& bias, const std::string& name) {
  auto d = const_shape(data, 2, "dense", "data", "[N,K]");
  auto w = const_shape(weight, 2, "dense", "weight", "[M,K]");
  detail::check_same_dtype(data, weight, "dense", "data", "weight");
  LOOM_CHECK(d[1] == w[1], "dense: data is {} but weight is {}; data's columns must equal weight's columns (K)",
             shape_str(d), shape_str(w));
  IterVar k = reduce_axis(Range(0, detail::int_const(d[1])), "k");
  Tensor out = compute(to_exprs({d[0], w[0]}), [&](Var i, Var j) { return sum(data(i, k) * weight(j, k), {k}); },
                       name, "dense");
  if (!bias.defined()) return out;
  auto bs = const_shape(bias, 1, "dense", "bias", "[M]");
  detail::check_same_dtype(data, bias, "dense", "data", "bias");
  LOOM_CHECK(bs[0] == w[0], "dense: weight is {} but bias is {}; bias must have one element per output ({})",
             shape_str(w), shape_str(bs), w[0]);
  return compute(out.shape(), [&](Var i, Var j) { return out(i, j) + bias(j); }, "bias_add", "broadcast");
}

}  // namespace loom::te::ops
