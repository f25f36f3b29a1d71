// Canonical linear form of integer expressions: sum(coeff * term) + base with like terms
// merged and terms in a deterministic order.
#include <algorithm>

#include "arith_internal.h"

namespace loom::te::arith {
namespace {

template <typename T>
int cmp3(const T& a, const T& b) { return a < b ? -1 : (b < a ? 1 : 0); }

int compare_list(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (int c = cmp3(a.size(), b.size())) return c;
  for (size_t i = 0; i < a.size(); ++i)
    if (int c = expr_compare(a[i], b[i])) return c;
  return 0;
}

template <typename Node>
int compare_binary(const Expr& a, const Expr& b) {
  auto* x = static_cast<const Node*>(a.get());
  auto* y = static_cast<const Node*>(b.get());
  if (int c = expr_compare(x->a, y->a)) return c;
  return expr_compare(x->b, y->b);
}

bool checked_mul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
bool checked_add(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }

}  // namespace

int expr_compare(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return 0;
  if (!a.defined() || !b.defined()) return cmp3(a.defined(), b.defined());
  if (a.kind() != b.kind()) return cmp3(int(a.kind()), int(b.kind()));
  if (a.dtype() != b.dtype()) {
    if (int c = cmp3(int(a.dtype().code()), int(b.dtype().code()))) return c;
    if (int c = cmp3(a.dtype().bits(), b.dtype().bits())) return c;
    return cmp3(a.dtype().lanes(), b.dtype().lanes());
  }
  switch (a.kind()) {
    case ExprKind::IntImm: return cmp3(a.as<IntImmNode>()->value, b.as<IntImmNode>()->value);
    case ExprKind::FloatImm: return cmp3(a.as<FloatImmNode>()->value, b.as<FloatImmNode>()->value);
    case ExprKind::StringImm: return cmp3(a.as<StringImmNode>()->value, b.as<StringImmNode>()->value);
    case ExprKind::Var: return cmp3(a.as<VarNode>()->name, b.as<VarNode>()->name);
    case ExprKind::Add: return compare_binary<AddNode>(a, b);
    case ExprKind::Sub: return compare_binary<SubNode>(a, b);
    case ExprKind::Mul: return compare_binary<MulNode>(a, b);
    case ExprKind::Div: return compare_binary<DivNode>(a, b);
    case ExprKind::Mod: return compare_binary<ModNode>(a, b);
    case ExprKind::FloorDiv: return compare_binary<FloorDivNode>(a, b);
    case ExprKind::FloorMod: return compare_binary<FloorModNode>(a, b);
    case ExprKind::Min: return compare_binary<MinNode>(a, b);
    case ExprKind::Max: return compare_binary<MaxNode>(a, b);
    case ExprKind::EQ: return compare_binary<EQNode>(a, b);
    case ExprKind::NE: return compare_binary<NENode>(a, b);
    case ExprKind::LT: return compare_binary<LTNode>(a, b);
    case ExprKind::LE: return compare_binary<LENode>(a, b);
    case ExprKind::GT: return compare_binary<GTNode>(a, b);
    case ExprKind::GE: return compare_binary<GENode>(a, b);
    case ExprKind::And: return compare_binary<AndNode>(a, b);
    case ExprKind::Or: return compare_binary<OrNode>(a, b);
    case ExprKind::Not: return expr_compare(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::Select: {
      auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return compare_list({x->cond, x->true_value, x->false_value}, {y->cond, y->true_value, y->false_value});
    }
    case ExprKind::Cast: return expr_compare(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::Call: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      if (int c = cmp3(x->name, y->name)) return c;
      return compare_list(x->args, y->args);
    }
    case ExprKind::Let: {
      auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      return compare_list({x->value, x->body}, {y->value, y->body});
    }
    case ExprKind::ProducerLoad: return compare_list(a.as<ProducerLoadNode>()->indices, b.as<ProducerLoadNode>()->indices);
    case ExprKind::Load: {
      auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return compare_list({x->buffer_var, x->index}, {y->buffer_var, y->index});
    }
    case ExprKind::Ramp: {
      auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return compare_list({x->base, x->stride}, {y->base, y->stride});
    }
    case ExprKind::Broadcast: return expr_compare(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    default: return 0;
  }
}

// ---------------------------------------------------------------- LinearSum
bool LinearSum::add(const Expr& e, int64_t coeff) {
  if (coeff == 0) return true;
  if (e.dtype() != dtype_) return add_term(e, coeff);
  switch (e.kind()) {
    case ExprKind::IntImm: {
      int64_t v;
      return checked_mul(e.as<IntImmNode>()->value, coeff, &v) && add_const(v);
    }
    case ExprKind::Add: {
      auto* op = e.as<AddNode>();
      return add(op->a, coeff) && add(op->b, coeff);
    }
    case ExprKind::Sub: {
      auto* op = e.as<SubNode>();
      if (coeff == ConstIntBound::kNegInf) return false;
      return add(op->a, coeff) && add(op->b, -coeff);
    }
    case ExprKind::Mul: {
      auto* op = e.as<MulNode>();
      int64_t c;
      if (auto* k = op->b.as<IntImmNode>()) return checked_mul(coeff, k->value, &c) && add(op->a, c);
      if (auto* k = op->a.as<IntImmNode>()) return checked_mul(coeff, k->value, &c) && add(op->b, c);
      return add_term(e, coeff);
    }
    default:
      return add_term(e, coeff);
  }
}

bool LinearSum::add_const(int64_t c) { return checked_add(base, c, &base); }

bool LinearSum::add_term(const Expr& e, int64_t coeff) {
  size_t h = structural_hash(e);
  for (Term& t : terms) {
    if (t.hash == h && structural_equal(t.expr, e)) return checked_add(t.coeff, coeff, &t.coeff);
  }
  terms.push_back({e, coeff, h});
  return true;
}

bool LinearSum::merge_div_mod() {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < terms.size() && !changed; ++i) {
      const Expr& m = terms[i].expr;
      ExprKind div_kind;
      Expr x, c;
      if (auto* op = m.as<FloorModNode>()) { div_kind = ExprKind::FloorDiv; x = op->a; c = op->b; }
      else if (auto* op = m.as<ModNode>()) { div_kind = ExprKind::Div; x = op->a; c = op->b; }
      else continue;
      auto* cv = c.as<IntImmNode>();
      if (!cv || terms[i].coeff == 0) continue;
      int64_t want;
      if (!checked_mul(terms[i].coeff, cv->value, &want)) continue;
      for (size_t j = 0; j < terms.size(); ++j) {
        const Expr& d = terms[j].expr;
        if (j == i || d.kind() != div_kind || terms[j].coeff != want) continue;
        auto* dop = static_cast<const FloorDivNode*>(d.get());  // same layout for every BinaryNode
        if (!is_const_int(dop->b, cv->value) || !structural_equal(dop->a, x)) continue;
        int64_t k = terms[i].coeff;
        terms[i].coeff = 0;
        terms[j].coeff = 0;
        if (!add(x, k)) return false;
        changed = true;
        break;
      }
    }
  }
  return true;
}

void LinearSum::normalize() {
  terms.erase(std::remove_if(terms.begin(), terms.end(), [](const Term& t) { return t.coeff == 0; }), terms.end());
  std::stable_sort(terms.begin(), terms.end(), [](const Term& x, const Term& y) {
    bool nx = x.coeff < 0, ny = y.coeff < 0;
    if (nx != ny) return ny;
    if (x.coeff != y.coeff) return nx ? x.coeff < y.coeff : x.coeff > y.coeff;
    return expr_compare(x.expr, y.expr) < 0;
  });
}

Expr LinearSum::to_expr() const {
  auto konst = [&](int64_t v) { return make<IntImmNode>(dtype_, v); };
  auto scaled = [&](const Term& t, int64_t c) {
    return c == 1 ? t.expr : make<MulNode>(dtype_, t.expr, konst(c));
  };
  Expr r;
  size_t i = 0;
  if (!terms.empty()) {
    if (terms[0].coeff > 0) {
      r = scaled(terms[0], terms[0].coeff);
      i = 1;
    } else if (base > 0) {
      r = konst(base);
    } else {
      r = scaled(terms[0], terms[0].coeff);
      i = 1;
    }
  }
  for (; i < terms.size(); ++i) {
    if (terms[i].coeff > 0) r = make<AddNode>(dtype_, r, scaled(terms[i], terms[i].coeff));
    else r = make<SubNode>(dtype_, r, scaled(terms[i], -terms[i].coeff));
  }
  if (!r.defined()) return konst(base);
  bool base_used = !terms.empty() && terms[0].coeff < 0 && base > 0;
  if (base_used || base == 0) return r;
  if (base > 0) return make<AddNode>(dtype_, r, konst(base));
  if (base == ConstIntBound::kNegInf) return make<AddNode>(dtype_, r, konst(base));
  return make<SubNode>(dtype_, r, konst(-base));
}

Bound bound_of(const LinearSum& s, BoundAnalyzer& ba) {
  Bound b = bound_const(s.base);
  for (const auto& t : s.terms) {
    if (t.coeff == 0) continue;
    b = bound_add(b, bound_mul_const(ba.bound(t.expr), t.coeff));
  }
  return b;
}

}  // namespace loom::te::arith
