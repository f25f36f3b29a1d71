// Converters of ONNX's windowed operators over 1 to 3 spatial dims: Conv, ConvTranspose,
// MaxPool (and its Indices), MaxUnpool, AveragePool, LpPool, the global pools, and Col2Im.
#include <fmt/ranges.h>

#include "loom/te/ops/spatial_nd.h"
#include "convert_window.h"

namespace loom::graph_opt::onnx_frontend {

std::vector<int64_t> spatial_input(Importer& im) {
  std::vector<int64_t> s = im.input_shape(0);
  if (s.size() < 3 || s.size() > 5)
    im.invalid(
        fmt::format("input X {} has rank {}; expected 3-D, 4-D or 5-D (N, C, spatial…)", shape_str(s), s.size()));
  return s;
}

namespace {

/// An ints attribute of `n` values (all `fill` when absent).
std::vector<int64_t> ints_of(Importer& im, const char* name, size_t n, int64_t fill) {
  std::vector<int64_t> v = im.attr_ints(name, std::vector<int64_t>(n, fill));
  if (v.size() != n) im.invalid(fmt::format("{} [{}] must have {} values", name, fmt::join(v, ","), n));
  for (int64_t e : v)
    if (e > INT32_MAX || e < -int64_t(INT32_MAX))
      im.invalid(fmt::format("{} [{}] must be below 2^31 in magnitude", name, fmt::join(v, ",")));
  return v;
}

}  // namespace

Window read_window(Importer& im, const std::vector<int64_t>& in, std::vector<int64_t> kernel, bool has_dilations) {
  const size_t r = in.size();
  Window w;
  w.kernel = std::move(kernel);
  w.strides = ints_of(im, "strides", r, 1);
  w.dilations = has_dilations ? ints_of(im, "dilations", r, 1) : std::vector<int64_t>(r, 1);
  w.pads = ints_of(im, "pads", 2 * r, 0);
  const std::string auto_pad = im.attr_str("auto_pad", "NOTSET");
  for (size_t d = 0; d < r; ++d) {
    if (w.strides[d] < 1 || w.dilations[d] < 1 || w.kernel[d] < 1 || w.kernel[d] > INT32_MAX)
      im.invalid(fmt::format("kernel [{}], strides [{}] and dilations [{}] must be positive and below 2^31",
                             fmt::join(w.kernel, ","), fmt::join(w.strides, ","), fmt::join(w.dilations, ",")));
    if (w.pads[d] < 0 || w.pads[d + r] < 0) im.invalid(fmt::format("negative pads [{}]", fmt::join(w.pads, ",")));
  }
  if (auto_pad == "VALID") {
    w.pads.assign(2 * r, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < r; ++d) {
      const int64_t out = (in[d] + w.strides[d] - 1) / w.strides[d];
      const int64_t span = (w.kernel[d] - 1) * w.dilations[d] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + span - in[d]);
      const int64_t small = total / 2, large = total - small;
      w.pads[d] = auto_pad == "SAME_UPPER" ? small : large;
      w.pads[d + r] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "NOTSET") {
    im.invalid("auto_pad '" + auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  }
  return w;
}

std::vector<int64_t> kernel_of(Importer& im, const std::vector<int64_t>& w) {
  std::vector<int64_t> spatial(w.begin() + 2, w.end());
  std::vector<int64_t> kernel = im.attr_ints("kernel_shape", spatial);
  if (kernel != spatial)
    im.invalid(fmt::format("kernel_shape [{}] does not match the weight {}", fmt::join(kernel, ","), shape_str(w)));
  return kernel;
}

Value emit_conv(Importer& im, Value data, Value weight, std::optional<Value> bias, const Window& w, int64_t groups) {
  const std::vector<int64_t> x = im.type(data).shape, k = im.type(weight).shape;
  const size_t r = x.size() - 2;
  std::vector<Value> in{data, weight};
  if (bias) in.push_back(*bias);
  if (r == 3)
    return im.op("conv3d", in, {{"strides", w.strides}, {"padding", w.pads}, {"dilations", w.dilations},
                                {"groups", groups}});
  if (r == 2)
    return im.op("conv2d", in, {{"strides", w.strides}, {"padding", std::vector<int64_t>{w.pads[0], w.pads[1], w.pads[2], w.pads[3]}},
                                {"dilation", w.dilations}, {"groups", groups}});
  in[0] = im.reshape(data, {x[0], x[1], 1, x[2]});
  in[1] = im.reshape(weight, {k[0], k[1], 1, k[2]});
  // The unit height takes the width's stride (its one output is the same) so that an unpadded
  // 1-D convolution meets the conv2d templates' one-stride form.
  Value y = im.op("conv2d", in, {{"strides", std::vector<int64_t>{w.strides[0], w.strides[0]}},
                                 {"padding", std::vector<int64_t>{0, w.pads[0], 0, w.pads[1]}},
                                 {"dilation", std::vector<int64_t>{1, w.dilations[0]}}, {"groups", groups}});
  std::vector<int64_t> ys = im.type(y).shape;
  return im.reshape(y, {ys[0], ys[1], ys[3]});
}

namespace {

void conv(Importer& im) {
  std::vector<int64_t> x = spatial_input(im);
  std::vector<int64_t> w = im.input_shape(1);
  if (w.size() != x.size())
    im.invalid(fmt::format("weight {} does not have the rank of the input {}", shape_str(w), shape_str(x)));
  std::vector<int64_t> kernel = kernel_of(im, w);
  const int64_t groups = im.attr_int("group", 1);
  if (groups < 1 || x[1] % groups || w[0] % groups || x[1] / groups != w[1])
    im.invalid(fmt::format("input {} and weight {} do not fit group {}", shape_str(x), shape_str(w), groups));
  Window win = read_window(im, std::vector<int64_t>(x.begin() + 2, x.end()), kernel);
  std::optional<Value> bias;
  if (im.has_input(2)) bias = im.input(2);
  im.set_output(0, emit_conv(im, im.input(0), im.input(1), bias, win, groups));
}

/// `v` restricted to indices [begin, begin + count) of `axis` (a take with constant indices).
Value slice(Importer& im, Value v, int64_t axis, int64_t begin, int64_t count, int64_t step = 1) {
  runtime::NDArray idx = runtime::NDArray::empty({count}, DataType::Int(64));
  for (int64_t i = 0; i < count; ++i) idx.data<int64_t>()[i] = begin + i * step;
  return im.op("take", {v, im.constant(idx, "indices")}, {{"axis", axis}});
}

/// ConvTranspose as a convolution: the input with s-1 zeros inserted between elements (a
/// reshape, a pad and a reshape), padded by d*(k-1) - pad (cropped where that is negative),
/// convolved at stride 1 with the kernel flipped and its in/out channels swapped per group.
void conv_transpose(Importer& im) {
  std::vector<int64_t> x = spatial_input(im);
  const size_t r = x.size() - 2;
  std::vector<int64_t> w = im.input_shape(1);
  if (w.size() != x.size())
    im.invalid(fmt::format("weight {} does not have the rank of the input {}", shape_str(w), shape_str(x)));
  const int64_t g = im.attr_int("group", 1);
  if (g < 1 || x[1] != w[0] || w[0] % g)
    im.invalid(fmt::format("input {} and weight {} do not fit group {}", shape_str(x), shape_str(w), g));
  std::vector<int64_t> kernel = kernel_of(im, w);
  std::vector<int64_t> s = ints_of(im, "strides", r, 1), d = ints_of(im, "dilations", r, 1);
  std::vector<int64_t> op = ints_of(im, "output_padding", r, 0), pads = ints_of(im, "pads", 2 * r, 0);
  std::vector<int64_t> out_shape = im.attr_ints("output_shape", std::vector<int64_t>{});
  const std::string auto_pad = im.attr_str("auto_pad", "NOTSET");
  if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != r)
    im.invalid(fmt::format("output_shape [{}] does not fit {} spatial dims", fmt::join(out_shape, ","), r));
  for (size_t a = 0; a < r; ++a) {
    if (s[a] < 1 || d[a] < 1) im.invalid("strides and dilations must be positive");
    if (op[a] < 0) im.invalid(fmt::format("negative output_padding [{}]", fmt::join(op, ",")));
    const int64_t full = s[a] * (x[a + 2] - 1) + op[a] + (kernel[a] - 1) * d[a] + 1;
    std::optional<int64_t> total;  // none: the pads attribute stands
    if (!out_shape.empty()) {
      if (out_shape[a] < 1 || out_shape[a] > INT32_MAX)
        im.invalid(fmt::format("output_shape [{}] must be positive and below 2^31", fmt::join(out_shape, ",")));
      total = full - out_shape[a];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      total = full - x[a + 2] * s[a];
    } else if (auto_pad == "VALID") {
      total = 0;
    } else if (auto_pad != "NOTSET") {
      im.invalid("auto_pad '" + auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
    }
    if (total) {
      // total < 0 (an output_shape past the input's reach) pads the end, as output_padding does.
      const int64_t t = *total, half = t >= 0 ? t / 2 : -((-t + 1) / 2);  // floor(t / 2)
      const bool upper = auto_pad == "SAME_UPPER";
      pads[a] = upper ? half : t - half;
      pads[a + r] = upper ? t - half : half;
    }
  }
  // The input with zeros inserted: [N,C,H,W] -> [N,C,H,1,W,1] -> padded to [N,C,H,sh,W,sw] ->
  // [N,C,H*sh,W*sw] (s-1 zeros after each element, so also after the last one); alike in 1-D and 3-D.
  Value data = im.input(0);
  if (product(s) > 1) {
    std::vector<int64_t> split{x[0], x[1]}, merged{x[0], x[1]};
    for (size_t a = 0; a < r; ++a) {
      split.insert(split.end(), {x[a + 2], 1});
      merged.push_back(x[a + 2] * s[a]);
    }
    const size_t n = split.size();
    std::vector<int64_t> pad_attr(2 * n, 0);  // the begins, then the ends
    for (size_t a = 0; a < r; ++a) pad_attr[n + 3 + 2 * a] = s[a] - 1;
    data = im.reshape(data, split);
    data = im.op("pad", {data}, {{"pads", pad_attr}});
    data = im.reshape(data, merged);
  }
  Window cw;
  cw.strides.assign(r, 1);
  cw.dilations = d;
  cw.pads.assign(2 * r, 0);
  for (size_t a = 0; a < r; ++a) {
    const int64_t begin = (kernel[a] - 1) * d[a] - pads[a];
    const int64_t end = (kernel[a] - 1) * d[a] - pads[a + r] + op[a] - (s[a] - 1);
    const int64_t len = x[a + 2] * s[a];
    if (begin < 0 || end < 0) {
      const int64_t from = std::max<int64_t>(0, -begin), to = len - std::max<int64_t>(0, -end);
      if (to <= from) im.invalid(fmt::format("pads [{}] crop away the whole output", fmt::join(pads, ",")));
      data = slice(im, data, int64_t(a) + 2, from, to - from);
    }
    cw.pads[a] = std::max<int64_t>(0, begin);
    cw.pads[a + r] = std::max<int64_t>(0, end);
  }
  // The kernel [C, M/g, k...] as a convolution's [M, C/g, k...], flipped.
  const int64_t cg = w[0] / g, mg = w[1];
  std::vector<int64_t> grouped{g, cg, mg}, perm{0, 2, 1}, conv_w{g * mg, cg};
  for (size_t a = 0; a < r; ++a) {
    grouped.push_back(w[a + 2]);
    perm.push_back(int64_t(a) + 3);
    conv_w.push_back(w[a + 2]);
  }
  Value k = im.reshape(im.input(1), grouped);
  if (cg > 1 && mg > 1) k = im.op("transpose", {k}, {{"axes", perm}});
  k = im.reshape(k, conv_w);
  for (size_t a = 0; a < r; ++a)
    if (w[a + 2] > 1) k = slice(im, k, int64_t(a) + 2, w[a + 2] - 1, w[a + 2], -1);
  std::optional<Value> bias;
  if (im.has_input(2)) bias = im.input(2);
  im.set_output(0, emit_conv(im, data, k, bias, cw, g));
}

/// MaxPool, AveragePool and LpPool.
enum class PoolKind { kMax, kAvg, kLp };

void pool(Importer& im, PoolKind kind) {
  std::vector<int64_t> x = spatial_input(im);
  const size_t r = x.size() - 2;
  std::vector<int64_t> in(x.begin() + 2, x.end());
  std::vector<int64_t> kernel = im.attr_ints("kernel_shape");
  if (kernel.size() != r)
    im.invalid(fmt::format("kernel_shape [{}] does not fit the {} spatial dims of {}", fmt::join(kernel, ","), r,
                           shape_str(x)));
  // The versions that have them: ceil_mode from 10 (LpPool 18), dilations from 10 (MaxPool),
  // 19 (AveragePool) and 18 (LpPool), storage_order from 8; an attribute left unread is an error.
  const int since_window = kind == PoolKind::kLp ? 18 : 10;
  const int since_dilations = kind == PoolKind::kMax ? 10 : kind == PoolKind::kAvg ? 19 : 18;
  const bool ceil_mode = im.opset() >= since_window && im.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = kind == PoolKind::kAvg && im.attr_int("count_include_pad", 0) != 0;
  // LpPool's p: a float in version 1, an int since.
  double p = 2.0;
  if (kind == PoolKind::kLp) p = im.opset() < 2 ? im.attr_float("p", 2.0) : double(im.attr_int("p", 2));
  if (kind == PoolKind::kLp && p <= 0) im.invalid(fmt::format("p {} must be positive", p));
  const int64_t storage_order = kind == PoolKind::kMax && im.opset() >= 8 ? im.attr_int("storage_order", 0) : 0;
  if (storage_order != 0 && storage_order != 1) im.invalid(fmt::format("storage_order {} is not 0 or 1", storage_order));
  Window w = read_window(im, in, kernel, im.opset() >= since_dilations);
  Value data = im.input(0);
  const DataType t = im.type(data).dtype;
  if (kind != PoolKind::kMax && !t.is_float()) im.unsupported("input type " + t.str());
  te::ops::WindowNd window{w.kernel, w.strides, w.dilations, w.pads, ceil_mode};
  std::vector<int64_t> out;
  try {
    out = te::ops::window_out_extents("pool", in, window);
  } catch (const Error& e) {
    im.invalid(e.what());
  }
  // 2-D windows without dilation, ceil excess or asymmetric padding take the 2-D operators
  // (which the layout passes know); the rest the N-D ones.
  bool plain = r == 2 && kind != PoolKind::kLp && w.dilations == std::vector<int64_t>{1, 1} &&
               w.pads[0] == w.pads[2] && w.pads[1] == w.pads[3] && w.pads[0] < kernel[0] && w.pads[1] < kernel[1];
  for (size_t d = 0; d < r && plain; ++d)
    plain = (out[d] - 1) * w.strides[d] + kernel[d] <= in[d] + w.pads[d] + w.pads[d + r];
  if (plain) {
    te::ops::Attrs attrs{{"pool_size", w.kernel}, {"strides", w.strides},
                         {"padding", std::vector<int64_t>{w.pads[0], w.pads[1]}}};
    if (kind == PoolKind::kAvg) attrs["count_include_pad"] = int64_t(include_pad);
    im.set_output(0, im.op(kind == PoolKind::kAvg ? "avg_pool2d" : "max_pool2d", {data}, attrs));
  } else {
    te::ops::Attrs attrs{{"pool_size", w.kernel}, {"strides", w.strides}, {"dilations", w.dilations},
                         {"padding", w.pads}, {"ceil_mode", int64_t(ceil_mode)}};
    if (kind == PoolKind::kAvg) attrs["count_include_pad"] = int64_t(include_pad);
    if (kind == PoolKind::kLp) attrs["p"] = p;
    const char* op = kind == PoolKind::kMax ? "max_pool_nd" : kind == PoolKind::kAvg ? "avg_pool_nd" : "lp_pool_nd";
    im.set_output(0, im.op(op, {data}, attrs));
  }
  if (kind == PoolKind::kMax && im.output_used(1))
    im.set_output(1, im.op("max_pool_nd_indices", {data},
                           {{"pool_size", w.kernel}, {"strides", w.strides}, {"dilations", w.dilations},
                            {"padding", w.pads}, {"ceil_mode", int64_t(ceil_mode)}, {"column_major", storage_order}}));
}

/// The axes 2.. of an input [N,C,spatial...] with at least one spatial dim.
std::vector<int64_t> spatial_axes(Importer& im) {
  std::vector<int64_t> x = im.input_shape(0);
  if (x.size() < 3) im.invalid(fmt::format("input {} has no spatial dims", shape_str(x)));
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x.size(); ++d) axes.push_back(int64_t(d));
  return axes;
}

void global_avg_pool(Importer& im) {
  std::vector<int64_t> axes = spatial_axes(im);
  if (!im.type(im.input(0)).dtype.is_float()) im.unsupported("input type " + im.type(im.input(0)).dtype.str());
  if (axes.size() == 2) return im.set_output(0, im.op("global_avg_pool2d", {im.input(0)}));
  im.set_output(0, im.op("reduce_mean", {im.input(0)}, {{"axes", axes}, {"keepdims", int64_t(1)}}));
}

void global_max_pool(Importer& im) {
  std::vector<int64_t> axes = spatial_axes(im);
  im.set_output(0, im.op("reduce_max", {im.input(0)}, {{"axes", axes}, {"keepdims", int64_t(1)}}));
}

/// (sum over the spatial dims of |x|^p)^(1/p).
void global_lp_pool(Importer& im) {
  std::vector<int64_t> axes = spatial_axes(im);
  const double p = im.opset() < 2 ? im.attr_float("p", 2.0) : double(im.attr_int("p", 2));
  if (p <= 0) im.invalid(fmt::format("p {} must be positive", p));
  Value x = im.input(0);
  const DataType t = im.type(x).dtype;
  if (!t.is_float()) im.unsupported("input type " + t.str());
  const size_t rank = im.type(x).shape.size();
  te::ops::Attrs reduce{{"axes", axes}, {"keepdims", int64_t(1)}};
  Value y;
  if (p == 2.0) {
    y = im.op("sqrt", {im.op("reduce_sum", {im.op("multiply", {x, x})}, reduce)});
  } else if (p == 1.0) {
    y = im.op("reduce_sum", {im.op("abs", {x})}, reduce);
  } else {
    Value powered = im.op("pow", {im.op("abs", {x}), im.scalar(p, t, rank, "p")});
    y = im.op("pow", {im.op("reduce_sum", {powered}, reduce), im.scalar(1.0 / p, t, rank, "inverse_p")});
  }
  im.set_output(0, y);
}

/// MaxUnpool: X and the int64 Indices of one shape; the output extent of each spatial dim is
/// (x - 1)·stride − pads + kernel, or the optional output_shape input (at least that).
void max_unpool(Importer& im) {
  std::vector<int64_t> x = spatial_input(im);
  const size_t r = x.size() - 2;
  if (im.input_shape(1) != x)
    im.invalid(fmt::format("indices {} must have the shape of X {}", shape_str(im.input_shape(1)), shape_str(x)));
  if (im.input_dtype(1) != DataType::Int(64)) im.invalid("indices must be int64, got " + im.input_dtype(1).str());
  std::vector<int64_t> kernel = im.attr_ints("kernel_shape");
  if (kernel.size() != r)
    im.invalid(fmt::format("kernel_shape [{}] does not fit the {} spatial dims of {}", fmt::join(kernel, ","), r,
                           shape_str(x)));
  std::vector<int64_t> strides = ints_of(im, "strides", r, 1), pads = ints_of(im, "pads", 2 * r, 0);
  std::vector<int64_t> scatter{x[0], x[1]};
  for (size_t d = 0; d < r; ++d) {
    if (kernel[d] < 1 || strides[d] < 1 || pads[d] < 0 || pads[d + r] < 0)
      im.invalid(fmt::format("kernel_shape [{}] and strides [{}] must be positive, pads [{}] non-negative",
                             fmt::join(kernel, ","), fmt::join(strides, ","), fmt::join(pads, ",")));
    const int64_t e = (x[d + 2] - 1) * strides[d] - pads[d] - pads[d + r] + kernel[d];
    if (e < 1 || e > INT32_MAX) im.invalid(fmt::format("the unpooled extent of spatial dim {} is {}", d, e));
    scatter.push_back(e);
  }
  std::vector<int64_t> out = scatter;
  if (im.has_input(2)) {
    out = im.const_ints(2, "output_shape");
    bool fits = out.size() == scatter.size();
    for (size_t d = 0; d < out.size() && fits; ++d) fits = d < 2 ? out[d] == scatter[d] : out[d] >= scatter[d];
    if (!fits)
      im.invalid(fmt::format("output_shape {} must be [{}, {}, ...] holding the unpooled {}", shape_str(out), x[0], x[1],
                             shape_str(scatter)));
  }
  im.set_output(0, im.op("max_unpool", {im.input(0), im.input(1)}, {{"scatter_shape", scatter}, {"output_shape", out}}));
}

/// Col2Im: image_shape and block_shape are constant inputs.
void col2im(Importer& im) {
  std::vector<int64_t> x = im.input_shape(0);
  if (x.size() != 3) im.invalid(fmt::format("input {} is not 3-D [N, C*prod(block_shape), L]", shape_str(x)));
  std::vector<int64_t> image = im.const_ints(1, "image_shape"), block = im.const_ints(2, "block_shape");
  if (image.empty() || block.size() != image.size())
    im.invalid(fmt::format("image_shape [{}] and block_shape [{}] must have one entry per spatial dim",
                           fmt::join(image, ","), fmt::join(block, ",")));
  for (size_t d = 0; d < image.size(); ++d)
    if (image[d] < 1 || block[d] < 1 || image[d] > INT32_MAX || block[d] > INT32_MAX)
      im.invalid(fmt::format("image_shape [{}] and block_shape [{}] must be positive and below 2^31",
                             fmt::join(image, ","), fmt::join(block, ",")));
  const size_t r = image.size();
  te::ops::Attrs attrs{{"image_shape", image}, {"block_shape", block}, {"strides", ints_of(im, "strides", r, 1)},
                       {"dilations", ints_of(im, "dilations", r, 1)}, {"padding", ints_of(im, "pads", 2 * r, 0)}};
  im.set_output(0, im.op("col2im", {im.input(0)}, attrs));
}

}  // namespace

void add_window_converters(std::map<std::string, Converter>& m) {
  m["Conv"] = conv;
  m["ConvTranspose"] = conv_transpose;
  m["MaxPool"] = [](Importer& im) { pool(im, PoolKind::kMax); };
  m["AveragePool"] = [](Importer& im) { pool(im, PoolKind::kAvg); };
  m["LpPool"] = [](Importer& im) { pool(im, PoolKind::kLp); };
  m["GlobalAveragePool"] = global_avg_pool;
  m["GlobalMaxPool"] = global_max_pool;
  m["GlobalLpPool"] = global_lp_pool;
  m["Col2Im"] = col2im;
  m["MaxUnpool"] = max_unpool;
}

}  // namespace loom::graph_opt::onnx_frontend
