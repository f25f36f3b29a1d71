// GPU runs compared with te::evaluate. Every test skips (with the reason) without a driver.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/loom.h"
#include "loom/runtime/cuda.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!runtime::cuda_available()) GTEST_SKIP() << "no CUDA driver/GPU: " << runtime::cuda_unavailable_reason()

runtime::NDArray to_device(const runtime::NDArray& h) {
  runtime::NDArray d = runtime::NDArray::empty(h.shape(), h.dtype(), DLDevice{kDLCUDA, 0});
  d.copy_from(h);
  return d;
}

/// Runs `m` on random inputs on the GPU and compares the outputs with te::evaluate.
std::string run_and_compare(const runtime::Module& m, const std::string& fn, const std::vector<te::Tensor>& args) {
  auto inputs = test::random_inputs(args, 7);
  std::vector<te::Tensor> outs;
  std::vector<runtime::NDArray> dev;
  std::vector<DLTensor*> dl;
  for (const auto& t : args) {
    auto it = inputs.find(t);
    if (it != inputs.end()) {
      dev.push_back(to_device(it->second));
    } else {
      outs.push_back(t);
      std::vector<int64_t> shape;
      for (const auto& e : t.shape()) shape.push_back(*te::as_const_int(e));
      dev.push_back(runtime::NDArray::empty(shape, t.dtype(), DLDevice{kDLCUDA, 0}));
    }
    dl.push_back(dev.back().dltensor());
  }
  m.get_function(fn).call(dl);
  runtime::cuda_synchronize();
  auto want = te::evaluate(outs, inputs);
  size_t o = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (inputs.count(args[i])) continue;
    runtime::NDArray got = runtime::NDArray::empty(want[o].shape(), want[o].dtype());
    got.copy_from(dev[i]);
    std::string r = test::compare_arrays(got, want[o], test::tolerance_for(want[o].dtype()), args[i].op()->name);
    if (!r.empty()) return r;
    ++o;
  }
  return "";
}

TEST(Gpu, Elementwise) {
  SKIP_WITHOUT_GPU();
  te::Tensor A = te::placeholder({1000, 3}, DataType::Float(32), "A");
  te::Tensor B = te::compute({1000, 3}, [&](te::Var i, te::Var j) { return te::tanh(A(i, j)) * 3.0f + te::exp(A(i, j)); }, "B");
  Schedule s = create_schedule({B});
  te::IterVar f = s[B].fuse(s[B].axis(0), s[B].axis(1));
  auto [bo, bi] = s[B].split(f, 128);
  s[B].bind(bo, te::thread_axis("blockIdx.x"));
  s[B].bind(bi, te::thread_axis("threadIdx.x"));
  runtime::Module m = build(s, {A, B}, Target("cuda"), "ew");
  EXPECT_EQ(run_and_compare(m, "ew", {A, B}), "");
}

TEST(Gpu, WrongDeviceArgumentIsRejected) {
  SKIP_WITHOUT_GPU();
  te::Tensor A = te::placeholder({64}, DataType::Float(32), "A");
  te::Tensor B = te::compute({64}, [&](te::Var i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule({B});
  s[B].bind(s[B].axis(0), te::thread_axis("threadIdx.x"));
  runtime::Module m = build(s, {A, B}, Target("cuda"), "inc");
  runtime::NDArray a = runtime::NDArray::empty({64}, DataType::Float(32)), b = runtime::NDArray::empty({64}, DataType::Float(32));
  EXPECT_THROW(m.get_function("inc")(a, b), Error);
}

void tune_free_template_check(const std::string& op, std::vector<int64_t> shape, int n_configs) {
  auto task = tuner::Task::create(op, shape, Target("cuda"));
  int ran = 0;
  for (int64_t i = 0; i < task.space().size() && ran < n_configs; i += std::max<int64_t>(1, task.space().size() / 97)) {
    tuner::Instance inst;
    try {
      inst = task.instantiate(i);
    } catch (const tuner::InstantiationError&) {
      continue;
    }
    runtime::Module m = build(inst.schedule, inst.args, Target("cuda"), op);
    EXPECT_EQ(run_and_compare(m, op, inst.args), "") << op << " config " << i;
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(Gpu, MatmulTemplate) {
  SKIP_WITHOUT_GPU();
  tune_free_template_check("matmul_cuda", {128, 96, 64}, 5);
}

TEST(Gpu, Conv2dTemplate) {
  SKIP_WITHOUT_GPU();
  tune_free_template_check("conv2d_nchw_cuda", {1, 8, 14, 14, 16, 3, 3}, 3);
}

}  // namespace
}  // namespace loom
