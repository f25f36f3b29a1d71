// Converters of ONNX's comparison, logical, bitwise and selection operators (Equal, Less,
// Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor, Not, BitShift, BitwiseAnd, BitwiseOr,
// BitwiseXor, BitwiseNot, Where), the variadic Max, Min, Sum, Mean, and the remaining
// elementwise math: Mod, IsNaN, IsInf, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
// PRelu, Shrink, Swish.
#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

bool all_scalar(const Importer& im) {
  for (int i = 0; i < im.num_inputs(); ++i)
    if (!im.input_scalar(i)) return false;
  return true;
}

void same_dtypes(Importer& im) {
  for (int i = 1; i < im.num_inputs(); ++i)
    if (im.input_dtype(i) != im.input_dtype(0))
      im.invalid(fmt::format("inputs have different types {} (input 0) and {} (input {})", im.input_dtype(0).str(),
                             im.input_dtype(i).str(), i));
}

enum class Types { kAny, kBool, kInteger, kFloat };

void check_types(Importer& im, Types types) {
  const DataType t = im.input_dtype(0);
  const bool ok = types == Types::kAny || (types == Types::kBool && t.is_bool()) ||
                  (types == Types::kInteger && t.is_integer()) || (types == Types::kFloat && t.is_float());
  if (ok) return;
  const char* want = types == Types::kBool ? "bool" : types == Types::kInteger ? "an integer type" : "floating point";
  if (types == Types::kFloat && !t.is_bool())
    im.unsupported(fmt::format("input type {} (loom takes {})", t.str(), want));
  im.invalid(fmt::format("input type {} (the operator takes {})", t.str(), want));
}

Converter binary(const char* loom_op, Types types) {
  return [loom_op, types](Importer& im) {
    same_dtypes(im);
    check_types(im, types);
    im.set_output(0, im.op(loom_op, {im.input(0), im.input(1)}), all_scalar(im));
  };
}

Converter unary(const char* loom_op, Types types) {
  return [loom_op, types](Importer& im) {
    check_types(im, types);
    im.set_output(0, im.op(loom_op, {im.input(0)}), im.input_scalar(0));
  };
}

/// Max, Min, Sum, Mean: any number of inputs folded pairwise (numpy broadcasting); Mean divides by their count.
Converter variadic(const char* loom_op, bool mean) {
  return [loom_op, mean](Importer& im) {
    if (im.num_inputs() < 1) im.invalid("needs at least one input");
    same_dtypes(im);
    const DataType t = im.input_dtype(0);
    if (t.is_bool()) im.invalid("input type bool");
    if (mean && !t.is_float()) im.unsupported(fmt::format("input type {} (Mean takes floating point)", t.str()));
    Value y = im.input(0);
    for (int i = 1; i < im.num_inputs(); ++i) y = im.op(loom_op, {y, im.input(i)});
    if (mean && im.num_inputs() > 1)
      y = im.op("divide", {y, im.scalar(double(im.num_inputs()), t, im.type(y).shape.size(), "count")});
    im.set_output(0, y, all_scalar(im));
  };
}

void bit_shift(Importer& im) {
  const std::string direction = im.attr_str("direction");
  if (direction != "LEFT" && direction != "RIGHT")
    im.invalid("direction must be \"LEFT\" or \"RIGHT\", got \"" + direction + "\"");
  same_dtypes(im);
  if (!im.input_dtype(0).is_integer())
    im.invalid("input type " + im.input_dtype(0).str() + " (BitShift takes integers)");
  const char* op = direction == "LEFT" ? "left_shift" : "right_shift";
  im.set_output(0, im.op(op, {im.input(0), im.input(1)}), all_scalar(im));
}

void where(Importer& im) {
  if (!im.input_dtype(0).is_bool()) im.invalid("condition type " + im.input_dtype(0).str() + " (it must be bool)");
  if (im.input_dtype(1) != im.input_dtype(2))
    im.invalid(fmt::format("X and Y have different types {} and {}", im.input_dtype(1).str(), im.input_dtype(2).str()));
  im.set_output(0, im.op("where", {im.input(0), im.input(1), im.input(2)}), all_scalar(im));
}

void mod(Importer& im) {
  const int64_t fmod = im.attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) im.invalid(fmt::format("fmod must be 0 or 1, got {}", fmod));
  same_dtypes(im);
  const DataType t = im.input_dtype(0);
  if (t.is_bool()) im.invalid("input type bool");
  im.set_output(0, im.op("mod", {im.input(0), im.input(1)}, {{"fmod", fmod}}), all_scalar(im));
}

void isinf(Importer& im) {
  check_types(im, Types::kFloat);
  const int64_t pos = im.attr_int("detect_positive", 1), neg = im.attr_int("detect_negative", 1);
  im.set_output(
      0,
      im.op("isinf", {im.input(0)}, {{"detect_positive", int64_t(pos != 0)}, {"detect_negative", int64_t(neg != 0)}}),
      im.input_scalar(0));
}

void prelu(Importer& im) {
  same_dtypes(im);
  const DataType t = im.input_dtype(0);
  if (t.is_bool() || t.is_uint()) im.invalid("input type " + t.str() + " (PRelu takes signed types)");
  // Unidirectional: the slope broadcasts to X's shape, X keeps it.
  const std::vector<int64_t> x = im.input_shape(0), s = im.input_shape(1);
  bool fits = s.size() <= x.size();
  for (size_t i = 0; fits && i < s.size(); ++i) {
    int64_t d = s[s.size() - 1 - i];
    fits = d == 1 || d == x[x.size() - 1 - i];
  }
  if (!fits)
    im.invalid(fmt::format("slope of shape {} does not broadcast to X's shape {}", shape_str(s), shape_str(x)));
  im.set_output(0, im.op("prelu", {im.input(0), im.input(1)}), im.input_scalar(0));
}

void shrink(Importer& im) {
  const double lambd = im.attr_float("lambd", 0.5), bias = im.attr_float("bias", 0.0);
  if (im.input_dtype(0).is_bool()) im.invalid("input type bool");
  im.set_output(0, im.op("shrink", {im.input(0)}, {{"lambd", lambd}, {"bias", bias}}), im.input_scalar(0));
}

void swish(Importer& im) {
  check_types(im, Types::kFloat);
  const double alpha = im.attr_float("alpha", 1.0);
  im.set_output(0, im.op("swish", {im.input(0)}, {{"alpha", alpha}}), im.input_scalar(0));
}

}  // namespace

void add_logic_converters(std::map<std::string, Converter>& m) {
  m["Equal"] = binary("equal", Types::kAny);
  m["Less"] = binary("less", Types::kAny);
  m["Greater"] = binary("greater", Types::kAny);
  m["LessOrEqual"] = binary("less_equal", Types::kAny);
  m["GreaterOrEqual"] = binary("greater_equal", Types::kAny);
  m["And"] = binary("logical_and", Types::kBool);
  m["Or"] = binary("logical_or", Types::kBool);
  m["Xor"] = binary("logical_xor", Types::kBool);
  m["Not"] = unary("logical_not", Types::kBool);
  m["BitShift"] = bit_shift;
  m["BitwiseAnd"] = binary("bitwise_and", Types::kInteger);
  m["BitwiseOr"] = binary("bitwise_or", Types::kInteger);
  m["BitwiseXor"] = binary("bitwise_xor", Types::kInteger);
  m["BitwiseNot"] = unary("bitwise_not", Types::kInteger);
  m["Where"] = where;
  m["Max"] = variadic("maximum", false);
  m["Min"] = variadic("minimum", false);
  m["Sum"] = variadic("add", false);
  m["Mean"] = variadic("add", true);
  m["Mod"] = mod;
  m["IsNaN"] = unary("isnan", Types::kFloat);
  m["IsInf"] = isinf;
  m["Tan"] = unary("tan", Types::kFloat);
  m["Asin"] = unary("asin", Types::kFloat);
  m["Acos"] = unary("acos", Types::kFloat);
  m["Atan"] = unary("atan", Types::kFloat);
  m["Sinh"] = unary("sinh", Types::kFloat);
  m["Cosh"] = unary("cosh", Types::kFloat);
  m["Asinh"] = unary("asinh", Types::kFloat);
  m["Acosh"] = unary("acosh", Types::kFloat);
  m["Atanh"] = unary("atanh", Types::kFloat);
  m["PRelu"] = prelu;
  m["Shrink"] = shrink;
  m["Swish"] = swish;
}

}  // namespace loom::graph_opt::onnx_frontend
