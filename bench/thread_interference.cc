// loom's deployed matmul next to OpenBLAS when other threads want the same cores, in one run:
//
//   quiet      each timed call follows an untimed call of the same library;
//   oneDNN     each timed call follows a dnnl_sgemm call, whose GNU OpenMP threads keep
//              spinning for a while after it returns (oneDNN, loom, oneDNN, OpenBLAS, ...);
//   busy       a busy-loop thread this program starts, pinned to the last CPU it may run on
//              (so `taskset -c 0,1` gives a 2-CPU run on a bigger machine), spins for the
//              first --busy-fraction of each timed call (the same length for both libraries:
//              that fraction of loom's quiet time), then waits for the next call.
//
// loom's kernel is the matmul template's best record in --log (its default config without
// one), exported with export_library to a .so and loaded back, so it runs on the pool the .so
// embeds, sized by LOOM_NUM_THREADS, which this program sets to --threads (OpenBLAS with
// openblas_set_num_threads, oneDNN with omp_set_num_threads). Every timed call comes after a
// pause of --settle-ms, so that the previous call's spinning threads have gone to sleep.
// Reported: the median GFLOP/s over --repeat calls, its ratio to the quiet figure, and
// loom/OpenBLAS.
//
//   bench/thread_interference [--log FILE] [--size N] [--threads T] [--repeat R]
//                             [--settle-ms MS] [--busy-fraction F] [--so FILE]
#include <cblas.h>
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/tuner/build_best.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "cli.h"
#include "peers.h"

extern "C" void openblas_set_num_threads(int num_threads);

using namespace loom;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string log;
  int size = 1024;
  int threads = 2;
  int repeat = 15;
  double settle_ms = 100;
  double busy_fraction = 0.5;
  std::string so;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "thread_interference";
  c.usage = "[options]";
  c.synopsis = "loom's exported matmul vs OpenBLAS: quiet, right after oneDNN, and beside a busy thread";
  c.options = {
      {"--log", "FILE", "tuning log: build the matmul's best record (default: the template's default config)"},
      {"--size", "N", "square matmul size (default 1024)"},
      {"--threads", "T", "threads of every library (default 2)"},
      {"--repeat", "R", "timed calls per library and condition; the median is reported (default 15)"},
      {"--settle-ms", "MS", "pause before each timed call (default 100)"},
      {"--busy-fraction", "F", "part of loom's quiet call time the busy thread spins for (default 0.5)"},
      {"--so", "FILE", "where to write the exported library (default: a temporary file)"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  o.log = a.str("--log");
  if (!o.log.empty() && !fs::exists(o.log)) a.usage_error("--log: no file '{}'", o.log);
  o.size = int(a.integer("--size", o.size, 1, 1 << 14));
  o.threads = int(a.integer("--threads", o.threads, 1, 1024));
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 10000));
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  o.busy_fraction = a.number("--busy-fraction", o.busy_fraction, 0);
  o.so = a.str("--so");
  return o;
}

/// A thread pinned to one CPU that spins for a given time whenever asked, and otherwise
/// sleeps on a condition variable.
class BusyThread {
 public:
  explicit BusyThread(int cpu) {
    thread_ = std::thread([this] { loop(); });
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pinned_ = pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set) == 0;
  }
  ~BusyThread() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  bool pinned() const { return pinned_; }
  /// Starts a burst of `seconds` from now and returns at once.
  void burst(double seconds) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      until_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      pending_ = true;
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return pending_ || stop_; });
      if (stop_) return;
      pending_ = false;
      Clock::time_point until = until_;
      lk.unlock();
      volatile uint64_t x = 0;
      while (Clock::now() < until)
        for (int i = 0; i < 1000; ++i) x = x + 1;
      lk.lock();
    }
  }
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  Clock::time_point until_;
  bool pending_ = false, stop_ = false, pinned_ = false;
};

/// The CPUs this process may run on.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

double seconds_of(const std::function<void()>& f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int run(const Options& o) {
  // The exported library's pool reads LOOM_NUM_THREADS when its first parallel loop starts.
  setenv("LOOM_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  openblas_set_num_threads(o.threads);
  omp_set_num_threads(o.threads);

  const int n = o.size;
  tuner::Task task = tuner::Task::create("matmul", {n, n, n}, Target::host());
  records::ApplyHistoryBest best;
  if (!o.log.empty()) best = records::ApplyHistoryBest(o.log);
  std::optional<records::Record> rec = best.best(task.workload(), task.target().str());
  runtime::Module jit = tuner::build_best(task, best, &std::cerr, "matmul");
  fs::path so = o.so.empty() ? fs::temp_directory_path() / fmt::format("loom_thread_interference_{}.so", getpid())
                             : fs::path(o.so);
  jit.export_library(so.string());
  runtime::Module lib = runtime::Module::load(so.string());
  if (o.so.empty()) fs::remove(so);  // the mapping stays valid
  runtime::PackedFunc matmul = lib.get_function("matmul");

  auto array = [&](uint64_t seed) {
    runtime::NDArray x = runtime::NDArray::empty({n, n}, DataType::Float(32));
    if (seed) x.fill_random(seed);
    return x;
  };
  runtime::NDArray a = array(1), b = array(2), c_loom = array(0), c_blas = array(0), c_dnnl = array(0);
  float *pa = a.data<float>(), *pb = b.data<float>();
  auto loom_call = [&] { matmul(a, b, c_loom); };
  auto blas_call = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, pa, n, pb, n, 0.0f, c_blas.data<float>(), n);
  };
  auto dnnl_call = [&] { dnnl_sgemm('N', 'N', n, n, n, 1.0f, pa, n, pb, n, 0.0f, c_dnnl.data<float>(), n); };

  bench::poison(c_loom.data<float>(), int64_t(n) * n);
  loom_call();
  blas_call();
  dnnl_call();
  double err = bench::max_rel_err(c_loom.data<float>(), c_blas.data<float>(), int64_t(n) * n);
  double err_dnnl = bench::max_rel_err(c_dnnl.data<float>(), c_blas.data<float>(), int64_t(n) * n);
  if (!(err < 1e-4) || !(err_dnnl < 1e-4)) {
    std::fprintf(stderr, "thread_interference: results differ from OpenBLAS (loom %.3g, oneDNN %.3g)\n", err, err_dnnl);
    return 1;
  }

  std::printf("matmul %dx%dx%d float32, %d threads, loom's %s exported to a .so (its embedded pool)\n", n, n, n,
              o.threads, rec ? fmt::format("best record of {}", o.log).c_str() : "default config");
  const std::vector<int> cpus = allowed_cpus();
  std::printf("%s; oneDNN %d.%d.%d (GNU OpenMP); %d CPUs allowed; median of %d calls, %.0f ms pause before each\n",
              OPENBLAS_VERSION, dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
              int(cpus.size()), o.repeat, o.settle_ms);

  auto settle = [&] { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.settle_ms)); };
  // One timed call of each library per round, loom first in even rounds and OpenBLAS first
  // in odd ones; `before` runs (untimed) right before each timed call, `during` at its start.
  auto measure = [&](const std::function<void(const std::function<void()>&)>& before,
                     const std::function<void()>& during) {
    std::vector<double> t_loom, t_blas;
    for (int r = 0; r < o.repeat; ++r) {
      for (int k = 0; k < 2; ++k) {
        bool is_loom = (r + k) % 2 == 0;
        const std::function<void()>& f = is_loom ? std::function<void()>(loom_call) : std::function<void()>(blas_call);
        settle();
        before(f);
        double s = seconds_of([&] {
          during();
          f();
        });
        (is_loom ? t_loom : t_blas).push_back(s);
      }
    }
    return std::pair<double, double>{median(t_loom), median(t_blas)};
  };

  auto quiet = measure([](const std::function<void()>& f) { f(); }, [] {});
  auto after_dnnl = measure([&](const std::function<void()>&) { dnnl_call(); }, [] {});
  int cpu = cpus.back();
  BusyThread busy(cpu);
  double burst = o.busy_fraction * quiet.first;
  auto loaded = measure([](const std::function<void()>& f) { f(); }, [&] { busy.burst(burst); });

  const double flops = 2.0 * n * n * n;
  std::printf("\n%-44s %10s %8s %12s %8s %13s\n", "condition", "loom GF/s", "x quiet", "OpenBLAS GF/s", "x quiet",
              "loom/OpenBLAS");
  auto row = [&](const std::string& name, std::pair<double, double> t) {
    double gl = flops / t.first * 1e-9, gb = flops / t.second * 1e-9;
    std::printf("%-44s %10.1f %8.2f %12.1f %8.2f %13.2f\n", name.c_str(), gl, quiet.first / t.first, gb,
                quiet.second / t.second, gl / gb);
  };
  row("quiet", quiet);
  row("right after oneDNN's dnnl_sgemm", after_dnnl);
  row(fmt::format("busy thread on CPU {} for {:.1f} ms{}", cpu, burst * 1e3, busy.pinned() ? "" : " (not pinned)"),
      loaded);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cli::openblas_native_kernels(argv);
  cli::Command c = command();
  c.run = [](const cli::Args& a) { return run(options_from(a)); };
  return cli::run_command(c, {argv + 1, argv + argc});
}
