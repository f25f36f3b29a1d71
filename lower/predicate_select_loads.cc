// predicate_select_loads: loads under one arm of a select only happen where that arm is
// taken. Padding is written as select(inside, A[i - pad], 0); both arms are evaluated in
// straight-line code, so without a predicate the load reads outside A at the border.
//
// Under nested selects a load's predicate is the conjunction of every enclosing arm's
// condition (of the load's lane count). From the second level on, that conjunction is bound
// once per arm with a Let around the select and the loads read the variable: spelled out in
// every load, a tree or chain of n selects (a concat of n inputs) gave each of its n loads up
// to n conditions, which code generation re-emitted load by load.
#include <map>
#include <optional>
#include <set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"

namespace loom::lowering {

namespace {

class PredicateSelectLoads : public IRMutator {
 protected:
  Expr mutate_(const te::SelectNode* op) override {
    Expr cond = mutate(op->cond);
    std::vector<std::pair<te::Var, Expr>> lets;
    Expr t = under(cond, op->true_value, &lets);
    Expr f = under(te::make<te::NotNode>(cond), op->false_value, &lets);
    if (cond.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return to_expr(op);
    Expr e = te::make<te::SelectNode>(cond, t, f);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) e = te::make<te::LetNode>(it->first, it->second, e);
    return e;
  }

  Expr mutate_(const te::LoadNode* op) override {
    Expr e = IRMutator::mutate_(op);
    if (guards_.empty()) return e;
    const auto* load = e.as<te::LoadNode>();
    auto it = guards_.back().find(load->dtype.lanes());  // a uniform load under a per-lane choice: none
    if (it == guards_.back().end()) return e;
    Expr pred = it->second;
    if (const auto* v = pred.as<te::VarNode>()) used_.insert(v);
    if (load->predicate.defined()) pred = te::make<te::AndNode>(pred.dtype(), load->predicate, pred);
    return te::make<te::LoadNode>(load->dtype, load->buffer_var, load->index, pred);
  }

 private:
  /// Mutates `e` with `guard` added to the conditions of its lane count; the Let a nested
  /// guard needs goes to `lets` when a load uses it.
  Expr under(const Expr& guard, const Expr& e, std::vector<std::pair<te::Var, Expr>>* lets) {
    std::map<int, Expr> level = guards_.empty() ? std::map<int, Expr>{} : guards_.back();
    const int lanes = guard.dtype().lanes();
    auto it = level.find(lanes);
    const Expr outer = it == level.end() ? Expr() : it->second;
    std::optional<std::pair<te::Var, Expr>> let;
    if (!outer.defined()) {
      level[lanes] = guard;
    } else {
      let.emplace(te::Var("pred", guard.dtype()), te::make<te::AndNode>(guard.dtype(), outer, guard));
      level[lanes] = let->first;
    }
    guards_.push_back(std::move(level));
    Expr r = mutate(e);
    guards_.pop_back();
    if (let && used_.count(static_cast<const te::VarNode*>(let->first.get()))) {
      if (const auto* v = outer.as<te::VarNode>()) used_.insert(v);  // the Let reads it
      lets->push_back(*let);
    }
    return r;
  }
  std::vector<std::map<int, Expr>> guards_;  // per nesting level: lane count -> predicate
  std::set<const te::VarNode*> used_;
};

}  // namespace

Stmt predicate_select_loads(const Stmt& s) { return PredicateSelectLoads().mutate(s); }

}  // namespace loom::lowering
