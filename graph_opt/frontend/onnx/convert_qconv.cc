// Converters of ONNX's integer convolutions: ConvInteger (the int32 convolution of the
// zero-point-centered 8-bit operands) and QLinearConv (that convolution plus an int32 bias,
// scaled by x_scale·w_scale / y_scale, shifted by y's zero point, rounded half to even and
// saturated), following ONNX's reference arithmetic. Conv's attributes as Conv reads them.
#include "convert_window.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

Value as_type(Importer& im, Value v, DataType t) {
  return im.type(v).dtype == t ? v : im.op("cast", {v}, {{"dtype", t.str()}});
}

void check_8bit(Importer& im, int input, const char* what) {
  const DataType t = im.input_dtype(input);
  if (t != DataType::UInt(8) && t != DataType::Int(8))
    im.unsupported(fmt::format("{} of type {} (uint8 and int8 only)", what, t.str()));
}

/// The shape [1, C, 1, ...] of a value along the channel dim of a rank-`rank` operand, or
/// [C, 1, ...] along its first dim (`first`).
std::vector<int64_t> along_channels(int64_t c, size_t rank, bool first) {
  std::vector<int64_t> s(rank, 1);
  s[first ? 0 : 1] = c;
  return s;
}

/// Input `v_input` as int32 minus its zero point (input `zp_input`, when given): one value,
/// or with `per_channel` one per output channel (dim 0 of the weight).
Value centered(Importer& im, int v_input, int zp_input, bool per_channel, const char* what) {
  check_8bit(im, v_input, what);
  const std::vector<int64_t> vs = im.input_shape(v_input);
  Value v = as_type(im, im.input(v_input), DataType::Int(32));
  if (!im.has_input(zp_input)) return v;
  if (im.input_dtype(zp_input) != im.input_dtype(v_input))
    im.invalid(fmt::format("{} is {} but its zero point is {}", what, im.input_dtype(v_input).str(),
                           im.input_dtype(zp_input).str()));
  const std::vector<int64_t> zs = im.input_shape(zp_input);
  Value zp = as_type(im, im.input(zp_input), DataType::Int(32));
  if (product(zs) == 1) return im.op("subtract", {v, im.reshape(zp, std::vector<int64_t>(vs.size(), 1))});
  if (!per_channel || zs.size() != 1 || zs[0] != vs[0])
    im.invalid(fmt::format("the zero point {} of {} {} is neither one value{}", shape_str(zs), what, shape_str(vs),
                           per_channel ? fmt::format(" nor one per output channel ({})", vs[0]) : std::string()));
  return im.op("subtract", {v, im.reshape(zp, along_channels(zs[0], vs.size(), true))});
}

/// The int32 convolution of the centered operands x (input 0) and w (input `w_input`), with
/// an int32 bias when `bias_input` is given.
Value integer_convolution(Importer& im, Value x, Value w, int w_input, int bias_input) {
  std::vector<int64_t> xs = spatial_input(im), ws = im.input_shape(w_input);
  if (ws.size() != xs.size())
    im.invalid(fmt::format("weight {} does not have the rank of the input {}", shape_str(ws), shape_str(xs)));
  std::vector<int64_t> kernel = kernel_of(im, ws);
  const int64_t groups = im.attr_int("group", 1);
  if (groups < 1 || xs[1] % groups || ws[0] % groups || xs[1] / groups != ws[1])
    im.invalid(fmt::format("input {} and weight {} do not fit group {}", shape_str(xs), shape_str(ws), groups));
  Window win = read_window(im, std::vector<int64_t>(xs.begin() + 2, xs.end()), kernel);
  std::optional<Value> bias;
  if (bias_input >= 0 && im.has_input(bias_input)) {
    if (im.input_dtype(bias_input) != DataType::Int(32))
      im.invalid(fmt::format("the bias must be int32, got {}", im.input_dtype(bias_input).str()));
    if (im.input_shape(bias_input) != std::vector<int64_t>{ws[0]})
      im.invalid(fmt::format("the bias {} must hold one value per output channel ({})",
                             shape_str(im.input_shape(bias_input)), ws[0]));
    bias = im.input(bias_input);
  }
  return emit_conv(im, x, w, bias, win, groups);
}

void conv_integer(Importer& im) {
  Value x = centered(im, 0, 2, false, "x");
  Value w = centered(im, 1, 3, true, "w");
  im.set_output(0, integer_convolution(im, x, w, 1, -1));
}

/// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B].
void qlinear_conv(Importer& im) {
  Value x = centered(im, 0, 2, false, "x");
  Value w = centered(im, 3, 5, true, "w");
  Value acc = integer_convolution(im, x, w, 3, 8);
  const std::vector<int64_t> ys = im.type(acc).shape, ws = im.input_shape(3);
  const size_t rank = ys.size();
  const DataType f32 = DataType::Float(32), f64 = DataType::Float(64);
  auto one_value = [&](int k, const char* what) {
    if (!im.input_dtype(k).is_float()) im.invalid(fmt::format("{} must be floating point, got {}", what, im.input_dtype(k).str()));
    if (product(im.input_shape(k)) != 1)
      im.invalid(fmt::format("{} {} must be one value", what, shape_str(im.input_shape(k))));
    return im.reshape(as_type(im, im.input(k), f32), std::vector<int64_t>(rank, 1));
  };
  Value w_scale = as_type(im, im.input(4), f32);
  const std::vector<int64_t> wss = im.input_shape(4);
  if (!im.input_dtype(4).is_float()) im.invalid("w_scale must be floating point, got " + im.input_dtype(4).str());
  if (product(wss) == 1)
    w_scale = im.reshape(w_scale, std::vector<int64_t>(rank, 1));
  else if (wss.size() == 1 && wss[0] == ws[0])
    w_scale = im.reshape(w_scale, along_channels(ws[0], rank, false));
  else
    im.invalid(fmt::format("w_scale {} is neither one value nor one per output channel ({})", shape_str(wss), ws[0]));
  // The multiplier in float32, the scaled accumulator in float64, as ONNX's reference computes.
  Value mult = im.op("divide", {im.op("multiply", {one_value(1, "x_scale"), w_scale}), one_value(6, "y_scale")});
  Value y = im.op("multiply", {as_type(im, acc, f64), as_type(im, mult, f64)});
  DataType out = im.input_dtype(0);
  if (im.has_input(7)) {
    out = im.input_dtype(7);
    if (out != DataType::UInt(8) && out != DataType::Int(8))
      im.unsupported(fmt::format("y_zero_point of type {} (uint8 and int8 only)", out.str()));
    if (product(im.input_shape(7)) != 1)
      im.invalid(fmt::format("y_zero_point {} must be one value", shape_str(im.input_shape(7))));
    y = im.op("add", {y, im.reshape(as_type(im, im.input(7), f64), std::vector<int64_t>(rank, 1))});
  }
  const bool is_signed = out == DataType::Int(8);
  y = im.op("clip", {im.op("round", {y})}, {{"min", is_signed ? -128.0 : 0.0}, {"max", is_signed ? 127.0 : 255.0}});
  im.set_output(0, as_type(im, y, out));
}

}  // namespace

void add_qconv_converters(std::map<std::string, Converter>& m) {
  m["ConvInteger"] = conv_integer;
  m["QLinearConv"] = qlinear_conv;
}

}  // namespace loom::graph_opt::onnx_frontend
