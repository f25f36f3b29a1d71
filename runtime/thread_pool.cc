// loom::runtime::ThreadPool: the C++ face of the pool in runtime/c_runtime.c, the same pool
// that runs JIT-ed parallel loops (and that exported libraries embed a copy of). Tasks are
// std::functions here: a C trampoline calls them and turns an exception into a failure of its
// task, which run() rethrows when it is the first failure by task id.
#include "loom/runtime/thread_pool.h"

#include <climits>
#include <exception>
#include <mutex>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"

extern "C" {
// runtime/c_runtime.c's pool controls (hidden: libloom-internal).
int32_t loom_rt_pool_run(loom_parallel_lambda f, void* cdata, int32_t num_tasks, int* failed_task);
int loom_rt_inside_task(void);
void loom_rt_pool_resize(int n);
}

namespace loom::runtime {

namespace {

constexpr int kMaxThreads = 1024;  // runtime/c_runtime.c's LOOM_RT_MAX_THREADS

struct Job {
  explicit Job(const std::function<int(int, int)>* fn) : f(fn) {}
  const std::function<int(int, int)>* f;
  std::mutex mu;
  int exc_task = INT_MAX;  // the lowest task id that threw
  std::exception_ptr exc;

  void record(int task, std::exception_ptr e) {
    std::lock_guard<std::mutex> lk(mu);
    if (task < exc_task) {
      exc_task = task;
      exc = e;
    }
  }
};

int32_t call_task(int32_t task, int32_t num_tasks, void* cdata) {
  auto* job = static_cast<Job*>(cdata);
  try {
    return (*job->f)(task, num_tasks);
  } catch (const std::exception& e) {
    job->record(task, std::current_exception());
    loom_set_last_error(e.what());
  } catch (...) {
    job->record(task, std::current_exception());
    loom_set_last_error("unknown exception in a parallel task");
  }
  return LOOM_ERR_RUNTIME;
}

}  // namespace

ThreadPool& ThreadPool::global() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::ThreadPool() = default;
ThreadPool::~ThreadPool() = default;

int ThreadPool::num_threads() const { return loom_num_threads(); }

int ThreadPool::run(int num_tasks, const std::function<int(int, int)>& f) {
  if (num_tasks <= 0) return 0;
  Job job(&f);
  int failed_task = INT_MAX;
  int status = loom_rt_pool_run(call_task, &job, num_tasks, &failed_task);
  if (job.exc && job.exc_task == failed_task) std::rethrow_exception(job.exc);
  return status;
}

void ThreadPool::resize(int n) {
  LOOM_CHECK(n >= 1 && n <= kMaxThreads, "ThreadPool::resize: {} threads requested (must be in [1, {}])", n,
             kMaxThreads);
  LOOM_CHECK(!loom_rt_inside_task(), "ThreadPool::resize: called from inside a parallel task");
  loom_rt_pool_resize(n);
}

}  // namespace loom::runtime
