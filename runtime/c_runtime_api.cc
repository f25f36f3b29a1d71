// The C ABI that generated code calls. These symbols are resolved from the process by
// JIT-ed code, so they keep default visibility in libloom.so.
#include "loom/runtime/c_runtime_api.h"

#include <cstdlib>
#include <exception>
#include <string>

#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"

#define LOOM_EXPORT __attribute__((visibility("default")))

namespace {
thread_local std::string t_last_error;
}  // namespace

extern "C" {

LOOM_EXPORT const char* loom_get_last_error(void) { return t_last_error.c_str(); }

LOOM_EXPORT void loom_set_last_error(const char* msg) { t_last_error = msg ? msg : ""; }

LOOM_EXPORT int32_t loom_parallel_launch(loom_parallel_lambda f, void* cdata, int32_t num_tasks) {
  if (f == nullptr) {
    loom_set_last_error("loom_parallel_launch: null task function");
    return LOOM_ERR_ARGUMENT;
  }
  if (num_tasks < 0) {
    t_last_error = "loom_parallel_launch: negative task count " + std::to_string(num_tasks);
    return LOOM_ERR_ARGUMENT;
  }
  try {
    auto& pool = loom::runtime::ThreadPool::global();
    int n = num_tasks == 0 ? pool.num_threads() : num_tasks;
    return pool.run(n, [f, cdata](int task, int count) { return f(task, count, cdata); });
  } catch (const std::exception& e) {
    t_last_error = std::string("loom_parallel_launch: ") + e.what();
  } catch (...) {
    t_last_error = "loom_parallel_launch: unknown exception";
  }
  return LOOM_ERR_RUNTIME;
}

LOOM_EXPORT int32_t loom_num_threads(void) {
  try {
    return loom::runtime::ThreadPool::global().num_threads();
  } catch (...) {
    return 1;
  }
}

LOOM_EXPORT void* loom_workspace_alloc(uint64_t nbytes) {
  constexpr uint64_t a = loom::runtime::kAllocAlignment;
  if (nbytes > UINT64_MAX - a) {
    t_last_error = "loom_workspace_alloc: size " + std::to_string(nbytes) + " too large";
    return nullptr;
  }
  uint64_t size = (nbytes == 0 ? a : (nbytes + a - 1) / a * a);
  void* p = std::aligned_alloc(a, size_t(size));
  if (p == nullptr) t_last_error = "loom_workspace_alloc: out of memory allocating " + std::to_string(size) + " bytes";
  return p;
}

LOOM_EXPORT void loom_workspace_free(void* ptr) { std::free(ptr); }

}  // extern "C"
