// IRMutator: statement dispatch and the default rebuild of changed children.
#include "loom/lower/ir_mutator.h"

namespace loom::lowering {

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
    case StmtKind::LetStmt: return mutate_(s.as<LetStmtNode>());
    case StmtKind::AttrStmt: return mutate_(s.as<AttrStmtNode>());
    case StmtKind::AssertStmt: return mutate_(s.as<AssertStmtNode>());
    case StmtKind::ProducerStore: return mutate_(s.as<ProducerStoreNode>());
    case StmtKind::ProducerRealize: return mutate_(s.as<ProducerRealizeNode>());
    case StmtKind::Store: return mutate_(s.as<StoreNode>());
    case StmtKind::Allocate: return mutate_(s.as<AllocateNode>());
    case StmtKind::For: return mutate_(s.as<ForNode>());
    case StmtKind::While: return mutate_(s.as<WhileNode>());
    case StmtKind::IfThenElse: return mutate_(s.as<IfThenElseNode>());
    case StmtKind::Seq: return mutate_(s.as<SeqStmtNode>());
    case StmtKind::Evaluate: return mutate_(s.as<EvaluateNode>());
  }
  return s;
}

namespace {
Expr mutate_opt(IRMutator* m, const Expr& e) { return e.defined() ? m->mutate(e) : e; }
}  // namespace

Stmt IRMutator::mutate_(const LetStmtNode* op) {
  Expr value = mutate(op->value);
  Stmt body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return to_stmt(op);
  return make_stmt<LetStmtNode>(op->var, value, body);
}

Stmt IRMutator::mutate_(const AttrStmtNode* op) {
  Expr value = mutate_opt(this, op->value);
  Stmt body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return to_stmt(op);
  return make_stmt<AttrStmtNode>(op->iter_var, op->var, op->key, value, body);
}

Stmt IRMutator::mutate_(const AssertStmtNode* op) {
  Expr cond = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (cond.same_as(op->condition) && body.same_as(op->body)) return to_stmt(op);
  return make_stmt<AssertStmtNode>(cond, op->message, body);
}

Stmt IRMutator::mutate_(const ProducerStoreNode* op) {
  Expr value = mutate(op->value);
  std::vector<Expr> idx;
  bool changed = mutate_array(op->indices, &idx);
  if (!changed && value.same_as(op->value)) return to_stmt(op);
  return make_stmt<ProducerStoreNode>(op->tensor, value, std::move(idx));
}

Stmt IRMutator::mutate_(const ProducerRealizeNode* op) {
  bool changed = false;
  std::vector<Range> bounds;
  for (const Range& r : op->bounds) {
    Expr mn = mutate(r.min), ext = mutate(r.extent);
    changed |= !mn.same_as(r.min) || !ext.same_as(r.extent);
    bounds.emplace_back(mn, ext);
  }
  Stmt body = mutate(op->body);
  if (!changed && body.same_as(op->body)) return to_stmt(op);
  auto n = std::make_shared<ProducerRealizeNode>(op->tensor, std::move(bounds), op->scope, body);
  n->align = op->align;
  n->order = op->order;
  return Stmt(std::move(n));
}

Stmt IRMutator::mutate_(const StoreNode* op) {
  Expr buf = mutate(op->buffer_var);
  Var new_buf = op->buffer_var;
  if (buf.as<te::VarNode>() && !buf.same_as(op->buffer_var))
    new_buf = Var(std::static_pointer_cast<const te::VarNode>(buf.node()));
  Expr value = mutate(op->value);
  Expr index = mutate(op->index);
  Expr pred = mutate_opt(this, op->predicate);
  if (new_buf.same_as(op->buffer_var) && value.same_as(op->value) && index.same_as(op->index) &&
      pred.same_as(op->predicate))
    return to_stmt(op);
  return make_stmt<StoreNode>(new_buf, value, index, pred);
}

Stmt IRMutator::mutate_(const AllocateNode* op) {
  std::vector<Expr> ext;
  bool changed = mutate_array(op->extents, &ext);
  Stmt body = mutate(op->body);
  if (!changed && body.same_as(op->body)) return to_stmt(op);
  return make_stmt<AllocateNode>(op->buffer_var, op->dtype, std::move(ext), op->scope, body);
}

Stmt IRMutator::mutate_(const ForNode* op) {
  Expr mn = mutate(op->min);
  Expr ext = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return to_stmt(op);
  auto n = std::make_shared<ForNode>(op->loop_var, mn, ext, op->for_kind, body, op->thread_tag);
  n->annotations = op->annotations;
  return Stmt(std::move(n));
}

Stmt IRMutator::mutate_(const WhileNode* op) {
  Expr cond = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (cond.same_as(op->condition) && body.same_as(op->body)) return to_stmt(op);
  return make_stmt<WhileNode>(cond, body);
}

Stmt IRMutator::mutate_(const IfThenElseNode* op) {
  Expr cond = mutate(op->condition);
  Stmt then_case = mutate(op->then_case);
  Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : op->else_case;
  if (cond.same_as(op->condition) && then_case.same_as(op->then_case) && else_case.same_as(op->else_case))
    return to_stmt(op);
  return make_stmt<IfThenElseNode>(cond, then_case, else_case);
}

Stmt IRMutator::mutate_(const SeqStmtNode* op) {
  std::vector<Stmt> parts;
  parts.reserve(op->seq.size());
  bool changed = false;
  for (const Stmt& s : op->seq) {
    Stmt n = mutate(s);
    changed |= !n.same_as(s);
    parts.push_back(std::move(n));
  }
  if (!changed) return to_stmt(op);
  return seq(std::move(parts));
}

Stmt IRMutator::mutate_(const EvaluateNode* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return to_stmt(op);
  return make_stmt<EvaluateNode>(v);
}

namespace {
class StmtSubstituter : public IRMutator {
 public:
  explicit StmtSubstituter(const te::VarMap& vmap) : vmap_(vmap) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override { return te::substitute(e, vmap_); }

 private:
  const te::VarMap& vmap_;
};
}  // namespace

Stmt substitute(const Stmt& s, const te::VarMap& vmap) {
  if (vmap.empty()) return s;
  return StmtSubstituter(vmap).mutate(s);
}

}  // namespace loom::lowering
