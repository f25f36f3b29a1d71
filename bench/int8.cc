// Tuned int8 kernels next to oneDNN's int8 primitives, and next to loom's own float32, in one
// run:
//   (a) matmul 1024^3: matmul_int8 (uint8 A [M,K] x int8 B packed [N/16, K/4, 16, 4] -> int32)
//       vs oneDNN's u8s8s32 matmul primitive (weights in the layout it picks, reordered once);
//   (b) conv2d on three ResNet-18 layers, batch 1: conv2d_nchwc_int8 (nChw16c uint8 data,
//       OIhw4i16o4i int8 kernel -> int32 nChw16c) vs oneDNN's u8s8s32 convolution in the
//       layouts it picks (format_tag::any; its reorders outside the timed region).
// Both against the same workload in float32 tuned with loom's own templates (matmul and
// conv2d_nchwc), so that the int8 speed-up over float32 is measured on this machine too.
//
// The oneDNN peers are `loom bench`'s (tools/peers.h); only their compute step is timed.
// loom's int8 results are checked against oneDNN's before timing: they must be equal. Each
// workload is tuned with the XGBoost tuner (one log per workload in --log-dir; --resume
// continues a log, --no-tune only reads it), then built from its best record. Times are
// medians of interleaved repeats after a warm-up, at each thread count (loom's pool resized;
// oneDNN's OpenMP threads set before its primitives are made). GOP/s counts a
// multiply-add as two operations, as GFLOP/s does for float32. After the table: this core's
// vpdpbusd peak (a loop of independent dot products) with each 1-thread figure as a share of
// it, and each convolution's share of multiply-adds that read the image rather than its zero
// padding (oneDNN skips the others; loom does with pad_inline 1, computes them on a padded
// copy with pad_inline 0).
//
//   bench/int8 [--log-dir DIR] [--trials N] [--conv-trials N] [--resume | --no-tune]
//              [--sections matmul,conv] [--threads 1,2] [--repeat R] [--json FILE]
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/runtime/thread_pool.h>
#include <loom/tuner/build_best.h>
#include <loom/tuner/tuner.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli.h"
#include "peers.h"

using namespace loom;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string log_dir = "int8_logs";
  int trials = 200;      // each matmul workload
  int conv_trials = 100;  // each conv layer
  bool resume = false, no_tune = false;
  std::vector<std::string> sections = {"matmul", "conv"};
  std::vector<int> threads = {1, 2};
  int repeat = 9;
  std::string json;
  double min_repeat_ms = 100;
  double timeout_s = 30;
  double settle_ms = 200;
  bool verbose = false;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "int8";
  c.usage = "[options]";
  c.synopsis = "tuned int8 matmul and ResNet-18 convolutions next to oneDNN's int8 primitives and loom's float32";
  c.options = {
      {"--log-dir", "DIR", "tuning logs, one JSON-lines file per workload (default int8_logs)"},
      {"--trials", "N", "XGB trials for each matmul workload, int8 and float32 (default 200)"},
      {"--conv-trials", "N", "XGB trials for each conv layer, int8 and float32 (default 100)"},
      {"--resume", "", "reuse existing logs: only the trials missing up to N are measured"},
      {"--no-tune", "", "do not tune; build each workload from its log (default config if none)"},
      {"--sections", "LIST", "any of matmul,conv (default both)"},
      {"--threads", "LIST", "thread counts for loom and oneDNN (default 1,2)"},
      {"--repeat", "R", "timed repeats per measurement; the median is reported (default 9)"},
      {"--min-repeat-ms", "MS", "the tuner's min_repeat_ms (default 100)"},
      {"--timeout-s", "S", "the tuner's limit to build, and to run, one candidate (default 30)"},
      {"--settle-ms", "MS", "pause before each multi-threaded timed block (default 200)"},
      {"--json", "FILE", "also write the results as JSON"},
      {"--verbose", "", "the tuner's progress lines"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  o.log_dir = a.str("--log-dir", o.log_dir);
  o.trials = int(a.integer("--trials", o.trials, 0, 1 << 30));
  o.conv_trials = int(a.integer("--conv-trials", o.conv_trials, 0, 1 << 30));
  o.resume = a.has("--resume");
  o.no_tune = a.has("--no-tune");
  if (a.has("--sections")) o.sections = bench::split_list(a.str("--sections"), ',');
  for (const auto& s : o.sections)
    if (s != "matmul" && s != "conv") a.usage_error("--sections: unknown section '{}' (expected matmul, conv)", s);
  bench::int_list_option(a, "--threads", &o.threads);
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 1000));
  o.min_repeat_ms = a.number("--min-repeat-ms", o.min_repeat_ms, 0);
  o.timeout_s = a.number("--timeout-s", o.timeout_s, 0.001);
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  o.json = a.str("--json");
  o.verbose = a.has("--verbose");
  if (o.resume && o.no_tune) a.usage_error("--resume and --no-tune exclude each other");
  return o;
}

/// One workload, in int8 and in float32.
struct Case {
  std::string section, label;
  tuner::Task int8, f32;
  int trials = 0;
  double in_image = 1;  // share of the multiply-adds whose input is inside the image, not padding
};

Case matmul_case(int n) {
  return {"matmul", fmt::format("matmul {0}x{0}x{0}", n),
          tuner::Task::create("matmul_int8", {n, n, n}, Target::host(), "int8"),
          tuner::Task::create("matmul", {n, n, n}, Target::host()), 0};
}

struct ConvLayer {
  int C, H, K, R, stride, pad;
};

/// Of one spatial dimension's (output position, kernel tap) pairs, the share whose input lies
/// inside the image rather than in the padding.
double taps_in_image(const ConvLayer& l) {
  const int out = (l.H + 2 * l.pad - l.R) / l.stride + 1;
  int inside = 0;
  for (int o = 0; o < out; ++o)
    for (int r = 0; r < l.R; ++r) {
      const int i = o * l.stride + r - l.pad;
      inside += i >= 0 && i < l.H;
    }
  return double(inside) / double(out * l.R);
}

Case conv_case(const ConvLayer& l) {
  std::vector<int64_t> shape = {1, l.C, l.H, l.H, l.K, l.R, l.R};
  std::map<std::string, std::string> attrs = {{"stride", std::to_string(l.stride)}, {"pad", std::to_string(l.pad)}};
  const double t = taps_in_image(l);
  return {"conv", fmt::format("conv C={} H={} K={} {}x{} s{} p{}", l.C, l.H, l.K, l.R, l.R, l.stride, l.pad),
          tuner::Task::create("conv2d_nchwc_int8", shape, Target::host(), "int8", attrs),
          tuner::Task::create("conv2d_nchwc", shape, Target::host(), "float32", attrs), 0, t * t};
}

/// GOP/s of 24 independent chains of 512-bit vpdpbusd on the calling thread: the rate no int8
/// kernel on this core can pass; 0 without AVX-512 VNNI.
__attribute__((target("avx512f,avx512vnni"))) double vnni_peak_on(int64_t iterations) {
  auto t0 = std::chrono::steady_clock::now();
  __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n\tvpxord %%zmm31, %%zmm31, %%zmm31" ::: "xmm30", "xmm31");
  for (int64_t n = 0; n < iterations; ++n)
    __asm__ volatile(
#define LOOM_VNNI_STEP(i) "vpdpbusd %%zmm30, %%zmm31, %%zmm" #i "\n\t"
        LOOM_VNNI_STEP(0) LOOM_VNNI_STEP(1) LOOM_VNNI_STEP(2) LOOM_VNNI_STEP(3) LOOM_VNNI_STEP(4) LOOM_VNNI_STEP(5)
        LOOM_VNNI_STEP(6) LOOM_VNNI_STEP(7) LOOM_VNNI_STEP(8) LOOM_VNNI_STEP(9) LOOM_VNNI_STEP(10) LOOM_VNNI_STEP(11)
        LOOM_VNNI_STEP(12) LOOM_VNNI_STEP(13) LOOM_VNNI_STEP(14) LOOM_VNNI_STEP(15) LOOM_VNNI_STEP(16)
        LOOM_VNNI_STEP(17) LOOM_VNNI_STEP(18) LOOM_VNNI_STEP(19) LOOM_VNNI_STEP(20) LOOM_VNNI_STEP(21)
        LOOM_VNNI_STEP(22) LOOM_VNNI_STEP(23)
#undef LOOM_VNNI_STEP
        ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return double(iterations) * 24 * 64 * 2 / s * 1e-9;
}

double vnni_peak_gops() {
  if (!__builtin_cpu_supports("avx512vnni")) return 0;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) best = std::max(best, vnni_peak_on(2000000));
  return best;
}

std::string log_of(const Options& o, const tuner::Task& t) {
  return (fs::path(o.log_dir) / (bench::sanitize(t.key()) + ".jsonl")).string();
}

void tune(const tuner::Task& task, const std::string& label, int trials, const Options& o) {
  bench::TuneRequest r;
  r.tag = "int8";
  r.label = label;
  r.trials = trials;
  r.resume = o.resume;
  r.no_tune = o.no_tune;
  r.verbose = o.verbose;
  r.measure.min_repeat_ms = o.min_repeat_ms;
  r.measure.timeout_s = o.timeout_s;
  bench::tune_xgb(task, log_of(o, task), r);
}

/// Arguments of a task's function: random inputs (8-bit integers over their whole range),
/// the output last.
std::vector<runtime::NDArray> make_args(const tuner::Task& task) {
  std::vector<runtime::NDArray> args;
  uint64_t seed = 1;
  for (const te::Tensor& t : task.tmpl().compute(task.workload())) {
    std::vector<int64_t> shape;
    for (const te::Expr& d : t.shape()) shape.push_back(*te::as_const_int(d));
    runtime::NDArray a = runtime::NDArray::empty(shape, t.dtype());
    if (t.op()->kind == te::OpKind::kPlaceholder) {
      const DataType dt = t.dtype();
      if (dt.is_float()) a.fill_random(seed++, -1, 1);
      else a.fill_random(seed++, dt.is_uint() ? 0 : -128, dt.is_uint() ? 255 : 127);
    }
    args.push_back(a);
  }
  return args;
}

/// The best record's function (the default config's when the log has none) and its config.
std::pair<runtime::PackedFunc, std::string> best_function(const tuner::Task& task, const std::string& log,
                                                          std::vector<runtime::Module>* keep) {
  records::ApplyHistoryBest best;
  if (fs::exists(log)) best = records::ApplyHistoryBest(log);
  std::optional<records::Record> rec = best.best(task.workload(), task.target().str());
  keep->push_back(tuner::build_best(task, best, nullptr));
  return {keep->back().get_function(task.workload().op), rec ? std::to_string(rec->config.index) : "default"};
}

void call(const runtime::PackedFunc& f, const std::vector<runtime::NDArray>& a) {
  std::vector<DLTensor*> dl;
  for (const auto& x : a) dl.push_back(x.dltensor());
  f.call(dl);
}

struct Result {
  std::string section, label, int8_config, f32_config;
  int threads = 0, int8_records = 0, f32_records = 0;
  double flop = 0, int8_gops = 0, onednn_gops = 0, f32_gflops = 0;
};

}  // namespace

int run(const Options& o) {
  fs::create_directories(o.log_dir);
  std::vector<Case> cases;
  if (std::count(o.sections.begin(), o.sections.end(), "matmul")) cases.push_back(matmul_case(1024));
  if (std::count(o.sections.begin(), o.sections.end(), "conv"))
    for (const ConvLayer& l : std::vector<ConvLayer>{{64, 56, 64, 3, 1, 1}, {128, 28, 128, 3, 1, 1}, {256, 14, 256, 3, 1, 1}})
      cases.push_back(conv_case(l));
  for (Case& c : cases) c.trials = c.section == "conv" ? o.conv_trials : o.trials;
  for (const Case& c : cases) {
    tune(c.int8, c.label + " int8", c.trials, o);
    tune(c.f32, c.label + " float32", c.trials, o);
  }

  std::printf("loom bench/int8: target %s (%s), median of %d interleaved repeats after a warm-up\n",
              Target::host().str().c_str(), tuner::host_cpu_name().c_str(), o.repeat);
  std::printf("int8: uint8 data x int8 weights -> int32 (u8s8s32); oneDNN in its own layouts, conversions untimed\n\n");

  std::vector<Result> results;
  std::vector<runtime::Module> modules;
  bool ok = true;
  for (const Case& c : cases) {
    auto [f8, cfg8] = best_function(c.int8, log_of(o, c.int8), &modules);
    auto [f32, cfg32] = best_function(c.f32, log_of(o, c.f32), &modules);
    std::vector<runtime::NDArray> a8 = make_args(c.int8), a32 = make_args(c.f32);
    std::vector<runtime::NDArray> inputs(a8.begin(), a8.end() - 1);
    const runtime::NDArray& out8 = a8.back();
    runtime::NDArray peer_out = runtime::NDArray::empty(out8.shape(), out8.dtype());
    for (int nt : o.threads) {
      runtime::ThreadPool::global().resize(nt);
      cli::set_peer_threads(nt);  // before the primitive is made: oneDNN fixes its threads then
      std::string why;
      std::optional<cli::Peer> peer = cli::find_peer(c.int8.workload(), &why);
      if (!peer || !peer->compute) {
        std::fprintf(stderr, "int8: %s: no oneDNN peer: %s\n", c.label.c_str(), why.c_str());
        return 1;
      }
      peer->prepare(inputs);
      peer->compute();
      peer->finish(peer_out);
      call(f8, a8);
      for (int64_t i = 0; i < out8.numel(); ++i) {
        if (out8.get(i) != peer_out.get(i)) {
          std::fprintf(stderr, "int8: %s, %d thread(s): loom's element %lld is %g, oneDNN's %g\n", c.label.c_str(), nt,
                       static_cast<long long>(i), out8.get(i), peer_out.get(i));
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      std::vector<std::function<void()>> fns = {[&] { call(f8, a8); }, peer->compute, [&] { call(f32, a32); }};
      std::vector<double> t = bench::interleaved_times(fns, o.repeat, 20, nt > 1 ? o.settle_ms : 0);
      Result r;
      r.section = c.section;
      r.label = c.label;
      r.threads = nt;
      r.flop = c.int8.flop();
      r.int8_gops = r.flop / t[0] * 1e-9;
      r.onednn_gops = r.flop / t[1] * 1e-9;
      r.f32_gflops = c.f32.flop() / t[2] * 1e-9;
      r.int8_config = cfg8;
      r.f32_config = cfg32;
      r.int8_records = int(bench::task_records(log_of(o, c.int8), c.int8).size());
      r.f32_records = int(bench::task_records(log_of(o, c.f32), c.f32).size());
      results.push_back(r);
      std::fprintf(stderr, "[int8] %s, %d thread(s): loom int8 %.1f GOP/s, oneDNN %.1f, loom float32 %.1f\n",
                   c.label.c_str(), nt, r.int8_gops, r.onednn_gops, r.f32_gflops);
    }
  }

  std::printf("%-30s %3s %7s %10s %10s %10s %12s %12s\n", "workload (batch 1)", "thr", "trials", "loom int8",
              "oneDNN", "loom f32", "int8/oneDNN", "int8/f32");
  std::map<int, std::vector<double>> vs_dnnl, vs_f32;
  for (const Result& r : results) {
    double q = r.int8_gops / r.onednn_gops, f = r.int8_gops / r.f32_gflops;
    vs_dnnl[r.threads].push_back(q);
    vs_f32[r.threads].push_back(f);
    std::printf("%-30s %3d %3d/%-3d %10.1f %10.1f %10.1f %11.2fx %11.2fx\n", r.label.c_str(), r.threads, r.int8_records,
                r.f32_records, r.int8_gops, r.onednn_gops, r.f32_gflops, q, f);
  }
  for (const auto& [nt, qs] : vs_dnnl)
    std::printf("%-30s %3d %7s %10s %10s %10s %11.2fx %11.2fx\n", "geometric mean", nt, "", "", "", "",
                bench::geomean(qs), bench::geomean(vs_f32[nt]));
  std::printf("(GOP/s, a multiply-add counting 2; trials: records in the int8/float32 logs; loom int8 checked equal "
              "to oneDNN before timing)\n");
  if (const double peak = vnni_peak_gops(); peak > 0) {
    std::printf("\nthis core's vpdpbusd peak: %.1f GOP/s (24 independent 512-bit chains, 1 thread)\n", peak);
    for (const Result& r : results)
      if (r.threads == 1)
        std::printf("  %-30s loom %5.1f%%, oneDNN %5.1f%% of it\n", r.label.c_str(), 100 * r.int8_gops / peak,
                    100 * r.onednn_gops / peak);
  }
  for (const Case& c : cases)
    if (c.in_image < 1)
      std::printf("%s: %.1f%% of its multiply-adds read the image, the rest the zero padding (a kernel that skips "
                  "them can pass the peak in these GOP/s)\n",
                  c.label.c_str(), 100 * c.in_image);

  if (!o.json.empty()) {
    std::ofstream js(o.json);
    LOOM_CHECK(js.good(), "int8: cannot write '{}'", o.json);
    js << fmt::format(R"({{"benchmark": "int8", "target": "{}", "cpu": "{}", "repeat": {}, "results": [)",
                      Target::host().str(), tuner::host_cpu_name(), o.repeat);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      js << fmt::format(R"({}{{"section": "{}", "workload": "{}", "threads": {}, "int8_config": "{}", )"
                        R"("f32_config": "{}", "loom_int8_gops": {:.3f}, "onednn_int8_gops": {:.3f}, )"
                        R"("loom_f32_gflops": {:.3f}}})",
                        i ? ", " : "", r.section, r.label, r.threads, r.int8_config, r.f32_config, r.int8_gops,
                        r.onednn_gops, r.f32_gflops);
    }
    js << "]}\n";
  }
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  cli::Command c = command();
  c.run = [](const cli::Args& a) { return run(options_from(a)); };
  return cli::run_command(c, {argv + 1, argv + argc});
}
