// grid_sample through te::evaluate against a naive sampler written from ONNX's definition
// (coordinates denormalized, clamped or reflected, neighbours read under the padding rule),
// in 2-D and 3-D, every mode, padding and align_corners, grid points well outside [-1, 1].
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "loom/te/op_registry.h"
#include "loom/te/ops/grid_sample.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using ops::GridPadding;
using ops::GridSampleMode;

double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = int64_t(dx / range);
    const double r = dx - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = int64_t(dx / range);
    const double r = dx - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

double cubic(double x) {
  const double a = -0.75;
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/// ONNX's GridSample of x [N, C, D1..Dk] at grid [N, O1..Ok, k].
Ref naive_grid_sample(const Ref& x, const Ref& grid, GridSampleMode mode, GridPadding pad, bool align) {
  const size_t k = x.shape.size() - 2;
  Shape out = {x.shape[0], x.shape[1]};
  for (size_t d = 0; d < k; ++d) out.push_back(grid.shape[1 + d]);
  Ref r(out);
  for (int64_t f = 0; f < numel(out); ++f) {
    Shape o = r.unravel(f);
    std::vector<double> pos(k);
    for (size_t d = 0; d < k; ++d) {
      Shape gi = {o[0]};
      for (size_t e = 0; e < k; ++e) gi.push_back(o[2 + e]);
      gi.push_back(int64_t(k - 1 - d));
      const double g = grid.v[size_t(grid.ravel(gi))];
      const double D = double(x.shape[2 + d]);
      double v = align ? (g + 1) / 2 * (D - 1) : ((g + 1) * D - 1) / 2;
      if (mode == GridSampleMode::kNearest) v = std::nearbyint(v);
      const double lo = align ? 0 : -0.5, hi = align ? D - 1 : D - 0.5;
      if (v < lo || v > hi) {
        if (pad == GridPadding::kBorder) v = std::clamp(v, 0.0, D - 1);
        if (pad == GridPadding::kReflection) v = reflect(v, lo, hi);
      }
      pos[d] = v;
    }
    auto pixel = [&](const std::vector<int64_t>& at) {
      Shape xi = {o[0], o[1]};
      for (size_t d = 0; d < k; ++d) {
        const int64_t D = x.shape[2 + d];
        int64_t i = at[d];
        if (pad == GridPadding::kZeros && (i < 0 || i >= D)) return 0.0;
        if (pad == GridPadding::kBorder) i = std::clamp<int64_t>(i, 0, D - 1);
        if (pad == GridPadding::kReflection)
          i = int64_t(reflect(double(i), align ? 0 : -0.5, align ? double(D - 1) : double(D) - 0.5));
        xi.push_back(i);
      }
      return x.v[size_t(x.ravel(xi))];
    };
    double acc = 0;
    std::vector<int64_t> at(k);
    std::function<void(size_t, double)> walk = [&](size_t d, double w) {
      if (d == k) {
        acc += w * pixel(at);
        return;
      }
      if (mode == GridSampleMode::kNearest) {
        at[d] = int64_t(pos[d]);
        walk(d + 1, w);
        return;
      }
      const double x0 = std::floor(pos[d]), t = pos[d] - x0;
      if (mode == GridSampleMode::kLinear) {
        at[d] = int64_t(x0), walk(d + 1, w * (1 - t));
        at[d] = int64_t(x0) + 1, walk(d + 1, w * t);
      } else {
        for (int64_t j = -1; j <= 2; ++j) {
          at[d] = int64_t(x0) + j;
          walk(d + 1, w * cubic(double(j) - t));
        }
      }
    };
    walk(0, 1.0);
    r.v[size_t(f)] = acc;
  }
  return r;
}

void check(Shape xs, Shape gs, GridSampleMode mode, GridPadding pad, bool align) {
  SCOPED_TRACE(::testing::Message() << "mode " << int(mode) << " padding " << int(pad) << " align " << align
                                    << " rank " << xs.size());
  Inputs in;
  Tensor x = ph(xs, "x", DataType::Float(64)), g = ph(gs, "grid", DataType::Float(64));
  Ref rx = in.add(x), rg = in.add(g, -1.9, 1.9);  // far outside: reflected more than once
  expect_close(in.eval(ops::grid_sample(x, g, mode, pad, align)), naive_grid_sample(rx, rg, mode, pad, align), 1e-9);
}

TEST(GridSample, EveryModePaddingAndAlignment2D) {
  for (GridSampleMode m : {GridSampleMode::kNearest, GridSampleMode::kLinear, GridSampleMode::kCubic})
    for (GridPadding p : {GridPadding::kZeros, GridPadding::kBorder, GridPadding::kReflection})
      for (bool a : {false, true}) {
        check({2, 3, 5, 7}, {2, 4, 6, 2}, m, p, a);
        check({1, 1, 1, 13}, {1, 3, 17, 2}, m, p, a);  // an input extent of 1
      }
}

TEST(GridSample, ThreeDimensionsAndOne) {
  for (GridSampleMode m : {GridSampleMode::kNearest, GridSampleMode::kLinear})
    for (GridPadding p : {GridPadding::kZeros, GridPadding::kBorder, GridPadding::kReflection}) {
      check({1, 2, 3, 4, 5}, {1, 2, 3, 4, 3}, m, p, false);
      check({1, 2, 3, 4, 5}, {1, 2, 3, 4, 3}, m, p, true);
    }
  check({2, 2, 9}, {2, 11, 1}, GridSampleMode::kCubic, GridPadding::kReflection, false);
}

TEST(GridSample, RegistryEntryAndErrors) {
  EXPECT_EQ(ops::get_op("grid_sample").pattern, ops::OpPattern::kInjective);
  auto t = ops::infer_type("grid_sample", {{{2, 3, 8, 8}, DataType::Float(32), ""}, {{2, 5, 6, 2}, DataType::Float(32), ""}},
                           {{"mode", std::string("cubic")}});
  EXPECT_EQ(t.at(0).shape, (Shape{2, 3, 5, 6}));
  expect_error([] {
    ops::infer_type("grid_sample", {{{2, 3, 8, 8}, DataType::Float(32), ""}, {{2, 5, 6, 3}, DataType::Float(32), ""}}, {});
  }, {"grid_sample", "needs a grid [2, O1..O2, 2]"});
  expect_error([] {
    ops::infer_type("grid_sample", {{{2, 3, 8, 8}, DataType::Float(32), ""}, {{2, 5, 6, 2}, DataType::Float(32), ""}},
                    {{"padding_mode", std::string("wrap")}});
  }, {"padding_mode 'wrap'"});
  expect_error([] {
    ops::infer_type("grid_sample", {{{2, 3, 8, 8}, DataType::Int(32), ""}, {{2, 5, 6, 2}, DataType::Float(32), ""}}, {});
  }, {"floating point"});
}

}  // namespace
