// The CUDA driver for the C++ runtime: the function table of cuda_driver_api.h (shared with
// exported libraries), loaded once, with device 0's primary context.
#pragma once
#include <cstddef>
#include <string>

#include "cuda_driver_api.h"

namespace loom::runtime::cuda {

using ::CUcontext;
using ::CUdevice;
using ::CUdeviceptr;
using ::CUevent;
using ::CUfunction;
using ::CUmodule;
using ::CUresult;
using ::CUstream;

inline constexpr int kAttrComputeCapabilityMajor = LOOM_CU_ATTR_COMPUTE_CAPABILITY_MAJOR;
inline constexpr int kAttrComputeCapabilityMinor = LOOM_CU_ATTR_COMPUTE_CAPABILITY_MINOR;

/// Driver entry points (the table of cuda_driver_api.h); every pointer is set once the
/// driver is loaded.
using Driver = ::loom_cuda_driver;

/// The loaded driver with device 0's primary context current on the calling thread;
/// throws loom::Error "no CUDA driver/GPU: …" when it cannot be had.
const Driver& driver();
/// Throws loom::Error naming `what` and the driver's message when `r` is not success.
void check(CUresult r, const char* what);

}  // namespace loom::runtime::cuda
