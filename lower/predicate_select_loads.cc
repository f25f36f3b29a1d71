// predicate_select_loads: loads under one arm of a select only happen where that arm is
// taken. Padding is written as select(inside, A[i - pad], 0); both arms are evaluated in
// straight-line code, so without a predicate the load reads outside A at the border.
#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"

namespace loom::lowering {

namespace {

class PredicateSelectLoads : public IRMutator {
 protected:
  Expr mutate_(const te::SelectNode* op) override {
    Expr cond = mutate(op->cond);
    Expr t = under(cond, op->true_value);
    Expr f = under(te::make<te::NotNode>(cond), op->false_value);
    if (cond.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return to_expr(op);
    return te::make<te::SelectNode>(cond, t, f);
  }

  Expr mutate_(const te::LoadNode* op) override {
    Expr e = IRMutator::mutate_(op);
    if (guards_.empty()) return e;
    const auto* load = e.as<te::LoadNode>();
    Expr pred;
    for (const Expr& g : guards_) {
      if (g.dtype().lanes() != load->dtype.lanes()) continue;  // a uniform load under a per-lane choice
      pred = pred.defined() ? te::make<te::AndNode>(g.dtype(), pred, g) : g;
    }
    if (!pred.defined()) return e;
    if (load->predicate.defined()) pred = te::make<te::AndNode>(pred.dtype(), load->predicate, pred);
    return te::make<te::LoadNode>(load->dtype, load->buffer_var, load->index, pred);
  }

 private:
  Expr under(const Expr& guard, const Expr& e) {
    guards_.push_back(guard);
    Expr r = mutate(e);
    guards_.pop_back();
    return r;
  }
  std::vector<Expr> guards_;
};

}  // namespace

Stmt predicate_select_loads(const Stmt& s) { return PredicateSelectLoads().mutate(s); }

}  // namespace loom::lowering
