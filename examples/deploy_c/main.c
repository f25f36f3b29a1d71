/* Uses libmatmul.so and libconv2d.so, written by deploy_c_generate, from plain C11: no loom
 * header but the generated ones, no loom library, no compiler at run time.
 *
 *   cc -std=c11 -I DIR main.c -o deploy_c -ldl && ./deploy_c DIR
 *
 * Checks both functions against naive loops, then makes three bad calls and prints the
 * errors the libraries report. Exits 0 when everything behaves. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconv2d.h"
#include "libmatmul.h"

/* A DLTensor over a float array on the CPU, compact row-major. */
static DLTensor tensor(float* data, int ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static void* open_library(const char* dir, const char* file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) fprintf(stderr, "cannot open %s: %s\n", path, dlerror());
  return h;
}

static float max_abs_diff(const float* a, const float* b, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i) {
    float d = fabsf(a[i] - b[i]);
    if (d > m) m = d;
  }
  return m;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  void* hm = open_library(dir, "libmatmul.so");
  void* hc = open_library(dir, "libconv2d.so");
  if (!hm || !hc) return 1;
  matmul_fn matmul_p = (matmul_fn)dlsym(hm, "matmul");
  conv2d_fn conv2d_p = (conv2d_fn)dlsym(hc, "conv2d");
  loom_get_last_error_fn matmul_error = (loom_get_last_error_fn)dlsym(hm, "loom_get_last_error");
  loom_module_info_fn matmul_info = (loom_module_info_fn)dlsym(hm, "loom_module_info");
  if (!matmul_p || !conv2d_p || !matmul_error || !matmul_info) {
    fprintf(stderr, "missing symbols\n");
    return 1;
  }
  printf("libmatmul.so: %s\n", matmul_info());
  int failures = 0;

  /* matmul: C[64, 48] = A[64, 32] * B[32, 48] */
  enum { M = 64, K = 32, N = 48 };
  static float A[M * K], B[K * N], C[M * N], ref[M * N];
  for (int i = 0; i < M * K; ++i) A[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
  for (int i = 0; i < K * N; ++i) B[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
      ref[i * N + j] = acc;
    }
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  DLTensor ta = tensor(A, 2, sa), tb = tensor(B, 2, sb), tc = tensor(C, 2, sc);
  int32_t status = matmul_p(&ta, &tb, &tc);
  float err = max_abs_diff(C, ref, M * N);
  printf("matmul: status %d, max |error| %g\n", (int)status, (double)err);
  failures += status != 0 || err > 1e-4f;

  /* conv2d: out[1, 4, 16, 16] = data[1, 3, 16, 16] (*) kernel[4, 3, 3, 3], padding 1 */
  enum { CI = 3, CO = 4, H = 16, W = 16, R = 3 };
  static float data[CI * H * W], kernel[CO * CI * R * R], out[CO * H * W], cref[CO * H * W];
  for (int i = 0; i < CI * H * W; ++i) data[i] = (float)((i * 3) % 17) / 17.0f - 0.5f;
  for (int i = 0; i < CO * CI * R * R; ++i) kernel[i] = (float)((i * 11) % 7) / 7.0f - 0.5f;
  for (int co = 0; co < CO; ++co)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        float acc = 0;
        for (int ci = 0; ci < CI; ++ci)
          for (int ry = 0; ry < R; ++ry)
            for (int rx = 0; rx < R; ++rx) {
              int iy = y + ry - 1, ix = x + rx - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              acc += data[(ci * H + iy) * W + ix] * kernel[((co * CI + ci) * R + ry) * R + rx];
            }
        cref[(co * H + y) * W + x] = acc;
      }
  int64_t sd[4] = {1, CI, H, W}, sk[4] = {CO, CI, R, R}, so[4] = {1, CO, H, W};
  DLTensor td = tensor(data, 4, sd), tk = tensor(kernel, 4, sk), to = tensor(out, 4, so);
  status = conv2d_p(&td, &tk, &to);
  err = max_abs_diff(out, cref, CO * H * W);
  printf("conv2d: status %d, max |error| %g\n", (int)status, (double)err);
  failures += status != 0 || err > 1e-4f;

  /* Three bad calls: each must fail with a message, never crash. */
  int64_t wrong[2] = {M, K + 1};
  DLTensor bad_shape = tensor(A, 2, wrong);
  status = matmul_p(&bad_shape, &tb, &tc);
  printf("bad call 1 (wrong shape): status %d: %s\n", (int)status, matmul_error());
  failures += status == 0;

  status = matmul_p(&ta, NULL, &tc);
  printf("bad call 2 (null tensor): status %d: %s\n", (int)status, matmul_error());
  failures += status == 0;

  DLTensor bad_dtype = tc;
  bad_dtype.dtype.code = kDLInt;
  status = matmul_p(&ta, &tb, &bad_dtype);
  printf("bad call 3 (wrong dtype): status %d: %s\n", (int)status, matmul_error());
  failures += status == 0;

  if (failures == 0)
    printf("deploy_c: OK\n");
  else
    printf("deploy_c: %d FAILURES\n", failures);
  return failures == 0 ? 0 : 1;
}
