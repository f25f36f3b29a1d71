/* Random malformed calls into the C ABI of an exported loom library, for probe_test.cc.
 * Knows nothing of loom: the library must export FUNCTION(A, B, C) over float32 tensors of
 * shape [ROWS, COLS] computing C = A + B.
 *
 *   abi_probe LIB FUNCTION ROWS COLS SEED COUNT
 *
 * Makes COUNT calls, each a valid argument set with one random defect (or none), through
 * the packed entry (__loom_packed_FUNCTION) or the typed one (FUNCTION). A defective call
 * must return a negative status with a non-empty loom_get_last_error(); a valid one must
 * return 0 and compute C. Prints one line per call before making it, so that the line of a
 * crash names its case. Exit status: 0 all as expected, 1 a wrong answer, 2 bad usage,
 * 4 dlopen/dlsym failed. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t (*packed_fn)(DLTensor**, int32_t);
typedef int32_t (*typed_fn)(DLTensor*, DLTensor*, DLTensor*);
typedef const char* (*str_fn)(void);

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng_state >> 33) % n;
}

enum {
  kValid, kNullArray, kWrongCount, kNullTensor, kWrongNdim, kHugeNdim, kNullShape, kWrongShape, kNegativeShape,
  kWrongDtypeCode, kWrongBits, kWrongLanes, kNullData, kMisaligned, kBadStrides, kGoodStrides, kByteOffset,
  kWrongDevice, kAliasedTensor, kNumDefects
};
static const char* kNames[] = {"valid", "null argument array", "wrong num_args", "null tensor", "wrong ndim",
                               "huge ndim", "null shape", "wrong shape", "negative shape", "wrong dtype code",
                               "wrong bits", "wrong lanes", "null data", "misaligned data", "bad strides",
                               "compact strides", "byte_offset", "wrong device", "same tensor twice"};

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s LIB FUNCTION ROWS COLS SEED COUNT\n", argv[0]);
    return 2;
  }
  const int64_t rows = atoll(argv[3]), cols = atoll(argv[4]);
  rng_state = strtoull(argv[5], NULL, 10) * 2654435761ULL + 1;
  const int count = atoi(argv[6]);
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen failed: %s\n", dlerror());
    return 4;
  }
  char sym[512];
  snprintf(sym, sizeof sym, "__loom_packed_%s", argv[2]);
  packed_fn packed = (packed_fn)dlsym(h, sym);
  typed_fn typed = (typed_fn)dlsym(h, argv[2]);
  str_fn err = (str_fn)dlsym(h, "loom_get_last_error");
  str_fn info = (str_fn)dlsym(h, "loom_module_info");
  str_fn names = (str_fn)dlsym(h, "loom_module_function_names");
  if (!packed || !typed || !err || !info || !names) {
    printf("missing symbols\n");
    return 4;
  }
  if (!strstr(info(), argv[2]) || !strstr(names(), argv[2])) {
    printf("loom_module_info / loom_module_function_names do not name %s\n", argv[2]);
    return 1;
  }
  const size_t n = (size_t)(rows * cols);
  float* buf[3];
  for (int i = 0; i < 3; ++i) buf[i] = aligned_alloc(64, (n * sizeof(float) + 64 + 63) / 64 * 64);
  int64_t shape[3][8], strides[3][8];
  DLTensor t[3];
  DLTensor* args[4];
  for (int c = 0; c < count; ++c) {
    int defect = rnd(4) == 0 ? kValid : (int)rnd(kNumDefects);
    int victim = (int)rnd(3);
    int use_typed = rnd(2);
    if (defect == kNullArray || defect == kWrongCount) use_typed = 0;
    for (size_t k = 0; k < n; ++k) {
      buf[0][k] = (float)rnd(1000) / 8.0f;
      buf[1][k] = (float)rnd(1000) / 16.0f;
      buf[2][k] = -1.0f;
    }
    for (int i = 0; i < 3; ++i) {
      memset(&t[i], 0, sizeof t[i]);
      shape[i][0] = rows;
      shape[i][1] = cols;
      strides[i][0] = cols;
      strides[i][1] = 1;
      t[i].data = buf[i];
      t[i].device.device_type = kDLCPU;
      t[i].ndim = 2;
      t[i].dtype.code = kDLFloat;
      t[i].dtype.bits = 32;
      t[i].dtype.lanes = 1;
      t[i].shape = shape[i];
      args[i] = &t[i];
    }
    args[3] = NULL;
    int32_t num = 3;
    DLTensor* v = &t[victim];
    switch (defect) {
      case kNullTensor: args[victim] = NULL; break;
      case kWrongCount: num = (int32_t[]){-1, 0, 1, 2, 4, 1 << 30}[rnd(6)]; break;
      case kWrongNdim: v->ndim = (int32_t[]){0, 1, 3, -1}[rnd(4)]; break;
      case kHugeNdim: v->ndim = 1 << 30; break;
      case kNullShape: v->shape = NULL; break;
      case kWrongShape: shape[victim][rnd(2)] += 1 + rnd(1 << 20); break;
      case kNegativeShape: shape[victim][rnd(2)] = -(int64_t)rnd(100); break;
      case kWrongDtypeCode: v->dtype.code = (uint8_t)(kDLInt + rnd(2) * (kDLBfloat - kDLInt)); break;
      case kWrongBits: v->dtype.bits = (uint8_t)((int[]){8, 16, 64, 0}[rnd(4)]); break;
      case kWrongLanes: v->dtype.lanes = (uint16_t)(2 + rnd(15)); break;
      case kNullData: v->data = NULL; break;
      case kMisaligned: v->data = (char*)v->data + 1 + rnd(3); break;
      case kBadStrides: strides[victim][rnd(2)] = (int64_t)rnd(5) - 2 + 7; v->strides = strides[victim]; break;
      case kGoodStrides: v->strides = strides[victim]; break;
      case kByteOffset: v->byte_offset = 4 * (1 + rnd(8)); break;
      case kWrongDevice: v->device.device_type = kDLCUDA; break;
      default: break;
    }
    if (defect == kAliasedTensor) {
      /* The output on an input: refused (the compiled code takes its arguments not to alias). */
      args[2] = &t[0];
    }
    printf("case %d: %s of argument %d via %s entry\n", c, kNames[defect], victim, use_typed ? "typed" : "packed");
    fflush(stdout);
    int32_t status = defect == kNullArray ? packed(NULL, 3)
                     : use_typed          ? typed(args[0], args[1], args[2])
                                          : packed(args, num);
    const char* msg = err();
    const int valid = defect == kValid || defect == kGoodStrides || (defect == kWrongCount && num == 3);
    if (valid) {
      if (status != 0) {
        printf("  a valid call failed with status %d: %s\n", (int)status, msg);
        return 1;
      }
      for (size_t k = 0; k < n; ++k)
        if (buf[2][k] != buf[0][k] + buf[1][k]) {
          printf("  wrong result at %zu: %g + %g gave %g\n", k, buf[0][k], buf[1][k], buf[2][k]);
          return 1;
        }
    } else if (status >= 0 || !msg || !msg[0] || (defect == kAliasedTensor && !strstr(msg, "overlaps argument"))) {
      printf("  a defective call returned %d with error '%s'\n", (int)status, msg ? msg : "(null)");
      return 1;
    } else {
      printf("  -> %d: %s\n", (int)status, msg);
    }
  }
  printf("ok\n");
  return 0;
}
