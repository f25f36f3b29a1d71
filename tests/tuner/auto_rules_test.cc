// The auto-scheduler's sketch rules (tuner/auto/rules/): the roles they give the stages of the
// kernels they were written for, and the schedules of their decisions (the rules' default
// config and random configs) compared with te::evaluate on shapes that do and do not divide
// the tiles; a config's steps replayed on a fresh schedule give the same loop IR.
#include <gtest/gtest.h>

#include <random>

#include "auto_cases.h"
#include "common/test_util.h"
#include "loom/te/ops.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/schedule_by_pattern.h"

namespace loom::tuner {
namespace {

using namespace auto_cases;

using te::IterVar;
using te::Tensor;
using te::Var;

std::string lowered(const Instance& inst) { return lowering::to_string(lower(inst.schedule, inst.args, "f")); }

TEST(AutoRules, RolesOfTheKernelsTheyWereWrittenFor) {
  for (const Case& c : cases()) {
    auto sp = make_auto_space(c.make(true), Target("llvm"), AutoOptions{false});
    const std::string d = sp->describe();
    for (const std::string& role : c.roles) EXPECT_NE(d.find(role), std::string::npos) << c.name << ":\n" << d;
  }
}

TEST(AutoRules, DecisionsMatchTheReference) {
  int checked = 0, rejected = 0;
  for (const Case& c : cases())
    for (bool divides : {true, false}) {
      auto sp = make_auto_space(c.make(divides), Target("llvm"), AutoOptions{false});
      for (int64_t index : configs(*sp, 17, 6)) {
        Instance inst;
        try {
          inst = sp->instantiate(sp->space().get(index));
        } catch (const InstantiationError& e) {
          ++rejected;  // a vector wider than the target allows
          EXPECT_NE(std::string(e.what()).find("wider than"), std::string::npos) << c.name << ": " << e.what();
          continue;
        }
        EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args), "")
            << c.name << (divides ? "" : " (tiles do not divide)") << " config " << index << ": "
            << sp->space().get(index).str() << "\n" << schedule::to_string(schedule::trace(inst.schedule));
        ++checked;
      }
    }
  EXPECT_GT(checked, 100);
  EXPECT_LT(rejected, checked / 4);
}

TEST(AutoRules, StepsReplayToTheSameLoopIR) {
  for (const Case& c : cases()) {
    std::vector<Tensor> args = c.make(false);
    auto sp = make_auto_space(args, Target("llvm"), AutoOptions{false});
    for (int64_t index : configs(*sp, 3, 3)) {
      std::optional<Replayed> r = replay_config(*sp, c, false, index);
      if (!r) continue;
      EXPECT_EQ(lowered(r->replayed), lowered(r->original)) << c.name << " config " << index;
    }
  }
}

TEST(AutoRules, CanonicalConfigsFixTheKnobsTheyDoNotRead) {
  std::vector<Tensor> args = cases()[3].make(true);  // softmax: placed and reduction stages
  auto sp = make_auto_space(args, Target("llvm"));
  const ConfigSpace& space = sp->space();
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> pick(0, space.size() - 1);
  int differ = 0;
  for (int n = 0; n < 200; ++n) {
    const int64_t i = pick(rng), c = sp->canonical(i);
    EXPECT_EQ(sp->canonical(c), c);
    differ += c != i;
    // The same schedule: the same steps.
    EXPECT_EQ(sp->steps(space.get(i)), sp->steps(space.get(c)));
  }
  EXPECT_GT(differ, 0);
  // The pattern sketch reads no other knob.
  std::vector<int> pattern(space.knobs().size(), 0);
  pattern[0] = 1;
  EXPECT_EQ(sp->default_index(), space.index_of(pattern));
  std::vector<int> other = pattern;
  other.back() = int(space.knobs().back().size()) - 1;
  EXPECT_EQ(sp->canonical(space.index_of(other)), sp->default_index());
}

TEST(AutoRules, DefaultIsThePatternSchedule) {
  for (const Case& c : cases()) {
    std::vector<Tensor> args = c.make(true);
    auto sp = make_auto_space(args, Target("llvm"));
    Instance inst = sp->instantiate(sp->space().get(sp->default_index()));
    Instance pattern{schedule_by_pattern(outputs_of(args), Target("llvm")), args};
    EXPECT_EQ(lowered(inst), lowered(pattern)) << c.name;
  }
}

// The rules' default config of a matmul is a register-blocked micro-kernel sized from the
// target's vector registers (two vectors of columns times 4 rows with 16 registers, 8 rows with
// 32), the cache at the end of S1, only the micro-kernel (R1 S3) unrolled, and B's panels
// packed in the parallel outer tile loop.
TEST(AutoRules, DefaultTilesAreARegisterBlockedMicroKernel) {
  struct Want {
    const char* target;
    int64_t cols, rows;
    bool run;
  };
  for (const Want& w : {Want{"llvm -mcpu=x86-64-v3", 16, 4, true}, Want{"llvm -mcpu=skylake-avx512", 32, 8, false}})
    for (int64_t n : {int64_t(256), int64_t(200)}) {
      Tensor A = ph({n, 96}, "A");
      Tensor B = ph({96, n + 8}, "B");
      IterVar k = te::reduce_axis({0, 96}, "k");
      Tensor C = te::compute({n, n + 8}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
      auto sp = make_auto_space({A, B, C}, Target(w.target), AutoOptions{false});
      const ConfigEntity e = sp->space().get(sp->default_index());
      const ConfigSpace& space = sp->space();
      auto value = [&](const std::string& knob) {
        const int k = space.knob_index(knob);
        EXPECT_GE(k, 0) << knob;
        return space.knobs()[size_t(k)].values[size_t(e.choices()[size_t(k)])];
      };
      EXPECT_EQ(value("C.S1").back(), w.cols) << w.target << " n=" << n;
      EXPECT_EQ(value("C.S0").back(), w.rows) << w.target << " n=" << n;
      EXPECT_EQ(value("C.R0").back(), 4) << w.target;
      EXPECT_EQ(value("C.at")[0], 2) << w.target;
      EXPECT_GT(value("C.unroll")[0], 0) << w.target;
      // B[k, j] is read as a panel reused across i, and packed; A[i, k] is not.
      EXPECT_EQ(value("C.pack_B")[0], 1) << w.target;
      EXPECT_LT(space.knob_index("C.pack_A"), 0) << w.target;
      Instance inst = sp->instantiate(e);
      int pragmas = 0, packs = 0;
      for (const schedule::Step& st : schedule::trace(inst.schedule)) {
        if (st.kind == schedule::StepKind::kCacheRead) {
          ++packs;
          EXPECT_EQ(st.stage.name, "B");
        }
        if (st.kind == schedule::StepKind::kPragma) {
          ++pragmas;
          ASSERT_EQ(st.axes.size(), 1u);
          EXPECT_EQ(st.axes[0].name.rfind("k.", 0), 0u) << "the unroll pragma is not on the micro-kernel's reduce loop: "
                                                   << schedule::to_string({st});
        }
      }
      EXPECT_EQ(pragmas, 1) << schedule::to_string(schedule::trace(inst.schedule));
      EXPECT_EQ(packs, 1) << schedule::to_string(schedule::trace(inst.schedule));
      if (w.run) EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args), "") << w.target << " n=" << n;
    }
}

TEST(AutoRules, TooWideVectorsAreRejectedBeforeBuilding) {
  Tensor A = ph({64, 128}, "A");
  Tensor B = te::compute({64, 128}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "B");
  auto sp = make_auto_space({A, B}, Target("llvm -mcpu=x86-64"), AutoOptions{false});  // SSE: 128-bit vectors
  const ConfigSpace& space = sp->space();
  const int k = space.knob_index("B.vec");
  ASSERT_GE(k, 0);
  std::vector<int> c = space.choices_of(sp->default_index());
  c[size_t(k)] = int(space.knobs()[size_t(k)].size()) - 1;  // 64 lanes of float32: 2048 bits > 4 x 128
  try {
    sp->instantiate(space.get(space.index_of(c)));
    FAIL() << "a 64-lane vector was accepted";
  } catch (const InstantiationError& e) {
    EXPECT_NE(std::string(e.what()).find("wider than 4 registers of 128 bits"), std::string::npos) << e.what();
  }
}

TEST(AutoRules, LargeComputationsKeepTheirSpacesWithinInt64) {
  // A chain of 12 matmuls: ~19 bits of knobs each, thinned once the space reaches 2^60.
  Tensor X = ph({16, 16}, "X");
  std::vector<Tensor> args{X};
  Tensor cur = X;
  for (int i = 0; i < 12; ++i) {
    Tensor W = ph({16, 16}, "W");
    args.push_back(W);
    IterVar k = te::reduce_axis({0, 16}, "k");
    Tensor prev = cur;
    cur = te::compute({16, 16}, [&](Var a, Var b) { return te::sum(prev(a, k) * W(k, b), {k}); }, "mm");
  }
  args.push_back(cur);
  auto sp = make_auto_space(args, Target("llvm"), AutoOptions{false});
  EXPECT_LE(sp->space().size(), int64_t(1) << 61);
  EXPECT_GE(sp->space().size(), int64_t(1) << 50);
  for (int64_t index : configs(*sp, 9, 4)) {
    Instance inst = sp->instantiate(sp->space().get(index));
    EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args), "") << "config " << index;
  }
}

}  // namespace
}  // namespace loom::tuner
