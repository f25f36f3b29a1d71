// Reductions over a set of axes: sum, mean, max, min, product.
#include <algorithm>

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

Tensor reduce(const Tensor& x, ReduceKind kind, std::vector<int64_t> axes, bool keepdims, const std::string& name) {
  const char* op = "reduce";
  auto s = const_shape(x, op, "x");
  LOOM_CHECK(!s.empty(), "reduce: x must have at least one dim");
  std::vector<bool> reduced(s.size(), axes.empty());
  for (int64_t a : axes) {
    LOOM_CHECK(a >= -int64_t(s.size()) && a < int64_t(s.size()), "reduce: axis {} is out of range for x of shape {}",
               a, shape_str(s));
    int ax = detail::normalize_axis(int(a), s.size(), op);
    LOOM_CHECK(!reduced[size_t(ax)], "reduce: axis {} is given twice", ax);
    reduced[size_t(ax)] = true;
  }
  LOOM_CHECK(kind != ReduceKind::kMean || x.dtype().is_float(), "reduce: the mean of {} (not floating point)",
             x.dtype().str());
  std::vector<IterVar> raxes;
  std::vector<int64_t> out;
  int64_t count = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (reduced[d]) {
      raxes.push_back(reduce_axis(Range(0, int_const(s[d])), fmt::format("k{}", raxes.size())));
      count *= s[d];
      if (keepdims) out.push_back(1);
    } else {
      out.push_back(s[d]);
    }
  }
  if (out.empty()) out.push_back(1);
  DataType t = x.dtype();
  FCompute f = [&](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx;
    size_t r = 0, o = 0;
    for (size_t d = 0; d < s.size(); ++d) {
      if (reduced[d]) {
        idx.push_back(raxes[r++]);
        if (keepdims) ++o;
      } else {
        idx.push_back(iv[o++]);
      }
    }
    Expr v = x(idx);
    switch (kind) {
      case ReduceKind::kSum: return sum(v, raxes);
      case ReduceKind::kMean: return sum(v * detail::const_of(t, 1.0 / double(count)), raxes);
      case ReduceKind::kMax: return max_reduce(v, raxes);
      case ReduceKind::kMin: return min_reduce(v, raxes);
      case ReduceKind::kProd: return prod(v, raxes);
    }
    return Expr();
  };
  return compute(to_exprs(out), f, name, "reduce");
}

}  // namespace loom::te::ops
