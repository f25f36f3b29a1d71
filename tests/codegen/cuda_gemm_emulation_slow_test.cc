// The CUDA float32 GEMM template on the odd shape, run by the CUDA emulator (a minute
// on a loaded 2-core machine, hence slow).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/loom.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

std::string run_default(const std::string& op, std::vector<int64_t> shape) {
  tuner::Instance inst = tuner::Task::create(op, shape, Target("cuda")).instantiate_default();
  return test::compare_emulated_with_reference(inst.schedule, inst.args);
}

TEST(CudaGemmEmulation, OddSizedLargeMatmul) {
  // The odd shape: no tile of any knob divides M, N or K.
  EXPECT_EQ(run_default("matmul", {1000, 1000, 999}), "");
}

}  // namespace
}  // namespace loom
