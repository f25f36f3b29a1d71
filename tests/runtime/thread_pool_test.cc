#include "loom/runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"
#include <fmt/format.h>

using loom::runtime::ThreadPool;

namespace {

/// Restores the pool size at the end of a test that resizes it.
struct PoolSizeGuard {
  int saved = ThreadPool::global().num_threads();
  ~PoolSizeGuard() { ThreadPool::global().resize(saved); }
};

void expect_each_task_once(ThreadPool& pool, int n) {
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  std::atomic<int> seen_num_tasks_wrong{0};
  int status = pool.run(n, [&](int task, int num) {
    if (num != n) seen_num_tasks_wrong++;
    count[size_t(task)]++;
    return 0;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(seen_num_tasks_wrong.load(), 0);
  for (int i = 0; i < n; ++i) ASSERT_EQ(count[size_t(i)].load(), 1) << "task " << i << " of " << n;
}

}  // namespace

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(4);
  for (int n : {0, 1, 2, 3, 4, 5, 7, 64, 1000}) expect_each_task_once(pool, n);
  // Back-to-back launches exercise the wake-up path repeatedly.
  for (int rep = 0; rep < 2000; ++rep) expect_each_task_once(pool, 1 + rep % 9);
}

TEST(ThreadPool, CallerRunsTaskZero) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(3);
  std::thread::id caller = std::this_thread::get_id(), task0;
  pool.run(3, [&](int task, int) {
    if (task == 0) task0 = std::this_thread::get_id();
    return 0;
  });
  EXPECT_EQ(task0, caller);
}

TEST(ThreadPool, FirstFailingStatusAndMessagePropagate) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(4);
  loom_set_last_error("");
  int status = pool.run(16, [](int task, int) {
    if (task == 9) {
      loom_set_last_error("task 9 failed");
      return -1;
    }
    if (task == 3) {
      loom_set_last_error("task 3 failed");
      return -2;
    }
    return 0;
  });
  EXPECT_EQ(status, -2);
  EXPECT_STREQ(loom_get_last_error(), "task 3 failed");
  EXPECT_EQ(pool.run(8, [](int, int) { return 0; }), 0);
}

TEST(ThreadPool, ExceptionInTaskIsRethrownToCaller) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(4);
  EXPECT_THROW(pool.run(8,
                        [](int task, int) -> int {
                          if (task == 5) throw std::runtime_error("boom");
                          return 0;
                        }),
               std::runtime_error);
  expect_each_task_once(pool, 8);  // the pool still works
}

TEST(ThreadPool, NestedRunExecutesInline) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(4);
  constexpr int kOuter = 8, kInner = 5;
  std::vector<std::atomic<int>> count(kOuter * kInner);
  int status = pool.run(kOuter, [&](int outer, int) {
    return pool.run(kInner, [&](int inner, int) {
      count[size_t(outer * kInner + inner)]++;
      return 0;
    });
  });
  EXPECT_EQ(status, 0);
  for (auto& c : count) EXPECT_EQ(c.load(), 1);

  // Nested failures propagate out of both levels.
  status = pool.run(4, [&](int outer, int) { return pool.run(3, [&](int inner, int) { return outer == 2 && inner == 1 ? -7 : 0; }); });
  EXPECT_EQ(status, -7);
}

TEST(ThreadPool, ConcurrentCallersAreSerialized) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(3);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) pool.run(6, [&](int, int) { total++; return 0; });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 200 * 6);
}

TEST(ThreadPool, ResizeChangesTheThreadsUsed) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  for (int n : {1, 2, 3, 5}) {
    pool.resize(n);
    EXPECT_EQ(pool.num_threads(), n);
    EXPECT_EQ(loom_num_threads(), n);
    std::mutex mu;
    std::set<std::thread::id> ids;
    std::atomic<int> arrived{0};
    pool.run(n, [&](int, int) {
      {
        std::lock_guard<std::mutex> lk(mu);
        ids.insert(std::this_thread::get_id());
      }
      // Hold every task until all have started, so each must be on its own thread.
      arrived++;
      while (arrived.load() < n) std::this_thread::yield();
      return 0;
    });
    EXPECT_EQ(int(ids.size()), n);
  }
  EXPECT_THROW(pool.resize(0), loom::Error);
}

TEST(ThreadPool, IdleWorkersSleepSoonAfterARun) {
  // Workers spin briefly after a run, then block: an idle pool takes no core from other
  // thread pools or processes (a pool spinning for the whole window would use about as much
  // CPU time as the window lasts, per worker).
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(3);
  expect_each_task_once(pool, 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // past the spinning
  auto cpu_seconds = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(cpu_seconds() - before, 0.010);
  expect_each_task_once(pool, 6);  // and wake up for the next run
}

TEST(ThreadPool, SizeComesFromLoomNumThreads) {
  // The child process re-runs this test binary, so its global pool is created afresh there.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("LOOM_NUM_THREADS", "3", 1);
  EXPECT_EXIT(std::exit(ThreadPool::global().num_threads() == 3 && loom_num_threads() == 3 ? 0 : 1),
              ::testing::ExitedWithCode(0), "");
  unsetenv("LOOM_NUM_THREADS");
}

TEST(ThreadPool, WorksInAForkedChild) {
  PoolSizeGuard guard;
  ThreadPool& pool = ThreadPool::global();
  pool.resize(3);
  expect_each_task_once(pool, 6);  // the workers exist in the parent
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a hang in the child fails the test instead of blocking it
    std::atomic<int> total{0};
    for (int rep = 0; rep < 100; ++rep) pool.run(5, [&](int, int) { total++; return 0; });
    _exit(total.load() == 500 && pool.num_threads() == 3 ? 0 : 1);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "child status " << wstatus;
}

namespace {
int32_t count_task(int32_t task, int32_t num_tasks, void* cdata) {
  auto* counts = static_cast<std::vector<std::atomic<int>>*>(cdata);
  if (num_tasks != int32_t(counts->size())) return LOOM_ERR_RUNTIME;
  (*counts)[size_t(task)]++;
  return 0;
}
}  // namespace

TEST(CRuntimeApi, ParallelLaunch) {
  PoolSizeGuard guard;
  ThreadPool::global().resize(4);
  std::vector<std::atomic<int>> counts(13);
  EXPECT_EQ(loom_parallel_launch(count_task, &counts, 13), 0);
  for (auto& c : counts) EXPECT_EQ(c.load(), 1);

  std::vector<std::atomic<int>> per_loop(4 * 8);  // num_tasks = 0: 8 tasks per pool thread
  EXPECT_EQ(loom_parallel_launch(count_task, &per_loop, 0), 0);
  for (auto& c : per_loop) EXPECT_EQ(c.load(), 1);
  std::vector<std::atomic<int>> per_thread(4);  // LOOM_PARALLEL_TASK_PER_THREAD: one per thread
  EXPECT_EQ(loom_parallel_launch(count_task, &per_thread, LOOM_PARALLEL_TASK_PER_THREAD), 0);
  for (auto& c : per_thread) EXPECT_EQ(c.load(), 1);
  ThreadPool::global().resize(1);
  std::vector<std::atomic<int>> single(1);  // and one task with a single thread
  EXPECT_EQ(loom_parallel_launch(count_task, &single, 0), 0);
  EXPECT_EQ(single[0].load(), 1);

  EXPECT_EQ(loom_parallel_launch(nullptr, nullptr, 4), LOOM_ERR_ARGUMENT);
  EXPECT_NE(std::string(loom_get_last_error()), "");
  EXPECT_EQ(loom_parallel_launch(count_task, &counts, -2), LOOM_ERR_ARGUMENT);
}

namespace {
/// A parallel loop's task that is slow on every thread but the caller's (a core taken by
/// another process): records which thread ran it.
struct SlowWorkers {
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0}, elsewhere{0}, num_tasks{0};
};
int32_t slow_off_caller(int32_t, int32_t num_tasks, void* cdata) {
  auto* s = static_cast<SlowWorkers*>(cdata);
  s->num_tasks = num_tasks;
  if (std::this_thread::get_id() == s->caller) {
    s->on_caller++;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // time for a worker to join
  } else {
    s->elsewhere++;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}
}  // namespace

TEST(CRuntimeApi, ParallelLoopLeavesASlowThreadsShareToTheOthers) {
  // With one task per thread the caller would wait for the slow thread's half of the loop;
  // with several tasks per thread taken from a shared counter it runs all but the one or two
  // the slow thread took before it stalled.
  PoolSizeGuard guard;
  ThreadPool::global().resize(2);
  int joined = 0;
  for (int rep = 0; rep < 5; ++rep) {
    SlowWorkers s;
    ASSERT_EQ(loom_parallel_launch(slow_off_caller, &s, 0), 0);
    EXPECT_EQ(s.num_tasks.load(), 16);
    EXPECT_EQ(s.on_caller.load() + s.elsewhere.load(), 16);
    EXPECT_LE(s.elsewhere.load(), 2);
    joined += s.elsewhere.load() > 0;
  }
  EXPECT_GT(joined, 0) << "the worker never took a task";
}

TEST(CRuntimeApi, ConcurrentLaunchesWithFailuresFromSeveralThreads) {
  // Callers on several threads share the pool; each sees its own first failure and message.
  PoolSizeGuard guard;
  ThreadPool::global().resize(3);
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 100; ++rep) {
        int fail_at = (c + rep) % 7;
        std::string want = fmt::format("caller {} task {}", c, fail_at);
        int status = ThreadPool::global().run(7, [&](int task, int) {
          if (task < fail_at) return 0;
          loom_set_last_error(fmt::format("caller {} task {}", c, task).c_str());
          return -3 - task;
        });
        if (status != -3 - fail_at || want != loom_get_last_error()) wrong++;
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CRuntimeApi, LastErrorIsPerThread) {
  loom_set_last_error("main");
  std::string other;
  std::thread([&] {
    other = loom_get_last_error();
    loom_set_last_error("worker");
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_STREQ(loom_get_last_error(), "main");
  loom_set_last_error(nullptr);
  EXPECT_STREQ(loom_get_last_error(), "");
}

TEST(CRuntimeApi, WorkspaceIsAligned) {
  for (uint64_t n : {0ull, 1ull, 63ull, 64ull, 1000ull, 1ull << 20}) {
    void* p = loom_workspace_alloc(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    if (n) static_cast<char*>(p)[n - 1] = 1;
    loom_workspace_free(p);
  }
  loom_workspace_free(nullptr);
}
