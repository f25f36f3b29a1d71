// remove_no_op: drops statements without effect: loops and branches over no-ops, empty
// allocations, lets of unused variables, and stores of a value just loaded from the same place.
#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"

namespace loom::lowering {

namespace {

bool stmt_uses_var(const Stmt& s, const Var& v) {
  struct Finder : IRVisitor {
    const te::VarNode* target;
    bool found = false;
    using IRVisitor::visit;
    void visit_(const te::VarNode* op) override { found |= op == target; }
  } f;
  f.target = v.get();
  f.visit(s);
  return f.found;
}

class NoOpRemover : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const ForNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* f = s.as<ForNode>();
    if (!f) return s;
    if (is_no_op(f->body)) return no_op();
    if (auto n = te::as_const_int(f->extent); n && *n <= 0) return no_op();
    return s;
  }

  Stmt mutate_(const IfThenElseNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* i = s.as<IfThenElseNode>();
    if (!i) return s;
    bool then_empty = is_no_op(i->then_case);
    bool else_empty = !i->else_case.defined() || is_no_op(i->else_case);
    if (then_empty && else_empty) return no_op();
    if (i->else_case.defined() && else_empty) return make_stmt<IfThenElseNode>(i->condition, i->then_case, Stmt());
    if (then_empty) return make_stmt<IfThenElseNode>(!i->condition, i->else_case, Stmt());
    return s;
  }

  Stmt mutate_(const AllocateNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* a = s.as<AllocateNode>();
    if (a && is_no_op(a->body)) return no_op();
    return s;
  }

  Stmt mutate_(const AttrStmtNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* a = s.as<AttrStmtNode>();
    if (a && is_no_op(a->body)) return no_op();
    return s;
  }

  Stmt mutate_(const LetStmtNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* l = s.as<LetStmtNode>();
    if (!l) return s;
    if (is_no_op(l->body) || !stmt_uses_var(l->body, l->var)) return l->body;
    return s;
  }

  Stmt mutate_(const StoreNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* st = s.as<StoreNode>();
    if (!st) return s;
    if (const auto* ld = st->value.as<te::LoadNode>()) {
      if (ld->buffer_var.same_as(st->buffer_var) && !ld->predicate.defined() && !st->predicate.defined() &&
          te::structural_equal(ld->index, st->index))
        return no_op();
    }
    return s;
  }

  Stmt mutate_(const SeqStmtNode* op) override {
    std::vector<Stmt> parts;
    bool changed = false;
    for (const Stmt& c : op->seq) {
      Stmt n = mutate(c);
      changed |= !n.same_as(c);
      if (is_no_op(n)) {
        changed = true;
        continue;
      }
      parts.push_back(n);
    }
    if (!changed) return to_stmt(op);
    return seq(std::move(parts));
  }

  Stmt mutate_(const EvaluateNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* e = s.as<EvaluateNode>();
    if (e && (e->value.as<te::IntImmNode>() || e->value.as<te::FloatImmNode>() || e->value.as<te::VarNode>()))
      return no_op();
    return s;
  }
};

}  // namespace

Stmt remove_no_op(const Stmt& s) { return NoOpRemover().mutate(s); }

}  // namespace loom::lowering
