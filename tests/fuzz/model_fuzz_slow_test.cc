// The model fuzzer: a few hundred mutations (byte-level and structure-aware, fuzz_mutators.h)
// of a small loom JSON model and a small ONNX model, each given to `loom compile` in a fresh
// process under a 2 GiB address-space limit and a 60 s wall-clock limit. A case fails when
// loom dies of a signal, runs out of time or memory, or exits with a status other than 0
// (compiled), 1 (refused with an error) or 2 (usage error); a library it compiles must also
// `loom run` (exit 0) under the same limits.
//
// Deterministic: LOOM_FUZZ_SEED (decimal or 0x-hex) picks the run, LOOM_FUZZ_CASES the number
// of cases per model kind, LOOM_FUZZ_CASE=N runs that one case only, LOOM_FUZZ_JOBS the cases
// run at a time (2), LOOM_FUZZ_VERBOSE=1 prints every case with loom's last line,
// LOOM_FUZZ_LOOM=PATH fuzzes another build's `loom`. A failing case is kept under
// <build>/fuzz_failures/ with a .txt saying how it was made and how to run it again.
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/process_util.h"
#include "fuzz/fuzz_mutators.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/serialize.h"
#include "loom/te/op_registry.h"

namespace loom::fuzz {
namespace {

namespace fs = std::filesystem;

/// The `loom` under test: this build's, or LOOM_FUZZ_LOOM (another build's, e.g. a branch's).
const std::string kLoom = std::getenv("LOOM_FUZZ_LOOM") && *std::getenv("LOOM_FUZZ_LOOM")
                              ? std::string(std::getenv("LOOM_FUZZ_LOOM"))
                              : std::string(LOOM_BINARY_DIR "/tools/loom");
constexpr double kTimeoutS = 60;
constexpr uint64_t kAddressSpace = uint64_t(2) << 30;
constexpr uint64_t kDefaultSeed = 0x10a3f0221;
constexpr int kDefaultCases = 200;

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  uint64_t x = std::strtoull(v, &end, 0);
  if (*end) throw std::runtime_error(fmt::format("{}='{}' is not a number", name, v));
  return x;
}

struct Config {
  uint64_t seed = env_u64("LOOM_FUZZ_SEED", kDefaultSeed);
  int cases = int(env_u64("LOOM_FUZZ_CASES", kDefaultCases));
  int jobs = std::max(1, int(env_u64("LOOM_FUZZ_JOBS", 2)));
  bool verbose = std::getenv("LOOM_FUZZ_VERBOSE") && *std::getenv("LOOM_FUZZ_VERBOSE");
  int only = std::getenv("LOOM_FUZZ_CASE") && *std::getenv("LOOM_FUZZ_CASE") ? int(env_u64("LOOM_FUZZ_CASE", 0)) : -1;
};

const Config& config() {
  static const Config c = [] {
    Config c;
    std::cout << fmt::format("model fuzzer: seed {:#x} (LOOM_FUZZ_SEED), {} cases per model (LOOM_FUZZ_CASES){}\n",
                             c.seed, c.cases,
                             c.only >= 0 ? fmt::format(", case {} only (LOOM_FUZZ_CASE)", c.only) : "");
    return c;
  }();
  return c;
}

// ---------------------------------------------------------------- the seed models

/// conv2d (8 channels, so alter_layout blocks it) -> relu -> add a per-channel constant ->
/// max_pool2d -> global_avg_pool2d -> flatten -> dense -> softmax on a 1x3x8x8 input: every
/// kind of kernel the compile step schedules, small enough to compile in about a second, and
/// valid for any input height and width from 2 up (so that changed shapes reach the kernels).
graph_opt::Graph seed_graph() {
  using namespace graph_opt;
  auto weights = [](std::vector<int64_t> shape, double scale) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * double((i * 37) % 17 - 8) / 8.0;
    return runtime::NDArray::from_vector(v, shape, DataType::Float(32));
  };
  GraphBuilder b("fuzz_net");
  Value x = b.input("data", {{1, 3, 8, 8}, DataType::Float(32), "NCHW"});
  Value y = b.conv2d(x, b.constant("conv.weight", weights({8, 3, 3, 3}, 0.5)),
                     b.constant("conv.bias", weights({8}, 0.1)), {.padding = {1, 1}}, "conv");
  y = b.relu(y, "relu");
  y = b.add(y, b.constant("shift", weights({8, 1, 1}, 0.2)), "add");
  y = b.max_pool2d(y, {.pool_size = {2, 2}, .strides = {2, 2}}, "pool");
  y = b.global_avg_pool2d(y, "gap");
  y = b.flatten(y, "flat");
  y = b.dense(y, b.constant("fc.weight", weights({2, 8}, 0.05)), b.constant("fc.bias", weights({2}, 0.1)), "fc");
  y = b.op("softmax", {y}, {}, "prob");
  b.output(y);
  return b.build();
}

/// The JSON seeds: the graph as written, and after the passes (blocked layouts, fused
/// groups, which `loom compile` takes as they are); each with and without recorded types
/// (without them a changed shape is inferred rather than refused).
std::vector<std::string> json_seeds() {
  graph_opt::Graph g = seed_graph(), fused = graph_opt::optimize(g);
  return {graph_opt::to_json(g), graph_opt::to_json(g, false), graph_opt::to_json(fused),
          graph_opt::to_json(fused, false)};
}

std::vector<std::string> onnx_seeds() { return {onnx_seed_model()}; }

// ---------------------------------------------------------------- running cases

struct Kind {
  std::string name, ext;
  std::vector<std::string> seeds;
  int mutation_kinds;                              // structure-aware ones
  std::function<void(Mutant&, Rng&, int)> mutate;  // one structure-aware mutation (kind, or -1: random)
};

Kind json_kind() {
  static const std::vector<std::string> ops = te::ops::op_names();
  return {"json", ".json", json_seeds(), kJsonMutationKinds,
          [](Mutant& m, Rng& r, int k) { mutate_json(m, r, ops, k); }};
}

Kind onnx_kind() {
  return {"onnx", ".onnx", onnx_seeds(), kOnnxMutationKinds, [](Mutant& m, Rng& r, int k) { mutate_onnx(m, r, k); }};
}

struct Case {
  Mutant mutant;
  std::vector<std::string> extra_args;
};

/// Case `i` of `kind`: a seed and one to three mutations. The first goes round the kinds of
/// mutation in turn (the structure-aware ones, then a byte-level one), so that a few hundred
/// cases try each about equally often; the others are drawn at random (a fifth byte-level).
/// Sometimes another --opt-level.
Case make_case(const Kind& kind, uint64_t seed, int i) {
  Rng rng(case_seed(seed, kind.name, uint64_t(i)));
  size_t which = size_t(rng.below(kind.seeds.size()));
  Case c{{kind.seeds[which], {fmt::format("seed model {}", which)}}, {}};
  int first = i % (kind.mutation_kinds + 1);
  if (first == kind.mutation_kinds)
    mutate_bytes(c.mutant, rng);
  else
    kind.mutate(c.mutant, rng, first);
  for (int k = 0, more = rng.chance(35) ? 1 + int(rng.below(2)) : 0; k < more; ++k) {
    if (rng.chance(20))
      mutate_bytes(c.mutant, rng);
    else
      kind.mutate(c.mutant, rng, -1);
  }
  if (rng.chance(20)) c.extra_args = {"--opt-level", std::to_string(rng.below(4))};
  return c;
}

struct Outcome {
  int status = 0;
  double seconds = 0;
  std::string problem;  // empty: the case passed
  std::string output;
};

std::string signal_name(int sig) {
  const char* s = sigabbrev_np(sig);
  return s ? fmt::format("SIG{}", s) : fmt::format("signal {}", sig);
}

/// What is wrong with how loom ended, or "".
std::string judge(int status, const std::string& output) {
  if (status == test::kTimedOut) return fmt::format("timeout: still running after {:.0f} s, killed", kTimeoutS);
  if (status < 0) return "could not start loom: " + output;
  if (status > 128) return fmt::format("killed by {}", signal_name(status - 128));
  if (status > 2) return fmt::format("exit status {} (not 0, 1 or 2)", status);
  for (const char* oom : {"bad_alloc", "out of memory", "Cannot allocate memory"})
    if (output.find(oom) != std::string::npos)
      return fmt::format("memory: an allocation failed under the {} GiB limit ('{}')", kAddressSpace >> 30, oom);
  return "";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string tail(const std::string& s, size_t n) { return s.size() <= n ? s : "…" + s.substr(s.size() - n); }

/// `loom run` of a compiled library: one run on random inputs, two threads.
std::vector<std::string> run_argv(const std::string& lib) {
  return {kLoom, "run", lib, "--repeat", "1", "--warmup", "0", "--threads", "2"};
}

/// `loom compile` of the case and, when that succeeds, `loom run` of the library (what the
/// compile made must run too), each under the limits.
Outcome run_case(const Kind& kind, const Case& c, const fs::path& dir, int i) {
  fs::path file = dir / fmt::format("{}_{}{}", kind.name, i, kind.ext);
  fs::path lib = dir / fmt::format("{}_{}.so", kind.name, i);
  std::ofstream(file, std::ios::binary) << c.mutant.bytes;
  std::vector<std::string> argv = {kLoom, "compile", file.string(), "-o", lib.string()};
  argv.insert(argv.end(), c.extra_args.begin(), c.extra_args.end());
  std::vector<std::string> env = test::host_env();
  // glibc reserves 64 MiB of address space per thread arena: on a machine with many cores
  // that alone would reach the limit, which is there to catch what loom allocates.
  env.push_back("MALLOC_ARENA_MAX=2");
  const test::RunLimits limits{.timeout_s = kTimeoutS, .address_space = kAddressSpace};
  Outcome o;
  auto t0 = std::chrono::steady_clock::now();
  o.status = test::run(argv, env, &o.output, limits);
  o.problem = judge(o.status, o.output);
  if (o.status == 0 && o.problem.empty()) {
    std::string out;
    int st = test::run(run_argv(lib.string()), env, &out, limits);
    o.output += "\n$ loom run\n" + out;
    std::string why = judge(st, out);
    if (st != 0)
      o.problem = "loom run of the compiled library: " + (why.empty() ? fmt::format("exit status {}", st) : why);
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::error_code ec;
  fs::remove(file, ec);
  fs::remove(lib, ec);
  fs::remove(fs::path(lib).replace_extension(".h"), ec);
  return o;
}

/// Keeps the failing case under <build>/fuzz_failures/; returns the report.
std::string keep_failure(const Kind& kind, const Case& c, const Outcome& o, int i) {
  const Config& cfg = config();
  fs::path dir = fs::path(LOOM_BINARY_DIR) / "fuzz_failures";
  fs::create_directories(dir);
  std::string stem = fmt::format("{}_seed{:#x}_case{}", kind.name, cfg.seed, i);
  fs::path file = dir / (stem + kind.ext);
  std::ofstream(file, std::ios::binary) << c.mutant.bytes;
  std::vector<std::string> argv = {kLoom, "compile", file.string(), "-o", (dir / (stem + ".so")).string()};
  argv.insert(argv.end(), c.extra_args.begin(), c.extra_args.end());
  std::string command = command_line(argv);
  if (o.problem.starts_with("loom run")) command += " && " + command_line(run_argv((dir / (stem + ".so")).string()));
  std::string report = fmt::format(
      "{} case {} (seed {:#x}): {} after {:.1f} s\n  mutations: {}\n  reproducer: {}\n  command: {}\n"
      "  again: LOOM_FUZZ_SEED={:#x} LOOM_FUZZ_CASE={} {} --gtest_filter=ModelFuzz.{}\n  output: {}\n",
      kind.name, i, cfg.seed, o.problem, o.seconds, fmt::join(c.mutant.steps, "; "), file.string(), command, cfg.seed,
      i, fs::read_symlink("/proc/self/exe").string(), kind.name == "json" ? "Json" : "Onnx", tail(o.output, 600));
  std::ofstream(dir / (stem + ".txt")) << report;
  return report;
}

void fuzz(const Kind& kind) {
  ASSERT_TRUE(fs::exists(kLoom)) << kLoom << " was not built (target loom_cli)";
  const Config& cfg = config();
  const fs::path& dir = test::scratch_dir("loom-fuzz");
  std::vector<int> ids;
  for (int i = 0; i < cfg.cases; ++i)
    if (cfg.only < 0 || cfg.only == i) ids.push_back(i);
  if (cfg.only >= cfg.cases) ids.push_back(cfg.only);
  std::vector<Outcome> outcomes(ids.size());
  std::vector<Case> cases(ids.size());
  std::atomic<size_t> next{0};
  auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t k; (k = next++) < ids.size();) {
      cases[k] = make_case(kind, cfg.seed, ids[k]);
      outcomes[k] = run_case(kind, cases[k], dir, ids[k]);
    }
  };
  std::vector<std::thread> pool;
  for (int j = 0; j < std::min<int>(cfg.jobs, int(ids.size())); ++j) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::map<int, int> by_status;
  size_t slowest = 0;
  std::string failures;
  int failed = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (cfg.verbose) {
      std::string last = outcomes[k].output;
      while (!last.empty() && last.back() == '\n') last.pop_back();
      last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
      std::cout << fmt::format("{} case {}: status {}, {:.2f} s; {}\n    {}\n", kind.name, ids[k], outcomes[k].status,
                               outcomes[k].seconds, fmt::join(cases[k].mutant.steps, "; "), tail(last, 300));
    }
    by_status[outcomes[k].status]++;
    if (outcomes[k].seconds > outcomes[slowest].seconds) slowest = k;
    if (!outcomes[k].problem.empty()) {
      ++failed;
      failures += keep_failure(kind, cases[k], outcomes[k], ids[k]);
    }
  }
  std::string statuses;
  for (auto [st, n] : by_status) statuses += fmt::format("{}{}: {}", statuses.empty() ? "" : ", ", st, n);
  std::cout << fmt::format("{}: {} cases in {:.1f} s (exit status: count: {}); slowest: case {}, {:.2f} s; {} failed\n",
                           kind.name, ids.size(), total, statuses, ids.empty() ? -1 : ids[slowest],
                           ids.empty() ? 0.0 : outcomes[slowest].seconds, failed);
  EXPECT_EQ(failed, 0) << failed << " of " << ids.size() << " " << kind.name << " cases failed (kept in "
                       << (fs::path(LOOM_BINARY_DIR) / "fuzz_failures").string() << "):\n"
                       << failures;
}

// The seeds must compile (and run), or the mutations would start from a refused model and
// test little.
TEST(ModelFuzz, SeedsCompileAndRun) {
  ASSERT_TRUE(fs::exists(kLoom)) << kLoom << " was not built (target loom_cli)";
  std::vector<Kind> kinds = {json_kind()};
  if (graph_opt::onnx_frontend_available()) kinds.push_back(onnx_kind());
  const fs::path& dir = test::scratch_dir("loom-fuzz");
  for (const Kind& kind : kinds)
    for (size_t s = 0; s < kind.seeds.size(); ++s) {
      Case c{{kind.seeds[s], {}}, {}};
      Outcome o = run_case(kind, c, dir, -1 - int(s));
      EXPECT_EQ(o.status, 0) << kind.name << " seed " << s << ":\n"
                             << o.output << "\n"
                             << kind.seeds[s].substr(0, 2000);
      EXPECT_EQ(o.problem, "");
      EXPECT_LT(o.seconds, 10) << kind.name << " seed " << s << " compiles too slowly for a fuzzer";
    }
}

// The same seed and case number give the same file; another seed gives other files.
TEST(ModelFuzz, CasesAreDeterministic) {
  Kind kind = json_kind();
  for (int i = 0; i < 20; ++i) {
    Case a = make_case(kind, 7, i), b = make_case(kind, 7, i);
    EXPECT_EQ(a.mutant.bytes, b.mutant.bytes) << i;
    EXPECT_EQ(a.mutant.steps, b.mutant.steps) << i;
  }
  int differ = 0;
  for (int i = 0; i < 20; ++i) differ += make_case(kind, 7, i).mutant.bytes != make_case(kind, 8, i).mutant.bytes;
  EXPECT_GT(differ, 10);
}

// The judge catches what it is there to catch (programs that crash, hang, exit 3 or report a
// failed allocation), and the memory limit is set in the child only.
TEST(ModelFuzz, JudgeCatchesCrashesHangsAndBlowUps) {
  auto sh = [](const std::string& script, double timeout) {
    std::string out;
    int st = test::run({"/bin/sh", "-c", script}, test::host_env(), &out,
                       {.timeout_s = timeout, .address_space = kAddressSpace});
    return judge(st, out);
  };
  EXPECT_EQ(sh("exit 1", 5), "");
  EXPECT_NE(sh("kill -SEGV $$", 5).find("SIGSEGV"), std::string::npos);
  EXPECT_NE(sh("sleep 30", 0.5).find("timeout"), std::string::npos);
  EXPECT_NE(sh("exit 3", 5).find("exit status 3"), std::string::npos);
  EXPECT_NE(sh("echo 'loom: error: std::bad_alloc' >&2; exit 1", 5).find("memory"), std::string::npos);
  // The limit is the child's (`ulimit -v` prints it in KiB), not this process's.
  std::string out;
  ASSERT_EQ(test::run({"/bin/sh", "-c", "ulimit -v"}, test::host_env(), &out,
                      {.timeout_s = 5, .address_space = kAddressSpace}),
            0);
  EXPECT_EQ(out, std::to_string(kAddressSpace >> 10) + "\n");
  rlimit own{};
  getrlimit(RLIMIT_AS, &own);
  EXPECT_NE(own.rlim_cur, rlim_t(kAddressSpace));
}

TEST(ModelFuzz, Json) { fuzz(json_kind()); }

TEST(ModelFuzz, Onnx) {
  if (!graph_opt::onnx_frontend_available())
    GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)";
  fuzz(onnx_kind());
}

}  // namespace
}  // namespace loom::fuzz
