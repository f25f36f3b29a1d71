// Registry entries of the elementwise (unary) and broadcast (binary, per-channel) operators.
#include <functional>

#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

OpDef unary(std::string name, std::string doc, Tensor (*f)(const Tensor&, const std::string&)) {
  OpDef d;
  d.name = name;
  d.doc = std::move(doc);
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.pattern = OpPattern::kElemwise;
  d.compute = [f, name](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> { return {f(in[0], name)}; };
  return d;
}

OpDef binary(std::string name, std::string doc, Tensor (*f)(const Tensor&, const Tensor&, const std::string&)) {
  OpDef d;
  d.name = name;
  d.doc = std::move(doc) + " (numpy broadcasting)";
  d.inputs = {"lhs", "rhs"};
  d.min_inputs = 2;
  d.pattern = OpPattern::kBroadcast;
  d.compute = [f, name](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
    return {f(in[0], in[1], name)};
  };
  return d;
}

OpDef clip_op() {
  OpDef d = unary("clip", "min(max(x, min), max)", nullptr);
  d.attrs = {attr("min", AttrKind::kFloat, std::nullopt, "lower bound"),
             attr("max", AttrKind::kFloat, std::nullopt, "upper bound")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {clip(in[0], attr_float(a, "min"), attr_float(a, "max"), "clip")};
  };
  return d;
}

OpDef gelu_op() {
  OpDef d = unary("gelu", "x * Phi(x), exact (erf) or with the tanh approximation", nullptr);
  d.attrs = {attr("approximate", AttrKind::kString, std::string("none"), "\"none\" (erf) or \"tanh\"")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const std::string& ap = attr_str(a, "approximate");
    LOOM_CHECK(ap == "none" || ap == "tanh", "gelu: approximate must be \"none\" or \"tanh\", got \"{}\"", ap);
    return {gelu(in[0], ap == "tanh", "gelu")};
  };
  return d;
}

OpDef cast_op() {
  OpDef d = unary("cast", "each element converted to dtype", nullptr);
  d.attrs = {attr("dtype", AttrKind::kString, std::nullopt, "\"float32\", \"int32\", \"int64\", …")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {cast(in[0], DataType::parse(attr_str(a, "dtype")), "cast")};
  };
  return d;
}

OpDef bias_add_op() {
  OpDef d;
  d.name = "bias_add";
  d.doc = "data + bias[c] along the channel axis (in a blocked layout, the channel the layout splits)";
  d.inputs = {"data", "bias"};
  d.min_inputs = 2;
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(1), "the channel axis (negative counts from the end)"),
             attr("layout", AttrKind::kString, std::string(""), "\"\", or a layout such as \"NCHW16c\"")};
  d.pattern = OpPattern::kBroadcast;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {bias_add(in[0], in[1], int(attr_int(a, "axis")), attr_str(a, "layout"), "bias_add")};
  };
  d.infer_type = [d](const std::vector<TensorType>& in, const Attrs& a) {
    const std::string& l = attr_str(a, "layout");
    if (!l.empty()) check_layout("bias_add", "data", in[0], l);
    auto t = infer_from_compute(d, in, a);
    t[0].layout = l.empty() ? in[0].layout : l;
    return t;
  };
  return d;
}

/// A unary operator with float attributes, each with its default.
struct FloatAttr {
  const char* name;
  double def;
  const char* doc;
};

OpDef unary_attrs(std::string name, std::string doc, std::vector<FloatAttr> attrs,
                  std::function<Tensor(const Tensor&, const std::vector<double>&, const std::string&)> f) {
  OpDef d = unary(name, std::move(doc), nullptr);
  std::vector<std::string> names;
  for (const FloatAttr& fa : attrs) {
    d.attrs.push_back(attr(fa.name, AttrKind::kFloat, fa.def, fa.doc));
    names.push_back(fa.name);
  }
  d.compute = [f, names, name](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    std::vector<double> v;
    for (const std::string& n : names) v.push_back(attr_float(a, n));
    return {f(in[0], v, name)};
  };
  return d;
}

Tensor relu_f(const Tensor& x, const std::string& n) { return relu(x, n); }
Tensor sigmoid_f(const Tensor& x, const std::string& n) { return sigmoid(x, n); }
Tensor tanh_f(const Tensor& x, const std::string& n) { return tanh(x, n); }
Tensor exp_f(const Tensor& x, const std::string& n) { return exp(x, n); }
Tensor sqrt_f(const Tensor& x, const std::string& n) { return sqrt(x, n); }
Tensor log_f(const Tensor& x, const std::string& n) { return log(x, n); }
Tensor abs_f(const Tensor& x, const std::string& n) { return abs(x, n); }
Tensor neg_f(const Tensor& x, const std::string& n) { return negative(x, n); }
Tensor erf_f(const Tensor& x, const std::string& n) { return erf(x, n); }
Tensor hard_swish_f(const Tensor& x, const std::string& n) { return hard_swish(x, n); }
Tensor softplus_f(const Tensor& x, const std::string& n) { return softplus(x, n); }
Tensor softsign_f(const Tensor& x, const std::string& n) { return softsign(x, n); }
Tensor mish_f(const Tensor& x, const std::string& n) { return mish(x, n); }
Tensor floor_f(const Tensor& x, const std::string& n) { return floor(x, n); }
Tensor ceil_f(const Tensor& x, const std::string& n) { return ceil(x, n); }
Tensor round_f(const Tensor& x, const std::string& n) { return round(x, n); }
Tensor reciprocal_f(const Tensor& x, const std::string& n) { return reciprocal(x, n); }
Tensor sin_f(const Tensor& x, const std::string& n) { return sin(x, n); }
Tensor cos_f(const Tensor& x, const std::string& n) { return cos(x, n); }
Tensor sign_f(const Tensor& x, const std::string& n) { return sign(x, n); }

std::vector<OpDef> activation_ops_list() {
  using V = std::vector<double>;
  using S = std::string;
  return {
      unary_attrs("hard_sigmoid", "max(0, min(1, alpha x + beta))", {{"alpha", 0.2, "slope"}, {"beta", 0.5, "offset"}},
                  [](const Tensor& x, const V& a, const S& n) { return hard_sigmoid(x, a[0], a[1], n); }),
      unary("hard_swish", "x max(0, min(1, x / 6 + 1/2))", hard_swish_f),
      unary_attrs("leaky_relu", "x for x >= 0, alpha x below", {{"alpha", 0.01, "slope below 0"}},
                  [](const Tensor& x, const V& a, const S& n) { return leaky_relu(x, a[0], n); }),
      unary_attrs("elu", "x for x > 0, alpha (e^x - 1) otherwise", {{"alpha", 1.0, "scale below 0"}},
                  [](const Tensor& x, const V& a, const S& n) { return elu(x, a[0], n); }),
      unary_attrs("selu", "gamma x for x > 0, gamma alpha (e^x - 1) otherwise",
                  {{"alpha", 1.67326319217681884765625, "scale below 0"}, {"gamma", 1.05070102214813232421875, "overall scale"}},
                  [](const Tensor& x, const V& a, const S& n) { return selu(x, a[0], a[1], n); }),
      unary_attrs("celu", "max(0, x) + min(0, alpha (e^(x / alpha) - 1))", {{"alpha", 1.0, "scale (not 0)"}},
                  [](const Tensor& x, const V& a, const S& n) { return celu(x, a[0], n); }),
      unary("softplus", "log(1 + e^x)", softplus_f),
      unary("softsign", "x / (1 + |x|)", softsign_f),
      unary_attrs("thresholded_relu", "x for x > alpha, 0 otherwise", {{"alpha", 1.0, "threshold"}},
                  [](const Tensor& x, const V& a, const S& n) { return thresholded_relu(x, a[0], n); }),
      unary("mish", "x tanh(softplus(x))", mish_f),
      unary("floor", "round down", floor_f),
      unary("ceil", "round up", ceil_f),
      unary("round", "round to nearest, halves to even", round_f),
      unary("reciprocal", "1 / x", reciprocal_f),
      unary("sin", "sine", sin_f),
      unary("cos", "cosine", cos_f),
      unary("sign", "-1, 0 or 1 by the sign of x", sign_f),
  };
}

}  // namespace

std::vector<OpDef> elementwise_ops() {
  std::vector<OpDef> ops = {unary("relu", "max(x, 0)", relu_f),
          unary("sigmoid", "1 / (1 + exp(-x))", sigmoid_f),
          unary("tanh", "tanh(x)", tanh_f),
          unary("exp", "e^x", exp_f),
          unary("sqrt", "square root", sqrt_f),
          unary("log", "natural logarithm", log_f),
          unary("abs", "|x|", abs_f),
          unary("negative", "-x", neg_f),
          unary("erf", "the error function", erf_f),
          clip_op(),
          gelu_op(),
          cast_op(),
          binary("add", "lhs + rhs", add),
          binary("subtract", "lhs - rhs", subtract),
          binary("multiply", "lhs * rhs", multiply),
          binary("divide", "lhs / rhs", divide),
          binary("maximum", "max(lhs, rhs)", maximum),
          binary("minimum", "min(lhs, rhs)", minimum),
          binary("pow", "lhs ** rhs", power),
          bias_add_op()};
  for (OpDef& d : activation_ops_list()) ops.push_back(std::move(d));
  return ops;
}

}  // namespace loom::te::ops::detail
