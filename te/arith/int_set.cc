// Symbolic interval sets: evaluation of an expression over intervals of its variables.
#include "arith_internal.h"
#include "loom/te/intrinsics.h"

namespace loom::te {
namespace {

Expr one_like(const Expr& e) { return make<IntImmNode>(e.dtype(), int64_t(1)); }

bool is_point(const IntSet& s) { return s.is_single_point(); }

/// Both ends defined or the result end is undefined.
Expr both(const Expr& a, const Expr& b, Expr (*f)(Expr, Expr)) {
  if (!a.defined() || !b.defined()) return {};
  return f(a, b);
}

Expr op_add(Expr a, Expr b) { return a + b; }
Expr op_sub(Expr a, Expr b) { return a - b; }
Expr op_min(Expr a, Expr b) { return te::min(a, b); }
Expr op_max(Expr a, Expr b) { return te::max(a, b); }

class IntervalEvaluator {
 public:
  explicit IntervalEvaluator(const IntSetMap& dom) : dom_(dom) {}

  IntSet eval(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
        return IntSet::single_point(e);
      case ExprKind::Var: return eval_var(e);
      case ExprKind::Add: {
        auto* op = e.as<AddNode>();
        IntSet a = eval(op->a), b = eval(op->b);
        return {both(a.min, b.min, op_add), both(a.max, b.max, op_add)};
      }
      case ExprKind::Sub: {
        auto* op = e.as<SubNode>();
        IntSet a = eval(op->a), b = eval(op->b);
        return {both(a.min, b.max, op_sub), both(a.max, b.min, op_sub)};
      }
      case ExprKind::Mul: {
        auto* op = e.as<MulNode>();
        return eval_mul(eval(op->a), eval(op->b));
      }
      case ExprKind::Div:
      case ExprKind::FloorDiv: {
        auto* op = static_cast<const DivNode*>(e.get());
        return eval_div(e.kind(), eval(op->a), eval(op->b));
      }
      case ExprKind::Mod:
      case ExprKind::FloorMod: {
        auto* op = static_cast<const ModNode*>(e.get());
        return eval_mod(e, eval(op->a), eval(op->b));
      }
      case ExprKind::Min: {
        auto* op = e.as<MinNode>();
        IntSet a = eval(op->a), b = eval(op->b);
        return {both(a.min, b.min, op_min), either(a.max, b.max, op_min)};
      }
      case ExprKind::Max: {
        auto* op = e.as<MaxNode>();
        IntSet a = eval(op->a), b = eval(op->b);
        return {either(a.min, b.min, op_max), both(a.max, b.max, op_max)};
      }
      case ExprKind::Select: {
        auto* op = e.as<SelectNode>();
        if (!uses_dom(op->cond)) {
          Expr c = ana_.simplify(op->cond);
          if (auto* k = c.as<IntImmNode>()) return eval(k->value ? op->true_value : op->false_value);
        }
        return union_sets({eval(op->true_value), eval(op->false_value)});
      }
      case ExprKind::Cast: {
        auto* op = e.as<CastNode>();
        IntSet a = eval(op->value);
        if (is_point(a)) return IntSet::single_point(te::cast(op->dtype, a.min));
        if (!(op->dtype.is_int() || op->dtype.is_uint()) || !op->value.dtype().is_integer() ||
            op->dtype.bits() < op->value.dtype().bits())
          return uses_dom(op->value) ? IntSet::everything() : IntSet::single_point(e);
        return {a.min.defined() ? te::cast(op->dtype, a.min) : Expr(), a.max.defined() ? te::cast(op->dtype, a.max) : Expr()};
      }
      case ExprKind::Let: {
        auto* op = e.as<LetNode>();
        IntSet v = eval(op->value);
        auto saved = local_.find(op->var.get()) != local_.end() ? std::optional(local_[op->var.get()]) : std::nullopt;
        local_[op->var.get()] = v;
        IntSet r = eval(op->body);
        if (saved) local_[op->var.get()] = *saved; else local_.erase(op->var.get());
        return r;
      }
      case ExprKind::Call: {
        auto* op = e.as<CallNode>();
        if (op->name == te::intrin::kLikely && op->args.size() == 1) return eval(op->args[0]);
        return opaque(e);
      }
      default:
        return opaque(e);
    }
  }

 private:
  IntSet opaque(const Expr& e) { return uses_dom(e) ? IntSet::everything() : IntSet::single_point(e); }

  static Expr either(const Expr& a, const Expr& b, Expr (*f)(Expr, Expr)) {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    return f(a, b);
  }

  const IntSet* find(const VarNode* v) const {
    if (auto it = local_.find(v); it != local_.end()) return &it->second;
    if (auto it = dom_.find(v); it != dom_.end()) return &it->second;
    return nullptr;
  }

  bool uses_dom(const Expr& e) {
    return expr_uses_var(e, [&](const VarNode* v) { return find(v) != nullptr; });
  }

  IntSet eval_var(const Expr& e) {
    const IntSet* s = find(e.as<VarNode>());
    if (!s) return IntSet::single_point(e);
    auto fix = [&](const Expr& x) { return x.defined() && x.dtype() != e.dtype() ? te::cast(e.dtype(), x) : x; };
    return {fix(s->min), fix(s->max)};
  }

  /// Sign of a point (+1 non-negative, -1 non-positive, 0 unknown).
  int sign_of(const Expr& x) {
    ConstIntBound b = ana_.const_int_bound(x);
    if (b.min_value >= 0) return 1;
    if (b.max_value <= 0) return -1;
    return 0;
  }

  IntSet scale(const IntSet& a, const Expr& k) {
    int s = sign_of(k);
    if (s == 0) return IntSet::everything();
    Expr lo = a.min.defined() ? a.min * k : Expr(), hi = a.max.defined() ? a.max * k : Expr();
    return s > 0 ? IntSet{lo, hi} : IntSet{hi, lo};
  }

  IntSet eval_mul(const IntSet& a, const IntSet& b) {
    if (is_point(a) && is_point(b)) return IntSet::single_point(a.min * b.min);
    if (is_point(b)) return scale(a, b.min);
    if (is_point(a)) return scale(b, a.min);
    return IntSet::everything();
  }

  IntSet eval_div(ExprKind k, const IntSet& a, const IntSet& b) {
    auto divide = [&](const Expr& x, const Expr& y) -> Expr {
      if (!x.defined()) return {};
      return k == ExprKind::Div ? x / y : floordiv(x, y);
    };
    if (is_point(a) && is_point(b)) return IntSet::single_point(divide(a.min, b.min));
    if (!is_point(b)) return IntSet::everything();
    ConstIntBound d = ana_.const_int_bound(b.min);
    if (d.min_value > 0) return {divide(a.min, b.min), divide(a.max, b.min)};
    if (d.max_value < 0) return {divide(a.max, b.min), divide(a.min, b.min)};
    return IntSet::everything();
  }

  IntSet eval_mod(const Expr& e, const IntSet& a, const IntSet& b) {
    bool floor = e.kind() == ExprKind::FloorMod;
    auto modulo = [&](const Expr& x, const Expr& y) { return floor ? floormod(x, y) : truncmod(x, y); };
    if (is_point(a) && is_point(b)) return IntSet::single_point(modulo(a.min, b.min));
    if (!is_point(b)) return IntSet::everything();
    const Expr& c = b.min;
    if (ana_.const_int_bound(c).min_value <= 0) return IntSet::everything();
    bool nonneg = a.min.defined() && ana_.const_int_bound(a.min).min_value >= 0;
    if (a.is_bounded() && (floor || nonneg)) {
      Expr periods = ana_.simplify(floordiv(a.max, c) - floordiv(a.min, c));
      if (is_zero(periods)) return {modulo(a.min, c), modulo(a.max, c)};
    }
    Expr top = c - one_like(c);
    if (floor || nonneg) return {make_zero(c.dtype()), top};
    return {make_zero(c.dtype()) - top, top};
  }

  const IntSetMap& dom_;
  IntSetMap local_;
  Analyzer ana_;
};

}  // namespace

IntSet IntSet::from_range(const Range& r) {
  LOOM_CHECK(r.min.defined() && r.extent.defined(), "IntSet::from_range: range has an undefined min or extent");
  if (is_one(r.extent)) return single_point(r.min);
  return {r.min, simplify(r.min + r.extent - 1)};
}

bool IntSet::is_single_point() const {
  return is_bounded() && (min.same_as(max) || structural_equal(min, max));
}

Range IntSet::to_range() const {
  LOOM_CHECK(is_bounded(), "IntSet::to_range: the set [{}, {}] is unbounded", min.defined() ? to_string(min) : "-inf",
             max.defined() ? to_string(max) : "+inf");
  if (is_single_point()) return Range(min, make<IntImmNode>(min.dtype(), int64_t(1)));
  return Range(min, simplify(max - min + 1));
}

IntSet union_sets(const std::vector<IntSet>& sets) {
  if (sets.empty()) return IntSet::everything();
  Analyzer ana;
  IntSet r = sets[0];
  for (size_t i = 1; i < sets.size(); ++i) {
    const IntSet& s = sets[i];
    r.min = r.min.defined() && s.min.defined() ? ana.simplify(te::min(r.min, s.min)) : Expr();
    r.max = r.max.defined() && s.max.defined() ? ana.simplify(te::max(r.max, s.max)) : Expr();
  }
  return r;
}

IntSet eval_set(const Expr& e, const IntSetMap& dom) {
  LOOM_CHECK(e.defined(), "eval_set: undefined expression");
  // Simplifying under the domain first recovers correlations that intervals lose
  // (i*32 + ii - i*32 is ii, not an interval of width 64).
  Expr body = e;
  if (e.dtype().is_int() && e.dtype().is_scalar()) {
    Analyzer facts;
    for (const auto& [v, s] : dom) {
      if (!s.is_bounded() || !s.min.dtype().is_int() || !s.max.dtype().is_int()) continue;
      Var var(std::static_pointer_cast<const VarNode>(to_expr(v).node()));
      facts.bind(var, Range(s.min, s.max - s.min + 1));
    }
    body = facts.simplify(e);
  }
  IntervalEvaluator ev(dom);
  IntSet r = ev.eval(body);
  Analyzer ana;
  if (r.min.defined()) r.min = ana.simplify(r.min);
  if (r.max.defined()) r.max = ana.simplify(r.max);
  return r;
}

}  // namespace loom::te
