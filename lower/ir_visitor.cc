// IRVisitor: statement dispatch and the default walk over children.
#include "loom/lower/ir_visitor.h"

namespace loom::lowering {

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::LetStmt: return visit_(s.as<LetStmtNode>());
    case StmtKind::AttrStmt: return visit_(s.as<AttrStmtNode>());
    case StmtKind::AssertStmt: return visit_(s.as<AssertStmtNode>());
    case StmtKind::ProducerStore: return visit_(s.as<ProducerStoreNode>());
    case StmtKind::ProducerRealize: return visit_(s.as<ProducerRealizeNode>());
    case StmtKind::Store: return visit_(s.as<StoreNode>());
    case StmtKind::Allocate: return visit_(s.as<AllocateNode>());
    case StmtKind::For: return visit_(s.as<ForNode>());
    case StmtKind::While: return visit_(s.as<WhileNode>());
    case StmtKind::IfThenElse: return visit_(s.as<IfThenElseNode>());
    case StmtKind::Seq: return visit_(s.as<SeqStmtNode>());
    case StmtKind::Evaluate: return visit_(s.as<EvaluateNode>());
  }
}

void IRVisitor::visit_(const LetStmtNode* op) {
  visit(op->value);
  visit(op->body);
}

void IRVisitor::visit_(const AttrStmtNode* op) {
  if (op->value.defined()) visit(op->value);
  visit(op->body);
}

void IRVisitor::visit_(const AssertStmtNode* op) {
  visit(op->condition);
  visit(op->body);
}

void IRVisitor::visit_(const ProducerStoreNode* op) {
  visit(op->value);
  for (const Expr& i : op->indices) visit(i);
}

void IRVisitor::visit_(const ProducerRealizeNode* op) {
  for (const Range& r : op->bounds) {
    visit(r.min);
    visit(r.extent);
  }
  visit(op->body);
}

void IRVisitor::visit_(const StoreNode* op) {
  visit(op->buffer_var);
  visit(op->value);
  visit(op->index);
  if (op->predicate.defined()) visit(op->predicate);
}

void IRVisitor::visit_(const AllocateNode* op) {
  for (const Expr& e : op->extents) visit(e);
  visit(op->body);
}

void IRVisitor::visit_(const ForNode* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}

void IRVisitor::visit_(const WhileNode* op) {
  visit(op->condition);
  visit(op->body);
}

void IRVisitor::visit_(const IfThenElseNode* op) {
  visit(op->condition);
  visit(op->then_case);
  if (op->else_case.defined()) visit(op->else_case);
}

void IRVisitor::visit_(const SeqStmtNode* op) {
  for (const Stmt& s : op->seq) visit(s);
}

void IRVisitor::visit_(const EvaluateNode* op) { visit(op->value); }

namespace {
class PostOrderStmtVisitor : public IRVisitor {
 public:
  explicit PostOrderStmtVisitor(const std::function<void(const Stmt&)>& f) : f_(f) {}
  using IRVisitor::visit;
  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    IRVisitor::visit(s);
    f_(s);
  }
  // Expressions hold no statements; skip them.
  void visit(const Expr&) override {}

 private:
  const std::function<void(const Stmt&)>& f_;
};
}  // namespace

void post_order_visit(const Stmt& s, const std::function<void(const Stmt&)>& f) {
  PostOrderStmtVisitor v(f);
  v.visit(s);
}

}  // namespace loom::lowering
