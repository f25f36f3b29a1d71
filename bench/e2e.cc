// End to end against ONNX Runtime: ResNet-18, MobileNetV2, a BERT-base encoder layer, BERT-base's
// whole encoder (12 layers, with its attention mask) at sequence 128 and 384 and ViT-B/16
// (python/export_models.py: onnx.helper, deterministic weights), batch 1, imported from ONNX
// and compiled by loom three ways, next to ONNX Runtime's CPU provider with all graph
// optimizations, in one run. The real-model corpus's models (tests/onnx/corpus.json, exported by
// other projects' tools and shipped in PyPI wheels) run the same way, with the input shapes the
// corpus fixes (gen_corpus_cases.py --static). The builder models resnet18_builder and mobilenet_v2_builder are
// the graph builder's (examples/models/models.cc, its own weights): loom compiles its model
// file (MODEL_DIR/<model>.json, saved when missing) and ONNX Runtime runs that file converted by
// python/graph_to_onnx.py (MODEL_DIR/<model>.onnx). resnet18_int8 and mobilenet_v2_int8 are the
// CNNs quantized by ONNX Runtime's quantize_static (QDQ, per-channel int8 weights; export_models.py's
// quantize_qdq, as the int8 test cases are), which loom and ONNX Runtime both run; their outputs
// are checked to one quantization step. The variants:
//   untuned     level 3, every template on its default config
//   tuned64     with LOG_DIR/<model>.t64.jsonl  (loom tune-model --trials-per-task 64)
//   tuned_long  with LOG_DIR/<model>.long.jsonl (the same log continued to --long-trials-per-task)
// ONNX Runtime runs in a Python subprocess (python/ort_run.py --serve: one session, its own
// warm-up) that times blocks of runs on request; blocks of ONNX Runtime and of each loom
// variant alternate, so that all see the same machine state, and each reports the median of
// --repeat single-run latencies. Every variant's output is checked against ONNX Runtime's
// before timing. With --tune, missing logs are made first with `loom tune-model` (the trials
// and minutes it took are read back from the latency file next to each log).
//
//   bench/e2e [--models resnet18,mobilenet_v2,bert_layer,resnet18_builder,mobilenet_v2_builder,
//                       resnet18_int8,mobilenet_v2_int8,bert_base,bert_base_384,vit_b16]
//             [--threads 1,2] [--repeat 50]
//             [--model-dir DIR] [--log-dir DIR] [--tune] [--trials-per-task 64]
//             [--long-trials-per-task 256] [--save-dir DIR] [--json FILE]
#include <loom/graph_opt/compile.h>
#include <loom/graph_opt/onnx.h>
#include <loom/graph_opt/serialize.h>
#include <loom/runtime/npy.h>
#include <loom/runtime/thread_pool.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "bench_common.h"
#include "cli.h"
#include "examples/models/models.h"

using namespace loom;
namespace fs = std::filesystem;
using runtime::NDArray;

namespace {

using Clock = std::chrono::steady_clock;

const std::vector<std::string> kModels = {"resnet18",         "mobilenet_v2",         "bert_layer",
                                          "resnet18_builder", "mobilenet_v2_builder", "resnet18_int8",
                                          "mobilenet_v2_int8", "bert_base",            "bert_base_384",
                                          "vit_b16"};

bool is_builder_model(const std::string& model) { return model.ends_with("_builder"); }

/// The real-model corpus (tests/onnx/corpus.json): models other projects exported, from PyPI wheels.
const std::vector<std::string>& corpus_models() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    std::ifstream in(LOOM_SOURCE_DIR "/tests/onnx/corpus.json");
    if (!in) return v;
    const nlohmann::json corpus = nlohmann::json::parse(in);
    for (const auto& m : corpus.at("models")) v.push_back(m.at("name").get<std::string>());
    return v;
  }();
  return names;
}

bool is_corpus_model(const std::string& model) {
  return std::find(corpus_models().begin(), corpus_models().end(), model) != corpus_models().end();
}

struct Options {
  std::vector<std::string> models = {"resnet18", "mobilenet_v2", "bert_layer"};
  std::vector<int> threads = {1, 2};
  std::vector<std::string> variants = {"untuned", "tuned64", "tuned_long"};
  std::string model_dir = LOOM_BINARY_DIR "/e2e/models";
  std::string log_dir = LOOM_BINARY_DIR "/e2e/logs";
  std::string python = LOOM_BINARY_DIR "/venv/bin/python";
  std::string save_dir;
  std::string json;
  int repeat = 50;
  int block = 5;
  int warmup = 10;
  double settle_ms = 100;
  bool tune = false;
  int trials_per_task = 64;
  int long_trials_per_task = 256;
  int tune_jobs = 0;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "e2e";
  c.usage = "[options]";
  c.synopsis =
      "ResNet-18, MobileNetV2 and a BERT layer from ONNX (and the graph builder's CNNs): loom untuned and tuned "
      "against ONNX Runtime";
  c.description =
      "Imports each model's ONNX file (made with python/export_models.py into --model-dir when\n"
      "missing), compiles it with loom untuned and with the tuned logs of --log-dir, checks every\n"
      "variant's output against ONNX Runtime's and times them all next to ONNX Runtime (CPU\n"
      "provider, all graph optimizations, the same intra-op thread count) in alternating blocks.\n"
      "--tune makes the missing logs first with `loom tune-model` (64 trials per task, then the\n"
      "same log continued to --long-trials-per-task), which takes long: about a second per trial.\n"
      "resnet18_builder and mobilenet_v2_builder are the C++ graph builder's models\n"
      "(examples/models, 224x224, their own weights): loom compiles <model>.json (saved into\n"
      "--model-dir when missing), ONNX Runtime runs <model>.onnx, made from it by\n"
      "python/graph_to_onnx.py; their logs are <model>.t64.jsonl like the others' (the workloads\n"
      "are those of resnet18 and mobilenet_v2: a copy or link of their logs serves).";
  c.options = {
      {"--models", "LIST",
       "resnet18, mobilenet_v2, bert_layer, resnet18_builder, mobilenet_v2_builder, resnet18_int8, "
       "mobilenet_v2_int8, bert_base, bert_base_384, vit_b16, or a model of the real-model "
       "corpus (tests/onnx/corpus.json: ppocr_v4_rec, nudenet_320n, ddddocr_common, ...; its wheel downloaded into "
       "--model-dir/wheels, its input shapes fixed) (default: the first three)"},
      {"--threads", "LIST", "thread counts of loom and ONNX Runtime (default 1,2)"},
      {"--variants", "LIST", "any of untuned,tuned64,tuned_long (default all; a tuned one without its log is skipped)"},
      {"--repeat", "N", "timed runs of each, the median reported (default 50)"},
      {"--block", "N", "runs per block; blocks of ONNX Runtime and each variant alternate (default 5)"},
      {"--warmup", "N", "untimed runs of each before timing (default 10)"},
      {"--settle-ms", "MS", "pause before each block on more than one thread (default 100)"},
      {"--model-dir", "DIR",
       "<model>.onnx and <model>.input_0.npy (input_1.npy, … for more inputs), and <model>.json/.weights of the builder models (default "
       "build/e2e/models)"},
      {"--log-dir", "DIR", "<model>.t64.jsonl and <model>.long.jsonl (default build/e2e/logs)"},
      {"--python", "PY", "the Python with onnx and onnxruntime (default build/venv/bin/python)"},
      {"--tune", "", "make missing logs with loom tune-model first"},
      {"--trials-per-task", "N", "tuned64's trials per task when --tune makes it (default 64)"},
      {"--long-trials-per-task", "N", "tuned_long's trials per task in all when --tune makes it (default 256)"},
      {"--tune-jobs", "N", "--jobs of loom tune-model (default 0: one per core)"},
      {"--save-dir", "DIR", "also write each variant's library there (<model>.<variant>.so; `loom run --profile`)"},
      {"--json", "FILE", "write the results as JSON"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  if (a.has("--models")) o.models = bench::split_list(a.str("--models"), ',');
  for (const auto& m : o.models)
    if (std::find(kModels.begin(), kModels.end(), m) == kModels.end() && !is_corpus_model(m))
      a.usage_error("--models: unknown model '{}' (the models: {}, {})", m, fmt::join(kModels, ", "),
                    fmt::join(corpus_models(), ", "));
  bench::int_list_option(a, "--threads", &o.threads);
  for (int t : o.threads)
    if (t < 1 || t > 256) a.usage_error("--threads: {} is not a thread count", t);
  if (a.has("--variants")) o.variants = bench::split_list(a.str("--variants"), ',');
  for (const auto& v : o.variants)
    if (v != "untuned" && v != "tuned64" && v != "tuned_long") a.usage_error("--variants: unknown variant '{}'", v);
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 100000));
  o.block = int(a.integer("--block", o.block, 1, 100000));
  o.warmup = int(a.integer("--warmup", o.warmup, 0, 100000));
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  o.model_dir = a.str("--model-dir", o.model_dir);
  o.log_dir = a.str("--log-dir", o.log_dir);
  o.python = a.str("--python", o.python);
  o.save_dir = a.str("--save-dir");
  o.json = a.str("--json");
  o.tune = a.has("--tune");
  o.trials_per_task = int(a.integer("--trials-per-task", o.trials_per_task, 1, 1 << 20));
  o.long_trials_per_task = int(a.integer("--long-trials-per-task", o.long_trials_per_task, 1, 1 << 20));
  if (o.long_trials_per_task <= o.trials_per_task)
    a.usage_error("--long-trials-per-task ({}) must exceed --trials-per-task ({})", o.long_trials_per_task,
                  o.trials_per_task);
  o.tune_jobs = int(a.integer("--tune-jobs", 0, 0, 256));
  return o;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs `cmd` with its stdout on stderr; fails unless it exits 0 (or 1 when `may_fail`).
void run_or_fail(const std::string& cmd, bool may_fail = false) {
  std::cerr << "+ " << cmd << "\n";
  int status = std::system((cmd + " 1>&2").c_str());
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  LOOM_CHECK(rc == 0 || (may_fail && rc == 1), "bench/e2e: command failed (exit status {}): {}", rc, cmd);
  if (rc != 0) std::cerr << fmt::format("bench/e2e: warning: exit status {} from: {}\n", rc, cmd);
}

/// ONNX Runtime in a child process (python/ort_run.py --serve), timing blocks on request.
class OrtServer {
 public:
  OrtServer(const Options& o, const std::string& model, const std::vector<std::string>& inputs,
            const std::string& out_dir, int threads) {
    int to_child[2], from_child[2];
    LOOM_CHECK(::pipe(to_child) == 0 && ::pipe(from_child) == 0, "bench/e2e: pipe failed");
    pid_ = ::fork();
    LOOM_CHECK(pid_ >= 0, "bench/e2e: fork failed");
    if (pid_ == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      ::close(to_child[1]);
      ::close(from_child[0]);
      const std::string script = LOOM_SOURCE_DIR "/python/ort_run.py", t = std::to_string(threads),
                        w = std::to_string(o.warmup);
      std::vector<const char*> argv = {o.python.c_str(), script.c_str(), model.c_str(), "--inputs"};
      for (const std::string& i : inputs) argv.push_back(i.c_str());
      for (const char* a : {"--out", out_dir.c_str(), "--threads", t.c_str(), "--warmup", w.c_str(), "--serve"})
        argv.push_back(a);
      argv.push_back(nullptr);
      ::execv(o.python.c_str(), const_cast<char* const*>(argv.data()));
      std::perror(("bench/e2e: cannot run " + o.python).c_str());
      std::_Exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    in_ = ::fdopen(to_child[1], "w");
    out_ = ::fdopen(from_child[0], "r");
    for (std::string line = read_line(); line != "ready"; line = read_line()) std::cerr << "  ort: " << line << "\n";
  }
  ~OrtServer() {
    if (in_) std::fclose(in_);
    if (out_) std::fclose(out_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  OrtServer(const OrtServer&) = delete;
  OrtServer& operator=(const OrtServer&) = delete;

  /// Latencies (seconds) of n runs.
  std::vector<double> time(int n) {
    std::fprintf(in_, "%d\n", n);
    std::fflush(in_);
    std::istringstream is(read_line());
    std::vector<double> out;
    for (double ms; is >> ms;) out.push_back(ms * 1e-3);
    LOOM_CHECK(int(out.size()) == n, "bench/e2e: ONNX Runtime answered {} times for {} runs", out.size(), n);
    return out;
  }

 private:
  std::string read_line() {
    std::string line;
    for (int c; (c = std::fgetc(out_)) != EOF && c != '\n';) line += char(c);
    LOOM_CHECK(!line.empty() || !std::feof(out_), "bench/e2e: ONNX Runtime's process ended (see its errors above)");
    return line;
  }
  pid_t pid_ = -1;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
};

/// What the latency file next to a log says about the tuning runs that wrote it.
struct TuningCost {
  int trials = 0;
  double seconds = 0;
  int runs = 0;
};

TuningCost tuning_cost(const std::string& log) {
  TuningCost c;
  fs::path p(log);
  std::ifstream f(p.parent_path() / (p.stem().string() + ".latency.jsonl"));
  for (std::string line; std::getline(f, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("event", "") != "end") continue;
    c.trials += j.value("trials", 0);
    c.seconds += j.value("elapsed_s", 0.0);
    ++c.runs;
  }
  return c;
}

std::string log_for(const Options& o, const std::string& model, const std::string& variant) {
  return (fs::path(o.log_dir) / (model + (variant == "tuned64" ? ".t64.jsonl" : ".long.jsonl"))).string();
}

void make_logs(const Options& o, const std::string& model, const std::string& model_file) {
  fs::create_directories(o.log_dir);
  const std::string t64 = log_for(o, model, "tuned64"), lng = log_for(o, model, "tuned_long");
  auto tune = [&](const std::string& log, int per_task, bool resume) {
    // Exit status 1: some task has no successful trial; the log is still what compile uses.
    run_or_fail(fmt::format("{} tune-model {} --log {} --trials-per-task {} --jobs {}{}", quote(LOOM_CLI), quote(model_file),
                            quote(log), per_task, o.tune_jobs, resume ? " --resume" : ""),
                true);
  };
  const bool want_long = std::count(o.variants.begin(), o.variants.end(), "tuned_long") > 0;
  if (!fs::exists(t64)) tune(t64, o.trials_per_task, false);
  if (want_long && !fs::exists(lng)) {
    // Continued from the 64-trial log: a copy of it (and of its latency file) resumed.
    fs::copy_file(t64, lng);
    fs::path a(t64), b(lng);
    fs::path la = a.parent_path() / (a.stem().string() + ".latency.jsonl");
    if (fs::exists(la)) fs::copy_file(la, b.parent_path() / (b.stem().string() + ".latency.jsonl"));
    tune(lng, o.long_trials_per_task - o.trials_per_task, true);
  }
}

/// One model's files in --model-dir: what ONNX Runtime runs, its inputs (input_0.npy,
/// input_1.npy, …), and what loom compiles (the same ONNX file, or a builder model's own model file).
struct ModelFiles {
  std::string onnx, input, loom;
  /// input and the inputs after it that exist.
  std::vector<std::string> inputs() const {
    std::vector<std::string> v = {input};
    for (int k = 1;; ++k) {
      std::string next = input.substr(0, input.size() - std::string("0.npy").size()) + std::to_string(k) + ".npy";
      if (!fs::exists(next)) return v;
      v.push_back(next);
    }
  }
};

/// The model's files, made when missing: the exports by python/export_models.py; a builder
/// model saved from examples/models, converted by python/graph_to_onnx.py, and given a uniform
/// random input in [-1, 1).
ModelFiles model_files(const Options& o, const std::string& model) {
  const fs::path dir(o.model_dir);
  ModelFiles f{(dir / (model + ".onnx")).string(), (dir / (model + ".input_0.npy")).string(), ""};
  fs::create_directories(dir);
  if (is_corpus_model(model)) {
    f.loom = f.onnx;
    if (!fs::exists(f.onnx) || !fs::exists(f.input))
      run_or_fail(fmt::format("{} {} {} --static --all --only {} --wheels {}", quote(o.python),
                              quote(LOOM_SOURCE_DIR "/tests/onnx/gen_corpus_cases.py"), quote(o.model_dir), model,
                              quote((dir / "wheels").string())));
    return f;
  }
  if (!is_builder_model(model)) {
    f.loom = f.onnx;
    if (!fs::exists(f.onnx) || !fs::exists(f.input))
      run_or_fail(fmt::format("{} {} {} --models {}", quote(o.python), quote(LOOM_SOURCE_DIR "/python/export_models.py"),
                              quote(o.model_dir), model));
    return f;
  }
  f.loom = (dir / (model + ".json")).string();
  if (!fs::exists(f.loom)) {
    graph_opt::Graph g = model == "resnet18_builder" ? models::resnet18() : models::mobilenet_v2();
    std::cerr << fmt::format("bench/e2e: saving the builder's {} as {}\n", g.name, f.loom);
    graph_opt::save_graph(g, f.loom);
  }
  if (!fs::exists(f.onnx))
    run_or_fail(fmt::format("{} {} {} {}", quote(o.python), quote(LOOM_SOURCE_DIR "/python/graph_to_onnx.py"),
                            quote(f.loom), quote(f.onnx)));
  if (!fs::exists(f.input)) {
    graph_opt::Graph g = graph_opt::load_graph(f.loom);
    LOOM_CHECK(g.input_nodes().size() == 1, "bench/e2e: {} has {} inputs, not 1", f.loom, g.input_nodes().size());
    const graph_opt::TensorType& t = g.nodes[size_t(g.input_nodes()[0])].outputs[0];
    NDArray x = NDArray::empty(t.shape, t.dtype);
    x.fill_random(500);
    runtime::save_npy(f.input, x);
  }
  return f;
}

struct Variant {
  std::string name;
  runtime::Module module;
  size_t kernels = 0;
  int tuned = 0;
  TuningCost cost;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// max |a - b| and max |a - b| / max |b|.
std::pair<double, double> compare(const NDArray& a, const NDArray& b) {
  LOOM_CHECK(a.numel() == b.numel(), "bench/e2e: outputs of {} and {} elements", a.numel(), b.numel());
  double err = 0, scale = 0;
  const float *pa = a.data<float>(), *pb = b.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = std::fabs(double(pa[i]) - double(pb[i]));
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, double(std::fabs(pb[i])));
  }
  return {err, err / std::max(scale, 1e-30)};
}

/// The quantization step of a quantized model's output: the smallest gap between its distinct
/// values (they lie on the grid of the last DequantizeLinear's scale).
double output_step(const NDArray& b) {
  std::vector<float> v(b.data<float>(), b.data<float>() + b.numel());
  std::sort(v.begin(), v.end());
  double step = INFINITY;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] != v[i - 1]) step = std::min(step, double(v[i]) - double(v[i - 1]));
  return step;
}

int run(const cli::Args& a) {
  Options o = options_from(a);
  ::signal(SIGPIPE, SIG_IGN);  // a dead ONNX Runtime process is reported, not fatal
  LOOM_CHECK(fs::exists(o.python), "bench/e2e: no Python at {} (scripts/python_env makes build/venv; or --python)",
             o.python);
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  std::cout << fmt::format(
      "bench/e2e: batch 1; ONNX Runtime (CPU provider, all graph optimizations) in a subprocess; median of {} runs "
      "each ({} blocks of {}, ONNX Runtime and loom alternating) after {} warm-up runs; ratio = loom / ONNX Runtime "
      "(below 1: loom faster)\n",
      o.repeat, (o.repeat + o.block - 1) / o.block, o.block, o.warmup);
  for (const std::string& model : o.models) {
    const ModelFiles files = model_files(o, model);
    const std::string& onnx = files.onnx;
    const std::vector<std::string> inputs = files.inputs();
    if (o.tune) make_logs(o, model, files.loom);

    graph_opt::Graph g = graph_opt::load_model(files.loom);
    std::vector<NDArray> in;
    for (const std::string& f : inputs) in.push_back(runtime::load_npy(f));
    std::vector<Variant> variants;
    for (const std::string& name : o.variants) {
      std::shared_ptr<records::ApplyHistoryBest> best;
      TuningCost cost;
      graph_opt::CompileOptions copt;
      if (name != "untuned") {
        std::string log = log_for(o, model, name);
        if (!fs::exists(log)) {
          std::cout << fmt::format("{}: {}: skipped (no log {}; --tune makes it)\n", model, name, log);
          continue;
        }
        best = std::make_shared<records::ApplyHistoryBest>(log);
        cost = tuning_cost(log);
        // 3x3 convolutions as Winograd where the log's best Winograd record beats the direct one
        // (loom tune-model --winograd M adds those tasks; `loom compile --winograd auto`).
        copt.passes.layout.choose_winograd = graph_opt::winograd_if_faster(best, Target("llvm"));
      }
      graph_opt::CompileReport report;
      auto t0 = Clock::now();
      Variant v{name, graph_opt::compile(g, Target("llvm"), best.get(), copt, &report), report.kernels.size(), 0,
                cost};
      for (const auto& k : report.kernels) v.tuned += k.tuned;
      std::cerr << fmt::format("{}: {}: {} kernels ({} tuned), compiled in {:.1f} s\n", model, name, v.kernels, v.tuned,
                               std::chrono::duration<double>(Clock::now() - t0).count());
      if (!o.save_dir.empty()) {
        fs::create_directories(o.save_dir);
        v.module.export_library((fs::path(o.save_dir) / (model + "." + name + ".so")).string());
      }
      variants.push_back(std::move(v));
    }
    for (const Variant& v : variants)
      if (v.name != "untuned")
        std::cout << fmt::format("{}: {}: {} of {} kernels tuned; tuning took {} trials in {:.1f} min ({} run{} of "
                                 "loom tune-model)\n",
                                 model, v.name, v.tuned, v.kernels, v.cost.trials, v.cost.seconds / 60, v.cost.runs,
                                 v.cost.runs == 1 ? "" : "s");

    for (int threads : o.threads) {
      runtime::ThreadPool::global().resize(threads);
      const std::string ort_out = (fs::path(o.model_dir) / (model + ".ort_out")).string();
      OrtServer ort(o, onnx, inputs, ort_out, threads);
      NDArray want = runtime::load_npy((fs::path(ort_out) / "output_0.npy").string());

      std::vector<std::vector<NDArray>> outs;
      std::vector<runtime::PackedFunc> fns;
      std::vector<std::vector<DLTensor*>> args;
      for (const Variant& v : variants) {
        std::vector<NDArray> out;
        for (graph_opt::ValueRef r : g.outputs) out.push_back(NDArray::empty(g.type(r).shape, g.type(r).dtype));
        std::vector<DLTensor*> call;
        for (const NDArray& x : in) call.push_back(x.dltensor());
        for (const NDArray& x : out) call.push_back(x.dltensor());
        outs.push_back(std::move(out));
        args.push_back(call);
        fns.push_back(v.module.get_function("run"));
        for (int w = 0; w < std::max(1, o.warmup); ++w) fns.back().call(args.back());
      }
      // Blocks alternate: ONNX Runtime, then each loom variant; each run timed on its own.
      std::vector<double> ort_t;
      std::vector<std::vector<double>> loom_t(variants.size());
      auto settle = [&] {
        if (threads > 1 && o.settle_ms > 0)
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.settle_ms));
      };
      for (int done = 0; done < o.repeat; done += o.block) {
        const int n = std::min(o.block, o.repeat - done);
        settle();
        std::vector<double> t = ort.time(n);
        ort_t.insert(ort_t.end(), t.begin(), t.end());
        for (size_t i = 0; i < variants.size(); ++i) {
          settle();
          for (int k = 0; k < n; ++k) {
            auto s = Clock::now();
            fns[i].call(args[i]);
            loom_t[i].push_back(std::chrono::duration<double>(Clock::now() - s).count());
          }
        }
      }
      const double ort_ms = median(ort_t) * 1e3;
      std::cout << fmt::format("{:<20} {}t  {:<11} {:>9.3f} ms\n", model, threads, "ONNXRuntime", ort_ms);
      nlohmann::ordered_json row;
      row["model"] = model;
      row["threads"] = threads;
      row["onnxruntime_ms"] = ort_ms;
      for (size_t i = 0; i < variants.size(); ++i) {
        const double ms = median(loom_t[i]) * 1e3;
        auto [abs_err, rel_err] = compare(outs[i][0], want);
        // A quantized model's outputs may differ by one quantization step (a float residual add
        // or average pooling rounding to the neighbouring step).
        const bool quantized = model.ends_with("_int8");
        const bool mismatch = quantized ? abs_err > 1.001 * output_step(want) : rel_err > 1e-3;
        std::cout << fmt::format("{:<20} {}t  {:<11} {:>9.3f} ms  ratio {:>5.2f}  (vs ONNX Runtime: max abs err {:.1e}, "
                                 "rel {:.1e}{}{})\n",
                                 model, threads, variants[i].name, ms, ms / ort_ms, abs_err, rel_err,
                                 quantized ? fmt::format(", {:.2f} output steps", abs_err / output_step(want)) : "",
                                 mismatch ? " MISMATCH" : "");
        row[variants[i].name] = {{"ms", ms},
                                 {"ratio", ms / ort_ms},
                                 {"max_abs_err", abs_err},
                                 {"max_rel_err", rel_err},
                                 {"kernels", variants[i].kernels},
                                 {"tuned_kernels", variants[i].tuned},
                                 {"tuning_trials", variants[i].cost.trials},
                                 {"tuning_minutes", variants[i].cost.seconds / 60}};
      }
      results.push_back(row);
    }
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << results.dump(1) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Command c = command();
  c.run = run;
  return cli::run_command(c, std::vector<std::string>(argv + 1, argv + argc));
}
