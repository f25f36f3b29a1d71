// Padding and concatenation never read outside their inputs: the input lies between two
// inaccessible pages, so an out-of-bounds read crashes the test.
#include <sys/mman.h>
#include <unistd.h>

#include <memory>

#include "common/test_util.h"

namespace loom {
namespace {

/// `n` floats that end exactly at an inaccessible page and start right after another.
class GuardedFloats {
 public:
  explicit GuardedFloats(int64_t n) : n_(n) {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    size_t bytes = size_t(n) * sizeof(float);
    body_ = (bytes + page_ - 1) / page_ * page_;
    base_ = static_cast<char*>(mmap(nullptr, body_ + 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    mprotect(base_, page_, PROT_NONE);
    mprotect(base_ + page_ + body_, page_, PROT_NONE);
    data_ = reinterpret_cast<float*>(base_ + page_ + body_ - bytes);
    for (int64_t i = 0; i < n; ++i) data_[i] = float(i % 97) * 0.25f;
  }
  ~GuardedFloats() { munmap(base_, body_ + 2 * page_); }
  DLTensor tensor(std::vector<int64_t>& shape) {
    DLTensor t{};
    t.data = data_;
    t.device = {kDLCPU, 0};
    t.ndim = int32_t(shape.size());
    t.dtype = DataType::Float(32).to_dlpack();
    t.shape = shape.data();
    return t;
  }
  float* data() const { return data_; }

 private:
  int64_t n_;
  size_t page_ = 0, body_ = 0;
  char* base_ = nullptr;
  float* data_ = nullptr;
};

TEST(GuardPage, VectorizedPadReadsOnlyInside) {
  const int64_t h = 16, w = 256;
  te::Tensor A = te::placeholder({h, w}, DataType::Float(32), "A");
  te::Tensor P = te::ops::pad(A, {3, 20}, {3, 20}, 0.0);
  Schedule s = create_schedule({P});
  auto [jo, ji] = s[P].split(s[P].axis(1), 16);
  (void)jo;
  s[P].vectorize(ji);
  runtime::Module m = build(s, {A, P}, Target("llvm"), "pad");

  GuardedFloats a(h * w);
  std::vector<int64_t> shape{h, w};
  DLTensor ta = a.tensor(shape);
  auto out = runtime::NDArray::empty({h + 6, w + 40}, DataType::Float(32));
  m.get_function("pad").call({&ta, out.dltensor()});
  for (int64_t i = 0; i < h + 6; ++i) {
    for (int64_t j = 0; j < w + 40; ++j) {
      bool inside = i >= 3 && i < h + 3 && j >= 20 && j < w + 20;
      float want = inside ? a.data()[(i - 3) * w + (j - 20)] : 0.0f;
      ASSERT_EQ(out.data<float>()[i * (w + 40) + j], want) << i << "," << j;
    }
  }
}

TEST(GuardPage, ConcatReadsOnlyItsOwnInput) {
  const int64_t n = 1024;
  te::Tensor A = te::placeholder({n}, DataType::Float(32), "A");
  te::Tensor B = te::placeholder({n}, DataType::Float(32), "B");
  te::Tensor C = te::ops::concat({A, B}, 0);
  Schedule s = create_schedule({C});
  auto [o, i] = s[C].split(s[C].axis(0), 16);
  (void)o;
  s[C].vectorize(i);
  runtime::Module m = build(s, {A, B, C}, Target("llvm"), "concat");
  GuardedFloats a(n), b(n);
  std::vector<int64_t> shape{n};
  DLTensor ta = a.tensor(shape), tb = b.tensor(shape);
  auto out = runtime::NDArray::empty({2 * n}, DataType::Float(32));
  m.get_function("concat").call({&ta, &tb, out.dltensor()});
  for (int64_t k = 0; k < 2 * n; ++k) ASSERT_EQ(out.data<float>()[k], k < n ? a.data()[k] : b.data()[k - n]);
}

// Seven inputs of uneven lengths: the loads sit under three levels of selects, whose
// conditions predicate_select_loads binds once per arm (Lets); vectorized, the lanes of one
// vector straddle inputs, scalar, each load branches on its predicate.
TEST(GuardPage, ConcatOfManyInputsReadsOnlyInside) {
  const std::vector<int64_t> lens = {5, 16, 33, 1, 64, 17, 100};
  for (bool vectorized : {true, false}) {
    SCOPED_TRACE(vectorized ? "vectorized" : "scalar");
    std::vector<te::Tensor> in;
    for (size_t k = 0; k < lens.size(); ++k)
      in.push_back(te::placeholder({lens[k]}, DataType::Float(32), "A" + std::to_string(k)));
    te::Tensor C = te::ops::concat(in, 0);
    Schedule s = create_schedule({C});
    if (vectorized) {
      auto [o, i] = s[C].split(s[C].axis(0), 16);
      (void)o;
      s[C].vectorize(i);
    }
    std::vector<te::Tensor> args = in;
    args.push_back(C);
    runtime::Module m = build(s, args, Target("llvm"), "concat");
    std::vector<std::unique_ptr<GuardedFloats>> data;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<DLTensor> tensors;
    int64_t total = 0;
    for (int64_t len : lens) {
      data.push_back(std::make_unique<GuardedFloats>(len));
      for (int64_t j = 0; j < len; ++j) data.back()->data()[j] = float(1000 * data.size() + size_t(j));  // distinct
      shapes.push_back({len});
      total += len;
    }
    for (size_t k = 0; k < lens.size(); ++k) tensors.push_back(data[k]->tensor(shapes[k]));
    auto out = runtime::NDArray::empty({total}, DataType::Float(32));
    std::vector<DLTensor*> call;
    for (DLTensor& t : tensors) call.push_back(&t);
    call.push_back(out.dltensor());
    m.get_function("concat").call(call);
    int64_t at = 0;
    for (size_t k = 0; k < lens.size(); ++k)
      for (int64_t j = 0; j < lens[k]; ++j, ++at) ASSERT_EQ(out.data<float>()[at], data[k]->data()[j]) << k << "," << j;
  }
}

}  // namespace
}  // namespace loom
