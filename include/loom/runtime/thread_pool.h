// The persistent thread pool that runs parallel loops.
#pragma once
#include <functional>

namespace loom::runtime {

/// Threads started once and reused: the pool of runtime/c_runtime.c, which JIT-ed parallel
/// loops run on (exported libraries embed their own copy). Size: LOOM_NUM_THREADS, else every
/// online CPU.
class ThreadPool {
 public:
  static ThreadPool& global();
  int num_threads() const;
  /// Runs f(task_id, num_tasks) for every task id and waits; the caller runs task 0 and idle
  /// threads take the next task id from a shared counter. Returns the first non-zero status by
  /// task id (its message in loom_get_last_error()), or rethrows the exception of that task.
  /// A run() from inside a task executes its tasks serially inline.
  int run(int num_tasks, const std::function<int(int, int)>& f);
  /// Changes the number of threads (for benchmarks); not from inside a task.
  void resize(int n);

 private:
  ThreadPool();
  ~ThreadPool();
};

}  // namespace loom::runtime
