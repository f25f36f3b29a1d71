// Registry entries of the comparison, logical, bitwise and selection operators and of the
// remaining elementwise math (logic.h).
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

using Unary = Tensor (*)(const Tensor&, const std::string&);
using Binary = Tensor (*)(const Tensor&, const Tensor&, const std::string&);

OpDef unary(std::string name, std::string doc, Unary f) {
  OpDef d;
  d.name = name;
  d.doc = std::move(doc);
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.pattern = OpPattern::kElemwise;
  d.compute = [f, name](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
    return {f(in[0], name)};
  };
  return d;
}

OpDef binary(std::string name, std::string doc, Binary f) {
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

OpDef where_op() {
  OpDef d;
  d.name = "where";
  d.doc = "cond ? x : y elementwise (numpy broadcasting of all three)";
  d.inputs = {"cond", "x", "y"};
  d.min_inputs = 3;
  d.pattern = OpPattern::kBroadcast;
  d.compute = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
    return {where(in[0], in[1], in[2], "where")};
  };
  return d;
}

OpDef mod_op() {
  OpDef d = binary("mod", "remainder of lhs / rhs", nullptr);
  d.attrs = {
      attr("fmod", AttrKind::kInt, int64_t(0), "0: the sign of rhs (Python's %), 1: the sign of lhs (C's %, fmod)")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {mod(in[0], in[1], attr_int(a, "fmod") != 0, "mod")};
  };
  return d;
}

OpDef isinf_op() {
  OpDef d = unary("isinf", "true where x is an infinity of a detected sign", nullptr);
  d.attrs = {attr("detect_positive", AttrKind::kInt, int64_t(1), "1: +inf counts"),
             attr("detect_negative", AttrKind::kInt, int64_t(1), "1: -inf counts")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {isinf(in[0], attr_int(a, "detect_positive") != 0, attr_int(a, "detect_negative") != 0, "isinf")};
  };
  return d;
}

OpDef shrink_op() {
  OpDef d = unary("shrink", "x + bias below -lambd, x - bias above lambd, 0 between", nullptr);
  d.attrs = {attr("lambd", AttrKind::kFloat, 0.5, "half-width of the zeroed band"),
             attr("bias", AttrKind::kFloat, 0.0, "moved toward zero outside the band")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {shrink(in[0], attr_float(a, "lambd"), attr_float(a, "bias"), "shrink")};
  };
  return d;
}

OpDef swish_op() {
  OpDef d = unary("swish", "x sigmoid(alpha x)", nullptr);
  d.attrs = {attr("alpha", AttrKind::kFloat, 1.0, "scale inside the sigmoid")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {swish(in[0], attr_float(a, "alpha"), "swish")};
  };
  return d;
}

Tensor isnan_f(const Tensor& x, const std::string& n) { return isnan(x, n); }
Tensor tan_f(const Tensor& x, const std::string& n) { return tan(x, n); }
Tensor asin_f(const Tensor& x, const std::string& n) { return asin(x, n); }
Tensor acos_f(const Tensor& x, const std::string& n) { return acos(x, n); }
Tensor atan_f(const Tensor& x, const std::string& n) { return atan(x, n); }
Tensor sinh_f(const Tensor& x, const std::string& n) { return sinh(x, n); }
Tensor cosh_f(const Tensor& x, const std::string& n) { return cosh(x, n); }
Tensor asinh_f(const Tensor& x, const std::string& n) { return asinh(x, n); }
Tensor acosh_f(const Tensor& x, const std::string& n) { return acosh(x, n); }
Tensor atanh_f(const Tensor& x, const std::string& n) { return atanh(x, n); }

}  // namespace

std::vector<OpDef> logic_ops() {
  return {binary("equal", "lhs == rhs -> bool", equal),
          binary("not_equal", "lhs != rhs -> bool", not_equal),
          binary("less", "lhs < rhs -> bool", less),
          binary("less_equal", "lhs <= rhs -> bool", less_equal),
          binary("greater", "lhs > rhs -> bool", greater),
          binary("greater_equal", "lhs >= rhs -> bool", greater_equal),
          binary("logical_and", "lhs and rhs (bool)", logical_and),
          binary("logical_or", "lhs or rhs (bool)", logical_or),
          binary("logical_xor", "lhs xor rhs (bool)", logical_xor),
          unary("logical_not", "not x (bool)", logical_not),
          binary("bitwise_and", "lhs & rhs (integers)", bitwise_and),
          binary("bitwise_or", "lhs | rhs (integers)", bitwise_or),
          binary("bitwise_xor", "lhs ^ rhs (integers)", bitwise_xor),
          unary("bitwise_not", "~x (integers)", bitwise_not),
          binary("left_shift", "lhs << rhs (integers; 0 for a shift outside [0, bits))", left_shift),
          binary("right_shift", "lhs >> rhs (integers, arithmetic when signed; 0 or -1 for a shift outside [0, bits))",
                 right_shift),
          where_op(),
          mod_op(),
          unary("isnan", "true where x is NaN", isnan_f),
          isinf_op(),
          unary("tan", "tangent", tan_f),
          unary("asin", "arc sine", asin_f),
          unary("acos", "arc cosine", acos_f),
          unary("atan", "arc tangent", atan_f),
          unary("sinh", "hyperbolic sine", sinh_f),
          unary("cosh", "hyperbolic cosine", cosh_f),
          unary("asinh", "inverse hyperbolic sine", asinh_f),
          unary("acosh", "inverse hyperbolic cosine", acosh_f),
          unary("atanh", "inverse hyperbolic tangent", atanh_f),
          binary("prelu", "lhs for lhs >= 0, rhs * lhs below (rhs: the slope)", prelu),
          shrink_op(),
          swish_op()};
}

}  // namespace loom::te::ops::detail
