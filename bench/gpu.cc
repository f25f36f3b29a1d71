// GPU benchmark: the matmul_cuda template (best of a sampled set of configs, 4096³ float32)
// against cuBLAS SGEMM (opened with dlopen), reported as a ratio. Needs a GPU; exits 0 with a
// message without one. The cuDNN comparison for ResNet-18 conv2d layers is not written yet.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>

#include "loom/loom.h"
#include "loom/runtime/cuda.h"
#include "loom/tuner/task.h"

using namespace loom;  // NOLINT

namespace {

using cublasHandle_t = void*;
using SgemmFn = int (*)(cublasHandle_t, int, int, int, int, int, const float*, const float*, int, const float*, int,
                        const float*, float*, int);

double cublas_seconds(int64_t n, const runtime::NDArray& a, const runtime::NDArray& b, runtime::NDArray& c) {
  void* lib = dlopen("libcublas.so", RTLD_NOW);
  if (!lib) lib = dlopen("/usr/local/cuda/lib64/libcublas.so", RTLD_NOW);
  if (!lib) return -1;
  auto create = reinterpret_cast<int (*)(cublasHandle_t*)>(dlsym(lib, "cublasCreate_v2"));
  auto sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cublasSgemm_v2"));
  if (!create || !sgemm) return -1;
  cublasHandle_t h = nullptr;
  if (create(&h) != 0) return -1;
  const float one = 1, zero = 0;
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ.
  auto run = [&] {
    sgemm(h, 0, 0, int(n), int(n), int(n), &one, b.data<float>(), int(n), a.data<float>(), int(n), &zero,
          c.data<float>(), int(n));
  };
  auto t = runtime::cuda_time(run, 10, 3);
  return *std::min_element(t.begin(), t.end());
}

}  // namespace

int main() {
  if (!runtime::cuda_available()) {
    std::printf("bench/gpu: skipped: no CUDA driver/GPU (%s)\n", runtime::cuda_unavailable_reason().c_str());
    return 0;
  }
  const int64_t n = 4096;
  auto task = tuner::Task::create("matmul_cuda", {n, n, n}, Target("cuda"));
  DLDevice gpu{kDLCUDA, 0};
  runtime::NDArray ha = runtime::NDArray::empty({n, n}, DataType::Float(32));
  ha.fill_random(1);
  runtime::NDArray a = runtime::NDArray::empty({n, n}, DataType::Float(32), gpu);
  runtime::NDArray b = runtime::NDArray::empty({n, n}, DataType::Float(32), gpu);
  runtime::NDArray c = runtime::NDArray::empty({n, n}, DataType::Float(32), gpu);
  a.copy_from(ha);
  b.copy_from(ha);
  double best = 1e30;
  int tried = 0;
  for (int64_t i = 0; i < task.space().size() && tried < 64; i += std::max<int64_t>(1, task.space().size() / 509)) {
    try {
      auto inst = task.instantiate(i);
      runtime::Module m = build(inst.schedule, inst.args, Target("cuda"), "mm");
      auto f = m.get_function("mm");
      auto t = runtime::cuda_time([&] { f(a, b, c); }, 3, 2);
      best = std::min(best, *std::min_element(t.begin(), t.end()));
      ++tried;
    } catch (const Error&) {
    }
  }
  double flop = 2.0 * double(n) * n * n;
  double ref = cublas_seconds(n, a, b, c);
  std::printf("matmul 4096^3: loom %.3f ms (%.1f GFLOP/s, %d configs)", best * 1e3, flop / best * 1e-9, tried);
  if (ref > 0) std::printf(", cuBLAS %.3f ms, ratio loom/cuBLAS time %.2f\n", ref * 1e3, best / ref);
  else std::printf(", cuBLAS not found\n");
  return 0;
}
