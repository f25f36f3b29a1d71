/* A loader that knows nothing of loom: export_test.cc compiles it with the system C
 * compiler and runs it in a fresh process (empty LD_LIBRARY_PATH) to call one function of
 * an exported library.
 *
 *   export_loader LIB.so FUNCTION IN OUT
 *
 * IN:  i32 num_args, then per argument: i32 dtype code, i32 bits, i32 lanes, i32 ndim,
 *      i64 shape[ndim], i64 nbytes, nbytes bytes of data.
 * OUT: per argument, i64 nbytes and the bytes after the call.
 * Exit status: 0 ok, 2 bad usage or I/O, 3 the call failed (its error on stdout), 4 dlopen. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t (*packed_fn)(DLTensor**, int32_t);
typedef const char* (*error_fn)(void);

static int read_all(FILE* f, void* p, size_t n) { return fread(p, 1, n, f) == n; }

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s LIB FUNCTION IN OUT\n", argv[0]);
    return 2;
  }
  const char* ld = getenv("LD_LIBRARY_PATH");
  printf("LD_LIBRARY_PATH=[%s]\n", ld ? ld : "");
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
  FILE* in = fopen(argv[3], "rb");
  if (!in) return 2;
  int32_t n = 0;
  if (!read_all(in, &n, 4) || n < 0 || n > 64) return 2;
  DLTensor* ts = calloc((size_t)n + 1, sizeof(DLTensor));
  DLTensor** args = calloc((size_t)n + 1, sizeof(DLTensor*));
  int64_t* sizes = calloc((size_t)n + 1, sizeof(int64_t));
  for (int32_t i = 0; i < n; ++i) {
    int32_t hdr[4];
    if (!read_all(in, hdr, sizeof hdr) || hdr[3] < 0 || hdr[3] > 16) return 2;
    DLTensor* t = &ts[i];
    t->device.device_type = kDLCPU;
    t->dtype.code = (uint8_t)hdr[0];
    t->dtype.bits = (uint8_t)hdr[1];
    t->dtype.lanes = (uint16_t)hdr[2];
    t->ndim = hdr[3];
    t->shape = calloc((size_t)hdr[3] + 1, sizeof(int64_t));
    if (!read_all(in, t->shape, sizeof(int64_t) * (size_t)hdr[3])) return 2;
    if (!read_all(in, &sizes[i], 8) || sizes[i] < 0) return 2;
    t->data = aligned_alloc(64, ((size_t)sizes[i] + 63) / 64 * 64 + 64);
    if (!read_all(in, t->data, (size_t)sizes[i])) return 2;
    args[i] = t;
  }
  fclose(in);
  int32_t status = fn(args, n);
  if (status != 0) {
    printf("call failed with status %d: %s\n", (int)status, err());
    return 3;
  }
  FILE* out = fopen(argv[4], "wb");
  if (!out) return 2;
  for (int32_t i = 0; i < n; ++i) {
    fwrite(&sizes[i], 8, 1, out);
    fwrite(ts[i].data, 1, (size_t)sizes[i], out);
  }
  fclose(out);
  printf("ok\n");
  return 0;
}
