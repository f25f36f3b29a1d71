// IRVisitor: the expression visitor extended to statements.
#pragma once
#include "loom/lower/stmt.h"
#include "loom/te/expr_functor.h"

namespace loom::lowering {

/// Walks statements and the expressions in them.
class IRVisitor : public te::ExprVisitor {
 public:
  using te::ExprVisitor::visit;
  virtual void visit(const Stmt& s);

 protected:
  using te::ExprVisitor::visit_;
  virtual void visit_(const LetStmtNode* op);
  virtual void visit_(const AttrStmtNode* op);
  virtual void visit_(const AssertStmtNode* op);
  virtual void visit_(const ProducerStoreNode* op);
  virtual void visit_(const ProducerRealizeNode* op);
  virtual void visit_(const StoreNode* op);
  virtual void visit_(const AllocateNode* op);
  virtual void visit_(const ForNode* op);
  virtual void visit_(const WhileNode* op);
  virtual void visit_(const IfThenElseNode* op);
  virtual void visit_(const SeqStmtNode* op);
  virtual void visit_(const EvaluateNode* op);
};

/// Calls `f` on every statement of `s`, children before parents.
void post_order_visit(const Stmt& s, const std::function<void(const Stmt&)>& f);

}  // namespace loom::lowering
