// Elementwise (unary, tag "elemwise") and broadcasting (binary, tag "broadcast") ops.
#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// out = f(a[bcast], b[bcast]) with numpy-style broadcasting.
Tensor broadcast_binary(const Tensor& a, const Tensor& b, const char* op, const std::string& name,
                        Expr (*f)(Expr, Expr)) {
  auto sa = const_shape(a, op, "a");
  auto sb = const_shape(b, op, "b");
  detail::check_same_dtype(a, b, op, "a", "b");
  size_t n = std::max(sa.size(), sb.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    // i counts dims from the right
    int64_t da = i < sa.size() ? sa[sa.size() - 1 - i] : 1;
    int64_t db = i < sb.size() ? sb[sb.size() - 1 - i] : 1;
    LOOM_CHECK(da == db || da == 1 || db == 1,
               "{}: a is {} but b is {}; dim {} from the right has extents {} and {}, which neither match nor "
               "broadcast (one must be 1)",
               op, shape_str(sa), shape_str(sb), i, da, db);
    out[n - 1 - i] = std::max(da, db);
  }
  auto index = [n](const std::vector<Var>& iv, const std::vector<int64_t>& s) {
    std::vector<Expr> idx;
    size_t lead = n - s.size();
    for (size_t d = 0; d < s.size(); ++d)
      idx.push_back(s[d] == 1 ? Expr(0) : Expr(iv[lead + d]));
    return idx;
  };
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr { return f(a(index(iv, sa)), b(index(iv, sb))); };
  return compute(to_exprs(out), fc, name, "broadcast");
}

template <typename F>
Tensor unary(const Tensor& x, const char* op, const std::string& name, F f) {
  auto s = const_shape(x, op, "x");
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr { return f(x(std::vector<Expr>(iv.begin(), iv.end()))); };
  return compute(to_exprs(s), fc, name, "elemwise");
}

Expr add_e(Expr a, Expr b) { return a + b; }
Expr sub_e(Expr a, Expr b) { return a - b; }
Expr mul_e(Expr a, Expr b) { return a * b; }
Expr div_e(Expr a, Expr b) { return a / b; }
Expr max_e(Expr a, Expr b) { return te::max(a, b); }
Expr min_e(Expr a, Expr b) { return te::min(a, b); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "add", name, add_e);
}
Tensor subtract(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "subtract", name, sub_e);
}
Tensor multiply(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "multiply", name, mul_e);
}
Tensor divide(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "divide", name, div_e);
}
Tensor maximum(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "maximum", name, max_e);
}
Tensor minimum(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "minimum", name, min_e);
}

Tensor bias_add(const Tensor& data, const Tensor& bias, int axis, const std::string& name) {
  auto s = const_shape(data, "bias_add", "data");
  auto bs = const_shape(bias, "bias_add", "bias");
  detail::check_same_dtype(data, bias, "bias_add", "data", "bias");
  int ax = detail::normalize_axis(axis, s.size(), "bias_add");
  LOOM_CHECK(bs.size() == 1 && bs[0] == s[ax],
             "bias_add: data is {} but bias is {}; bias must be 1-D with data's extent along axis {} ({})",
             shape_str(s), shape_str(bs), ax, s[ax]);
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr {
    return data(std::vector<Expr>(iv.begin(), iv.end())) + bias(iv[ax]);
  };
  return compute(to_exprs(s), fc, name, "broadcast");
}

Tensor relu(const Tensor& x, const std::string& name) {
  DataType t = x.dtype();
  return unary(x, "relu", name, [t](Expr v) { return te::max(v, make_zero(t)); });
}

Tensor clip(const Tensor& x, double lo, double hi, const std::string& name) {
  LOOM_CHECK(lo <= hi, "clip: lower bound {} is greater than upper bound {}", lo, hi);
  Expr l = detail::const_of(x.dtype(), lo), h = detail::const_of(x.dtype(), hi);
  return unary(x, "clip", name, [l, h](Expr v) { return te::min(te::max(v, l), h); });
}

Tensor exp(const Tensor& x, const std::string& name) {
  return unary(x, "exp", name, [](Expr v) { return te::exp(v); });
}
Tensor tanh(const Tensor& x, const std::string& name) {
  return unary(x, "tanh", name, [](Expr v) { return te::tanh(v); });
}
Tensor sigmoid(const Tensor& x, const std::string& name) {
  return unary(x, "sigmoid", name, [](Expr v) { return te::sigmoid(v); });
}

}  // namespace loom::te::ops
