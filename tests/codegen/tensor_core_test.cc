// The tensor-core intrinsics. WMMA: matmul_tensorcore's configs lowered for cuda, their CUDA C
// (fragments, load/mma/store_matrix_sync, no scalar code on fragments) and its compilation
// by NVRTC for sm_80 and sm_90. mma.sync: matmul_mma's configs, their CUDA C (register
// fragments, ldmatrix, mma.sync), NVRTC compiling it for sm_80 and sm_90a and ptxas
// assembling the PTX, and its results in the CUDA emulator against te::evaluate. NVRTC and
// ptxas checks skip where those are missing; running on a GPU: tests/e2e/tensorcore_gpu_test.cc.
#include <gtest/gtest.h>
#include <loom/codegen/cuda.h>
#include <loom/te/tensor_intrinsics.h>

#include <random>

#include "common/test_util.h"
#include "loom/loom.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

/// The default config (if the template accepts it) and up to `n` random ones it accepts.
std::vector<int64_t> configs(const tuner::Task& task, int n) {
  std::vector<int64_t> idx;
  try {
    task.instantiate(task.default_index());
    idx.push_back(task.default_index());
  } catch (const tuner::InstantiationError&) {
  }
  std::mt19937_64 rng(4);
  for (int tries = 0; int(idx.size()) <= n && tries < 2000; ++tries) {
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

/// Tensorizes a 32×32×32 matmul of `dtype` inputs with 16×16×16 tiles by `intrin`; the
/// error lowering gives.
std::string tensorize_error(DataType dtype, const te::TensorIntrin& intrin) {
  te::Tensor A = te::placeholder({32, 32}, dtype, "A");
  te::Tensor B = te::placeholder({32, 32}, dtype, "B");
  te::IterVar k = te::reduce_axis({0, 32}, "k");
  te::Tensor C = te::compute(
      {32, 32},
      [&](te::Var i, te::Var j) {
        return te::sum(te::cast(DataType::Float(32), A(i, k)) * te::cast(DataType::Float(32), B(k, j)), {k});
      },
      "C");
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 16);
  auto [jo, ji] = s[C].split(s[C].axis(1), 16);
  auto [ko, ki] = s[C].split(k, 16);
  s[C].reorder({io, jo, ko, ii, ji, ki});
  s[C].tensorize(ii, intrin);
  try {
    lower(s, {A, B, C}, "f");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Wmma, MismatchedComputeIsNamed) {
  // float32 inputs: the mma intrinsic multiplies float16.
  std::string err = tensorize_error(DataType::Float(32), te::wmma_mma());
  EXPECT_NE(err.find("does not match intrinsic 'wmma_mma_16x16x16'"), std::string::npos) << err;
}

TEST(Wmma, WorkloadErrors) {
  EXPECT_THROW(tuner::Task::create("matmul_tensorcore", {128, 128, 128}, Target("cuda"), "float32"), Error);
  EXPECT_THROW(tuner::Task::create("matmul_tensorcore", {100, 128, 128}, Target("cuda"), "float16"), Error);
}

std::string source_of(const tuner::Task& task, int64_t i) {
  tuner::Instance inst = task.instantiate(i);
  return codegen::cuda_source(lower(inst.schedule, inst.args, "mm", lowering::LowerOptions{.target = Target("cuda")}));
}

TEST(Mma, MatmulLowersToRegisterFragments) {
  tuner::Task task = tuner::Task::create("matmul_mma", {256, 256, 128}, Target("cuda"), "float16");
  for (int64_t i : configs(task, 4)) {
    std::string src = source_of(task, i);
    SCOPED_TRACE(fmt::format("config {} ({})\n{}", i, task.space().get(i).str(), src));
    EXPECT_EQ(src.find("nvcuda::wmma"), std::string::npos);
    EXPECT_NE(src.find("unsigned A_shared_mma_matrix_a["), std::string::npos);
    EXPECT_NE(src.find("unsigned B_shared_mma_matrix_b["), std::string::npos);
    EXPECT_NE(src.find("float C_mma_accumulator["), std::string::npos);
    EXPECT_GE(count(src, "loom_mma_fill(C_mma_accumulator"), 1u);
    EXPECT_GE(count(src, "loom_ldmatrix_x4(A_shared_mma_matrix_a"), 1u);
    EXPECT_GE(count(src, "loom_ldmatrix_x2_trans(B_shared_mma_matrix_b"), 1u);
    EXPECT_GE(count(src, "loom_mma_m16n8k16(C_mma_accumulator"), 1u);
    EXPECT_GE(count(src, "loom_mma_store("), 1u);
    // 16-byte fetches from global memory.
    EXPECT_GE(count(src, "*(const uint4*)(A + "), 1u);
    EXPECT_GE(count(src, "*(const uint4*)(B + "), 1u);
  }
}

TEST(Mma, DefaultConfigStructure) {
  tuner::Task task = tuner::Task::create("matmul_mma", {1024, 1024, 1024}, Target("cuda"), "float16");
  tuner::Instance inst = task.instantiate_default();
  lowering::LoweredFunc f = lower(inst.schedule, inst.args, "mm", lowering::LowerOptions{.target = Target("cuda")});
  ASSERT_EQ(f.device_funcs.size(), 1u);
  const lowering::DeviceFunc& k = f.device_funcs[0];
  // 2×2 warps of 32 lanes; double-buffered 128×(32+8) and 32×(128+8) float16 panels.
  int64_t threads = 1;
  for (const auto& [tag, e] : k.thread_extents) {
    if (tag == "threadIdx.x") EXPECT_EQ(te::as_const_int(e), 32);
    if (tag.rfind("threadIdx.", 0) == 0) threads *= te::as_const_int(e).value_or(0);
  }
  EXPECT_EQ(threads, 128);
  EXPECT_EQ(k.shared_bytes, 2 * (128 * 40 + 32 * 136) * 2);
  std::string src = codegen::cuda_source(f);
  // The next panels staged through registers: their stores into the other half at the end of
  // the step; one barrier per step besides the prologue's.
  EXPECT_NE(src.find("A_shared_prefetch["), std::string::npos) << src;
  EXPECT_EQ(count(src, "__syncthreads()"), 2u) << src;
  // A warp's 4×8 accumulator tiles and their 4×2 fragments of A and B per 16-deep step.
  EXPECT_NE(src.find("float C_mma_accumulator[128]"), std::string::npos) << src;
  EXPECT_EQ(count(src, "loom_mma_m16n8k16(C_mma_accumulator"), 4u * 8u * 2u) << src;  // unrolled: 2 steps of 16 per panel
}

TEST(Mma, PtxForSm80AndSm90aAssembles) {
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "NVRTC not available: " << codegen::nvrtc_unavailable_reason();
  tuner::Task task = tuner::Task::create("matmul_mma", {512, 256, 256}, Target("cuda"), "float16");
  for (int64_t i : configs(task, 2)) {
    std::string src = source_of(task, i);
    for (const char* arch : {"sm_80", "sm_90a"}) {
      std::string ptx;
      ASSERT_NO_THROW(ptx = codegen::compile_to_ptx(src, arch)) << arch << "\n" << src;
      EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos) << arch;
      EXPECT_NE(ptx.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), std::string::npos) << arch;
      EXPECT_NE(ptx.find("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"), std::string::npos) << arch;
      if (codegen::ptxas_path().empty()) continue;
      std::vector<codegen::PtxasKernelInfo> info;
      ASSERT_NO_THROW(info = codegen::ptxas_check(ptx, arch)) << arch;
      for (const auto& k : info) {
        // The fragments stay in registers.
        EXPECT_EQ(k.spill_store_bytes, 0) << arch << " config " << i << ": " << k.str();
        EXPECT_EQ(k.stack_frame_bytes, 0) << arch << " config " << i << ": " << k.str();
      }
    }
  }
}

TEST(Mma, EmulatedConfigsMatchTheReference) {
  // The emulator's models of ldmatrix and mma.sync take each lane's elements in the PTX
  // fragment layouts: a wrong fragment index, tile offset or row stride gives wrong results.
  for (auto shape : std::vector<std::vector<int64_t>>{{128, 128, 64}, {64, 48, 96}}) {
    tuner::Task task = tuner::Task::create("matmul_mma", shape, Target("cuda"), "float16");
    for (int64_t i : configs(task, 3)) {
      tuner::Instance inst = task.instantiate(i);
      EXPECT_EQ(test::compare_emulated_with_reference(inst.schedule, inst.args), "")
          << shape[0] << "x" << shape[1] << "x" << shape[2] << " config " << i << " (" << task.space().get(i).str()
          << ")";
    }
  }
}

TEST(Mma, MismatchedComputeIsNamed) {
  // A 16×16 output tile: the intrinsic computes 16×8.
  std::string err = tensorize_error(DataType::Float(16), te::mma_m16n8k16());
  EXPECT_NE(err.find("'mma_m16n8k16'"), std::string::npos) << err;
}

TEST(Mma, WorkloadErrors) {
  EXPECT_THROW(tuner::Task::create("matmul_mma", {128, 128, 128}, Target("cuda"), "float32"), Error);
  EXPECT_THROW(tuner::Task::create("matmul_mma", {100, 128, 128}, Target("cuda"), "float16"), Error);
  EXPECT_THROW(tuner::Task::create("matmul_mma", {128, 12, 128}, Target("cuda"), "float16"), Error);
  EXPECT_NO_THROW(tuner::Task::create("matmul_mma", {128, 24, 128}, Target("cuda"), "float16"));
}

}  // namespace
}  // namespace loom
