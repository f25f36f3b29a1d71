// The CUDA attention template run on a GPU against te::evaluate of the unfused chain, for
// every config of its space on a few workloads (bias, causal, packed with grouped heads,
// lengths that do not divide the blocks). Skips without a driver.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/runtime/cuda.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

using Attrs = std::map<std::string, std::string>;

#define SKIP_WITHOUT_GPU() \
  if (!runtime::cuda_available()) GTEST_SKIP() << "no CUDA driver/GPU: " << runtime::cuda_unavailable_reason()

void check(const std::vector<int64_t>& shape, const Attrs& attrs) {
  tuner::Task task = tuner::Task::create("attention", shape, Target("cuda"), "float32", attrs);
  for (int64_t index = 0; index < task.space().size(); ++index) {
    tuner::Instance inst;
    try {
      inst = task.instantiate(index);
    } catch (const tuner::InstantiationError&) {
      continue;
    }
    EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args, 5, Target("cuda")), "")
        << task.key() << " config " << task.space().get(index).str();
  }
}

TEST(AttentionGpu, NoMask) {
  SKIP_WITHOUT_GPU();
  check({1, 2, 45, 50, 32}, {{"scale", "0.17"}});
}

TEST(AttentionGpu, KeyMaskAndCausal) {
  SKIP_WITHOUT_GPU();
  check({2, 2, 40, 40, 24}, {{"bias", "2,1,1,40"}, {"causal", "1"}, {"scale", "0.2"}});
}

TEST(AttentionGpu, PackedGroupedHeads) {
  SKIP_WITHOUT_GPU();
  check({1, 4, 33, 70, 16}, {{"packed", "1"}, {"kv_heads", "2"}, {"v_head_dim", "40"}, {"scale", "0.25"}});
}

}  // namespace
}  // namespace loom
