// The CUDA backend: CUDA C from the device kernels of a lowered function, PTX through NVRTC
// (opened with dlopen), and modules that launch them through the driver (loom/runtime/cuda.h).
#pragma once
#include <string>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"

namespace loom::codegen {

struct CudaCodegenOptions {
  /// Use the fast approximate intrinsics (__expf, __logf, __powf, …).
  bool fast_math = true;
  /// Leave out the inline-PTX device functions behind the loom.mma_* intrinsics
  /// (loom_ldmatrix_x4, loom_mma_m16n8k16, …): the CUDA emulation defines its own models.
  bool omit_mma_functions = false;
};

/// CUDA C of one kernel: `extern "C" __global__ void __launch_bounds__(threads) name(…)`.
std::string cuda_kernel_source(const lowering::DeviceFunc& k, const CudaCodegenOptions& opts = {});
/// A complete translation unit (prelude + every kernel of every function).
std::string cuda_source(const std::vector<lowering::LoweredFunc>& funcs, const CudaCodegenOptions& opts = {});
std::string cuda_source(const lowering::LoweredFunc& f, const CudaCodegenOptions& opts = {});

/// True when libnvrtc could be opened.
bool nvrtc_available();
/// Why nvrtc_available() is false ("" when it is true).
std::string nvrtc_unavailable_reason();
/// Compiles CUDA C to PTX for `arch` ("sm_80", "sm_90", or "80"). Throws loom::Error with
/// NVRTC's log on a compile error.
std::string compile_to_ptx(const std::string& src, const std::string& arch, bool fast_math = true);
/// The architecture a target compiles for: its -arch, else the GPU's when one is present,
/// else sm_80.
std::string cuda_arch(const Target& target);

/// One kernel's resources as ptxas -v reports them.
struct PtxasKernelInfo {
  std::string name;
  int registers = 0;
  int64_t stack_frame_bytes = 0, spill_store_bytes = 0, spill_load_bytes = 0;
  int64_t shared_bytes = 0;  // static shared memory
  int barriers = 0;
  /// "name: N registers, … bytes shared memory".
  std::string str() const;
};
/// The CUDA toolkit's ptxas: $LOOM_PTXAS, else ptxas on PATH, else /usr/local/cuda/bin/ptxas;
/// "" when there is none.
std::string ptxas_path();
/// Assembles `ptx` for `arch` ("sm_80", "sm_90a") with ptxas -v: throws loom::Error with its
/// output when it rejects the PTX (an instruction the architecture lacks, a malformed
/// operand), else returns each kernel's registers, spills and shared memory.
std::vector<PtxasKernelInfo> ptxas_check(const std::string& ptx, const std::string& arch);

/// Compiles lowered (packed) functions with device kernels into a "cuda" module.
runtime::Module build_cuda(const std::vector<lowering::LoweredFunc>& funcs, const Target& target);

struct CudaEmulationOptions {
  /// Runs every call twice, the second time with the blocks, and the threads of each block
  /// between barriers, in the opposite order, and throws when the results differ (a race).
  bool check_races = true;
};

/// The module build_cuda makes, but run on the CPU: the same CUDA C compiled with the host
/// C++ compiler ($LOOM_CXX, else c++) against a model of CUDA's execution (threads of a block
/// as fibers meeting at __syncthreads, blocks one after another, __shared__ arrays shared by
/// a block), launched by the same plans. Its functions take host (kDLCPU) tensors, the
/// emulation's device memory; an access past the end of an argument, a temporary or a
/// shared array throws naming the kernel and the buffer. For checking generated kernels
/// without a GPU: slow (a thread switch at every barrier), and blind to what it does not
/// model. Throws when the kernels use what the model lacks (cuda_emulation_unsupported).
runtime::Module build_cuda_emulated(const std::vector<lowering::LoweredFunc>& funcs, const Target& target,
                                    const CudaEmulationOptions& opts = {});
/// "" when build_cuda_emulated can run `funcs`, else what their kernels use that the
/// emulation does not model (WMMA fragments, inline PTX).
std::string cuda_emulation_unsupported(const std::vector<lowering::LoweredFunc>& funcs, const Target& target);

}  // namespace loom::codegen
