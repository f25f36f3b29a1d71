/* A loader that knows nothing of loom or CUDA: cuda_export_test.cc compiles it with the
 * system C compiler and runs it in a fresh process (empty LD_LIBRARY_PATH) to call one
 * function of a library exported from a "cuda" module.
 *
 *   cuda_export_loader LIB.so FUNCTION DEVICE_TYPE SHAPE...
 *
 * Each SHAPE ("64x32", or "-" for a scalar) is one float32 argument, allocated in host
 * memory (16-byte aligned) and described as living on DEVICE_TYPE (2 = kDLCUDA, 1 = kDLCPU):
 * the library checks the arguments and opens the driver before touching any data.
 * Prints "status=N" and the library's last error. Exit status: 0 the call succeeded, 3 it
 * failed, 2 bad usage, 4 dlopen/dlsym. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t (*packed_fn)(DLTensor**, int32_t);
typedef const char* (*error_fn)(void);

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LIB FUNCTION DEVICE_TYPE SHAPE...\n", argv[0]);
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen failed: %s\n", dlerror());
    return 4;
  }
  char sym[512];
  snprintf(sym, sizeof sym, "__loom_packed_%s", argv[2]);
  packed_fn fn = (packed_fn)dlsym(h, sym);
  error_fn err = (error_fn)dlsym(h, "loom_get_last_error");
  if (!fn || !err) {
    printf("missing symbol %s or loom_get_last_error\n", sym);
    return 4;
  }
  int n = argc - 4;
  DLTensor* ts = calloc((size_t)n + 1, sizeof(DLTensor));
  DLTensor** args = calloc((size_t)n + 1, sizeof(DLTensor*));
  for (int i = 0; i < n; ++i) {
    DLTensor* t = &ts[i];
    t->device.device_type = (DLDeviceType)atoi(argv[3]);
    t->dtype.code = kDLFloat;
    t->dtype.bits = 32;
    t->dtype.lanes = 1;
    t->shape = calloc(16, sizeof(int64_t));
    int64_t numel = 1;
    const char* s = argv[4 + i];
    if (strcmp(s, "-") != 0) {
      while (*s && t->ndim < 16) {
        char* end;
        t->shape[t->ndim] = strtoll(s, &end, 10);
        numel *= t->shape[t->ndim++];
        s = *end == 'x' ? end + 1 : end;
        if (end == s && *s) return 2;
      }
    }
    t->data = aligned_alloc(64, (size_t)(numel * 4 + 64) / 64 * 64);
    args[i] = t;
  }
  int32_t status = fn(args, n);
  printf("status=%d\n%s\n", status, err());
  return status == 0 ? 0 : 3;
}
