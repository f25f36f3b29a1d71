// log_softmax and hardmax: a reduction along one axis, then a stage over the full shape.
#include "loom/te/ops/softmax_family.h"

#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::to_exprs;

namespace {

/// The shape of `x` (checked floating point, rank >= 1) and its normalized `axis`.
struct AlongAxis {
  std::vector<int64_t> full, reduced;  // reduced: `axis` dropped ([1] for a 1-D input)
  int axis;

  AlongAxis(const Tensor& x, int ax, const char* op) : full(const_shape(x, op, "x")) {
    LOOM_CHECK(!full.empty(), "{}: x must have at least one dim", op);
    LOOM_CHECK(x.dtype().is_float(), "{}: x must be floating point, got {}", op, x.dtype().str());
    axis = detail::normalize_axis(ax, full.size(), op);
    for (size_t d = 0; d < full.size(); ++d)
      if (int(d) != axis) reduced.push_back(full[d]);
    if (reduced.empty()) reduced.push_back(1);
  }
  /// The reduced tensor's index for full-shape vars.
  std::vector<Expr> drop(const std::vector<Var>& iv) const {
    std::vector<Expr> idx;
    for (size_t d = 0; d < iv.size(); ++d)
      if (int(d) != axis) idx.push_back(iv[d]);
    if (idx.empty()) idx.push_back(0);
    return idx;
  }
  /// The full tensor's index for reduced-shape vars and `k` on the axis.
  std::vector<Expr> insert(const std::vector<Var>& iv, const Expr& k) const {
    std::vector<Expr> idx;
    size_t j = 0;
    for (size_t d = 0; d < full.size(); ++d) idx.push_back(int(d) == axis ? k : Expr(iv[j++]));
    return idx;
  }
  Tensor max_along(const Tensor& x, const std::string& name) const {
    IterVar k = reduce_axis(Range(0, int_const(full[size_t(axis)])), "k");
    return compute(to_exprs(reduced), FCompute([&](const std::vector<Var>& iv) {
      return max_reduce(x(insert(iv, k)), {k});
    }), name, name);
  }
};

std::vector<Expr> all(const std::vector<Var>& iv) { return {iv.begin(), iv.end()}; }

}  // namespace

Tensor log_softmax(const Tensor& x, int axis, const std::string& name) {
  AlongAxis r(x, axis, "log_softmax");
  Tensor maxelem = r.max_along(x, "log_softmax_maxelem");
  IterVar k = reduce_axis(Range(0, int_const(r.full[size_t(r.axis)])), "k");
  Tensor expsum = compute(to_exprs(r.reduced), FCompute([&](const std::vector<Var>& iv) {
    return sum(te::exp(x(r.insert(iv, k)) - maxelem(all(iv))), {k});
  }), "log_softmax_expsum", "log_softmax_expsum");
  return compute(to_exprs(r.full), FCompute([&](const std::vector<Var>& iv) {
    return x(all(iv)) - maxelem(r.drop(iv)) - te::log(expsum(r.drop(iv)));
  }), name, "log_softmax");
}

Tensor hardmax(const Tensor& x, int axis, const std::string& name) {
  AlongAxis r(x, axis, "hardmax");
  Tensor maxelem = r.max_along(x, "hardmax_maxelem");
  const int64_t n = r.full[size_t(r.axis)];
  IterVar k = reduce_axis(Range(0, int_const(n)), "k");
  Tensor first = compute(to_exprs(r.reduced), FCompute([&](const std::vector<Var>& iv) {
    Expr kk = k;
    return min_reduce(select(x(r.insert(iv, kk)) == maxelem(all(iv)), kk, int_const(n)), {k});
  }), "hardmax_first", "hardmax_first");
  const DataType t = x.dtype();
  return compute(to_exprs(r.full), FCompute([&](const std::vector<Var>& iv) {
    return select(Expr(iv[size_t(r.axis)]) == first(r.drop(iv)), make_const(t, 1.0), make_const(t, 0.0));
  }), name, "hardmax");
}

}  // namespace loom::te::ops
