// The "attention" templates: the fused CPU kernel against the unfused chain (te::evaluate of
// the extern operation's reference) for default and other configs, with and without a bias,
// causal, grouped heads, packed layouts and sequence lengths that do not divide the blocks;
// its scratch memory per thread, independent of seq_q × seq_kv; the CUDA kernel's C compiled
// to PTX by NVRTC (skipped without NVRTC).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/cuda.h"
#include "loom/lower/ir_visitor.h"
#include "loom/te/arith.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

using Attrs = std::map<std::string, std::string>;

/// `count` configs spread over the space (the default first).
std::vector<int64_t> some_configs(const Task& task, int count) {
  std::vector<int64_t> idx = {task.default_index()};
  const int64_t n = task.space().size();
  for (int k = 1; k < count; ++k) idx.push_back((task.default_index() + int64_t(k) * 7919 * 131) % n);
  return idx;
}

void check(const std::vector<int64_t>& shape, const Attrs& attrs, int configs = 4) {
  Task task = Task::create("attention", shape, Target("llvm"), "float32", attrs);
  for (int64_t index : some_configs(task, configs)) {
    Instance inst;
    try {
      inst = task.instantiate(index);
    } catch (const InstantiationError&) {
      continue;  // a block of scores over the per-thread limit
    }
    EXPECT_MATCHES_REFERENCE(inst.schedule, inst.args) << task.key() << " config " << task.space().get(index).str();
  }
}

TEST(AttentionTemplate, NoMask) { check({1, 2, 37, 50, 24}, {{"scale", "0.2"}}); }
TEST(AttentionTemplate, KeyMask) { check({2, 2, 16, 45, 16}, {{"bias", "2,1,1,45"}, {"scale", "0.25"}}); }
TEST(AttentionTemplate, FullBiasAndTwoDimensionalBias) {
  check({1, 3, 21, 19, 8}, {{"bias", "1,3,21,19"}, {"scale", "0.35"}}, 3);
  check({1, 2, 21, 19, 8}, {{"bias", "21,19"}, {"scale", "0.35"}}, 3);
}
TEST(AttentionTemplate, Causal) {
  check({1, 2, 70, 70, 16}, {{"causal", "1"}, {"scale", "0.25"}});
  check({1, 1, 9, 40, 16}, {{"causal", "1"}, {"causal_offset", "31"}, {"scale", "0.25"}}, 3);
}
TEST(AttentionTemplate, PackedGroupedAndOtherValueWidth) {
  check({2, 4, 33, 17, 16}, {{"packed", "1"}, {"kv_heads", "2"}, {"bias", "2,1,1,17"}, {"scale", "0.25"}});
  check({1, 4, 18, 18, 16}, {{"kv_heads", "1"}, {"v_head_dim", "8"}, {"scale", "0.25"}}, 3);
}
TEST(AttentionTemplate, SingleQuery) { check({1, 2, 1, 29, 32}, {{"scale", "0.1767767"}}, 3); }

TEST(AttentionTemplate, WorkloadErrorsNameTheAttribute) {
  EXPECT_THROW(Task::create("attention", {1, 2, 8, 8, 4}, Target("llvm"), "float32", {{"bias", "1,2,8,9"}}), Error);
  EXPECT_THROW(Task::create("attention", {1, 2, 8, 8, 4}, Target("llvm"), "float32", {{"scale", "x"}}), Error);
  EXPECT_THROW(Task::create("attention", {1, 2, 8, 8, 4}, Target("llvm"), "float32", {{"heads", "2"}}), Error);
  EXPECT_THROW(Task::create("attention", {1, 3, 8, 8, 4}, Target("llvm"), "float32", {{"kv_heads", "2"}}), Error);
}

/// Largest allocation (in elements) of a lowered function.
int64_t largest_allocation(const lowering::LoweredFunc& f) {
  int64_t most = 0;
  lowering::post_order_visit(f.body, [&](const lowering::Stmt& s) {
    if (const auto* a = s.as<lowering::AllocateNode>())
      if (auto n = te::as_const_int(te::simplify(a->size()))) most = std::max(most, *n);
  });
  return most;
}

TEST(AttentionTemplate, ScratchMemoryDoesNotGrowWithTheScores) {
  // At 1024 × 1024 the scores of one head are 2^20 floats; a thread holds blocks of them.
  for (int64_t seq : {256, 1024}) {
    Task task = Task::create("attention", {1, 12, seq, seq, 64}, Target("llvm"), "float32", {{"scale", "0.125"}});
    Instance inst = task.instantiate_default();
    lowering::LoweredFunc f = lower(inst.schedule, inst.args, "attention");
    EXPECT_LE(largest_allocation(f), 128 * 256) << seq;
    EXPECT_NE(lowering::to_string(f).find("parallel"), std::string::npos);
  }
}

TEST(AttentionTemplate, CudaKernelCompilesToPtx) {
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "NVRTC not available: " << codegen::nvrtc_unavailable_reason();
  const Target cuda("cuda");
  for (const Attrs& attrs : {Attrs{{"scale", "0.125"}}, Attrs{{"bias", "1,1,1,77"}, {"causal", "1"}, {"scale", "0.125"}},
                             Attrs{{"packed", "1"}, {"kv_heads", "2"}, {"v_head_dim", "40"}, {"scale", "0.125"}}}) {
    Task task = Task::create("attention", {1, 4, 77, 77, 64}, cuda, "float32", attrs);
    for (int64_t index : some_configs(task, 3)) {
      Instance inst;
      try {
        inst = task.instantiate(index);
      } catch (const InstantiationError&) {
        continue;  // more shared memory than a block has
      }
      lowering::LoweredFunc f = lower(inst.schedule, inst.args, "attention", {cuda});
      ASSERT_EQ(f.device_funcs.size(), 1u);
      const std::string src = codegen::cuda_source(f);
      EXPECT_NE(src.find("__shfl_xor_sync"), std::string::npos);
      EXPECT_NE(src.find("__shared__"), std::string::npos);
      std::string ptx;
      ASSERT_NO_THROW(ptx = codegen::compile_to_ptx(src, "sm_80")) << task.space().get(index).str() << "\n" << src;
      EXPECT_NE(ptx.find(".entry"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace loom::tuner
