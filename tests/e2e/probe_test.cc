// A random-input probe: malformed `loom` command lines and tuning logs, malformed calls into
// the C ABI of an exported library, and random small schedules, each run in a child process.
// A test fails on a crash (signal), a hang (timeout), an error without a message, an
// "internal error", or a wrong pick (a best record that is not the cheapest valid one).
//
// Seeded and reproducible: LOOM_PROBE_SEED=N picks the seed (printed by every test);
// LOOM_PROBE_LONG=1 runs twenty times as many cases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/process_util.h"
#include "common/test_util.h"
#include "loom/loom.h"
#include "loom/records/record.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

const std::string kLoom = LOOM_BINARY_DIR "/tools/loom";
constexpr double kTimeoutS = 120;

uint64_t probe_seed() {
  const char* s = std::getenv("LOOM_PROBE_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20261124;
}
int scale() { return std::getenv("LOOM_PROBE_LONG") ? 20 : 1; }

std::string describe(int rc) {
  if (rc == test::kTimedOut) return "timed out";
  if (rc >= 128) return fmt::format("killed by signal {}", rc - 128);
  return fmt::format("exit status {}", rc);
}

class ProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("loom_probe_{}_{}", ::getpid(), info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::cout << "probe seed " << probe_seed() << " (rerun with LOOM_PROBE_SEED=" << probe_seed() << ")\n";
  }
  void TearDown() override {
    if (!std::getenv("LOOM_KEEP_TEST_FILES")) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

// ------------------------------------------------------------------ tuning logs

/// A log of matmul 32x32x32 records, one per config with random positive costs, plus damaged
/// lines: zero, negative and out-of-space records cheaper than all, truncated lines,
/// duplicates and garbage. Returns the config index the cheapest valid record names.
int64_t write_damaged_log(std::mt19937_64& rng, const std::string& file) {
  tuner::Task task = tuner::Task::create("matmul", {32, 32, 32}, Target("llvm"));
  const int64_t n = task.space().size();
  std::vector<std::string> lines;
  double best_cost = 1e9;
  int64_t best = -1;
  std::set<int64_t> used;
  for (int r = 0; r < 6; ++r) {
    int64_t index = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
    if (!used.insert(index).second) continue;
    records::MeasureResult m;
    double cost = std::uniform_real_distribution<double>(1e-5, 1e-3)(rng);
    m.costs = {cost};
    m.timestamp = 1.7e9;
    lines.push_back(task.record(index, m, "probe").to_json());
    if (cost < best_cost) best_cost = cost, best = index;
  }
  const std::string good = lines[0];
  auto damaged = [&](auto edit) {
    nlohmann::json j = nlohmann::json::parse(good);
    edit(j);
    return j.dump();
  };
  std::vector<std::string> bad = {
      damaged([](nlohmann::json& j) { j["result"]["costs"] = {0.0}; }),
      damaged([](nlohmann::json& j) { j["result"]["costs"] = {-1e-9}; }),
      damaged([](nlohmann::json& j) { j["result"]["costs"] = {1e-9, -1.0}; }),
      damaged([&](nlohmann::json& j) {
        j["config"]["index"] = n + 7;
        j["result"]["costs"] = {1e-9};
      }),
      damaged([](nlohmann::json& j) {
        j["config"]["index"] = -3;
        j["result"]["costs"] = {1e-9};
      }),
      good.substr(0, good.size() / 2),
      "{",
      "not json at all",
      "",
      good,
  };
  for (const std::string& b : bad) lines.insert(lines.begin() + std::uniform_int_distribution<size_t>(0, lines.size())(rng), b);
  std::ofstream os(file);
  for (const std::string& l : lines) os << l << "\n";
  return best;
}

TEST_F(ProbeTest, RecordsBestIsTheCheapestValidRecord) {
  std::mt19937_64 rng(probe_seed());
  for (int round = 0; round < 3 * scale(); ++round) {
    std::string log = path(fmt::format("log{}.jsonl", round));
    int64_t want = write_damaged_log(rng, log);
    std::string out;
    int rc = test::run({kLoom, "records", "best", "--json", log}, test::host_env(), &out, kTimeoutS);
    ASSERT_EQ(rc, 0) << describe(rc) << "\n" << out;
    size_t brace = out.find('{');
    ASSERT_NE(brace, std::string::npos) << out;
    nlohmann::json best = nlohmann::json::parse(out.substr(brace, out.find('\n', brace) - brace));
    EXPECT_EQ(best["config"]["index"].get<int64_t>(), want) << "round " << round << ": wrong pick\n" << out;
    EXPECT_NE(out.find("outside the config space"), std::string::npos) << out;
    EXPECT_NE(out.find("expected a positive, finite time"), std::string::npos) << out;
  }
}

// ------------------------------------------------------------------ the command line

TEST_F(ProbeTest, RandomCommandLinesFailCleanly) {
  std::mt19937_64 rng(probe_seed() + 1);
  std::string log = path("damaged.jsonl");
  write_damaged_log(rng, log);
  { std::ofstream(path("empty.jsonl")); }
  fs::create_directories(path("a_directory"));
  const std::vector<std::string> shapes = {
      "32,32,32", "1,1,1", "9223372036854775807,64,64", "1000000000000,64,64", "64,4611686018427387904,64",
      "64,9223372036854775807,64", "0,4,4", "-1,4,4", "4,,4", "", "a,b,c", "4,4", "4,4,4,4", "2147483648,1,1",
      "65536,65536,1", "1,1000,1000,1000,1,1000,1000", "1,3,1000,1000,8,3,3", "1,1,1,1,1,1,1", "+4,4,4", "4,4,4,"};
  const std::vector<std::string> ops = {"matmul", "conv2d_nchw", "depthwise_conv2d_nchw", "softmax", "nosuchop", ""};
  const std::vector<std::string> targets = {"llvm",          "llvm -mcpu=nosuchcpu", "llvm -mcpu=i386",
                                            "llvm -mattr=+nosuchfeature", "llvm -mattr=avx2", "llvm -mcpu=x86-64-v2",
                                            "llvm -mcpu",    "llvm -mattr=",         "foo",
                                            "",              "llvm -x=1 -x=2",       "llvm -mattr=-64bit"};
  const std::vector<std::string> attrs = {"stride=0", "pad=-1", "pad=9223372036854775807", "stride=1000000",
                                          "x=y",      "=",      "pad=1",                   "stride=2"};
  const std::vector<std::string> files = {log, path("empty.jsonl"), path("a_directory"), path("missing.jsonl"),
                                          "/dev/null"};
  const std::vector<std::string> outputs = {path("lib.so"), path("a_directory"), path("no/such/dir/lib.so"),
                                            path("a_directory/")};
  const int cases = 24 * scale();
  for (int c = 0; c < cases; ++c) {
    std::vector<std::string> argv = {kLoom};
    int kind = std::uniform_int_distribution<int>(0, 5)(rng);
    auto workload = [&] {
      argv.insert(argv.end(), {"--op", pick(rng, ops), "--shape", pick(rng, shapes)});
      if (rng() % 3 == 0) argv.insert(argv.end(), {"--attr", pick(rng, attrs)});
      if (rng() % 2 == 0) argv.insert(argv.end(), {"--target", pick(rng, targets)});
    };
    switch (kind) {
      case 0:
        argv.push_back("lower");
        workload();
        break;
      case 1:
        argv.push_back("build");
        workload();
        argv.insert(argv.end(), {"-o", pick(rng, outputs)});
        if (rng() % 2) argv.insert(argv.end(), {"--log", pick(rng, files)});
        break;
      case 2:
        argv.insert(argv.end(), {"records", pick(rng, std::vector<std::string>{"best", "summary", "distill", "merge"})});
        for (int i = 0, n = int(rng() % 3) + 1; i < n; ++i) argv.push_back(pick(rng, files));
        if (argv[2] == "merge" || argv[2] == "distill") argv.insert(argv.end(), {"-o", pick(rng, outputs)});
        break;
      case 3:
        // tune only where the workload or target is bad: a valid one would start a search.
        argv.insert(argv.end(), {"tune", "--op", "matmul", "--shape",
                                 pick(rng, std::vector<std::string>{"9223372036854775807,64,64", "1000000000000,64,64",
                                                                    "64,4611686018427387904,64", "0,1,1"}),
                                 "--trials", "1", "--log", path("tune.jsonl")});
        break;
      case 4:
        argv.insert(argv.end(), {"build", "--op", "matmul", "--shape", "32,32,32", "--target",
                                 pick(rng, targets), "-o", pick(rng, outputs)});
        break;
      default:
        argv.insert(argv.end(), {pick(rng, std::vector<std::string>{"show", "lower", "build", "records", "nosuch"}),
                                 pick(rng, std::vector<std::string>{"--op", "--shape", "-o", "--log", "--trials", "x"}),
                                 pick(rng, shapes)});
    }
    std::string cmd;
    for (size_t i = 1; i < argv.size(); ++i) cmd += fmt::format(" '{}'", argv[i]);
    std::string out;
    int rc = test::run(argv, test::host_env(), &out, kTimeoutS);
    SCOPED_TRACE(fmt::format("case {}: loom{}", c, cmd));
    EXPECT_TRUE(rc >= 0 && rc < 64) << describe(rc) << "\n" << out;
    if (rc != 0) EXPECT_FALSE(out.empty()) << "failed without a message";
    EXPECT_EQ(out.find("internal error"), std::string::npos) << out;
    EXPECT_EQ(out.find(": Success"), std::string::npos) << out;
  }
}

// ------------------------------------------------------------------ the C ABI

TEST_F(ProbeTest, RandomCallsOfTheCAbi) {
  const int64_t rows = 16, cols = 12;  // no stride the probe's bad-stride case picks (5..9) is valid
  te::Tensor A = te::placeholder({rows, cols}, DataType::Float(32), "A");
  te::Tensor B = te::placeholder({rows, cols}, DataType::Float(32), "B");
  te::Tensor C = te::compute({rows, cols}, [&](te::Var i, te::Var j) { return A(i, j) + B(i, j); }, "C");
  Schedule s = create_schedule({C});
  auto [jo, ji] = s[C].split(s[C].axis(1), 4);
  s[C].vectorize(ji);
  s[C].parallel(s[C].axis(0));
  std::string lib = path("libprobe.so");
  build(s, {A, B, C}, Target("llvm"), "probe_add").export_library(lib);
  std::string exe = path("abi_probe");
  test::compile_c_program(std::string(LOOM_SOURCE_DIR) + "/tests/e2e/abi_probe.c", exe);
  const int batches = 2 * scale();
  for (int b = 0; b < batches; ++b) {
    std::string seed = std::to_string(probe_seed() + uint64_t(b));
    std::string out;
    int rc = test::run({exe, lib, "probe_add", std::to_string(rows), std::to_string(cols), seed, "200"},
                       test::host_env(), &out, kTimeoutS);
    size_t last = out.rfind("case ");
    EXPECT_EQ(rc, 0) << describe(rc) << " with abi_probe seed " << seed << "; last lines:\n"
                     << (last == std::string::npos ? out : out.substr(last));
  }
}

// ------------------------------------------------------------------ random schedules

/// One random primitive on a random stage; loom::Error (a rejected misuse) is fine.
void random_primitive(std::mt19937_64& rng, Schedule& s, const te::Tensor& P, const te::Tensor& C,
                      std::ostream& log) {
  schedule::Stage st = rng() % 4 == 0 ? s[P] : s[C];
  const auto& leaves = st->leaf_iter_vars;
  auto leaf = [&] { return leaves[std::uniform_int_distribution<size_t>(0, leaves.size() - 1)(rng)]; };
  const std::vector<int64_t> factors = {-3, 0, 1, 2, 3, 5, 8, 64, int64_t(1) << 40};
  try {
    switch (rng() % 9) {
      case 0: {
        int64_t f = pick(rng, factors);
        log << "split by " << f << "; ";
        st.split(leaf(), f);
        break;
      }
      case 1: {
        int64_t f = pick(rng, factors);
        log << "split_nparts " << f << "; ";
        st.split_nparts(leaf(), f);
        break;
      }
      case 2:
        log << "fuse; ";
        st.fuse(leaf(), leaf());
        break;
      case 3: {
        std::vector<te::IterVar> order;
        for (int i = 0, n = int(rng() % 4); i < n; ++i) order.push_back(leaf());
        log << "reorder " << order.size() << "; ";
        st.reorder(order);
        break;
      }
      case 4:
        log << "vectorize; ";
        st.vectorize(leaf());
        break;
      case 5:
        log << "parallel; ";
        st.parallel(leaf());
        break;
      case 6:
        log << "unroll; ";
        st.unroll(leaf());
        break;
      case 7:
        log << "compute_inline; ";
        s[P].compute_inline();
        break;
      default: {
        const auto& cl = s[C]->leaf_iter_vars;
        log << "compute_at; ";
        s[P].compute_at(s[C], cl[std::uniform_int_distribution<size_t>(0, cl.size() - 1)(rng)]);
      }
    }
  } catch (const Error& e) {
    log << "(rejected: " << std::string(e.what()).substr(0, 60) << ") ";
  }
}

/// The child side: LOOM_PROBE_SCHEDULE_SEED set, runs a batch of random schedules.
TEST(ProbeChild, RandomSchedules) {
  const char* seed_text = std::getenv("LOOM_PROBE_SCHEDULE_SEED");
  if (!seed_text) GTEST_SKIP() << "run by ProbeTest.RandomSchedulesInChildProcesses";
  uint64_t seed = std::strtoull(seed_text, nullptr, 10);
  for (int c = 0; c < 8; ++c) {
    std::mt19937_64 rng(seed * 1000 + uint64_t(c));
    int64_t M = 1 + int64_t(rng() % 20), N = 1 + int64_t(rng() % 20), K = 1 + int64_t(rng() % 9);
    te::Tensor A = te::placeholder({M, K}, DataType::Float(32), "A");
    te::Tensor B = te::placeholder({K, N}, DataType::Float(32), "B");
    te::Tensor P = te::compute({M, K}, [&](te::Var i, te::Var k) { return A(i, k) * 2.0f; }, "P");
    te::IterVar k = te::reduce_axis({0, K}, "k");
    te::Tensor C = te::compute({M, N}, [&](te::Var i, te::Var j) { return te::sum(P(i, k) * B(k, j), {k}); }, "C");
    Schedule s = create_schedule({C});
    std::ostringstream log;
    for (int p = 0, n = 1 + int(rng() % 5); p < n; ++p) random_primitive(rng, s, P, C, log);
    std::cout << fmt::format("schedule {}.{} ({}x{}x{}): {}\n", seed, c, M, N, K, log.str()) << std::flush;
    try {
      lower(s, {A, B, C}, "probe");
    } catch (const Error& e) {
      std::cout << "  lower rejected it: " << e.what() << "\n";
      EXPECT_EQ(std::string(e.what()).find("internal error"), std::string::npos) << e.what();
      continue;
    }
    EXPECT_EQ(test::compare_with_reference(s, {A, B, C}, seed), "") << log.str();
  }
}

TEST_F(ProbeTest, RandomSchedulesInChildProcesses) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  for (int b = 0; b < 2 * scale(); ++b) {
    std::vector<std::string> env = test::host_env();
    const std::string seed = std::to_string(probe_seed() + uint64_t(b));
    env.push_back("LOOM_PROBE_SCHEDULE_SEED=" + seed);
    std::string out;
    int rc = test::run({self, "--gtest_filter=ProbeChild.RandomSchedules"}, env, &out, kTimeoutS);
    size_t last = out.rfind("schedule ");
    EXPECT_EQ(rc, 0) << describe(rc) << " with LOOM_PROBE_SCHEDULE_SEED=" << seed << "; from the last schedule:\n"
                     << (last == std::string::npos ? out : out.substr(last));
  }
}

}  // namespace
}  // namespace loom
