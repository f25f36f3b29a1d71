// Converters of ONNX's Resize (opsets 10 to 19) and Upsample (7, 9): the output extent and
// scale of every axis are worked out at import, each resized axis's taps computed on the host
// (te::ops::resize_taps) and one resample emitted per axis, its index and weight tables
// constants. Integer data is interpolated in floating point, rounded and saturated.
#include <fmt/ranges.h>

#include <cmath>

#include "loom/te/ops/resize.h"
#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

namespace ops = te::ops;

struct AxisResize {
  int64_t in = 0, out = 0;
  double scale = 1.0;
  double roi_start = 0.0, roi_end = 1.0;
};

std::vector<double> float_values(const runtime::NDArray& a) {
  std::vector<double> v(size_t(a.numel()));
  for (int64_t k = 0; k < a.numel(); ++k) v[size_t(k)] = a.get(k);
  return v;
}

/// Resamples `x` along every axis whose taps are not the identity; `opt_of(d)` gives axis d's
/// options (Upsample's nearest rounding depends on the direction). Integer data that some axis
/// interpolates is resampled in floating point, then rounded (halves to even) and saturated
/// once, as ONNX's reference casts back.
Value resample_axes(Importer& im, Value x, const std::vector<AxisResize>& axes,
                    const std::function<ops::ResizeOptions(size_t)>& opt_of, std::optional<double> extrapolation) {
  const DataType dt = im.type(x).dtype;
  struct Axis {
    size_t dim;
    ops::ResampleTaps taps;
    bool weighted, outside;
  };
  std::vector<Axis> resampled;
  bool weighted = false;
  for (size_t d = 0; d < axes.size(); ++d) {
    const AxisResize& a = axes[d];
    Axis r{d, {}, false, false};
    try {
      r.taps = ops::resize_taps(a.in, a.out, a.scale, opt_of(d), a.roi_start, a.roi_end);
    } catch (const Error& e) {
      im.invalid(fmt::format("axis {}: {}", d, e.what()));
    }
    if (r.taps.identity(a.in)) continue;
    r.weighted = r.taps.taps != 1;
    for (size_t k = 0; k < r.taps.index.size(); ++k) {
      r.outside = r.outside || r.taps.index[k] < 0;
      r.weighted = r.weighted || r.taps.weight[k] != 1.0;
    }
    weighted = weighted || r.weighted || r.outside;
    resampled.push_back(std::move(r));
  }
  const bool via_float = weighted && !dt.is_float();
  if (via_float && dt.is_bool()) im.unsupported("interpolating bool data (nearest resizes it)");
  // float32 weights, except for float64 data and integers float32 does not hold exactly.
  const DataType wt = dt == DataType::Float(64) || (via_float && dt.bits() > 16) ? DataType::Float(64)
                                                                                   : DataType::Float(32);
  if (via_float) x = im.op("cast", {x}, {{"dtype", wt.str()}});
  for (const Axis& r : resampled) {
    runtime::NDArray index = runtime::NDArray::empty({r.taps.out, r.taps.taps}, DataType::Int(32));
    std::copy(r.taps.index.begin(), r.taps.index.end(), index.data<int32_t>());
    std::vector<Value> inputs = {x, im.constant(index, fmt::format("index{}", r.dim))};
    if (r.weighted || r.outside) {
      runtime::NDArray weight = runtime::NDArray::empty({r.taps.out, r.taps.taps}, wt);
      for (size_t k = 0; k < r.taps.weight.size(); ++k) weight.set(int64_t(k), r.taps.weight[k]);
      inputs.push_back(im.constant(weight, fmt::format("weight{}", r.dim)));
    }
    te::ops::Attrs attrs = {{"axis", int64_t(r.dim)}};
    if (r.outside && extrapolation) {
      attrs["extrapolate"] = int64_t(1);
      attrs["extrapolation_value"] = *extrapolation;
    }
    x = im.op("resample", inputs, attrs);
  }
  if (via_float) {
    const int bits = dt.bits();
    const double lo = dt.is_uint() ? 0.0 : -std::ldexp(1.0, bits - 1);
    double hi = std::ldexp(1.0, dt.is_uint() ? bits : bits - 1);  // one past the largest
    hi = bits < 53 ? hi - 1 : std::nextafter(hi, 0.0);          // 64-bit: the largest double below
    x = im.op("round", {x});
    x = im.op("clip", {x}, {{"min", lo}, {"max", hi}});
    x = im.op("cast", {x}, {{"dtype", dt.str()}});
  }
  return x;
}

ops::CoordinateMode coordinate_mode(Importer& im, const std::string& s) {
  if (s == "half_pixel") return ops::CoordinateMode::kHalfPixel;
  if (s == "half_pixel_symmetric") return ops::CoordinateMode::kHalfPixelSymmetric;
  if (s == "pytorch_half_pixel") return ops::CoordinateMode::kPytorchHalfPixel;
  if (s == "align_corners") return ops::CoordinateMode::kAlignCorners;
  if (s == "asymmetric") return ops::CoordinateMode::kAsymmetric;
  if (s == "tf_crop_and_resize") return ops::CoordinateMode::kTfCropAndResize;
  if (s == "tf_half_pixel_for_nn") {
    if (im.opset() >= 13) im.invalid("coordinate_transformation_mode 'tf_half_pixel_for_nn' was removed in opset 13");
    return ops::CoordinateMode::kTfHalfPixelForNn;
  }
  im.invalid(fmt::format("coordinate_transformation_mode '{}' is not one ONNX defines", s));
}

ops::ResizeMode resize_mode(Importer& im, const std::string& s) {
  if (s == "nearest") return ops::ResizeMode::kNearest;
  if (s == "linear" || (s == "bilinear" && im.node().op_type() == "Upsample")) return ops::ResizeMode::kLinear;
  if (s == "cubic") return ops::ResizeMode::kCubic;
  im.invalid(fmt::format("mode '{}' is not one of nearest, linear, cubic", s));
}

ops::NearestRounding nearest_rounding(Importer& im, const std::string& s) {
  if (s == "round_prefer_floor") return ops::NearestRounding::kRoundPreferFloor;
  if (s == "round_prefer_ceil") return ops::NearestRounding::kRoundPreferCeil;
  if (s == "floor") return ops::NearestRounding::kFloor;
  if (s == "ceil") return ops::NearestRounding::kCeil;
  im.invalid(fmt::format("nearest_mode '{}' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", s));
}

/// Extents from scales: floor(in * scale), as ONNX's reference and onnxruntime compute them.
std::vector<AxisResize> from_scales(Importer& im, const std::vector<int64_t>& in, const std::vector<double>& scales) {
  std::vector<AxisResize> axes(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const double s = scales[d];
    if (!std::isfinite(s) || s <= 0) im.invalid(fmt::format("scale {} of axis {} is not positive", s, d));
    const double out = std::floor(double(in[d]) * s);
    if (out < 1) im.unsupported(fmt::format("axis {} of extent {} scaled by {} is empty (loom has no empty tensors)", d, in[d], s));
    if (out > double(INT32_MAX)) im.invalid(fmt::format("axis {} of extent {} scaled by {} is too large", d, in[d], s));
    axes[d] = {in[d], int64_t(out), s};
  }
  return axes;
}

/// Upsample (opsets 7 and 9) and Resize-10: asymmetric coordinates; nearest rounds down when
/// enlarging and up when shrinking (as onnxruntime does; ONNX left it open).
void legacy_resize(Importer& im, const std::vector<double>& scales, const ops::ResizeMode mode) {
  std::vector<int64_t> in = im.input_shape(0);
  if (in.empty()) im.invalid("X is a scalar");
  if (scales.size() != in.size())
    im.invalid(fmt::format("scales has {} values for an input of rank {}", scales.size(), in.size()));
  std::vector<AxisResize> axes = from_scales(im, in, scales);
  auto opt_of = [&](size_t d) {
    ops::ResizeOptions o;
    o.mode = mode;
    o.coordinate = ops::CoordinateMode::kAsymmetric;
    o.nearest = axes[d].scale < 1 ? ops::NearestRounding::kCeil : ops::NearestRounding::kFloor;
    return o;
  };
  im.set_output(0, resample_axes(im, im.input(0), axes, opt_of, std::nullopt));
}

void upsample(Importer& im) {
  const ops::ResizeMode mode = resize_mode(im, im.attr_str("mode", "nearest"));
  if (mode == ops::ResizeMode::kCubic) im.invalid("mode 'cubic' (Upsample takes nearest and linear)");
  std::vector<double> scales;
  if (im.has_attr("scales")) scales = im.attr_floats("scales");  // opset 7
  else scales = float_values(im.const_input(1, "scales"));
  for (double s : scales)
    if (s < 1) im.invalid(fmt::format("scale {} is below 1 (Upsample enlarges)", s));
  legacy_resize(im, scales, mode);
}

void resize(Importer& im) {
  const ops::ResizeMode mode = resize_mode(im, im.attr_str("mode", "nearest"));
  if (im.opset() < 11) {
    legacy_resize(im, float_values(im.const_input(1, "scales")), mode);
    return;
  }
  std::vector<int64_t> in = im.input_shape(0);
  if (in.empty()) im.invalid("X is a scalar");
  const size_t rank = in.size();
  ops::ResizeOptions opt;
  opt.mode = mode;
  opt.coordinate = coordinate_mode(im, im.attr_str("coordinate_transformation_mode", "half_pixel"));
  opt.nearest = nearest_rounding(im, im.attr_str("nearest_mode", "round_prefer_floor"));
  opt.cubic_a = im.attr_float("cubic_coeff_a", -0.75);
  opt.exclude_outside = im.attr_int("exclude_outside", 0) != 0;
  opt.antialias = im.attr_int("antialias", 0) != 0;
  if (opt.antialias && mode == ops::ResizeMode::kNearest) im.invalid("antialias applies to modes linear and cubic");
  const double extrapolation = im.attr_float("extrapolation_value", 0.0);
  const std::string policy = im.attr_str("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    im.invalid(fmt::format("keep_aspect_ratio_policy '{}' is not one of stretch, not_larger, not_smaller", policy));

  // The resized axes, in the order scales, sizes and roi list them.
  std::vector<int64_t> axes;
  if (im.has_attr("axes")) {
    std::vector<bool> seen(rank, false);
    for (int64_t a : im.attr_ints("axes")) {
      const int64_t d = normalize_axis(im, a, rank, "axis");
      if (seen[size_t(d)]) im.invalid(fmt::format("axis {} is listed twice in axes", d));
      seen[size_t(d)] = true;
      axes.push_back(d);
    }
  } else {
    for (size_t d = 0; d < rank; ++d) axes.push_back(int64_t(d));
  }
  const size_t n = axes.size();

  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (im.has_input(2)) scales = float_values(im.const_input(2, "scales"));
  if (im.has_input(3)) sizes = im.const_ints(3, "sizes");
  if (scales.empty() == sizes.empty()) im.invalid("exactly one of scales and sizes must be given (non-empty)");
  if (!scales.empty() && scales.size() != n)
    im.invalid(fmt::format("scales has {} values for {} resized axes", scales.size(), n));
  if (!sizes.empty() && sizes.size() != n)
    im.invalid(fmt::format("sizes has {} values for {} resized axes", sizes.size(), n));

  std::vector<AxisResize> all(rank);
  for (size_t d = 0; d < rank; ++d) all[d] = {in[d], in[d], 1.0};
  if (!scales.empty()) {
    std::vector<double> full(rank, 1.0);
    for (size_t k = 0; k < n; ++k) full[size_t(axes[k])] = scales[k];
    all = from_scales(im, in, full);
  } else {
    for (size_t k = 0; k < n; ++k)
      if (sizes[k] < 1) im.unsupported(fmt::format("size {} of axis {} (loom has no empty tensors)", sizes[k], axes[k]));
    if (policy == "stretch") {
      for (size_t k = 0; k < n; ++k) {
        AxisResize& a = all[size_t(axes[k])];
        a.out = sizes[k];
        a.scale = double(a.out) / double(a.in);
      }
    } else {
      double s = policy == "not_larger" ? INFINITY : 0.0;
      for (size_t k = 0; k < n; ++k) {
        const double r = double(sizes[k]) / double(in[size_t(axes[k])]);
        s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      for (size_t k = 0; k < n; ++k) {
        AxisResize& a = all[size_t(axes[k])];
        a.scale = s;
        a.out = int64_t(s * double(a.in) + 0.5);
        if (a.out < 1) im.unsupported(fmt::format("axis {} becomes empty (loom has no empty tensors)", axes[k]));
      }
    }
  }
  if (opt.coordinate == ops::CoordinateMode::kTfCropAndResize) {
    std::vector<double> roi;
    if (im.has_input(1)) roi = float_values(im.const_input(1, "roi"));
    if (roi.size() != 2 * n)
      im.invalid(fmt::format("roi has {} values; tf_crop_and_resize over {} axes needs {}", roi.size(), n, 2 * n));
    for (size_t k = 0; k < n; ++k) {
      all[size_t(axes[k])].roi_start = roi[k];
      all[size_t(axes[k])].roi_end = roi[n + k];
    }
  }
  auto opt_of = [&](size_t) { return opt; };
  im.set_output(0, resample_axes(im, im.input(0), all, opt_of, extrapolation));
}

}  // namespace

void add_resize_converters(std::map<std::string, Converter>& m) {
  m["Resize"] = resize;
  m["Upsample"] = upsample;
}

}  // namespace loom::graph_opt::onnx_frontend
