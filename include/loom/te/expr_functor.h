// ExprVisitor and ExprMutator: the one visitor and the one mutator of the expression IR.
// lower/ir_visitor.h extends both to statements.
#pragma once
#include <unordered_map>

#include "loom/te/expr.h"

namespace loom::te {

/// Walks an expression tree. Override visit_ for the nodes of interest and call the base
/// to keep walking children.
class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  virtual void visit(const Expr& e);

 protected:
  virtual void visit_(const IntImmNode*) {}
  virtual void visit_(const FloatImmNode*) {}
  virtual void visit_(const StringImmNode*) {}
  virtual void visit_(const VarNode*) {}
  virtual void visit_(const AddNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const SubNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const MulNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const DivNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const ModNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const FloorDivNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const FloorModNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const MinNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const MaxNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const EQNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const NENode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const LTNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const LENode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const GTNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const GENode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const AndNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const OrNode* op) { visit_binary(op->a, op->b); }
  virtual void visit_(const NotNode* op);
  virtual void visit_(const SelectNode* op);
  virtual void visit_(const CastNode* op);
  virtual void visit_(const CallNode* op);
  virtual void visit_(const LetNode* op);
  virtual void visit_(const ProducerLoadNode* op);
  virtual void visit_(const ReduceNode* op);
  virtual void visit_(const LoadNode* op);
  virtual void visit_(const RampNode* op);
  virtual void visit_(const BroadcastNode* op);
  void visit_binary(const Expr& a, const Expr& b) { visit(a); visit(b); }
};

/// Rebuilds an expression bottom-up. Each handler returns the node itself when nothing
/// below it changed, so unchanged subtrees stay shared.
class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  virtual Expr mutate(const Expr& e);

 protected:
  virtual Expr mutate_(const IntImmNode* op) { return to_expr(op); }
  virtual Expr mutate_(const FloatImmNode* op) { return to_expr(op); }
  virtual Expr mutate_(const StringImmNode* op) { return to_expr(op); }
  virtual Expr mutate_(const VarNode* op) { return to_expr(op); }
  virtual Expr mutate_(const AddNode* op);
  virtual Expr mutate_(const SubNode* op);
  virtual Expr mutate_(const MulNode* op);
  virtual Expr mutate_(const DivNode* op);
  virtual Expr mutate_(const ModNode* op);
  virtual Expr mutate_(const FloorDivNode* op);
  virtual Expr mutate_(const FloorModNode* op);
  virtual Expr mutate_(const MinNode* op);
  virtual Expr mutate_(const MaxNode* op);
  virtual Expr mutate_(const EQNode* op);
  virtual Expr mutate_(const NENode* op);
  virtual Expr mutate_(const LTNode* op);
  virtual Expr mutate_(const LENode* op);
  virtual Expr mutate_(const GTNode* op);
  virtual Expr mutate_(const GENode* op);
  virtual Expr mutate_(const AndNode* op);
  virtual Expr mutate_(const OrNode* op);
  virtual Expr mutate_(const NotNode* op);
  virtual Expr mutate_(const SelectNode* op);
  virtual Expr mutate_(const CastNode* op);
  virtual Expr mutate_(const CallNode* op);
  virtual Expr mutate_(const LetNode* op);
  virtual Expr mutate_(const ProducerLoadNode* op);
  virtual Expr mutate_(const ReduceNode* op);
  virtual Expr mutate_(const LoadNode* op);
  virtual Expr mutate_(const RampNode* op);
  virtual Expr mutate_(const BroadcastNode* op);
  /// Mutates each element; returns true if any changed.
  bool mutate_array(const std::vector<Expr>& in, std::vector<Expr>* out);
};

/// Calls `f` on every node of `e`, children before parents.
void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f);

using VarMap = std::unordered_map<const VarNode*, Expr>;
/// Replaces variables by expressions.
Expr substitute(const Expr& e, const VarMap& vmap);
/// True if `e` mentions any variable for which `pred` holds.
bool expr_uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred);
inline bool expr_uses_var(const Expr& e, const Var& v) {
  return expr_uses_var(e, [&](const VarNode* n) { return n == v.get(); });
}

}  // namespace loom::te
