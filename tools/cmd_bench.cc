// `loom bench`: the default schedule, the best tuned record, a deployed library and the peer
// library side by side, their outputs checked against each other before timing.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include "cli.h"
#include "loom/codegen/build.h"
#include "loom/loom.h"
#include "loom/runtime/thread_pool.h"
#include "peers.h"

namespace loom::cli {
namespace {

using runtime::NDArray;

/// One contender: how to run it once, the output array it writes, and its timing.
struct Contender {
  std::string role;   // "default", "tuned", "deployed", "peer"
  std::string label;  // "default schedule (config 12)"
  std::function<void()> run;
  NDArray out;
  double seconds = NAN;
  int64_t config = -1;
  std::string source;  // log or library path
};

std::vector<int64_t> shape_of(const te::Tensor& t) {
  std::vector<int64_t> s;
  for (const auto& e : t.shape()) s.push_back(*te::as_const_int(e));
  return s;
}

/// Median seconds per call: one warm-up call, then `repeat` timed repeats, each of enough
/// calls to last at least `min_ms`.
double time_it(const std::function<void()>& f, int repeat, double min_ms) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  f();
  double once = std::chrono::duration<double>(Clock::now() - t0).count();
  int number = std::max(1, int(std::ceil(min_ms * 1e-3 / std::max(once, 1e-9))));
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    auto s = Clock::now();
    for (int i = 0; i < number; ++i) f();
    times.push_back(std::chrono::duration<double>(Clock::now() - s).count() / number);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// The OpenMP wait policy oneDNN's threads run with (tools/loom.cc sets passive for bench).
std::string omp_wait_policy() {
  const char* p = std::getenv("OMP_WAIT_POLICY");
  return p && *p ? p : "unset (OpenMP's default: spin a while, then sleep)";
}

/// Throws loom::Error naming the first element where `got` and `want` differ by more than
/// a tolerance relative to the output's magnitude (integer outputs: where they differ).
void check_close(const std::string& what, const NDArray& got, const std::string& ref_name, const NDArray& want) {
  if (!want.dtype().is_float()) {
    for (int64_t i = 0; i < want.numel(); ++i)
      if (got.get(i) != want.get(i))
        fail("{}: output element {} is {} but {} computes {}", what, i, got.get(i), ref_name, want.get(i));
    return;
  }
  const size_t n = want.nbytes() / sizeof(float);
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  double scale = 0;
  for (size_t i = 0; i < n; ++i) scale += std::abs(w[i]);
  scale = n ? scale / double(n) : 0;
  for (size_t i = 0; i < n; ++i) {
    double tol = 1e-3 * (std::abs(w[i]) + scale) + 1e-6;
    if (!(std::abs(double(g[i]) - double(w[i])) <= tol))
      fail("{}: output element {} is {} but {} computes {} (tolerance {:.2g})", what, i, g[i], ref_name, w[i], tol);
  }
}

int run(const Args& a) {
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = int(a.integer("--threads", hw, 1, 1024));
  // Before anything starts a thread pool: a loaded library's runtime reads this on first use.
  ::setenv("LOOM_NUM_THREADS", std::to_string(threads).c_str(), 1);
  runtime::ThreadPool::global().resize(threads);
  set_peer_threads(threads);

  tuner::Task task = task_from(a);
  if (task.target().is_cuda()) {
    require_gpu();
    fail("loom bench times kernels on the CPU, with host arrays; it cannot time --target cuda (bench/gpu_bench "
         "times loom's CUDA kernels against cuBLAS and cuDNN)");
  }
  const int repeat = int(a.integer("--repeat", 10, 1, 100000));
  const double min_ms = a.number("--min-repeat-ms", 20, 0);
  const std::vector<std::string> logs = a.all("--log");
  for (const std::string& f : logs) require_file("--log", f);
  const std::string so = a.str("--so");
  if (a.has("--so")) require_file("--so", so);
  const bool json = a.has("--json");
  const std::string op = function_name(task);
  std::ostream* warn = &std::cerr;

  // Arguments, shared by every contender: random inputs, one output array each.
  tuner::Instance def_inst = task.instantiate_default();
  std::vector<NDArray> inputs;
  te::Tensor out_tensor;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const te::Tensor& t : def_inst.args) {
    if (t.op()->kind != te::OpKind::kPlaceholder) {
      LOOM_CHECK(!out_tensor.defined(), "bench: {} has more than one output; only one is supported", op);
      out_tensor = t;
      continue;
    }
    NDArray arr = NDArray::empty(shape_of(t), t.dtype());
    if (t.dtype() == DataType::Float(32)) {
      float* p = arr.data<float>();
      for (size_t i = 0; i < arr.nbytes() / sizeof(float); ++i) p[i] = dist(rng);
    } else {
      // Integers over the whole 8-bit range (int8 templates), else small.
      const DataType dt = t.dtype();
      const bool byte = dt.bits() == 8;
      arr.fill_random(1 + inputs.size(), dt.is_uint() ? 0 : byte ? -128 : -1000, dt.is_uint() ? (byte ? 255 : 1000) : byte ? 127 : 1000);
    }
    inputs.push_back(arr);
  }
  auto new_output = [&] { return NDArray::empty(shape_of(out_tensor), out_tensor.dtype()); };
  auto call_args = [&](const NDArray& out) {
    std::vector<DLTensor*> v;
    for (const NDArray& x : inputs) v.push_back(x.dltensor());
    v.push_back(out.dltensor());
    return v;
  };

  std::vector<Contender> cs;
  std::vector<runtime::Module> modules;  // keep the code the functions point into
  auto add_module = [&](std::string role, std::string label, runtime::Module m, const std::string& fname,
                        int64_t config, std::string source) {
    modules.push_back(m);
    runtime::PackedFunc f = m.get_function(fname);
    Contender c{std::move(role), std::move(label), nullptr, new_output(), NAN, config, std::move(source)};
    std::vector<DLTensor*> args = call_args(c.out);
    c.run = [f, args] { f.call(args); };
    cs.push_back(std::move(c));
  };

  Chosen def = default_config(task);
  add_module("default", fmt::format("default schedule (config {})", def.index),
             codegen::build(def.instance.schedule, def.instance.args, task.target(), op), op, def.index, "");
  if (a.has("--config")) {
    const int64_t index = a.integer("--config", 0, 0, task.space().size() - 1);
    tuner::Instance inst = task.instantiate(index);
    add_module("config", fmt::format("config {} (--config)", index),
               codegen::build(inst.schedule, inst.args, task.target(), op), op, index, "");
  }
  std::optional<records::Record> tuned_record;
  if (!logs.empty()) {
    Chosen best = choose_config(task, logs, warn);
    if (best.record) {
      tuned_record = best.record;
      add_module("tuned", fmt::format("best record (config {})", best.index),
                 codegen::build(best.instance.schedule, best.instance.args, task.target(), op), op, best.index, fmt::format("{}", fmt::join(logs, ",")));
    }
  }
  if (!so.empty()) {
    runtime::Module lib = runtime::Module::load(so);
    std::string fname = a.str("--name", op);
    std::vector<std::string> names = lib.function_names();
    if (!a.has("--name") && names.size() == 1) fname = names[0];
    add_module("deployed", "deployed " + so, lib, fname, -1, so);
  }
  std::function<void()> peer_compute;  // what is timed of a peer with layouts of its own
  std::string why_no_peer;
  std::optional<Peer> peer = a.has("--no-peer") ? std::nullopt : find_peer(task.workload(), &why_no_peer);
  if (a.has("--no-peer")) why_no_peer = "--no-peer";
  if (peer) {
    Contender c{"peer", peer->name, nullptr, new_output(), NAN, -1, ""};
    NDArray out = c.out;
    if (peer->compute) {
      // A peer in layouts of its own: its conversions run once, outside the timing.
      peer->prepare(inputs);
      auto compute = peer->compute;
      auto finish = peer->finish;
      c.run = [compute, finish, out] {
        compute();
        finish(out);
      };
      c.label += " (own layouts)";
      cs.push_back(std::move(c));
      peer_compute = compute;
    } else {
      auto f = peer->run;
      c.run = [f, &inputs, out] { f(inputs, out); };
      cs.push_back(std::move(c));
    }
  }

  // Correctness first: every contender against the peer, or against the default schedule.
  for (Contender& c : cs) c.run();
  const Contender& ref = peer ? cs.back() : cs.front();
  for (const Contender& c : cs) {
    if (&c != &ref) check_close(c.label, c.out, ref.label, ref.out);
  }

  for (Contender& c : cs) c.seconds = time_it(c.role == "peer" && peer_compute ? peer_compute : c.run, repeat, min_ms);

  const double flop = task.flop();
  auto find = [&](const std::string& role) -> const Contender* {
    for (const Contender& c : cs) {
      if (c.role == role) return &c;
    }
    return nullptr;
  };
  auto gflops = [&](const Contender* c) { return c ? flop / c->seconds * 1e-9 : NAN; };
  auto ratio = [&](const std::string& x, const std::string& y) -> std::optional<double> {
    const Contender *cx = find(x), *cy = find(y);
    if (!cx || !cy) return std::nullopt;
    return cy->seconds / cx->seconds;
  };
  const char* roles[] = {"default", "config", "tuned", "deployed", "peer"};

  if (json) {
    nlohmann::json j;
    j["workload"] = task.key();
    j["op"] = op;
    j["shape"] = task.workload().shape;
    j["target"] = task.target().str();
    j["threads"] = threads;
    j["repeat"] = repeat;
    j["flop"] = flop;
    j["checked_against"] = ref.role;
    for (const char* role : roles) {
      const Contender* c = find(role);
      if (!c) {
        j[role] = nullptr;
        continue;
      }
      nlohmann::json e = {{"name", c->label}, {"gflops", gflops(c)}, {"ms", c->seconds * 1e3}};
      if (c->config >= 0) e["config"] = c->config;
      if (!c->source.empty()) e[c->role == "deployed" ? "path" : "log"] = c->source;
      if (c->role == "tuned" && tuned_record) e["logged_gflops"] = tuned_record->gflops();
      if (c->role == "peer") e["library"] = peer->key;
      if (c->role == "peer" && peer->key == "onednn") e["omp_wait_policy"] = omp_wait_policy();
      j[role] = e;
    }
    if (!peer) j["peer_unavailable"] = why_no_peer;
    nlohmann::json sp = nlohmann::json::object();
    const std::pair<const char*, const char*> pairs[] = {
        {"tuned", "default"},  {"tuned", "peer"},  {"deployed", "default"}, {"deployed", "peer"},
        {"config", "default"}, {"config", "peer"}, {"default", "peer"}};
    for (auto [x, y] : pairs) {
      auto r = ratio(x, y);
      sp[fmt::format("{}_vs_{}", x, y)] = r ? nlohmann::json(*r) : nlohmann::json(nullptr);
    }
    j["speedup"] = sp;
    std::cout << j.dump() << "\n";
    return 0;
  }

  std::cout << fmt::format("{} on {}, {} thread{}, median of {} repeats; outputs checked against the {}\n", task.key(),
                           task.target().str(), threads, threads == 1 ? "" : "s", repeat,
                           peer ? peer->name : "default schedule");
  std::cout << fmt::format("  {:<44} {:>9} {:>10} {:>11} {:>9}\n", "", "GFLOP/s", "ms", "vs default", "vs peer");
  auto cell = [](std::optional<double> r) { return r ? fmt::format("{:.2f}x", *r) : std::string("-"); };
  for (const char* role : roles) {
    const Contender* c = find(role);
    if (!c) {
      if (std::string(role) == "peer")
        std::cout << fmt::format("  {:<44} {:>9}   ({})\n", "peer library", "n/a", why_no_peer);
      else if (std::string(role) == "tuned" && !logs.empty())
        std::cout << fmt::format("  {:<44} {:>9}   (no record in the log)\n", "best record", "n/a");
      continue;
    }
    std::cout << fmt::format("  {:<44} {:>9.2f} {:>10.3f} {:>11} {:>9}\n", c->label, gflops(c), c->seconds * 1e3,
                             cell(ratio(role, "default")), cell(ratio(role, "peer")));
  }
  if (peer && peer->key == "onednn" && threads > 1)
    std::cout << fmt::format("note: oneDNN's OpenMP threads wait with OMP_WAIT_POLICY={}{}\n", omp_wait_policy(),
                             omp_wait_policy() == "passive"
                                 ? " (set by loom bench: spinning waits starve on a busy machine); on a quiet one "
                                   "oneDNN spins between parallel regions and runs faster at several threads: "
                                   "bench/int8 times both that way (docs/benchmarks.md)"
                                 : "");
  const char* best_role = find("deployed") ? "deployed" : find("tuned") ? "tuned" : nullptr;
  if (best_role) {
    auto vs_peer = ratio(best_role, "peer");
    std::cout << fmt::format("speed-up of the {}: {:.2f}x over the default schedule, {}\n",
                             std::string(best_role) == "deployed" ? "deployed library" : "best record",
                             *ratio(best_role, "default"),
                             vs_peer ? fmt::format("{:.2f}x the speed of {}", *vs_peer, peer->name) : "no peer library to compare");
  }
  return 0;
}

}  // namespace

Command bench_command() {
  Command c;
  c.name = "bench";
  c.synopsis = "time the default schedule, the best record, a built library and the peer library";
  c.usage = "--op NAME (--shape LIST | --input TYPE…) [--log FILE] [--so LIB.so] [--config N] [--threads N] [--json] "
            "[--repeat R]";
  c.description =
      "Times, on the same random inputs: the default config (the template's, or for an\n"
      "auto-scheduled operator the pattern schedule); with --config N, config N\n"
      "of the space (`loom show --config N` prints it); with --log, the best record (compiled\n"
      "now); with --so, a library written by `loom build` (loaded with\n"
      "runtime::Module::load); and the peer library of this build (OpenBLAS sgemm for matmul,\n"
      "batch_matmul and dense_bias_relu, oneDNN for the convolutions, oneDNN's u8s8s32 matmul\n"
      "and convolution for matmul_int8 and conv2d_nchwc_int8, timed in the layouts it picks,\n"
      "its conversions untimed; n/a otherwise). Every output is first checked against the\n"
      "peer's (or the default schedule's); a mismatch is an error (integer outputs must be\n"
      "equal). Reports the median GFLOP/s of each and their ratios; --json prints one JSON\n"
      "object with keys workload, target, threads, repeat, flop, default, config, tuned, deployed, peer\n"
      "(null when absent) and speedup. CPU targets only: --target cuda fails (saying first if there\n"
      "is no GPU or driver); bench/gpu_bench times loom's CUDA kernels.\n\n" + std::string(kWorkloadHelp) +
      "\nexample:\n"
      "  loom bench --op matmul --shape 1024,1024,1024 --log matmul.jsonl --so libmatmul.so";
  c.options = workload_options();
  std::vector<Option> more = {
      {"--log", "FILE", "tuning log(s): time the best record too", true},
      {"--so", "LIB.so", "a library written by loom build: time it too"},
      {"--config", "N", "time config N of the space too"},
      {"--name", "NAME", "the function to call in --so (default: its only one, or the operator's name)"},
      {"--threads", "N", "threads for loom and the peer (default: every core)"},
      {"--repeat", "R", "timed repeats; the median is reported (default: 10)"},
      {"--min-repeat-ms", "MS", "minimum duration of one timed repeat (default: 20)"},
      {"--no-peer", "", "do not run the peer library"},
      {"--json", "", "print one JSON object instead of the table"},
  };
  c.options.insert(c.options.end(), more.begin(), more.end());
  c.run = run;
  return c;
}

}  // namespace loom::cli
