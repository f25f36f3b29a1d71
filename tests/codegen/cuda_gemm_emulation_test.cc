// The CUDA float32 GEMM templates (tuner/templates/cuda_gemm.cc): configs run on the CPU by
// the CUDA emulator and compared with te::evaluate on shapes the tiles do and do not divide,
// the structure of the generated kernel, and NVRTC compiling it for sm_80 and sm_90a.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/cuda.h"
#include "loom/lower/passes.h"
#include "loom/loom.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

using Knobs = std::map<std::string, int64_t>;

/// The config of `task` whose choice knobs take `knobs`' values, the default's elsewhere.
int64_t config_with(const tuner::Task& task, const Knobs& knobs) {
  const tuner::ConfigSpace& sp = task.space();
  std::vector<int> choices = sp.choices_of(task.default_index());
  for (const auto& [name, v] : knobs) {
    const tuner::Knob& k = sp.knob(name);
    int c = -1;
    for (size_t i = 0; i < k.size(); ++i)
      if (k.values[i] == std::vector<int64_t>{v}) c = int(i);
    EXPECT_GE(c, 0) << name << " has no value " << v;
    if (c >= 0) choices[size_t(sp.knob_index(name))] = c;
  }
  return sp.index_of(choices);
}

std::string run_config(const std::string& op, std::vector<int64_t> shape, const Knobs& knobs,
                       std::map<std::string, std::string> attrs = {}) {
  auto task = tuner::Task::create(op, shape, Target("cuda"), "float32", attrs);
  tuner::Instance inst = task.instantiate(config_with(task, knobs));
  return test::compare_emulated_with_reference(inst.schedule, inst.args);
}

lowering::LoweredFunc lower_default(const std::string& op, std::vector<int64_t> shape) {
  auto task = tuner::Task::create(op, shape, Target("cuda"));
  tuner::Instance inst = task.instantiate_default();
  lowering::LowerOptions o;
  o.target = Target("cuda");
  return lowering::lower(inst.schedule, inst.args, op, o);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(CudaGemmEmulation, DefaultConfigMatchesTheReference) {
  // One 128×128 tile, tiles that overshoot M, N and K (K not a multiple of 4: scalar fetches),
  // and a matrix smaller than one thread's accumulators.
  for (auto shape : std::vector<std::vector<int64_t>>{{128, 128, 64}, {200, 136, 37}, {3, 5, 2}})
    EXPECT_EQ(run_config("matmul", shape, {}), "") << shape[0] << "x" << shape[1] << "x" << shape[2];
}

TEST(CudaGemmEmulation, KnobsMatchTheReference) {
  // Each knob away from the default, on a shape no tile divides.
  const std::vector<int64_t> shape = {150, 100, 45};
  for (const Knobs& k : std::vector<Knobs>{{{"double_buffer", 0}},
                                           {{"pad", 0}},
                                           {{"tile_k", 16}},
                                           {{"tile_k", 32}, {"thread_m", 4}, {"thread_n", 4}},
                                           {{"warps_m", 4}, {"warps_n", 1}, {"lanes_m", 4}},
                                           {{"warps_m", 1}, {"warps_n", 2}, {"lanes_m", 16}, {"thread_n", 4}},
                                           {{"lanes_m", 2}, {"warps_n", 2}}}) {
    std::string what;
    for (const auto& [n, v] : k) what += n + "=" + std::to_string(v) + " ";
    EXPECT_EQ(run_config("matmul", shape, k), "") << what;
  }
}

TEST(CudaGemmEmulation, DenseAndBatchMatmulMatchTheReference) {
  EXPECT_EQ(run_config("dense", {70, 130, 36}, {}), "");
  EXPECT_EQ(run_config("dense", {64, 64, 33}, {{"double_buffer", 0}}), "");
  EXPECT_EQ(run_config("batch_matmul", {3, 40, 72, 20}, {}), "");
  EXPECT_EQ(run_config("batch_matmul", {2, 33, 65, 17}, {}, {{"transpose_a", "1"}, {"batch_b", "1"}}), "");
  EXPECT_EQ(run_config("batch_matmul", {2, 64, 48, 24}, {}, {{"transpose_b", "1"}, {"batch_a", "1"}}), "");
}

TEST(CudaGemmCodegen, KernelStructure) {
  lowering::LoweredFunc f = lower_default("matmul", {1024, 1024, 1024});
  ASSERT_EQ(f.device_funcs.size(), 1u);
  const lowering::DeviceFunc& k = f.device_funcs[0];
  // 8 warps; two halves of 8 × (128 + 4) floats for A and B each.
  EXPECT_EQ(k.shared_bytes, 2 * 2 * 8 * (128 + 4) * 4);
  std::string src = codegen::cuda_source(f);
  // 16-byte loads from global memory into the prefetch registers, 16-byte reads of shared
  // memory into the register tiles, one barrier per step of the reduction plus the
  // prologue's.
  EXPECT_GE(count(src, "*(const float4*)(A + "), 1u) << src;
  EXPECT_GE(count(src, "*(const float4*)(B + "), 1u) << src;
  EXPECT_GE(count(src, "*(const float4*)(A_shared + "), 1u) << src;
  EXPECT_GE(count(src, "*(const float4*)(B_shared + "), 1u) << src;
  EXPECT_NE(src.find("A_shared_prefetch["), std::string::npos) << src;
  EXPECT_EQ(count(src, "__syncthreads()"), 2u) << src;
}

TEST(CudaGemmCodegen, CompilesWithNvrtcForAmpereAndHopper) {
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "NVRTC not available: " << codegen::nvrtc_unavailable_reason();
  for (auto shape : std::vector<std::vector<int64_t>>{{4096, 4096, 4096}, {1000, 1000, 999}}) {
    std::string src = codegen::cuda_source(lower_default("matmul", shape));
    for (const char* arch : {"sm_80", "sm_90a"}) {
      std::string ptx;
      try {
        ptx = codegen::compile_to_ptx(src, arch);
      } catch (const Error& e) {
        ADD_FAILURE() << arch << ": " << e.what();
        continue;
      }
      EXPECT_NE(ptx.find(".entry"), std::string::npos) << arch;
      EXPECT_NE(ptx.find("ld.shared.v4.f32"), std::string::npos) << arch;
      // 4096: every fetch is a 16-byte load; 999: K is odd, A's rows are fetched a float at a time.
      if (shape[2] % 4 == 0) EXPECT_NE(ptx.find("ld.global.nc.v4.f32"), std::string::npos) << arch;
      if (codegen::ptxas_path().empty()) continue;
      // The accumulators and prefetch registers stay in registers: ptxas spills nothing.
      for (const codegen::PtxasKernelInfo& k : codegen::ptxas_check(ptx, arch)) {
        EXPECT_EQ(k.spill_store_bytes, 0) << arch << " " << k.str();
        EXPECT_LE(k.registers, 255) << arch << " " << k.str();
      }
    }
  }
}

}  // namespace
}  // namespace loom
