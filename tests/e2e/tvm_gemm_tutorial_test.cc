// TVM's "How to optimize GEMM on CPU" tutorial ported step by step (examples/gemm_tutorial.h):
// each step compiled and compared with te::evaluate on a shape its factors divide and on one
// they do not; and the packed steps' loads of packedB are dense vector loads, not gathers.
#include "common/test_util.h"
#include "examples/gemm_tutorial.h"
#include "loom/lower/ir_visitor.h"

namespace loom {
namespace {

namespace tut = examples::gemm_tutorial;

struct Shape3 {
  int m, n, k;
};
// 64 divides every factor below (bn 32, kfactor 4, register block 4 x 16); 67x45x53 none.
const Shape3 kShapes[] = {{64, 64, 64}, {67, 45, 53}};

tut::Params small_params() {
  tut::Params p;
  p.rows = 4;
  p.cols = 16;
  return p;
}

class GemmTutorial : public ::testing::TestWithParam<std::tuple<tut::Step, Shape3>> {};

TEST_P(GemmTutorial, MatchesReference) {
  auto [step, sh] = GetParam();
  tut::Gemm g = tut::make_step(step, sh.m, sh.n, sh.k, small_params());
  EXPECT_MATCHES_REFERENCE(g.s, g.args()) << tut::step_name(step);
}

INSTANTIATE_TEST_SUITE_P(Steps, GemmTutorial,
                         ::testing::Combine(::testing::ValuesIn(tut::all_steps()), ::testing::ValuesIn(kShapes)),
                         [](const auto& info) {
                           std::string name = tut::step_name(std::get<0>(info.param));
                           for (char& c : name)
                             if (c == ' ') c = '_';
                           const Shape3& s = std::get<1>(info.param);
                           return name + "_" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                  std::to_string(s.k);
                         });

/// The index of every load of buffer `name` in a lowered body.
std::vector<te::Expr> load_indices(const lowering::Stmt& body, const std::string& name) {
  std::vector<te::Expr> out;
  struct Collect : lowering::IRVisitor {
    std::string name;
    std::vector<te::Expr>* out;
    using lowering::IRVisitor::visit_;
    void visit_(const te::LoadNode* op) override {
      if (op->buffer_var.name() == name) out->push_back(op->index);
      lowering::IRVisitor::visit_(op);
    }
  } c;
  c.name = name;
  c.out = &out;
  c.visit(body);
  return out;
}

// The packed B is read as Bp[j / bw][k][j % bw] with j's inner part vectorized: after
// vectorization the index is a dense ramp (stride 1) of bw lanes, never a gather.
TEST(GemmTutorialIR, PackedBIsReadByDenseRampLoads) {
  for (tut::Step step : {tut::Step::kPacking, tut::Step::kWriteCache, tut::Step::kParallel}) {
    for (tut::Params p : {tut::Params{}, tut::register_block(8, 16), tut::Params{32, 4, 8, 32, 0}, tut::Params{32, 4, 6, 16, 8}}) {
      tut::Gemm g = tut::make_step(step, 1024, 1024, 1024, p);
      lowering::LoweredFunc f = lower(g.s, g.args(), "gemm");
      std::vector<te::Expr> idx = load_indices(f.body, "packedB");
      ASSERT_FALSE(idx.empty()) << tut::step_name(step) << "\n" << f;
      const int lanes = step == tut::Step::kPacking ? p.bn : p.cols;
      for (const te::Expr& e : idx) {
        const auto* ramp = e.as<te::RampNode>();
        ASSERT_TRUE(ramp) << tut::step_name(step) << ": packedB[" << te::to_string(e) << "]\n" << f;
        EXPECT_EQ(ramp->lanes, lanes) << tut::step_name(step);
        EXPECT_TRUE(te::is_one(ramp->stride)) << tut::step_name(step) << ": " << te::to_string(e);
      }
    }
  }
}

// The write-cache steps with the register block chosen for AVX2 (6 x 16: rows that do not
// divide 64 or 67, a last partial tile of rows and of columns), without and with panels of
// A (2 blocks: 12 rows, which divide neither).
TEST(GemmTutorialRegisterBlock, Avx2BlockMatchesReference) {
  for (tut::Step step : {tut::Step::kWriteCache, tut::Step::kParallel})
    for (int panel : {0, 2})
      for (const Shape3& sh : kShapes) {
        tut::Params p = tut::register_block(8, 16);
        p.panel = panel;
        tut::Gemm g = tut::make_step(step, sh.m, sh.n, sh.k, p);
        EXPECT_MATCHES_REFERENCE(g.s, g.args())
            << tut::step_name(step) << " panel " << panel << " " << sh.m << "x" << sh.n << "x" << sh.k;
      }
}

// The same for the schedule: a local block of 8 x 32, Bp[j / 32][k][j % 32]; and the
// compiled function computes what te::evaluate does.
TEST(GemmTutorialIR, RegisterBlock8x32MatchesReference) {
  tut::Gemm g = tut::make_step(tut::Step::kWriteCache, 64, 64, 16, tut::Params{32, 4, 8, 32, 0});
  EXPECT_MATCHES_REFERENCE(g.s, g.args());
}

}  // namespace
}  // namespace loom
