// The auto-scheduler (tuner/auto/) side by side with what loom runs without it, in one run:
//   (a) template: auto vs the schedule template at the same trial budget, on matmul 1024^3,
//       ResNet-18's 3x3 convolutions (stride 1) and a MobileNetV2 depthwise convolution; the
//       auto task is the registry operator's (`loom tune --op NAME --auto`), the template's
//       the template workload of the same computation (target: >= 0.95x the template);
//   (b) pattern: auto vs the untuned pattern schedule (schedule_by_pattern, what loom runs
//       for a kernel without a template) on the template-less kernels of a BERT-base layer
//       (sequence 128) and of MobileNetV2: layer_norm, softmax of the attention scores,
//       bias + GELU, the heads' transpose, reduce_mean, the global pool (target: >= 1.3x
//       geomean, no kernel slower);
//   (c) tvm: the same kernels tuned by TVM MetaSchedule at the same trial budget, run by
//       bench/auto_schedule_tvm.py in a Python that imports tvm (--tvm-python; skipped with a
//       note when there is none).
//
// Every loom kernel is tuned with the XGBoost tuner (its cost model trains on one thread, so
// it does not disturb the measurements), one log per workload in --log-dir (--resume reuses
// them, --no-tune only reads them), then built from its best record. Outputs are checked
// against the peer computation (the template's, or the pattern schedule's) before timing;
// times are medians of interleaved repeats at each thread count. Compute-bound kernels report
// GFLOP/s, memory-bound ones GB/s (bytes of the arguments, each read or written once).
//
//   bench/auto_schedule [--sections template,pattern,tvm] [--trials N] [--threads 1,2]
//                       [--log-dir DIR] [--resume | --no-tune] [--tvm-python PY] [--json FILE]
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/runtime/thread_pool.h>
#include <loom/tuner/auto/workload.h>
#include <loom/tuner/build_best.h>
#include <loom/tuner/tuner.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli.h"

using namespace loom;
namespace fs = std::filesystem;
using tuner::autosched::OpGraph;
using tuner::autosched::parse_tensor_type;

namespace {

struct Options {
  std::vector<std::string> sections = {"template", "pattern", "tvm"};
  int trials = 200;
  std::vector<int> threads = {1, 2};
  std::string log_dir = "auto_schedule_logs";
  bool resume = false, no_tune = false;
  std::string tvm_python;
  int repeat = 7;
  double min_repeat_ms = 50;
  double timeout_s = 30;
  double settle_ms = 200;
  bool best = false, verbose = false;
  std::string json;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "auto_schedule";
  c.usage = "[options]";
  c.synopsis = "auto-scheduled kernels vs templates, vs pattern schedules and vs TVM MetaSchedule";
  c.options = {
      {"--sections", "LIST", "any of template,pattern,tvm (default all)"},
      {"--trials", "N", "tuning trials of every kernel, loom's auto and template alike, and TVM's (default 200)"},
      {"--threads", "LIST", "thread counts (default 1,2)"},
      {"--log-dir", "DIR", "tuning logs, one JSON-lines file per workload (default auto_schedule_logs)"},
      {"--resume", "", "reuse existing logs: only the trials missing up to N are measured"},
      {"--no-tune", "", "do not tune; build each kernel from its log (default config if none)"},
      {"--tvm-python", "PY",
       "a Python that imports tvm, for section tvm (default: $LOOM_TVM_PYTHON, else /tmp/tvmvenv/bin/python)"},
      {"--repeat", "R", "timed repeats per measurement; the median is reported (default 7)"},
      {"--min-repeat-ms", "MS", "the tuner's min_repeat_ms (default 50)"},
      {"--timeout-s", "S", "the tuner's limit to build, and to run, one candidate (default 30)"},
      {"--settle-ms", "MS", "pause before each multi-threaded timed block (default 200)"},
      {"--best", "", "report the fastest repeat instead of the median (for loaded machines)"},
      {"--json", "FILE", "also write the results as JSON"},
      {"--verbose", "", "the tuners' progress lines"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  if (a.has("--sections")) o.sections = bench::split_list(a.str("--sections"), ',');
  for (const auto& s : o.sections)
    if (s != "template" && s != "pattern" && s != "tvm")
      a.usage_error("--sections: unknown section '{}' (expected template, pattern, tvm)", s);
  o.trials = int(a.integer("--trials", o.trials, 1, 1 << 30));
  bench::int_list_option(a, "--threads", &o.threads);
  o.log_dir = a.str("--log-dir", o.log_dir);
  o.resume = a.has("--resume");
  o.no_tune = a.has("--no-tune");
  if (o.resume && o.no_tune) a.usage_error("--resume and --no-tune exclude each other");
  const char* env = std::getenv("LOOM_TVM_PYTHON");
  o.tvm_python = a.str("--tvm-python", env ? env : "/tmp/tvmvenv/bin/python");
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 1000));
  o.min_repeat_ms = a.number("--min-repeat-ms", o.min_repeat_ms, 0);
  o.timeout_s = a.number("--timeout-s", o.timeout_s, 0.001);
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  o.best = a.has("--best");
  o.verbose = a.has("--verbose");
  o.json = a.str("--json");
  return o;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

/// One benchmarked kernel: its auto-scheduled task and, in section template, the template task
/// of the same computation. `tvm` describes it to bench/auto_schedule_tvm.py.
struct Kernel {
  std::string section, label;
  tuner::Task auto_task;
  std::optional<tuner::Task> template_task;
  bool compute_bound = false;
  nlohmann::json tvm;
};

te::ops::TensorType f32(std::vector<int64_t> shape) { return {std::move(shape), DataType::Float(32), ""}; }

Kernel conv_kernel(const std::string& label, int64_t c, int64_t hw, int64_t k, bool depthwise) {
  const Target host = Target::host();
  const std::vector<int64_t> weight = {k, depthwise ? 1 : c, 3, 3};
  te::ops::Attrs attrs = {{"padding", std::vector<int64_t>{1, 1}}};
  if (depthwise) attrs["groups"] = c;
  OpGraph g = OpGraph::single("conv2d", {f32({1, c, hw, hw}), f32(weight)}, attrs);
  std::map<std::string, std::string> tattrs = {{"stride", "1"}, {"pad", "1"}};
  tuner::Task t = depthwise ? tuner::Task::create("depthwise_conv2d_nchw", {1, c, hw, hw, 3, 3}, host, "float32", tattrs)
                            : tuner::Task::create("conv2d_nchw", {1, c, hw, hw, k, 3, 3}, host, "float32", tattrs);
  nlohmann::json tvm = {{"op", depthwise ? "depthwise_conv2d" : "conv2d"}, {"c", c}, {"hw", hw}, {"k", k}};
  return {"template", label, tuner::Task::create_auto(g, host), t, true, tvm};
}

std::vector<Kernel> kernels(const Options& o) {
  const Target host = Target::host();
  std::vector<Kernel> out;
  if (has(o.sections, "template")) {
    OpGraph mm = OpGraph::single("matmul", {f32({1024, 1024}), f32({1024, 1024})});
    out.push_back({"template", "matmul 1024x1024x1024", tuner::Task::create_auto(mm, host),
                   tuner::Task::create("matmul", {1024, 1024, 1024}, host), true,
                   {{"op", "matmul"}, {"m", 1024}, {"n", 1024}, {"k", 1024}}});
    for (auto [c, hw] : std::vector<std::pair<int64_t, int64_t>>{{64, 56}, {128, 28}, {256, 14}, {512, 7}})
      out.push_back(conv_kernel(fmt::format("resnet18 conv3x3 {}x{}x{}", c, hw, hw), c, hw, c, false));
    out.push_back(conv_kernel("mobilenetv2 depthwise 144x56x56", 144, 56, 144, true));
  }
  if (has(o.sections, "pattern") || has(o.sections, "tvm")) {
    auto add = [&](const std::string& label, OpGraph g, nlohmann::json tvm) {
      out.push_back({"pattern", label, tuner::Task::create_auto(g, host), std::nullopt, false, std::move(tvm)});
    };
    add("bert layer_norm [128,768]", OpGraph::single("layer_norm", {f32({128, 768}), f32({768}), f32({768})}),
        {{"op", "layer_norm"}, {"shape", {128, 768}}});
    add("bert softmax [12,128,128]", OpGraph::single("softmax", {f32({12, 128, 128})}),
        {{"op", "softmax"}, {"shape", {12, 128, 128}}});
    OpGraph gelu;
    gelu.inputs = {f32({128, 3072}), f32({3072})};
    gelu.outputs = {gelu.add("gelu", {gelu.add("add", {0, 1})})};
    add("bert bias+gelu [128,3072]", gelu, {{"op", "bias_gelu"}, {"shape", {128, 3072}}});
    add("bert head transpose [1,128,12,64]",
        OpGraph::single("transpose", {f32({1, 128, 12, 64})}, {{"axes", std::vector<int64_t>{0, 2, 1, 3}}}),
        {{"op", "transpose"}, {"shape", {1, 128, 12, 64}}, {"axes", {0, 2, 1, 3}}});
    add("bert reduce_mean [1,128,768] axis -1",
        OpGraph::single("reduce_mean", {f32({1, 128, 768})},
                        {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(1)}}),
        {{"op", "reduce_mean"}, {"shape", {1, 128, 768}}});
    add("mobilenetv2 global pool [1,1280,7,7]", OpGraph::single("global_avg_pool2d", {f32({1, 1280, 7, 7})}),
        {{"op", "global_avg_pool2d"}, {"shape", {1, 1280, 7, 7}}});
  }
  return out;
}

std::string log_of(const Options& o, const tuner::Task& t) {
  return (fs::path(o.log_dir) / (bench::sanitize(t.key()) + ".jsonl")).string();
}

void tune(const Options& o, const tuner::Task& t, const std::string& label) {
  bench::TuneRequest r;
  r.tag = "auto_schedule";
  r.label = label;
  r.trials = o.trials;
  r.resume = o.resume;
  r.no_tune = o.no_tune;
  r.verbose = o.verbose;
  r.measure.min_repeat_ms = o.min_repeat_ms;
  r.measure.timeout_s = o.timeout_s;
  bench::tune_xgb(t, log_of(o, t), r);
}

/// A built kernel: its function and the module that holds it.
struct Built {
  runtime::Module module;
  runtime::PackedFunc f;
  std::string config;
};

Built build(const Options& o, const tuner::Task& t, bool tuned) {
  records::ApplyHistoryBest best;
  const std::string log = log_of(o, t);
  if (tuned && fs::exists(log)) best = records::ApplyHistoryBest(log);
  std::optional<records::Record> rec = tuner::best_record(t, best);
  Built b;
  b.module = tuner::build_best(t, best, nullptr, "kernel");
  b.f = b.module.get_function("kernel");
  b.config = rec ? std::to_string(rec->config.index) : "default";
  return b;
}

std::vector<runtime::NDArray> make_args(const tuner::Task& t) {
  std::vector<runtime::NDArray> args;
  uint64_t seed = 1;
  for (const te::Tensor& x : t.compute()) {
    std::vector<int64_t> shape;
    for (const te::Expr& d : x.shape()) shape.push_back(*te::as_const_int(d));
    runtime::NDArray a = runtime::NDArray::empty(shape, x.dtype());
    if (x.op()->kind == te::OpKind::kPlaceholder) a.fill_random(seed++, -1, 1);
    args.push_back(a);
  }
  return args;
}

void call(const runtime::PackedFunc& f, const std::vector<runtime::NDArray>& a) {
  std::vector<DLTensor*> dl;
  for (const auto& x : a) dl.push_back(x.dltensor());
  f.call(dl);
}

std::vector<int64_t> shape_of(const runtime::NDArray& a) { return a.shape(); }

int64_t bytes_of(const std::vector<runtime::NDArray>& args) {
  int64_t n = 0;
  for (const auto& a : args) n += a.numel() * int64_t(a.dtype().bytes());
  return n;
}

struct Result {
  std::string section, label, peer;
  int threads = 0;
  bool compute_bound = false;
  double amount = 0;            // flop or bytes of one run
  double auto_s = 0, peer_s = 0;  // seconds per run
  std::string auto_config, peer_config;
  double max_rel_err = 0;
};

constexpr double kTolerance = 1e-3;

/// Runs bench/auto_schedule_tvm.py on the pattern kernels at each thread count: seconds per run
/// of MetaSchedule's best schedule, by label and thread count (empty with a note on stdout when
/// there is no TVM).
std::map<std::pair<std::string, int>, double> tvm_times(const Options& o, const std::vector<Kernel>& ks,
                                                       std::string* note) {
  std::map<std::pair<std::string, int>, double> out;
  const std::string script = (fs::path(LOOM_SOURCE_DIR) / "bench" / "auto_schedule_tvm.py").string();
  if (o.tvm_python.empty() || !fs::exists(o.tvm_python) ||
      std::system(fmt::format("'{}' '{}' --check >/dev/null 2>&1", o.tvm_python, script).c_str()) != 0) {
    *note = fmt::format(
        "section tvm skipped: '{}' cannot import tvm's MetaSchedule and xgboost (python3 -m venv /tmp/tvmvenv && "
        "/tmp/tvmvenv/bin/pip install apache-tvm xgboost psutil, or --tvm-python PY)",
        o.tvm_python);
    return out;
  }
  nlohmann::json spec = {{"trials", o.trials}, {"threads", o.threads}, {"repeat", o.repeat},
                         {"work_dir", (fs::path(o.log_dir) / "tvm").string()}, {"kernels", nlohmann::json::array()}};
  for (const Kernel& k : ks)
    if (k.section == "pattern") spec["kernels"].push_back({{"label", k.label}, {"kernel", k.tvm}});
  const fs::path in = fs::path(o.log_dir) / "tvm_spec.json", res = fs::path(o.log_dir) / "tvm_results.json";
  std::ofstream(in) << spec.dump(1);
  const std::string cmd = fmt::format("'{}' '{}' '{}' '{}'{}", o.tvm_python, script, in.string(), res.string(),
                                      o.verbose ? "" : " >/dev/null");
  std::fprintf(stderr, "[auto_schedule] tvm: %s\n", cmd.c_str());
  if (std::system(cmd.c_str()) != 0 || !fs::exists(res)) {
    *note = "section tvm failed: " + cmd + " (rerun with --verbose)";
    return out;
  }
  nlohmann::json r = nlohmann::json::parse(std::ifstream(res));
  for (const auto& row : r["results"]) out[{row["label"].get<std::string>(), row["threads"].get<int>()}] = row["seconds"];
  *note = fmt::format("TVM {} MetaSchedule, {} trials a kernel, XGB cost model", r.value("tvm", "?"), o.trials);
  return out;
}

}  // namespace

int run(const Options& o) {
  fs::create_directories(o.log_dir);
  std::vector<Kernel> ks = kernels(o);
  const bool loom_sections = has(o.sections, "template") || has(o.sections, "pattern");

  // All tuning first (the measurer forks workers; nothing else runs meanwhile).
  if (loom_sections)
    for (const Kernel& k : ks) {
      tune(o, k.auto_task, k.label + " (auto)");
      if (k.template_task) tune(o, *k.template_task, k.label + " (template)");
    }
  std::string tvm_note;
  std::map<std::pair<std::string, int>, double> tvm;
  if (has(o.sections, "tvm")) tvm = tvm_times(o, ks, &tvm_note);

  std::vector<Result> results;
  bool ok = true;
  for (const Kernel& k : ks) {
    const bool with_pattern = k.section == "pattern" && has(o.sections, "pattern");
    const bool with_tvm = k.section == "pattern" && !tvm.empty();
    if (k.section == "pattern" && !with_pattern && !with_tvm) continue;
    Built a = build(o, k.auto_task, true);
    Built p = k.template_task ? build(o, *k.template_task, true) : build(o, k.auto_task, false);
    std::vector<runtime::NDArray> args = make_args(k.auto_task), pargs = args;
    if (k.template_task) {
      pargs = make_args(*k.template_task);
      LOOM_CHECK(pargs.size() == args.size(), "auto_schedule: {}: the template takes {} arguments, auto {}", k.label,
                 pargs.size(), args.size());
      for (size_t i = 0; i < args.size(); ++i)
        LOOM_CHECK(shape_of(args[i]) == shape_of(pargs[i]), "auto_schedule: {}: argument {} differs in shape",
                   k.label, i);
      for (size_t i = 0; i + 1 < args.size(); ++i) pargs[i] = args[i];
    } else {
      pargs.back() = runtime::NDArray::empty(shape_of(args.back()), args.back().dtype());
    }
    runtime::NDArray& out = args.back();
    runtime::NDArray& pout = pargs.back();
    for (int nt : o.threads) {
      runtime::ThreadPool::global().resize(nt);
      bench::poison(out.data<float>(), out.numel());
      bench::poison(pout.data<float>(), pout.numel());
      call(a.f, args);
      call(p.f, pargs);
      const double err = bench::max_rel_err(out.data<float>(), pout.data<float>(), out.numel());
      if (!(err < kTolerance)) {
        std::fprintf(stderr, "auto_schedule: %s, %d thread(s): auto and %s differ (max rel err %.3e)\n",
                     k.label.c_str(), nt, k.template_task ? "template" : "pattern", err);
        ok = false;
        continue;
      }
      std::vector<double> t = bench::interleaved_times({[&] { call(a.f, args); }, [&] { call(p.f, pargs); }}, o.repeat,
                                                       20, nt > 1 ? o.settle_ms : 0, o.best);
      Result r;
      r.section = k.section;
      r.label = k.label;
      r.threads = nt;
      r.compute_bound = k.compute_bound;
      r.amount = k.compute_bound ? k.auto_task.flop() : double(bytes_of(args));
      r.auto_s = t[0];
      r.auto_config = a.config;
      r.max_rel_err = err;
      if (with_pattern || k.template_task) {
        r.peer = k.template_task ? "template" : "pattern";
        r.peer_s = t[1];
        r.peer_config = k.template_task ? p.config : "default";
        results.push_back(r);
      }
      if (with_tvm)
        if (auto it = tvm.find({k.label, nt}); it != tvm.end()) {
          r.section = "tvm";
          r.peer = "TVM";
          r.peer_s = it->second;
          r.peer_config = "MetaSchedule";
          results.push_back(r);
        }
      std::fprintf(stderr, "[auto_schedule] %s, %d thread(s): auto %.3f ms\n", k.label.c_str(), nt, t[0] * 1e3);
    }
  }

  std::printf("loom auto_schedule: target %s (%s), float32, %s of %d interleaved repeats, %d trials a kernel\n\n",
              Target::host().str().c_str(), tuner::host_cpu_name().c_str(), o.best ? "fastest" : "median", o.repeat,
              o.trials);
  const std::map<std::string, std::pair<std::string, double>> target = {
      {"template", {"auto vs template at equal trials", 0.95}},
      {"pattern", {"auto vs the untuned pattern schedule", 1.3}},
      {"tvm", {"auto vs TVM MetaSchedule at equal trials", 1.0}}};
  for (const std::string& section : {"template", "pattern", "tvm"}) {
    if (section == "tvm" && !tvm_note.empty() && has(o.sections, "tvm")) std::printf("%s\n", tvm_note.c_str());
    std::vector<const Result*> rows;
    for (const Result& r : results)
      if (r.section == section) rows.push_back(&r);
    if (rows.empty()) continue;
    std::printf("%s (target >= %.2fx)\n", target.at(section).first.c_str(), target.at(section).second);
    std::printf("%-38s %3s %12s %12s %8s %10s %10s %9s\n", "kernel", "thr", "auto", rows[0]->peer.c_str(), "ratio",
                "auto cfg", "peer cfg", "max err");
    std::map<int, std::vector<double>> ratios;
    for (const Result* r : rows) {
      const double ra = r->amount / r->auto_s * 1e-9, rp = r->amount / r->peer_s * 1e-9;
      const char* unit = r->compute_bound ? "GFLOP/s" : "GB/s";
      const double q = r->peer_s / r->auto_s;
      ratios[r->threads].push_back(q);
      std::printf("%-38s %3d %6.1f %-5s %6.1f %-5s %7.2fx %10s %10s %9.1e\n", r->label.c_str(), r->threads, ra, unit, rp,
                  unit, q, r->auto_config.c_str(), r->peer_config.c_str(), r->max_rel_err);
    }
    for (const auto& [nt, qs] : ratios)
      std::printf("%-38s %3d %25s %7.2fx (min %.2fx)\n", "geometric mean", nt, "", bench::geomean(qs),
                  *std::min_element(qs.begin(), qs.end()));
    std::printf("\n");
  }
  std::printf("(ratio = peer time / auto time; cfg = the config index of the best record, default: untuned)\n");

  if (!o.json.empty()) {
    nlohmann::json js = {{"benchmark", "auto_schedule"}, {"target", Target::host().str()},
                         {"cpu", tuner::host_cpu_name()}, {"trials", o.trials}, {"results", nlohmann::json::array()}};
    for (const Result& r : results)
      js["results"].push_back({{"section", r.section}, {"kernel", r.label}, {"threads", r.threads}, {"peer", r.peer},
                               {"auto_s", r.auto_s}, {"peer_s", r.peer_s}, {"ratio", r.peer_s / r.auto_s},
                               {"auto_config", r.auto_config}, {"max_rel_err", r.max_rel_err}});
    std::ofstream(o.json) << js.dump(1) << "\n";
  }
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  cli::Command c = command();
  c.run = [](const cli::Args& a) { return run(options_from(a)); };
  return cli::run_command(c, {argv + 1, argv + argc});
}
