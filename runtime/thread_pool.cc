// The persistent thread pool behind loom_parallel_launch.
//
// One launch at a time: the caller publishes a job under a new generation number, runs task 0
// and then takes further tasks from a shared counter; workers that join the job do the same.
// Workers spin briefly on the generation (parallel loops are often launched back to back),
// then sleep on a condition variable. When the tasks run out the caller closes the job to
// late joiners and waits only for the workers that joined, so a job's fields are never
// rewritten while a worker can still read them, and a descheduled worker costs no latency.
// A run() from inside a task (nested parallelism) executes its tasks serially inline.
#include "loom/runtime/thread_pool.h"

#include <pthread.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"

namespace loom::runtime {

namespace {

constexpr int kMaxThreads = 1024;
constexpr int kSpinIterations = 1 << 13;

/// Set on pool workers, and on the caller while it runs tasks: a run() from such a thread
/// is nested and executes inline.
thread_local bool t_inside_task = false;

/// Set in the child of a fork(): the pool's workers did not survive it.
std::atomic<bool> g_forked_child{false};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int default_num_threads() {
  if (const char* env = std::getenv("LOOM_NUM_THREADS"); env && *env) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end && *end == '\0' && n >= 1) return int(std::min<long>(n, kMaxThreads));
  }
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : int(std::min<unsigned>(hc, kMaxThreads));
}

}  // namespace

struct ThreadPool::Impl {
  static constexpr uint64_t kClosed = uint64_t(1) << 31;
  static constexpr uint64_t kJoinedMask = kClosed - 1;
  static uint32_t generation(uint64_t s) { return uint32_t(s >> 32); }

  int num_threads = 1;
  std::vector<std::thread> workers;
  std::mutex run_mu;  // one launch at a time

  // The job of the current generation; rewritten only when every worker that joined has left.
  const std::function<int(int, int)>* f = nullptr;
  int num_tasks = 0;
  std::atomic<int> max_joined{0};  // workers worth joining: num_tasks - 1 at most
  std::atomic<int> next_task{0};
  std::atomic<int> left{0};  // workers that joined and are done

  // The first failure by task id.
  std::mutex err_mu;
  int err_task = INT_MAX;
  int err_status = 0;
  std::string err_msg;
  std::exception_ptr err_exc;

  // generation << 32 | closed bit | number of workers that joined. A worker joins with a CAS
  // that fails once the caller has closed the job, so the caller never waits for a worker
  // that has not started (it may be asleep or descheduled; the caller takes its tasks).
  std::atomic<uint64_t> state{0};
  std::atomic<bool> stop{false};
  std::atomic<int> sleepers{0};
  std::atomic<bool> caller_waiting{false};
  std::mutex mu;
  std::condition_variable wake_cv, done_cv;

  void record_failure(int task, int status, std::string msg, std::exception_ptr exc) {
    std::lock_guard<std::mutex> lk(err_mu);
    if (task < err_task) {
      err_task = task;
      err_status = status;
      err_msg = std::move(msg);
      err_exc = exc;
    }
  }

  void run_one(int task) {
    try {
      int s = (*f)(task, num_tasks);
      if (s != 0) record_failure(task, s, loom_get_last_error(), nullptr);
    } catch (const std::exception& e) {
      record_failure(task, LOOM_ERR_RUNTIME, e.what(), std::current_exception());
    } catch (...) {
      record_failure(task, LOOM_ERR_RUNTIME, "unknown exception in a parallel task", std::current_exception());
    }
  }

  void run_tasks() {
    for (int t = next_task.fetch_add(1); t < num_tasks; t = next_task.fetch_add(1)) run_one(t);
  }

  /// `seen` is the generation current when the worker was created: a job published before
  /// the thread gets going must still be picked up.
  void worker_loop(uint32_t seen) {
    t_inside_task = true;
    for (;;) {
      uint64_t s = state.load(std::memory_order_acquire);
      for (int i = 0; i < kSpinIterations && generation(s) == seen && !stop.load(std::memory_order_relaxed); ++i) {
        cpu_relax();
        if ((i & 1023) == 1023) std::this_thread::yield();
        s = state.load(std::memory_order_acquire);
      }
      if (generation(s) == seen && !stop.load()) {
        std::unique_lock<std::mutex> lk(mu);
        sleepers.fetch_add(1);
        wake_cv.wait(lk, [&] { return generation(s = state.load()) != seen || stop.load(); });
        sleepers.fetch_sub(1);
      }
      if (stop.load()) return;
      seen = generation(s);
      bool joined = false;
      while (!joined && generation(s) == seen && !(s & kClosed) &&
             int(s & kJoinedMask) < max_joined.load(std::memory_order_relaxed)) {
        joined = state.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel);
      }
      if (!joined) continue;
      run_tasks();
      left.fetch_add(1);
      if (caller_waiting.load()) {
        std::lock_guard<std::mutex> lk(mu);
        done_cv.notify_one();
      }
    }
  }

  void start(int n) {
    num_threads = n;
    stop.store(false);
    uint32_t seen = generation(state.load());
    for (int i = 1; i < n; ++i) workers.emplace_back([this, seen] { worker_loop(seen); });
  }

  void stop_all() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop.store(true);
    }
    wake_cv.notify_all();
    for (auto& w : workers) w.join();
    workers.clear();
  }

  /// Runs a job of num_tasks > 1 tasks on the caller and whichever workers join.
  void launch(int n, const std::function<int(int, int)>& fn) {
    f = &fn;
    num_tasks = n;
    next_task.store(1);
    left.store(0);
    max_joined.store(std::min(int(workers.size()), n - 1));
    err_task = INT_MAX;
    err_status = 0;
    err_msg.clear();
    err_exc = nullptr;
    state.store(uint64_t(generation(state.load()) + 1) << 32);
    if (sleepers.load() > 0) {
      std::lock_guard<std::mutex> lk(mu);
      wake_cv.notify_all();
    }

    t_inside_task = true;
    run_one(0);
    run_tasks();
    t_inside_task = false;

    int joined = int(state.fetch_or(kClosed) & kJoinedMask);
    for (int i = 0; i < kSpinIterations && left.load(std::memory_order_acquire) < joined; ++i) {
      cpu_relax();
      if ((i & 1023) == 1023) std::this_thread::yield();
    }
    if (left.load() < joined) {
      std::unique_lock<std::mutex> lk(mu);
      caller_waiting.store(true);
      done_cv.wait(lk, [&] { return left.load() >= joined; });
      caller_waiting.store(false);
    }
    f = nullptr;
  }
};

ThreadPool& ThreadPool::global() {
  // Never destroyed: workers may still be parked when static destructors run.
  static ThreadPool* pool = new ThreadPool();
  return *pool;
}

ThreadPool::ThreadPool() : impl_(new Impl()) {
  pthread_atfork(nullptr, nullptr, [] { g_forked_child.store(true); });
  impl_->start(default_num_threads());
}

/// In a forked child the workers are gone and the pool's mutexes may be held by threads that
/// no longer exist: the old state is abandoned (deliberately leaked) and a new pool started.
#define LOOM_RESTART_AFTER_FORK()                       \
  if (g_forked_child.load(std::memory_order_relaxed)) { \
    g_forked_child.store(false);                        \
    int n = impl_->num_threads;                         \
    impl_ = new Impl();                                 \
    impl_->start(n);                                    \
  }

ThreadPool::~ThreadPool() {
  impl_->stop_all();
  delete impl_;
}

int ThreadPool::num_threads() const { return impl_->num_threads; }

int ThreadPool::run(int num_tasks, const std::function<int(int, int)>& f) {
  if (num_tasks <= 0) return 0;
  LOOM_RESTART_AFTER_FORK();
  Impl& m = *impl_;
  if (t_inside_task || num_tasks == 1 || m.num_threads == 1) {
    int status = 0;
    for (int t = 0; t < num_tasks; ++t) {
      int s = f(t, num_tasks);
      if (s != 0 && status == 0) status = s;
    }
    return status;
  }

  std::unique_lock<std::mutex> run_lock(m.run_mu);
  m.launch(num_tasks, f);
  if (m.err_exc) std::rethrow_exception(m.err_exc);
  if (m.err_status != 0) loom_set_last_error(m.err_msg.c_str());
  return m.err_status;
}

void ThreadPool::resize(int n) {
  LOOM_CHECK(n >= 1 && n <= kMaxThreads, "ThreadPool::resize: {} threads requested (must be in [1, {}])", n,
             kMaxThreads);
  LOOM_CHECK(!t_inside_task, "ThreadPool::resize: called from inside a parallel task");
  LOOM_RESTART_AFTER_FORK();
  std::lock_guard<std::mutex> run_lock(impl_->run_mu);
  if (n == impl_->num_threads) return;
  impl_->stop_all();
  impl_->start(n);
}

#undef LOOM_RESTART_AFTER_FORK

}  // namespace loom::runtime
