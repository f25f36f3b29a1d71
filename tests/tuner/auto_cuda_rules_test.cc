// The auto-scheduler's GPU rules (tuner/auto/rules/gpu/) on target cuda, without a GPU: the
// roles they give, the rules' default config and random configs compiled to PTX by NVRTC
// (where libnvrtc is present) and run on the CUDA emulation (codegen::build_cuda_emulated,
// which also fails on a race or an out-of-bounds access) against te::evaluate, on shapes that
// do and do not divide the tiles; the target's limits rejecting configs before they are built.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "auto_cases.h"
#include "common/test_util.h"
#include "loom/codegen/cuda.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

using namespace auto_cases;

const Target kCuda("cuda");

/// What describe() says of each GPU case (by case name).
const std::map<std::string, std::vector<std::string>> kGpuRoles = {
    {"matmul", {"matmul: multi-level tiled, through a cache_write (rule multi_level_tiling)"}},
    {"dense_bias_gelu", {"dense: multi-level tiled, computed in the tiles of gelu", "bias_add: inline"}},
    {"softmax", {"softmax_exp: inline", "softmax_expsum: reduction", "softmax: injective"}},
    {"layer_norm", {"layer_norm_mean: reduction", "layer_norm_var: reduction"}},
    {"transpose", {"transpose: injective"}},
    {"elementwise_chain", {"scaled_exp: inline", "add_row: inline", "chain: injective"}},
    {"conv2d_padded", {"conv2d_nchw: multi-level tiled", "pad: inline"}},
};

/// "" when config `index` of `sp` compiles to PTX and runs on the emulation matching the
/// reference; "rejected: …" when the config breaks a GPU limit; else what went wrong.
std::string check_config(const SearchSpace& sp, int64_t index, uint64_t seed) {
  Instance inst;
  try {
    inst = sp.instantiate(sp.space().get(index));
  } catch (const InstantiationError& e) {
    return std::string("rejected: ") + e.what();
  }
  lowering::LowerOptions opts;
  opts.target = kCuda;
  lowering::LoweredFunc f = lowering::lower(inst.schedule, inst.args, "f", opts);
  if (codegen::nvrtc_available()) {
    try {
      codegen::compile_to_ptx(codegen::cuda_source(f), "sm_80");
    } catch (const Error& e) {
      return std::string("NVRTC: ") + e.what();
    }
  }
  return test::compare_emulated_with_reference(f, inst.args, seed);
}

TEST(AutoCudaRules, RolesOfTheKernelsTheyWereWrittenFor) {
  for (const Case& c : cases()) {
    auto it = kGpuRoles.find(c.name);
    if (it == kGpuRoles.end()) continue;
    auto sp = make_auto_space(c.make(true), kCuda, AutoOptions{false});
    const std::string d = sp->describe();
    for (const std::string& role : it->second) EXPECT_NE(d.find(role), std::string::npos) << c.name << ":\n" << d;
  }
}

TEST(AutoCudaRules, DecisionsMatchTheReferenceOnTheEmulation) {
  int checked = 0, rejected = 0;
  for (const Case& c : cases())
    for (bool divides : {true, false}) {
      auto sp = make_auto_space(c.make(divides), kCuda, AutoOptions{false});
      for (int64_t index : configs(*sp, 23, 2)) {
        const std::string err = check_config(*sp, index, 1);
        if (err.rfind("rejected: ", 0) == 0) {
          ++rejected;
          continue;
        }
        EXPECT_EQ(err, "") << c.name << (divides ? "" : " (tiles do not divide)") << " config " << index << ": "
                           << sp->space().get(index).str();
        ++checked;
      }
    }
  EXPECT_GT(checked, 2 * int(cases().size()));
  EXPECT_LT(rejected, checked);
}

TEST(AutoCudaRules, StepsReplayToTheSameLoopIR) {
  lowering::LowerOptions opts;
  opts.target = kCuda;
  auto lowered = [&](const Schedule& s, const std::vector<Tensor>& args) {
    return lowering::to_string(lowering::lower(s, args, "f", opts));
  };
  int replayed = 0;
  for (const Case& c : cases()) {
    std::vector<Tensor> args = c.make(false);
    auto sp = make_auto_space(args, kCuda, AutoOptions{false});
    for (int64_t index : configs(*sp, 5, 3)) {
      std::optional<Replayed> r = replay_config(*sp, c, false, index);
      if (!r) continue;
      EXPECT_EQ(lowered(r->replayed.schedule, r->replayed.args), lowered(r->original.schedule, r->original.args))
          << c.name << " config " << index;
      ++replayed;
    }
  }
  EXPECT_GT(replayed, int(cases().size()));
}

TEST(AutoCudaRules, SoftmaxAndLayerNormRunAsOneKernelWithCrossThreadReductions) {
  for (const char* name : {"softmax", "layer_norm"})
    for (bool divides : {true, false}) {
      const auto all = cases();
      const Case& c = *std::find_if(all.begin(), all.end(), [&](const Case& k) { return k.name == name; });
      auto sp = make_auto_space(c.make(divides), kCuda, AutoOptions{false});
      // The rules' default: the reductions in the output's blocks, across its threads.
      Instance inst = sp->instantiate(sp->space().get(sp->default_index()));
      lowering::LowerOptions opts;
      opts.target = kCuda;
      lowering::LoweredFunc f = lowering::lower(inst.schedule, inst.args, "f", opts);
      EXPECT_EQ(f.device_funcs.size(), 1u) << name;
      EXPECT_NE(codegen::cuda_source(f).find("red_buf"), std::string::npos) << name;
      EXPECT_EQ(check_config(*sp, sp->default_index(), 2), "") << name << (divides ? "" : " (not dividing)");
    }
}

TEST(AutoCudaRules, MatmulFetchesItsInputsIntoSharedMemoryCooperatively) {
  auto sp = make_auto_space(cases()[0].make(true), kCuda, AutoOptions{false});
  const ConfigSpace& space = sp->space();
  std::vector<int> c = space.choices_of(sp->default_index());
  const int vec = space.knob_index("matmul.vec");
  ASSERT_GE(vec, 0);
  c[size_t(vec)] = 2;  // 4-lane fetches
  const int64_t index = space.index_of(c);
  Instance inst = sp->instantiate(space.get(index));
  // Each input's fetch: fused, a 4-lane vector loop, the rest over the block's threads.
  const std::string steps = schedule::to_string(schedule::trace(inst.schedule));
  for (const char* t : {"A.shared", "B.shared"})
    for (const char* p : {"fuse", "vectorize", "bind"}) {
      const std::regex step(fmt::format("{}@[0-9]+\\.{}\\(", t, p));
      EXPECT_TRUE(std::regex_search(steps, step)) << t << " " << p << "\n" << steps;
    }
  lowering::LowerOptions opts;
  opts.target = kCuda;
  const std::string src = codegen::cuda_source(lowering::lower(inst.schedule, inst.args, "f", opts));
  EXPECT_NE(src.find("__shared__"), std::string::npos) << src;
  EXPECT_NE(src.find("__syncthreads"), std::string::npos) << src;
  EXPECT_EQ(check_config(*sp, index, 3), "");
}

/// The config of `sp` with knob values set by name (each a value of that knob).
int64_t with_values(const SearchSpace& sp, const std::map<std::string, std::vector<int64_t>>& values) {
  const ConfigSpace& space = sp.space();
  std::vector<int> c = space.choices_of(sp.default_index());
  for (const auto& [name, v] : values) {
    const int k = space.knob_index(name);
    EXPECT_GE(k, 0) << name;
    const auto& vals = space.knobs()[size_t(k)].values;
    auto it = std::find(vals.begin(), vals.end(), v);
    EXPECT_NE(it, vals.end()) << name;
    c[size_t(k)] = int(it - vals.begin());
  }
  return space.index_of(c);
}

TEST(AutoCudaRules, ConfigsBreakingTheLimitsAreRejectedBeforeBuilding) {
  Tensor A = ph({256, 64}, "A"), B = ph({64, 256}, "B");
  auto sp = make_auto_space({A, B, te::ops::matmul(A, B)}, kCuda, AutoOptions{false});
  auto expect_rejected = [&](const std::map<std::string, std::vector<int64_t>>& v, const std::string& why) {
    try {
      sp->instantiate(sp->space().get(with_values(*sp, v)));
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const InstantiationError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  // 64 x 64 threads.
  expect_rejected({{"matmul.S0", {-1, 1, 64, 1, 1}}, {"matmul.S1", {-1, 1, 64, 1, 1}}}, "4096 threads per block");
  // 4·2·4 x 4·2·4 accumulators: 4096 bytes per thread.
  expect_rejected({{"matmul.S0", {-1, 4, 2, 4, 4}}, {"matmul.S1", {-1, 4, 2, 4, 4}}}, "accumulators per thread");
  // Tiles of 256 x 128, 64 deep: 96 KiB of shared memory (verify_gpu, on the lowered kernel).
  expect_rejected({{"matmul.S0", {-1, 1, 16, 4, 4}}, {"matmul.S1", {-1, 1, 16, 2, 4}}, {"matmul.R0", {-1, 8, 8}}},
                  "shared memory");
}

TEST(AutoCudaRules, TasksOnTheCudaTargetAreAutoScheduled) {
  Tensor X = ph({16, 100}, "X");
  Task task = Task::create_auto("row_softmax", {X, te::ops::softmax(X, -1)}, kCuda);
  EXPECT_STREQ(task.search_space().kind(), "auto");
  EXPECT_NE(task.search_space().describe().find("the pattern schedule among them"), std::string::npos);
  // The default (the pattern schedule) and the rules' own config both run.
  for (int64_t index : task.search_space().first_configs())
    EXPECT_EQ(check_config(task.search_space(), index, 4), "") << index;
}

}  // namespace
}  // namespace loom::tuner
