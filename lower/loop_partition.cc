// loop_partition: a loop whose body checks a condition linear in the loop variable (a
// bounds guard `if (likely(io*32 + ii < 1000))`, a likely() in a select) is split into a
// prologue, a main part where every such condition is known true and dropped, and an
// epilogue; the edge parts keep the checks. Loops are tried from the outermost inward, so
// a guard that involves an outer and an inner variable splits the outer loop and leaves the
// inner loop of the main part whole (constant extent, ready to vectorize).
#include <unordered_map>
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/intrinsics.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

using te::IntSet;
using te::IntSetMap;

Expr strip_likely(const Expr& e) {
  if (const auto* c = e.as<te::CallNode>(); c && c->name == te::intrin::kLikely && c->args.size() == 1) return c->args[0];
  return e;
}

void split_conjuncts(const Expr& e, std::vector<Expr>* out) {
  if (const auto* a = e.as<te::AndNode>()) {
    split_conjuncts(a->a, out);
    split_conjuncts(a->b, out);
  } else {
    out->push_back(e);
  }
}

/// True if `e` is linear in `v`: built from v, terms without v, +, - and * by a term
/// without v.
bool is_linear(const Expr& e, const Var& v) {
  if (!te::expr_uses_var(e, v)) return true;
  if (e.same_as(v)) return true;
  if (const auto* n = e.as<te::AddNode>()) return is_linear(n->a, v) && is_linear(n->b, v);
  if (const auto* n = e.as<te::SubNode>()) return is_linear(n->a, v) && is_linear(n->b, v);
  if (const auto* n = e.as<te::MulNode>()) {
    if (!te::expr_uses_var(n->a, v)) return is_linear(n->b, v);
    if (!te::expr_uses_var(n->b, v)) return is_linear(n->a, v);
    return false;
  }
  if (const auto* n = e.as<te::CastNode>()) return n->dtype.is_integer() && n->value.dtype().is_integer() &&
                                                  n->dtype.bits() >= n->value.dtype().bits() && is_linear(n->value, v);
  return false;
}

/// A conjunct of a condition together with the ranges of the loops (inside the partitioned
/// loop) that enclose it.
struct Occurrence {
  Expr cond;
  IntSetMap inner;
};

/// Collects the conditions of a loop body: IfThenElse conditions and likely() arguments,
/// each split into conjuncts, with the inner loops around them.
class ConditionCollector : public IRVisitor {
 public:
  std::vector<Occurrence> found;
  std::unordered_set<const te::VarNode*> defined_inside;

  using IRVisitor::visit;

 protected:
  void visit_(const ForNode* op) override {
    defined_inside.insert(op->loop_var.get());
    visit(op->min);
    visit(op->extent);
    inner_[op->loop_var.get()] = IntSet::from_range(Range(op->min, op->extent));
    visit(op->body);
    inner_.erase(op->loop_var.get());
  }
  void visit_(const LetStmtNode* op) override {
    defined_inside.insert(op->var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const AttrStmtNode* op) override {
    if (op->iter_var.defined()) defined_inside.insert(op->iter_var.var().get());
    IRVisitor::visit_(op);
  }
  void visit_(const te::LetNode* op) override {
    defined_inside.insert(op->var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const IfThenElseNode* op) override {
    add(strip_likely(op->condition));
    IRVisitor::visit_(op);
  }
  void visit_(const te::CallNode* op) override {
    if (op->name == te::intrin::kLikely && op->args.size() == 1) add(op->args[0]);
    IRVisitor::visit_(op);
  }

 private:
  void add(const Expr& cond) {
    std::vector<Expr> parts;
    split_conjuncts(cond, &parts);
    for (const Expr& p : parts) found.push_back({p, inner_});
  }
  IntSetMap inner_;
};

/// Where a conjunct holds, as a function of the loop variable: `v < bound` (prefix) or
/// `v >= bound` (suffix).
struct TrueRegion {
  bool prefix;
  Expr bound;
};

/// Solves `cond` for `v` with the inner loop variables relaxed over their ranges.
std::optional<TrueRegion> solve(const Occurrence& occ, const Var& v,
                                const std::unordered_set<const te::VarNode*>& defined_inside) {
  const Expr& c = occ.cond;
  // Normalize to e < 0.
  Expr e;
  if (const auto* n = c.as<te::LTNode>()) e = n->a - n->b;
  else if (const auto* n = c.as<te::LENode>()) e = n->a - n->b - 1;
  else if (const auto* n = c.as<te::GTNode>()) e = n->b - n->a;
  else if (const auto* n = c.as<te::GENode>()) e = n->b - n->a - 1;
  else return std::nullopt;
  if (!e.dtype().is_int() || !e.dtype().is_scalar() || !v.dtype().is_int()) return std::nullopt;
  if (!is_linear(e, v)) return std::nullopt;
  // Memory the loop may write is no constant to solve against.
  bool reads_memory = false;
  te::post_order_visit(e, [&](const Expr& x) { reads_memory |= x.as<te::LoadNode>() || x.as<te::ProducerLoadNode>() || x.as<te::CallNode>(); });
  if (reads_memory) return std::nullopt;
  Expr e0 = te::simplify(te::substitute(e, {{v.get(), te::make_zero(v.dtype())}}));
  Expr e1 = te::simplify(te::substitute(e, {{v.get(), te::make_const(v.dtype(), 1)}}));
  auto coef = te::as_const_int(te::simplify(e1 - e0));
  if (!coef || *coef == 0) return std::nullopt;
  // e = coef*v + e0; e < 0 for all inner values iff coef*v + max(e0) < 0.
  IntSet rest = te::eval_set(e0, occ.inner);
  Expr rmax = rest.max;
  if (!rmax.defined()) return std::nullopt;
  bool uses_inner = te::expr_uses_var(rmax, [&](const te::VarNode* x) { return x == v.get() || defined_inside.count(x); });
  if (uses_inner) return std::nullopt;
  Expr k = te::make_const(rmax.dtype(), *coef);
  if (*coef > 0) {
    // v < (-rmax)/coef  ⟺  v <= floordiv(-rmax - 1, coef)
    return TrueRegion{true, te::simplify(te::floordiv(te::make_zero(rmax.dtype()) - rmax - 1, k) + 1)};
  }
  // coef*v < -rmax with coef < 0  ⟺  v > rmax/(-coef)  ⟺  v >= floordiv(rmax, -coef) + 1
  return TrueRegion{false, te::simplify(te::floordiv(rmax, te::make_const(rmax.dtype(), -*coef)) + 1)};
}

/// Replaces the conjuncts in `solved` by true in every IfThenElse condition and likely().
class ConditionEliminator : public IRMutator {
 public:
  explicit ConditionEliminator(const std::unordered_set<const te::ExprNode*>& solved) : solved_(solved) {}
  using IRMutator::mutate;

 protected:
  Expr rewrite(const Expr& cond) {
    std::vector<Expr> parts, kept;
    split_conjuncts(cond, &parts);
    for (const Expr& p : parts)
      if (!solved_.count(p.get())) kept.push_back(p);
    if (kept.size() == parts.size()) return cond;
    if (kept.empty()) return te::make_const(cond.dtype(), 1);
    Expr r = kept[0];
    for (size_t i = 1; i < kept.size(); ++i) r = r && kept[i];
    return r;
  }

  Expr mutate_(const te::CallNode* op) override {
    if (op->name == te::intrin::kLikely && op->args.size() == 1) {
      Expr c = rewrite(mutate(op->args[0]));
      if (te::is_one(c)) return c;
      if (c.same_as(op->args[0])) return to_expr(op);
      return te::make<te::CallNode>(op->dtype, op->name, std::vector<Expr>{c});
    }
    return IRMutator::mutate_(op);
  }

  Stmt mutate_(const IfThenElseNode* op) override {
    Expr c = mutate(op->condition);
    if (!c.as<te::CallNode>()) c = rewrite(c);
    if (te::is_one(c)) return mutate(op->then_case);
    Stmt t = mutate(op->then_case);
    Stmt e = op->else_case.defined() ? mutate(op->else_case) : Stmt();
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return to_stmt(op);
    return make_stmt<IfThenElseNode>(c, t, e);
  }

 private:
  const std::unordered_set<const te::ExprNode*>& solved_;
};

Stmt make_loop(const ForNode* op, Expr min, Expr extent, Stmt body) {
  auto n = std::make_shared<ForNode>(op->loop_var, std::move(min), std::move(extent), op->for_kind, std::move(body),
                                     op->thread_tag);
  n->annotations = op->annotations;
  return Stmt(std::move(n));
}

class LoopPartitioner : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const ForNode* op) override {
    if (op->for_kind == ForKind::kThreadBinding) return IRMutator::mutate_(op);
    ConditionCollector cc;
    cc.visit(op->body);
    const Var& v = op->loop_var;
    std::unordered_set<const te::ExprNode*> solved, failed;
    std::vector<Expr> lo_bounds, hi_bounds;
    for (const Occurrence& occ : cc.found) {
      if (!te::expr_uses_var(occ.cond, v)) continue;
      auto r = solve(occ, v, cc.defined_inside);
      if (!r) {
        failed.insert(occ.cond.get());
        continue;
      }
      solved.insert(occ.cond.get());
      (r->prefix ? hi_bounds : lo_bounds).push_back(r->bound);
    }
    for (const te::ExprNode* f : failed) solved.erase(f);
    if (solved.empty()) return IRMutator::mutate_(op);

    Expr end = te::simplify(op->min + op->extent);
    Expr lo = op->min, hi = end;
    for (const Expr& b : lo_bounds) lo = te::max(lo, b);
    for (const Expr& b : hi_bounds) hi = te::min(hi, b);
    lo = te::simplify(te::min(lo, end));
    hi = te::simplify(te::max(hi, lo));
    Expr pre_ext = te::simplify(lo - op->min);
    Expr main_ext = te::simplify(hi - lo);
    Expr post_ext = te::simplify(end - hi);
    if (te::is_zero(main_ext)) return IRMutator::mutate_(op);

    Stmt main_body = mutate(ConditionEliminator(solved).mutate(op->body));
    Stmt edge_body = mutate(op->body);
    std::vector<Stmt> parts;
    if (!te::is_zero(pre_ext)) parts.push_back(make_loop(op, op->min, pre_ext, edge_body));
    parts.push_back(make_loop(op, lo, main_ext, main_body));
    if (!te::is_zero(post_ext)) parts.push_back(make_loop(op, hi, post_ext, edge_body));
    return seq(std::move(parts));
  }
};

}  // namespace

Stmt loop_partition(const Stmt& s) { return simplify(LoopPartitioner().mutate(s)); }

}  // namespace loom::lowering
