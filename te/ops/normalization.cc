// softmax and layer_norm: reductions along one axis followed by a normalizing stage.
#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// A shape with one axis removed, and the index maps between it and the full shape.
struct AxisReduction {
  std::vector<int64_t> full, reduced;
  int axis;

  AxisReduction(std::vector<int64_t> s, int ax) : full(std::move(s)), axis(ax) {
    for (size_t d = 0; d < full.size(); ++d)
      if (int(d) != axis) reduced.push_back(full[d]);
    if (reduced.empty()) reduced.push_back(1);
  }
  /// Index into the reduced tensor for full-shape index vars.
  std::vector<Expr> drop(const std::vector<Var>& iv) const {
    std::vector<Expr> idx;
    for (size_t d = 0; d < iv.size(); ++d)
      if (int(d) != axis) idx.push_back(iv[d]);
    if (idx.empty()) idx.push_back(0);
    return idx;
  }
  /// Index into the full tensor for reduced-shape index vars and `k` on the axis.
  std::vector<Expr> insert(const std::vector<Var>& iv, const Expr& k) const {
    std::vector<Expr> idx;
    size_t j = 0;
    for (size_t d = 0; d < full.size(); ++d) idx.push_back(int(d) == axis ? k : Expr(iv[j++]));
    return idx;
  }
};

std::vector<Expr> all(const std::vector<Var>& iv) { return {iv.begin(), iv.end()}; }

}  // namespace

Tensor softmax(const Tensor& x, int axis, const std::string& name) {
  auto s = const_shape(x, "softmax", "x");
  LOOM_CHECK(!s.empty(), "softmax: x must have at least one dim");
  LOOM_CHECK(x.dtype().is_float(), "softmax: x must be floating point, got {}", x.dtype().str());
  AxisReduction r(s, detail::normalize_axis(axis, s.size(), "softmax"));
  Expr n = int_const(s[r.axis]);
  IterVar k1 = reduce_axis(Range(0, n), "k");
  Tensor maxelem = compute(to_exprs(r.reduced), FCompute([&](const std::vector<Var>& iv) {
    return max_reduce(x(r.insert(iv, k1)), {k1});
  }), "softmax_maxelem", "softmax_maxelem");
  Tensor e = compute(to_exprs(s), FCompute([&](const std::vector<Var>& iv) {
    return te::exp(x(all(iv)) - maxelem(r.drop(iv)));
  }), "softmax_exp", "softmax_exp");
  IterVar k2 = reduce_axis(Range(0, n), "k");
  Tensor expsum = compute(to_exprs(r.reduced), FCompute([&](const std::vector<Var>& iv) {
    return sum(e(r.insert(iv, k2)), {k2});
  }), "softmax_expsum", "softmax_expsum");
  return compute(to_exprs(s), FCompute([&](const std::vector<Var>& iv) {
    return e(all(iv)) / expsum(r.drop(iv));
  }), name, "softmax");
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int axis, double eps,
                  const std::string& name) {
  auto s = const_shape(x, "layer_norm", "x");
  LOOM_CHECK(!s.empty(), "layer_norm: x must have at least one dim");
  LOOM_CHECK(x.dtype().is_float(), "layer_norm: x must be floating point, got {}", x.dtype().str());
  LOOM_CHECK(eps >= 0, "layer_norm: eps must be non-negative, got {}", eps);
  AxisReduction r(s, detail::normalize_axis(axis, s.size(), "layer_norm"));
  int64_t n = s[r.axis];
  for (auto [t, what] : {std::pair{&gamma, "gamma"}, std::pair{&beta, "beta"}}) {
    auto ts = const_shape(*t, "layer_norm", what);
    LOOM_CHECK(ts.size() == 1 && ts[0] == n, "layer_norm: x is {} but {} is {}; it must be 1-D of x's extent {} along axis {}",
               shape_str(s), what, shape_str(ts), n, r.axis);
    detail::check_same_dtype(x, *t, "layer_norm", "x", what);
  }
  DataType dt = x.dtype();
  Expr inv_n = detail::const_of(dt, 1.0 / double(n));
  IterVar k1 = reduce_axis(Range(0, int_const(n)), "k");
  Tensor mean = compute(to_exprs(r.reduced), FCompute([&](const std::vector<Var>& iv) {
    return sum(x(r.insert(iv, k1)) * inv_n, {k1});
  }), "layer_norm_mean", "layer_norm_reduce");
  IterVar k2 = reduce_axis(Range(0, int_const(n)), "k");
  Tensor var = compute(to_exprs(r.reduced), FCompute([&](const std::vector<Var>& iv) {
    Expr d = x(r.insert(iv, k2)) - mean(all(iv));
    return sum(d * d * inv_n, {k2});
  }), "layer_norm_var", "layer_norm_reduce");
  Expr e = detail::const_of(dt, eps);
  return compute(to_exprs(s), FCompute([&](const std::vector<Var>& iv) {
    auto red = r.drop(iv);
    return (x(all(iv)) - mean(red)) / te::sqrt(var(red) + e) * gamma(iv[r.axis]) + beta(iv[r.axis]);
  }), name, "layer_norm");
}

}  // namespace loom::te::ops
