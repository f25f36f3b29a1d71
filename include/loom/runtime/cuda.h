// The CUDA runtime: the driver (opened with dlopen, so libloom never links CUDA), device
// memory for NDArray (kDLCUDA), modules of PTX kernels with their launch plans, and timing.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loom/runtime/data_type.h"
#include "loom/runtime/module.h"

namespace loom::runtime {

/// True when libcuda.so.1 loads, initializes and reports at least one device.
bool cuda_available();
/// Why cuda_available() is false ("" when it is true).
std::string cuda_unavailable_reason();
/// Throws loom::Error "no CUDA driver/GPU: …" when cuda_available() is false.
void cuda_require(const std::string& what);
/// Compute capability of device `dev` as major*10+minor (e.g. 90); throws without a GPU.
int cuda_compute_capability(int dev = 0);
/// Waits for all work on the device to finish.
void cuda_synchronize();

/// One tensor argument of a CUDA function, as the caller must pass it.
struct CudaArgSpec {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
};

/// One kernel launch of a function: which kernel, on which buffers, with what geometry.
struct CudaLaunch {
  std::string kernel;
  /// Buffer operands in kernel parameter order: i < args.size() is argument i, else the
  /// temporary buffer i - args.size().
  std::vector<int> buffers;
  /// Integer scalar operands (int32 or int64 by `scalar_is_64`), after the buffers.
  std::vector<int64_t> scalars;
  std::vector<bool> scalar_is_64;
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
};

/// The kernel parameters of one launch as cuLaunchKernel takes them: a pointer per parameter,
/// to the buffer operand's pointer (`buffer(b)` for operand b of CudaLaunch::buffers) or to the
/// scalar's value, which the object keeps alive.
class CudaLaunchParams {
 public:
  CudaLaunchParams(const CudaLaunch& launch, const std::function<void*(int)>& buffer);
  CudaLaunchParams(const CudaLaunchParams&) = delete;
  CudaLaunchParams& operator=(const CudaLaunchParams&) = delete;
  void** data() { return params_.data(); }

 private:
  std::vector<void*> ptrs_;
  std::vector<int32_t> i32s_;
  std::vector<int64_t> i64s_;
  std::vector<void*> params_;
};

/// A device buffer the function allocates for intermediate results.
struct CudaTempBuffer {
  DataType dtype;
  int64_t numel = 0;
};

/// How a packed call of a CUDA function runs: checks each argument against `args` (device
/// kDLCUDA, dtype, shape, compact, no byte_offset) and then launches the kernels in order.
struct CudaFunctionPlan {
  std::string name;
  std::vector<CudaArgSpec> args;
  std::vector<CudaTempBuffer> temps;
  std::vector<CudaLaunch> launches;
};

/// A module of one PTX image with the plans of its functions (type_key "cuda"). The PTX is
/// loaded lazily into the device on the first call; source("cuda") and source("ptx") return
/// the code. Creating one needs no GPU; calling a function does.
Module make_cuda_module(std::string ptx, std::string cuda_source, std::vector<CudaFunctionPlan> funcs,
                        std::string target);

/// Writes a "cuda" module as a self-contained shared library (docs/deploy.md). The codegen
/// layer provides it (codegen/cuda/export_cuda.cc registers it when libloom loads); the
/// runtime cannot compile, so export_library of a cuda module fails clearly without one.
using CudaLibraryExporter = void (*)(const std::string& ptx, const std::vector<CudaFunctionPlan>& funcs,
                                     const std::string& target, const std::string& path);
void set_cuda_library_exporter(CudaLibraryExporter exporter);

/// Runs `f` `number` times between two CUDA events, `repeat` times; returns seconds per run
/// of each repeat. Throws without a GPU.
std::vector<double> cuda_time(const std::function<void()>& f, int number, int repeat);

}  // namespace loom::runtime
