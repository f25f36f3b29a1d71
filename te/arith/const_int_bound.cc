// Constant integer bounds by interval arithmetic, with saturation at ±infinity.
#include <algorithm>
#include <cstdlib>

#include "arith_internal.h"
#include "loom/te/intrinsics.h"

namespace loom::te::arith {
namespace {

constexpr int64_t kPos = ConstIntBound::kPosInf;
constexpr int64_t kNeg = ConstIntBound::kNegInf;

bool is_inf(int64_t x) { return x == kPos || x == kNeg; }
int sign(int64_t x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }

/// x + y, saturating; `tie` decides -inf + +inf.
int64_t sat_add(int64_t x, int64_t y, int64_t tie) {
  bool neg = x == kNeg || y == kNeg, pos = x == kPos || y == kPos;
  if (neg && pos) return tie;
  if (neg) return kNeg;
  if (pos) return kPos;
  int64_t r;
  if (__builtin_add_overflow(x, y, &r) || is_inf(r)) return x > 0 ? kPos : kNeg;
  return r;
}

int64_t sat_neg(int64_t x) {
  if (x == kNeg) return kPos;
  if (x == kPos) return kNeg;
  return -x;
}

int64_t sat_mul(int64_t x, int64_t y) {
  if (x == 0 || y == 0) return 0;
  int s = sign(x) * sign(y);
  if (is_inf(x) || is_inf(y)) return s > 0 ? kPos : kNeg;
  int64_t r;
  if (__builtin_mul_overflow(x, y, &r) || is_inf(r)) return s > 0 ? kPos : kNeg;
  return r;
}

int64_t div_corner(int64_t x, int64_t y, bool floor) {
  if (is_inf(y)) {
    if (is_inf(x)) return sign(x) * sign(y) > 0 ? kPos : kNeg;
    if (!floor || x == 0 || sign(x) == sign(y)) return 0;
    return -1;
  }
  if (is_inf(x)) return sign(x) * sign(y) > 0 ? kPos : kNeg;
  return floor ? floordiv_i64(x, y) : x / y;
}

Bound from_corners(int64_t c0, int64_t c1, int64_t c2, int64_t c3) {
  return {std::min({c0, c1, c2, c3}), std::max({c0, c1, c2, c3})};
}

int64_t abs_sat(int64_t x) { return x == kNeg ? kPos : std::llabs(x); }

Bound bound_div(const Bound& a, const Bound& b, bool floor) {
  if (b.min_value <= 0 && b.max_value >= 0) {
    // |a / b| <= |a| for any nonzero integer b.
    int64_t m = std::max(abs_sat(a.min_value), abs_sat(a.max_value));
    return {sat_neg(m), m};
  }
  return from_corners(div_corner(a.min_value, b.min_value, floor), div_corner(a.min_value, b.max_value, floor),
                      div_corner(a.max_value, b.min_value, floor), div_corner(a.max_value, b.max_value, floor));
}

Bound type_range(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_int() && t.bits() < 64) return {-(int64_t(1) << (t.bits() - 1)), (int64_t(1) << (t.bits() - 1)) - 1};
  if (t.is_uint() && t.bits() < 64) return {0, (int64_t(1) << t.bits()) - 1};
  if (t.is_uint()) return {0, kPos};
  return {kNeg, kPos};
}

}  // namespace

int64_t floordiv_i64(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floormod_i64(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Bound bound_const(int64_t v) { return {v, v}; }
Bound bound_everything(DataType t) { return type_range(t); }

Bound bound_add(const Bound& a, const Bound& b) {
  return {sat_add(a.min_value, b.min_value, kNeg), sat_add(a.max_value, b.max_value, kPos)};
}
Bound bound_neg(const Bound& a) { return {sat_neg(a.max_value), sat_neg(a.min_value)}; }
Bound bound_sub(const Bound& a, const Bound& b) { return bound_add(a, bound_neg(b)); }
Bound bound_mul(const Bound& a, const Bound& b) {
  return from_corners(sat_mul(a.min_value, b.min_value), sat_mul(a.min_value, b.max_value),
                      sat_mul(a.max_value, b.min_value), sat_mul(a.max_value, b.max_value));
}
Bound bound_mul_const(const Bound& a, int64_t c) { return bound_mul(a, bound_const(c)); }
Bound bound_union(const Bound& a, const Bound& b) {
  return {std::min(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
}
Bound bound_intersect(const Bound& a, const Bound& b) {
  return {std::max(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
}
Bound bound_truncdiv(const Bound& a, const Bound& b) { return bound_div(a, b, false); }
Bound bound_floordiv(const Bound& a, const Bound& b) { return bound_div(a, b, true); }

Bound bound_truncmod(const Bound& a, const Bound& b) {
  if (b.is_const() && b.min_value != 0 && !is_inf(b.min_value) && !is_inf(a.min_value) && !is_inf(a.max_value)) {
    int64_t c = b.min_value;
    if ((a.min_value >= 0 || a.max_value <= 0) && a.min_value / c == a.max_value / c)
      return {a.min_value % c, a.max_value % c};
  }
  int64_t m = std::max(abs_sat(b.min_value), abs_sat(b.max_value));
  if (m != kPos) m -= 1;
  if (a.min_value >= 0) return {0, std::min(a.max_value, m)};
  if (a.max_value <= 0) return {std::max(a.min_value, sat_neg(m)), 0};
  return {std::max(a.min_value, sat_neg(m)), std::min(a.max_value, m)};
}

Bound bound_floormod(const Bound& a, const Bound& b) {
  if (b.is_const() && b.min_value != 0 && !is_inf(b.min_value) && !is_inf(a.min_value) && !is_inf(a.max_value)) {
    int64_t c = b.min_value;
    if (floordiv_i64(a.min_value, c) == floordiv_i64(a.max_value, c))
      return {floormod_i64(a.min_value, c), floormod_i64(a.max_value, c)};
  }
  if (b.min_value > 0) {
    int64_t m = b.max_value == kPos ? kPos : b.max_value - 1;
    if (a.min_value >= 0) return {0, std::min(a.max_value, m)};
    return {0, m};
  }
  if (b.max_value < 0) return {b.min_value == kNeg ? kNeg : b.min_value + 1, 0};
  int64_t m = std::max(abs_sat(b.min_value), abs_sat(b.max_value));
  if (m != kPos) m -= 1;
  return {sat_neg(m), m};
}

// ---------------------------------------------------------------- analyzer
void BoundAnalyzer::bind(const Var& v, const Bound& b) { vars_[v.get()] = {v, b}; }
void BoundAnalyzer::unbind(const VarNode* v) { vars_.erase(v); }
std::optional<Bound> BoundAnalyzer::lookup(const VarNode* v) const {
  auto it = vars_.find(v);
  if (it == vars_.end()) return std::nullopt;
  return it->second.second;
}

Bound BoundAnalyzer::bound(const Expr& e) {
  if (!e.defined()) return {};
  return visit(e);
}

Bound BoundAnalyzer::visit(const Expr& e) {
  DataType t = e.dtype();
  if (!t.is_scalar() && e.kind() != ExprKind::Broadcast && e.kind() != ExprKind::Ramp) return type_range(t.element_of());
  if (t.is_float() || t.is_handle()) return {};
  auto bin = [&](auto* op) { return std::pair{visit(op->a), visit(op->b)}; };
  switch (e.kind()) {
    case ExprKind::IntImm: return bound_const(e.as<IntImmNode>()->value);
    case ExprKind::Var: {
      auto it = vars_.find(e.as<VarNode>());
      if (it != vars_.end()) return bound_intersect(it->second.second, type_range(t));
      return type_range(t);
    }
    case ExprKind::Add: { auto [a, b] = bin(e.as<AddNode>()); return bound_add(a, b); }
    case ExprKind::Sub: { auto [a, b] = bin(e.as<SubNode>()); return bound_sub(a, b); }
    case ExprKind::Mul: { auto [a, b] = bin(e.as<MulNode>()); return bound_mul(a, b); }
    case ExprKind::Div: { auto [a, b] = bin(e.as<DivNode>()); return bound_truncdiv(a, b); }
    case ExprKind::Mod: { auto [a, b] = bin(e.as<ModNode>()); return bound_truncmod(a, b); }
    case ExprKind::FloorDiv: { auto [a, b] = bin(e.as<FloorDivNode>()); return bound_floordiv(a, b); }
    case ExprKind::FloorMod: { auto [a, b] = bin(e.as<FloorModNode>()); return bound_floormod(a, b); }
    case ExprKind::Min: {
      auto [a, b] = bin(e.as<MinNode>());
      return {std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
    }
    case ExprKind::Max: {
      auto [a, b] = bin(e.as<MaxNode>());
      return {std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
    }
    case ExprKind::EQ: case ExprKind::NE: case ExprKind::LT: case ExprKind::LE:
    case ExprKind::GT: case ExprKind::GE: case ExprKind::And: case ExprKind::Or: case ExprKind::Not:
      return {0, 1};
    case ExprKind::Select: {
      auto* op = e.as<SelectNode>();
      return bound_union(visit(op->true_value), visit(op->false_value));
    }
    case ExprKind::Cast: {
      auto* op = e.as<CastNode>();
      Bound target = type_range(t);
      DataType from = op->value.dtype();
      if (!(from.is_int() || from.is_uint() || from.is_bool())) return target;
      Bound src = visit(op->value);
      if (src.min_value >= target.min_value && src.max_value <= target.max_value) return src;
      return target;
    }
    case ExprKind::Let: {
      auto* op = e.as<LetNode>();
      std::optional<Bound> saved = lookup(op->var.get());
      bind(op->var, op->value.dtype().is_float() ? Bound{} : visit(op->value));
      Bound r = visit(op->body);
      if (saved) bind(op->var, *saved); else unbind(op->var.get());
      return r;
    }
    case ExprKind::Call: {
      auto* op = e.as<CallNode>();
      if (op->name == te::intrin::kLikely && op->args.size() == 1) return visit(op->args[0]);
      return type_range(t);
    }
    case ExprKind::Broadcast: return visit(e.as<BroadcastNode>()->value);
    case ExprKind::Ramp: {
      auto* op = e.as<RampNode>();
      Bound base = visit(op->base);
      Bound last = bound_add(base, bound_mul_const(visit(op->stride), op->lanes - 1));
      return bound_union(base, last);
    }
    default:
      return type_range(t);
  }
}

}  // namespace loom::te::arith
