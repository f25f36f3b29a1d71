/* A stand-in for libcuda.so.1 that runs nothing: cuda_export_test.cc builds it as
 * libcuda.so.1 and puts it on LD_LIBRARY_PATH to check what an exported cuda library asks of
 * the driver. It writes the PTX given to cuModuleLoadData to $FAKE_CUDA_LOG.ptx and one line
 * per call of interest to $FAKE_CUDA_LOG. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void log_line(const char* fmt, const char* s, const unsigned* v, int nv) {
  const char* path = getenv("FAKE_CUDA_LOG");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, fmt, s);
  for (int i = 0; i < nv; ++i) fprintf(f, " %u", v[i]);
  fprintf(f, "\n");
  fclose(f);
}

int cuInit(unsigned flags) { (void)flags; log_line("cuInit%s", "", NULL, 0); return 0; }
int cuDeviceGetCount(int* n) { *n = 1; return 0; }
int cuDeviceGet(int* d, int i) { *d = i; return 0; }
int cuDevicePrimaryCtxRetain(void** ctx, int d) { (void)d; *ctx = (void*)16; return 0; }
int cuCtxSetCurrent(void* ctx) { return ctx == (void*)16 ? 0 : 201; }
int cuCtxSynchronize(void) { log_line("sync%s", "", NULL, 0); return 0; }
int cuMemAlloc_v2(unsigned long long* p, size_t n) {
  *p = (unsigned long long)(size_t)malloc(n);
  unsigned v = (unsigned)n;
  log_line("alloc%s", "", &v, 1);
  return 0;
}
int cuMemFree_v2(unsigned long long p) { free((void*)(size_t)p); log_line("free%s", "", NULL, 0); return 0; }
int cuModuleLoadData(void** m, const void* image) {
  const char* path = getenv("FAKE_CUDA_LOG");
  if (path) {
    char ptx[4096];
    snprintf(ptx, sizeof ptx, "%s.ptx", path);
    FILE* f = fopen(ptx, "wb");
    if (f) {
      fwrite(image, 1, strlen(image), f);
      fclose(f);
    }
  }
  *m = (void*)32;
  return 0;
}
int cuModuleGetFunction(void** fn, void* m, const char* name) {
  if (m != (void*)32) return 400;
  *fn = strdup(name);
  return 0;
}
int cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void* stream, void** params, void** extra) {
  (void)stream, (void)params, (void)extra;
  unsigned v[7] = {gx, gy, gz, bx, by, bz, shared};
  log_line("launch %s", (const char*)fn, v, 7);
  return 0;
}
int cuGetErrorString(int r, const char** s) { (void)r; *s = "fake driver error"; return 0; }
