// matmul_tensorcore (WMMA) and matmul_mma (mma.sync, ldmatrix) run on a GPU with tensor cores,
// compared with te::evaluate. Skips (with the reason) without a CUDA driver and GPU, or on a
// GPU older than sm_70 (sm_80 for mma.sync.m16n8k16).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/loom.h"
#include "loom/runtime/cuda.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

/// The default config of `op` and up to 3 more, each run on the GPU and compared.
void check_configs(const std::string& op, std::vector<int64_t> shape) {
  tuner::Task task = tuner::Task::create(op, shape, Target("cuda"), "float16");
  std::vector<int64_t> idx = {task.default_index()};
  for (int64_t i = 0; i < task.space().size(); i += 17) idx.push_back(i);
  for (int64_t tried = 0; int64_t i : idx) {
    if (tried == 4) break;
    tuner::Instance inst;
    try {
      inst = task.instantiate(i);
    } catch (const tuner::InstantiationError&) {
      continue;
    }
    ++tried;
    auto inputs = test::random_inputs(inst.args, 3);
    std::vector<te::Tensor> outs = {inst.args[2]};
    std::vector<runtime::NDArray> want = te::evaluate(outs, inputs);
    runtime::Module m = build(inst.schedule, inst.args, task.target(), "tc");
    std::vector<runtime::NDArray> dev;
    std::vector<DLTensor*> dl;
    for (int a = 0; a < 2; ++a) {
      const runtime::NDArray& h = inputs.at(inst.args[size_t(a)]);
      dev.push_back(runtime::NDArray::empty(h.shape(), h.dtype(), DLDevice{kDLCUDA, 0}));
      dev.back().copy_from(h);
      dl.push_back(dev.back().dltensor());
    }
    dev.push_back(runtime::NDArray::empty(want[0].shape(), DataType::Float(32), DLDevice{kDLCUDA, 0}));
    dl.push_back(dev.back().dltensor());
    m.get_function("tc").call(dl);
    runtime::cuda_synchronize();
    runtime::NDArray got = runtime::NDArray::empty(want[0].shape(), DataType::Float(32));
    got.copy_from(dev.back());
    EXPECT_EQ(test::compare_arrays(got, want[0], {1e-2, 1e-2}, "C"), "") << op << " config " << i;
  }
}

TEST(TensorcoreGpu, MatmulMatchesTheReference) {
  if (!runtime::cuda_available()) GTEST_SKIP() << "no CUDA driver/GPU: " << runtime::cuda_unavailable_reason();
  if (runtime::cuda_compute_capability(0) < 70) GTEST_SKIP() << "the GPU has no tensor cores (sm_70 and later do)";
  check_configs("matmul_tensorcore", {128, 256, 96});
}

TEST(TensorcoreGpu, MmaSyncMatmulMatchesTheReference) {
  if (!runtime::cuda_available()) GTEST_SKIP() << "no CUDA driver/GPU: " << runtime::cuda_unavailable_reason();
  if (runtime::cuda_compute_capability(0) < 80) GTEST_SKIP() << "mma.sync.m16n8k16 needs sm_80 or later";
  check_configs("matmul_mma", {128, 256, 96});
  check_configs("matmul_mma", {256, 512, 256});
}

}  // namespace
}  // namespace loom
