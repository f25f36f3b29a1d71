// The auto-scheduler's sketch rules (tuner/auto/rules/): the roles they give the stages of the
// kernels they were written for, and the schedules of their decisions (the rules' default
// config and random configs) compared with te::evaluate on shapes that do and do not divide
// the tiles; a config's steps replayed on a fresh schedule give the same loop IR.
#include <gtest/gtest.h>

#include <random>

#include "common/test_util.h"
#include "loom/te/ops.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/schedule_by_pattern.h"

namespace loom::tuner {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

const DataType f32 = DataType::Float(32);

/// A kernel for the rules: its arguments (inputs, then outputs) and what describe() must say.
struct Case {
  std::string name;
  std::function<std::vector<Tensor>(bool divides)> make;
  std::vector<std::string> roles;  // substrings of SearchSpace::describe()
};

Tensor ph(std::vector<te::Expr> shape, const char* name) { return te::placeholder(std::move(shape), f32, name); }

std::vector<Case> cases() {
  return {
      {"matmul",
       [](bool d) {
         const int64_t m = d ? 64 : 37, n = d ? 32 : 29, k = d ? 32 : 23;
         Tensor A = ph({m, k}, "A"), B = ph({k, n}, "B");
         return std::vector<Tensor>{A, B, te::ops::matmul(A, B)};
       },
       {"matmul: multi-level tiled, through a cache_write"}},
      {"dense_bias_gelu",
       [](bool d) {
         const int64_t m = d ? 32 : 19, n = d ? 64 : 45, k = d ? 32 : 27;
         Tensor X = ph({m, k}, "X"), W = ph({n, k}, "W"), b = ph({n}, "b");
         Tensor y = te::ops::dense(X, W, b);
         Tensor g = te::compute({m, n}, [&](Var i, Var j) {
           te::Expr z = y(i, j);
           return 0.5f * z * (1.0f + te::erf(z * 0.70710678f));
         }, "gelu");
         return std::vector<Tensor>{X, W, b, g};
       },
       {"dense: multi-level tiled, computed in the tiles of gelu", "gelu: epilogue of dense", "bias_add: inline"}},
      {"residual_of_two_matmuls",
       [](bool d) {
         const int64_t m = d ? 32 : 21, n = d ? 16 : 13, k = d ? 16 : 11;
         Tensor A = ph({m, k}, "A"), B = ph({k, n}, "B"), C = ph({k, n}, "C");
         Tensor p = te::ops::matmul(A, B, false, false, "p"), q = te::ops::matmul(A, C, false, false, "q");
         Tensor r = te::compute({m, n}, [&](Var i, Var j) { return p(i, j) + q(i, j); }, "residual");
         return std::vector<Tensor>{A, B, C, r};
       },
       {"p: multi-level tiled, through a cache_write", "q: multi-level tiled, computed in the tiles of residual"}},
      {"softmax",
       [](bool d) {
         Tensor X = ph({d ? 8 : 7, d ? 64 : 45}, "X");
         return std::vector<Tensor>{X, te::ops::softmax(X, -1)};
       },
       {"softmax_maxelem: reduction", "softmax_exp: placed", "softmax_expsum: reduction", "softmax: injective"}},
      {"softmax_outer_axis",
       [](bool d) {
         Tensor X = ph({d ? 32 : 27, d ? 16 : 13}, "X");
         return std::vector<Tensor>{X, te::ops::softmax(X, 0)};
       },
       {"softmax: injective"}},
      {"layer_norm",
       [](bool d) {
         const int64_t n = d ? 64 : 50;
         Tensor X = ph({d ? 8 : 5, n}, "X"), g = ph({n}, "gamma"), b = ph({n}, "beta");
         return std::vector<Tensor>{X, g, b, te::ops::layer_norm(X, g, b)};
       },
       {"layer_norm_mean: reduction", "layer_norm_var: reduction"}},
      {"transpose",
       [](bool d) {
         Tensor X = ph({2, d ? 16 : 11, 4, d ? 16 : 9}, "X");
         return std::vector<Tensor>{X, te::ops::transpose(X, {0, 2, 1, 3})};
       },
       {"transpose: injective"}},
      {"row_and_column_sums",
       [](bool d) {
         Tensor X = ph({d ? 16 : 13, d ? 64 : 37}, "X");
         Tensor rows = te::ops::reduce(X, te::ops::ReduceKind::kSum, {1}, false, "rows");
         Tensor cols = te::ops::reduce(X, te::ops::ReduceKind::kMax, {0}, false, "cols");
         return std::vector<Tensor>{X, rows, cols};
       },
       {"rows: reduction", "cols: reduction"}},
      {"sum_all",
       [](bool d) {
         Tensor X = ph({d ? 64 : 61, d ? 64 : 67}, "X");
         return std::vector<Tensor>{X, te::ops::reduce(X, te::ops::ReduceKind::kSum, {}, false, "total")};
       },
       {"total: reduction"}},
      {"global_avg_pool",
       [](bool d) {
         Tensor X = ph({1, d ? 32 : 21, 7, 7}, "X");
         return std::vector<Tensor>{X, te::ops::global_avg_pool2d(X)};
       },
       {"reduction"}},
      {"max_pool_padded",
       [](bool d) {
         Tensor X = ph({1, 4, d ? 16 : 13, d ? 16 : 11}, "X");
         return std::vector<Tensor>{X, te::ops::max_pool2d(X, {3, 3}, {2, 2}, {1, 1})};
       },
       {"reduction"}},
      {"conv2d_padded",
       [](bool d) {
         Tensor X = ph({1, d ? 8 : 5, d ? 14 : 9, d ? 14 : 11}, "X"), W = ph({d ? 16 : 7, d ? 8 : 5, 3, 3}, "W");
         return std::vector<Tensor>{X, W, te::ops::conv2d_nchw(X, W, {1, 1}, {1, 1})};
       },
       {"conv2d_nchw: multi-level tiled, through a cache_write", "pad: placed"}},
  };
}

std::string lowered(const Instance& inst) { return lowering::to_string(lower(inst.schedule, inst.args, "f")); }

/// Random canonical configs of the rules' sketches (seeded), the rules' default first.
std::vector<int64_t> configs(const SearchSpace& sp, uint64_t seed, int n) {
  std::vector<int64_t> out{sp.default_index()};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, sp.space().size() - 1);
  for (int tries = 0; int(out.size()) < n && tries < 50 * n; ++tries) {
    const int64_t c = sp.canonical(pick(rng));
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

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
      Instance inst;
      try {
        inst = sp->instantiate(sp->space().get(index));
      } catch (const InstantiationError&) {
        continue;
      }
      const std::string json = schedule::steps_to_json(sp->steps(sp->space().get(index)));
      std::vector<Tensor> again = c.make(false);  // a fresh build of the computation
      Schedule s = create_schedule(outputs_of(again));
      schedule::apply_steps(s, schedule::steps_from_json(json));
      EXPECT_EQ(lowered({s, again}), lowered(inst)) << c.name << " config " << index;
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

TEST(AutoRules, GpuTargetsHaveNoRulesYet) {
  Tensor A = ph({4}, "A");
  Tensor B = te::compute({4}, [&](Var i) { return A(i) + 1.0f; }, "B");
  EXPECT_THROW(make_auto_space({A, B}, Target("cuda")), Error);
}

}  // namespace
}  // namespace loom::tuner
