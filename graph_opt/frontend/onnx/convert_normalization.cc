// Converters of ONNX's normalizations beyond BatchNormalization and LayerNormalization:
// InstanceNormalization, GroupNormalization, LpNormalization, LRN, MeanVarianceNormalization,
// RMSNormalization.
#include <fmt/ranges.h>

#include <limits>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

const DataType kF32 = DataType::Float(32);

/// Input 0, floating point, and at least `min_rank`-D.
Value float_input(Importer& im, size_t min_rank) {
  Value x = im.input(0);
  if (!im.type(x).dtype.is_float()) im.unsupported("input type " + im.type(x).dtype.str());
  if (im.input_shape(0).size() < min_rank)
    im.invalid(fmt::format("input {} must have at least {} dims", shape_str(im.input_shape(0)), min_rank));
  return x;
}

/// `v` cast to `t` (nothing emitted when it is of that dtype).
Value cast_to(Importer& im, Value v, DataType t) {
  return im.type(v).dtype == t ? v : im.op("cast", {v}, {{"dtype", t.str()}});
}

/// The dtype the statistics are computed in: float32 for half-precision inputs.
DataType stash_dtype(DataType t) { return t.bits() < 32 ? kF32 : t; }

/// A per-channel parameter (input `k`) as a 1-D array of `c` values of dtype `t`; one of
/// `groups` values per group is repeated over the group's channels.
Value channel_param(Importer& im, int k, int64_t c, int64_t groups, DataType t, const char* what) {
  Value p = cast_to(im, im.input(k), t);
  const int64_t n = product(im.input_shape(k));
  if (n == c && im.input_shape(k).size() <= 1) return im.reshape(p, {c});
  if (n == groups && im.input_shape(k).size() <= 1) {
    runtime::NDArray idx = runtime::NDArray::empty({c}, DataType::Int(64));
    for (int64_t i = 0; i < c; ++i) idx.data<int64_t>()[i] = i / (c / groups);
    return im.op("take", {im.reshape(p, {groups}), im.constant(idx, "group_of_channel")}, {{"axis", int64_t(0)}});
  }
  im.invalid(fmt::format("{} {} must be 1-D of the {} channels{}", what, shape_str(im.input_shape(k)), c,
                         groups != c ? fmt::format(" or of the {} groups", groups) : ""));
}

void group_norm_of(Importer& im, int64_t groups, double eps) {
  Value x = float_input(im, 2);
  std::vector<int64_t> s = im.input_shape(0);
  const int64_t c = s[1];
  if (groups < 1 || c % groups)
    im.invalid(fmt::format("{} channels (input {}) do not split into {} groups", c, shape_str(s), groups));
  const DataType t = im.type(x).dtype, st = stash_dtype(t);
  Value scale = channel_param(im, 1, c, groups, st, "scale");
  Value bias = channel_param(im, 2, c, groups, st, "bias");
  Value y = im.op("group_norm", {cast_to(im, x, st), scale, bias}, {{"groups", groups}, {"epsilon", eps}});
  im.set_output(0, cast_to(im, y, t));
}

void instance_norm(Importer& im) {
  const double eps = im.attr_float("epsilon", 1e-5);
  if (im.input_shape(0).size() < 3)
    im.invalid(fmt::format("input {} has no spatial dims", shape_str(im.input_shape(0))));
  group_norm_of(im, im.input_shape(0)[1], eps);
}

/// GroupNormalization: scale and bias per group (version 18) or per channel (version 21).
void group_norm(Importer& im) {
  const double eps = im.attr_float("epsilon", 1e-5);
  const int64_t groups = im.attr_int("num_groups");
  const int64_t stash = im.attr_int("stash_type", 1);
  if (stash != 1) im.unsupported(fmt::format("stash_type {} (loom computes the statistics in float32 or wider)", stash));
  group_norm_of(im, groups, eps);
}

/// x / ||x||_p along one axis (p 1 or 2).
void lp_norm(Importer& im) {
  Value x = float_input(im, 1);
  std::vector<int64_t> s = im.input_shape(0);
  const int64_t axis = normalize_axis(im, im.attr_int("axis", -1), s.size(), "axis");
  const int64_t p = im.attr_int("p", 2);
  if (p != 1 && p != 2) im.invalid(fmt::format("p {} is not 1 or 2", p));
  te::ops::Attrs reduce{{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t(1)}};
  Value norm = p == 1 ? im.op("reduce_sum", {im.op("abs", {x})}, reduce)
                      : im.op("sqrt", {im.op("reduce_sum", {im.op("multiply", {x, x})}, reduce)});
  // A zero norm (x all zeros there) gives 0, as ONNX's 0/0 = 0: the norm is raised to the
  // smallest normal number of the dtype, which changes no other quotient.
  const DataType t = im.type(x).dtype;
  const double tiny = t.bits() == 16 ? 0x1p-14 : t.bits() == 32 ? double(std::numeric_limits<float>::min())
                                                                 : std::numeric_limits<double>::min();
  norm = im.op("maximum", {norm, im.scalar(tiny, t, s.size(), "smallest_normal")});
  im.set_output(0, im.op("divide", {x, norm}));
}

/// x / (bias + alpha/size * sum of x^2 over `size` neighbouring channels)^beta. The sum is an
/// average pool over the channels of x^2 (as a spatial dim) that counts the padding.
void lrn(Importer& im) {
  Value x = float_input(im, 3);
  std::vector<int64_t> s = im.input_shape(0);
  const double alpha = im.attr_float("alpha", 1e-4), beta = im.attr_float("beta", 0.75), bias = im.attr_float("bias", 1.0);
  const int64_t size = im.attr_int("size");
  if (size < 1 || size > INT32_MAX) im.invalid(fmt::format("size {} must be positive and below 2^31", size));
  const DataType t = im.type(x).dtype;
  const int64_t rest = product(std::vector<int64_t>(s.begin() + 2, s.end()));
  Value sq = im.reshape(im.op("multiply", {x, x}), {s[0], 1, s[1], rest});
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value mean = im.op("avg_pool_nd", {sq}, {{"pool_size", std::vector<int64_t>{size, 1}},
                                           {"padding", std::vector<int64_t>{before, 0, after, 0}},
                                           {"count_include_pad", int64_t(1)}});
  mean = im.reshape(mean, s);
  // alpha/size * sum = alpha * mean.
  Value base = im.op("add", {im.scalar(bias, t, s.size(), "bias"), im.op("multiply", {im.scalar(alpha, t, s.size(), "alpha"), mean})});
  im.set_output(0, im.op("divide", {x, im.op("pow", {base, im.scalar(beta, t, s.size(), "beta")})}));
}

/// (x - mean) / (std + 1e-9) over `axes` (default N, H, W).
void mean_variance_norm(Importer& im) {
  Value x = float_input(im, 1);
  std::vector<int64_t> s = im.input_shape(0);
  std::vector<int64_t> axes = im.attr_ints("axes", std::vector<int64_t>{0, 2, 3});
  for (int64_t& a : axes) a = normalize_axis(im, a, s.size(), "axes");
  const DataType t = im.type(x).dtype;
  te::ops::Attrs reduce{{"axes", axes}, {"keepdims", int64_t(1)}};
  Value centered = im.op("subtract", {x, im.op("reduce_mean", {x}, reduce)});
  Value var = im.op("reduce_mean", {im.op("multiply", {centered, centered})}, reduce);
  Value denom = im.op("add", {im.op("sqrt", {var}), im.scalar(1e-9, t, s.size(), "epsilon")});
  im.set_output(0, im.op("divide", {centered, denom}));
}

/// x / sqrt(mean(x^2 over axis..) + epsilon) * scale, the statistics in float32.
void rms_norm(Importer& im) {
  Value x = float_input(im, 1);
  std::vector<int64_t> s = im.input_shape(0);
  const int64_t axis = normalize_axis(im, im.attr_int("axis", -1), s.size(), "axis");
  const double eps = im.attr_float("epsilon", 1e-5);
  const int64_t stash = im.attr_int("stash_type", 1);
  if (stash != 1) im.unsupported(fmt::format("stash_type {} (loom computes the statistics in float32 or wider)", stash));
  const DataType t = im.type(x).dtype, st = stash_dtype(t);
  Value xs = cast_to(im, x, st);
  std::vector<int64_t> axes;
  for (size_t d = size_t(axis); d < s.size(); ++d) axes.push_back(int64_t(d));
  Value ms = im.op("reduce_mean", {im.op("multiply", {xs, xs})}, {{"axes", axes}, {"keepdims", int64_t(1)}});
  Value rms = im.op("sqrt", {im.op("add", {ms, im.scalar(eps, st, s.size(), "epsilon")})});
  Value y = im.op("divide", {xs, rms});
  // Scale broadcasts to the normalized shape (numpy rules against x).
  std::vector<int64_t> norm(s.begin() + axis, s.end()), ks = im.input_shape(1);
  if (ks.size() > norm.size())
    im.invalid(fmt::format("scale {} does not broadcast to the normalized dims {}", shape_str(ks), shape_str(norm)));
  for (size_t i = 0; i < ks.size(); ++i)
    if (ks[i] != 1 && ks[i] != norm[norm.size() - ks.size() + i])
      im.invalid(fmt::format("scale {} does not broadcast to the normalized dims {}", shape_str(ks), shape_str(norm)));
  std::vector<int64_t> full(s.size() - ks.size(), 1);
  full.insert(full.end(), ks.begin(), ks.end());
  Value scale = im.reshape(cast_to(im, im.input(1), st), full);
  y = im.op("multiply", {y, scale});
  im.set_output(0, cast_to(im, y, t));
}

}  // namespace

void add_normalization_converters(std::map<std::string, Converter>& m) {
  m["InstanceNormalization"] = instance_norm;
  m["GroupNormalization"] = group_norm;
  m["LpNormalization"] = lp_norm;
  m["LRN"] = lrn;
  m["MeanVarianceNormalization"] = mean_variance_norm;
  m["RMSNormalization"] = rms_norm;
}

}  // namespace loom::graph_opt::onnx_frontend
