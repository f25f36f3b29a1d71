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

namespace loom::te::ops {

namespace {

/// Checks a bias of one element per output unit; returns out + bias as a "bias_add" stage.
Tensor add_dense_bias(const Tensor& out, const Tensor& data, const Tensor& bias, int64_t units, const char* op) {
  auto bs = const_shape(bias, 1, op, "bias", "[M]");
  detail::check_same_dtype(data, bias, op, "data", "bias");
  LOOM_CHECK(bs[0] == units, "{}: the output has {} units but bias is {}; bias must have one element per unit", op,
             units, shape_str(bs));
  return compute(out.shape(), [&](Var i, Var j) { return out(i, j) + bias(j); }, "bias_add", "broadcast");
}

}  // namespace

Tensor dense_pack(const Tensor& data, const Tensor& packed, int64_t units, const Tensor& bias,
                  const std::string& name) {
  const char* op = "dense_pack";
  auto d = const_shape(data, 2, op, "data", "[N,K]");
  auto w = const_shape(packed, 3, op, "packed weight", "[ceil(M/b),K,b]");
  detail::check_same_dtype(data, packed, op, "data", "packed weight");
  LOOM_CHECK(d[1] == w[1], "dense_pack: data is {} but the packed weight is {}; data's columns must equal its dim 1 (K)",
             shape_str(d), shape_str(w));
  LOOM_CHECK(units > 0 && units <= w[0] * w[2] && units > (w[0] - 1) * w[2],
             "dense_pack: the packed weight {} holds {} blocks of {}, which does not fit {} units", shape_str(w), w[0],
             w[2], units);
  const int64_t b = w[2];
  IterVar k = reduce_axis(Range(0, detail::int_const(d[1])), "k");
  Tensor out = compute(to_exprs({d[0], units}), [&](Var i, Var j) {
    return sum(data(i, k) * packed(floordiv(j, detail::int_const(b)), k, floormod(j, detail::int_const(b))), {k});
  }, name, "dense");
  return bias.defined() ? add_dense_bias(out, data, bias, units, op) : out;
}

Tensor batch_matmul_pack(const Tensor& A, const Tensor& packed, int64_t units, const std::string& name) {
  const char* op = "batch_matmul_pack";
  auto a = const_shape(A, 3, op, "A", "[batch,M,K]");
  auto p = const_shape(packed, 4, op, "packed B", "[batch,ceil(N/b),K,b]");
  detail::check_same_dtype(A, packed, op, "A", "packed B");
  LOOM_CHECK(a[0] == p[0] && a[2] == p[2],
             "batch_matmul_pack: A is {} but packed B is {}; their batch (dim 0) and K (dims 2) must match",
             shape_str(a), shape_str(p));
  LOOM_CHECK(units > 0 && units <= p[1] * p[3] && units > (p[1] - 1) * p[3],
             "batch_matmul_pack: packed B {} holds {} blocks of {}, which does not fit {} columns", shape_str(p), p[1],
             p[3], units);
  const int64_t b = p[3];
  IterVar k = reduce_axis(Range(0, detail::int_const(a[2])), "k");
  return compute(to_exprs({a[0], a[1], units}), [&](Var n, Var i, Var j) {
    return sum(A(n, i, k) * packed(n, floordiv(j, detail::int_const(b)), k, floormod(j, detail::int_const(b))), {k});
  }, name, "batch_matmul");
}

}  // namespace loom::te::ops
