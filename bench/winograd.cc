// Winograd convolution (the conv2d_nchwc_winograd template, F(m×m, 3×3)) next to loom's direct
// conv2d_nchwc and oneDNN's direct convolution on ResNet-18's 3×3 stride-1 layers, batch 1:
// (C=K, H=W) = (64, 56), (128, 28), (256, 14), (512, 7), pad 1, float32.
//
// loom runs on channel-blocked arrays (nChw16c data and output, OIhw16i16o kernel for the
// direct template; for Winograd the kernel's transform U = G g Gᵀ, computed once by a compiled
// te::ops::winograd_weight_transform), all converted untimed, as oneDNN's weights reorder and
// its source reorder are (oneDNN picks its layouts with format_tag::any; bench/dnnl_conv.h).
// Each loom kernel runs with the template's default config and, where the log has records of
// its workload, with its best record (tuner::build_best); --trials N first tunes each
// workload with the XGB tuner up to N records in --log-dir (whose conv2d_nchwc logs are
// tuned_cpu's: same file names). oneDNN's own Winograd algorithm is timed too where this
// oneDNN has one for the CPU (else the row says so).
//
// Every output is checked against oneDNN's before timing (max |loom - oneDNN| / max |oneDNN|
// < 1e-3, output first filled with NaN). Times are medians of --repeat interleaved repeats
// (bench::interleaved_times); GFLOP/s count the direct convolution's 2·K·C·9·OH·OW FLOPs for
// every implementation, so a Winograd rate is an effective one. The load average is printed
// before each layer: the machine may be shared.
//
//   bench/winograd [--log-dir DIR] [--trials N] [--tile-sizes 2,4] [--threads 1,2] [--repeat R]
//                  [--settle-ms MS] [--best] [--json FILE]
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/runtime/thread_pool.h>
#include <loom/tuner/build_best.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli.h"
#include "dnnl_conv.h"
#include "peers.h"

using namespace loom;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string log_dir = "tuned_cpu_logs";
  int trials = 0;
  std::vector<int> tile_sizes = {4};
  std::vector<int> threads = {1, 2};
  int repeat = 7;
  double settle_ms = 200;
  double min_repeat_ms = 100;  // of the tuner's measurer
  bool best = false;
  bool verbose = false;
  std::string json;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "winograd";
  c.usage = "[options]";
  c.synopsis = "Winograd conv2d_nchwc_winograd vs direct conv2d_nchwc vs oneDNN on ResNet-18's 3x3 layers";
  c.options = {
      {"--log-dir", "DIR", "tuning logs, one per workload (default tuned_cpu_logs, shared with tuned_cpu)"},
      {"--trials", "N", "first tune each workload up to N records with the XGB tuner (default 0: only read logs)"},
      {"--tile-sizes", "LIST", "Winograd output tiles m of F(m x m, 3x3), each in 2..6 (default 4)"},
      {"--threads", "LIST", "thread counts for every library (default 1,2)"},
      {"--repeat", "R", "timed repeats per measurement; the median is reported (default 7)"},
      {"--settle-ms", "MS", "pause before each multi-threaded timed block (default 200)"},
      {"--min-repeat-ms", "MS", "the tuner's min_repeat_ms (default 100)"},
      {"--best", "", "report the fastest repeat instead of the median (for loaded machines)"},
      {"--json", "FILE", "also write the results as JSON"},
      {"--verbose", "", "the tuner's progress lines"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  o.log_dir = a.str("--log-dir", o.log_dir);
  o.trials = int(a.integer("--trials", o.trials, 0, 1 << 30));
  bench::int_list_option(a, "--tile-sizes", &o.tile_sizes);
  for (int m : o.tile_sizes)
    if (m < 2 || m > 6) a.usage_error("--tile-sizes: {} is not in 2..6", m);
  bench::int_list_option(a, "--threads", &o.threads);
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 1000));
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  o.min_repeat_ms = a.number("--min-repeat-ms", o.min_repeat_ms, 0);
  o.best = a.has("--best");
  o.verbose = a.has("--verbose");
  o.json = a.str("--json");
  return o;
}

runtime::NDArray f32(std::vector<int64_t> shape, uint64_t seed = 0) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), DataType::Float(32));
  if (seed) a.fill_random(seed);
  return a;
}

double load_average() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

/// U = G g Gᵀ of a blocked kernel, by the operator compiled with a plain schedule.
runtime::NDArray winograd_weight(const runtime::NDArray& bkernel, int m) {
  std::vector<te::Expr> shape;
  for (int64_t d : bkernel.shape()) shape.push_back(te::Expr(int(d)));
  te::Tensor g = te::placeholder(shape, DataType::Float(32), "g");
  te::Tensor u = te::ops::winograd_weight_transform(g, m);
  runtime::Module mod = build(schedule::create_schedule({u}), {g, u}, Target::host(), "weight_transform");
  std::vector<int64_t> us;
  for (const te::Expr& d : u.shape()) us.push_back(*te::as_const_int(d));
  runtime::NDArray out = f32(us);
  mod.get_function("weight_transform")(bkernel, out);
  return out;
}

/// One loom kernel of a layer: a template with its default config or its best record.
struct Kernel {
  std::string name;    // "direct default", "F(4) tuned"
  std::string config;  // "default 31" or "tuned 812 (64 records)"
  runtime::PackedFunc f;
  runtime::NDArray weight;
};

struct Row {
  std::string layer, name, config;
  int threads = 0;
  double gflops = 0, ms = 0, err = 0;
};

std::string log_of(const Options& o, const tuner::Task& t) {
  return (fs::path(o.log_dir) / (bench::sanitize(t.key()) + ".jsonl")).string();
}

/// The default-config kernel and, when the log has records of the task, the tuned one.
void add_kernels(const Options& o, const tuner::Task& task, const std::string& what, const runtime::NDArray& weight,
                 std::vector<Kernel>& out, std::vector<runtime::Module>& keep) {
  const std::string fname = task.workload().op;
  keep.push_back(tuner::build_best(task, records::ApplyHistoryBest(), nullptr));
  out.push_back({what + " default", fmt::format("default {}", task.default_index()),
                 keep.back().get_function(fname), weight});
  const std::string log = log_of(o, task);
  if (!fs::exists(log)) return;
  records::ApplyHistoryBest best(log);
  std::optional<records::Record> rec = best.best(task.workload(), task.target().str());
  if (!rec) return;
  keep.push_back(tuner::build_best(task, best, nullptr));
  out.push_back({what + " tuned",
                 fmt::format("tuned {} ({} records)", rec->config.index, bench::task_records(log, task).size()),
                 keep.back().get_function(fname), weight});
}

}  // namespace

int run(const Options& o) {
  fs::create_directories(o.log_dir);
  const Target host = Target::host();
  const std::vector<bench::ConvShape> layers = {
      {64, 56, 64, 3, 1, 1}, {128, 28, 128, 3, 1, 1}, {256, 14, 256, 3, 1, 1}, {512, 7, 512, 3, 1, 1}};
  auto direct_task = [&](const bench::ConvShape& l) {
    return tuner::Task::create("conv2d_nchwc", {1, l.C, l.H, l.H, l.K, 3, 3}, host, "float32",
                               {{"stride", "1"}, {"pad", "1"}});
  };
  auto wino_task = [&](const bench::ConvShape& l, int m) {
    // tile_size 4, the template's default, is left out as the graph's strategy leaves it out.
    std::map<std::string, std::string> attrs{{"pad", "1"}};
    if (m != 4) attrs["tile_size"] = std::to_string(m);
    return tuner::Task::create("conv2d_nchwc_winograd", {1, l.C, l.H, l.H, l.K, 3, 3}, host, "float32", attrs);
  };

  if (o.trials > 0) {
    for (const auto& l : layers) {
      std::vector<tuner::Task> tasks{direct_task(l)};
      for (int m : o.tile_sizes) tasks.push_back(wino_task(l, m));
      for (const tuner::Task& t : tasks) {
        bench::TuneRequest r;
        r.tag = "winograd";
        r.label = t.key();
        r.trials = o.trials;
        r.resume = true;
        r.verbose = o.verbose;
        r.measure.min_repeat_ms = o.min_repeat_ms;
        bench::tune_xgb(t, log_of(o, t), r);
      }
    }
  }

  std::printf("loom winograd: target %s (%s), float32, batch 1, %s of %d interleaved repeats; oneDNN %d.%d.%d\n",
              host.str().c_str(), tuner::host_cpu_name().c_str(), o.best ? "fastest" : "median", o.repeat,
              dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);
  std::printf("GFLOP/s of the direct convolution's FLOPs; loom/oneDNN > 1: loom faster; reorders and weight "
              "transforms untimed\n\n");
  std::printf("%-26s %3s %5s  %-14s %-26s %9s %8s %8s %9s\n", "layer (C=K, H=W, 3x3 p1)", "thr", "load", "kernel",
              "config", "GFLOP/s", "ms", "/oneDNN", "max err");

  std::vector<Row> rows;
  bool ok = true;
  for (const bench::ConvShape& l : layers) {
    const std::string layer = fmt::format("C={} H={} K={}", l.C, l.H, l.K);
    const int OH = l.out();
    runtime::NDArray data = f32({1, l.C, l.H, l.H}, 6), kernel = f32({l.K, l.C, 3, 3}, 7);
    runtime::NDArray bdata = f32({1, l.C / 16, l.H, l.H, 16}), bkernel = f32({l.K / 16, l.C / 16, 3, 3, 16, 16});
    bench::convert_nchw16c(data.data<float>(), bdata.data<float>(), l.C, l.H * l.H, true);
    bench::block_oihw16i16o(kernel.data<float>(), bkernel.data<float>(), l.K, l.C, 9);
    runtime::NDArray bout = f32({1, l.K / 16, OH, OH, 16}), got = f32({1, l.K, OH, OH});
    runtime::NDArray ref = f32({1, l.K, OH, OH}), wino_ref = f32({1, l.K, OH, OH});

    std::vector<Kernel> kernels;
    std::vector<runtime::Module> keep;
    const tuner::Task direct = direct_task(l);
    add_kernels(o, direct, "direct", bkernel, kernels, keep);
    for (int m : o.tile_sizes)
      add_kernels(o, wino_task(l, m), fmt::format("F({})", m), winograd_weight(bkernel, m), kernels, keep);
    const double flop = direct.flop();

    for (int nt : o.threads) {
      runtime::ThreadPool::global().resize(nt);
      cli::set_peer_threads(nt);  // OpenMP's, for oneDNN (fixed when a primitive is created)
      std::shared_ptr<bench::DnnlConv> dnnl =
          bench::make_dnnl_conv(l, data.data<float>(), kernel.data<float>(), ref.data<float>());
      std::shared_ptr<bench::DnnlConv> dnnl_wino;
      std::string no_wino;
      try {
        dnnl_wino = bench::make_dnnl_conv(l, data.data<float>(), kernel.data<float>(), wino_ref.data<float>(),
                                          dnnl::algorithm::convolution_winograd);
      } catch (const dnnl::error& e) {
        no_wino = e.what();
      }
      bench::poison(ref.data<float>(), ref.numel());
      dnnl->src_in();
      dnnl->run();
      dnnl->dst_out();
      std::vector<double> errs;
      auto check = [&](const runtime::NDArray& out, const std::string& what) {
        const double err = bench::max_rel_err(out.data<float>(), ref.data<float>(), ref.numel());
        errs.push_back(err);
        if (!(err < 1e-3)) {
          std::fprintf(stderr, "winograd: %s, %s, %d thread(s): max rel err %.3e against oneDNN\n", layer.c_str(),
                       what.c_str(), nt, err);
          ok = false;
        }
      };
      for (const Kernel& k : kernels) {
        bench::poison(bout.data<float>(), bout.numel());
        k.f(bdata, k.weight, bout);
        bench::convert_nchw16c(got.data<float>(), bout.data<float>(), l.K, OH * OH, false);
        check(got, k.name);
      }
      if (dnnl_wino) {
        bench::poison(wino_ref.data<float>(), wino_ref.numel());
        dnnl_wino->src_in();
        dnnl_wino->run();
        dnnl_wino->dst_out();
        check(wino_ref, "oneDNN winograd");
      }

      std::vector<std::function<void()>> fs = {[&] { dnnl->run(); }};
      for (const Kernel& k : kernels) fs.push_back([&] { k.f(bdata, k.weight, bout); });
      if (dnnl_wino) fs.push_back([&] { dnnl_wino->run(); });
      const double load = load_average();
      std::vector<double> t = bench::interleaved_times(fs, o.repeat, 20, nt > 1 ? o.settle_ms : 0, o.best);
      auto row = [&](const std::string& name, const std::string& config, double secs, double err) {
        Row r{layer, name, config, nt, flop / secs * 1e-9, secs * 1e3, err};
        rows.push_back(r);
        std::printf("%-26s %3d %5.2f  %-14s %-26s %9.1f %8.3f %8.2f %9.1e\n", layer.c_str(), nt, load, name.c_str(),
                    config.c_str(), r.gflops, r.ms, t[0] / secs, err);
      };
      row("oneDNN", "direct", t[0], 0);
      for (size_t i = 0; i < kernels.size(); ++i) row(kernels[i].name, kernels[i].config, t[i + 1], errs[i]);
      if (dnnl_wino) row("oneDNN wino", "convolution_winograd", t.back(), errs.back());
      else std::printf("%-26s %3d %5.2f  %-14s n/a (%s)\n", layer.c_str(), nt, load, "oneDNN wino", no_wino.c_str());
      // The best of each family, side by side.
      double best_direct = 0, best_wino = 0;
      for (const Row& r : rows) {
        if (r.layer != layer || r.threads != nt) continue;
        if (r.name.starts_with("direct")) best_direct = std::max(best_direct, r.gflops);
        if (r.name.starts_with("F(")) best_wino = std::max(best_wino, r.gflops);
      }
      std::printf("%-26s %3d %5s  best loom Winograd / best loom direct %.2f, / oneDNN %.2f\n\n", layer.c_str(), nt,
                  "", best_wino / best_direct, best_wino / (flop / t[0] * 1e-9));
    }
  }

  if (!o.json.empty()) {
    std::ofstream js(o.json);
    LOOM_CHECK(js.good(), "winograd: cannot write '{}'", o.json);
    js << fmt::format(R"({{"benchmark": "winograd", "target": "{}", "cpu": "{}", "repeat": {}, "stat": "{}", )"
                      R"("results": [)",
                      host.str(), tuner::host_cpu_name(), o.repeat, o.best ? "fastest" : "median");
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      js << fmt::format(R"({}{{"layer": "{}", "threads": {}, "kernel": "{}", "config": "{}", "gflops": {:.3f}, )"
                        R"("ms": {:.4f}, "max_rel_err": {:.3e}}})",
                        i ? ", " : "", r.layer, r.threads, r.name, r.config, r.gflops, r.ms, r.err);
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
