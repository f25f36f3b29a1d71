// predicate_select_loads under deeply nested selects: each load's predicate is one condition
// or one variable (the conjunction bound once per arm by a Let around its select), so the
// pass's output grows linearly with the nesting, not with its square.
#include <gtest/gtest.h>

#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"

namespace loom::lowering {
namespace {

using te::make;

/// for i in [0, n): B[i] = select(i < 1, A[i], select(i < 2, A[i - 1], ... A[i - (n - 1)])).
Stmt select_chain(int n) {
  Var a("A", DataType::Handle()), b("B", DataType::Handle()), i("i");
  auto load = [&](int k) { return make<te::LoadNode>(DataType::Float(32), a, Expr(i) - Expr(k), Expr()); };
  Expr e = load(n - 1);
  for (int k = n - 1; k-- > 0;) e = te::select(Expr(i) < Expr(k + 1), load(k), e);
  Stmt store = make_stmt<StoreNode>(b, e, Expr(i), Expr());
  return make_stmt<ForNode>(i, Expr(0), Expr(n), ForKind::kSerial, store);
}

struct Counts : IRVisitor {
  int ands = 0, lets = 0, loads = 0, bad_predicates = 0;
  using IRVisitor::visit;
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    ands += e.kind() == te::ExprKind::And;
    lets += e.kind() == te::ExprKind::Let;
    if (const auto* l = e.as<te::LoadNode>()) {
      ++loads;
      // One condition or one variable: no conjunction spelled out in the load.
      if (!l->predicate.defined() || l->predicate.kind() == te::ExprKind::And) ++bad_predicates;
    }
    IRVisitor::visit(e);
  }
};

TEST(PredicateSelectLoads, NestedSelectsBindTheirConjunctionsOnce) {
  const int n = 300;
  Counts c;
  c.visit(predicate_select_loads(select_chain(n)));
  EXPECT_EQ(c.loads, n);
  EXPECT_EQ(c.bad_predicates, 0);
  // One Let and one And per arm from the second level on (spelled out per load: n^2 / 2).
  EXPECT_LE(c.ands, 2 * n);
  EXPECT_LE(c.lets, 2 * n);
  EXPECT_GT(c.lets, 0);
}

TEST(PredicateSelectLoads, OneLevelNeedsNoLet) {
  Var a("A", DataType::Handle()), b("B", DataType::Handle()), i("i");
  Expr pad = te::select(Expr(i) >= Expr(2), make<te::LoadNode>(DataType::Float(32), a, Expr(i) - Expr(2), Expr()),
                        te::make_const(DataType::Float(32), 0.0));
  Stmt s = make_stmt<ForNode>(i, Expr(0), Expr(10), ForKind::kSerial, make_stmt<StoreNode>(b, pad, Expr(i), Expr()));
  Counts c;
  c.visit(predicate_select_loads(s));
  EXPECT_EQ(c.loads, 1);
  EXPECT_EQ(c.lets, 0);
  EXPECT_EQ(c.bad_predicates, 0);
}

}  // namespace
}  // namespace loom::lowering
