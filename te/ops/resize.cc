// Resize taps (ONNX's coordinate transforms and interpolation kernels) and resample.
#include "loom/te/ops/resize.h"

#include <cmath>
#include <limits>

#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// The source coordinate of output position `x`; sets `outside` for tf_crop_and_resize
/// positions beyond the input.
double source_coordinate(double x, int64_t in, int64_t out, double scale, const ResizeOptions& opt, double roi_start,
                         double roi_end, bool& outside) {
  const double out_width = scale * double(in);  // not out when the caller gave a scale
  outside = false;
  switch (opt.coordinate) {
    case CoordinateMode::kAlignCorners:
      return out_width == 1 ? 0.0 : x * double(in - 1) / (out_width - 1);
    case CoordinateMode::kAsymmetric:
      return x / scale;
    case CoordinateMode::kTfCropAndResize: {
      double v = out_width == 1 ? (roi_end - roi_start) * double(in - 1) / 2
                                : x * (roi_end - roi_start) * double(in - 1) / (out_width - 1);
      v += roi_start * double(in - 1);
      outside = v < 0 || v > double(in - 1);
      return v;
    }
    case CoordinateMode::kPytorchHalfPixel:
      return out_width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case CoordinateMode::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case CoordinateMode::kTfHalfPixelForNn:
      return (x + 0.5) / scale;
    case CoordinateMode::kHalfPixelSymmetric: {
      const double adjustment = double(out) / out_width;
      const double offset = double(in) / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
  }
  return 0.0;
}

/// Keys's cubic kernel with parameter a at distance |x|.
double cubic_kernel(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

/// The kernel's weights for the taps left to right around a source coordinate whose distance
/// past the left neighbour is `ratio` (in (0, 1]).
std::vector<double> coefficients(double ratio, double scale, const ResizeOptions& opt) {
  switch (opt.mode) {
    case ResizeMode::kNearest: {
      bool ceil_side = false;
      if (ratio == 1.0) ceil_side = true;
      else if (opt.nearest == NearestRounding::kRoundPreferFloor) ceil_side = ratio > 0.5;
      else if (opt.nearest == NearestRounding::kRoundPreferCeil) ceil_side = ratio >= 0.5;
      else ceil_side = opt.nearest == NearestRounding::kCeil;
      return {ceil_side ? 0.0 : 1.0, ceil_side ? 1.0 : 0.0};
    }
    case ResizeMode::kLinear: {
      if (!opt.antialias) return {1 - ratio, ratio};
      const double s = std::min(scale, 1.0);
      const int64_t start = int64_t(std::floor(-1 / s)) + 1, footprint = 2 - 2 * start;
      std::vector<double> c;
      double sum = 0;
      for (int64_t i = start; i < start + footprint; ++i) {
        c.push_back(std::clamp(1 - std::abs((double(i) - ratio) * s), 0.0, 1.0));
        sum += c.back();
      }
      for (double& v : c) v /= sum;
      return c;
    }
    case ResizeMode::kCubic: {
      if (!opt.antialias) {
        std::vector<double> c;
        for (double d : {ratio + 1, ratio, 1 - ratio, 2 - ratio}) c.push_back(cubic_kernel(d, opt.cubic_a));
        return c;
      }
      const double s = std::min(scale, 1.0);
      const int64_t start = int64_t(std::floor(-2 / s)) + 1, end = 2 - start;
      std::vector<double> c;
      double sum = 0;
      for (int64_t i = start; i < end; ++i) {
        c.push_back(cubic_kernel(s * (double(i) - ratio), opt.cubic_a));
        sum += c.back();
      }
      for (double& v : c) v /= sum;
      return c;
    }
  }
  return {};
}

}  // namespace

bool ResampleTaps::identity(int64_t in) const {
  if (out != in) return false;
  for (int64_t o = 0; o < out; ++o) {
    double on_self = 0;
    for (int64_t t = 0; t < taps; ++t) {
      const size_t k = size_t(o * taps + t);
      if (index[k] == o) on_self += weight[k];
      else if (index[k] < 0 || weight[k] != 0.0) return false;
    }
    if (on_self != 1.0) return false;
  }
  return true;
}

ResampleTaps resize_taps(int64_t in, int64_t out, double scale, const ResizeOptions& opt, double roi_start,
                         double roi_end) {
  LOOM_CHECK(in >= 1 && in <= std::numeric_limits<int32_t>::max(), "resize: input extent {} is out of range", in);
  LOOM_CHECK(out >= 1 && out <= std::numeric_limits<int32_t>::max(), "resize: output extent {} is out of range", out);
  LOOM_CHECK(std::isfinite(scale) && scale > 0, "resize: scale {} must be positive and finite", scale);
  LOOM_CHECK(!(opt.antialias && opt.mode == ResizeMode::kNearest), "resize: antialias applies to linear and cubic only");
  // The kernel's width, checked before the tables are made (a tiny antialias scale widens it).
  const double support = opt.mode == ResizeMode::kCubic ? 2.0 : 1.0;
  const double width = opt.antialias ? 2 * std::ceil(support / std::min(scale, 1.0)) : 2 * support;
  LOOM_CHECK(width * double(out) <= double(kMaxResizeTaps),
             "resize: {} outputs of {} taps each are more than the {} taps loom tabulates", out, width, kMaxResizeTaps);
  std::vector<std::vector<int64_t>> idx(static_cast<size_t>(out));
  std::vector<std::vector<double>> w(static_cast<size_t>(out));
  std::vector<bool> outside(static_cast<size_t>(out), false);
  size_t taps = 0;
  for (int64_t o = 0; o < out; ++o) {
    bool ext = false;
    const double x = source_coordinate(double(o), in, out, scale, opt, roi_start, roi_end, ext);
    LOOM_CHECK(std::isfinite(x), "resize: output position {} maps to a non-finite source coordinate", o);
    const double xf = std::floor(x);
    const double ratio = x == xf ? 1.0 : x - xf;
    std::vector<double> c = coefficients(ratio, scale, opt);
    const int64_t n = int64_t(c.size());
    // The n taps nearest x, ties to the smaller indices (ONNX's window on the edge-padded input).
    const int64_t pad = (n + 1) / 2;
    const double xp = x + double(pad);
    const int64_t p = int64_t(std::floor(xp));
    const double frac = xp - double(p);
    int64_t offset;
    if (n % 2 == 0) offset = frac == 0 ? -(n / 2) : -(n / 2) + 1;
    else offset = frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    const int64_t start = p + offset - pad;
    if (opt.exclude_outside) {
      double sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (start + t < 0 || start + t >= in) c[size_t(t)] = 0;
        sum += c[size_t(t)];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    outside[size_t(o)] = ext;
    // Taps of weight 0 are dropped; the rest read the clamped (edge-padded) index.
    for (int64_t t = 0; t < n; ++t) {
      if (c[size_t(t)] == 0.0) continue;
      idx[size_t(o)].push_back(std::clamp<int64_t>(start + t, 0, in - 1));
      w[size_t(o)].push_back(c[size_t(t)]);
    }
    taps = std::max(taps, idx[size_t(o)].size());
  }
  taps = std::max<size_t>(taps, 1);
  ResampleTaps r;
  r.out = out;
  r.taps = int64_t(taps);
  r.index.assign(size_t(out) * taps, 0);
  r.weight.assign(size_t(out) * taps, 0.0);
  for (size_t o = 0; o < size_t(out); ++o)
    for (size_t t = 0; t < taps; ++t) {
      const size_t k = o * taps + t;
      if (outside[o]) {
        r.index[k] = -1;
      } else if (t < idx[o].size()) {
        r.index[k] = int32_t(idx[o][t]);
        r.weight[k] = w[o][t];
      } else {
        r.index[k] = idx[o].empty() ? 0 : int32_t(idx[o][0]);  // a padding tap of weight 0
      }
    }
  return r;
}

Tensor resample(const Tensor& x, const Tensor& indices, const Tensor& weights, int axis,
                std::optional<double> extrapolation_value, const std::string& name) {
  auto s = const_shape(x, "resample", "x");
  LOOM_CHECK(!s.empty(), "resample: x must have at least one dim");
  auto is = const_shape(indices, 2, "resample", "indices", "[outputs, taps]");
  LOOM_CHECK(indices.dtype().is_int() || indices.dtype().is_uint(), "resample: indices must be integers, got {}",
             indices.dtype().str());
  const size_t ax = size_t(detail::normalize_axis(axis, s.size(), "resample"));
  const int64_t n = s[ax], O = is[0], T = is[1];
  if (weights.defined()) {
    auto ws = const_shape(weights, "resample", "weights");
    LOOM_CHECK(ws == is, "resample: weights ({}) must have the shape of indices ({})", shape_str(ws), shape_str(is));
    LOOM_CHECK(weights.dtype().is_float(), "resample: weights must be floating point, got {}", weights.dtype().str());
  } else {
    LOOM_CHECK(T == 1, "resample: without weights indices must have one tap per output, got {}", T);
  }
  std::vector<int64_t> out = s;
  out[ax] = O;
  const DataType xt = x.dtype();
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    const Expr o = iv[ax];
    auto index = [&](int64_t t) { return cast(DataType::Int(32), indices({o, int_const(t)})); };
    auto read = [&](int64_t t) {
      std::vector<Expr> idx(iv.begin(), iv.end());
      idx[ax] = max(min(index(t), int_const(n - 1)), int_const(0));
      return x(idx);
    };
    Expr v;
    if (!weights.defined()) {
      v = read(0);
    } else {
      const DataType wt = weights.dtype();
      for (int64_t t = 0; t < T; ++t) {
        Expr term = weights({o, int_const(t)}) * detail::convert(wt, read(t));
        v = v.defined() ? v + term : term;
      }
      // Integers: rounded (halves to even) and saturated, as ONNX's Resize casts back.
      if (!xt.is_float())
        v = max(min(round(v), detail::convert(wt, max_value(xt))), detail::convert(wt, min_value(xt)));
      v = detail::convert(xt, v);
    }
    if (extrapolation_value) v = select(index(0) < 0, detail::const_of(xt, *extrapolation_value), v);
    return v;
  };
  return compute(to_exprs(out), f, name, "injective");
}

}  // namespace loom::te::ops
