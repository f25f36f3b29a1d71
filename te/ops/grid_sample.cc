// grid_sample: per output element, its source coordinates from the grid, ONNX's clamping or
// reflection, and the weighted neighbours, each read with the padding rule.
#include "loom/te/ops/grid_sample.h"

#include <fmt/format.h>

#include <array>
#include <functional>

#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// body(v) with v bound to `value` by a let (so that body's many uses of it stay one
/// computation), or body(value) for a variable or constant.
Expr let(const Expr& value, const std::string& name, const std::function<Expr(const Expr&)>& body) {
  if (value.as<VarNode>() || as_const_int(value) || as_const_float(value)) return body(value);
  Var v(name, value.dtype());
  return make<LetNode>(v, value, body(v));
}

/// x reflected into [lo, hi] by the nearer border, as often as it takes (ONNX's
/// GridSample reference).
Expr reflect(const Expr& value, double lo, double hi) {
  const DataType t = value.dtype();
  const double range = hi - lo;
  if (range <= 0) return make_const(t, lo);
  const Expr l = make_const(t, lo), h = make_const(t, hi), w = make_const(t, range);
  return let(value, "reflect_x", [&](const Expr& x) {
    Expr below = x < l;
    return let(select(below, l - x, x - h), "reflect_dx", [&](const Expr& dx) {
      return let(floor(dx / w), "reflect_n", [&](const Expr& n) {
        Expr odd = floormod(cast(DataType::Int(32), n), int_const(2)) == int_const(1);
        return let(dx - n * w, "reflect_r", [&](const Expr& r) {
          return select(below, select(odd, h - r, l + r), select(odd, l + r, h - r));
        });
      });
    });
  });
}

/// Keys's cubic weights (a = -0.75) of the four neighbours x0-1 .. x0+2 at distance f past x0.
std::array<Expr, 4> cubic_weights(const Expr& f) {
  const DataType t = f.dtype();
  auto c = [&](double v) { return make_const(t, v); };
  const double a = -0.75;
  auto near = [&](const Expr& d) { return ((c(a + 2) * d - c(a + 3)) * d) * d + c(1); };           // |d| <= 1
  auto far = [&](const Expr& d) { return ((c(a) * d - c(5 * a)) * d + c(8 * a)) * d - c(4 * a); };  // 1 < |d| < 2
  return {far(f + c(1)), near(f), near(c(1) - f), far(c(2) - f)};
}

}  // namespace

Tensor grid_sample(const Tensor& data, const Tensor& grid, GridSampleMode mode, GridPadding padding,
                   bool align_corners, const std::string& name) {
  auto ds = const_shape(data, "grid_sample", "data");
  auto gs = const_shape(grid, "grid_sample", "grid");
  LOOM_CHECK(ds.size() >= 3, "grid_sample: data must be [N, C, D1..Dk] with k >= 1, got {}", shape_str(ds));
  const size_t k = ds.size() - 2;
  LOOM_CHECK(gs.size() == k + 2 && gs[0] == ds[0] && gs.back() == int64_t(k),
             "grid_sample: data {} needs a grid [{}, O1..O{}, {}], got {}", shape_str(ds), ds[0], k, k, shape_str(gs));
  LOOM_CHECK(data.dtype().is_float() && grid.dtype().is_float(),
             "grid_sample: data and grid must be floating point, got {} and {}", data.dtype().str(), grid.dtype().str());
  std::vector<int64_t> out = {ds[0], ds[1]};
  out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
  const DataType ct = grid.dtype(), dt = data.dtype();
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    auto c = [&](double v) { return make_const(ct, v); };
    // Per spatial dim: its taps (integer indices) and their weights, over let-bound
    // coordinates (lets[d]: the variables and values, outermost first).
    std::vector<std::vector<Expr>> index(k), weight(k);
    std::vector<std::pair<Var, Expr>> lets;
    auto bind = [&](const Expr& value, const std::string& nm) {
      Var v(fmt::format("{}{}", nm, lets.size()), value.dtype());
      lets.emplace_back(v, value);
      return Expr(v);
    };
    for (size_t d = 0; d < k; ++d) {
      const int64_t D = ds[2 + d];
      std::vector<Expr> gi = {iv[0]};
      for (size_t o = 0; o < k; ++o) gi.push_back(iv[2 + o]);
      gi.push_back(int_const(int64_t(k - 1 - d)));  // the grid lists the last dim first
      Expr g = grid(gi);
      Expr x = align_corners ? (g + c(1)) / c(2) * c(double(D - 1)) : ((g + c(1)) * c(double(D)) - c(1)) / c(2);
      if (mode == GridSampleMode::kNearest) x = round(x);
      const double lo = align_corners ? 0.0 : -0.5, hi = align_corners ? double(D - 1) : double(D) - 0.5;
      x = bind(x, "u");
      Expr outside = x < c(lo) || x > c(hi);
      if (padding == GridPadding::kBorder) x = select(outside, max(min(x, c(double(D - 1))), c(0)), x);
      if (padding == GridPadding::kReflection) x = select(outside, reflect(x, lo, hi), x);
      x = bind(x, "x");
      if (mode == GridSampleMode::kNearest) {
        index[d] = {cast(DataType::Int(32), x)};
        weight[d] = {Expr()};
        continue;
      }
      Expr x0 = bind(floor(x), "x0"), frac = bind(x - x0, "frac");
      Expr i0 = cast(DataType::Int(32), x0);
      if (mode == GridSampleMode::kLinear) {
        index[d] = {i0, i0 + int_const(1)};
        weight[d] = {c(1) - frac, frac};
      } else {
        auto w = cubic_weights(frac);
        index[d] = {i0 - int_const(1), i0, i0 + int_const(1), i0 + int_const(2)};
        weight[d] = {w[0], w[1], w[2], w[3]};
      }
    }
    // A neighbour's value under the padding rule.
    auto pixel = [&](const std::vector<Expr>& at) -> Expr {
      std::vector<Expr> idx = {iv[0], iv[1]};
      Expr inside;
      for (size_t d = 0; d < k; ++d) {
        const int64_t D = ds[2 + d];
        Expr i = at[d];
        if (padding == GridPadding::kZeros) {
          Expr ok = i >= int_const(0) && i < int_const(D);
          inside = inside.defined() ? (inside && ok) : ok;
        } else if (padding == GridPadding::kReflection) {
          const double lo = align_corners ? 0.0 : -0.5, hi = align_corners ? double(D - 1) : double(D) - 0.5;
          i = cast(DataType::Int(32), reflect(cast(ct, i), lo, hi));
        }
        idx.push_back(max(min(i, int_const(D - 1)), int_const(0)));
      }
      Expr v = data(idx);
      return inside.defined() ? select(inside, v, make_zero(dt)) : v;
    };
    Expr sum;
    std::vector<Expr> at(k);
    std::function<void(size_t, Expr)> taps = [&](size_t d, Expr w) {
      if (d == k) {
        Expr v = pixel(at);
        Expr term = w.defined() ? detail::convert(dt, w) * v : v;
        sum = sum.defined() ? sum + term : term;
        return;
      }
      for (size_t t = 0; t < index[d].size(); ++t) {
        at[d] = index[d][t];
        Expr wt = weight[d][t];
        taps(d + 1, !wt.defined() ? w : w.defined() ? w * wt : wt);
      }
    };
    taps(0, Expr());
    for (size_t j = lets.size(); j-- > 0;) sum = make<LetNode>(lets[j].first, lets[j].second, sum);
    return sum;
  };
  return compute(to_exprs(out), f, name, "injective");
}

}  // namespace loom::te::ops
