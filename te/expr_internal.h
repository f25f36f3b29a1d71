// Helpers shared by te/expr_equal.cc and te/expr_printer.cc: the operands of a binary node,
// whichever kind it is.
#pragma once
#include <utility>

#include "loom/te/expr.h"

namespace loom::te {

inline bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }

template <ExprKind K>
const BinaryNode<K>* as_bin(const ExprNode* n) {
  return static_cast<const BinaryNode<K>*>(n);
}

/// Operands of a binary node, whichever kind it is.
inline std::pair<const Expr*, const Expr*> binary_operands(const ExprNode* n) {
#define LOOM_BIN_CASE(K) \
  case ExprKind::K: return {&as_bin<ExprKind::K>(n)->a, &as_bin<ExprKind::K>(n)->b};
  switch (n->kind) {
    LOOM_BIN_CASE(Add) LOOM_BIN_CASE(Sub) LOOM_BIN_CASE(Mul) LOOM_BIN_CASE(Div) LOOM_BIN_CASE(Mod)
    LOOM_BIN_CASE(FloorDiv) LOOM_BIN_CASE(FloorMod) LOOM_BIN_CASE(Min) LOOM_BIN_CASE(Max)
    LOOM_BIN_CASE(EQ) LOOM_BIN_CASE(NE) LOOM_BIN_CASE(LT) LOOM_BIN_CASE(LE) LOOM_BIN_CASE(GT)
    LOOM_BIN_CASE(GE) LOOM_BIN_CASE(And) LOOM_BIN_CASE(Or)
    default: break;
  }
#undef LOOM_BIN_CASE
  LOOM_ICHECK(false);
  return {nullptr, nullptr};
}

}  // namespace loom::te
