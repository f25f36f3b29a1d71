// Converters of ONNX's quantization operators: QuantizeLinear and DequantizeLinear (per tensor,
// per axis and blocked; the registry's quantize and dequantize), DynamicQuantizeLinear,
// MatMulInteger and QLinearMatMul (integer matmuls accumulating exactly in int32), ConvInteger
// and QLinearConv, following ONNX's reference arithmetic. A QuantizeLinear of a convolution of
// dequantized data and weights (the QDQ form quantizers write), like QLinearConv, becomes the
// integer convolution that integer kernels compute: int32 accumulation of the
// zero-point-centered values plus the int32 bias, requantized by x_scale·w_scale / y_scale.
// The accumulation is conv2d_int8 (uint8 × int8, the int8 template's kernel) where the types
// and channel counts fit, else a float32 convolution where that is exact, else int32; a
// QuantizeLinear of a Gemm/MatMul of dequantized operands likewise (exact float32).
#include <algorithm>
#include <cmath>
#include <optional>

#include "loom/te/ops/qnn.h"
#include "convert_window.h"
#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// The range of an integer quantized type; unsupported for any other.
std::pair<double, double> quant_range(Importer& im, DataType t) {
  if (t == DataType::UInt(8)) return {0, 255};
  if (t == DataType::Int(8)) return {-128, 127};
  if (t == DataType::UInt(16)) return {0, 65535};
  if (t == DataType::Int(16)) return {-32768, 32767};
  im.unsupported(fmt::format("quantized type {} (loom quantizes to int8, uint8, int16 and uint16)", t.str()));
}

/// A scale or zero point `p` shaped to broadcast against x (shape `xs`): a scalar or one
/// element as is, a 1-D array along `axis`, or with `block_size` an array of x's rank whose
/// dim `axis` holds one value per block (repeated over the block).
Value along_axis(Importer& im, Value p, const std::vector<int64_t>& ps, const std::vector<int64_t>& xs, int64_t axis,
                 int64_t block_size, const char* what) {
  const size_t rank = std::max<size_t>(xs.size(), 1);
  if (product(ps) == 1) return im.reshape(p, std::vector<int64_t>(rank, 1));
  if (xs.empty()) im.invalid(fmt::format("{} has {} elements for a scalar input", what, product(ps)));
  const int64_t a = normalize_axis(im, axis, xs.size(), "axis");
  if (block_size <= 0) {
    if (ps.size() != 1 || ps[0] != xs[size_t(a)])
      im.invalid(fmt::format("{} {} is neither one value nor one per element of axis {} (extent {})", what,
                             shape_str(ps), a, xs[size_t(a)]));
    std::vector<int64_t> shape(xs.size(), 1);
    shape[size_t(a)] = ps[0];
    return im.reshape(p, shape);
  }
  std::vector<int64_t> want = xs;
  want[size_t(a)] = (xs[size_t(a)] + block_size - 1) / block_size;
  if (ps != want)
    im.invalid(fmt::format("{} {} does not hold one value per block of {} along axis {} of {} (expected {})", what,
                           shape_str(ps), block_size, a, shape_str(xs), shape_str(want)));
  runtime::NDArray idx = runtime::NDArray::empty({xs[size_t(a)]}, DataType::Int(64));
  for (int64_t i = 0; i < xs[size_t(a)]; ++i) idx.data<int64_t>()[i] = i / block_size;
  return im.op("take", {p, im.constant(idx, "block_index")}, {{"axis", a}});
}

Value cast_to(Importer& im, Value v, DataType t) {
  return im.type(v).dtype == t ? v : im.op("cast", {v}, {{"dtype", t.str()}});
}

/// clip(round(v) + zp, range) in v's float type, cast to `out`.
Value saturate(Importer& im, Value rounded_plus_zp, DataType out) {
  auto [lo, hi] = quant_range(im, out);
  Value c = im.op("clip", {rounded_plus_zp}, {{"min", lo}, {"max", hi}});
  return cast_to(im, c, out);
}

/// The float32 array of a constant value, or null.
const runtime::NDArray* constant_f32(Importer& im, Value v) {
  const runtime::NDArray* a = im.constant_of(v);
  return a && a->dtype() == DataType::Float(32) ? a : nullptr;
}

/// The padding of a conv2d as {top, left, bottom, right}.
std::vector<int64_t> padding4(const te::ops::Attrs& a) {
  std::vector<int64_t> p = te::ops::attr_ints(a, "padding");
  if (p.size() == 2) p = {p[0], p[1], p[0], p[1]};
  return p;
}

/// conv2d(x - x_zp, w) + bias as conv2d_int8 (uint8 data, int8 weights, int32 accumulation:
/// the int8 template's kernel once alter_layout blocks it) with x's zero point folded into
/// the bias, bias - x_zp · sum(w) per output channel, and the padding, when x_zp is not 0,
/// an explicit pad with x_zp: when x is uint8 with one constant zero point, w a constant int8
/// array with zero points 0, the conv NCHW with groups 1 and channel counts that are
/// multiples of the template's 16-channel block. Nullopt otherwise. With `pad_channels`,
/// channel counts up to a third short of a multiple (24 of 32, 1000 of 1008) take the
/// template too: the weight gets zero input and output channels, the data the missing input
/// channels (with x_zp, multiplied by those zeros), and the accumulator then has the padded
/// output channels (their sums 0: requantize_and_cut drops them).
std::optional<Value> u8s8_conv(Importer& im, const te::ops::Attrs& conv_attrs, const Importer::Dequantized& x,
                               const Importer::Dequantized& w, std::optional<Value> bias, bool pad_channels = false) {
  const runtime::NDArray *xz = im.constant_of(x.zero_point), *wz = im.constant_of(w.zero_point),
                         *wq = im.constant_of(w.q);
  if (im.type(x.q).dtype != DataType::UInt(8) || im.type(w.q).dtype != DataType::Int(8) || !xz || !wz || !wq ||
      xz->numel() != 1 || te::ops::attr_str(conv_attrs, "layout") != "NCHW" ||
      te::ops::attr_int(conv_attrs, "groups") != 1 || wq->shape().size() != 4)
    return std::nullopt;
  const int64_t block = te::ops::kInt8Block;
  const int64_t channels = wq->shape()[0], in_channels = wq->shape()[1];
  const int64_t K = (channels + block - 1) / block * block, C = (in_channels + block - 1) / block * block;
  const bool whole = K == channels && C == in_channels;
  if (!whole && (!pad_channels || 3 * K > 4 * channels || 3 * C > 4 * in_channels)) return std::nullopt;
  for (int64_t i = 0; i < wz->numel(); ++i)
    if (wz->get(i) != 0) return std::nullopt;
  const runtime::NDArray* b = bias ? im.constant_of(*bias) : nullptr;
  if (bias && !b) return std::nullopt;
  const int64_t x_zp = int64_t(xz->get(0));
  const int64_t taps = wq->shape()[2] * wq->shape()[3], per = in_channels * taps;
  runtime::NDArray folded = runtime::NDArray::empty({K}, DataType::Int(32));
  runtime::NDArray weight = runtime::NDArray::empty({K, C, wq->shape()[2], wq->shape()[3]}, DataType::Int(8));
  std::fill_n(weight.data<int8_t>(), K * C * taps, int8_t(0));
  for (int64_t k = 0; k < K; ++k) {
    int64_t sum = 0;
    for (int64_t i = 0; k < channels && i < per; ++i) {
      const int8_t v = wq->data<int8_t>()[k * per + i];
      sum += int64_t(v);
      weight.data<int8_t>()[k * C * taps + i] = v;  // input channel i / taps of C, tap i % taps
    }
    const int64_t v = k >= channels ? 0 : (b ? int64_t(b->get(b->numel() == 1 ? 0 : k)) : 0) - x_zp * sum;
    if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
    folded.data<int32_t>()[k] = int32_t(v);
  }
  te::ops::Attrs attrs = conv_attrs;
  attrs.erase("layout");
  attrs.erase("groups");
  Value data = x.q;
  if (C != in_channels) {
    // x cut from a padded int8 kernel's output (requantize_and_cut): its C channels as they
    // are, the cut ones multiplied by the zero weights whatever they hold.
    const Node& cut = im.graph().nodes.at(size_t(data.node));
    if (cut.is_op() && cut.op == "strided_slice" && im.type(cut.inputs[0]).shape.size() == 4 &&
        im.type(cut.inputs[0]).shape[1] == C && te::ops::attr_ints(cut.attrs, "strides").empty() &&
        te::ops::attr_ints(cut.attrs, "begin") == std::vector<int64_t>(4, 0)) {
      std::vector<int64_t> padded = im.type(cut.inputs[0]).shape;
      padded[1] = in_channels;
      if (padded == im.type(data).shape) data = cut.inputs[0];
    }
  }
  const std::vector<int64_t> p = padding4(conv_attrs);
  const bool spatial = x_zp != 0 && (p[0] || p[1] || p[2] || p[3]);
  const int64_t missing = C - im.type(data).shape[1];
  if (spatial || missing) {
    // Centered, the padding is 0; uncentered it is x_zp.
    std::vector<int64_t> pads{0, 0, 0, 0, 0, missing, 0, 0};
    if (spatial) {
      pads = {0, 0, p[0], p[1], 0, missing, p[2], p[3]};
      attrs["padding"] = std::vector<int64_t>{0, 0};
    }
    data = im.op("pad", {data}, {{"pads", pads}, {"pad_value", double(x_zp)}});
  }
  std::vector<Value> inputs{data, whole ? w.q : im.constant(weight, "weight")};
  if (bias || x_zp != 0) inputs.push_back(im.constant(folded, "bias"));
  return im.op("conv2d_int8", inputs, attrs);
}

/// requantize(acc, multipliers, y_zp) to `out` where `acc` may hold more output channels (dim 1)
/// than the `mult.numel()` ones (u8s8_conv's padded ones): those get multiplier 0 and are cut
/// off after the requantization, which so stays the int8 kernel's epilogue.
Value requantize_and_cut(Importer& im, Value acc, const runtime::NDArray& mult, Value y_zp, DataType out) {
  const std::vector<int64_t> shape = im.type(acc).shape;
  const int64_t channels = mult.numel(), padded = shape.at(1);
  runtime::NDArray m = runtime::NDArray::empty({1, padded, 1, 1}, DataType::Float(32));
  for (int64_t c = 0; c < padded; ++c) m.data<float>()[c] = c < channels ? mult.data<float>()[c] : 0.0f;
  Value y = im.op("requantize", {acc, im.constant(m, "multiplier"), im.reshape(y_zp, {1, 1, 1, 1})},
                  {{"dtype", out.str()}});
  if (padded == channels) return y;
  std::vector<int64_t> end = shape;
  end[1] = channels;
  return im.op("strided_slice", {y}, {{"begin", std::vector<int64_t>(shape.size(), 0)}, {"end", end},
                                      {"strides", std::vector<int64_t>{}}});
}

/// conv2d(x - x_zp, w - w_zp) + bias computed in float32 and cast to int32, exact because no
/// partial sum can exceed 2^24 in magnitude: max|x - x_zp| · sum|w - w_zp| over one output
/// channel's taps stays below it (a first layer of 3 channels, a depthwise 3x3, a narrow 1x1).
/// The convolution then runs on the float32 templates (conv2d_nchwc, depthwise_conv2d_nchwc)
/// with the bias and the requantization as its epilogue. When x's zero point is one constant,
/// w and its zero points constants, and the bound holds; nullopt otherwise.
std::optional<Value> float_exact_conv(Importer& im, const te::ops::Attrs& conv_attrs, const Importer::Dequantized& x,
                                      const Importer::Dequantized& w, std::optional<Value> bias) {
  const runtime::NDArray *xz = im.constant_of(x.zero_point), *wz = im.constant_of(w.zero_point),
                         *wq = im.constant_of(w.q);
  if (!xz || !wz || !wq || xz->numel() != 1 || wq->shape().size() != 4) return std::nullopt;
  const DataType xt = im.type(x.q).dtype;
  if (xt != DataType::UInt(8) && xt != DataType::Int(8)) return std::nullopt;
  const double x_zp = xz->get(0), x_lo = xt == DataType::UInt(8) ? 0 : -128, x_hi = x_lo + 255;
  const double x_max = std::max(std::abs(x_hi - x_zp), std::abs(x_lo - x_zp));
  const int64_t channels = wq->shape()[0], per = wq->numel() / channels;
  if (wz->numel() != 1 && wz->numel() != channels) return std::nullopt;
  runtime::NDArray centered = runtime::NDArray::empty(wq->shape(), DataType::Float(32));
  for (int64_t k = 0; k < channels; ++k) {
    const double zp = wz->get(wz->numel() == 1 ? 0 : k);
    double total = 0;
    for (int64_t i = 0; i < per; ++i) {
      const double v = wq->get(k * per + i) - zp;
      centered.data<float>()[k * per + i] = float(v);
      total += std::abs(v);
    }
    if (total * x_max >= double(1 << 24)) return std::nullopt;
  }
  const size_t rank = im.type(x.q).shape.size();
  Value data = im.op("subtract", {cast_to(im, x.q, DataType::Float(32)),
                                  im.scalar(x_zp, DataType::Float(32), rank, "x_zero_point")});
  Value acc = cast_to(im, im.op("conv2d", {data, im.constant(centered, "weight")}, conv_attrs), DataType::Int(32));
  if (bias) acc = im.op("add", {acc, im.reshape(*bias, {1, channels, 1, 1})});
  return acc;
}

/// The int32 accumulator conv2d(x - x_zp, w - w_zp) + bias (x's and w's zero points shaped to
/// broadcast against them): u8s8_conv, else float_exact_conv, else conv2d in int32.
Value integer_conv_acc(Importer& im, const te::ops::Attrs& conv_attrs, const Importer::Dequantized& x,
                       const Importer::Dequantized& w, std::optional<Value> bias) {
  if (std::optional<Value> acc = u8s8_conv(im, conv_attrs, x, w, bias)) return *acc;
  if (std::optional<Value> acc = float_exact_conv(im, conv_attrs, x, w, bias)) return *acc;
  const DataType i32 = DataType::Int(32);
  auto centered = [&](const Importer::Dequantized& d) {
    return im.op("subtract", {cast_to(im, d.q, i32), cast_to(im, d.zero_point, i32)});
  };
  std::vector<Value> inputs{centered(x), centered(w)};
  if (bias) inputs.push_back(*bias);
  return im.op("conv2d", inputs, conv_attrs);
}

/// quantize(conv2d(dequantize(xq), dequantize(wq)[, dequantize(bias_q)]), y_scale, y_zero_point)
/// as requantize(conv2d(xq - x_zp, wq - w_zp[, bias_q]) in int32, x_scale·w_scale / y_scale):
/// when x's scale and zero point are one value each, w's one per output channel (or one), the
/// bias (if any) int32 with zero point 0 and scale x_scale·w_scale, all constants, and y's scale
/// and zero point one value each. Null (the float path) otherwise.
std::optional<Value> integer_conv(Importer& im, Value y, Value y_scale, Value y_zp, DataType out) {
  const Node conv = im.graph().nodes.at(size_t(y.node));  // a copy: emitting below grows the graph
  if (!conv.is_op() || conv.op != "conv2d" || conv.inputs.size() < 2) return std::nullopt;
  const Importer::Dequantized* x = im.dequantized(conv.inputs[0]);
  const Importer::Dequantized* w = im.dequantized(conv.inputs[1]);
  if (!x || !w) return std::nullopt;
  const runtime::NDArray *xs = constant_f32(im, x->scale), *ws = constant_f32(im, w->scale), *ys = constant_f32(im, y_scale);
  if (!xs || !ws || !ys || xs->numel() != 1 || ys->numel() != 1 || !im.constant_of(x->zero_point) ||
      !im.constant_of(w->zero_point) || !im.constant_of(y_zp) || product(im.type(y_zp).shape) != 1)
    return std::nullopt;
  const int64_t channels = im.type(conv.inputs[1]).shape.at(0);
  const std::vector<int64_t> wss = im.type(w->scale).shape;  // [C,1,1,1] or [1,1,1,1]
  if (ws->numel() != 1 && (ws->numel() != channels || wss.empty() || wss[0] != channels)) return std::nullopt;
  if (product(im.type(w->zero_point).shape) != 1 && im.type(w->zero_point).shape != wss) return std::nullopt;
  // The multiplier per output channel, in float32 as integer kernels compute it: (xs · ws) / ys.
  runtime::NDArray mult = runtime::NDArray::empty({1, channels, 1, 1}, DataType::Float(32));
  runtime::NDArray bias_scale = runtime::NDArray::empty({channels}, DataType::Float(32));
  const float x_s = xs->data<float>()[0], y_s = ys->data<float>()[0];
  for (int64_t c = 0; c < channels; ++c) {
    const float w_s = ws->data<float>()[ws->numel() == 1 ? 0 : c];
    bias_scale.data<float>()[c] = x_s * w_s;
    mult.data<float>()[c] = (x_s * w_s) / y_s;
  }
  const DataType i32 = DataType::Int(32);
  std::optional<Value> bias;
  if (conv.inputs.size() > 2) {
    const Importer::Dequantized* b = im.dequantized(conv.inputs[2]);
    if (!b || im.type(b->q).dtype != i32) return std::nullopt;
    const runtime::NDArray *bs = constant_f32(im, b->scale), *bz = im.constant_of(b->zero_point);
    if (!bs || !bz || (bs->numel() != channels && bs->numel() != 1)) return std::nullopt;
    for (int64_t c = 0; c < channels; ++c)
      if (bs->data<float>()[bs->numel() == 1 ? 0 : c] != bias_scale.data<float>()[c] || bz->get(0) != 0 ||
          (bz->numel() > 1 && bz->get(c) != 0))
        return std::nullopt;
    bias = b->q;
  }
  if (std::optional<Value> acc = u8s8_conv(im, conv.attrs, *x, *w, bias, true))
    return requantize_and_cut(im, *acc, mult, y_zp, out);
  Value acc = integer_conv_acc(im, conv.attrs, *x, *w, bias);
  return im.op("requantize", {acc, im.constant(mult, "multiplier"), im.reshape(y_zp, {1, 1, 1, 1})},
               {{"dtype", out.str()}});
}

/// requantize(xq·(wq - 0) + bias) of integer_matmul on the int8 template when x is uint8 and w
/// int8 with zero points 0: a 1×1 conv2d_int8 (u8s8_conv, its channels padded) of the M rows
/// as a batch ([M, K, 1, 1]) by the weight [N, K, 1, 1], requantized and back to [M, N].
/// `wq` holds w as [K, N] or, with `tb`, [N, K]; `mult` [1, N] the multipliers, `bias` int32 [N].
std::optional<Value> u8s8_matmul(Importer& im, const Importer::Dequantized& x, const Importer::Dequantized& w,
                                 const runtime::NDArray& wq, bool tb, std::optional<Value> bias,
                                 const runtime::NDArray& mult, Value y_zp, DataType out) {
  const std::vector<int64_t> xs = im.type(x.q).shape, wsh = wq.shape();
  const int64_t M = xs[0], K = xs[1], N = tb ? wsh[0] : wsh[1];
  if (wq.dtype() != DataType::Int(8)) return std::nullopt;
  runtime::NDArray weight = runtime::NDArray::empty({N, K, 1, 1}, DataType::Int(8));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) weight.data<int8_t>()[n * K + k] = wq.data<int8_t>()[tb ? n * K + k : k * N + n];
  Importer::Dequantized xd = x, wd = w;
  xd.q = im.reshape(x.q, {M, K, 1, 1});
  wd.q = im.constant(weight, "weight");
  const te::ops::Attrs attrs{{"strides", std::vector<int64_t>{1, 1}}, {"padding", std::vector<int64_t>{0, 0}},
                             {"dilation", std::vector<int64_t>{1, 1}}, {"groups", int64_t(1)},
                             {"layout", std::string("NCHW")}};
  std::optional<Value> acc = u8s8_conv(im, attrs, xd, wd, bias, true);
  if (!acc) return std::nullopt;
  return im.reshape(requantize_and_cut(im, *acc, mult, y_zp, out), {M, N});
}

/// quantize(matmul(dequantize(xq), dequantize(wq))[ + dequantize(bias_q)], y_scale, y_zp), the
/// QDQ form of a Gemm or a 2-D MatMul by constant weights, as requantize(int32(matmul(xq - x_zp,
/// wq - w_zp) in float32) + bias_q, x_scale·w_scale / y_scale): exact, as float_exact_conv's
/// sums, when max|x - x_zp| · sum|w - w_zp| over one output column stays below 2^24; with x's
/// scale and zero point, y's, and the bias's zero point one constant each, w's scale one or one
/// per output column, the bias int32 of scale x_scale·w_scale. Nullopt (the float path) otherwise.
std::optional<Value> integer_matmul(Importer& im, Value y, Value y_scale, Value y_zp, DataType out) {
  Node mm = im.graph().nodes.at(size_t(y.node));  // copies: emitting below grows the graph
  std::optional<Value> bias_value;
  if (mm.is_op() && mm.op == "add" && mm.inputs.size() == 2) {
    bias_value = mm.inputs[1];
    mm = im.graph().nodes.at(size_t(mm.inputs[0].node));
  }
  if (!mm.is_op() || mm.op != "matmul" || mm.inputs.size() != 2 || te::ops::attr_int(mm.attrs, "transpose_a") != 0)
    return std::nullopt;
  const bool tb = te::ops::attr_int(mm.attrs, "transpose_b") != 0;
  const Importer::Dequantized* x = im.dequantized(mm.inputs[0]);
  const Importer::Dequantized* w = im.dequantized(mm.inputs[1]);
  if (!x || !w || im.type(mm.inputs[0]).shape.size() != 2 || im.type(mm.inputs[1]).shape.size() != 2) return std::nullopt;
  const runtime::NDArray *xs = constant_f32(im, x->scale), *ws = constant_f32(im, w->scale), *ys = constant_f32(im, y_scale);
  const runtime::NDArray *xz = im.constant_of(x->zero_point), *wz = im.constant_of(w->zero_point), *wq = im.constant_of(w->q);
  if (!xs || !ws || !ys || !xz || !wz || !wq || xs->numel() != 1 || ys->numel() != 1 || xz->numel() != 1 ||
      !im.constant_of(y_zp) || product(im.type(y_zp).shape) != 1)
    return std::nullopt;
  const DataType xt = im.type(x->q).dtype;
  if (xt != DataType::UInt(8) && xt != DataType::Int(8)) return std::nullopt;
  const std::vector<int64_t> wsh = wq->shape();
  const int64_t N = tb ? wsh[0] : wsh[1], K = tb ? wsh[1] : wsh[0];
  // Per output column: along w's dim 0 when transposed, dim 1 otherwise.
  auto per_column = [&](const runtime::NDArray* a, Value v) {
    if (a->numel() == 1) return true;
    const std::vector<int64_t> sh = im.type(v).shape;
    return a->numel() == N && sh.size() == 2 && sh[tb ? 0 : 1] == N;
  };
  if (!per_column(ws, w->scale) || !per_column(wz, w->zero_point)) return std::nullopt;
  const float x_s = xs->data<float>()[0], y_s = ys->data<float>()[0];
  const double x_zp = xz->get(0), x_lo = xt == DataType::UInt(8) ? 0 : -128;
  const double x_max = std::max(std::abs(x_lo + 255 - x_zp), std::abs(x_lo - x_zp));
  runtime::NDArray centered = runtime::NDArray::empty(wsh, DataType::Float(32));
  runtime::NDArray mult = runtime::NDArray::empty({1, N}, DataType::Float(32));
  std::vector<float> bias_scale(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    const double zp = wz->get(wz->numel() == 1 ? 0 : n);
    double total = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t i = tb ? n * K + k : k * N + n;
      const double v = wq->get(i) - zp;
      centered.data<float>()[i] = float(v);
      total += std::abs(v);
    }
    if (total * x_max >= double(1 << 24)) return std::nullopt;
    const float w_s = ws->data<float>()[ws->numel() == 1 ? 0 : n];
    bias_scale[size_t(n)] = x_s * w_s;
    mult.data<float>()[n] = (x_s * w_s) / y_s;
  }
  std::optional<Value> bias, bias_q;
  if (bias_value) {
    const Importer::Dequantized* b = im.dequantized(*bias_value);
    if (!b || im.type(b->q).dtype != DataType::Int(32) || product(im.type(b->q).shape) != N) return std::nullopt;
    const runtime::NDArray *bs = constant_f32(im, b->scale), *bz = im.constant_of(b->zero_point);
    if (!bs || !bz || (bs->numel() != N && bs->numel() != 1)) return std::nullopt;
    for (int64_t n = 0; n < N; ++n)
      if (bs->data<float>()[bs->numel() == 1 ? 0 : n] != bias_scale[size_t(n)] || bz->get(bz->numel() == 1 ? 0 : n) != 0)
        return std::nullopt;
    bias = im.reshape(b->q, {1, N});
    bias_q = b->q;
  }
  if (std::optional<Value> r = u8s8_matmul(im, *x, *w, *wq, tb, bias_q, mult, y_zp, out)) return *r;
  Value data = im.op("subtract", {cast_to(im, x->q, DataType::Float(32)), im.scalar(x_zp, DataType::Float(32), 2, "x_zero_point")});
  Value acc = cast_to(im, im.op("matmul", {data, im.constant(centered, "weight")}, mm.attrs), DataType::Int(32));
  if (bias) acc = im.op("add", {acc, *bias});
  return im.op("requantize", {acc, im.constant(mult, "multiplier"), im.reshape(y_zp, {1, 1})}, {{"dtype", out.str()}});
}

void quantize_linear(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  Value x = im.input(0), scale = im.input(1);
  const DataType xt = im.input_dtype(0);
  if (!xt.is_float()) im.invalid(fmt::format("x must be floating point, got {}", xt.str()));
  const int64_t axis = im.opset() >= 13 ? im.attr_int("axis", 1) : 1;
  const int64_t block = im.opset() >= 21 ? im.attr_int("block_size", 0) : 0;
  if (im.opset() >= 19) im.ignore_attr("saturate");  // float8 outputs only
  DataType out = DataType::UInt(8);
  if (im.opset() >= 21 && im.has_attr("output_dtype") && im.attr_int("output_dtype") != 0)
    out = to_dtype(int(im.attr_int("output_dtype")), im.where() + ": output_dtype");
  if (im.has_input(2)) {
    const DataType zt = im.input_dtype(2);
    if (im.opset() >= 21 && im.has_attr("output_dtype") && im.attr_int("output_dtype") != 0 && zt != out)
      im.invalid(fmt::format("output_dtype {} but the zero point is {}", out.str(), zt.str()));
    out = zt;
  }
  quant_range(im, out);
  DataType work = xt;
  if (im.opset() >= 23 && im.has_attr("precision") && im.attr_int("precision") != 0) {
    work = to_dtype(int(im.attr_int("precision")), im.where() + ": precision");
    if (!work.is_float()) im.invalid(fmt::format("precision must be a floating-point type, got {}", work.str()));
  }
  Value s = cast_to(im, along_axis(im, scale, im.input_shape(1), xs, axis, block, "y_scale"), work);
  Value z = im.has_input(2) ? along_axis(im, im.input(2), im.input_shape(2), xs, axis, block, "y_zero_point")
                            : im.scalar(0, out, std::max<size_t>(xs.size(), 1), "zero_point");
  if (work == xt && xt == DataType::Float(32))
    if (std::optional<Value> y = integer_conv(im, x, s, z, out)) return im.set_output(0, *y, im.input_scalar(0));
  if (work == xt && xt == DataType::Float(32) && xs.size() == 2)
    if (std::optional<Value> y = integer_matmul(im, x, s, z, out)) return im.set_output(0, *y, im.input_scalar(0));
  im.set_output(0, im.op("quantize", {cast_to(im, x, work), s, z}, {{"dtype", out.str()}}), im.input_scalar(0));
}

void dequantize_linear(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  const DataType xt = im.input_dtype(0), st = im.input_dtype(1);
  if (xt != DataType::Int(32)) quant_range(im, xt);
  if (!st.is_float()) im.invalid(fmt::format("x_scale must be floating point, got {}", st.str()));
  const int64_t axis = im.opset() >= 13 ? im.attr_int("axis", 1) : 1;
  const int64_t block = im.opset() >= 21 ? im.attr_int("block_size", 0) : 0;
  DataType out = st;
  if (im.opset() >= 23 && im.has_attr("output_dtype") && im.attr_int("output_dtype") != 0)
    out = to_dtype(int(im.attr_int("output_dtype")), im.where() + ": output_dtype");
  if (im.has_input(2) && im.input_dtype(2) != xt)
    im.invalid(fmt::format("x is {} but its zero point is {}", xt.str(), im.input_dtype(2).str()));
  Value s = along_axis(im, im.input(1), im.input_shape(1), xs, axis, block, "x_scale");
  Value z = im.has_input(2) ? along_axis(im, im.input(2), im.input_shape(2), xs, axis, block, "x_zero_point")
                            : im.scalar(0, xt, std::max<size_t>(xs.size(), 1), "zero_point");
  Value y = im.op("dequantize", {im.input(0), s, z}, {{"dtype", out.str()}});
  im.set_dequantized(y, {im.input(0), s, z});
  im.set_output(0, y, im.input_scalar(0));
}

/// DynamicQuantizeLinear: uint8 with the scale and zero point of x's range widened to hold 0.
void dynamic_quantize_linear(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  const DataType t = im.input_dtype(0);
  if (t != DataType::Float(32)) im.unsupported(fmt::format("input type {} (ONNX defines float32)", t.str()));
  const size_t rank = std::max<size_t>(xs.size(), 1);
  Value x = im.input(0);
  auto all = [&](const char* op) {
    return im.reshape(im.op(op, {x}, {{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t(0)}}), {1});
  };
  Value zero = im.scalar(0, t, 1, "zero");
  Value hi = im.op("maximum", {zero, all("reduce_max")}), lo = im.op("minimum", {zero, all("reduce_min")});
  Value range = im.op("subtract", {hi, lo});
  // A range of 0 (x all zeros) takes 1, as ONNX says: range + (1 - sign(range)), range >= 0.
  range = im.op("add", {range, im.op("subtract", {im.scalar(1, t, 1, "one"), im.op("sign", {range})})});
  Value scale = im.op("divide", {range, im.scalar(255, t, 1, "qrange")});
  Value zp = im.op("round", {im.op("clip", {im.op("divide", {im.op("negative", {lo}), scale})}, {{"min", 0.0}, {"max", 255.0}})});
  Value q = im.op("add", {im.op("round", {im.op("divide", {x, im.reshape(scale, std::vector<int64_t>(rank, 1))})}),
                          im.reshape(zp, std::vector<int64_t>(rank, 1))});
  im.set_output(0, saturate(im, q, DataType::UInt(8)), im.input_scalar(0));
  if (im.output_used(1)) im.set_output(1, scale, true);
  if (im.output_used(2)) im.set_output(2, cast_to(im, zp, DataType::UInt(8)), true);
}

/// `v` (an 8-bit integer matrix operand) as int32 minus its zero point (input `zp_input`, when
/// given): a scalar, or for A one value per row (dim -2), for B one per column (dim -1).
Value centered(Importer& im, int v_input, int zp_input, bool is_a) {
  const std::vector<int64_t> vs = im.input_shape(v_input);
  const DataType vt = im.input_dtype(v_input);
  if (vt != DataType::UInt(8) && vt != DataType::Int(8))
    im.unsupported(fmt::format("input {} of type {} (uint8 and int8 only)", v_input, vt.str()));
  Value v = cast_to(im, im.input(v_input), DataType::Int(32));
  if (!im.has_input(zp_input)) return v;
  if (im.input_dtype(zp_input) != vt)
    im.invalid(fmt::format("input {} is {} but its zero point is {}", v_input, vt.str(), im.input_dtype(zp_input).str()));
  const std::vector<int64_t> zs = im.input_shape(zp_input);
  Value zp = cast_to(im, im.input(zp_input), DataType::Int(32));
  if (product(zs) == 1) return im.op("subtract", {v, im.reshape(zp, std::vector<int64_t>(std::max<size_t>(vs.size(), 1), 1))});
  const size_t rank = vs.size();
  if (rank < 2) im.invalid(fmt::format("a zero point of {} elements for a vector operand", product(zs)));
  // Per row of A ([..., M] or [..., M, 1]) or per column of B ([..., N] or [..., 1, N]).
  const int64_t along = is_a ? vs[rank - 2] : vs[rank - 1];
  if (zs.empty() || product(zs) != along)
    im.invalid(fmt::format("zero point {} is neither one value nor one per {} of {}", shape_str(zs), is_a ? "row" : "column",
                           shape_str(vs)));
  std::vector<int64_t> shape(rank, 1);
  shape[is_a ? rank - 2 : rank - 1] = along;
  for (size_t d = 0; d + 2 < zs.size() && d + 2 < rank; ++d) shape[rank - zs.size() + d] = zs[d];
  if (product(shape) != product(zs)) im.unsupported(fmt::format("zero point of shape {}", shape_str(zs)));
  return im.op("subtract", {v, im.reshape(zp, shape)});
}

void matmul_integer(Importer& im) {
  Value a = centered(im, 0, 2, true), b = centered(im, 1, 3, false);
  const std::vector<int64_t> as = im.input_shape(0), bs = im.input_shape(1);
  im.set_output(0, matmul_nd(im, a, b, as, bs), as.size() == 1 && bs.size() == 1);
}

/// QLinearMatMul: the int32 product of the centered operands, times a_scale·b_scale / y_scale
/// (that quotient in float32, the product in float64, as ONNX's reference computes it), plus
/// y's zero point, rounded half to even and saturated to y's type.
void qlinear_matmul(Importer& im) {
  const std::vector<int64_t> as = im.input_shape(0), bs = im.input_shape(3);
  for (int k : {2, 5, 7})
    if (im.has_input(k) && product(im.input_shape(k)) != 1)
      im.unsupported(fmt::format("a zero point per row or column (input {}) in QLinearMatMul", k));
  for (int k : {1, 4, 6})
    if (product(im.input_shape(k)) != 1) im.unsupported(fmt::format("a scale per row or column (input {}) in QLinearMatMul", k));
  Value prod = matmul_nd(im, centered(im, 0, 2, true), centered(im, 3, 5, false), as, bs);
  const DataType f32 = DataType::Float(32), f64 = DataType::Float(64);
  const size_t rank = im.type(prod).shape.size();
  auto scalar_of = [&](int k, DataType t) { return im.reshape(cast_to(im, im.input(k), t), std::vector<int64_t>(rank, 1)); };
  Value mult = im.op("divide", {im.op("multiply", {scalar_of(1, f32), scalar_of(4, f32)}), scalar_of(6, f32)});
  Value d = im.op("multiply", {cast_to(im, prod, f64), cast_to(im, mult, f64)});
  if (im.has_input(7)) d = im.op("add", {d, scalar_of(7, f64)});
  const DataType out = im.has_input(7) ? im.input_dtype(7) : im.input_dtype(0);
  im.set_output(0, saturate(im, im.op("round", {d}), out), as.size() == 1 && bs.size() == 1);
}

/// The conv2d attributes of a 2-D ConvInteger or QLinearConv (data [N,C,H,W], weight
/// [M,C/group,kH,kW]): strides, pads (or auto_pad), dilations and group as Conv reads them.
te::ops::Attrs conv2d_attrs(Importer& im, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  if (x.size() != 4 || w.size() != 4)
    im.unsupported(fmt::format("data {} and weight {}: loom imports the 2-D form (4-D data and weight)", shape_str(x),
                               shape_str(w)));
  const std::vector<int64_t> kernel = im.attr_ints("kernel_shape", std::vector<int64_t>{w[2], w[3]});
  if (kernel != std::vector<int64_t>{w[2], w[3]})
    im.invalid(fmt::format("kernel_shape [{}] does not match the weight {}", fmt::join(kernel, ","), shape_str(w)));
  const int64_t group = im.attr_int("group", 1);
  if (group < 1 || x[1] % group || w[0] % group || x[1] / group != w[1])
    im.invalid(fmt::format("input {} and weight {} do not fit group {}", shape_str(x), shape_str(w), group));
  const Window win = read_window(im, {x[2], x[3]}, kernel);  // Conv's attribute rules (convert_window.cc)
  return {{"strides", win.strides}, {"padding", win.pads}, {"dilation", win.dilations}, {"groups", group},
          {"layout", std::string("NCHW")}};
}

/// Input `q` (8-bit) of a ConvInteger/QLinearConv with its zero point (input `zp`, absent: 0)
/// shaped to broadcast against it: one value, or for the weight one per output channel.
Importer::Dequantized conv_operand(Importer& im, int q, int zp, bool weight) {
  const DataType t = im.input_dtype(q);
  if (t != DataType::UInt(8) && t != DataType::Int(8))
    im.unsupported(fmt::format("input {} of type {} (uint8 and int8 only)", q, t.str()));
  const std::vector<int64_t> qs = im.input_shape(q);
  Importer::Dequantized d{im.input(q), Value{}, Value{}};
  if (!im.has_input(zp)) {
    d.zero_point = im.scalar(0, t, qs.size(), "zero_point");
    return d;
  }
  if (im.input_dtype(zp) != t)
    im.invalid(fmt::format("input {} is {} but its zero point is {}", q, t.str(), im.input_dtype(zp).str()));
  const int64_t n = product(im.input_shape(zp));
  std::vector<int64_t> shape(qs.size(), 1);
  if (n != 1) {
    if (!weight || n != qs[0])
      im.invalid(fmt::format("zero point of {} elements for {} {} (one value{})", n, weight ? "weight" : "data",
                             shape_str(qs), weight ? ", or one per output channel" : ""));
    shape[0] = n;
  }
  d.zero_point = im.reshape(im.input(zp), shape);
  return d;
}

/// ConvInteger: the int32 convolution of the zero-point-centered operands.
void conv_integer(Importer& im) {
  const std::vector<int64_t> x = im.input_shape(0), w = im.input_shape(1);
  const te::ops::Attrs attrs = conv2d_attrs(im, x, w);
  im.set_output(0, integer_conv_acc(im, attrs, conv_operand(im, 0, 2, false), conv_operand(im, 1, 3, true), std::nullopt));
}

/// QLinearConv: the int32 convolution (+ the int32 bias B) requantized by x_scale·w_scale /
/// y_scale (one w_scale per output channel or one) to y's zero point and type.
void qlinear_conv(Importer& im) {
  const std::vector<int64_t> x = im.input_shape(0), w = im.input_shape(3);
  const te::ops::Attrs attrs = conv2d_attrs(im, x, w);
  const int64_t m = w[0];
  for (int k : {1, 6})
    if (product(im.input_shape(k)) != 1) im.unsupported(fmt::format("a scale of several values (input {})", k));
  const int64_t nw = product(im.input_shape(4));
  if (nw != 1 && nw != m) im.invalid(fmt::format("w_scale of {} elements for {} output channels", nw, m));
  for (int k : {1, 4, 6})
    if (!im.input_dtype(k).is_float()) im.invalid(fmt::format("input {} (a scale) must be floating point", k));
  std::optional<Value> bias;
  if (im.has_input(8)) {
    if (im.input_dtype(8) != DataType::Int(32)) im.invalid(fmt::format("B must be int32, got {}", im.input_dtype(8).str()));
    if (im.input_shape(8) != std::vector<int64_t>{m}) im.invalid(fmt::format("B {} is not [{}]", shape_str(im.input_shape(8)), m));
    bias = im.input(8);
  }
  Value acc = integer_conv_acc(im, attrs, conv_operand(im, 0, 2, false), conv_operand(im, 3, 5, true), bias);
  const DataType f32 = DataType::Float(32);
  auto scale = [&](int k, int64_t n) { return im.reshape(cast_to(im, im.input(k), f32), {1, n, 1, 1}); };
  Value mult = im.op("divide", {im.op("multiply", {scale(1, 1), scale(4, nw)}), scale(6, 1)});
  const DataType out = im.has_input(7) ? im.input_dtype(7) : im.input_dtype(0);
  quant_range(im, out);
  Value zp = im.has_input(7) ? im.reshape(im.input(7), {1, 1, 1, 1}) : im.scalar(0, out, 4, "y_zero_point");
  if (im.has_input(7) && product(im.input_shape(7)) != 1) im.unsupported("a y_zero_point of several values");
  im.set_output(0, im.op("requantize", {acc, mult, zp}, {{"dtype", out.str()}}));
}

}  // namespace

void add_quant_converters(std::map<std::string, Converter>& m) {
  m["QuantizeLinear"] = quantize_linear;
  m["DequantizeLinear"] = dequantize_linear;
  m["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  m["MatMulInteger"] = matmul_integer;
  m["QLinearMatMul"] = qlinear_matmul;
  m["ConvInteger"] = conv_integer;
  m["QLinearConv"] = qlinear_conv;
}

}  // namespace loom::graph_opt::onnx_frontend
