// Converters of ONNX's quantization operators: QuantizeLinear, DequantizeLinear (per tensor,
// per axis and blocked), DynamicQuantizeLinear, MatMulInteger and QLinearMatMul, written with
// the registry's elementwise operators, reductions and matmuls so that they follow ONNX's
// reference arithmetic: quantize rounds x / scale half to even, adds the zero point and
// saturates; dequantize subtracts the zero point and multiplies by the scale in float32; the
// integer matmuls accumulate exactly in int32.
#include <cmath>

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
  Value q = im.op("round", {im.op("divide", {cast_to(im, x, work), s})});
  if (im.has_input(2))
    q = im.op("add", {q, cast_to(im, along_axis(im, im.input(2), im.input_shape(2), xs, axis, block, "y_zero_point"), work)});
  im.set_output(0, saturate(im, q, out), im.input_scalar(0));
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
  const DataType f32 = DataType::Float(32);
  Value dx = cast_to(im, im.input(0), f32);
  if (im.has_input(2)) {
    if (im.input_dtype(2) != xt)
      im.invalid(fmt::format("x is {} but its zero point is {}", xt.str(), im.input_dtype(2).str()));
    dx = im.op("subtract",
               {dx, cast_to(im, along_axis(im, im.input(2), im.input_shape(2), xs, axis, block, "x_zero_point"), f32)});
  }
  Value y = im.op("multiply", {dx, cast_to(im, along_axis(im, im.input(1), im.input_shape(1), xs, axis, block, "x_scale"), f32)});
  im.set_output(0, cast_to(im, y, out), im.input_scalar(0));
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

}  // namespace

void add_quant_converters(std::map<std::string, Converter>& m) {
  m["QuantizeLinear"] = quantize_linear;
  m["DequantizeLinear"] = dequantize_linear;
  m["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  m["MatMulInteger"] = matmul_integer;
  m["QLinearMatMul"] = qlinear_matmul;
}

}  // namespace loom::graph_opt::onnx_frontend
