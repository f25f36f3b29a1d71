// The auto_unroll_max_step pragma (lowering::attr::kAutoUnrollMaxStep): loop nests inside the
// annotated loop whose unrolled body holds at most N stores are unrolled, innermost first; the
// results match te::evaluate on shapes that do and do not divide the tiles.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/lower/ir_visitor.h"

namespace loom {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

struct Tiled {
  std::vector<Tensor> args;
  Schedule s;
};

/// C = A·B with a 4x4 register tile (ii, ji) under the reduction loop k, and `max_step` on
/// the outermost loop (0: no pragma).
Tiled tiled_matmul(int64_t m, int64_t n, int64_t kk, int64_t max_step, bool unit_outer = false) {
  Tensor A = te::placeholder({m, kk}, DataType::Float(32), "A");
  Tensor B = te::placeholder({kk, n}, DataType::Float(32), "B");
  IterVar k = te::reduce_axis({0, kk}, "k");
  Tensor C = te::compute({m, n}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule({C});
  Stage c = s[C];
  auto [io, ii] = c.split(c.axis(0), 4);
  auto [jo, ji] = c.split(c.axis(1), 4);
  c.reorder({io, jo, k, ii, ji});
  IterVar outer = io;
  if (unit_outer) {  // a loop of extent 1 around everything, holding the pragma
    auto [u, rest] = c.split_nparts(io, 1);
    outer = u;
  }
  if (max_step > 0) c.pragma(outer, lowering::attr::kAutoUnrollMaxStep, te::Expr(max_step));
  return {{A, B, C}, s};
}

/// Loops left in the lowered function.
int loops(const Tiled& t) {
  lowering::LoweredFunc f = lower(t.s, t.args, "f");
  int n = 0;
  lowering::post_order_visit(f.body, [&](const lowering::Stmt& x) { n += x.as<lowering::ForNode>() != nullptr; });
  return n;
}

TEST(AutoUnroll, UnrollsNestsUpToTheStepCount) {
  // io, jo, the tile's init nest (ii.init, ji.init), k and the tile (ii, ji).
  const int none = loops(tiled_matmul(32, 32, 16, 0));
  EXPECT_EQ(none, 7);
  // 4 steps: the innermost loops of both nests (4 stores each).
  EXPECT_EQ(loops(tiled_matmul(32, 32, 16, 4)), none - 2);
  // 16 steps: both tiles whole (4 x 4 stores).
  EXPECT_EQ(loops(tiled_matmul(32, 32, 16, 16)), none - 4);
  // 64 steps: k (16) x 16 stores does not fit.
  EXPECT_EQ(loops(tiled_matmul(32, 32, 16, 64)), none - 4);
  // 512 steps: k too.
  EXPECT_EQ(loops(tiled_matmul(32, 32, 16, 512)), none - 5);
}

TEST(AutoUnroll, PragmaOfARemovedUnitLoopStillApplies) {
  const int none = loops(tiled_matmul(32, 32, 16, 0, true));
  EXPECT_EQ(loops(tiled_matmul(32, 32, 16, 16, true)), none - 4);
}

TEST(AutoUnroll, MatchesReference) {
  for (auto [m, n, k] : {std::tuple{32, 32, 16}, std::tuple{30, 29, 7}})
    for (int64_t step : {4, 16, 64, 512})
      for (bool unit : {false, true}) {
        Tiled t = tiled_matmul(m, n, k, step, unit);
        EXPECT_MATCHES_REFERENCE(t.s, t.args) << m << "x" << n << "x" << k << " step " << step;
      }
}

}  // namespace
}  // namespace loom
