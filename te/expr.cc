// Expression construction: handles, constants, and the operators and helpers that build
// expressions (with type promotion and light constant folding).
#include "loom/te/expr.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include "loom/runtime/float16.h"
#include "loom/te/tensor.h"

namespace loom::te {

// ---------------------------------------------------------------- handles
Expr::Expr(int v) : Expr(make_const(DataType::Int(32), int64_t(v))) {}
Expr::Expr(int64_t v) : Expr(make_const(DataType::Int(64), v)) {}
Expr::Expr(float v) : Expr(make_const(DataType::Float(32), double(v))) {}
Expr::Expr(double v) : Expr(make_const(DataType::Float(32), v)) {}
Expr::Expr(const IterVar& iv) : Expr(iv.var()) {}

Var::Var(std::string name, DataType t) : Expr(std::make_shared<const VarNode>(std::move(name), t)) {}

IterVar::IterVar(Range dom, Var var, IterVarType type, std::string thread_tag)
    : node_(std::make_shared<const IterVarNode>(IterVarNode{std::move(dom), std::move(var), type, std::move(thread_tag)})) {}

Range Range::from_begin_end(Expr begin, Expr end) {
  Expr extent = end - begin;
  return Range(std::move(begin), std::move(extent));
}

// ---------------------------------------------------------------- constants
namespace {

/// Wraps an integer to the width of an int/uint type, as a C cast does.
int64_t wrap_int(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  int bits = t.bits();
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (t.is_int() && (u >> (bits - 1)) & 1) u |= ~mask;
  return int64_t(u);
}

double round_float(DataType t, double v) {
  if (t.bits() == 32) return double(float(v));
  if (t.bits() == 16) return double(runtime::half_to_float(runtime::float_to_half(float(v))));
  return v;
}

Expr splat(Expr e, int lanes) {
  if (lanes == 1) return e;
  return make<BroadcastNode>(std::move(e), lanes);
}

}  // namespace

Expr make_const(DataType t, int64_t v) {
  DataType s = t.element_of();
  Expr c;
  if (s.is_float()) {
    c = make<FloatImmNode>(s, round_float(s, double(v)));
  } else {
    LOOM_CHECK(s.is_integer() || s.is_bool(), "make_const: cannot make a constant of type {}", t.str());
    c = make<IntImmNode>(s, wrap_int(s, v));
  }
  return splat(std::move(c), t.lanes());
}

Expr make_const(DataType t, double v) {
  DataType s = t.element_of();
  if (!s.is_float()) {
    LOOM_CHECK(std::isfinite(v), "make_const: {} does not fit type {}", v, t.str());
    if (s.is_bool()) return make_const(t, int64_t(v != 0));
    return make_const(t, int64_t(v));
  }
  return splat(make<FloatImmNode>(s, round_float(s, v)), t.lanes());
}

Expr make_zero(DataType t) {
  if (t.is_float()) return make_const(t, 0.0);
  return make_const(t, int64_t(0));
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (auto* b = e.as<BroadcastNode>()) return as_const_int(b->value);
  if (auto* i = e.as<IntImmNode>()) return i->value;
  return std::nullopt;
}

std::optional<double> as_const_float(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (auto* b = e.as<BroadcastNode>()) return as_const_float(b->value);
  if (auto* f = e.as<FloatImmNode>()) return f->value;
  return std::nullopt;
}

// ---------------------------------------------------------------- type promotion
namespace {

bool is_const(const Expr& e) { return as_const_int(e) || as_const_float(e); }

DataType wider_integer(DataType a, DataType b) {
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
  return a.is_int() ? a : b;  // int wins over uint of the same width
}

/// Makes both operands the same type, as TVM's BinaryOpMatchTypes: a scalar is broadcast
/// to the other's lanes, a constant takes the type of the other operand, and of two
/// integers (or bools) the wider type wins. Two non-constant operands that differ in a
/// floating-point type (float32 and int32, float32 and float64) are an error, as te::ops
/// has it: the user says which type is meant with te::cast.
void match_types(Expr& a, Expr& b, const char* op) {
  LOOM_CHECK(a.defined() && b.defined(), "operator {}: an operand is undefined", op);
  DataType ta = a.dtype(), tb = b.dtype();
  if (ta == tb) return;
  if (ta.lanes() != tb.lanes()) {
    if (ta.lanes() == 1) {
      a = make<BroadcastNode>(a, tb.lanes());
    } else if (tb.lanes() == 1) {
      b = make<BroadcastNode>(b, ta.lanes());
    } else {
      fail("operator {}: lanes do not match ({} vs {}) in {} and {}", op, ta.str(), tb.str(), to_string(a), to_string(b));
    }
    ta = a.dtype();
    tb = b.dtype();
    if (ta == tb) return;
  }
  LOOM_CHECK(!ta.is_handle() && !tb.is_handle(), "operator {}: cannot combine {} and {}", op, ta.str(), tb.str());
  LOOM_CHECK(!(ta.is_float() || tb.is_float()) || is_const(a) || is_const(b),
             "operator {}: operands have different types, {} ({}) and {} ({}); cast one with te::cast", op, ta.str(),
             to_string(a), tb.str(), to_string(b));
  if (ta.is_float() && !tb.is_float()) {
    b = cast(ta, b);
  } else if (tb.is_float() && !ta.is_float()) {
    a = cast(tb, a);
  } else if (is_const(a) && !is_const(b)) {
    a = cast(tb, a);
  } else if (is_const(b) && !is_const(a)) {
    b = cast(ta, b);
  } else if (ta.is_float()) {
    DataType t = ta.bits() >= tb.bits() ? ta : tb;
    a = cast(t, a);
    b = cast(t, b);
  } else {
    DataType t = wider_integer(ta, tb);
    a = cast(t, a);
    b = cast(t, b);
  }
}

Expr to_bool(Expr e) {
  if (e.dtype().is_bool()) return e;
  return e != make_zero(e.dtype());
}

// Folding: both operands constant.
template <typename FI, typename FF>
Expr fold(const Expr& a, const Expr& b, DataType result, FI fi, FF ff) {
  if (a.dtype().is_float()) {
    auto x = as_const_float(a), y = as_const_float(b);
    if (x && y) return make_const(result, ff(*x, *y));
  } else {
    auto x = as_const_int(a), y = as_const_int(b);
    if (x && y) return make_const(result, fi(*x, *y));
  }
  return Expr();
}

bool is_const_value(const Expr& e, double v) {
  if (auto i = as_const_int(e)) return double(*i) == v;
  if (auto f = as_const_float(e)) return *f == v;
  return false;
}

int64_t floor_div_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod_int(int64_t a, int64_t b) { return a - floor_div_int(a, b) * b; }

}  // namespace

// ---------------------------------------------------------------- arithmetic
Expr operator+(Expr a, Expr b) {
  match_types(a, b, "+");
  DataType t = a.dtype();
  if (Expr r = fold(a, b, t, [](int64_t x, int64_t y) { return int64_t(uint64_t(x) + uint64_t(y)); },
                    [](double x, double y) { return x + y; }); r.defined())
    return r;
  if (is_const_value(b, 0)) return a;
  if (is_const_value(a, 0)) return b;
  return make<AddNode>(t, a, b);
}

Expr operator-(Expr a, Expr b) {
  match_types(a, b, "-");
  DataType t = a.dtype();
  if (Expr r = fold(a, b, t, [](int64_t x, int64_t y) { return int64_t(uint64_t(x) - uint64_t(y)); },
                    [](double x, double y) { return x - y; }); r.defined())
    return r;
  if (is_const_value(b, 0)) return a;
  return make<SubNode>(t, a, b);
}

Expr operator*(Expr a, Expr b) {
  match_types(a, b, "*");
  DataType t = a.dtype();
  if (Expr r = fold(a, b, t, [](int64_t x, int64_t y) { return int64_t(uint64_t(x) * uint64_t(y)); },
                    [](double x, double y) { return x * y; }); r.defined())
    return r;
  if (is_const_value(b, 1)) return a;
  if (is_const_value(a, 1)) return b;
  if (!t.is_float() && (is_const_value(a, 0) || is_const_value(b, 0))) return make_zero(t);
  return make<MulNode>(t, a, b);
}

Expr truncdiv(Expr a, Expr b) {
  match_types(a, b, "/");
  DataType t = a.dtype();
  if (!t.is_float() && is_const_value(b, 0)) fail("division by zero in {} / {}", to_string(a), to_string(b));
  if (Expr r = fold(a, b, t, [](int64_t x, int64_t y) { return x / y; }, [](double x, double y) { return x / y; });
      r.defined())
    return r;
  if (is_const_value(b, 1)) return a;
  return make<DivNode>(t, a, b);
}

Expr truncmod(Expr a, Expr b) {
  match_types(a, b, "%");
  DataType t = a.dtype();
  if (!t.is_float() && is_const_value(b, 0)) fail("modulo by zero in {} % {}", to_string(a), to_string(b));
  if (Expr r = fold(a, b, t, [](int64_t x, int64_t y) { return x % y; },
                    [](double x, double y) { return std::fmod(x, y); }); r.defined())
    return r;
  if (!t.is_float() && is_const_value(b, 1)) return make_zero(t);
  return make<ModNode>(t, a, b);
}

Expr operator/(Expr a, Expr b) { return truncdiv(std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return truncmod(std::move(a), std::move(b)); }

Expr floordiv(Expr a, Expr b) {
  match_types(a, b, "floordiv");
  DataType t = a.dtype();
  if (!t.is_float() && is_const_value(b, 0)) fail("division by zero in floordiv({}, {})", to_string(a), to_string(b));
  if (Expr r = fold(a, b, t, floor_div_int, [](double x, double y) { return std::floor(x / y); }); r.defined())
    return r;
  if (!t.is_float() && is_const_value(b, 1)) return a;
  return make<FloorDivNode>(t, a, b);
}

Expr floormod(Expr a, Expr b) {
  match_types(a, b, "floormod");
  DataType t = a.dtype();
  if (!t.is_float() && is_const_value(b, 0)) fail("modulo by zero in floormod({}, {})", to_string(a), to_string(b));
  if (Expr r = fold(a, b, t, floor_mod_int, [](double x, double y) { return x - std::floor(x / y) * y; });
      r.defined())
    return r;
  if (!t.is_float() && is_const_value(b, 1)) return make_zero(t);
  return make<FloorModNode>(t, a, b);
}

Expr operator-(Expr a) {
  LOOM_CHECK(a.defined(), "unary -: operand is undefined");
  if (auto i = as_const_int(a)) return make_const(a.dtype(), int64_t(0 - uint64_t(*i)));
  if (auto f = as_const_float(a)) return make_const(a.dtype(), -*f);
  return make_zero(a.dtype()) - a;
}

Expr min(Expr a, Expr b) {
  match_types(a, b, "min");
  DataType t = a.dtype();
  if (Expr r = fold(a, b, t, [](int64_t x, int64_t y) { return std::min(x, y); },
                    [](double x, double y) { return std::min(x, y); }); r.defined())
    return r;
  if (a.same_as(b)) return a;
  return make<MinNode>(t, a, b);
}

Expr max(Expr a, Expr b) {
  match_types(a, b, "max");
  DataType t = a.dtype();
  if (Expr r = fold(a, b, t, [](int64_t x, int64_t y) { return std::max(x, y); },
                    [](double x, double y) { return std::max(x, y); }); r.defined())
    return r;
  if (a.same_as(b)) return a;
  return make<MaxNode>(t, a, b);
}

// ---------------------------------------------------------------- comparisons and logic
namespace {
template <typename Node, typename Cmp>
Expr compare(Expr a, Expr b, const char* op, Cmp cmp) {
  match_types(a, b, op);
  DataType t = DataType::Bool(a.dtype().lanes());
  if (Expr r = fold(a, b, t, [&](int64_t x, int64_t y) { return int64_t(cmp(x, y)); },
                    [&](double x, double y) { return double(cmp(x, y)); }); r.defined())
    return r;
  return make<Node>(t, a, b);
}
}  // namespace

Expr operator==(Expr a, Expr b) { return compare<EQNode>(a, b, "==", [](auto x, auto y) { return x == y; }); }
Expr operator!=(Expr a, Expr b) { return compare<NENode>(a, b, "!=", [](auto x, auto y) { return x != y; }); }
Expr operator<(Expr a, Expr b) { return compare<LTNode>(a, b, "<", [](auto x, auto y) { return x < y; }); }
Expr operator<=(Expr a, Expr b) { return compare<LENode>(a, b, "<=", [](auto x, auto y) { return x <= y; }); }
Expr operator>(Expr a, Expr b) { return compare<GTNode>(a, b, ">", [](auto x, auto y) { return x > y; }); }
Expr operator>=(Expr a, Expr b) { return compare<GENode>(a, b, ">=", [](auto x, auto y) { return x >= y; }); }

Expr operator&&(Expr a, Expr b) {
  LOOM_CHECK(a.defined() && b.defined(), "operator &&: an operand is undefined");
  a = to_bool(a);
  b = to_bool(b);
  match_types(a, b, "&&");
  auto x = as_const_int(a), y = as_const_int(b);
  if (x) return *x ? b : a;
  if (y) return *y ? a : b;
  return make<AndNode>(a.dtype(), a, b);
}

Expr operator||(Expr a, Expr b) {
  LOOM_CHECK(a.defined() && b.defined(), "operator ||: an operand is undefined");
  a = to_bool(a);
  b = to_bool(b);
  match_types(a, b, "||");
  auto x = as_const_int(a), y = as_const_int(b);
  if (x) return *x ? a : b;
  if (y) return *y ? b : a;
  return make<OrNode>(a.dtype(), a, b);
}

Expr operator!(Expr a) {
  LOOM_CHECK(a.defined(), "operator !: operand is undefined");
  a = to_bool(a);
  if (auto x = as_const_int(a)) return make_const(a.dtype(), int64_t(!*x));
  if (auto* n = a.as<NotNode>()) return n->a;
  return make<NotNode>(a);
}

Expr select(Expr cond, Expr t, Expr f) {
  LOOM_CHECK(cond.defined() && t.defined() && f.defined(), "select: an operand is undefined");
  cond = to_bool(cond);
  match_types(t, f, "select");
  if (cond.dtype().lanes() != 1 && cond.dtype().lanes() != t.dtype().lanes()) {
    LOOM_CHECK(t.dtype().lanes() == 1, "select: condition has {} lanes but values have {}", cond.dtype().lanes(),
               t.dtype().lanes());
    t = make<BroadcastNode>(t, cond.dtype().lanes());
    f = make<BroadcastNode>(f, cond.dtype().lanes());
  }
  if (auto c = as_const_int(cond)) return *c ? t : f;
  return make<SelectNode>(cond, t, f);
}

Expr cast(DataType t, Expr v) {
  LOOM_CHECK(v.defined(), "cast to {}: operand is undefined", t.str());
  if (v.dtype() == t) return v;
  if (t.lanes() != v.dtype().lanes()) {
    LOOM_CHECK(v.dtype().lanes() == 1, "cast: cannot cast {} to {}", v.dtype().str(), t.str());
    return make<BroadcastNode>(cast(t.element_of(), v), t.lanes());
  }
  if (auto* b = v.as<BroadcastNode>()) return make<BroadcastNode>(cast(t.element_of(), b->value), b->lanes);
  if (auto i = as_const_int(v)) {
    if (v.dtype().is_uint() && v.dtype().bits() == 64 && t.is_float()) return make_const(t, double(uint64_t(*i)));
    return make_const(t, *i);
  }
  if (auto f = as_const_float(v)) {
    if (t.is_float()) return make_const(t, *f);
    if (t.is_bool()) return make_const(t, int64_t(*f != 0));
    if (std::isfinite(*f) && std::fabs(*f) < 9.2e18) return make_const(t, int64_t(*f));
  }
  return make<CastNode>(t, v);
}

// ---------------------------------------------------------------- intrinsics
namespace {
Expr float_call(const char* name, Expr x) {
  LOOM_CHECK(x.defined(), "{}: operand is undefined", name);
  if (!x.dtype().is_float()) x = cast(DataType::Float(32, x.dtype().lanes()), x);
  return make<CallNode>(x.dtype(), name, std::vector<Expr>{x});
}
}  // namespace

Expr exp(Expr x) { return float_call("exp", std::move(x)); }
Expr log(Expr x) { return float_call("log", std::move(x)); }
Expr sqrt(Expr x) { return float_call("sqrt", std::move(x)); }
Expr tanh(Expr x) { return float_call("tanh", std::move(x)); }
Expr sigmoid(Expr x) { return float_call("sigmoid", std::move(x)); }
Expr erf(Expr x) { return float_call("erf", std::move(x)); }

Expr abs(Expr x) {
  LOOM_CHECK(x.defined(), "abs: operand is undefined");
  DataType t = x.dtype();
  if (t.is_float()) {
    if (auto f = as_const_float(x)) return make_const(t, std::fabs(*f));
    return make<CallNode>(t, "fabs", std::vector<Expr>{x});
  }
  if (t.is_int()) {
    if (auto i = as_const_int(x)) return make_const(t, *i < 0 ? int64_t(0 - uint64_t(*i)) : *i);
    return select(x < make_zero(t), -x, x);
  }
  return x;
}

namespace {
Expr rounding_call(const char* name, Expr x) {
  LOOM_CHECK(x.defined(), "{}: operand is undefined", name);
  if (!x.dtype().is_float()) return x;
  return make<CallNode>(x.dtype(), name, std::vector<Expr>{x});
}
}  // namespace

Expr floor(Expr x) { return rounding_call("floor", std::move(x)); }
Expr ceil(Expr x) { return rounding_call("ceil", std::move(x)); }
Expr round(Expr x) { return rounding_call("round", std::move(x)); }

Expr pow(Expr x, Expr y) {
  match_types(x, y, "pow");
  if (!x.dtype().is_float()) {
    DataType t = DataType::Float(32, x.dtype().lanes());
    x = cast(t, x);
    y = cast(t, y);
  }
  return make<CallNode>(x.dtype(), "pow", std::vector<Expr>{x, y});
}

Expr call(DataType t, const std::string& name, std::vector<Expr> args) {
  return make<CallNode>(t, name, std::move(args));
}

Expr max_value(DataType t) {
  DataType s = t.element_of();
  Expr c;
  if (s.is_int()) {
    c = make_const(s, s.bits() >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (s.bits() - 1)) - 1);
  } else if (s.is_uint()) {
    c = make<IntImmNode>(s, s.bits() >= 64 ? int64_t(-1) : int64_t((uint64_t(1) << s.bits()) - 1));
  } else if (s.is_bool()) {
    c = make_const(s, int64_t(1));
  } else if (s.is_float()) {
    double v = s.bits() == 16 ? 65504.0 : s.bits() == 32 ? double(FLT_MAX) : DBL_MAX;
    c = make<FloatImmNode>(s, v);
  } else {
    fail("max_value: no largest value for type {}", t.str());
  }
  return splat(c, t.lanes());
}

Expr min_value(DataType t) {
  DataType s = t.element_of();
  Expr c;
  if (s.is_int()) {
    c = make_const(s, s.bits() >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (s.bits() - 1)));
  } else if (s.is_uint() || s.is_bool()) {
    c = make_const(s, int64_t(0));
  } else if (s.is_float()) {
    double v = s.bits() == 16 ? -65504.0 : s.bits() == 32 ? -double(FLT_MAX) : -DBL_MAX;
    c = make<FloatImmNode>(s, v);
  } else {
    fail("min_value: no smallest value for type {}", t.str());
  }
  return splat(c, t.lanes());
}

}  // namespace loom::te
