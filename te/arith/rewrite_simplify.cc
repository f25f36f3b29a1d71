// The simplifier: constant folding, canonical linear sums, and div/mod/min/max/comparison
// rules decided by constant bounds. One bottom-up pass; every rule receives simplified
// operands and returns a simplified result, so no fixed-point iteration is needed.
#include <numeric>

#include "arith_internal.h"
#include "loom/te/intrinsics.h"

namespace loom::te::arith {
namespace {

bool is_value(const Expr& e, double v) {
  if (auto* i = e.as<IntImmNode>()) return double(i->value) == v;
  if (auto* f = e.as<FloatImmNode>()) return f->value == v;
  return false;
}

bool finite(const Bound& b) { return b.min_value != Bound::kNegInf && b.max_value != Bound::kPosInf; }

/// The k with b inside [k*c, (k+1)*c), if there is one.
std::optional<int64_t> single_period(const Bound& b, int64_t c) {
  if (!finite(b)) return std::nullopt;
  int64_t lo = floordiv_i64(b.min_value, c), hi = floordiv_i64(b.max_value, c);
  if (lo != hi) return std::nullopt;
  return lo;
}

bool fits(DataType t, int64_t v) { return wrap_int(t, v) == v; }

ExprKind flip(ExprKind k) {
  switch (k) {
    case ExprKind::LT: return ExprKind::GT;
    case ExprKind::LE: return ExprKind::GE;
    case ExprKind::GT: return ExprKind::LT;
    case ExprKind::GE: return ExprKind::LE;
    default: return k;
  }
}

ExprKind negate(ExprKind k) {
  switch (k) {
    case ExprKind::LT: return ExprKind::GE;
    case ExprKind::LE: return ExprKind::GT;
    case ExprKind::GT: return ExprKind::LE;
    case ExprKind::GE: return ExprKind::LT;
    case ExprKind::EQ: return ExprKind::NE;
    case ExprKind::NE: return ExprKind::EQ;
    default: return k;
  }
}

bool is_compare(ExprKind k) {
  return k == ExprKind::EQ || k == ExprKind::NE || k == ExprKind::LT || k == ExprKind::LE || k == ExprKind::GT ||
         k == ExprKind::GE;
}

template <typename Node>
const Node* as_binary(const Expr& e, ExprKind k) {
  return e.defined() && e.kind() == k ? static_cast<const Node*>(e.get()) : nullptr;
}
using AnyBinary = BinaryNode<ExprKind::Add>;  // every BinaryNode<K> has the same layout

}  // namespace

Expr make_binary(ExprKind k, DataType t, Expr a, Expr b) {
  switch (k) {
    case ExprKind::Add: return make<AddNode>(t, std::move(a), std::move(b));
    case ExprKind::Sub: return make<SubNode>(t, std::move(a), std::move(b));
    case ExprKind::Mul: return make<MulNode>(t, std::move(a), std::move(b));
    case ExprKind::Div: return make<DivNode>(t, std::move(a), std::move(b));
    case ExprKind::Mod: return make<ModNode>(t, std::move(a), std::move(b));
    case ExprKind::FloorDiv: return make<FloorDivNode>(t, std::move(a), std::move(b));
    case ExprKind::FloorMod: return make<FloorModNode>(t, std::move(a), std::move(b));
    case ExprKind::Min: return make<MinNode>(t, std::move(a), std::move(b));
    case ExprKind::Max: return make<MaxNode>(t, std::move(a), std::move(b));
    case ExprKind::EQ: return make<EQNode>(t, std::move(a), std::move(b));
    case ExprKind::NE: return make<NENode>(t, std::move(a), std::move(b));
    case ExprKind::LT: return make<LTNode>(t, std::move(a), std::move(b));
    case ExprKind::LE: return make<LENode>(t, std::move(a), std::move(b));
    case ExprKind::GT: return make<GTNode>(t, std::move(a), std::move(b));
    case ExprKind::GE: return make<GENode>(t, std::move(a), std::move(b));
    case ExprKind::And: return make<AndNode>(t, std::move(a), std::move(b));
    case ExprKind::Or: return make<OrNode>(t, std::move(a), std::move(b));
    default: LOOM_ICHECK(false && "not a binary kind");
  }
  return {};
}

// ---------------------------------------------------------------- linear helpers
std::optional<LinearSum> Simplifier::linear(DataType t, const Expr& a, const Expr& b, int64_t coeff_b) {
  if (!is_linear_type(t) || a.dtype() != t || b.dtype() != t) return std::nullopt;
  LinearSum s(t);
  if (!s.add(a, 1) || !s.add(b, coeff_b) || !s.merge_div_mod()) return std::nullopt;
  return s;
}

Expr Simplifier::linear_result(LinearSum s) {
  s.normalize();
  if (!fits(s.dtype(), s.base)) return {};
  for (const auto& t : s.terms)
    if (t.coeff == Bound::kNegInf || !fits(s.dtype(), t.coeff) || !fits(s.dtype(), -t.coeff)) return {};
  return s.to_expr();
}

Expr Simplifier::vector_binary(ExprKind k, DataType t, const Expr& a, const Expr& b) {
  auto* ba = a.as<BroadcastNode>();
  auto* bb = b.as<BroadcastNode>();
  auto* ra = a.as<RampNode>();
  auto* rb = b.as<RampNode>();
  DataType et = t.element_of();
  auto scalar = [&](ExprKind kk, const Expr& x, const Expr& y) -> Expr {
    switch (kk) {
      case ExprKind::Add: return add(et, x, y);
      case ExprKind::Sub: return sub(et, x, y);
      case ExprKind::Mul: return mul(et, x, y);
      case ExprKind::Div: case ExprKind::FloorDiv: return div(kk, et, x, y);
      case ExprKind::Mod: case ExprKind::FloorMod: return mod(kk, et, x, y);
      case ExprKind::Min: case ExprKind::Max: return min_max(kk, et, x, y);
      case ExprKind::And: return logic_and(et, x, y);
      case ExprKind::Or: return logic_or(et, x, y);
      default: return compare(kk, et, x, y);
    }
  };
  if (ba && bb && ba->lanes == bb->lanes) return make<BroadcastNode>(scalar(k, ba->value, bb->value), ba->lanes);
  if (k == ExprKind::Add || k == ExprKind::Sub) {
    if (ra && rb && ra->lanes == rb->lanes)
      return make<RampNode>(scalar(k, ra->base, rb->base), scalar(k, ra->stride, rb->stride), ra->lanes);
    if (ra && bb && ra->lanes == bb->lanes) return make<RampNode>(scalar(k, ra->base, bb->value), ra->stride, ra->lanes);
    if (ba && rb && ba->lanes == rb->lanes) {
      Expr stride = k == ExprKind::Add ? rb->stride : sub(rb->stride.dtype(), make_zero(rb->stride.dtype()), rb->stride);
      return make<RampNode>(scalar(k, ba->value, rb->base), stride, rb->lanes);
    }
  }
  if ((k == ExprKind::Div || k == ExprKind::FloorDiv || k == ExprKind::Mod || k == ExprKind::FloorMod) && ra && bb &&
      ra->lanes == bb->lanes) {
    if (Expr r = ramp_div_mod(k, t, ra, bb->value); r.defined()) return r;
  }
  if (k == ExprKind::Mul) {
    if (ra && bb && ra->lanes == bb->lanes)
      return make<RampNode>(mul(et, ra->base, bb->value), mul(et, ra->stride, bb->value), ra->lanes);
    if (ba && rb && ba->lanes == rb->lanes)
      return make<RampNode>(mul(et, ba->value, rb->base), mul(et, ba->value, rb->stride), rb->lanes);
  }
  return make_binary(k, t, a, b);
}

// Lane i of ramp(b, s, n) is b + s*i. With c | s, lane i's quotient is b/c + (s/c)*i and
// its remainder b%c. Otherwise, when b%c + s*i stays inside [0, c) for every lane (what the
// bound of b%c says: 0 for an aligned base, a multiple of gcd(b's coefficients, c) below c
// for a partly known one), every lane has b's quotient and the remainders form a ramp.
// Truncating division agrees with floor division once every lane is known non-negative.
Expr Simplifier::ramp_div_mod(ExprKind k, DataType t, const RampNode* ramp, const Expr& divisor) {
  DataType et = t.element_of();
  auto* cb = divisor.as<IntImmNode>();
  auto* cs = ramp->stride.as<IntImmNode>();
  if (!cb || !cs || cb->value <= 0 || !is_linear_type(et) || ramp->base.dtype() != et) return {};
  const bool truncating = k == ExprKind::Div || k == ExprKind::Mod;
  const bool is_div = k == ExprKind::Div || k == ExprKind::FloorDiv;
  const int64_t c = cb->value, s = cs->value, n = ramp->lanes;
  int64_t span;
  if (__builtin_mul_overflow(s, n - 1, &span)) return {};
  if (truncating) {
    Bound base = bound(ramp->base);
    if (!finite(base) || (s >= 0 ? base.min_value : base.min_value + span) < 0) return {};
  }
  Expr scalar_c = make<IntImmNode>(et, c);
  if (s % c == 0) {
    if (is_div) return make<RampNode>(div(k, et, ramp->base, scalar_c), make<IntImmNode>(et, s / c), ramp->lanes);
    return make<BroadcastNode>(mod(k, et, ramp->base, scalar_c), ramp->lanes);
  }
  Expr rem = mod(ExprKind::FloorMod, et, ramp->base, scalar_c);
  Bound br = bound(rem);
  if (!finite(br)) return {};
  bool one_block = s > 0 ? br.max_value + span < c : br.min_value + span >= 0;
  if (!one_block) return {};
  if (is_div) return make<BroadcastNode>(div(k, et, ramp->base, scalar_c), ramp->lanes);
  return make<RampNode>(truncating ? mod(k, et, ramp->base, scalar_c) : rem, ramp->stride, ramp->lanes);
}

// ---------------------------------------------------------------- arithmetic rules
Expr Simplifier::add(DataType t, const Expr& a, const Expr& b) {
  if (auto f = fold_binary(ExprKind::Add, t, a, b)) return *f;
  if (!t.is_scalar()) return vector_binary(ExprKind::Add, t, a, b);
  if (auto s = linear(t, a, b, 1)) {
    if (Expr r = linear_result(*s); r.defined()) return r;
  }
  if (is_value(b, 0)) return a;
  if (is_value(a, 0)) return b;
  return make<AddNode>(t, a, b);
}

Expr Simplifier::sub(DataType t, const Expr& a, const Expr& b) {
  if (auto f = fold_binary(ExprKind::Sub, t, a, b)) return *f;
  if (!t.is_scalar()) return vector_binary(ExprKind::Sub, t, a, b);
  if (auto s = linear(t, a, b, -1)) {
    if (Expr r = linear_result(*s); r.defined()) return r;
  }
  if (is_value(b, 0)) return a;
  if ((t.is_uint() || t.is_int()) && structural_equal(a, b)) return make_zero(t);
  return make<SubNode>(t, a, b);
}

Expr Simplifier::mul(DataType t, const Expr& a, const Expr& b) {
  if (auto f = fold_binary(ExprKind::Mul, t, a, b)) return *f;
  if (!t.is_scalar()) return vector_binary(ExprKind::Mul, t, a, b);
  auto* ca = a.as<IntImmNode>();
  auto* cb = b.as<IntImmNode>();
  if (is_linear_type(t) && (ca || cb) && a.dtype() == t && b.dtype() == t) {
    LinearSum s(t);
    if (cb ? s.add(a, cb->value) : s.add(b, ca->value)) {
      if (s.merge_div_mod()) {
        if (Expr r = linear_result(s); r.defined()) return r;
      }
    }
  }
  if (is_value(b, 1)) return a;
  if (is_value(a, 1)) return b;
  if ((t.is_int() || t.is_uint()) && (is_value(a, 0) || is_value(b, 0))) return make_zero(t);
  bool a_const = a.as<IntImmNode>() || a.as<FloatImmNode>();
  bool b_const = b.as<IntImmNode>() || b.as<FloatImmNode>();
  if ((a_const && !b_const) || (!a_const && !b_const && expr_compare(b, a) < 0)) return make<MulNode>(t, b, a);
  return make<MulNode>(t, a, b);
}

Expr Simplifier::div(ExprKind k, DataType t, const Expr& a, const Expr& b) {
  if (auto f = fold_binary(k, t, a, b)) return *f;
  if (!t.is_scalar()) return vector_binary(k, t, a, b);
  if (is_value(b, 1)) return a;
  auto* cb = b.as<IntImmNode>();
  if (!cb || !is_linear_type(t) || a.dtype() != t || cb->value <= 0) return make_binary(k, t, a, b);
  const int64_t c = cb->value;
  const bool floor = k == ExprKind::FloorDiv;

  // (x / c1) / c2 -> x / (c1 * c2), for floor and truncating division alike.
  if (auto* inner = as_binary<AnyBinary>(a, k)) {
    auto* c1 = inner->b.as<IntImmNode>();
    int64_t prod;
    if (c1 && c1->value > 0 && !__builtin_mul_overflow(c1->value, c, &prod) && fits(t, prod))
      return div(k, t, inner->a, make<IntImmNode>(t, prod));
  }
  Bound ba = bound(a);
  if (!floor && ba.min_value < 0) return make_binary(k, t, a, b);
  if (auto q = single_period(ba, c)) return make<IntImmNode>(t, *q);

  // a = c*Q + R: floordiv(a, c) = Q + floordiv(R, c). Truncating division equals floor
  // division here because a >= 0.
  LinearSum s(t);
  if (!s.add(a, 1)) return make_binary(k, t, a, b);
  LinearSum q(t), r(t);
  for (const auto& term : s.terms) {
    if (term.coeff == 0) continue;
    if (term.coeff % c == 0) q.add_term(term.expr, term.coeff / c);
    else r.add_term(term.expr, term.coeff);
  }
  q.base = s.base / c;
  r.base = s.base % c;
  if (auto kq = single_period(bound_of(r, st_.bounds), c)) {
    q.base += *kq;
    if (Expr e = linear_result(q); e.defined()) return e;
    return make_binary(k, t, a, b);
  }
  if (q.terms.empty()) {
    int64_t g = c;
    for (const auto& term : r.terms) g = std::gcd(g, term.coeff);
    g = std::gcd(g, s.base);
    if (g > 1) {
      LinearSum scaled(t);
      scaled.base = s.base / g;
      for (const auto& term : r.terms) scaled.add_term(term.expr, term.coeff / g);
      if (Expr num = linear_result(scaled); num.defined()) return div(k, t, num, make<IntImmNode>(t, c / g));
    }
    if (q.base == 0) return make_binary(k, t, a, b);
  }
  Expr rem = linear_result(r);
  if (!rem.defined()) return make_binary(k, t, a, b);
  ExprKind rk = floor || bound(rem).min_value >= 0 ? k : ExprKind::FloorDiv;
  if (!q.add_term(div(rk, t, rem, b), 1)) return make_binary(k, t, a, b);
  if (Expr e = linear_result(q); e.defined()) return e;
  return make_binary(k, t, a, b);
}

Expr Simplifier::mod(ExprKind k, DataType t, const Expr& a, const Expr& b) {
  if (auto f = fold_binary(k, t, a, b)) return *f;
  if (!t.is_scalar()) return vector_binary(k, t, a, b);
  auto* cb = b.as<IntImmNode>();
  if (cb && (t.is_int() || t.is_uint()) && cb->value == 1) return make_zero(t);
  if (!cb || !is_linear_type(t) || a.dtype() != t || cb->value <= 0) return make_binary(k, t, a, b);
  const int64_t c = cb->value;
  const bool floor = k == ExprKind::FloorMod;

  // (x % c1) % c2 -> x % c2 when c2 divides c1.
  if (auto* inner = as_binary<AnyBinary>(a, k)) {
    auto* c1 = inner->b.as<IntImmNode>();
    if (c1 && c1->value > 0 && c1->value % c == 0) return mod(k, t, inner->a, b);
  }
  Bound ba = bound(a);
  if (!floor && ba.min_value < 0) return make_binary(k, t, a, b);
  if (auto kq = single_period(ba, c)) {
    if (*kq == 0) return a;
    return sub(t, a, make<IntImmNode>(t, *kq * c));
  }
  // a = c*Q + R: floormod(a, c) = floormod(R, c), and a >= 0 makes truncation agree.
  LinearSum s(t);
  if (!s.add(a, 1)) return make_binary(k, t, a, b);
  LinearSum r(t);
  bool dropped = false;
  for (const auto& term : s.terms) {
    if (term.coeff == 0) continue;
    if (term.coeff % c == 0) dropped = true;
    else r.add_term(term.expr, term.coeff);
  }
  r.base = s.base % c;
  if (auto kq = single_period(bound_of(r, st_.bounds), c)) {
    r.base -= *kq * c;
    if (Expr e = linear_result(r); e.defined()) return e;
    return make_binary(k, t, a, b);
  }
  int64_t g = c;
  for (const auto& term : r.terms) g = std::gcd(g, term.coeff);
  g = std::gcd(g, r.base);
  if (g > 1) {
    LinearSum scaled(t);
    scaled.base = r.base / g;
    for (const auto& term : r.terms) scaled.add_term(term.expr, term.coeff / g);
    Expr num = linear_result(scaled);
    if (num.defined()) {
      ExprKind rk = floor || bound(num).min_value >= 0 ? k : ExprKind::FloorMod;
      return mul(t, mod(rk, t, num, make<IntImmNode>(t, c / g)), make<IntImmNode>(t, g));
    }
  }
  if (!dropped && r.base == s.base) return make_binary(k, t, a, b);
  Expr rem = linear_result(r);
  if (!rem.defined()) return make_binary(k, t, a, b);
  ExprKind rk = floor || bound(rem).min_value >= 0 ? k : ExprKind::FloorMod;
  return mod(rk, t, rem, b);
}

Expr Simplifier::min_max(ExprKind k, DataType t, const Expr& a, const Expr& b) {
  if (auto f = fold_binary(k, t, a, b)) return *f;
  if (!t.is_scalar()) return vector_binary(k, t, a, b);
  if (structural_equal(a, b)) return a;
  const bool is_min = k == ExprKind::Min;
  if (auto s = linear(t, a, b, -1)) {
    Bound d = bound_of(*s, st_.bounds);
    if (d.max_value <= 0) return is_min ? a : b;
    if (d.min_value >= 0) return is_min ? b : a;
  }
  // min(a, min(a, c)) -> min(a, c)
  if (auto* in = as_binary<AnyBinary>(b, k); in && (structural_equal(in->a, a) || structural_equal(in->b, a))) return b;
  if (auto* in = as_binary<AnyBinary>(a, k); in && (structural_equal(in->a, b) || structural_equal(in->b, b))) return a;
  bool a_const = a.as<IntImmNode>() || a.as<FloatImmNode>();
  bool b_const = b.as<IntImmNode>() || b.as<FloatImmNode>();
  if (a_const && !b_const) return make_binary(k, t, b, a);
  return make_binary(k, t, a, b);
}

Expr Simplifier::compare(ExprKind k, DataType t, const Expr& a, const Expr& b) {
  if (auto f = fold_binary(k, t, a, b)) return *f;
  DataType ot = a.dtype();
  if (!t.is_scalar() || !ot.is_scalar()) return vector_binary(k, t, a, b);
  auto truth = [&](bool v) { return make<IntImmNode>(t, int64_t(v)); };
  if (auto s = linear(ot, a, b, -1)) {
    Bound d = bound_of(*s, st_.bounds);
    switch (k) {
      case ExprKind::LT: if (d.max_value < 0) return truth(true); if (d.min_value >= 0) return truth(false); break;
      case ExprKind::LE: if (d.max_value <= 0) return truth(true); if (d.min_value > 0) return truth(false); break;
      case ExprKind::GT: if (d.min_value > 0) return truth(true); if (d.max_value <= 0) return truth(false); break;
      case ExprKind::GE: if (d.min_value >= 0) return truth(true); if (d.max_value < 0) return truth(false); break;
      case ExprKind::EQ:
        if (d.min_value == 0 && d.max_value == 0) return truth(true);
        if (d.min_value > 0 || d.max_value < 0) return truth(false);
        break;
      case ExprKind::NE:
        if (d.min_value == 0 && d.max_value == 0) return truth(false);
        if (d.min_value > 0 || d.max_value < 0) return truth(true);
        break;
      default: break;
    }
    // a - b = P - N + base: write as P op N - base (or N flip(op) base when P is empty).
    s->normalize();
    for (const auto& term : s->terms)
      if (term.coeff == Bound::kNegInf) return make_binary(k, t, a, b);
    // Integer comparisons divide through by the gcd of the coefficients: x*2 < 7 is x < 4.
    int64_t g = 0;
    for (const auto& term : s->terms) g = std::gcd(g, term.coeff);
    if (g > 1 && s->base != Bound::kNegInf) {
      int64_t rhs = -s->base, lo = floordiv_i64(rhs, g), hi = -floordiv_i64(-rhs, g);
      bool exact = rhs % g == 0;
      if (k == ExprKind::EQ && !exact) return truth(false);
      if (k == ExprKind::NE && !exact) return truth(true);
      for (auto& term : s->terms) term.coeff /= g;
      int64_t bound_rhs = (k == ExprKind::LE || k == ExprKind::GT) ? lo : hi;
      s->base = -bound_rhs;
    }
    LinearSum p(ot), n(ot);
    for (const auto& term : s->terms) {
      if (term.coeff > 0) p.add_term(term.expr, term.coeff);
      else n.add_term(term.expr, -term.coeff);
    }
    if (s->base != Bound::kNegInf) {
      Expr lhs, rhs;
      ExprKind kk = k;
      if (p.terms.empty()) {
        lhs = linear_result(n);
        rhs = fits(ot, s->base) ? make<IntImmNode>(ot, s->base) : Expr();
        kk = flip(k);
      } else {
        n.base = -s->base;
        lhs = linear_result(p);
        rhs = linear_result(n);
      }
      if (lhs.defined() && rhs.defined()) return make_binary(kk, t, lhs, rhs);
    }
    return make_binary(k, t, a, b);
  }
  if ((ot.is_int() || ot.is_uint() || ot.is_bool()) && structural_equal(a, b))
    return truth(k == ExprKind::EQ || k == ExprKind::LE || k == ExprKind::GE);
  return make_binary(k, t, a, b);
}

// ---------------------------------------------------------------- logic
Expr Simplifier::logic_and(DataType t, const Expr& a, const Expr& b) {
  if (auto* c = a.as<IntImmNode>()) return c->value ? b : a;
  if (auto* c = b.as<IntImmNode>()) return c->value ? a : b;
  if (!t.is_scalar()) return vector_binary(ExprKind::And, t, a, b);
  if (structural_equal(a, b)) return a;
  if (auto* n = b.as<NotNode>(); n && structural_equal(n->a, a)) return make<IntImmNode>(t, int64_t(0));
  if (auto* n = a.as<NotNode>(); n && structural_equal(n->a, b)) return make<IntImmNode>(t, int64_t(0));
  if (is_compare(a.kind()) && is_compare(b.kind()) && structural_equal(logic_not(a), b))
    return make<IntImmNode>(t, int64_t(0));
  return make<AndNode>(t, a, b);
}

Expr Simplifier::logic_or(DataType t, const Expr& a, const Expr& b) {
  if (auto* c = a.as<IntImmNode>()) return c->value ? a : b;
  if (auto* c = b.as<IntImmNode>()) return c->value ? b : a;
  if (!t.is_scalar()) return vector_binary(ExprKind::Or, t, a, b);
  if (structural_equal(a, b)) return a;
  if (auto* n = b.as<NotNode>(); n && structural_equal(n->a, a)) return make<IntImmNode>(t, int64_t(1));
  if (auto* n = a.as<NotNode>(); n && structural_equal(n->a, b)) return make<IntImmNode>(t, int64_t(1));
  if (is_compare(a.kind()) && is_compare(b.kind()) && structural_equal(logic_not(a), b))
    return make<IntImmNode>(t, int64_t(1));
  return make<OrNode>(t, a, b);
}

Expr Simplifier::logic_not(const Expr& a) {
  if (auto* c = a.as<IntImmNode>()) return make<IntImmNode>(a.dtype(), int64_t(c->value == 0));
  if (auto* n = a.as<NotNode>()) return n->a;
  if (is_compare(a.kind())) {
    auto* op = static_cast<const AnyBinary*>(a.get());
    DataType ot = op->a.dtype();
    // !(x < y) is x >= y only without NaN; equality flips for every type.
    if (ot.is_int() || ot.is_uint() || ot.is_bool() || a.kind() == ExprKind::EQ || a.kind() == ExprKind::NE)
      return compare(negate(a.kind()), a.dtype(), op->a, op->b);
  }
  return make<NotNode>(a);
}

/// The value of a condition that is a constant, or a constant in every lane (a broadcast one,
/// as vectorizing leaves the condition of an unrolled index's select).
static const IntImmNode* const_condition(const Expr& c) {
  if (auto* b = c.as<BroadcastNode>()) return b->value.as<IntImmNode>();
  return c.as<IntImmNode>();
}

Expr Simplifier::select(const Expr& c, const Expr& t, const Expr& f) {
  if (auto* k = const_condition(c)) return k->value ? t : f;
  if (structural_equal(t, f)) return t;
  return make<SelectNode>(c, t, f);
}

Expr Simplifier::cast(DataType t, const Expr& v) {
  if (v.dtype() == t) return v;
  if (auto f = fold_cast(t, v)) return *f;
  if (auto* b = v.as<BroadcastNode>(); b && t.lanes() == b->lanes)
    return make<BroadcastNode>(cast(t.element_of(), b->value), b->lanes);
  return make<CastNode>(t, v);
}

// ---------------------------------------------------------------- node handlers
Expr Simplifier::mutate_(const VarNode* op) {
  auto it = st_.values.find(op);
  if (it != st_.values.end()) return it->second.second;
  return to_expr(op);
}

Expr Simplifier::mutate_(const AddNode* op) { return add(op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const SubNode* op) { return sub(op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const MulNode* op) { return mul(op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const DivNode* op) { return div(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const ModNode* op) { return mod(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const FloorDivNode* op) { return div(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const FloorModNode* op) { return mod(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const MinNode* op) { return min_max(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const MaxNode* op) { return min_max(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const EQNode* op) { return compare(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const NENode* op) { return compare(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const LTNode* op) { return compare(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const LENode* op) { return compare(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const GTNode* op) { return compare(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const GENode* op) { return compare(op->kind, op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const AndNode* op) { return logic_and(op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const OrNode* op) { return logic_or(op->dtype, mutate(op->a), mutate(op->b)); }
Expr Simplifier::mutate_(const NotNode* op) { return logic_not(mutate(op->a)); }

Expr Simplifier::mutate_(const SelectNode* op) {
  Expr c = mutate(op->cond);
  if (auto* k = const_condition(c)) return mutate(k->value ? op->true_value : op->false_value);
  return select(c, mutate(op->true_value), mutate(op->false_value));
}

Expr Simplifier::mutate_(const CastNode* op) { return cast(op->dtype, mutate(op->value)); }

Expr Simplifier::mutate_(const CallNode* op) {
  std::vector<Expr> args;
  bool changed = mutate_array(op->args, &args);
  if (op->name == te::intrin::kLikely && args.size() == 1 && args[0].as<IntImmNode>()) return args[0];
  if (auto f = fold_call(op->dtype, op->name, args)) return *f;
  if (!changed) return to_expr(op);
  return make<CallNode>(op->dtype, op->name, std::move(args));
}

Expr Simplifier::mutate_(const LetNode* op) {
  Expr value = mutate(op->value);
  const VarNode* v = op->var.get();
  if (value.as<IntImmNode>() || value.as<FloatImmNode>() || value.as<VarNode>()) {
    Expr saved;
    if (auto it = st_.values.find(v); it != st_.values.end()) saved = it->second.second;
    st_.values[v] = {op->var, value};
    Expr body = mutate(op->body);
    if (saved.defined()) st_.values[v] = {op->var, saved}; else st_.values.erase(v);
    return body;
  }
  auto saved = st_.bounds.lookup(v);
  if (value.dtype().is_int() || value.dtype().is_uint()) st_.bounds.bind(op->var, bound(value));
  Expr body = mutate(op->body);
  if (saved) st_.bounds.bind(op->var, *saved); else st_.bounds.unbind(v);
  if (!expr_uses_var(body, op->var)) return body;
  if (value.same_as(op->value) && body.same_as(op->body)) return to_expr(op);
  return make<LetNode>(op->var, value, body);
}

Expr Simplifier::mutate_(const ReduceNode* op) {
  std::vector<std::pair<const IterVarNode*, std::optional<Bound>>> saved;
  for (const IterVar& iv : op->axis) {
    if (!iv.defined() || !iv->dom.min.defined() || !iv->dom.extent.defined()) continue;
    const Range& r = iv->dom;
    Bound lo = bound(r.min);
    Bound hi = bound_add(bound_add(lo, bound(r.extent)), bound_const(-1));
    saved.emplace_back(iv.get(), st_.bounds.lookup(iv->var.get()));
    st_.bounds.bind(iv->var, {lo.min_value, hi.max_value});
  }
  Expr r = ExprMutator::mutate_(op);
  for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
    if (it->second) st_.bounds.bind(it->first->var, *it->second);
    else st_.bounds.unbind(it->first->var.get());
  }
  return r;
}

}  // namespace loom::te::arith
