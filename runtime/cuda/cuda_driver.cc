// Loading the CUDA driver, device memory for NDArray (kDLCUDA) and event timing.
#include "cuda_driver.h"

#include <mutex>

#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {
namespace cuda {

namespace {

struct State {
  Driver d{};
  bool ok = false;
  std::string reason;  // why not ok
  CUcontext ctx = nullptr;
};

State load_driver() {
  State s;
  Driver& d = s.d;
  char why[1024];
  if (!loom_cuda_driver_load(&d, /*exported_only=*/0, why, sizeof why)) {
    s.reason = why;
    return s;
  }
  if (CUresult r = d.cuInit(0); r != 0) {
    const char* msg = nullptr;
    d.cuGetErrorString(r, &msg);
    s.reason = fmt::format("cuInit failed: {} (error {})", msg ? msg : "unknown", r);
    return s;
  }
  int n = 0;
  if (d.cuDeviceGetCount(&n) != 0 || n == 0) {
    s.reason = "the driver reports no CUDA device";
    return s;
  }
  CUdevice dev = 0;
  if (d.cuDeviceGet(&dev, 0) != 0 || d.cuDevicePrimaryCtxRetain(&s.ctx, dev) != 0) {
    s.reason = "cannot create a context on device 0";
    return s;
  }
  s.ok = true;
  return s;
}

const State& state() {
  static const State s = load_driver();
  return s;
}

}  // namespace

const Driver& driver() {
  const State& s = state();
  if (!s.ok) fail("no CUDA driver/GPU: {}", s.reason);
  thread_local bool current = false;
  if (!current) {
    check(s.d.cuCtxSetCurrent(s.ctx), "cuCtxSetCurrent");
    current = true;
  }
  return s.d;
}

void check(CUresult r, const char* what) {
  if (r == 0) return;
  const char* msg = nullptr;
  if (state().d.cuGetErrorString) state().d.cuGetErrorString(r, &msg);
  fail("CUDA: {} failed: {} (error {})", what, msg ? msg : "unknown error", r);
}

namespace {

void* device_alloc(DLDevice dev, size_t nbytes) {
  LOOM_CHECK(dev.device_id == 0, "CUDA: only device 0 is supported (got device {})", dev.device_id);
  const Driver& d = driver();
  CUdeviceptr p = 0;
  check(d.cuMemAlloc(&p, nbytes), "cuMemAlloc");
  return reinterpret_cast<void*>(p);
}

void device_free(DLDevice, void* ptr) {
  if (!state().ok || !ptr) return;
  state().d.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));  // errors at teardown are ignored
}

void device_copy(const void* src, DLDevice src_dev, void* dst, DLDevice dst_dev, size_t nbytes) {
  const Driver& d = driver();
  bool src_host = src_dev.device_type == kDLCPU, dst_host = dst_dev.device_type == kDLCPU;
  auto dp = [](const void* p) { return reinterpret_cast<CUdeviceptr>(p); };
  if (src_host && !dst_host) check(d.cuMemcpyHtoD(dp(dst), src, nbytes), "cuMemcpyHtoD");
  else if (!src_host && dst_host) check(d.cuMemcpyDtoH(dst, dp(src), nbytes), "cuMemcpyDtoH");
  else if (!src_host && !dst_host) check(d.cuMemcpyDtoD(dp(dst), dp(src), nbytes), "cuMemcpyDtoD");
  else fail("CUDA: copy between two host buffers");
}

/// Registers kDLCUDA memory when libloom loads; the driver itself opens on first use.
[[maybe_unused]] const bool registered = [] {
  register_device_api(kDLCUDA, DeviceAPI{&device_alloc, &device_free, &device_copy});
  return true;
}();

}  // namespace
}  // namespace cuda

bool cuda_available() { return cuda::state().ok; }

std::string cuda_unavailable_reason() { return cuda::state().ok ? "" : cuda::state().reason; }

void cuda_require(const std::string& what) {
  if (!cuda_available()) fail("no CUDA driver/GPU: {} ({} needs one)", cuda::state().reason, what);
}

int cuda_compute_capability(int dev) {
  const cuda::Driver& d = cuda::driver();
  cuda::CUdevice h = 0;
  cuda::check(d.cuDeviceGet(&h, dev), "cuDeviceGet");
  int major = 0, minor = 0;
  cuda::check(d.cuDeviceGetAttribute(&major, cuda::kAttrComputeCapabilityMajor, h), "cuDeviceGetAttribute");
  cuda::check(d.cuDeviceGetAttribute(&minor, cuda::kAttrComputeCapabilityMinor, h), "cuDeviceGetAttribute");
  return major * 10 + minor;
}

void cuda_synchronize() { cuda::check(cuda::driver().cuCtxSynchronize(), "cuCtxSynchronize"); }

std::vector<double> cuda_time(const std::function<void()>& f, int number, int repeat) {
  LOOM_CHECK(number > 0 && repeat > 0, "cuda_time: number ({}) and repeat ({}) must be positive", number, repeat);
  const cuda::Driver& d = cuda::driver();
  cuda::CUevent start = nullptr, stop = nullptr;
  cuda::check(d.cuEventCreate(&start, 0), "cuEventCreate");
  cuda::check(d.cuEventCreate(&stop, 0), "cuEventCreate");
  std::vector<double> out;
  try {
    f();  // warm-up: module load, caches
    cuda_synchronize();
    for (int r = 0; r < repeat; ++r) {
      cuda::check(d.cuEventRecord(start, nullptr), "cuEventRecord");
      for (int i = 0; i < number; ++i) f();
      cuda::check(d.cuEventRecord(stop, nullptr), "cuEventRecord");
      cuda::check(d.cuEventSynchronize(stop), "cuEventSynchronize");
      float ms = 0;
      cuda::check(d.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      out.push_back(double(ms) * 1e-3 / number);
    }
  } catch (...) {
    d.cuEventDestroy(start);
    d.cuEventDestroy(stop);
    throw;
  }
  d.cuEventDestroy(start);
  d.cuEventDestroy(stop);
  return out;
}

}  // namespace loom::runtime
