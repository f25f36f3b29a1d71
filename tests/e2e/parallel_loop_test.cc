// Parallel loops split into several tasks per thread (loom_parallel_launch with num_tasks = 0),
// in the JIT (libloom's pool, resized) and in exported libraries (the pool each embeds, sized
// by LOOM_NUM_THREADS): extents smaller than the thread count, not divisible by the task
// count, nested parallel loops, all compared with te::evaluate.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/test_util.h"
#include "loom/runtime/thread_pool.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;
using runtime::ThreadPool;
using te::Tensor;
using te::Var;

struct PoolSizeGuard {
  int saved = ThreadPool::global().num_threads();
  ~PoolSizeGuard() { ThreadPool::global().resize(saved); }
};

/// D[i, j] = A[i, j] * 2 + 1 with its rows parallel.
struct Elemwise {
  Tensor A, D;
  Schedule s;
};
Elemwise parallel_rows(int64_t rows, int64_t cols) {
  Elemwise e;
  e.A = te::placeholder({rows, cols}, DataType::Float(32), "A");
  Tensor A = e.A;
  e.D = te::compute({rows, cols}, [&](Var i, Var j) { return A(i, j) * 2 + 1; }, "D");
  e.s = create_schedule({e.D});
  e.s[e.D].parallel(e.s[e.D].axis(0));
  return e;
}

// 8 tasks per thread: these extents are below, at and above the thread and task counts, and
// most divide neither.
const int64_t kExtents[] = {1, 2, 3, 5, 8, 15, 17, 33, 63, 100, 1001};

TEST(ParallelLoop, EveryExtentAndThreadCountMatchesReference) {
  PoolSizeGuard guard;
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool::global().resize(threads);
    for (int64_t rows : kExtents) {
      Elemwise e = parallel_rows(rows, 3);
      EXPECT_MATCHES_REFERENCE(e.s, (std::vector<Tensor>{e.A, e.D})) << threads << " threads, " << rows << " rows";
    }
  }
}

TEST(ParallelLoop, SplitFusedAndNestedParallelAxesMatchReference) {
  PoolSizeGuard guard;
  ThreadPool::global().resize(3);
  for (int64_t rows : {7, 29}) {
    for (int64_t cols : {5, 16}) {
      Tensor A = te::placeholder({rows, cols}, DataType::Float(32), "A");
      Tensor B = te::placeholder({cols, 11}, DataType::Float(32), "B");
      te::IterVar k = te::reduce_axis({0, cols}, "k");
      Tensor C = te::compute({rows, 11}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");

      Schedule fused = create_schedule({C});
      auto [io, ii] = fused[C].split(fused[C].axis(0), 4);
      auto [jo, ji] = fused[C].split(fused[C].axis(1), 4);
      fused[C].reorder({io, jo, ii, ji});
      fused[C].parallel(fused[C].fuse(io, jo));
      EXPECT_MATCHES_REFERENCE(fused, (std::vector<Tensor>{A, B, C})) << rows << "x" << cols << " fused";

      // A parallel loop inside a parallel loop runs serially inside its task.
      Schedule nested = create_schedule({C});
      nested[C].parallel(nested[C].axis(0));
      nested[C].parallel(nested[C].axis(1));
      EXPECT_MATCHES_REFERENCE(nested, (std::vector<Tensor>{A, B, C})) << rows << "x" << cols << " nested";
    }
  }
}

TEST(ParallelLoop, ExportedLibraryPoolMatchesReference) {
  fs::path dir = fs::temp_directory_path() / fmt::format("loom-parallel-loop-test-{}", getpid());
  fs::create_directories(dir);
  const char* saved = std::getenv("LOOM_NUM_THREADS");
  std::string saved_value = saved ? saved : "";
  for (int threads : {1, 2, 3}) {
    // Each library's pool starts at its first parallel loop and reads LOOM_NUM_THREADS then.
    setenv("LOOM_NUM_THREADS", std::to_string(threads).c_str(), 1);
    for (int64_t rows : {1, 3, 17, 100}) {
      SCOPED_TRACE(fmt::format("{} threads, {} rows", threads, rows));
      Elemwise e = parallel_rows(rows, 5);
      std::string path = (dir / fmt::format("libpar_{}_{}.so", threads, rows)).string();
      build(e.s, {e.A, e.D}, Target("llvm"), "par").export_library(path);
      runtime::Module lib = runtime::Module::load(path);
      auto inputs = test::random_inputs({e.A}, 3);
      NDArray want = te::evaluate({e.D}, inputs)[0];
      NDArray got = NDArray::empty({rows, 5}, DataType::Float(32));
      for (int64_t i = 0; i < got.numel(); ++i) got.set(i, 12345);
      for (int rep = 0; rep < 3; ++rep) {
        lib.get_function("par")(inputs.at(e.A), got);
        EXPECT_EQ(test::compare_arrays(got, want, test::tolerance_for(DataType::Float(32)), "D"), "");
      }
    }
  }
  if (saved) setenv("LOOM_NUM_THREADS", saved_value.c_str(), 1);
  else unsetenv("LOOM_NUM_THREADS");
  std::error_code ec;
  if (!std::getenv("LOOM_KEEP_TEST_FILES")) fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace loom
