// Arithmetic analysis: folding, canonical linear forms, div/mod/min/max rules under bounds,
// comparisons, constant bounds, interval sets and proofs.
#include "loom/te/arith.h"

#include <gtest/gtest.h>

#include <random>

#include "loom/te/expr_functor.h"

namespace {

using loom::DataType;
namespace te = loom::te;
using te::Expr;
using te::Var;

#define EXPECT_SAME(a, b)                                                                     \
  EXPECT_TRUE(te::structural_equal((a), (b))) << "got " << te::to_string(a) << ", expected " \
                                              << te::to_string(b)

Expr i64(int64_t v) { return te::make_const(DataType::Int(64), v); }

class Arith : public ::testing::Test {
 protected:
  Var x{"x"}, y{"y"}, z{"z"}, i{"i"}, ii{"ii"}, j{"j"}, k{"k"}, n{"n"};
};

// ---------------------------------------------------------------- constant folding
TEST_F(Arith, FoldsIntegerConstants) {
  auto c = [](int v) { return te::make<te::IntImmNode>(DataType::Int(32), int64_t(v)); };
  auto raw_add = te::make<te::AddNode>(DataType::Int(32), c(3), c(4));
  EXPECT_SAME(te::simplify(raw_add), Expr(7));
  auto raw = te::make<te::FloorDivNode>(DataType::Int(32), c(-7), c(2));
  EXPECT_SAME(te::simplify(raw), Expr(-4));
  EXPECT_SAME(te::simplify(te::make<te::DivNode>(DataType::Int(32), c(-7), c(2))), Expr(-3));
  EXPECT_SAME(te::simplify(te::make<te::FloorModNode>(DataType::Int(32), c(-7), c(2))), Expr(1));
  EXPECT_SAME(te::simplify(te::make<te::ModNode>(DataType::Int(32), c(-7), c(2))), Expr(-1));
  EXPECT_SAME(te::simplify(te::make<te::MinNode>(DataType::Int(32), c(3), c(-2))), Expr(-2));
  EXPECT_SAME(te::simplify(te::make<te::MaxNode>(DataType::Int(32), c(3), c(-2))), Expr(3));
  // int32 arithmetic wraps at 32 bits.
  auto big = te::make<te::MulNode>(DataType::Int(32), c(65536), c(65536));
  EXPECT_SAME(te::simplify(big), Expr(0));
}

TEST_F(Arith, FoldsFloatConstantsAndCalls) {
  auto f = [](double v) { return te::make<te::FloatImmNode>(DataType::Float(32), v); };
  auto e = te::make<te::MulNode>(DataType::Float(32), te::make<te::AddNode>(DataType::Float(32), f(1.5), f(2.0)), f(2.0));
  auto r = te::simplify(e);
  ASSERT_TRUE(r.as<te::FloatImmNode>());
  EXPECT_DOUBLE_EQ(r.as<te::FloatImmNode>()->value, 7.0);
  auto s = te::simplify(te::call(DataType::Float(32), "sqrt", {f(16.0)}));
  ASSERT_TRUE(s.as<te::FloatImmNode>());
  EXPECT_DOUBLE_EQ(s.as<te::FloatImmNode>()->value, 4.0);
  auto cmp = te::simplify(te::make<te::LTNode>(DataType::Bool(), f(1.0), f(2.0)));
  EXPECT_TRUE(te::is_one(cmp));
  // Floats are not rewritten as integers: x*0.0 stays (NaN and inf make it unsafe).
  Var xf("xf", DataType::Float(32));
  auto keep = te::simplify(te::make<te::MulNode>(DataType::Float(32), xf, f(0.0)));
  EXPECT_TRUE(keep.as<te::MulNode>());
  EXPECT_SAME(te::simplify(te::make<te::AddNode>(DataType::Float(32), xf, f(0.0))), xf);
}

TEST_F(Arith, FoldsCasts) {
  EXPECT_SAME(te::simplify(te::make<te::CastNode>(DataType::Int(64), Expr(5))), i64(5));
  auto r = te::simplify(te::make<te::CastNode>(DataType::Float(32), Expr(3)));
  ASSERT_TRUE(r.as<te::FloatImmNode>());
  EXPECT_EQ(r.as<te::FloatImmNode>()->value, 3.0);
  auto t = te::simplify(te::make<te::CastNode>(DataType::Int(32), te::make<te::FloatImmNode>(DataType::Float(32), -2.7)));
  EXPECT_SAME(t, Expr(-2));
  auto w = te::simplify(te::make<te::CastNode>(DataType::Int(8), Expr(300)));
  EXPECT_SAME(w, te::make_const(DataType::Int(8), 44));
  EXPECT_SAME(te::simplify(te::make<te::CastNode>(DataType::Int(32), x)), x);
}

// ---------------------------------------------------------------- linear canonical form
TEST_F(Arith, CancelsLinearTerms) {
  EXPECT_SAME(te::simplify((i * 32 + ii) - i * 32), ii);
  EXPECT_SAME(te::simplify((x + 3) - (x + 1)), Expr(2));
  EXPECT_SAME(te::simplify(x - x), Expr(0));
  EXPECT_SAME(te::simplify(x * 2 + x * 3 - x * 5 + y), y);
  EXPECT_SAME(te::simplify((x + y) * 4 - x * 4), y * 4);
  EXPECT_SAME(te::simplify(x + 1 + 2 + 3), x + 6);
  EXPECT_SAME(te::simplify(1 + x - 3), x - 2);
  EXPECT_SAME(te::simplify(10 - (x + 3)), 7 - x);
}

TEST_F(Arith, OrdersTermsDeterministically) {
  Expr a = te::simplify(y + x);
  Expr b = te::simplify(x + y);
  EXPECT_SAME(a, b);
  EXPECT_SAME(te::simplify(ii + i * 32), i * 32 + ii);
  EXPECT_SAME(te::simplify(z + x * y + 1), te::simplify(1 + y * x + z));
  // Terms with larger coefficients first, negative terms subtracted last, constant at the end.
  EXPECT_SAME(te::simplify(3 - y + x * 4), x * 4 - y + 3);
}

TEST_F(Arith, KeepsInt64) {
  Var a("a", DataType::Int(64));
  Expr e = te::simplify((a + i64(3)) - (a + i64(1)));
  EXPECT_EQ(e.dtype(), DataType::Int(64));
  EXPECT_SAME(e, i64(2));
  Expr f = te::simplify(a * i64(8) + a);
  EXPECT_EQ(f.dtype(), DataType::Int(64));
  EXPECT_SAME(f, a * i64(9));
}

TEST_F(Arith, FusedIndexRecombines) {
  // floordiv(f, 16)*16 + floormod(f, 16) == f, as after fuse-then-split.
  Var f("f");
  EXPECT_SAME(te::simplify(te::floordiv(f, 16) * 16 + te::floormod(f, 16)), f);
  EXPECT_SAME(te::simplify(te::floormod(f, 16) + te::floordiv(f, 16) * 16 + 1), f + 1);
  EXPECT_SAME(te::simplify((f / 8) * 8 + f % 8), f);
  // Different divisors do not merge.
  Expr keep = te::simplify(te::floordiv(f, 16) * 8 + te::floormod(f, 8));
  EXPECT_FALSE(te::structural_equal(keep, f));
}

// ---------------------------------------------------------------- div and mod
TEST_F(Arith, DivModUnderBounds) {
  te::Analyzer ana;
  ana.bind(i, te::Range(0, 16));
  ana.bind(ii, te::Range(0, 32));
  EXPECT_SAME(ana.simplify(te::floordiv(i * 32 + ii, 32)), i);
  EXPECT_SAME(ana.simplify(te::floormod(i * 32 + ii, 32)), ii);
  EXPECT_SAME(ana.simplify(te::floordiv(i * 64 + ii, 32)), i * 2);
  EXPECT_SAME(ana.simplify(te::floordiv(ii, 32)), Expr(0));
  EXPECT_SAME(ana.simplify(te::floormod(ii, 32)), ii);
  EXPECT_SAME(ana.simplify(te::floormod(ii, 64)), ii);
  EXPECT_SAME(ana.simplify(te::floordiv(ii + 32, 32)), Expr(1));
  // Truncating division: operands are non-negative, so the same rules apply.
  EXPECT_SAME(ana.simplify((i * 32 + ii) / 32), i);
  EXPECT_SAME(ana.simplify((i * 32 + ii) % 32), ii);
  // y's range is not inside one period: only the divisible part comes out.
  EXPECT_SAME(ana.simplify(te::floordiv(i * 32 + ii, 16)), i * 2 + te::floordiv(ii, 16));
  EXPECT_SAME(ana.simplify(te::floormod(i * 32 + ii, 16)), te::floormod(ii, 16));
}

TEST_F(Arith, DivModWithoutBounds) {
  // floor semantics need no bounds for the divisible part
  EXPECT_SAME(te::simplify(te::floordiv(x * 8 + y, 4)), x * 2 + te::floordiv(y, 4));
  EXPECT_SAME(te::simplify(te::floormod(x * 8 + y, 4)), te::floormod(y, 4));
  EXPECT_SAME(te::simplify(te::floordiv(x * 4, 4)), x);
  EXPECT_SAME(te::simplify(te::floormod(x * 4, 4)), Expr(0));
  EXPECT_SAME(te::simplify(te::floordiv(x, 1)), x);
  // truncating division of a possibly negative value stays
  Expr t = te::simplify((x * 8 + y) / 4);
  EXPECT_TRUE(t.as<te::DivNode>()) << te::to_string(t);
  Expr m = te::simplify((x * 8 + y) % 4);
  EXPECT_TRUE(m.as<te::ModNode>()) << te::to_string(m);
}

TEST_F(Arith, NestedDivAndMod) {
  EXPECT_SAME(te::simplify(te::floordiv(te::floordiv(x, 4), 8)), te::floordiv(x, 32));
  EXPECT_SAME(te::simplify(x / 4 / 8), x / 32);
  EXPECT_SAME(te::simplify(te::floormod(te::floormod(x, 32), 8)), te::floormod(x, 8));
  te::Analyzer ana;
  ana.bind(x, te::Range(0, 1024));
  EXPECT_SAME(ana.simplify(te::floordiv(te::floormod(x, 32), 32)), Expr(0));
  EXPECT_SAME(ana.simplify(te::floormod(te::floordiv(x, 32), 32)), te::floordiv(x, 32));
}

// ---------------------------------------------------------------- min and max
TEST_F(Arith, MinMax) {
  EXPECT_SAME(te::simplify(te::min(x + 3, x + 1)), x + 1);
  EXPECT_SAME(te::simplify(te::max(x + 3, x + 1)), x + 3);
  EXPECT_SAME(te::simplify(te::min(x, x)), x);
  te::Analyzer ana;
  ana.bind(i, te::Range(0, 16));
  EXPECT_SAME(ana.simplify(te::min(i, 16)), i);
  EXPECT_SAME(ana.simplify(te::max(i, 16)), Expr(16));
  EXPECT_SAME(ana.simplify(te::min(i * 4 + 3, 64)), i * 4 + 3);
  EXPECT_SAME(ana.simplify(te::max(i, 0)), i);
  // Undecided stays, with the constant last.
  Expr u = ana.simplify(te::min(8, i));
  EXPECT_SAME(u, te::min(i, 8));
  EXPECT_SAME(ana.simplify(te::min(x, te::min(x, y))), te::min(x, y));
}

// ---------------------------------------------------------------- comparisons and logic
TEST_F(Arith, ComparisonsUnderBounds) {
  te::Analyzer ana;
  ana.bind(i, te::Range(0, 32));
  EXPECT_TRUE(te::is_one(ana.simplify(i < 32)));
  EXPECT_TRUE(te::is_zero(ana.simplify(i >= 32)));
  EXPECT_TRUE(te::is_one(ana.simplify(i >= 0)));
  EXPECT_TRUE(te::is_zero(ana.simplify(i < 0)));
  EXPECT_TRUE(te::is_one(ana.simplify(i * 2 + 1 != 64)));
  EXPECT_TRUE(te::is_zero(ana.simplify(i == 40)));
  EXPECT_TRUE(te::is_one(te::simplify(x + 1 > x)));
  EXPECT_TRUE(te::is_one(te::simplify(x <= x)));
  // Undecided comparisons are normalized.
  EXPECT_SAME(ana.simplify(i + 1 < 16), i < 15);
  EXPECT_SAME(te::simplify(5 < x), x > 5);
  EXPECT_SAME(te::simplify(x + y < y + 8), x < 8);
  // Divided through by the gcd of the coefficients.
  EXPECT_SAME(te::simplify(x * 2 < 7), x < 4);
  EXPECT_SAME(te::simplify(x * 2 <= 7), x <= 3);
  EXPECT_SAME(te::simplify(x * 4 > -6), x > -2);
  EXPECT_SAME(te::simplify(x * 4 >= -6), x >= -1);
  EXPECT_TRUE(te::is_zero(te::simplify(x * 2 == 7)));
  EXPECT_TRUE(te::is_one(te::simplify(x * 2 + y * 4 != 3)));
  EXPECT_SAME(te::simplify(x * 6 == y * 3 + 9), x * 2 == y + 3);
}

TEST_F(Arith, Logic) {
  te::Analyzer ana;
  ana.bind(i, te::Range(0, 32));
  Expr c = x < y;
  EXPECT_SAME(ana.simplify(c && (i < 32)), c);
  EXPECT_TRUE(te::is_zero(ana.simplify(c && (i > 40))));
  EXPECT_TRUE(te::is_one(ana.simplify(c || (i < 32))));
  EXPECT_SAME(ana.simplify(c || (i > 40)), c);
  EXPECT_SAME(te::simplify(!(x < y)), x >= y);
  EXPECT_SAME(te::simplify(te::make<te::NotNode>(te::make<te::NotNode>(c))), c);
  EXPECT_TRUE(te::is_zero(te::simplify(te::make<te::AndNode>(DataType::Bool(), c, te::make<te::NotNode>(c)))));
}

TEST_F(Arith, SelectAndLikely) {
  te::Analyzer ana;
  ana.bind(i, te::Range(0, 8));
  EXPECT_SAME(ana.simplify(te::select(i < 8, x, y)), x);
  EXPECT_SAME(ana.simplify(te::select(i > 8, x, y)), y);
  EXPECT_SAME(te::simplify(te::select(x < y, z + 1, 1 + z)), z + 1);
  Expr l = te::simplify(te::call(DataType::Bool(), "likely", {x < y}));
  auto* call = l.as<te::CallNode>();
  ASSERT_TRUE(call);
  EXPECT_EQ(call->name, "likely");
  EXPECT_TRUE(te::is_one(ana.simplify(te::call(DataType::Bool(), "likely", {i < 8}))));
}

TEST_F(Arith, LetAndBoundValues) {
  Expr e = te::make<te::LetNode>(x, Expr(4), x * y + x);
  EXPECT_SAME(te::simplify(e), y * 4 + 4);
  te::Analyzer ana;
  ana.bind(n, Expr(16));
  ana.bind(i, te::Range(0, n));
  EXPECT_SAME(ana.simplify(n * 2 + i - n), i + 16);
  EXPECT_TRUE(ana.can_prove(i < 16));
  EXPECT_FALSE(ana.can_prove(i < 15));
}

TEST_F(Arith, VectorRampsAndBroadcasts) {
  Expr ramp = te::make<te::RampNode>(x * 4, Expr(1), 8);
  Expr two = te::make<te::BroadcastNode>(Expr(2), 8);
  EXPECT_SAME(te::simplify(te::make<te::AddNode>(DataType::Int(32, 8), ramp, two)),
              te::make<te::RampNode>(x * 4 + 2, Expr(1), 8));
  EXPECT_SAME(te::simplify(te::make<te::MulNode>(DataType::Int(32, 8), ramp, two)),
              te::make<te::RampNode>(x * 8, Expr(2), 8));
  Expr bx = te::make<te::BroadcastNode>(x + 1, 8);
  EXPECT_SAME(te::simplify(te::make<te::SubNode>(DataType::Int(32, 8), bx, te::make<te::BroadcastNode>(x, 8))),
              te::make<te::BroadcastNode>(Expr(1), 8));
}

TEST_F(Arith, VectorSelectOnAConstantConditionFolds) {
  // As vectorizing leaves the select of an unrolled index: the condition broadcast to lanes.
  Expr r = te::make<te::RampNode>(x, Expr(1), 8), b = te::make<te::BroadcastNode>(y, 8);
  auto vsel = [&](Expr c) { return te::make<te::SelectNode>(te::make<te::BroadcastNode>(c, 8), r, b); };
  EXPECT_SAME(te::simplify(vsel(Expr(2) == Expr(2))), r);
  EXPECT_SAME(te::simplify(vsel(Expr(2) == Expr(3))), b);
  EXPECT_TRUE(te::simplify(vsel(x < y)).as<te::SelectNode>());
}

// ---------------------------------------------------------------- div/mod of ramps
// Helpers: raw vector div/mod nodes of a ramp by a broadcast constant, as vectorize_loops
// leaves them, and the ramp/broadcast the simplifier should turn them into.
Expr ramp(Expr base, int64_t stride, int lanes) { return te::make<te::RampNode>(base, Expr(int(stride)), lanes); }
Expr bcast(Expr v, int lanes) { return te::make<te::BroadcastNode>(v, lanes); }
template <typename Node>
Expr vec(Expr a, int c) {
  int lanes = a.dtype().lanes();
  return te::make<Node>(DataType::Int(32, lanes), a, bcast(Expr(c), lanes));
}

TEST_F(Arith, FloorDivModOfAlignedRampIsBroadcastAndRamp) {
  // floordiv(ramp(x*32, 1, 32), 32) -> x; floormod -> ramp(0, 1, 32): a packed Bp[j/32][k][j%32].
  EXPECT_SAME(te::simplify(vec<te::FloorDivNode>(ramp(x * 32, 1, 32), 32)), bcast(x, 32));
  EXPECT_SAME(te::simplify(vec<te::FloorModNode>(ramp(x * 32, 1, 32), 32)), ramp(Expr(0), 1, 32));
  // c1 a multiple of c2, fewer lanes than the block.
  EXPECT_SAME(te::simplify(vec<te::FloorDivNode>(ramp(x * 64, 1, 8), 16)), bcast(x * 4, 8));
  EXPECT_SAME(te::simplify(vec<te::FloorModNode>(ramp(x * 64, 1, 8), 16)), ramp(Expr(0), 1, 8));
  // An offset inside the block: x*32 + 8 .. x*32 + 15.
  EXPECT_SAME(te::simplify(vec<te::FloorDivNode>(ramp(x * 32 + 8, 1, 8), 32)), bcast(x, 8));
  EXPECT_SAME(te::simplify(vec<te::FloorModNode>(ramp(x * 32 + 8, 1, 8), 32)), ramp(Expr(8), 1, 8));
  // The whole packed index flattens to one dense ramp: (j/32)*4096 + k*32 + j%32.
  Expr j = ramp(x * 32, 1, 32);
  Expr idx = te::make<te::AddNode>(
      DataType::Int(32, 32),
      te::make<te::AddNode>(DataType::Int(32, 32),
                            te::make<te::MulNode>(DataType::Int(32, 32), vec<te::FloorDivNode>(j, 32), bcast(Expr(4096), 32)),
                            bcast(y * 32, 32)),
      vec<te::FloorModNode>(j, 32));
  EXPECT_SAME(te::simplify(idx), ramp(x * 4096 + y * 32, 1, 32));
}

TEST_F(Arith, DivModOfRampUsesTheBaseBound) {
  // x*8 is aligned to 8 only: floormod(x*8, 32) is one of 0, 8, 16, 24, so 8 lanes stay in
  // one block of 32 but 16 lanes may not.
  EXPECT_SAME(te::simplify(vec<te::FloorDivNode>(ramp(x * 8, 1, 8), 32)), bcast(te::floordiv(x, 4), 8));
  EXPECT_SAME(te::simplify(vec<te::FloorModNode>(ramp(x * 8, 1, 8), 32)), ramp(te::floormod(x, 4) * 8, 1, 8));
  EXPECT_FALSE(te::simplify(vec<te::FloorDivNode>(ramp(x * 8, 1, 16), 32)).as<te::BroadcastNode>());
  EXPECT_FALSE(te::simplify(vec<te::FloorModNode>(ramp(x * 8, 1, 16), 32)).as<te::RampNode>());
  // A bounded base: y in [0, 4) keeps y .. y+3 inside [0, 8).
  te::Analyzer ana;
  ana.bind(y, te::Range(0, 4));
  EXPECT_SAME(ana.simplify(vec<te::FloorDivNode>(ramp(x * 8 + y, 1, 4), 8)), bcast(x, 4));
  EXPECT_SAME(ana.simplify(vec<te::FloorModNode>(ramp(x * 8 + y, 1, 4), 8)), ramp(y, 1, 4));
  // ... but y .. y+7 may cross into the next block.
  EXPECT_FALSE(ana.simplify(vec<te::FloorDivNode>(ramp(x * 8 + y, 1, 8), 8)).as<te::BroadcastNode>());
  // A negative stride walks down inside the block: x*16 + 15 .. x*16 + 8.
  EXPECT_SAME(te::simplify(vec<te::FloorDivNode>(ramp(x * 16 + 15, -1, 8), 16)), bcast(x, 8));
  EXPECT_SAME(te::simplify(vec<te::FloorModNode>(ramp(x * 16 + 15, -1, 8), 16)), ramp(Expr(15), -1, 8));
}

TEST_F(Arith, DivModOfRampByADivisorOfItsStride) {
  // stride 8 over blocks of 4: every lane moves two blocks, the remainder stays.
  EXPECT_SAME(te::simplify(vec<te::FloorDivNode>(ramp(x, 8, 4), 4)), ramp(te::floordiv(x, 4), 2, 4));
  EXPECT_SAME(te::simplify(vec<te::FloorModNode>(ramp(x, 8, 4), 4)), bcast(te::floormod(x, 4), 4));
}

TEST_F(Arith, DivModOfRampMustNotFire) {
  // Lanes crossing a block boundary: x*32 + 0 .. 63 spans two blocks of 32.
  Expr r = te::simplify(vec<te::FloorDivNode>(ramp(x * 32, 1, 64), 32));
  EXPECT_EQ(r.kind(), te::ExprKind::FloorDiv) << te::to_string(r);
  r = te::simplify(vec<te::FloorModNode>(ramp(x * 32 + 28, 1, 8), 32));
  EXPECT_EQ(r.kind(), te::ExprKind::FloorMod) << te::to_string(r);
  // Unknown alignment of the base.
  r = te::simplify(vec<te::FloorDivNode>(ramp(x, 1, 8), 8));
  EXPECT_EQ(r.kind(), te::ExprKind::FloorDiv) << te::to_string(r);
  r = te::simplify(vec<te::FloorModNode>(ramp(x * 2, 1, 8), 8));
  EXPECT_EQ(r.kind(), te::ExprKind::FloorMod) << te::to_string(r);
  // Truncating division of lanes that may be negative (x unbounded) keeps its node ...
  r = te::simplify(vec<te::DivNode>(ramp(x * 32, 1, 8), 32));
  EXPECT_EQ(r.kind(), te::ExprKind::Div) << te::to_string(r);
  r = te::simplify(vec<te::ModNode>(ramp(x * 32, 1, 8), 32));
  EXPECT_EQ(r.kind(), te::ExprKind::Mod) << te::to_string(r);
}

TEST_F(Arith, TruncDivModOfNonNegativeRamp) {
  // ... and is rewritten like floor division once every lane is known non-negative.
  te::Analyzer ana;
  ana.bind(x, te::Range(0, 100));
  EXPECT_SAME(ana.simplify(vec<te::DivNode>(ramp(x * 32, 1, 8), 32)), bcast(x, 8));
  EXPECT_SAME(ana.simplify(vec<te::ModNode>(ramp(x * 32, 1, 8), 32)), ramp(Expr(0), 1, 8));
  // A descending ramp whose last lane could be negative stays as it is.
  ana.bind(y, te::Range(0, 4));
  Expr r = ana.simplify(vec<te::DivNode>(ramp(y, -1, 8), 8));
  EXPECT_EQ(r.kind(), te::ExprKind::Div) << te::to_string(r);
}

// ---------------------------------------------------------------- constant bounds
TEST_F(Arith, ConstIntBound) {
  te::Analyzer ana;
  ana.bind(i, te::Range(0, 16));
  ana.bind(j, te::Range(-4, 8));  // [-4, 3]
  auto b = ana.const_int_bound(i * 8 + j);
  EXPECT_EQ(b.min_value, -4);
  EXPECT_EQ(b.max_value, 123);
  b = ana.const_int_bound(i - j);
  EXPECT_EQ(b.min_value, -3);
  EXPECT_EQ(b.max_value, 19);
  b = ana.const_int_bound(i * j);
  EXPECT_EQ(b.min_value, -60);
  EXPECT_EQ(b.max_value, 45);
  b = ana.const_int_bound(te::floordiv(j, 2));
  EXPECT_EQ(b.min_value, -2);
  EXPECT_EQ(b.max_value, 1);
  b = ana.const_int_bound(j / 2);
  EXPECT_EQ(b.min_value, -2);
  EXPECT_EQ(b.max_value, 1);
  b = ana.const_int_bound(te::floormod(j, 8));
  EXPECT_EQ(b.min_value, 0);
  EXPECT_EQ(b.max_value, 7);
  b = ana.const_int_bound(te::floormod(i, 32));
  EXPECT_EQ(b.min_value, 0);
  EXPECT_EQ(b.max_value, 15);
  b = ana.const_int_bound(j % 3);
  EXPECT_EQ(b.min_value, -2);
  EXPECT_EQ(b.max_value, 2);
  b = ana.const_int_bound(te::min(i, j));
  EXPECT_EQ(b.min_value, -4);
  EXPECT_EQ(b.max_value, 3);
  b = ana.const_int_bound(te::max(i, j + 20));
  EXPECT_EQ(b.min_value, 16);
  EXPECT_EQ(b.max_value, 23);
  b = ana.const_int_bound(te::select(x < y, i, j));
  EXPECT_EQ(b.min_value, -4);
  EXPECT_EQ(b.max_value, 15);
  b = ana.const_int_bound(te::make<te::LetNode>(z, i + 1, z * 2));
  EXPECT_EQ(b.min_value, 2);
  EXPECT_EQ(b.max_value, 32);
  b = ana.const_int_bound(te::cast(DataType::Int(64), i));
  EXPECT_EQ(b.min_value, 0);
  EXPECT_EQ(b.max_value, 15);
  b = ana.const_int_bound(te::cast(DataType::Int(8), i * 100));
  EXPECT_EQ(b.min_value, -128);
  EXPECT_EQ(b.max_value, 127);
}

TEST_F(Arith, ConstIntBoundInfinity) {
  te::Analyzer ana;
  Var a("a", DataType::Int(64));
  auto b = ana.const_int_bound(a);
  EXPECT_EQ(b.min_value, te::ConstIntBound::kNegInf);
  EXPECT_EQ(b.max_value, te::ConstIntBound::kPosInf);
  b = ana.const_int_bound(a * i64(2) + i64(1));
  EXPECT_EQ(b.min_value, te::ConstIntBound::kNegInf);
  EXPECT_EQ(b.max_value, te::ConstIntBound::kPosInf);
  b = ana.const_int_bound(te::floormod(a, i64(10)));
  EXPECT_EQ(b.min_value, 0);
  EXPECT_EQ(b.max_value, 9);
  b = ana.const_int_bound(te::max(a, i64(0)));
  EXPECT_EQ(b.min_value, 0);
  EXPECT_EQ(b.max_value, te::ConstIntBound::kPosInf);
  // An unbound int32 variable spans its type.
  b = ana.const_int_bound(x);
  EXPECT_EQ(b.min_value, -2147483648LL);
  EXPECT_EQ(b.max_value, 2147483647LL);
  EXPECT_TRUE(ana.const_int_bound(Expr(7)).is_const());
}

// ---------------------------------------------------------------- can_prove
TEST_F(Arith, CanProve) {
  te::Analyzer ana;
  ana.bind(i, te::Range(0, 16));
  ana.bind(j, te::Range(0, 4));
  EXPECT_TRUE(ana.can_prove(i * 4 + j < 64));
  EXPECT_FALSE(ana.can_prove(i * 4 + j < 63));
  EXPECT_TRUE(ana.can_prove(i * 4 + j >= 0));
  EXPECT_TRUE(ana.can_prove(te::floordiv(i * 4 + j, 4) == i));
  EXPECT_TRUE(ana.can_prove((x + i) - i == x));
  EXPECT_FALSE(ana.can_prove(x < y));
  EXPECT_FALSE(ana.can_prove(x > 0));
  EXPECT_TRUE(ana.can_prove_equal(x * 2 + y, y + x + x));
  EXPECT_FALSE(ana.can_prove_equal(x * 2 + y, y + x));
  EXPECT_TRUE(ana.can_prove((i < 16) && (j < 4)));
  EXPECT_FALSE(ana.can_prove((i < 16) && (j < 3)));
}

// ---------------------------------------------------------------- interval sets
TEST_F(Arith, EvalSetLinear) {
  te::IntSetMap dom{{i.get(), te::IntSet::from_range(te::Range(0, 4))},
                    {j.get(), te::IntSet::from_range(te::Range(0, 8))}};
  te::IntSet s = te::eval_set(i * 8 + j, dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, Expr(31));
  s = te::eval_set(i + k, dom);
  EXPECT_SAME(s.min, k);
  EXPECT_SAME(s.max, k + 3);
  s = te::eval_set(j - i * 2, dom);
  EXPECT_SAME(s.min, Expr(-6));
  EXPECT_SAME(s.max, Expr(7));
  s = te::eval_set(k, dom);
  EXPECT_TRUE(s.is_single_point());
  te::Range r = te::eval_set(i * 8 + j + k, dom).to_range();
  EXPECT_SAME(r.min, k);
  EXPECT_SAME(r.extent, Expr(32));
  // Correlated terms cancel before the intervals are taken.
  s = te::eval_set((i * 32 + j) - i * 32, dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, Expr(7));
  s = te::eval_set(te::floordiv(i * 8 + j, 8), dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, Expr(3));
}

TEST_F(Arith, EvalSetSymbolicExtent) {
  // i in [0, n - 1], j in [0, 3]: i*4 + j covers [0, n*4 - 1], a range of extent n*4.
  te::IntSetMap dom{{i.get(), te::IntSet::from_range(te::Range(0, n))},
                    {j.get(), te::IntSet::from_range(te::Range(0, 4))}};
  te::IntSet s = te::eval_set(i * 4 + j, dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, n * 4 - 1);
  te::Range r = s.to_range();
  EXPECT_SAME(r.extent, n * 4);
  te::IntSet u = te::union_sets({s, te::IntSet{Expr(4), n * 4 + 3}});
  EXPECT_SAME(u.min, Expr(0));
  EXPECT_SAME(u.max, n * 4 + 3);
}

TEST_F(Arith, EvalSetDivModMinMax) {
  te::IntSetMap dom{{i.get(), te::IntSet::from_range(te::Range(0, 64))},
                    {j.get(), te::IntSet::from_range(te::Range(8, 4))}};  // j in [8, 11]
  te::IntSet s = te::eval_set(te::floordiv(i, 8), dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, Expr(7));
  s = te::eval_set(te::floormod(i, 8), dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, Expr(7));
  s = te::eval_set(te::floormod(j, 16), dom);  // inside one period
  EXPECT_SAME(s.min, Expr(8));
  EXPECT_SAME(s.max, Expr(11));
  s = te::eval_set(te::min(i, j), dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, Expr(11));
  s = te::eval_set(te::max(i, j), dom);
  EXPECT_SAME(s.min, Expr(8));
  EXPECT_SAME(s.max, Expr(63));
  s = te::eval_set(i * -2, dom);
  EXPECT_SAME(s.min, Expr(-126));
  EXPECT_SAME(s.max, Expr(0));
  s = te::eval_set(te::select(x < y, i, j + 100), dom);
  EXPECT_SAME(s.min, Expr(0));
  EXPECT_SAME(s.max, Expr(111));
}

TEST_F(Arith, EvalSetUnbounded) {
  te::IntSetMap dom{{i.get(), te::IntSet::from_range(te::Range(0, 4))},
                    {j.get(), te::IntSet::from_range(te::Range(0, 4))}};
  EXPECT_TRUE(te::eval_set(i * j, dom).is_everything());
  te::IntSetMap open{{i.get(), te::IntSet{Expr(0), Expr()}}};
  te::IntSet s = te::eval_set(i + 1, open);
  EXPECT_SAME(s.min, Expr(1));
  EXPECT_FALSE(s.max.defined());
  EXPECT_THROW(s.to_range(), loom::Error);
}

TEST_F(Arith, IntSetRangesAndUnion) {
  te::IntSet p = te::IntSet::from_range(te::Range(x, 1));
  EXPECT_TRUE(p.is_single_point());
  te::Range r = p.to_range();
  EXPECT_SAME(r.min, x);
  EXPECT_SAME(r.extent, Expr(1));
  te::IntSet a = te::IntSet::from_range(te::Range(x, 8));
  EXPECT_SAME(a.max, x + 7);
  te::IntSet u = te::union_sets({a, te::IntSet{x + 4, x + 12}});
  EXPECT_SAME(u.min, x);
  EXPECT_SAME(u.max, x + 12);
  EXPECT_SAME(u.to_range().extent, Expr(13));
  EXPECT_TRUE(te::union_sets({a, te::IntSet::everything()}).is_everything());
}

// ---------------------------------------------------------------- soundness on random values
/// Evaluates an integer expression with concrete variable values.
int64_t eval_int(const Expr& e, const std::map<const te::VarNode*, int64_t>& env) {
  auto fd = [](int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; };
  switch (e.kind()) {
    case te::ExprKind::IntImm: return e.as<te::IntImmNode>()->value;
    case te::ExprKind::Var: return env.at(e.as<te::VarNode>());
    default: break;
  }
  auto* op = static_cast<const te::AddNode*>(e.get());
  int64_t a = eval_int(op->a, env), b = eval_int(op->b, env);
  switch (e.kind()) {
    case te::ExprKind::Add: return a + b;
    case te::ExprKind::Sub: return a - b;
    case te::ExprKind::Mul: return a * b;
    case te::ExprKind::Div: return a / b;
    case te::ExprKind::Mod: return a % b;
    case te::ExprKind::FloorDiv: return fd(a, b);
    case te::ExprKind::FloorMod: return a - fd(a, b) * b;
    case te::ExprKind::Min: return std::min(a, b);
    case te::ExprKind::Max: return std::max(a, b);
    case te::ExprKind::LT: return a < b;
    case te::ExprKind::LE: return a <= b;
    case te::ExprKind::GT: return a > b;
    case te::ExprKind::GE: return a >= b;
    case te::ExprKind::EQ: return a == b;
    case te::ExprKind::NE: return a != b;
    default: ADD_FAILURE() << "unexpected node in " << te::to_string(e); return 0;
  }
}

TEST_F(Arith, RandomExpressionsKeepTheirValue) {
  std::mt19937 rng(7);
  std::vector<Var> vars{x, y, z};
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  std::function<Expr(int)> gen = [&](int depth) -> Expr {
    if (depth == 0 || pick(4) == 0) return pick(2) ? Expr(vars[pick(3)]) : Expr(pick(9) - 2);
    Expr a = gen(depth - 1), b = gen(depth - 1);
    int c = pick(8) + 1;
    switch (pick(9)) {
      case 0: return a + b;
      case 1: return a - b;
      case 2: return a * c;
      case 3: return te::floordiv(a, c);
      case 4: return te::floormod(a, c);
      case 5: return te::min(a, b);
      case 6: return te::max(a, b);
      case 7: return (a + 64) / c;
      default: return b + a * c;
    }
  };
  for (int t = 0; t < 400; ++t) {
    te::Analyzer ana;
    ana.bind(x, te::Range(0, 8));
    ana.bind(y, te::Range(-4, 8));
    ana.bind(z, te::Range(0, 33));
    Expr e = gen(4);
    Expr s = ana.simplify(e);
    for (int v = 0; v < 8; ++v) {
      std::map<const te::VarNode*, int64_t> env{{x.get(), pick(8)}, {y.get(), pick(8) - 4}, {z.get(), pick(33)}};
      ASSERT_EQ(eval_int(e, env), eval_int(s, env)) << te::to_string(e) << "  =>  " << te::to_string(s);
      auto b = ana.const_int_bound(e);
      int64_t val = eval_int(e, env);
      ASSERT_GE(val, b.min_value) << te::to_string(e);
      ASSERT_LE(val, b.max_value) << te::to_string(e);
    }
  }
}

/// Lane `lane` of an integer vector expression of ramps, broadcasts and arithmetic.
int64_t eval_lane(const Expr& e, const std::map<const te::VarNode*, int64_t>& env, int lane) {
  if (e.dtype().is_scalar()) return eval_int(e, env);
  if (auto* r = e.as<te::RampNode>()) return eval_int(r->base, env) + eval_int(r->stride, env) * lane;
  if (auto* b = e.as<te::BroadcastNode>()) return eval_int(b->value, env);
  auto* op = static_cast<const te::AddNode*>(e.get());
  Var a("a"), b("b");
  std::map<const te::VarNode*, int64_t> ab{{a.get(), eval_lane(op->a, env, lane)}, {b.get(), eval_lane(op->b, env, lane)}};
  switch (e.kind()) {
    case te::ExprKind::Add: return eval_int(te::make<te::AddNode>(a.dtype(), a, b), ab);
    case te::ExprKind::Sub: return eval_int(te::make<te::SubNode>(a.dtype(), a, b), ab);
    case te::ExprKind::Mul: return eval_int(te::make<te::MulNode>(a.dtype(), a, b), ab);
    case te::ExprKind::Div: return eval_int(te::make<te::DivNode>(a.dtype(), a, b), ab);
    case te::ExprKind::Mod: return eval_int(te::make<te::ModNode>(a.dtype(), a, b), ab);
    case te::ExprKind::FloorDiv: return eval_int(te::make<te::FloorDivNode>(a.dtype(), a, b), ab);
    case te::ExprKind::FloorMod: return eval_int(te::make<te::FloorModNode>(a.dtype(), a, b), ab);
    default: ADD_FAILURE() << "unexpected node in " << te::to_string(e); return 0;
  }
}

// Div/mod of random ramps (aligned, offset, bounded and unknown bases; strides of either sign;
// lanes that do and do not cross a block) keep every lane's value under simplification.
TEST_F(Arith, RandomRampDivModKeepTheirValue) {
  std::mt19937 rng(11);
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  const int coeffs[] = {1, 2, 4, 8, 16, 32, 3};
  const int strides[] = {1, 1, 2, 3, 8, -1, -2, 0};
  const int lanes_of[] = {4, 8, 16};
  const int divisors[] = {2, 4, 8, 16, 32, 3};
  int rewritten = 0;
  for (int t = 0; t < 600; ++t) {
    te::Analyzer ana;
    ana.bind(x, te::Range(0, 40));
    ana.bind(y, te::Range(0, 4 << pick(4)));
    Expr base = x * coeffs[pick(7)] + (pick(2) ? Expr(y) : Expr(pick(40)));
    int lanes = lanes_of[pick(3)];
    Expr r = ramp(base, strides[pick(8)], lanes);
    int c = divisors[pick(6)];
    Expr e;
    switch (pick(4)) {
      case 0: e = vec<te::FloorDivNode>(r, c); break;
      case 1: e = vec<te::FloorModNode>(r, c); break;
      case 2: e = vec<te::DivNode>(r, c); break;
      default: e = vec<te::ModNode>(r, c); break;
    }
    Expr s = ana.simplify(e);
    rewritten += s.kind() != e.kind();
    for (int v = 0; v < 6; ++v) {
      std::map<const te::VarNode*, int64_t> env{{x.get(), pick(40)}, {y.get(), 0}};
      env[y.get()] = pick(int(ana.const_int_bound(y).max_value) + 1);
      for (int l = 0; l < lanes; ++l) {
        if (eval_lane(r, env, l) < 0 && (e.kind() == te::ExprKind::Div || e.kind() == te::ExprKind::Mod)) continue;
        ASSERT_EQ(eval_lane(e, env, l), eval_lane(s, env, l))
            << te::to_string(e) << "  =>  " << te::to_string(s) << " lane " << l;
      }
    }
  }
  EXPECT_GT(rewritten, 100);  // the rules fire on a good share, so the check is not vacuous
}

}  // namespace
