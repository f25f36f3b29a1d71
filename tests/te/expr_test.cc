// Expression construction: type promotion, folding, printing, structure, substitution.
#include <gtest/gtest.h>

#include <cfloat>
#include <climits>

#include "loom/te/expr.h"
#include "loom/te/expr_functor.h"
#include "loom/te/tensor.h"

namespace loom::te {
namespace {

TEST(ExprTest, LiteralsHaveTheirDefaultTypes) {
  EXPECT_EQ(Expr(3).dtype(), DataType::Int(32));
  EXPECT_EQ(Expr(int64_t(3)).dtype(), DataType::Int(64));
  EXPECT_EQ(Expr(1.5f).dtype(), DataType::Float(32));
  EXPECT_EQ(Expr(1.5).dtype(), DataType::Float(32));
  EXPECT_EQ(Var("x").dtype(), DataType::Int(32));
}

TEST(ExprTest, ConstantsFold) {
  EXPECT_EQ(as_const_int(Expr(2) + 3), 5);
  EXPECT_EQ(as_const_int(Expr(7) - 10), -3);
  EXPECT_EQ(as_const_int(Expr(6) * 7), 42);
  EXPECT_EQ(as_const_float(Expr(1.5f) * 2.0f), 3.0);
  EXPECT_EQ(as_const_int(min(Expr(4), 9)), 4);
  EXPECT_EQ(as_const_int(max(Expr(4), 9)), 9);
  EXPECT_EQ(as_const_int(-Expr(5)), -5);
  EXPECT_EQ(as_const_int(Expr(3) < 4), 1);
  EXPECT_EQ((Expr(3) < 4).dtype(), DataType::Bool());
}

TEST(ExprTest, DivisionRoundsLikeC) {
  EXPECT_EQ(as_const_int(Expr(7) / 2), 3);
  EXPECT_EQ(as_const_int(Expr(-7) / 2), -3);
  EXPECT_EQ(as_const_int(Expr(-7) % 2), -1);
  EXPECT_EQ(as_const_int(floordiv(-7, 2)), -4);
  EXPECT_EQ(as_const_int(floormod(-7, 2)), 1);
  EXPECT_EQ(as_const_int(floormod(7, -2)), -1);
  EXPECT_EQ(as_const_float(Expr(7.0f) / 2.0f), 3.5);
  EXPECT_THROW(Expr(1) / 0, Error);
}

TEST(ExprTest, IdentitiesSimplify) {
  Var x("x");
  EXPECT_TRUE((x + 0).same_as(x));
  EXPECT_TRUE((0 + x).same_as(x));
  EXPECT_TRUE((x - 0).same_as(x));
  EXPECT_TRUE((x * 1).same_as(x));
  EXPECT_TRUE((1 * x).same_as(x));
  EXPECT_TRUE(is_zero(x * 0));
  EXPECT_TRUE((x / 1).same_as(x));
  EXPECT_TRUE(is_zero(x % 1));
  EXPECT_TRUE(((x < 3) && true).same_as(x < 3) || structural_equal((x < 3) && true, x < 3));
  EXPECT_TRUE(is_zero((x < 3) && false));
}

TEST(ExprTest, IntConstantMeetsFloatOperand) {
  Var f("f", DataType::Float(32));
  Expr e = f + 1;
  EXPECT_EQ(e.dtype(), DataType::Float(32));
  auto* add = e.as<AddNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->b.as<FloatImmNode>()->value, 1.0);
  Var h("h", DataType::Float(16));
  EXPECT_EQ((h * 2.5f).dtype(), DataType::Float(16));
  EXPECT_EQ((h * 2).dtype(), DataType::Float(16));
}

/// The loom::Error message of `f`, or "" if it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExprTest, ExprsOfDifferentFloatOrIntTypesNeedACast) {
  Var i("i");
  Var f("f", DataType::Float(32));
  Var d("d", DataType::Float(64));
  std::string e = error_of([&] { (void)(f + i); });
  EXPECT_NE(e.find("operator +: operands have different types, float32 (f) and int32 (i); cast one with te::cast"),
            std::string::npos)
      << e;
  e = error_of([&] { (void)(i * f); });
  EXPECT_NE(e.find("int32 (i) and float32 (f)"), std::string::npos) << e;
  e = error_of([&] { (void)(f - d); });
  EXPECT_NE(e.find("float32 (f) and float64 (d)"), std::string::npos) << e;
  e = error_of([&] { (void)te::max(f, d); });
  EXPECT_NE(e.find("operator max"), std::string::npos) << e;
  // Explicit casts and C++ literals are fine: a literal takes the other operand's type.
  EXPECT_EQ((cast(DataType::Float(32), i) * f).dtype(), DataType::Float(32));
  EXPECT_EQ((f + cast(DataType::Float(32), d)).dtype(), DataType::Float(32));
  EXPECT_EQ((d + 1.5f).dtype(), DataType::Float(64));
  EXPECT_EQ((i * 0.5f).dtype(), DataType::Float(32));
}

TEST(ExprTest, MismatchedIntWidthsWiden) {
  Var a("a", DataType::Int(32));
  Var b("b", DataType::Int(64));
  EXPECT_EQ((a + b).dtype(), DataType::Int(64));
  EXPECT_EQ((b + a).dtype(), DataType::Int(64));
  Var c("c", DataType::Int(8));
  EXPECT_EQ((c * a).dtype(), DataType::Int(32));
  // A constant takes the type of the variable it meets.
  EXPECT_EQ((b + 1).dtype(), DataType::Int(64));
  EXPECT_EQ((c + 1).dtype(), DataType::Int(8));
  EXPECT_EQ((a + int64_t(1)).dtype(), DataType::Int(32));
}

TEST(ExprTest, ScalarBroadcastsToVector) {
  Var x("x", DataType::Float(32));
  Expr v = make<BroadcastNode>(x, 4);
  Expr e = v + 1.0f;
  EXPECT_EQ(e.dtype(), DataType::Float(32, 4));
  Expr r = make<RampNode>(Var("i"), Expr(1), 8);
  EXPECT_EQ((r * 2).dtype(), DataType::Int(32, 8));
  EXPECT_EQ((r < 3).dtype(), DataType::Bool(8));
  EXPECT_THROW(make<RampNode>(Var("i"), Expr(1), 8) + make<RampNode>(Var("j"), Expr(1), 4), Error);
}

TEST(ExprTest, LogicalOperatorsProduceBool) {
  Var x("x"), y("y");
  EXPECT_EQ(((x < y) && (y < 3)).dtype(), DataType::Bool());
  EXPECT_EQ(((x < y) || (y < 3)).dtype(), DataType::Bool());
  EXPECT_EQ((!(x < y)).dtype(), DataType::Bool());
  EXPECT_EQ((x == y).dtype(), DataType::Bool());
  EXPECT_EQ(as_const_int(!(Expr(1) < 2)), 0);
}

TEST(ExprTest, SelectAndCast) {
  Var x("x");
  Expr s = select(x < 0, 0, x);
  EXPECT_EQ(s.dtype(), DataType::Int(32));
  EXPECT_EQ(to_string(s), "select(x < 0, 0, x)");
  EXPECT_TRUE(select(Expr(1) < 2, x, 5).same_as(x));
  EXPECT_TRUE(cast(DataType::Int(32), x).same_as(x));
  EXPECT_EQ(as_const_float(cast(DataType::Float(32), Expr(3))), 3.0);
  EXPECT_EQ(as_const_int(cast(DataType::Int(8), Expr(300))), 44);
  EXPECT_EQ(as_const_int(cast(DataType::Int(32), Expr(2.75f))), 2);
  EXPECT_EQ(to_string(cast(DataType::Float(32), x)), "float32(x)");
}

TEST(ExprTest, IntrinsicsAreCalls) {
  Var f("f", DataType::Float(32));
  const std::pair<Expr, const char*> cases[] = {
      {exp(f), "exp"},     {log(f), "log"},     {sqrt(f), "sqrt"},   {tanh(f), "tanh"},
      {sigmoid(f), "sigmoid"}, {abs(f), "fabs"}, {floor(f), "floor"}, {ceil(f), "ceil"},
      {round(f), "round"}, {pow(f, 2.0f), "pow"}, {erf(f), "erf"},
  };
  for (auto& [e, name] : cases) {
    auto* c = e.as<CallNode>();
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->name, name);
    EXPECT_EQ(e.dtype(), DataType::Float(32));
  }
  EXPECT_EQ(to_string(exp(f)), "exp(f)");
  // Integer abs is a select; integer exp computes in float32.
  Var i("i");
  EXPECT_NE(abs(i).as<SelectNode>(), nullptr);
  EXPECT_EQ(as_const_int(abs(Expr(-4))), 4);
  EXPECT_EQ(exp(i).dtype(), DataType::Float(32));
}

TEST(ExprTest, LimitsPerType) {
  EXPECT_EQ(as_const_float(max_value(DataType::Float(32))), double(FLT_MAX));
  EXPECT_EQ(as_const_float(min_value(DataType::Float(32))), -double(FLT_MAX));
  EXPECT_EQ(as_const_int(max_value(DataType::Int(32))), INT_MAX);
  EXPECT_EQ(as_const_int(min_value(DataType::Int(32))), INT_MIN);
  EXPECT_EQ(as_const_int(max_value(DataType::Int(8))), 127);
  EXPECT_EQ(as_const_int(min_value(DataType::Int(8))), -128);
  EXPECT_EQ(as_const_int(max_value(DataType::UInt(8))), 255);
  EXPECT_EQ(as_const_int(min_value(DataType::UInt(16))), 0);
  EXPECT_EQ(as_const_float(max_value(DataType::Float(16))), 65504.0);
}

TEST(ExprTest, MakeConstAndQueries) {
  EXPECT_EQ(make_const(DataType::Float(32), 2).dtype(), DataType::Float(32));
  Expr v = make_const(DataType::Int(32, 4), 7);
  EXPECT_NE(v.as<BroadcastNode>(), nullptr);
  EXPECT_EQ(as_const_int(v), 7);
  EXPECT_TRUE(is_zero(make_zero(DataType::Int(64))));
  EXPECT_FALSE(as_const_int(Var("x")).has_value());
  EXPECT_FALSE(as_const_float(Expr(1)).has_value());
}

TEST(ExprTest, Printing) {
  Var i("i"), ii("ii"), a("a"), b("b");
  EXPECT_EQ(to_string(i * 32 + ii), "((i*32) + ii)");
  EXPECT_EQ(to_string(floordiv(a, b)), "floordiv(a, b)");
  EXPECT_EQ(to_string(floormod(a, 4)), "floormod(a, 4)");
  EXPECT_EQ(to_string(min(a, b)), "min(a, b)");
  EXPECT_EQ(to_string(max(a + 1, b)), "max(a + 1, b)");
  EXPECT_EQ(to_string((a < b) && !(b == 3)), "((a < b) && !(b == 3))");
  Var f("f", DataType::Float(32));
  EXPECT_EQ(to_string(f * 0.5f), "(f*0.5f)");
  Var buf("buf", DataType::Handle());
  Expr ld = make<LoadNode>(DataType::Float(32, 4), buf, make<RampNode>(i * 4, Expr(1), 4), Expr());
  EXPECT_EQ(to_string(ld), "buf[ramp(i*4, 1, 4)]");
  EXPECT_EQ(to_string(make<BroadcastNode>(f, 4)), "x4(f)");
  std::ostringstream os;
  os << (a - b);
  EXPECT_EQ(os.str(), "(a - b)");
}

TEST(ExprTest, PrintsTensorReadsAndReductions) {
  Tensor A = placeholder({8, 4}, DataType::Float(32), "A");
  Tensor B = placeholder({4, 6}, DataType::Float(32), "B");
  IterVar k = reduce_axis({0, 4}, "k");
  Var i("i"), j("j");
  EXPECT_EQ(to_string(A(i, k)), "A[i, k]");
  EXPECT_EQ(to_string(sum(A(i, k) * B(k, j), {k})), "sum(A[i, k]*B[k, j], axis=[k])");
  EXPECT_EQ(to_string(max_reduce(A(i, k), {k})), "max(A[i, k], axis=[k])");
}

TEST(ExprTest, StructuralEquality) {
  Var x("x"), y("y");
  EXPECT_TRUE(structural_equal(x * 2 + 1, x * 2 + 1));
  EXPECT_FALSE(structural_equal(x * 2 + 1, x * 2 + 2));
  EXPECT_FALSE(structural_equal(x + 1, y + 1));   // variables by identity
  EXPECT_FALSE(structural_equal(x, Var("x")));     // same name, different variable
  EXPECT_FALSE(structural_equal(Expr(1), Expr(int64_t(1))));  // types differ
  EXPECT_EQ(structural_hash(x * 2 + 1), structural_hash(x * 2 + 1));
  EXPECT_NE(structural_hash(x + 1), structural_hash(y + 1));

  Tensor A = placeholder({8, 4}, DataType::Float(32), "A");
  IterVar k = reduce_axis({0, 4}, "k");
  IterVar k2 = reduce_axis({0, 4}, "k");
  // Two separately built sums over the same axis are equal; over another axis they are not.
  EXPECT_TRUE(structural_equal(sum(A(x, k), {k}), sum(A(x, k), {k})));
  EXPECT_EQ(structural_hash(sum(A(x, k), {k})), structural_hash(sum(A(x, k), {k})));
  EXPECT_FALSE(structural_equal(sum(A(x, k), {k}), sum(A(x, k2), {k2})));
  EXPECT_FALSE(structural_equal(sum(A(x, k), {k}), max_reduce(A(x, k), {k})));
}

TEST(ExprTest, SubstituteReplacesVariables) {
  Var i("i"), ii("ii"), io("io");
  Expr e = i * 32 + ii;
  VarMap m;
  m[i.get()] = io + 1;
  Expr r = substitute(e, m);
  EXPECT_EQ(to_string(r), "(((io + 1)*32) + ii)");
  EXPECT_TRUE(expr_uses_var(r, io));
  EXPECT_FALSE(expr_uses_var(r, i));
  // Nothing to replace: the same node comes back.
  VarMap none;
  none[Var("z").get()] = Expr(0);
  EXPECT_TRUE(substitute(e, none).same_as(e));
}

TEST(ExprTest, MutatorKeepsUnchangedSubtrees) {
  class RenameX : public ExprMutator {
   public:
    RenameX(Var from, Var to) : from_(std::move(from)), to_(std::move(to)) {}

   protected:
    Expr mutate_(const VarNode* op) override { return op == from_.get() ? Expr(to_) : to_expr(op); }

   private:
    Var from_, to_;
  };
  Var x("x"), y("y"), z("z");
  Expr left = y * 3;
  Expr e = left + x;
  Expr r = RenameX(x, z).mutate(e);
  auto* add = r.as<AddNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->a.same_as(left));
  EXPECT_TRUE(add->b.same_as(z));
  EXPECT_TRUE(RenameX(Var("w"), z).mutate(e).same_as(e));
}

TEST(ExprTest, PostOrderVisitsChildrenFirst) {
  Var a("a"), b("b");
  Expr e = (a + b) * 2;
  std::vector<std::string> seen;
  post_order_visit(e, [&](const Expr& n) { seen.push_back(to_string(n)); });
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0], "a");
  EXPECT_EQ(seen[1], "b");
  EXPECT_EQ(seen[2], "(a + b)");
  EXPECT_EQ(seen[3], "2");
  EXPECT_EQ(seen[4], "((a + b)*2)");
}

TEST(ExprTest, RangeFromBeginEnd) {
  Range r = Range::from_begin_end(2, 10);
  EXPECT_EQ(as_const_int(r.min), 2);
  EXPECT_EQ(as_const_int(r.extent), 8);
  IterVar iv(Range(0, 4), Var("v"), IterVarType::kDataPar);
  EXPECT_TRUE(Expr(iv).same_as(iv.var()));
}

}  // namespace
}  // namespace loom::te
