// Resizing: resize_taps + resample (per axis, through te::evaluate) against a naive resize
// that follows ONNX's definition output element by output element (its scalar reference:
// source coordinate, the n nearest neighbours on the edge-padded input, the kernel's
// coefficients, exclude_outside's renormalization, tf_crop_and_resize's extrapolation).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "loom/te/op_registry.h"
#include "loom/te/ops/resize.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using ops::CoordinateMode;
using ops::NearestRounding;
using ops::ResizeMode;
using ops::ResizeOptions;

struct AxisSpec {
  int64_t out;
  double scale;
  double roi_start = 0, roi_end = 1;
};

double cubic(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
  if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
  return 0;
}

std::vector<double> naive_coeffs(double ratio, double scale, const ResizeOptions& o) {
  std::vector<double> c;
  if (o.mode == ResizeMode::kNearest) {
    bool up;
    if (ratio == 1) up = true;
    else if (o.nearest == NearestRounding::kRoundPreferFloor) up = ratio > 0.5;
    else if (o.nearest == NearestRounding::kRoundPreferCeil) up = ratio >= 0.5;
    else up = o.nearest == NearestRounding::kCeil;
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  const double s = o.antialias ? std::min(scale, 1.0) : 1.0;
  const double support = o.mode == ResizeMode::kLinear ? 1.0 : 2.0;
  const int64_t start = int64_t(std::floor(-support / s)) + 1;
  double sum = 0;
  for (int64_t i = start; i < 2 - start; ++i) {
    const double d = s * (double(i) - ratio);
    c.push_back(o.mode == ResizeMode::kLinear ? std::max(0.0, 1 - std::abs(d)) : cubic(d, o.cubic_a));
    sum += c.back();
  }
  if (o.antialias)
    for (double& v : c) v /= sum;
  return c;
}

/// ONNX's 1-D interpolation of `data` at output position x.
double naive_1d(const std::vector<double>& data, const AxisSpec& a, double x, const ResizeOptions& o, double ev) {
  const int64_t in = int64_t(data.size());
  const double ow = a.scale * double(in);
  double xo = 0;
  switch (o.coordinate) {
    case CoordinateMode::kAlignCorners: xo = ow == 1 ? 0 : x * double(in - 1) / (ow - 1); break;
    case CoordinateMode::kAsymmetric: xo = x / a.scale; break;
    case CoordinateMode::kPytorchHalfPixel: xo = ow == 1 ? -0.5 : (x + 0.5) / a.scale - 0.5; break;
    case CoordinateMode::kHalfPixel: xo = (x + 0.5) / a.scale - 0.5; break;
    case CoordinateMode::kTfHalfPixelForNn: xo = (x + 0.5) / a.scale; break;
    case CoordinateMode::kHalfPixelSymmetric:
      xo = double(in) / 2 * (1 - double(a.out) / ow) + (x + 0.5) / a.scale - 0.5;
      break;
    case CoordinateMode::kTfCropAndResize:
      xo = (ow == 1 ? (a.roi_end - a.roi_start) * double(in - 1) / 2
                    : x * (a.roi_end - a.roi_start) * double(in - 1) / (ow - 1)) +
           a.roi_start * double(in - 1);
      if (xo < 0 || xo > double(in - 1)) return ev;
      break;
  }
  const double ratio = xo == std::floor(xo) ? 1.0 : xo - std::floor(xo);
  std::vector<double> c = naive_coeffs(ratio, a.scale, o);
  const int64_t n = int64_t(c.size()), pad = (n + 1) / 2;
  // The n indices of the padded input nearest xo + pad, ties to the smaller.
  std::vector<int64_t> all;
  for (int64_t i = 0; i < in + 2 * pad; ++i) all.push_back(i);
  const double xp = xo + double(pad);
  std::stable_sort(all.begin(), all.end(), [&](int64_t p, int64_t q) {
    return std::abs(xp - double(p)) < std::abs(xp - double(q)) ||
           (std::abs(xp - double(p)) == std::abs(xp - double(q)) && p < q);
  });
  std::vector<int64_t> idx(all.begin(), all.begin() + n);
  std::sort(idx.begin(), idx.end());
  if (o.exclude_outside) {
    double sum = 0;
    for (int64_t t = 0; t < n; ++t) {
      if (idx[size_t(t)] - pad < 0 || idx[size_t(t)] - pad >= in) c[size_t(t)] = 0;
      sum += c[size_t(t)];
    }
    for (double& v : c) v /= sum;
  }
  double r = 0;
  for (int64_t t = 0; t < n; ++t) r += c[size_t(t)] * data[size_t(std::clamp<int64_t>(idx[size_t(t)] - pad, 0, in - 1))];
  return r;
}

/// x [N, C, H, W] resized on H and W: along W first, then along H (ONNX's recursion).
Ref naive_resize_hw(const Ref& x, const AxisSpec& h, const AxisSpec& w, const ResizeOptions& o, double ev) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  Ref out({N, C, h.out, w.out});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < h.out; ++oy)
        for (int64_t ox = 0; ox < w.out; ++ox) {
          std::vector<double> col(size_t(H), 0.0);
          for (int64_t y = 0; y < H; ++y) {
            std::vector<double> row(static_cast<size_t>(W));
            for (int64_t xx = 0; xx < W; ++xx) row[size_t(xx)] = x({n, c, y, xx});
            col[size_t(y)] = naive_1d(row, w, double(ox), o, ev);
          }
          out({n, c, oy, ox}) = naive_1d(col, h, double(oy), o, ev);
        }
  return out;
}

struct Tables {
  Tensor index, weight;
};

/// resample along `axis` with the taps as two placeholders given their values.
Tensor resample_axis(Inputs& in, const Tensor& x, int axis, int64_t extent, const AxisSpec& a, const ResizeOptions& o,
                     std::optional<double> ev, bool weighted) {
  ops::ResampleTaps taps = ops::resize_taps(extent, a.out, a.scale, o, a.roi_start, a.roi_end);
  Tensor idx = ph({taps.out, taps.taps}, "index" + std::to_string(axis), DataType::Int(32));
  Ref ri({taps.out, taps.taps});
  for (size_t k = 0; k < taps.index.size(); ++k) ri.v[k] = taps.index[k];
  in.set(idx, ri);
  Tensor w;
  if (weighted) {
    w = ph({taps.out, taps.taps}, "weight" + std::to_string(axis), DataType::Float(64));
    Ref rw({taps.out, taps.taps});
    rw.v = taps.weight;
    in.set(w, rw);
  } else {
    EXPECT_EQ(taps.taps, 1);
  }
  return ops::resample(x, idx, w, axis, ev);
}

void check(Shape xs, AxisSpec h, AxisSpec w, ResizeOptions o, double ev = 0.0, DataType dt = DataType::Float(64)) {
  SCOPED_TRACE(::testing::Message() << "x " << xs[2] << "x" << xs[3] << " -> " << h.out << "x" << w.out << " scales "
                                    << h.scale << "," << w.scale << " mode " << int(o.mode) << " coord "
                                    << int(o.coordinate) << " nearest " << int(o.nearest) << " antialias "
                                    << o.antialias << " exclude " << o.exclude_outside);
  Inputs in;
  Tensor x = ph(xs, "x", dt);
  Ref rx = in.add(x);
  const bool weighted = o.mode != ResizeMode::kNearest || o.exclude_outside;
  std::optional<double> e;
  if (o.coordinate == CoordinateMode::kTfCropAndResize) e = ev;
  Tensor y = resample_axis(in, x, 2, xs[2], h, o, e, weighted);
  y = resample_axis(in, y, 3, xs[3], w, o, e, weighted);
  expect_close(in.eval(y), naive_resize_hw(rx, h, w, o, ev), dt == DataType::Float(64) ? 1e-9 : 1e-5);
}

AxisSpec by_scale(int64_t in, double s) { return {int64_t(std::floor(double(in) * s)), s}; }
AxisSpec by_size(int64_t in, int64_t out) { return {out, double(out) / double(in)}; }

const CoordinateMode kCoords[] = {CoordinateMode::kHalfPixel,        CoordinateMode::kHalfPixelSymmetric,
                                  CoordinateMode::kPytorchHalfPixel, CoordinateMode::kAlignCorners,
                                  CoordinateMode::kAsymmetric,       CoordinateMode::kTfHalfPixelForNn};

TEST(Resize, NearestEveryRoundingAndCoordinateMode) {
  for (NearestRounding r : {NearestRounding::kRoundPreferFloor, NearestRounding::kRoundPreferCeil,
                            NearestRounding::kFloor, NearestRounding::kCeil})
    for (CoordinateMode c : kCoords) {
      ResizeOptions o;
      o.mode = ResizeMode::kNearest;
      o.nearest = r;
      o.coordinate = c;
      check({1, 2, 5, 7}, by_scale(5, 2.0), by_size(7, 3), o);     // up by 2, down to 3
      check({2, 1, 4, 6}, by_size(4, 13), by_scale(6, 0.75), o);  // sizes that divide nothing
    }
}

TEST(Resize, LinearAndCubicEveryCoordinateMode) {
  for (ResizeMode m : {ResizeMode::kLinear, ResizeMode::kCubic})
    for (CoordinateMode c : kCoords) {
      ResizeOptions o;
      o.mode = m;
      o.coordinate = c;
      check({1, 2, 4, 5}, by_scale(4, 2.0), by_size(5, 17), o);
      check({1, 1, 9, 6}, by_scale(9, 0.6), by_size(6, 1), o);  // an output extent of 1
    }
}

TEST(Resize, CubicExcludeOutsideAndCoefficient) {
  ResizeOptions o;
  o.mode = ResizeMode::kCubic;
  o.cubic_a = -0.5;
  o.exclude_outside = true;
  check({1, 3, 4, 4}, by_scale(4, 2.0), by_scale(4, 0.8), o);
  o.coordinate = CoordinateMode::kAlignCorners;
  check({1, 1, 7, 3}, by_size(7, 16), by_size(3, 30), o);
}

TEST(Resize, Antialias) {
  for (ResizeMode m : {ResizeMode::kLinear, ResizeMode::kCubic}) {
    ResizeOptions o;
    o.mode = m;
    o.antialias = true;
    check({1, 2, 16, 13}, by_scale(16, 0.3), by_size(13, 4), o);  // down: wide kernels
    check({1, 1, 3, 5}, by_scale(3, 2.5), by_size(5, 2), o);        // up on H: the plain kernel
    o.exclude_outside = true;
    check({1, 1, 10, 10}, by_scale(10, 0.45), by_scale(10, 0.5), o);
  }
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  for (ResizeMode m : {ResizeMode::kNearest, ResizeMode::kLinear, ResizeMode::kCubic}) {
    ResizeOptions o;
    o.mode = m;
    o.coordinate = CoordinateMode::kTfCropAndResize;
    AxisSpec h = by_size(6, 5), w = by_size(7, 9);
    h.roi_start = 0.4, h.roi_end = 1.2;  // past the bottom edge
    w.roi_start = -0.3, w.roi_end = 0.7;
    check({1, 2, 6, 7}, h, w, o, 10.0);
    AxisSpec one = by_size(6, 1);
    one.roi_start = 0.1, one.roi_end = 0.6;
    check({1, 1, 6, 7}, one, w, o, -3.5);
  }
}

TEST(Resize, Float32DataWithFloat32Weights) {
  ResizeOptions o;
  o.mode = ResizeMode::kLinear;
  check({2, 3, 5, 8}, by_scale(5, 3.0), by_scale(8, 0.5), o, 0.0, DataType::Float(32));
}

TEST(Resize, TapsOfKnownCases) {
  ResizeOptions o;
  o.mode = ResizeMode::kLinear;  // half_pixel 2 -> 4: sources -0.25, 0.25, 0.75, 1.25
  ops::ResampleTaps t = ops::resize_taps(2, 4, 2.0, o);
  ASSERT_EQ(t.taps, 2);
  const std::vector<int32_t> want_index = {0, 0, 0, 1, 0, 1, 1, 1};
  const std::vector<double> want_weight = {0.25, 0.75, 0.75, 0.25, 0.25, 0.75, 0.75, 0.25};
  EXPECT_EQ(t.index, want_index);
  for (size_t k = 0; k < want_weight.size(); ++k) EXPECT_DOUBLE_EQ(t.weight[k], want_weight[k]) << k;
  EXPECT_FALSE(t.identity(2));
  // Nearest asymmetric by 3: each source repeated three times, one tap.
  o.mode = ResizeMode::kNearest;
  o.coordinate = CoordinateMode::kAsymmetric;
  o.nearest = NearestRounding::kFloor;
  t = ops::resize_taps(2, 6, 3.0, o);
  EXPECT_EQ(t.taps, 1);
  EXPECT_EQ(t.index, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_TRUE(ops::resize_taps(5, 5, 1.0, o).identity(5));
  o.mode = ResizeMode::kCubic;
  o.coordinate = CoordinateMode::kHalfPixel;
  EXPECT_TRUE(ops::resize_taps(4, 4, 1.0, o).identity(4));
}

TEST(Resize, NearestOfIntegersIsExact) {
  Inputs in;
  Tensor x = ph({3, 10}, "x", DataType::Int(32));
  Ref rx({3, 10});
  for (size_t k = 0; k < rx.v.size(); ++k) rx.v[k] = double(int64_t(k) * 1000003 % 65537);
  in.set(x, rx);
  ResizeOptions o;
  ops::ResampleTaps t = ops::resize_taps(10, 4, 0.4, o);
  Tensor idx = ph({4, 1}, "index", DataType::Int(32));
  Ref ri({4, 1});
  for (size_t k = 0; k < 4; ++k) ri.v[k] = t.index[k];
  in.set(idx, ri);
  Ref want({3, 4});
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 4; ++c) want({r, c}) = rx({r, int64_t(t.index[size_t(c)])});
  expect_close(in.eval(ops::resample(x, idx, Tensor(), -1)), want, 0.0);
}

TEST(Resize, WeightedIntegersRoundHalvesToEvenAndSaturate) {
  Inputs in;
  Tensor x = ph({2, 3}, "x", DataType::Int(8)), idx = ph({3, 2}, "i", DataType::Int(32)), w = ph({3, 2}, "w");
  Ref rx({2, 3}), ri({3, 2}), rw({3, 2});
  rx.v = {100, 120, -7, 1, 2, 3};
  ri.v = {0, 1, 1, 2, 0, 0};
  rw.v = {0.5, 0.5, 0.5, 0.5, 1.5, 0.0};  // 110, 56.5, 150 (saturates); 1.5, 2.5, 1.5
  in.set(x, rx);
  in.set(idx, ri);
  in.set(w, rw);
  Ref want({2, 3});
  want.v = {110, 56, 127, 2, 2, 2};
  expect_close(in.eval(ops::resample(x, idx, w, 1)), want, 0.0);
}

TEST(Resize, RegistryResampleAndErrors) {
  const ops::OpDef& d = ops::get_op("resample");
  EXPECT_EQ(d.pattern, ops::OpPattern::kInjective);
  auto t = ops::infer_type("resample", {{{2, 3, 5}, DataType::Float(32), ""}, {{9, 2}, DataType::Int(32), ""},
                                        {{9, 2}, DataType::Float(32), ""}},
                           {{"axis", int64_t(1)}});
  EXPECT_EQ(t.at(0).shape, (Shape{2, 9, 5}));
  expect_error([] { ops::infer_type("resample", {{{2, 3}, DataType::Float(32), ""}, {{9, 2}, DataType::Int(32), ""}},
                                    {{"axis", int64_t(0)}}); },
               {"resample", "one tap"});
  expect_error([] {
    ops::infer_type("resample", {{{2, 3}, DataType::Float(32), ""}, {{9, 2}, DataType::Int(32), ""},
                                 {{9, 3}, DataType::Float(32), ""}},
                    {{"axis", int64_t(0)}});
  }, {"weights", "shape of indices"});
  expect_error([] { ops::resize_taps(0, 3, 1.0, {}); }, {"input extent 0"});
  expect_error([] { ops::resize_taps(3, 3, -1.0, {}); }, {"scale -1"});
  ResizeOptions wide;
  wide.mode = ResizeMode::kLinear;
  wide.antialias = true;  // a kernel 2e6 taps wide
  expect_error([&] { ops::resize_taps(100000000, 100, 1e-6, wide); }, {"more than the 16777216 taps"});
  // The registry entry computes what resample does, the extrapolation included.
  Inputs in;
  Tensor x = ph({4, 3}), idx = ph({2, 1}, "i", DataType::Int(32)), w = ph({2, 1}, "w");
  Ref rx = in.add(x);
  Ref ri({2, 1}), rw({2, 1});
  ri.v = {-1, 2};
  rw.v = {0.0, 0.5};
  in.set(idx, ri);
  in.set(w, rw);
  auto out = ops::apply_op("resample", {x, idx, w},
                           {{"axis", int64_t(0)}, {"extrapolate", int64_t(1)}, {"extrapolation_value", 7.0}});
  Ref want({2, 3});
  for (int64_t c = 0; c < 3; ++c) {
    want({0, c}) = 7.0;
    want({1, c}) = 0.5 * rx({2, c});
  }
  expect_close(in.eval(out.at(0)), want);
}

}  // namespace
