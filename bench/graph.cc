// Whole networks, batch 1: ResNet-18 and MobileNetV2 (examples/models, 224×224) compiled by
// loom four ways, next to the same network run layer by layer with oneDNN primitives in their
// own blocked layouts (tools/peers_graph.cc), in one run:
//   unfused   level-2 passes (batch norms folded), every operator its own kernel, NCHW
//   fused     level 2: fused by pattern (conv + bias + residual add + relu one kernel), NCHW
//   laid out  level 3: fused, convolutions in NCHW{c} blocked layouts
//   tuned     level 3 with the configs of DIR/<model>.jsonl (--log-dir; skipped without one)
// Each variant's outputs are checked against oneDNN's before timing; times are medians of
// interleaved repeats (bench_common.h) at each thread count. With --profile, the last
// variant's kernels are listed with their share of the latency and, for the memory-bound ones
// (all but convolutions and dense layers; depthwise convolutions count as memory-bound), the bandwidth their argument bytes imply next to this machine's
// measured copy bandwidth (memcpy of 64 MiB, on as many threads).
//
// --tune N first tunes every distinct template workload of the laid-out network (XGB, resumed
// from the log) to N trials into DIR/<model>.jsonl.
//
//   bench/graph [--models resnet18,mobilenet_v2] [--threads 1,2] [--variants LIST]
//               [--log-dir DIR [--tune N]] [--repeat R] [--image N] [--profile] [--best]
#include <loom/graph_opt/compile.h>
#include <loom/graph_opt/passes.h>
#include <loom/runtime/thread_pool.h>
#include <loom/tuner/task.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_common.h"
#include "cli.h"
#include "examples/models/models.h"
#include "peers.h"

using namespace loom;
namespace fs = std::filesystem;
using runtime::NDArray;

namespace {

struct Options {
  std::vector<std::string> models = {"resnet18", "mobilenet_v2"};
  std::vector<int> threads = {1, 2};
  std::vector<std::string> variants = {"unfused", "fused", "laid_out", "tuned"};
  std::string log_dir;
  int repeat = 15;
  int64_t image = 224;
  bool profile = false;
  double settle_ms = 200;
  bool best = false;
  int tune = 0;  // XGB trials per workload to add to DIR/<model>.jsonl before the tuned variant
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "graph";
  c.usage = "[options]";
  c.synopsis = "ResNet-18 and MobileNetV2 compiled by loom next to oneDNN primitives layer by layer";
  c.options = {
      {"--models", "LIST", "resnet18, mobilenet_v2 (default both)"},
      {"--threads", "LIST", "thread counts for loom and oneDNN (default 1,2)"},
      {"--variants", "LIST", "any of unfused,fused,laid_out,tuned (default all)"},
      {"--log-dir", "DIR", "tuning logs: DIR/<model>.jsonl gives the tuned variant's configs"},
      {"--repeat", "R", "timed repeats; the median is reported (default 15)"},
      {"--image", "N", "input height and width (default 224)"},
      {"--settle-ms", "MS", "pause before each multi-threaded timed block (default 200)"},
      {"--profile", "", "each kernel's share of the last variant's latency, and memory-bound kernels' bandwidth"},
      {"--tune", "N", "first tune every workload of the laid-out network to N XGB trials in DIR/<model>.jsonl (resumes)"},
      {"--best", "", "report the fastest repeat instead of the median (for loaded machines)"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  if (a.has("--models")) o.models = bench::split_list(a.str("--models"), ',');
  for (const auto& m : o.models)
    if (m != "resnet18" && m != "mobilenet_v2") a.usage_error("--models: unknown model '{}'", m);
  bench::int_list_option(a, "--threads", &o.threads);
  if (a.has("--variants")) o.variants = bench::split_list(a.str("--variants"), ',');
  for (const auto& v : o.variants)
    if (v != "unfused" && v != "fused" && v != "laid_out" && v != "tuned") a.usage_error("--variants: unknown '{}'", v);
  o.log_dir = a.str("--log-dir");
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 10000));
  o.image = a.integer("--image", o.image, 32, 1024);
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  o.profile = a.has("--profile");
  o.best = a.has("--best");
  o.tune = int(a.integer("--tune", 0, 0, 1 << 20));
  if (o.tune > 0 && o.log_dir.empty()) a.usage_error("--tune needs --log-dir");
  return o;
}

void set_threads(int n) {
  runtime::ThreadPool::global().resize(n);
  cli::set_peer_threads(n);
}

/// Bytes per second of memcpy over `bytes` (read + written), split across `threads` threads;
/// the best of five.
double copy_bandwidth(int threads, size_t bytes = size_t(64) << 20) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    size_t chunk = bytes / size_t(threads);
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] { std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, chunk); });
    for (auto& th : ts) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(bytes) / s);
  }
  return best;
}

struct Variant {
  std::string name;
  runtime::Module module;
  double compile_s = 0;
  size_t kernels = 0;
};

std::vector<NDArray> output_arrays(const graph_opt::Graph& g) {
  std::vector<NDArray> out;
  for (auto v : g.outputs) out.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
  return out;
}

std::vector<DLTensor*> dl(const std::vector<NDArray>& a, const std::vector<NDArray>& b) {
  std::vector<DLTensor*> r;
  for (const auto& x : a) r.push_back(x.dltensor());
  for (const auto& x : b) r.push_back(x.dltensor());
  return r;
}

/// Each kernel's median time over `repeat` profiled runs, with its share and, for the
/// memory-bound ones, the bandwidth of its argument bytes against `copy_bw`.
void print_profile(const Variant& v, const graph_opt::Graph& g, const std::vector<NDArray>& in, int repeat,
                   double copy_bw, double latency_ms) {
  auto info = nlohmann::json::parse(v.module.info_json());
  const auto& kernels = info["kernels"];
  NDArray seconds = NDArray::empty({int64_t(kernels.size())}, DataType::Float(64));
  std::vector<NDArray> out = output_arrays(g);
  std::vector<DLTensor*> args = dl(in, out);
  args.push_back(seconds.dltensor());
  runtime::PackedFunc f = v.module.get_function("run_profile");
  std::vector<std::vector<double>> ms(kernels.size());
  for (int r = 0; r < repeat + 2; ++r) {
    f.call(args);
    if (r >= 2)
      for (size_t k = 0; k < kernels.size(); ++k) ms[k].push_back(seconds.get(int64_t(k)) * 1e3);
  }
  std::vector<double> med(kernels.size());
  double total = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::sort(ms[k].begin(), ms[k].end());
    total += med[k] = ms[k][ms[k].size() / 2];
  }
  std::cout << fmt::format("  {} kernels of '{}': {:.3f} ms in kernels of {:.3f} ms; copy bandwidth {:.1f} GB/s\n",
                           kernels.size(), v.name, total, latency_ms, copy_bw / 1e9);
  std::cout << fmt::format("  {:>3} {:<40} {:>8} {:>6} {:>8} {:>7}  {}\n", "#", "kernel", "ms", "share", "GB/s",
                           "of copy", "schedule");
  int slow = 0, memory_bound = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::string name = kernels[k]["name"];
    // Convolutions (but depthwise ones: about two flops per byte) and dense layers are
    // compute-bound; everything else moves more bytes than it computes.
    bool compute = (name.find("conv2d") != std::string::npos && name.find("depthwise") == std::string::npos) ||
                   name.find("dense") != std::string::npos;
    double gbs = med[k] > 0 ? kernels[k].value("bytes", 0.0) / (med[k] * 1e-3) : 0;
    std::string of_copy = "";
    if (!compute) {
      ++memory_bound;
      double frac = gbs / copy_bw;
      slow += frac < 0.5;
      of_copy = fmt::format("{:.0f}%{}", 100 * frac, frac < 0.5 ? "!" : "");
    }
    std::cout << fmt::format("  {:>3} {:<40} {:>8.3f} {:>5.1f}% {:>8.1f} {:>7}  {}\n", k, name, med[k],
                             total > 0 ? 100 * med[k] / total : 0.0, gbs / 1e9, of_copy,
                             kernels[k].value("note", ""));
  }
  std::cout << fmt::format("  memory-bound kernels (all but conv2d and dense; depthwise included): {}, below half the copy "
                           "bandwidth: {} (marked !)\n",
                           memory_bound, slow);
}

graph_opt::Graph build_model(const std::string& name, int64_t image) {
  models::ModelOptions o;
  o.image = image;
  return name == "resnet18" ? models::resnet18(o) : models::mobilenet_v2(o);
}

/// Tunes every distinct template workload of `g` at level 3 to `trials` XGB trials in `log`.
void tune_model(const std::string& model, const graph_opt::Graph& g, const std::string& log, int trials) {
  graph_opt::LoweredGraph lg = graph_opt::lower_graph(g, Target("llvm"));
  std::map<std::string, records::Workload> tasks;
  std::map<std::string, int> uses;
  for (const auto& k : lg.report.kernels)
    if (!k.task.op.empty()) tasks[k.task.key()] = k.task, uses[k.task.key()]++;
  std::cerr << fmt::format("{}: tuning {} workloads to {} trials each into {}\n", model, tasks.size(), trials, log);
  for (const auto& [key, w] : tasks) {
    bench::TuneRequest r;
    r.tag = "graph";
    r.label = fmt::format("{} (x{})", key, uses[key]);
    r.trials = trials;
    r.resume = true;
    bench::tune_xgb(tuner::Task::create(w, Target("llvm")), log, r);
  }
}

Variant compile_variant(const std::string& name, const graph_opt::Graph& g,
                        const std::shared_ptr<records::ApplyHistoryBest>& best) {
  graph_opt::CompileOptions opt;
  // 3x3 convolutions as Winograd where the log's best Winograd record beats the direct one.
  if (best) opt.passes.layout.choose_winograd = graph_opt::winograd_if_faster(best, Target("llvm"));
  if (name == "unfused") opt.passes.opt_level = 2, opt.passes.fuse.level = 0;
  else if (name == "fused") opt.passes.opt_level = 2;
  else opt.passes.opt_level = 3;
  graph_opt::CompileReport report;
  auto t0 = std::chrono::steady_clock::now();
  Variant v{name, graph_opt::compile(g, Target("llvm"), best.get(), opt, &report), 0, report.kernels.size()};
  v.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int tuned = 0;
  for (const auto& k : report.kernels) tuned += k.tuned;
  std::cerr << fmt::format("  {}: {} kernels ({} tuned), compiled in {:.1f} s; {}\n", name, v.kernels, tuned,
                           v.compile_s, report.memory.summary());
  return v;
}

int run(const cli::Args& a) {
  Options o = options_from(a);
  double load[3] = {0, 0, 0};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    std::fclose(f);
  }
  std::cout << fmt::format("bench/graph: batch 1, {0}x{0}; {1} of {2} interleaved repeats; ratio = loom / oneDNN (below 1: "
                           "loom faster); {3} CPUs, load average {4:.1f}\n",
                           o.image, o.best ? "fastest" : "median", o.repeat, std::thread::hardware_concurrency(), load[0]);
  for (const std::string& model : o.models) {
    graph_opt::Graph g = build_model(model, o.image);
    graph_opt::PassOptions peer_passes;
    peer_passes.opt_level = 2;
    peer_passes.disabled.insert("fuse_ops");
    graph_opt::Graph peer_graph = graph_opt::optimize(g, peer_passes);
    std::vector<NDArray> in;
    for (int i : g.input_nodes()) {
      const auto& t = g.nodes[size_t(i)].outputs[0];
      in.push_back(NDArray::empty(t.shape, t.dtype));
      in.back().fill_random(uint64_t(i) + 1);
    }

    std::cerr << model << ": compiling\n";
    std::vector<Variant> variants;
    for (const std::string& name : o.variants) {
      if (name != "tuned") {
        variants.push_back(compile_variant(name, g, nullptr));
        continue;
      }
      fs::path log = fs::path(o.log_dir) / (model + ".jsonl");
      if (o.tune > 0) {
        fs::create_directories(o.log_dir);
        tune_model(model, g, log.string(), o.tune);
      }
      if (o.log_dir.empty() || !fs::exists(log)) {
        std::cout << fmt::format("{}: tuned: skipped (no log {})\n", model, o.log_dir.empty() ? "(--log-dir)" : log.string());
        continue;
      }
      variants.push_back(compile_variant("tuned", g, std::make_shared<records::ApplyHistoryBest>(log.string())));
    }

    for (int threads : o.threads) {
      set_threads(threads);
      std::string why;
      std::optional<cli::GraphPeer> peer = cli::graph_peer(peer_graph, &why);  // after the thread count
      std::vector<NDArray> peer_out = output_arrays(g);
      std::vector<std::function<void()>> fs;
      if (peer) {
        peer->run(in, peer_out);
        fs.push_back([&] { peer->run(in, peer_out); });
      } else {
        std::cout << fmt::format("{}: no oneDNN peer: {}\n", model, why);
      }
      std::vector<std::vector<NDArray>> outs;
      for (const Variant& v : variants) {
        outs.push_back(output_arrays(g));
        runtime::PackedFunc f = v.module.get_function("run");
        std::vector<DLTensor*> args = dl(in, outs.back());
        f.call(args);
        fs.push_back([f, args] { f.call(args); });
      }
      std::vector<double> t = bench::interleaved_times(fs, o.repeat, 20, threads > 1 ? o.settle_ms : 0, o.best);
      double peer_ms = peer ? t[0] * 1e3 : NAN;
      if (peer) std::cout << fmt::format("{} {}t  {:<10} {:>9.3f} ms  {}\n", model, threads, "oneDNN", peer_ms, peer->name);
      for (size_t i = 0; i < variants.size(); ++i) {
        double ms = t[i + (peer ? 1 : 0)] * 1e3;
        std::string check = "";
        if (peer) {
          double err = bench::max_rel_err(outs[i][0].data<float>(), peer_out[0].data<float>(), outs[i][0].numel());
          check = fmt::format("max rel err vs oneDNN {:.1e}{}", err, err > 1e-3 ? " MISMATCH" : "");
        }
        std::cout << fmt::format("{} {}t  {:<10} {:>9.3f} ms  ratio {:>5.2f}  ({} kernels; {})\n", model, threads,
                                 variants[i].name, ms, ms / peer_ms, variants[i].kernels, check);
      }
      if (o.profile && !variants.empty())
        print_profile(variants.back(), g, in, o.repeat, copy_bandwidth(threads), t.back() * 1e3);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Command c = command();
  c.run = run;
  return cli::run_command(c, std::vector<std::string>(argv + 1, argv + argc));
}
