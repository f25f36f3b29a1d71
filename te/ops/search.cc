// argmax, argmin and top-k along one axis.
#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// The index of x's indices `iv` (of a tensor with `axis` dropped when not `kept`) with `axis` set to `at`.
std::vector<Expr> with_axis(const std::vector<Var>& iv, size_t axis, bool kept, Expr at) {
  std::vector<Expr> idx(iv.begin(), iv.end());
  if (kept) idx[axis] = std::move(at);
  else idx.insert(idx.begin() + std::ptrdiff_t(axis), std::move(at));
  return idx;
}

Tensor arg_extreme(const Tensor& x, int axis, bool keepdims, bool last, bool is_max, const char* op,
                   const std::string& name) {
  auto s = const_shape(x, op, "x");
  LOOM_CHECK(!s.empty(), "{}: x must have at least one dim", op);
  LOOM_CHECK(!x.dtype().is_bool(), "{}: x must be numeric, got bool", op);
  const size_t ax = size_t(detail::normalize_axis(axis, s.size(), op));
  const int64_t n = s[ax];
  std::vector<int64_t> out = s;
  if (keepdims) out[ax] = 1;
  else out.erase(out.begin() + std::ptrdiff_t(ax));
  const bool dropped_all = out.empty();
  if (dropped_all) out.push_back(1);
  auto reduce_index = [&](const std::vector<Var>& iv) { return dropped_all ? std::vector<Var>{} : iv; };
  Tensor extreme = compute(
      to_exprs(out),
      [&](const std::vector<Var>& iv) -> Expr {
        IterVar r = reduce_axis(Range(0, int_const(n)), "k");
        Expr v = x(with_axis(reduce_index(iv), ax, keepdims, r));
        return is_max ? max_reduce(v, {r}) : min_reduce(v, {r});
      },
      name + "_extreme", "reduce");
  const DataType i64 = DataType::Int(64);
  return compute(
      to_exprs(out),
      [&](const std::vector<Var>& iv) -> Expr {
        IterVar r = reduce_axis(Range(0, int_const(n)), "k");
        Expr hit = x(with_axis(reduce_index(iv), ax, keepdims, r)) == extreme(std::vector<Expr>(iv.begin(), iv.end()));
        Expr i = cast(i64, Expr(r));
        if (last) return max_reduce(te::select(hit, i, make_const(i64, int64_t(-1))), {r});
        return min_reduce(te::select(hit, i, make_const(i64, n)), {r});
      },
      name, "reduce");
}

}  // namespace

Tensor argmax(const Tensor& x, int axis, bool keepdims, bool select_last_index, const std::string& name) {
  return arg_extreme(x, axis, keepdims, select_last_index, true, "argmax", name);
}
Tensor argmin(const Tensor& x, int axis, bool keepdims, bool select_last_index, const std::string& name) {
  return arg_extreme(x, axis, keepdims, select_last_index, false, "argmin", name);
}

std::vector<Tensor> topk(const Tensor& x, int64_t k, int axis, bool largest, const std::string& name) {
  const char* op = "topk";
  auto s = const_shape(x, op, "x");
  LOOM_CHECK(!s.empty(), "topk: x must have at least one dim");
  LOOM_CHECK(!x.dtype().is_bool(), "topk: x must be numeric, got bool");
  const size_t ax = size_t(detail::normalize_axis(axis, s.size(), op));
  const int64_t n = s[ax];
  LOOM_CHECK(k >= 1 && k <= n, "topk: k = {} is outside [1, {}] for x of shape {} along axis {}", k, n, shape_str(s),
             ax);
  // rank[i] = the number of elements before element i in the order: better ones, and equal
  // ones of a lower index.
  Tensor rank = compute(
      to_exprs(s),
      [&](const std::vector<Var>& iv) -> Expr {
        IterVar j = reduce_axis(Range(0, int_const(n)), "j");
        Expr xi = x(std::vector<Expr>(iv.begin(), iv.end()));
        Expr xj = x(with_axis(iv, ax, true, j));
        Expr before = (largest ? xj > xi : xj < xi) || (xj == xi && Expr(j) < Expr(iv[ax]));
        return sum(te::select(before, make_const(DataType::Int(32), int64_t(1)), make_zero(DataType::Int(32))), {j});
      },
      name + "_rank", "reduce");
  std::vector<int64_t> out = s;
  out[ax] = k;
  const DataType i64 = DataType::Int(64);
  Tensor indices = compute(
      to_exprs(out),
      [&](const std::vector<Var>& iv) -> Expr {
        IterVar i = reduce_axis(Range(0, int_const(n)), "i");
        Expr at = rank(with_axis(iv, ax, true, i)) == Expr(iv[ax]);
        return sum(te::select(at, cast(i64, Expr(i)), make_zero(i64)), {i});
      },
      name + "_indices", "reduce");
  Tensor values = compute(
      to_exprs(out),
      [&](const std::vector<Var>& iv) -> Expr {
        Expr i = cast(DataType::Int(32), indices(std::vector<Expr>(iv.begin(), iv.end())));
        return x(with_axis(iv, ax, true, i));
      },
      name + "_values", "injective");
  return {values, indices};
}

}  // namespace loom::te::ops
