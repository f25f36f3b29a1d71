// loom_graph_profile's kernel-times tensor: it is written while the kernels run, so it must not
// share memory with any input or output (the check the outputs already have among themselves).
#include <gtest/gtest.h>

#include <cstring>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/graph_plan.h"

namespace loom::runtime {
namespace {

const DataType f32 = DataType::Float(32);
constexpr int64_t kN = 8;

/// y = 2 x over float32[kN].
int32_t k_twice(DLTensor** a, int32_t n) {
  if (n != 2) return LOOM_ERR_ARGUMENT;
  for (int64_t i = 0; i < kN; ++i) static_cast<float*>(a[1]->data)[i] = 2 * static_cast<float*>(a[0]->data)[i];
  return 0;
}

GraphPlan twice_plan() {
  GraphPlan p;
  GraphTensor x, y;
  x.name = "x";
  x.kind = GraphTensorKind::kInput;
  y.name = "y";
  y.kind = GraphTensorKind::kOutput;
  for (GraphTensor* t : {&x, &y}) {
    t->dtype = f32;
    t->shape = {kN};
  }
  p.tensors = {x, y};
  p.kernels = {{"twice", {0, 1}, {false, true}, ""}};
  p.inputs = {0};
  p.outputs = {1};
  return p;
}

/// A float64[1] view of `bytes` bytes into `base`'s data.
DLTensor times_at(const NDArray& base, int64_t bytes, int64_t* shape) {
  DLTensor t = *base.dltensor();
  t.data = static_cast<char*>(t.data) + bytes;
  t.ndim = 1;
  t.shape = shape;
  t.strides = nullptr;
  t.dtype = {kDLFloat, 64, 1};
  return t;
}

TEST(GraphProfile, KernelTimesMustNotOverlapAnInputOrOutput) {
  GraphExecutor e(twice_plan(), {k_twice});
  NDArray x = NDArray::empty({kN}, f32), y = NDArray::empty({kN}, f32);
  x.fill_random(1);
  NDArray x_before = x.copy();
  int64_t one = 1;
  struct Case {
    const char* what;
    DLTensor times;
    const char* message;
  };
  std::vector<Case> cases = {
      {"on the input", times_at(x, 0, &one), "the kernel times (the last argument) overlap input 0 ('x')"},
      {"inside the input", times_at(x, 8, &one), "overlap input 0 ('x')"},
      {"on the output", times_at(y, 24, &one), "the kernel times (the last argument) overlap output 0 ('y')"},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::memset(y.raw_data(), 0x5a, y.nbytes());
    std::vector<DLTensor*> args = {x.dltensor(), y.dltensor(), &c.times};
    EXPECT_EQ(e.profile(args.data(), 3), LOOM_ERR_ARGUMENT);
    EXPECT_NE(std::string(loom_get_last_error()).find(c.message), std::string::npos) << loom_get_last_error();
    EXPECT_EQ(std::memcmp(x.raw_data(), x_before.raw_data(), x.nbytes()), 0) << "the caller's input was written";
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(reinterpret_cast<uint32_t*>(y.raw_data())[i], 0x5a5a5a5au);
  }
  // Right behind the input, without overlap: fine.
  NDArray both = NDArray::empty({2 * kN}, f32);
  DLTensor xin = *both.dltensor();
  int64_t n = kN;
  xin.shape = &n;
  std::memcpy(xin.data, x.raw_data(), x.nbytes());
  DLTensor times = times_at(both, kN * 4, &one);
  std::vector<DLTensor*> args = {&xin, y.dltensor(), &times};
  ASSERT_EQ(e.profile(args.data(), 3), 0) << loom_get_last_error();
  for (int64_t i = 0; i < kN; ++i) EXPECT_EQ(y.data<float>()[i], 2 * x.data<float>()[i]);
  EXPECT_GE(static_cast<double*>(times.data)[0], 0.0);
}

}  // namespace
}  // namespace loom::runtime
