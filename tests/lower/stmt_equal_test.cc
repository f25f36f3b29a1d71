// Structural equality and hashing of loop-IR statements.
#include <gtest/gtest.h>

#include "loom/lower/stmt.h"

namespace loom::lowering {
namespace {

using te::make;

const DataType f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);

Expr load(const Var& b, Expr idx) { return make<te::LoadNode>(f32, b, std::move(idx), Expr()); }
Stmt store(const Var& b, Expr v, Expr idx) { return make_stmt<StoreNode>(b, std::move(v), std::move(idx), Expr()); }
Stmt loop(const Var& v, Expr ext, Stmt body, ForKind k = ForKind::kSerial) {
  return make_stmt<ForNode>(v, Expr(0), std::move(ext), k, std::move(body));
}

/// The buffers a nest reads and writes: free variables, shared by every nest of a test.
struct Buffers {
  Var A{"A", DataType::Handle()}, B{"B", DataType::Handle()}, C{"C", DataType::Handle()};
};

/// C[i*n + j] = A[i*k + r] * B[r*n + j] summed over r: a matmul nest built with fresh loop
/// variables named `prefix`i, `prefix`j, `prefix`r, with the given extents and kinds.
struct NestSpec {
  std::string prefix = "";
  int64_t m = 8, n = 16, k = 4;
  ForKind outer = ForKind::kSerial, inner = ForKind::kSerial;
  int a_offset = 0;  // added to A's index
};
Stmt matmul_nest(const Buffers& b, const NestSpec& s) {
  Var i(s.prefix + "i", i32), j(s.prefix + "j", i32), r(s.prefix + "r", i32);
  Expr c_idx = i * Expr(int(s.n)) + j;
  Expr prod = load(b.A, i * Expr(int(s.k)) + r + Expr(s.a_offset)) * load(b.B, r * Expr(int(s.n)) + j);
  Stmt body = store(b.C, load(b.C, c_idx) + prod, c_idx);
  return loop(i, Expr(int(s.m)), loop(j, Expr(int(s.n)), loop(r, Expr(int(s.k)), body), s.inner), s.outer);
}

TEST(StmtStructuralEqual, EqualNests) {
  Buffers b;
  Stmt x = matmul_nest(b, {}), y = matmul_nest(b, {});
  EXPECT_FALSE(x.same_as(y));
  EXPECT_TRUE(structural_equal(x, y));
  EXPECT_TRUE(structural_equal(x, x));
  EXPECT_EQ(structural_hash(x), structural_hash(y));
}

TEST(StmtStructuralEqual, LoopVariablesRenamedConsistently) {
  Buffers b;
  Stmt x = matmul_nest(b, {.prefix = ""}), y = matmul_nest(b, {.prefix = "renamed_"});
  EXPECT_TRUE(structural_equal(x, y));
  EXPECT_EQ(structural_hash(x), structural_hash(y));
}

TEST(StmtStructuralEqual, SwappedLoopVariablesDiffer) {
  // The same loops, but the body uses j where the other uses i: not a consistent renaming.
  Buffers b;
  Var i("i", i32), j("j", i32);
  Stmt x = loop(i, Expr(8), loop(j, Expr(8), store(b.C, load(b.A, i * Expr(8) + j), i * Expr(8) + j)));
  Stmt y = loop(i, Expr(8), loop(j, Expr(8), store(b.C, load(b.A, j * Expr(8) + i), i * Expr(8) + j)));
  EXPECT_FALSE(structural_equal(x, y));
  EXPECT_NE(structural_hash(x), structural_hash(y));
}

TEST(StmtStructuralEqual, NestsDifferingInOneIndex) {
  Buffers b;
  Stmt x = matmul_nest(b, {}), y = matmul_nest(b, {.a_offset = 1});
  EXPECT_FALSE(structural_equal(x, y));
  EXPECT_NE(structural_hash(x), structural_hash(y));
}

TEST(StmtStructuralEqual, NestsDifferingInOneExtent) {
  Buffers b;
  Stmt x = matmul_nest(b, {}), y = matmul_nest(b, {.k = 5});
  EXPECT_FALSE(structural_equal(x, y));
  EXPECT_NE(structural_hash(x), structural_hash(y));
}

TEST(StmtStructuralEqual, NestsDifferingInOneLoopKind) {
  Buffers b;
  Stmt x = matmul_nest(b, {}), y = matmul_nest(b, {.outer = ForKind::kParallel}), z = matmul_nest(b, {.inner = ForKind::kUnrolled});
  EXPECT_FALSE(structural_equal(x, y));
  EXPECT_FALSE(structural_equal(x, z));
  EXPECT_NE(structural_hash(x), structural_hash(y));
  EXPECT_NE(structural_hash(x), structural_hash(z));
}

TEST(StmtStructuralEqual, FreeVariablesCompareByIdentity) {
  // Same shape, other buffers: the buffers are free, so the nests differ.
  Buffers b, other;
  EXPECT_FALSE(structural_equal(matmul_nest(b, {}), matmul_nest(other, {})));
  // A free scalar used as an extent: the same Var is equal, another one of the same name is not.
  Var n("n", i32), n2("n", i32), i("i", i32);
  Stmt x = loop(i, n, store(b.C, load(b.A, i), i));
  // A loop over a fresh variable whose body still uses the other loop's i (free here).
  EXPECT_FALSE(structural_equal(x, loop(Var("i", i32), n, store(b.C, load(b.A, i), i))));
  Var i2("i2", i32);
  EXPECT_TRUE(structural_equal(x, loop(i2, n, store(b.C, load(b.A, i2), i2))));
  EXPECT_FALSE(structural_equal(x, loop(i2, n2, store(b.C, load(b.A, i2), i2))));
}

TEST(StmtStructuralEqual, LetAllocateAndBranches) {
  // LetStmt and Allocate bind their variables too; IfThenElse, Seq and Evaluate compare
  // part by part.
  auto make = [](const std::string& p, int c) {
    Var x(p + "x", i32), t(p + "tmp", DataType::Handle()), i(p + "i", i32);
    Stmt fill = loop(i, Expr(4), store(t, te::cast(f32, x + i), i));
    Stmt branch = make_stmt<IfThenElseNode>(x > Expr(c), fill, no_op());
    Stmt alloc = make_stmt<AllocateNode>(t, f32, std::vector<Expr>{Expr(4)}, "global", branch);
    return make_stmt<LetStmtNode>(x, Expr(7), alloc);
  };
  EXPECT_TRUE(structural_equal(make("a_", 3), make("b_", 3)));
  EXPECT_EQ(structural_hash(make("a_", 3)), structural_hash(make("b_", 3)));
  EXPECT_FALSE(structural_equal(make("a_", 3), make("a_", 4)));
  EXPECT_NE(structural_hash(make("a_", 3)), structural_hash(make("a_", 4)));
  EXPECT_FALSE(structural_equal(make("a_", 3), no_op()));
  EXPECT_TRUE(structural_equal(Stmt(), Stmt()));
  EXPECT_FALSE(structural_equal(make("a_", 3), Stmt()));
}

}  // namespace
}  // namespace loom::lowering
