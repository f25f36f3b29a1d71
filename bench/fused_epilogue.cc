// fused_epilogue: a convolution with a fused epilogue (bias + residual add + relu, computed in
// the convolution's output tile) against the bare convolution, same template and config, same
// run, on ResNet-18's 3x3 layers; and, for scale, the unfused pair (the bare convolution, then
// the epilogue as a kernel of its own reading the convolution's output back).
//
// Every kernel is made the way the compile step makes a graph's: its registry operators handed
// to tuner::schedule_fused (the anchor's template with the log's tuned config of the bare
// workload, or its default).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iostream>

#include "bench_common.h"
#include "cli.h"
#include "loom/codegen/build.h"
#include "loom/runtime/thread_pool.h"
#include "loom/te/op_registry.h"
#include "loom/tuner/fused.h"

namespace loom::bench {
namespace {


using te::ops::Attrs;

struct Layer {
  int64_t C, H, K, stride;
};
// ResNet-18's 3x3 convolutions (batch 1, padding 1): one per stage, and the first strided one.
const Layer kLayers[] = {{64, 56, 64, 1}, {128, 28, 128, 1}, {256, 14, 256, 1}, {512, 7, 512, 1}, {64, 56, 128, 2}};

struct Options {
  std::vector<std::string> templates;
  std::vector<std::string> logs;
  int repeat = 15;
  double min_repeat_ms = 20;
  bool best = false;
  bool cpu_time = false;
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// As interleaved_times, but each block timed in this thread's CPU time: on one thread
/// (parallel loops run inline) the time the kernel computed, not the time other processes
/// of a shared machine held the core.
std::vector<double> interleaved_cpu_times(const std::vector<std::function<void()>>& fs, int repeat,
                                          double min_repeat_ms, bool best) {
  std::vector<std::vector<double>> per(fs.size());
  std::vector<int> calls(fs.size(), 1);
  for (size_t i = 0; i < fs.size(); ++i) {
    fs[i]();
    fs[i]();
    double t0 = thread_cpu_seconds();
    fs[i]();
    calls[i] = std::max(1, int(std::ceil(min_repeat_ms * 1e-3 / std::max(1e-7, thread_cpu_seconds() - t0))));
  }
  for (int r = 0; r < repeat; ++r)
    for (size_t i = 0; i < fs.size(); ++i) {
      double t0 = thread_cpu_seconds();
      for (int c = 0; c < calls[i]; ++c) fs[i]();
      per[i].push_back((thread_cpu_seconds() - t0) / calls[i]);
    }
  std::vector<double> out;
  for (auto& v : per) {
    std::sort(v.begin(), v.end());
    out.push_back(best ? v.front() : v[v.size() / 2]);
  }
  return out;
}

/// A float32 input of kernel `k`; returns its value number.
int input(tuner::FusedKernel& k, const std::vector<int64_t>& s) {
  k.graph.inputs.push_back({s, DataType::Float(32), ""});
  return int(k.graph.inputs.size()) - 1;
}

int op(tuner::FusedKernel& k, const std::string& name, const std::vector<int>& in, const Attrs& attrs = {}) {
  return k.graph.add(name, in, attrs);
}

/// The anchor of `k`: `name` on its inputs.
int anchor(tuner::FusedKernel& k, const std::string& name, const std::vector<int>& in, const Attrs& attrs) {
  k.anchor = int(k.graph.nodes.size());
  return op(k, name, in, attrs);
}

/// A compiled kernel and the arrays it runs on, in call order.
struct Kernel {
  runtime::Module module;
  runtime::PackedFunc f;
  std::vector<DLTensor*> args;
  std::string note;
  void operator()() const { f.call(args); }
};

Kernel compile(const tuner::FusedKernel& g, const records::ApplyHistoryBest& best,
               const std::vector<runtime::NDArray>& arrays) {
  tuner::FusedSchedule fs = tuner::schedule_fused(g, Target::host(), &best);
  Kernel k;
  k.module = codegen::build(fs.schedule, fs.args, Target::host(), "f");
  k.f = k.module.get_function("f");
  for (const runtime::NDArray& a : arrays) k.args.push_back(a.dltensor());
  k.note = fmt::format("{} [{}]", fs.note, tuner::to_string(fs.source));
  return k;
}

runtime::NDArray random_array(const std::vector<int64_t>& shape, uint64_t seed) {
  runtime::NDArray a = runtime::NDArray::empty(shape, DataType::Float(32));
  a.fill_random(seed, -1.0, 1.0);
  return a;
}

int run(const Options& o) {
  records::ApplyHistoryBest best(o.logs);
  std::cout << fmt::format("fused_epilogue: conv2d + bias + residual add + relu (one kernel) vs the bare conv2d, same "
                           "config; {} threads (LOOM_NUM_THREADS), the {} of {} interleaved blocks of >= {} ms{}\n",
                           runtime::ThreadPool::global().num_threads(), o.best ? "fastest" : "median", o.repeat,
                           o.min_repeat_ms, o.cpu_time ? " of thread CPU time" : "");
  std::cout << fmt::format("{:<14} {:<26} {:>9} {:>9} {:>7} {:>11} {:>7} {:>8}  {}\n", "template", "layer", "bare ms",
                           "fused ms", "fused/", "unfused ms", "unf./", "GFLOP/s", "config");
  std::cout << fmt::format("{:<14} {:<26} {:>9} {:>9} {:>7} {:>11} {:>7} {:>8}\n", "", "", "", "", "bare", "(2 kernels)",
                           "bare", "fused");
  std::vector<double> ratios;
  for (const std::string& tmpl : o.templates) {
    const bool blocked = tmpl == "conv2d_nchwc";
    for (const Layer& l : kLayers) {
      const int64_t OH = (l.H + 2 - 3) / l.stride + 1;
      const std::vector<int64_t> x_shape = blocked ? std::vector<int64_t>{1, l.C / 16, l.H, l.H, 16}
                                                   : std::vector<int64_t>{1, l.C, l.H, l.H};
      const std::vector<int64_t> w_shape = blocked ? std::vector<int64_t>{l.K / 16, l.C / 16, 3, 3, 16, 16}
                                                   : std::vector<int64_t>{l.K, l.C, 3, 3};
      const std::vector<int64_t> y_shape = blocked ? std::vector<int64_t>{1, l.K / 16, OH, OH, 16}
                                                   : std::vector<int64_t>{1, l.K, OH, OH};
      const std::string op_name = blocked ? "conv2d_nchwc" : "conv2d";
      const Attrs conv_attrs{{"strides", std::vector<int64_t>{l.stride, l.stride}},
                             {"padding", std::vector<int64_t>{1, 1}}};
      const Attrs bias_attrs{{"layout", std::string(blocked ? "NCHW16c" : "")}};

      // The bare convolution.
      tuner::FusedKernel bare;
      int x = input(bare, x_shape), w = input(bare, w_shape);
      bare.graph.outputs = {anchor(bare, op_name, {x, w}, conv_attrs)};
      // conv + bias + residual + relu, one kernel.
      tuner::FusedKernel fused;
      int fx = input(fused, x_shape), fw = input(fused, w_shape), fb = input(fused, {l.K}), fr = input(fused, y_shape);
      int conv = anchor(fused, op_name, {fx, fw}, conv_attrs);
      fused.graph.outputs = {
          op(fused, "relu", {op(fused, "add", {op(fused, "bias_add", {conv, fb}, bias_attrs), fr})})};
      // The epilogue on its own, reading the convolution's output.
      tuner::FusedKernel epi;
      int ey = input(epi, y_shape), eb = input(epi, {l.K}), er = input(epi, y_shape);
      epi.graph.outputs = {op(epi, "relu", {op(epi, "add", {op(epi, "bias_add", {ey, eb}, bias_attrs), er})})};

      runtime::NDArray X = random_array(x_shape, 1), W = random_array(w_shape, 2), B = random_array({l.K}, 3),
                       R = random_array(y_shape, 4);
      runtime::NDArray Yb = runtime::NDArray::empty(y_shape, DataType::Float(32));
      runtime::NDArray Yf = runtime::NDArray::empty(y_shape, DataType::Float(32));
      runtime::NDArray Ye = runtime::NDArray::empty(y_shape, DataType::Float(32));
      Kernel kb = compile(bare, best, {X, W, Yb});
      Kernel kf = compile(fused, best, {X, W, B, R, Yf});
      Kernel ke = compile(epi, best, {Yb, B, R, Ye});

      // Check: the fused kernel equals the bare convolution followed by the epilogue.
      poison(Yf.data<float>(), Yf.numel());
      kb();
      ke();
      kf();
      const double err = max_rel_err(Yf.data<float>(), Ye.data<float>(), Yf.numel());
      LOOM_CHECK(err < 1e-4, "fused_epilogue: the fused kernel differs from conv + epilogue (max rel err {})", err);

      const std::vector<std::function<void()>> fs{[&] { kb(); }, [&] { kf(); }, [&] { kb(); ke(); }};
      std::vector<double> t = o.cpu_time ? interleaved_cpu_times(fs, o.repeat, o.min_repeat_ms, o.best)
                                         : interleaved_times(fs, o.repeat, o.min_repeat_ms, 0, o.best);
      const double flop = 2.0 * double(l.K) * double(OH) * double(OH) * double(l.C) * 9.0;
      const std::string layer = fmt::format("C={} H={} K={} s{}", l.C, l.H, l.K, l.stride);
      ratios.push_back(t[1] / t[0]);
      std::cout << fmt::format("{:<14} {:<26} {:>9.3f} {:>9.3f} {:>7.3f} {:>11.3f} {:>7.3f} {:>8.1f}  {}\n", tmpl,
                               layer, t[0] * 1e3, t[1] * 1e3, t[1] / t[0], t[2] * 1e3, t[2] / t[0],
                               flop / t[1] * 1e-9, kf.note);
    }
  }
  std::cout << fmt::format("geometric mean of fused/bare: {:.3f}\n", geomean(ratios));
  return 0;
}

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "fused_epilogue";
  c.usage = "[options]";
  c.synopsis = "conv2d + bias + residual add + relu fused in one kernel vs the bare conv2d (same config)";
  c.description =
      "Kernels are composed from the operator registry and scheduled by tuner::schedule_fused, as the\n"
      "graph compile step schedules fused groups; with --log, the tuned config of each bare workload\n"
      "schedules both kernels. Threads: LOOM_NUM_THREADS.";
  c.options = {{"--templates", "LIST", "conv2d_nchwc and/or conv2d_nchw (default both)"},
               {"--log", "FILE", "tuning log(s) with configs of the bare workloads", true},
               {"--repeat", "N", "timed blocks per kernel (default 15)"},
               {"--min-repeat-ms", "MS", "length of a timed block (default 20)"},
               {"--best", "", "report each kernel's fastest block instead of the median"},
               {"--cpu-time", "",
                "time blocks in the thread's CPU time rather than wall time (needs LOOM_NUM_THREADS=1: the "
                "kernels then run in the calling thread); steadier on a shared, loaded machine"}};
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  o.templates = split_list(a.str("--templates", "conv2d_nchwc,conv2d_nchw"), ',');
  for (const std::string& t : o.templates)
    if (t != "conv2d_nchwc" && t != "conv2d_nchw") a.usage_error("--templates: unknown template '{}'", t);
  o.logs = a.all("--log");
  o.repeat = int(a.integer("--repeat", 15, 1, 1000));
  o.min_repeat_ms = a.number("--min-repeat-ms", 20, 1);
  o.best = a.has("--best");
  o.cpu_time = a.has("--cpu-time");
  if (o.cpu_time && runtime::ThreadPool::global().num_threads() != 1)
    a.usage_error("--cpu-time: needs LOOM_NUM_THREADS=1 (parallel loops on other threads are not this thread's CPU time)");
  return o;
}

}  // namespace
}  // namespace loom::bench

int main(int argc, char** argv) {
  loom::cli::Command c = loom::bench::command();
  c.run = [](const loom::cli::Args& a) { return loom::bench::run(loom::bench::options_from(a)); };
  return loom::cli::run_command(c, {argv + 1, argv + argc});
}
