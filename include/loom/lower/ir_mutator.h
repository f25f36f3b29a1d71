// IRMutator: the expression mutator extended to statements.
#pragma once
#include "loom/lower/stmt.h"
#include "loom/te/expr_functor.h"

namespace loom::lowering {

/// Rebuilds statements bottom-up, keeping unchanged subtrees shared.
class IRMutator : public te::ExprMutator {
 public:
  using te::ExprMutator::mutate;
  virtual Stmt mutate(const Stmt& s);

 protected:
  using te::ExprMutator::mutate_;
  virtual Stmt mutate_(const LetStmtNode* op);
  virtual Stmt mutate_(const AttrStmtNode* op);
  virtual Stmt mutate_(const AssertStmtNode* op);
  virtual Stmt mutate_(const ProducerStoreNode* op);
  virtual Stmt mutate_(const ProducerRealizeNode* op);
  virtual Stmt mutate_(const StoreNode* op);
  virtual Stmt mutate_(const AllocateNode* op);
  virtual Stmt mutate_(const ForNode* op);
  virtual Stmt mutate_(const WhileNode* op);
  virtual Stmt mutate_(const IfThenElseNode* op);
  virtual Stmt mutate_(const SeqStmtNode* op);
  virtual Stmt mutate_(const EvaluateNode* op);
};

/// Replaces variables in every expression of a statement.
Stmt substitute(const Stmt& s, const te::VarMap& vmap);

}  // namespace loom::lowering
