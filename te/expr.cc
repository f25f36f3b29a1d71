// Expression construction (with type promotion and light constant folding), structural
// equality and hashing, and printing.
#include "loom/te/expr.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <sstream>
#include <unordered_map>

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

// ---------------------------------------------------------------- structural equality
namespace {

bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }

template <ExprKind K>
const BinaryNode<K>* as_bin(const ExprNode* n) {
  return static_cast<const BinaryNode<K>*>(n);
}

/// Operands of a binary node, whichever kind it is.
std::pair<const Expr*, const Expr*> binary_operands(const ExprNode* n) {
#define LOOM_BIN_CASE(K) \
  case ExprKind::K: return {&as_bin<ExprKind::K>(n)->a, &as_bin<ExprKind::K>(n)->b};
  switch (n->kind) {
    LOOM_BIN_CASE(Add) LOOM_BIN_CASE(Sub) LOOM_BIN_CASE(Mul) LOOM_BIN_CASE(Div) LOOM_BIN_CASE(Mod)
    LOOM_BIN_CASE(FloorDiv) LOOM_BIN_CASE(FloorMod) LOOM_BIN_CASE(Min) LOOM_BIN_CASE(Max)
    LOOM_BIN_CASE(EQ) LOOM_BIN_CASE(NE) LOOM_BIN_CASE(LT) LOOM_BIN_CASE(LE) LOOM_BIN_CASE(GT)
    LOOM_BIN_CASE(GE) LOOM_BIN_CASE(And) LOOM_BIN_CASE(Or)
    default: break;
  }
#undef LOOM_BIN_CASE
  LOOM_ICHECK(false);
  return {nullptr, nullptr};
}

bool same_tensor(const std::shared_ptr<const TensorNode>& a, const std::shared_ptr<const TensorNode>& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->op == b->op && a->value_index == b->value_index;
}

/// Structural comparison. Free variables compare by identity; variables bound inside the
/// expressions (by a Let or a reducer) compare by position.
class EqualChecker {
 public:
  bool eq(const Expr& a, const Expr& b) {
    if (a.same_as(b)) return true;
    if (!a.defined() || !b.defined()) return false;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    const ExprNode* x = a.get();
    const ExprNode* y = b.get();
    if (is_binary(x->kind)) {
      auto [xa, xb] = binary_operands(x);
      auto [ya, yb] = binary_operands(y);
      return eq(*xa, *ya) && eq(*xb, *yb);
    }
    switch (x->kind) {
      case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
      case ExprKind::FloatImm: {
        double u = a.as<FloatImmNode>()->value, v = b.as<FloatImmNode>()->value;
        return u == v || (std::isnan(u) && std::isnan(v));
      }
      case ExprKind::StringImm: return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value;
      case ExprKind::Var: return eq_var(a.as<VarNode>(), b.as<VarNode>());
      case ExprKind::Not: return eq(a.as<NotNode>()->a, b.as<NotNode>()->a);
      case ExprKind::Select: {
        auto *p = a.as<SelectNode>(), *q = b.as<SelectNode>();
        return eq(p->cond, q->cond) && eq(p->true_value, q->true_value) && eq(p->false_value, q->false_value);
      }
      case ExprKind::Cast: return eq(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case ExprKind::Call: {
        auto *p = a.as<CallNode>(), *q = b.as<CallNode>();
        return p->name == q->name && eq_array(p->args, q->args);
      }
      case ExprKind::Let: {
        auto *p = a.as<LetNode>(), *q = b.as<LetNode>();
        if (!eq(p->value, q->value)) return false;
        bound_.emplace_back(p->var.get(), q->var.get());
        bool r = eq(p->body, q->body);
        bound_.pop_back();
        return r;
      }
      case ExprKind::ProducerLoad: {
        auto *p = a.as<ProducerLoadNode>(), *q = b.as<ProducerLoadNode>();
        return same_tensor(p->producer, q->producer) && eq_array(p->indices, q->indices);
      }
      case ExprKind::Reduce: return eq_reduce(a.as<ReduceNode>(), b.as<ReduceNode>());
      case ExprKind::Load: {
        auto *p = a.as<LoadNode>(), *q = b.as<LoadNode>();
        return eq_var(p->buffer_var.get(), q->buffer_var.get()) && eq(p->index, q->index) &&
               eq_opt(p->predicate, q->predicate);
      }
      case ExprKind::Ramp: {
        auto *p = a.as<RampNode>(), *q = b.as<RampNode>();
        return p->lanes == q->lanes && eq(p->base, q->base) && eq(p->stride, q->stride);
      }
      case ExprKind::Broadcast: {
        auto *p = a.as<BroadcastNode>(), *q = b.as<BroadcastNode>();
        return p->lanes == q->lanes && eq(p->value, q->value);
      }
      default: break;
    }
    LOOM_ICHECK(false);
    return false;
  }

 private:
  bool eq_var(const VarNode* a, const VarNode* b) {
    if (!a || !b) return a == b;
    for (auto it = bound_.rbegin(); it != bound_.rend(); ++it) {
      if (it->first == a || it->second == b) return it->first == a && it->second == b;
    }
    return a == b;
  }
  bool eq_opt(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return eq(a, b);
  }
  bool eq_array(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!eq_opt(a[i], b[i])) return false;
    return true;
  }
  bool eq_combiner(const CommReducer& a, const CommReducer& b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->lhs.size() != b->lhs.size() || a->rhs.size() != b->rhs.size()) return false;
    if (!eq_array(a->identity, b->identity)) return false;
    size_t mark = bound_.size();
    for (size_t i = 0; i < a->lhs.size(); ++i) bound_.emplace_back(a->lhs[i].get(), b->lhs[i].get());
    for (size_t i = 0; i < a->rhs.size(); ++i) bound_.emplace_back(a->rhs[i].get(), b->rhs[i].get());
    bool r = eq_array(a->result, b->result);
    bound_.resize(mark);
    return r;
  }
  bool eq_reduce(const ReduceNode* a, const ReduceNode* b) {
    if (a->value_index != b->value_index || a->axis.size() != b->axis.size()) return false;
    for (size_t i = 0; i < a->axis.size(); ++i)
      if (a->axis[i] != b->axis[i]) return false;
    return eq_combiner(a->combiner, b->combiner) && eq_array(a->source, b->source) &&
           eq_opt(a->condition, b->condition) && eq_array(a->init, b->init);
  }

  std::vector<std::pair<const VarNode*, const VarNode*>> bound_;
};

inline size_t hash_combine(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }

class Hasher {
 public:
  size_t hash(const Expr& e) {
    if (!e.defined()) return 0x51ed27;
    size_t h = hash_combine(size_t(e.kind()) * 1000003u, std::hash<uint64_t>()(
        uint64_t(e.dtype().code()) | (uint64_t(e.dtype().bits()) << 8) | (uint64_t(e.dtype().lanes()) << 16)));
    const ExprNode* n = e.get();
    if (is_binary(n->kind)) {
      auto [a, b] = binary_operands(n);
      return hash_combine(hash_combine(h, hash(*a)), hash(*b));
    }
    switch (n->kind) {
      case ExprKind::IntImm: return hash_combine(h, std::hash<int64_t>()(e.as<IntImmNode>()->value));
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        if (v == 0) v = 0;  // -0.0 equals 0.0
        return hash_combine(h, std::isnan(v) ? 7 : std::hash<double>()(v));
      }
      case ExprKind::StringImm: return hash_combine(h, std::hash<std::string>()(e.as<StringImmNode>()->value));
      case ExprKind::Var: return hash_combine(h, hash_var(e.as<VarNode>()));
      case ExprKind::Not: return hash_combine(h, hash(e.as<NotNode>()->a));
      case ExprKind::Select: {
        auto* p = e.as<SelectNode>();
        return hash_combine(hash_combine(hash_combine(h, hash(p->cond)), hash(p->true_value)), hash(p->false_value));
      }
      case ExprKind::Cast: return hash_combine(h, hash(e.as<CastNode>()->value));
      case ExprKind::Call: {
        auto* p = e.as<CallNode>();
        return hash_array(hash_combine(h, std::hash<std::string>()(p->name)), p->args);
      }
      case ExprKind::Let: {
        auto* p = e.as<LetNode>();
        h = hash_combine(h, hash(p->value));
        bound_.push_back(p->var.get());
        h = hash_combine(h, hash(p->body));
        bound_.pop_back();
        return h;
      }
      case ExprKind::ProducerLoad: {
        auto* p = e.as<ProducerLoadNode>();
        size_t t = p->producer ? hash_combine(std::hash<const void*>()(p->producer->op.get()), size_t(p->producer->value_index)) : 0;
        return hash_array(hash_combine(h, t), p->indices);
      }
      case ExprKind::Reduce: {
        auto* p = e.as<ReduceNode>();
        h = hash_combine(h, size_t(p->value_index));
        for (auto& iv : p->axis) h = hash_combine(h, std::hash<const void*>()(iv.get()));
        if (p->combiner) {
          h = hash_array(h, p->combiner->identity);
          size_t mark = bound_.size();
          for (auto& v : p->combiner->lhs) bound_.push_back(v.get());
          for (auto& v : p->combiner->rhs) bound_.push_back(v.get());
          h = hash_array(h, p->combiner->result);
          bound_.resize(mark);
        }
        h = hash_array(h, p->source);
        h = hash_combine(h, hash(p->condition));
        return hash_array(h, p->init);
      }
      case ExprKind::Load: {
        auto* p = e.as<LoadNode>();
        h = hash_combine(h, hash_var(p->buffer_var.get()));
        return hash_combine(hash_combine(h, hash(p->index)), hash(p->predicate));
      }
      case ExprKind::Ramp: {
        auto* p = e.as<RampNode>();
        return hash_combine(hash_combine(hash_combine(h, hash(p->base)), hash(p->stride)), size_t(p->lanes));
      }
      case ExprKind::Broadcast: {
        auto* p = e.as<BroadcastNode>();
        return hash_combine(hash_combine(h, hash(p->value)), size_t(p->lanes));
      }
      default: break;
    }
    LOOM_ICHECK(false);
    return h;
  }

 private:
  size_t hash_var(const VarNode* v) {
    for (size_t i = bound_.size(); i-- > 0;)
      if (bound_[i] == v) return hash_combine(0xb0b, i);
    return std::hash<const void*>()(v);
  }
  size_t hash_array(size_t h, const std::vector<Expr>& a) {
    h = hash_combine(h, a.size());
    for (auto& e : a) h = hash_combine(h, hash(e));
    return h;
  }
  std::vector<const VarNode*> bound_;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) { return EqualChecker().eq(a, b); }
size_t structural_hash(const Expr& e) { return Hasher().hash(e); }

// ---------------------------------------------------------------- printing
namespace {

const char* binary_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add: return " + ";
    case ExprKind::Sub: return " - ";
    case ExprKind::Mul: return "*";
    case ExprKind::Div: return " / ";
    case ExprKind::Mod: return " % ";
    case ExprKind::EQ: return " == ";
    case ExprKind::NE: return " != ";
    case ExprKind::LT: return " < ";
    case ExprKind::LE: return " <= ";
    case ExprKind::GT: return " > ";
    case ExprKind::GE: return " >= ";
    case ExprKind::And: return " && ";
    case ExprKind::Or: return " || ";
    default: return nullptr;
  }
}

const char* binary_function(ExprKind k) {
  switch (k) {
    case ExprKind::FloorDiv: return "floordiv";
    case ExprKind::FloorMod: return "floormod";
    case ExprKind::Min: return "min";
    case ExprKind::Max: return "max";
    default: return nullptr;
  }
}

/// "sum", "prod", "max", "min" for the built-in reducers, else "" (printed generically).
std::string reducer_name(const CommReducer& c) {
  if (!c || c->result.size() != 1 || c->lhs.size() != 1 || c->rhs.size() != 1) return "";
  const Expr& r = c->result[0];
  const ExprNode* n = r.get();
  if (!n || !is_binary(n->kind)) return "";
  auto [a, b] = binary_operands(n);
  if (!a->same_as(c->lhs[0]) || !b->same_as(c->rhs[0])) return "";
  switch (n->kind) {
    case ExprKind::Add: return "sum";
    case ExprKind::Mul: return "prod";
    case ExprKind::Max: return "max";
    case ExprKind::Min: return "min";
    default: return "";
  }
}

std::string float_text(DataType t, double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  if (t.bits() == 32) return fmt::format("{}f", float(v));
  return fmt::format("{}({})", t.str(), v);
}

class Printer {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}

  void print(const Expr& e, bool top = false) {
    if (!e.defined()) {
      os_ << "<undefined>";
      return;
    }
    const ExprNode* n = e.get();
    if (const char* sym = binary_symbol(n->kind)) {
      auto [a, b] = binary_operands(n);
      if (!top) os_ << '(';
      print(*a);
      os_ << sym;
      print(*b);
      if (!top) os_ << ')';
      return;
    }
    if (const char* fn = binary_function(n->kind)) {
      auto [a, b] = binary_operands(n);
      os_ << fn << '(';
      print(*a, true);
      os_ << ", ";
      print(*b, true);
      os_ << ')';
      return;
    }
    switch (n->kind) {
      case ExprKind::IntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        DataType t = e.dtype();
        if (t.is_bool()) os_ << (v ? "true" : "false");
        else if (t == DataType::Int(32)) os_ << v;
        else if (t.is_uint() && t.bits() == 64) os_ << t.str() << '(' << uint64_t(v) << ')';
        else os_ << t.str() << '(' << v << ')';
        return;
      }
      case ExprKind::FloatImm: os_ << float_text(e.dtype(), e.as<FloatImmNode>()->value); return;
      case ExprKind::StringImm: os_ << '"' << e.as<StringImmNode>()->value << '"'; return;
      case ExprKind::Var: os_ << e.as<VarNode>()->name; return;
      case ExprKind::Not: os_ << '!'; print(e.as<NotNode>()->a); return;
      case ExprKind::Select: {
        auto* p = e.as<SelectNode>();
        os_ << "select(";
        print(p->cond, true);
        os_ << ", ";
        print(p->true_value, true);
        os_ << ", ";
        print(p->false_value, true);
        os_ << ')';
        return;
      }
      case ExprKind::Cast: os_ << e.dtype().str() << '('; print(e.as<CastNode>()->value, true); os_ << ')'; return;
      case ExprKind::Call: {
        auto* p = e.as<CallNode>();
        os_ << p->name << '(';
        print_list(p->args);
        os_ << ')';
        return;
      }
      case ExprKind::Let: {
        auto* p = e.as<LetNode>();
        os_ << "(let " << p->var.name() << " = ";
        print(p->value, true);
        os_ << " in ";
        print(p->body, true);
        os_ << ')';
        return;
      }
      case ExprKind::ProducerLoad: {
        auto* p = e.as<ProducerLoadNode>();
        os_ << tensor_name(p->producer) << '[';
        print_list(p->indices);
        os_ << ']';
        return;
      }
      case ExprKind::Reduce: print_reduce(e.as<ReduceNode>()); return;
      case ExprKind::Load: {
        auto* p = e.as<LoadNode>();
        os_ << (p->buffer_var.defined() ? p->buffer_var.name() : "<buffer>") << '[';
        print(p->index, true);
        os_ << ']';
        if (p->predicate.defined() && !is_one(p->predicate)) {
          os_ << " if ";
          print(p->predicate);
        }
        return;
      }
      case ExprKind::Ramp: {
        auto* p = e.as<RampNode>();
        os_ << "ramp(";
        print(p->base, true);
        os_ << ", ";
        print(p->stride, true);
        os_ << ", " << p->lanes << ')';
        return;
      }
      case ExprKind::Broadcast: {
        auto* p = e.as<BroadcastNode>();
        os_ << 'x' << p->lanes << '(';
        print(p->value, true);
        os_ << ')';
        return;
      }
      default: break;
    }
    os_ << "<unknown expr>";
  }

 private:
  static std::string tensor_name(const std::shared_ptr<const TensorNode>& t) {
    if (!t || !t->op) return "<tensor>";
    if (t->op->num_outputs() > 1) return fmt::format("{}.v{}", t->op->name, t->value_index);
    return t->op->name;
  }

  void print_list(const std::vector<Expr>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) os_ << ", ";
      print(v[i], true);
    }
  }

  void print_reduce(const ReduceNode* p) {
    std::string name = reducer_name(p->combiner);
    if (!name.empty() && p->source.size() == 1) {
      os_ << name << '(';
      print(p->source[0], true);
    } else {
      os_ << "reduce(";
      if (p->combiner) {
        os_ << "combiner=[";
        print_list(p->combiner->result);
        os_ << "], ";
      }
      os_ << "source=[";
      print_list(p->source);
      os_ << ']';
    }
    os_ << ", axis=[";
    for (size_t i = 0; i < p->axis.size(); ++i) os_ << (i ? ", " : "") << p->axis[i].name();
    os_ << ']';
    if (p->condition.defined() && !is_one(p->condition)) {
      os_ << ", where=";
      print(p->condition, true);
    }
    if (p->source.size() > 1) os_ << ", value_index=" << p->value_index;
    os_ << ')';
  }

  std::ostream& os_;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  Printer(os).print(e);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  Printer(os).print(e);
  return os;
}

}  // namespace loom::te
