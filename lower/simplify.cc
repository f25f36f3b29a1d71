// simplify: arithmetic simplification of every expression, with loop ranges as facts.
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"
#include "loom/te/intrinsics.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

/// The condition inside likely(), which only hints the branch's probability.
Expr strip_likely(const Expr& e) {
  if (const auto* c = e.as<te::CallNode>(); c && c->name == te::intrin::kLikely && c->args.size() == 1) return c->args[0];
  return e;
}

class StmtSimplifier : public IRMutator {
 public:
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override { return e.defined() ? ana_.simplify(e) : e; }

 protected:
  Stmt mutate_(const ForNode* op) override {
    Expr mn = mutate(op->min);
    Expr ext = mutate(op->extent);
    if (auto n = te::as_const_int(ext); n && *n <= 0) return no_op();
    if (is_one(ext) && op->for_kind != ForKind::kThreadBinding) {
      Stmt body = mutate(substitute(op->body, {{op->loop_var.get(), mn}}));
      // The loop goes; its auto-unroll pragma stays on what it held.
      auto it = op->annotations.find(attr::kAutoUnrollMaxStep);
      if (it != op->annotations.end() && !is_no_op(body))
        return make_stmt<AttrStmtNode>(te::IterVar(), Var(), attr::kAutoUnrollMaxStep, it->second, body);
      return body;
    }
    // The analyzer's facts are global; a variable seen in an earlier loop gets a fresh name
    // so that the facts of the two loops never mix.
    Var v = op->loop_var;
    Stmt body = op->body;
    if (!bound_.insert(v.get()).second) {
      v = Var(v.name(), v.dtype());
      bound_.insert(v.get());
      body = substitute(body, {{op->loop_var.get(), v}});
    }
    ana_.bind(v, Range(mn, ext));
    body = mutate(body);
    if (is_no_op(body)) return no_op();
    if (v.same_as(op->loop_var) && mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body))
      return to_stmt(op);
    auto n = std::make_shared<ForNode>(v, mn, ext, op->for_kind, body, op->thread_tag);
    n->annotations = op->annotations;
    return Stmt(std::move(n));
  }

  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key == attr::kThreadExtent || op->key == attr::kVirtualThread) {
      Expr ext = mutate(op->value);
      if (op->iter_var.defined() && bound_.insert(op->iter_var.var().get()).second)
        ana_.bind(op->iter_var.var(), Range(te::make_zero(ext.dtype()), ext));
      Stmt body = mutate(op->body);
      if (ext.same_as(op->value) && body.same_as(op->body)) return to_stmt(op);
      return make_stmt<AttrStmtNode>(op->iter_var, op->var, op->key, ext, body);
    }
    return IRMutator::mutate_(op);
  }

  Stmt mutate_(const LetStmtNode* op) override {
    Expr value = mutate(op->value);
    if (value.dtype().is_integer() && value.dtype().is_scalar() && bound_.insert(op->var.get()).second)
      ana_.bind(op->var, value);
    Stmt body = mutate(op->body);
    if (value.same_as(op->value) && body.same_as(op->body)) return to_stmt(op);
    return make_stmt<LetStmtNode>(op->var, value, body);
  }

  Stmt mutate_(const IfThenElseNode* op) override {
    Expr cond = mutate(op->condition);
    Expr plain = strip_likely(cond);
    if (auto c = te::as_const_int(plain)) {
      if (*c) return mutate(op->then_case);
      return op->else_case.defined() ? mutate(op->else_case) : no_op();
    }
    if (ana_.can_prove(plain)) return mutate(op->then_case);
    if (ana_.can_prove(!plain)) return op->else_case.defined() ? mutate(op->else_case) : no_op();
    Stmt then_case = mutate(op->then_case);
    Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
    if (else_case.defined() && is_no_op(else_case)) else_case = Stmt();
    if (is_no_op(then_case) && !else_case.defined()) return no_op();
    if (cond.same_as(op->condition) && then_case.same_as(op->then_case) && else_case.same_as(op->else_case))
      return to_stmt(op);
    return make_stmt<IfThenElseNode>(cond, then_case, else_case);
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
      parts.push_back(std::move(n));
    }
    if (!changed) return to_stmt(op);
    return seq(std::move(parts));
  }

  Stmt mutate_(const AssertStmtNode* op) override {
    Expr cond = mutate(op->condition);
    if (auto c = te::as_const_int(cond); c && *c) return mutate(op->body);
    Stmt body = mutate(op->body);
    if (cond.same_as(op->condition) && body.same_as(op->body)) return to_stmt(op);
    return make_stmt<AssertStmtNode>(cond, op->message, body);
  }

 private:
  te::Analyzer ana_;
  std::unordered_set<const te::VarNode*> bound_;
};

}  // namespace

Stmt simplify(const Stmt& s) { return StmtSimplifier().mutate(s); }

}  // namespace loom::lowering
