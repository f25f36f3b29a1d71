/* The CUDA driver shim compiled into every library exported from a "cuda" module, in the
 * same translation unit as the generated plan tables and entry points (codegen/cuda/
 * export_cuda.cc appends them after this file).
 *
 * It checks each argument like the CPU ABI (but for kDLCUDA and 16-byte alignment), then
 * on the first call opens libcuda.so.1 with dlopen (the library never links CUDA), calls
 * cuInit, makes device 0's primary context current, loads the PTX from the
 * __loom_device_blobs container with cuModuleLoadData, and launches the plan's kernels in
 * order, allocating device temporaries for the call.
 *
 * Not part of libloom: CMake embeds it as a string (loom_cuda_runtime_source.h). Plain C11,
 * POSIX threads and dlopen; everything is hidden except what the generated code exports. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOOM_CU_HIDDEN __attribute__((visibility("hidden")))
#define LOOM_CU_EXPORT __attribute__((visibility("default")))
#define LOOM_CU_ERR_ARGUMENT -1
#define LOOM_CU_ERR_RUNTIME -2
#define LOOM_CU_MAX_MESSAGE 2048

/* DLPack's DLTensor (ABI of dlpack.h), declared here so the shim needs no include path. */
typedef struct {
  int32_t device_type;
  int32_t device_id;
} loom_cu_device;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} loom_cu_dtype;
typedef struct {
  void* data;
  loom_cu_device device;
  int32_t ndim;
  loom_cu_dtype dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
#define LOOM_CU_DL_CUDA 2

/* The embedded runtime's error slot (codegen/module_runtime/loom_module_runtime.c). */
LOOM_CU_HIDDEN void loom_set_last_error(const char* msg);
/* The device-code container the generated part defines. */
extern LOOM_CU_EXPORT const unsigned char __loom_device_blobs[];

/* ------------------------------------------------------------------ plan tables */

typedef struct {
  const char* name;
  uint8_t code, bits;
  uint16_t lanes;
  const char* dtype; /* e.g. "float32", for messages */
  int32_t ndim;
  const int64_t* shape;
} loom_cu_arg;

typedef struct {
  int64_t nbytes;
} loom_cu_temp;

typedef struct {
  const char* kernel;
  int32_t num_buffers;
  const int32_t* buffers; /* < num_args: argument, else temporary (index - num_args) */
  int32_t num_scalars;
  const int64_t* scalars;
  const uint8_t* scalar_is_64;
  uint32_t grid[3], block[3];
  uint32_t shared_bytes; /* dynamic shared memory */
} loom_cu_launch;

typedef struct {
  const char* name;
  int32_t num_args;
  const loom_cu_arg* args;
  int32_t num_temps;
  const loom_cu_temp* temps;
  int32_t num_launches;
  const loom_cu_launch* launches;
  void** functions; /* CUfunction per launch, filled on the first call */
} loom_cu_plan;

/* ------------------------------------------------------------------ errors */

static void loom_cu_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

static void loom_cu_error(const char* fmt, ...) {
  char buf[LOOM_CU_MAX_MESSAGE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  loom_set_last_error(buf);
}

static int loom_cu_check_arg(const loom_cu_plan* p, int32_t i, const DLTensor* t) {
  const loom_cu_arg* a = &p->args[i];
  if (t == NULL) {
    loom_cu_error("%s: argument %d ('%s') is null", p->name, i, a->name);
    return 0;
  }
  if (t->device.device_type != LOOM_CU_DL_CUDA) {
    loom_cu_error("%s: argument %d ('%s') is on device type %d: it must be on the GPU (device type kDLCUDA = 2)",
                  p->name, i, a->name, t->device.device_type);
    return 0;
  }
  if (t->device.device_id != 0) {
    loom_cu_error("%s: argument %d ('%s') is on CUDA device %d: it must be on CUDA device 0", p->name, i, a->name,
                  t->device.device_id);
    return 0;
  }
  if (t->ndim != a->ndim) {
    loom_cu_error("%s: argument %d ('%s') has the wrong number of dimensions: must be %d, got %d", p->name, i,
                  a->name, a->ndim, t->ndim);
    return 0;
  }
  if (t->dtype.code != a->code || t->dtype.bits != a->bits || t->dtype.lanes != a->lanes) {
    loom_cu_error("%s: argument %d ('%s') has the wrong dtype: must be %s", p->name, i, a->name, a->dtype);
    return 0;
  }
  if (t->ndim > 0 && t->shape == NULL) {
    loom_cu_error("%s: argument %d ('%s') has a null shape array", p->name, i, a->name);
    return 0;
  }
  int64_t stride = 1;
  for (int32_t d = a->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != a->shape[d]) {
      loom_cu_error("%s: argument %d ('%s') has the wrong shape: dimension %d must be %lld", p->name, i, a->name, d,
                    (long long)a->shape[d]);
      return 0;
    }
    if (t->strides != NULL && t->strides[d] != stride) {
      loom_cu_error("%s: argument %d ('%s') must be compact row-major: stride of dimension %d must be %lld", p->name, i,
                    a->name, d, (long long)stride);
      return 0;
    }
    stride *= a->shape[d];
  }
  if (t->byte_offset != 0) {
    loom_cu_error("%s: argument %d ('%s') must have byte_offset 0", p->name, i, a->name);
    return 0;
  }
  if (t->data == NULL && stride != 0) {
    loom_cu_error("%s: argument %d ('%s') has no data", p->name, i, a->name);
    return 0;
  }
  if (((uintptr_t)t->data) % 16 != 0) {
    loom_cu_error("%s: argument %d ('%s') data pointer must be aligned to 16 bytes", p->name, i, a->name);
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------ the driver */

/* The driver's function table and its loading, shared with the C++ runtime; CMake pastes
 * the header here when it embeds this file. */
#include "../../runtime/cuda/cuda_driver_api.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_state; /* 0 not tried, 1 ready, -1 failed (g_reason says why) */
static char g_reason[LOOM_CU_MAX_MESSAGE];
static loom_cuda_driver g_drv;
static CUcontext g_ctx;
static CUmodule g_module;

static const char* loom_cu_result(CUresult r) {
  const char* s = NULL;
  if (g_drv.cuGetErrorString && g_drv.cuGetErrorString(r, &s) == 0 && s) return s;
  return "unknown CUDA error";
}

/* Reads the first PTX entry of the container into a NUL-terminated copy (the driver needs
 * the terminator; the container stores the bytes without it). */
static char* loom_cu_embedded_ptx(void) {
  const unsigned char* p = __loom_device_blobs;
  uint32_t version, count;
  uint64_t total;
  if (memcmp(p, "LOOMDEV", 8) != 0) return NULL;
  memcpy(&version, p + 8, 4);
  memcpy(&count, p + 12, 4);
  memcpy(&total, p + 16, 8);
  if (version != 1) return NULL;
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char* e = p + 24 + 40 * (uint64_t)i;
    uint32_t kind;
    uint64_t off, size;
    memcpy(&kind, e, 4);
    memcpy(&off, e + 24, 8);
    memcpy(&size, e + 32, 8);
    if (kind != 1 || off > total || size > total - off) continue;
    char* s = malloc((size_t)size + 1);
    if (!s) return NULL;
    memcpy(s, p + off, (size_t)size);
    s[size] = '\0';
    return s;
  }
  return NULL;
}

/* Must hold g_mu. */
static void loom_cu_open(void) {
  char why[LOOM_CU_MAX_MESSAGE - 32];
  if (!loom_cuda_driver_load(&g_drv, /*exported_only=*/1, why, sizeof why)) {
    snprintf(g_reason, sizeof g_reason, "no CUDA driver/GPU: %s", why);
    g_state = -1;
    return;
  }
  CUresult r = g_drv.cuInit(0);
  if (r != 0) {
    snprintf(g_reason, sizeof g_reason, "no CUDA driver/GPU: cuInit failed (%s)", loom_cu_result(r));
    g_state = -1;
    return;
  }
  int n = 0;
  if (g_drv.cuDeviceGetCount(&n) != 0 || n < 1) {
    snprintf(g_reason, sizeof g_reason, "no CUDA driver/GPU: the driver reports no device");
    g_state = -1;
    return;
  }
  int dev = 0;
  if ((r = g_drv.cuDeviceGet(&dev, 0)) != 0 || (r = g_drv.cuDevicePrimaryCtxRetain(&g_ctx, dev)) != 0 ||
      (r = g_drv.cuCtxSetCurrent(g_ctx)) != 0) {
    snprintf(g_reason, sizeof g_reason, "no CUDA driver/GPU: cannot get device 0's primary context (%s)",
             loom_cu_result(r));
    g_state = -1;
    return;
  }
  char* ptx = loom_cu_embedded_ptx();
  if (!ptx) {
    snprintf(g_reason, sizeof g_reason, "the library's __loom_device_blobs holds no PTX");
    g_state = -1;
    return;
  }
  r = g_drv.cuModuleLoadData(&g_module, ptx);
  free(ptx);
  if (r != 0) {
    snprintf(g_reason, sizeof g_reason, "cuModuleLoadData (loading the embedded PTX) failed: %s", loom_cu_result(r));
    g_state = -1;
    return;
  }
  g_state = 1;
}

/* Opens the driver once, resolves the plan's kernels, and makes the context current. */
static int loom_cu_prepare(const loom_cu_plan* p) {
  pthread_mutex_lock(&g_mu);
  if (g_state == 0) loom_cu_open();
  if (g_state < 0) {
    loom_cu_error("%s: %s", p->name, g_reason);
    pthread_mutex_unlock(&g_mu);
    return 0;
  }
  for (int32_t k = 0; k < p->num_launches; ++k) {
    if (p->functions[k]) continue;
    CUresult r = g_drv.cuModuleGetFunction((CUfunction*)&p->functions[k], g_module, p->launches[k].kernel);
    if (r != 0) {
      p->functions[k] = NULL;
      loom_cu_error("%s: cuModuleGetFunction %s failed: %s", p->name, p->launches[k].kernel, loom_cu_result(r));
      pthread_mutex_unlock(&g_mu);
      return 0;
    }
  }
  pthread_mutex_unlock(&g_mu);
  CUresult r = g_drv.cuCtxSetCurrent(g_ctx);
  if (r != 0) {
    loom_cu_error("%s: cuCtxSetCurrent failed: %s", p->name, loom_cu_result(r));
    return 0;
  }
  return 1;
}

#define LOOM_CU_MAX_PARAMS 256

/* Checks the arguments and runs the plan; 0 or a negative status with the error set. */
LOOM_CU_HIDDEN int32_t loom_cuda_run(const loom_cu_plan* p, DLTensor** args, int32_t num_args) {
  if (num_args != p->num_args) {
    loom_cu_error("%s: expected %d arguments, got %d", p->name, p->num_args, num_args);
    return LOOM_CU_ERR_ARGUMENT;
  }
  if (num_args > 0 && args == NULL) {
    loom_cu_error("%s: the argument array is null", p->name);
    return LOOM_CU_ERR_ARGUMENT;
  }
  for (int32_t i = 0; i < num_args; ++i)
    if (!loom_cu_check_arg(p, i, args[i])) return LOOM_CU_ERR_ARGUMENT;
  if (!loom_cu_prepare(p)) return LOOM_CU_ERR_RUNTIME;

  int32_t status = 0;
  CUdeviceptr* temps = p->num_temps ? calloc((size_t)p->num_temps, sizeof(CUdeviceptr)) : NULL;
  if (p->num_temps && !temps) {
    loom_cu_error("%s: out of host memory", p->name);
    return LOOM_CU_ERR_RUNTIME;
  }
  for (int32_t t = 0; t < p->num_temps && status == 0; ++t) {
    CUresult r = g_drv.cuMemAlloc(&temps[t], (size_t)(p->temps[t].nbytes > 0 ? p->temps[t].nbytes : 1));
    if (r != 0) {
      temps[t] = 0;
      loom_cu_error("%s: allocating temporary %d (%lld bytes) failed: %s", p->name, t, (long long)p->temps[t].nbytes,
                    loom_cu_result(r));
      status = LOOM_CU_ERR_RUNTIME;
    }
  }
  for (int32_t k = 0; k < p->num_launches && status == 0; ++k) {
    const loom_cu_launch* l = &p->launches[k];
    void* ptrs[LOOM_CU_MAX_PARAMS];
    int32_t i32s[LOOM_CU_MAX_PARAMS];
    int64_t i64s[LOOM_CU_MAX_PARAMS];
    void* params[2 * LOOM_CU_MAX_PARAMS];
    int32_t n = 0;
    for (int32_t b = 0; b < l->num_buffers; ++b) {
      int32_t idx = l->buffers[b];
      ptrs[b] = idx < p->num_args ? args[idx]->data : (void*)(uintptr_t)temps[idx - p->num_args];
      params[n++] = &ptrs[b];
    }
    for (int32_t s = 0; s < l->num_scalars; ++s) {
      if (l->scalar_is_64[s]) {
        i64s[s] = l->scalars[s];
        params[n++] = &i64s[s];
      } else {
        i32s[s] = (int32_t)l->scalars[s];
        params[n++] = &i32s[s];
      }
    }
    CUresult r = g_drv.cuLaunchKernel((CUfunction)p->functions[k], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                                      l->block[2], l->shared_bytes, NULL, params, NULL);
    if (r != 0) {
      loom_cu_error("%s: cuLaunchKernel %s failed: %s", p->name, l->kernel, loom_cu_result(r));
      status = LOOM_CU_ERR_RUNTIME;
    }
  }
  if (p->num_temps) {
    /* The temporaries live until the kernels that use them are done. */
    CUresult r = g_drv.cuCtxSynchronize();
    if (r != 0 && status == 0) {
      loom_cu_error("%s: cuCtxSynchronize failed: %s", p->name, loom_cu_result(r));
      status = LOOM_CU_ERR_RUNTIME;
    }
    for (int32_t t = 0; t < p->num_temps; ++t)
      if (temps[t]) g_drv.cuMemFree(temps[t]);
    free(temps);
  }
  return status;
}
