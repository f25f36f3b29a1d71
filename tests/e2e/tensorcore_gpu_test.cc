// matmul_tensorcore run on a GPU with tensor cores, compared with te::evaluate. Skips (with the
// reason) without a CUDA driver and GPU, or on a GPU older than sm_70.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/loom.h"
#include "loom/runtime/cuda.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

TEST(TensorcoreGpu, MatmulMatchesTheReference) {
  if (!runtime::cuda_available()) GTEST_SKIP() << "no CUDA driver/GPU: " << runtime::cuda_unavailable_reason();
  if (runtime::cuda_compute_capability(0) < 70) GTEST_SKIP() << "the GPU has no tensor cores (sm_70 and later do)";
  tuner::Task task = tuner::Task::create("matmul_tensorcore", {128, 256, 96}, Target("cuda"), "float16");
  for (int64_t i = 0, tried = 0; i < task.space().size() && tried < 4; i += 17) {
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
    EXPECT_EQ(test::compare_arrays(got, want[0], {1e-2, 1e-2}, "C"), "") << "config " << i;
  }
}

}  // namespace
}  // namespace loom
