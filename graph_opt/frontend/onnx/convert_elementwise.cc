// Converters of ONNX's elementwise operators: Add, Sub, Mul, Div, Pow, Relu, Sigmoid, Tanh,
// Erf, Sqrt, Clip, Gelu, Cast, Abs, Neg, Sign, Exp, Log, Ceil, Floor, Round, Reciprocal, Sin, Cos
// and the activations HardSigmoid, HardSwish, LeakyRelu, Elu, Selu, Celu, Softplus, Softsign,
// ThresholdedRelu, Mish.
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// op(reshape(x), c) as reshape(op(x, c)) when the reshape keeps the last dim and the
/// constant c varies along it alone (a bias or scale after MatMul's flattening reshape): the
/// operator then reads the anchor's output directly and fuses as its epilogue. Null when it
/// does not apply.
std::optional<Value> before_reshape(Importer& im, const char* loom_op, int reshaped, int other) {
  std::optional<Value> src = im.reshape_source(im.input(reshaped));
  const runtime::NDArray* c = im.constant_of(im.input(other));
  if (!src || !c) return std::nullopt;
  const std::vector<int64_t>& out = im.type(im.input(reshaped)).shape;
  const std::vector<int64_t>& in = im.type(*src).shape;
  const std::vector<int64_t> cs = im.input_shape(other);
  if (out.back() != in.back() || cs.size() > out.size()) return std::nullopt;
  for (size_t d = 0; d + 1 < cs.size(); ++d)
    if (cs[d] != 1) return std::nullopt;
  if (!cs.empty() && cs.back() != 1 && cs.back() != out.back()) return std::nullopt;
  Value cv = im.reshape(im.input(other), {cs.empty() ? 1 : cs.back()});
  Value y = reshaped == 0 ? im.op(loom_op, {*src, cv}) : im.op(loom_op, {cv, *src});
  return im.reshape(y, out);
}

/// Whether some input has no elements (an elementwise operator then has none to compute).
bool any_input_empty(const Importer& im) {
  for (int i = 0; i < im.num_inputs(); ++i)
    if (im.input_empty(i)) return true;
  return false;
}

/// Sets output 0 to a value without elements of `shape` and type `t` when some input has
/// none; false otherwise.
bool empty_elementwise(Importer& im, const std::vector<int64_t>& shape, DataType t) {
  if (!any_input_empty(im)) return false;
  im.set_empty_output(0, runtime::NDArray::empty(shape, t));
  return true;
}

/// The numpy broadcast of inputs 0 and 1's shapes (an extent 1 stretches to any, 0 included).
std::vector<int64_t> broadcast_shape(const Importer& im) {
  std::vector<int64_t> a = im.input_shape(0), b = im.input_shape(1);
  if (a.size() < b.size()) std::swap(a, b);
  for (size_t k = 0; k < b.size(); ++k) {
    int64_t& x = a[a.size() - b.size() + k];
    const int64_t y = b[k];
    if (x != y && x != 1 && y != 1)
      im.invalid(fmt::format("input shapes {} and {} do not broadcast", shape_str(im.input_shape(0)),
                             shape_str(im.input_shape(1))));
    if (x == 1) x = y;
  }
  return a;
}

Converter binary(const char* loom_op) {
  return [loom_op](Importer& im) {
    if (any_input_empty(im) && im.input_dtype(0) == im.input_dtype(1))
      return im.set_empty_output(0, runtime::NDArray::empty(broadcast_shape(im), im.input_dtype(0)));
    Value a = im.input(0), b = im.input(1);
    if (im.type(a).dtype != im.type(b).dtype)
      im.invalid(fmt::format("inputs have different types {} and {}", im.type(a).dtype.str(), im.type(b).dtype.str()));
    const bool scalar = im.input_scalar(0) && im.input_scalar(1);
    for (auto [r, o] : {std::pair{0, 1}, std::pair{1, 0}})
      if (std::optional<Value> y = before_reshape(im, loom_op, r, o)) return im.set_output(0, *y, scalar);
    im.set_output(0, im.op(loom_op, {a, b}), scalar);
  };
}

void pow_op(Importer& im) {
  // Y has X's type; the exponent may have another.
  Value x = im.input(0), y = im.input(1);
  DataType tx = im.type(x).dtype, ty = im.type(y).dtype;
  const bool scalar = im.input_scalar(0) && im.input_scalar(1);
  if (tx == ty && tx.is_float()) return im.set_output(0, im.op("pow", {x, y}), scalar);
  if (tx.is_float()) {
    y = im.op("cast", {y}, {{"dtype", tx.str()}});
    return im.set_output(0, im.op("pow", {x, y}), scalar);
  }
  // An integer base: computed in floating point (the exponent's type, or float64 for integer
  // exponents, exact for results below 2^53), cast back.
  DataType work = ty.is_float() ? ty : DataType::Float(64);
  Value xf = im.op("cast", {x}, {{"dtype", work.str()}});
  Value yf = ty == work ? y : im.op("cast", {y}, {{"dtype", work.str()}});
  im.set_output(0, im.op("cast", {im.op("pow", {xf, yf})}, {{"dtype", tx.str()}}), scalar);
}

Converter unary(const char* loom_op, bool float_only) {
  return [loom_op, float_only](Importer& im) {
    const DataType t = im.input_dtype(0);
    if (float_only && !t.is_float())
      im.unsupported(fmt::format("input type {} (loom's {} takes floating point)", t.str(), loom_op));
    if (empty_elementwise(im, im.input_shape(0), t)) return;
    Value x = im.input(0);
    im.set_output(0, im.op(loom_op, {x}), im.input_scalar(0));
  };
}

/// A unary activation with float attributes: (ONNX name, loom name, default) each.
Converter activation(const char* loom_op, std::vector<std::tuple<const char*, const char*, double>> attrs) {
  return [loom_op, attrs](Importer& im) {
    Value x = im.input(0);
    if (!im.type(x).dtype.is_float())
      im.unsupported(fmt::format("input type {} (loom's {} takes floating point)", im.type(x).dtype.str(), loom_op));
    te::ops::Attrs a;
    for (auto [onnx_name, loom_name, def] : attrs) a[loom_name] = im.attr_float(onnx_name, def);
    im.set_output(0, im.op(loom_op, {x}, a), im.input_scalar(0));
  };
}

void clip(Importer& im) {
  Value x = im.input(0);
  DataType t = im.type(x).dtype;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (t.is_integer()) {
    lo = t.is_int() ? -std::ldexp(1.0, t.bits() - 1) : 0.0;
    hi = t.is_int() ? std::ldexp(1.0, t.bits() - 1) - 1 : std::ldexp(1.0, t.bits()) - 1;
  }
  if (im.opset() < 11) {
    // Clip-6: float attributes, defaulting to float32's range.
    lo = im.attr_float("min", -std::numeric_limits<float>::max());
    hi = im.attr_float("max", std::numeric_limits<float>::max());
  } else {
    if (im.has_input(1)) lo = im.const_scalar(1, "min");
    if (im.has_input(2)) hi = im.const_scalar(2, "max");
  }
  if (std::isnan(lo) || std::isnan(hi)) im.unsupported("a NaN bound");
  if (lo > hi) lo = hi;  // numpy's clip: every element becomes max
  if (std::isinf(lo) && std::isinf(hi) && !t.is_integer()) return im.set_output(0, x, im.input_scalar(0));
  im.set_output(0, im.op("clip", {x}, {{"min", lo}, {"max", hi}}), im.input_scalar(0));
}

void gelu(Importer& im) {
  std::string approximate = im.attr_str("approximate", "none");
  if (approximate != "none" && approximate != "tanh") im.invalid("approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  Value x = im.input(0);
  if (!im.type(x).dtype.is_float()) im.unsupported("input type " + im.type(x).dtype.str());
  im.set_output(0, im.op("gelu", {x}, {{"approximate", approximate}}), im.input_scalar(0));
}

void cast(Importer& im) {
  DataType to = to_dtype(int(im.attr_int("to")), im.where() + ": attribute 'to'");
  if (im.opset() >= 19) im.ignore_attr("saturate");    // only for float8 targets, which loom lacks
  if (im.opset() >= 24) im.ignore_attr("round_mode");  // likewise
  if (empty_elementwise(im, im.input_shape(0), to)) return;
  Value x = im.input(0);
  if (im.type(x).dtype == to) return im.set_output(0, x, im.input_scalar(0));
  im.set_output(0, im.op("cast", {x}, {{"dtype", to.str()}}), im.input_scalar(0));
}

}  // namespace

void add_elementwise_converters(std::map<std::string, Converter>& m) {
  m["Add"] = binary("add");
  m["Sub"] = binary("subtract");
  m["Mul"] = binary("multiply");
  m["Div"] = binary("divide");
  m["Pow"] = pow_op;
  m["Relu"] = unary("relu", false);
  m["Sigmoid"] = unary("sigmoid", true);
  m["Tanh"] = unary("tanh", true);
  m["Erf"] = unary("erf", true);
  m["Sqrt"] = unary("sqrt", true);
  m["Clip"] = clip;
  m["Gelu"] = gelu;
  m["Cast"] = cast;
  m["Abs"] = unary("abs", false);
  m["Neg"] = unary("negative", false);
  m["Sign"] = unary("sign", false);
  m["Exp"] = unary("exp", true);
  m["Log"] = unary("log", true);
  m["Ceil"] = unary("ceil", true);
  m["Floor"] = unary("floor", true);
  m["Round"] = unary("round", true);
  m["Reciprocal"] = unary("reciprocal", true);
  m["Sin"] = unary("sin", true);
  m["Cos"] = unary("cos", true);
  m["HardSigmoid"] = activation("hard_sigmoid", {{"alpha", "alpha", 0.2}, {"beta", "beta", 0.5}});
  m["HardSwish"] = unary("hard_swish", true);
  m["LeakyRelu"] = activation("leaky_relu", {{"alpha", "alpha", 0.01}});
  m["Elu"] = activation("elu", {{"alpha", "alpha", 1.0}});
  m["Selu"] = activation("selu", {{"alpha", "alpha", 1.67326319217681884765625}, {"gamma", "gamma", 1.05070102214813232421875}});
  m["Celu"] = activation("celu", {{"alpha", "alpha", 1.0}});
  m["Softplus"] = unary("softplus", true);
  m["Softsign"] = unary("softsign", true);
  m["ThresholdedRelu"] = activation("thresholded_relu", {{"alpha", "alpha", 1.0}});
  m["Mish"] = unary("mish", true);
}

}  // namespace loom::graph_opt::onnx_frontend
