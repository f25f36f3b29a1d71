/* The CUDA driver entry points loom uses and their loading with dlopen("libcuda.so.1"), in
 * one place for both users: the C++ runtime (runtime/cuda/cuda_driver.cc) and the shim that
 * libraries exported from "cuda" modules embed (codegen/module_runtime/loom_cuda_runtime.c,
 * into which CMake pastes this file, so the shim stays one self-contained C file).
 *
 * Plain C (C99 and C++), no CUDA headers: the driver's types are declared here. */
#ifndef LOOM_RUNTIME_CUDA_CUDA_DRIVER_API_H_
#define LOOM_RUNTIME_CUDA_CUDA_DRIVER_API_H_

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef unsigned long long CUdeviceptr; /* NOLINT: the driver's own definition */

#define LOOM_CU_ATTR_COMPUTE_CAPABILITY_MAJOR 75
#define LOOM_CU_ATTR_COMPUTE_CAPABILITY_MINOR 76

/* X(field, symbol, parameter types, needed by exported libraries) for every entry point; all
 * return CUresult. The _v2 symbols are the 64-bit-pointer versions the headers map to. */
#define LOOM_CUDA_DRIVER_FUNCTIONS(X)                                                                   \
  X(cuGetErrorString, "cuGetErrorString", (CUresult, const char**), 1)                                 \
  X(cuInit, "cuInit", (unsigned), 1)                                                                    \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int*), 1)                                                   \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice*, int), 1)                                                   \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int*, int, CUdevice), 0)                            \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext*, CUdevice), 1)                   \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext), 1)                                                \
  X(cuCtxSynchronize, "cuCtxSynchronize", (void), 1)                                                   \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr*, size_t), 1)                                            \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr), 1)                                                       \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr, const void*, size_t), 0)                            \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void*, CUdeviceptr, size_t), 0)                                  \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", (CUdeviceptr, CUdeviceptr, size_t), 0)                            \
  X(cuModuleLoadData, "cuModuleLoadData", (CUmodule*, const void*), 1)                                 \
  X(cuModuleUnload, "cuModuleUnload", (CUmodule), 0)                                                   \
  X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction*, CUmodule, const char*), 1)               \
  X(cuLaunchKernel, "cuLaunchKernel",                                                                   \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, \
     void**),                                                                                           \
    1)                                                                                                  \
  X(cuEventCreate, "cuEventCreate", (CUevent*, unsigned), 0)                                           \
  X(cuEventRecord, "cuEventRecord", (CUevent, CUstream), 0)                                            \
  X(cuEventSynchronize, "cuEventSynchronize", (CUevent), 0)                                            \
  X(cuEventElapsedTime, "cuEventElapsedTime", (float*, CUevent, CUevent), 0)                           \
  X(cuEventDestroy, "cuEventDestroy_v2", (CUevent), 0)

/* The driver's function table. */
typedef struct loom_cuda_driver {
#define LOOM_CU_DRIVER_FIELD(field, symbol, params, exported) CUresult(*field) params;
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_CU_DRIVER_FIELD)
#undef LOOM_CU_DRIVER_FIELD
} loom_cuda_driver;

/* Opens libcuda.so.1 and fills *d. With exported_only, only the entry points exported
 * libraries need must resolve (the others are null if absent). Returns 1 on success, else 0
 * with `why` (of size n) saying what failed: "libcuda.so.1 could not be loaded (…)" or
 * "libcuda.so.1 lacks cuA, cuB". Calls nothing in the driver (no cuInit). */
static inline int loom_cuda_driver_load(loom_cuda_driver* d, int exported_only, char* why, size_t n) {
  void* lib;
  size_t used;
  memset(d, 0, sizeof *d);
  lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    snprintf(why, n, "libcuda.so.1 could not be loaded (%s)", e ? e : "unknown dlopen error");
    return 0;
  }
  snprintf(why, n, "libcuda.so.1 lacks ");
  used = strlen(why);
#define LOOM_CU_DRIVER_RESOLVE(field, symbol, params, exported)                                     \
  *(void**)(&d->field) = dlsym(lib, symbol);                                                        \
  if (!d->field && (exported || !exported_only) && used < n) {                                      \
    int k = snprintf(why + used, n - used, "%s%s", used > strlen("libcuda.so.1 lacks ") ? ", " : "", \
                     symbol);                                                                         \
    used += k > 0 ? (size_t)k : 0;                                                                  \
  }
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_CU_DRIVER_RESOLVE)
#undef LOOM_CU_DRIVER_RESOLVE
  return used == strlen("libcuda.so.1 lacks ");
}

#endif /* LOOM_RUNTIME_CUDA_CUDA_DRIVER_API_H_ */
