// The persistent thread pool that runs parallel loops.
#pragma once
#include <functional>

namespace loom::runtime {

/// Threads started once and reused. Size: LOOM_NUM_THREADS, else every core.
class ThreadPool {
 public:
  static ThreadPool& global();
  int num_threads() const;
  /// Runs f(task_id, num_tasks) for every task id and waits; the caller runs task 0.
  /// Returns the first non-zero status.
  int run(int num_tasks, const std::function<int(int, int)>& f);
  /// Changes the number of threads (for benchmarks); not while a run is in flight.
  void resize(int n);

 private:
  ThreadPool();
  ~ThreadPool();
  struct Impl;
  Impl* impl_;
};

}  // namespace loom::runtime
