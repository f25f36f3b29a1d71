#include "bench_common.h"

#include <loom/tuner/tuner.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

namespace loom::bench {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

void int_list_option(const cli::Args& a, const std::string& name, std::vector<int>* out) {
  if (!a.has(name)) return;
  out->clear();
  for (int64_t v : cli::parse_int_list(name, a.str(name))) out->push_back(int(v));
}

int parse_int(const std::string& s, const char* what) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  LOOM_CHECK(!s.empty() && end && *end == '\0' && v > 0 && v < (1L << 30), "bad {} '{}' (a positive integer)", what, s);
  return int(v);
}

std::vector<double> interleaved_times(const std::vector<std::function<void()>>& fs, int repeat, double min_repeat_ms,
                                      double settle_ms, bool best) {
  auto settle = [&] {
    if (settle_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(settle_ms));
  };
  std::vector<int> calls;
  for (const auto& f : fs) {
    settle();
    f();  // warm-up
    auto t0 = Clock::now();
    f();
    double once = std::chrono::duration<double>(Clock::now() - t0).count();
    calls.push_back(std::max(1, int(std::ceil(min_repeat_ms * 1e-3 / std::max(once, 1e-7)))));
  }
  std::vector<std::vector<double>> t(fs.size());
  for (int r = 0; r < repeat; ++r) {
    for (size_t i = 0; i < fs.size(); ++i) {
      if (settle_ms > 0) {
        settle();
        for (int c = 0; c < calls[i]; ++c) fs[i]();
      }
      auto s = Clock::now();
      for (int c = 0; c < calls[i]; ++c) fs[i]();
      t[i].push_back(std::chrono::duration<double>(Clock::now() - s).count() / calls[i]);
    }
  }
  std::vector<double> out;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    if (best)
      out.push_back(v.front());
    else
      out.push_back(v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
  }
  return out;
}

double max_rel_err(const float* c, const float* ref, int64_t n) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = std::fabs(double(c[i]) - double(ref[i]));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    err = std::max(err, d);
    scale = std::max(scale, double(std::fabs(ref[i])));
  }
  return err / std::max(scale, 1e-30);
}

void poison(float* p, int64_t n) { std::fill_n(p, n, std::numeric_limits<float>::quiet_NaN()); }

namespace {

// Independent accumulator chains, named so that each stays in a register: enough to cover
// FMA latency x issue width on current x86 cores.
#define LOOM_FMA_CHAINS(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)
constexpr int kChains = 12;

__attribute__((target("avx512f"))) double fma_loop_avx512(int64_t iters) {
#define LOOM_INIT(i) __m512 a##i = _mm512_set1_ps(float(i) * 1e-3f);
  LOOM_FMA_CHAINS(LOOM_INIT)
  __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#define LOOM_STEP(i) a##i = _mm512_fmadd_ps(a##i, x, y);
    LOOM_FMA_CHAINS(LOOM_STEP)
    __asm__ volatile("" : "+v"(x), "+v"(y));  // keeps the loop from being folded
  }
  __m512 s = _mm512_setzero_ps();
#define LOOM_SUM(i) s = _mm512_add_ps(s, a##i);
  LOOM_FMA_CHAINS(LOOM_SUM)
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) double fma_loop_avx2(int64_t iters) {
#define LOOM_INIT2(i) __m256 a##i = _mm256_set1_ps(float(i) * 1e-3f);
  LOOM_FMA_CHAINS(LOOM_INIT2)
  __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#define LOOM_STEP2(i) a##i = _mm256_fmadd_ps(a##i, x, y);
    LOOM_FMA_CHAINS(LOOM_STEP2)
    __asm__ volatile("" : "+x"(x), "+x"(y));
  }
  __m256 s = _mm256_setzero_ps();
#define LOOM_SUM2(i) s = _mm256_add_ps(s, a##i);
  LOOM_FMA_CHAINS(LOOM_SUM2)
  float out[8];
  _mm256_storeu_ps(out, s);
  double r = 0;
  for (float v : out) r += v;
  return r;
}

}  // namespace

double fma_peak_gflops(int threads, double seconds, int bursts, std::string* isa) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa) *isa = avx512 ? "avx512f" : avx2 ? "avx2+fma" : "none";
  if (!avx512 && !avx2) return 0;
  const double flop_per_iter = double(kChains) * (avx512 ? 16 : 8) * 2;
  auto run = [&](int64_t iters) { return avx512 ? fma_loop_avx512(iters) : fma_loop_avx2(iters); };
  // Calibrate on one thread, then run every thread for `seconds`, `bursts` times.
  int64_t iters = 1 << 16;
  for (;;) {
    auto t0 = Clock::now();
    volatile double sink = run(iters);
    (void)sink;
    double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (t > 0.02) {
      iters = int64_t(double(iters) * seconds / t) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int rep = 0; rep < bursts; ++rep) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> secs(threads);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i) {
      ts.emplace_back([&, i] {
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        auto t0 = Clock::now();
        volatile double sink = run(iters);
        (void)sink;
        secs[i] = std::chrono::duration<double>(Clock::now() - t0).count();
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    go = true;
    for (auto& t : ts) t.join();
    double slowest = *std::max_element(secs.begin(), secs.end());
    best = std::max(best, flop_per_iter * double(iters) * threads / slowest * 1e-9);
  }
  return best;
}

std::string sanitize(const std::string& key) {
  std::string out;
  for (char c : key) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    if (keep)
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return 0;
  double s = 0;
  for (double x : xs) s += std::log(x);
  return std::exp(s / double(xs.size()));
}

std::vector<records::Record> task_records(const std::string& log, const tuner::Task& task) {
  std::vector<records::Record> out;
  if (!std::filesystem::exists(log)) return out;
  const std::string target = task.target().str();
  for (records::Record& r : records::read_log(log, &std::cerr).records)
    if (r.workload.key() == task.key() && r.target == target) out.push_back(std::move(r));
  return out;
}

void tune_xgb(const tuner::Task& task, const std::string& log, const TuneRequest& r) {
  const std::vector<records::Record> recs = task_records(log, task);
  const int have = int(std::count_if(recs.begin(), recs.end(), [](const auto& x) { return x.tuner != records::kConfirmTuner; }));
  if (r.no_tune) {
    std::fprintf(stderr, "[%s] %s: %d records in %s (not tuning)\n", r.tag.c_str(), r.label.c_str(), have, log.c_str());
    return;
  }
  LOOM_CHECK(have == 0 || r.resume,
             "{}: log {} already has {} records of {}; pass --resume to reuse it (or --no-tune, or remove it)", r.tag,
             log, have, task.key());
  const int todo = std::max(0, r.trials - have);
  std::fprintf(stderr, "[%s] %s: %d records in the log, tuning %d more (XGB)\n", r.tag.c_str(), r.label.c_str(), have,
               todo);
  if (todo == 0) return;
  tuner::TuneOptions t;
  t.n_trial = todo;
  t.log_file = log;
  t.resume = have > 0;
  t.seed = uint64_t(have);
  t.measure = r.measure;
  t.progress = r.verbose ? &std::cerr : nullptr;
  t.confirm_top = 5;  // as `loom tune`: the best is a config confirmed by a median of 3 measurements
  tuner::TuneSummary s = tuner::XGBTuner(task).tune(t);
  std::fprintf(stderr, "[%s] %s: %d trials (%d errors) and %d confirming measurements in %.0f s, best %.1f GFLOP/s\n",
               r.tag.c_str(), r.label.c_str(), s.trials, s.errors, s.confirmed, s.elapsed_s, s.best_gflops());
}

}  // namespace loom::bench
