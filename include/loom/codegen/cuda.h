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

/// Compiles lowered (packed) functions with device kernels into a "cuda" module.
runtime::Module build_cuda(const std::vector<lowering::LoweredFunc>& funcs, const Target& target);

}  // namespace loom::codegen
