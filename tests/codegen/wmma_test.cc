// The WMMA tensor intrinsics: matmul_tensorcore's configs lowered for cuda, their CUDA C
// (fragments, load/mma/store_matrix_sync, no scalar code on fragments) and its compilation
// by NVRTC for sm_80 and sm_90 (skipped where NVRTC is missing). Running them needs a GPU
// (tests/e2e/tensorcore_gpu_test.cc).
#include <gtest/gtest.h>
#include <loom/codegen/cuda.h>
#include <loom/te/tensor_intrinsics.h>

#include <random>

#include "loom/loom.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

/// The default config and a few random ones that the template accepts.
std::vector<int64_t> configs(const tuner::Task& task, int n) {
  std::vector<int64_t> idx = {task.default_index()};
  std::mt19937_64 rng(4);
  for (int tries = 0; int(idx.size()) <= n && tries < 200; ++tries) {
    int64_t i = int64_t(rng() % uint64_t(task.space().size()));
    try {
      task.instantiate(i);
      idx.push_back(i);
    } catch (const tuner::InstantiationError&) {
    }
  }
  return idx;
}

TEST(Wmma, TensorcoreMatmulLowersToFragmentCalls) {
  tuner::Task task = tuner::Task::create("matmul_tensorcore", {128, 256, 256}, Target("cuda"), "float16");
  for (int64_t i : configs(task, 4)) {
    tuner::Instance inst = task.instantiate(i);
    lowering::LoweredFunc f = lower(inst.schedule, inst.args, "tc", lowering::LowerOptions{.target = Target("cuda")});
    ASSERT_EQ(f.device_funcs.size(), 1u);
    std::string src = codegen::cuda_source(f);
    SCOPED_TRACE(fmt::format("config {} ({})\n{}", i, task.space().get(i).str(), src));
    EXPECT_NE(src.find("#include <mma.h>"), std::string::npos);
    EXPECT_NE(src.find("nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major>"),
              std::string::npos);
    EXPECT_NE(src.find("nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>"), std::string::npos);
    // Unrolled fragment loops repeat a call; every kind is there.
    EXPECT_GE(count(src, "nvcuda::wmma::fill_fragment("), 1u);
    EXPECT_GE(count(src, "nvcuda::wmma::mma_sync("), 1u);
    EXPECT_GE(count(src, "nvcuda::wmma::load_matrix_sync(A_shared_wmma_matrix_a"), 1u);
    EXPECT_GE(count(src, "nvcuda::wmma::load_matrix_sync(B_shared_wmma_matrix_b"), 1u);
    EXPECT_GE(count(src, "nvcuda::wmma::store_matrix_sync(("), 1u);
    // Each thread fetches 8 float16 at once into shared memory: one 16-byte copy.
    EXPECT_GE(count(src, "*(uint4*)(A_shared + "), 1u);
    EXPECT_GE(count(src, "*(uint4*)(B_shared + "), 1u);
    // The fetch is complete before the fragments read it, and read before the next fetch.
    EXPECT_GE(count(src, "__syncthreads();"), 2u);
    // The kernel's block: 32 lanes times the warps.
    for (const auto& [tag, e] : f.device_funcs[0].thread_extents)
      if (tag == "threadIdx.x") EXPECT_EQ(te::as_const_int(e), 32);
  }
}

TEST(Wmma, NvrtcCompilesForSm80AndSm90) {
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "NVRTC not available: " << codegen::nvrtc_unavailable_reason();
  tuner::Task task = tuner::Task::create("matmul_tensorcore", {256, 256, 128}, Target("cuda"), "float16");
  for (int64_t i : configs(task, 2)) {
    tuner::Instance inst = task.instantiate(i);
    std::string src = codegen::cuda_source(lower(inst.schedule, inst.args, "tc", lowering::LowerOptions{.target = Target("cuda")}));
    for (const char* arch : {"sm_80", "sm_90"}) {
      std::string ptx;
      ASSERT_NO_THROW(ptx = codegen::compile_to_ptx(src, arch)) << arch << "\n" << src;
      EXPECT_NE(ptx.find("wmma.mma.sync"), std::string::npos) << arch;
      EXPECT_NE(ptx.find("wmma.load.a.sync"), std::string::npos) << arch;
      EXPECT_NE(ptx.find("wmma.store.d.sync"), std::string::npos) << arch;
    }
  }
}

TEST(Wmma, MismatchedComputeIsNamed) {
  // float32 inputs: the mma intrinsic multiplies float16.
  te::Tensor A = te::placeholder({32, 32}, DataType::Float(32), "A");
  te::Tensor B = te::placeholder({32, 32}, DataType::Float(32), "B");
  te::IterVar k = te::reduce_axis({0, 32}, "k");
  te::Tensor C = te::compute({32, 32}, [&](te::Var i, te::Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 16);
  auto [jo, ji] = s[C].split(s[C].axis(1), 16);
  auto [ko, ki] = s[C].split(k, 16);
  s[C].reorder({io, jo, ko, ii, ji, ki});
  s[C].tensorize(ii, te::wmma_mma());
  try {
    lower(s, {A, B, C}, "f");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match intrinsic 'wmma_mma_16x16x16'"), std::string::npos) << e.what();
  }
}

TEST(Wmma, WorkloadErrors) {
  EXPECT_THROW(tuner::Task::create("matmul_tensorcore", {128, 128, 128}, Target("cuda"), "float32"), Error);
  EXPECT_THROW(tuner::Task::create("matmul_tensorcore", {100, 128, 128}, Target("cuda"), "float16"), Error);
}

}  // namespace
}  // namespace loom
