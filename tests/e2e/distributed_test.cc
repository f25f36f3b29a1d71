// `loom tune` under mpirun (3 ranks on this machine, loopback only): the log of a distributed
// job, a rank lost mid-job and --resume, the same configs with 1 and 3 ranks, a compile-only
// rank. Skips when loom was built without MPI (LOOM_WITH_MPI off).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/serialize.h"
#include "loom/records/record.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

const std::string kLoom = LOOM_BINARY_DIR "/tools/loom";
const std::string kMpiexec = LOOM_TEST_MPIEXEC;
// A small task measured quickly: 1 worker per rank, one short repeat, no confirm step. The
// batch size is fixed, so the configs a seed explores do not depend on the ranks.
const std::string kJob =
    "--op matmul --shape 32,32,32 --tuner random --seed 7 --jobs 1 --repeat 1 --min-repeat-ms 1 --confirm 0 "
    "--timeout 20 --batch ";

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream is(p);
  std::stringstream ss;
  ss << is.rdbuf();
  return ss.str();
}

class DistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kMpiexec.empty()) GTEST_SKIP() << "loom was built without MPI (CMake found none; LOOM_WITH_MPI is off)";
    ASSERT_TRUE(fs::exists(kLoom)) << kLoom << " was not built (target loom_cli)";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("loom_mpi_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  Result shell(const std::string& cmd) {
    Result r;
    fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    // mpirun refuses root (CI and containers) without these; it may only use the loopback.
    std::string full = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 " + cmd + " >" +
                       out.string() + " 2>" + err.string();
    int status = std::system(full.c_str());
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  /// `mpirun -np N loom COMMAND ARGS` (COMMAND: tune) on this machine over loopback TCP; `env`
  /// is passed to every rank (-x NAME=VALUE).
  Result mpirun(int n, const std::string& args, const std::string& env = "", const std::string& command = "tune") {
    std::string cmd = kMpiexec + " --oversubscribe -np " + std::to_string(n) +
                      " --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo";
    if (!env.empty()) cmd += " -x " + env;
    return shell(cmd + " " + kLoom + " " + command + " " + args);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// Every line of a log parsed as a record (a line that does not parse fails the test).
  std::vector<records::Record> read_records(const std::string& log) {
    std::vector<records::Record> out;
    std::ifstream in(log);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      try {
        out.push_back(records::Record::from_json(line));
      } catch (const std::exception& e) {
        ADD_FAILURE() << log << ":" << n << ": " << e.what() << "\n" << line;
      }
    }
    return out;
  }

  fs::path dir_;
};

std::vector<int64_t> configs_of(const std::vector<records::Record>& recs) {
  std::vector<int64_t> out;
  for (const records::Record& r : recs) out.push_back(r.config.index);
  return out;
}

#define EXPECT_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << "no '" << (needle) << "' in:\n" << (text)

/// Candidates per minute the throughput line gives rank `rank`, or -1.
double rank_rate(const std::string& err, int rank) {
  std::smatch m;
  std::regex re("rank " + std::to_string(rank) + " [^:,;]*: ([0-9.]+)/min");
  std::string last;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator(); ++it)
    last = (*it)[1];
  return last.empty() ? -1 : std::stod(last);
}

TEST_F(DistributedTest, EveryRankMeasuresAndTheLogHoldsEachConfigOnceValid) {
  // Batches of 6: ranks 1 and 2 get two chunks of one candidate each, rank 0 measures the rest.
  Result r = mpirun(3, kJob + "6 --trials 12 --log " + path("log.jsonl"));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_HAS(r.err, "[cluster] 3 ranks on 1 host(s)");
  EXPECT_HAS(r.err, "warning: ranks 0,1,2 share host");
  EXPECT_HAS(r.err, "builds and measures");
  // Forked workers of an MPI process: Open MPI's warning about fork() stays off.
  EXPECT_EQ(r.err.find("fork()"), std::string::npos) << r.err;
  for (int rank = 0; rank < 3; ++rank) EXPECT_GT(rank_rate(r.err, rank), 0) << "rank " << rank << ":\n" << r.err;
  std::vector<records::Record> recs = read_records(path("log.jsonl"));
  ASSERT_EQ(recs.size(), 12u);
  std::vector<int64_t> idx = configs_of(recs);
  EXPECT_EQ(std::set<int64_t>(idx.begin(), idx.end()).size(), idx.size()) << "a config was logged twice";
  for (const records::Record& rec : recs) {
    EXPECT_TRUE(rec.valid()) << rec.to_json();
    EXPECT_FALSE(rec.host.empty()) << rec.to_json();
    EXPECT_FALSE(rec.target_cpu.empty()) << rec.to_json();
  }
}

TEST_F(DistributedTest, TheSameSeedExploresTheSameConfigsWithOneAndThreeRanks) {
  Result one = shell(kLoom + " tune " + kJob + "4 --trials 12 --log " + path("one.jsonl"));
  ASSERT_EQ(one.rc, 0) << one.out << one.err;
  Result three = mpirun(3, kJob + "4 --trials 12 --log " + path("three.jsonl"));
  ASSERT_EQ(three.rc, 0) << three.out << three.err;
  std::vector<int64_t> a = configs_of(read_records(path("one.jsonl")));
  std::vector<int64_t> b = configs_of(read_records(path("three.jsonl")));
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(a, b) << "the search on rank 0 depended on the number of ranks";
}

TEST_F(DistributedTest, ALostRankEndsTheJobAndResumeLosesOnlyTheBatchInFlight) {
  // Rank 1 gets two chunks of one candidate each per batch of 4 (rank 2 the other two): it
  // finishes the first batch's two and is killed (SIGKILL) when it finishes the second batch's
  // first, before returning it.
  Result killed = mpirun(3, kJob + "4 --trials 16 --log " + path("log.jsonl"), "LOOM_DISTRIBUTED_TEST_KILL=1:3");
  EXPECT_NE(killed.rc, 0) << "the job went on without rank 1:\n" << killed.out << killed.err;
  std::vector<records::Record> before = read_records(path("log.jsonl"));
  EXPECT_EQ(before.size(), 4u) << "expected the first batch, whole, and nothing of the second\n" << killed.err;
  for (const records::Record& rec : before) EXPECT_TRUE(rec.valid()) << rec.to_json();

  Result resumed = mpirun(3, kJob + "4 --trials 12 --resume --log " + path("log.jsonl"));
  ASSERT_EQ(resumed.rc, 0) << resumed.out << resumed.err;
  EXPECT_HAS(resumed.err, "resumed 4 trials");
  std::vector<records::Record> after = read_records(path("log.jsonl"));
  ASSERT_EQ(after.size(), 16u);
  std::vector<int64_t> idx = configs_of(after);
  EXPECT_EQ(std::set<int64_t>(idx.begin(), idx.end()).size(), idx.size()) << "a config was measured twice";
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].to_json(), before[i].to_json());
}

TEST_F(DistributedTest, ARankWhoseCpuDiffersSaysSoAndOnlyCompiles) {
  Result r = mpirun(3, kJob + "4 --trials 12 --log " + path("log.jsonl"), "LOOM_DISTRIBUTED_TEST_FAKE_CPU=2:test-cpu");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_HAS(r.err, "rank 2 on");
  EXPECT_HAS(r.err, "only compiles candidates for \"llvm\": this machine's CPU is 'test-cpu'");
  EXPECT_HAS(r.err, "(compiles only)");
  EXPECT_GT(rank_rate(r.err, 2), 0) << r.err;
  std::vector<records::Record> recs = read_records(path("log.jsonl"));
  ASSERT_EQ(recs.size(), 12u);
  std::vector<int64_t> idx = configs_of(recs);
  EXPECT_EQ(std::set<int64_t>(idx.begin(), idx.end()).size(), idx.size());
  for (const records::Record& rec : recs) EXPECT_TRUE(rec.valid()) << "a compiled candidate was not measured: " << rec.to_json();
}

// `loom tune-model` measures through the cluster as `loom tune` does: each task's tuner
// explores the same configs with two ranks as with one process. Which task the scheduler
// gives the next round depends on measured times, so only each task's own sequence compares:
// one run's is a prefix of the other's.
TEST_F(DistributedTest, TuneModelMeasuresOnEveryRank) {
  using namespace graph_opt;
  GraphBuilder b("two_convs");
  const DataType f32 = DataType::Float(32);
  Value x = b.input("image", {{1, 16, 8, 8}, f32, "NCHW"});
  auto weight = [&](std::vector<int64_t> shape, uint64_t seed) {
    runtime::NDArray w = runtime::NDArray::empty(std::move(shape), f32);
    w.fill_random(seed, -0.3, 0.3);
    return b.constant("w" + std::to_string(seed), w);
  };
  Conv2dAttrs pad1;
  pad1.padding = {1, 1};
  Value c = b.relu(b.conv2d(x, weight({16, 16, 3, 3}, 1), pad1, "c1"), "r1");
  b.output(b.conv2d(c, weight({32, 16, 1, 1}, 2), Conv2dAttrs{}, "c2"));
  save_graph(b.build(), path("net.json"));
  const std::string job = path("net.json") +
                          " --tuner random --seed 7 --jobs 1 --repeat 1 --min-repeat-ms 1 --confirm 0 --timeout 20 "
                          "--batch 2 --round 2 --trials 8 --log ";
  Result two = mpirun(2, job + path("two.jsonl"), "", "tune-model");
  ASSERT_EQ(two.rc, 0) << two.out << two.err;
  EXPECT_HAS(two.out, "tuned     8 trials (0 errors) in 4 rounds");
  EXPECT_GT(rank_rate(two.err, 1), 0) << "rank 1 measured nothing:\n" << two.err;
  Result one = shell(kLoom + " tune-model " + job + path("one.jsonl"));
  ASSERT_EQ(one.rc, 0) << one.out << one.err;
  std::vector<records::Record> a = read_records(path("one.jsonl")), c2 = read_records(path("two.jsonl"));
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(c2.size(), 8u);
  std::map<std::string, std::vector<int64_t>> by_task_one, by_task_two;
  for (const records::Record& r : a) by_task_one[r.workload.key()].push_back(r.config.index);
  for (const records::Record& r : c2) {
    by_task_two[r.workload.key()].push_back(r.config.index);
    EXPECT_TRUE(r.valid()) << r.to_json();
  }
  // The two convs' template tasks and the two layout transforms' auto-scheduled ones: the
  // ranks re-create an auto task from its record's op graph and measure it like any other.
  EXPECT_EQ(by_task_one.size(), 4u);
  EXPECT_EQ(by_task_two.size(), 4u);
  for (const auto& [task, one_configs] : by_task_one) {
    const std::vector<int64_t>& two_configs = by_task_two[task];
    size_t n = std::min(one_configs.size(), two_configs.size());
    EXPECT_TRUE(std::equal(one_configs.begin(), one_configs.begin() + long(n), two_configs.begin()))
        << task << ": one process and two ranks explored different configs";
  }
}

}  // namespace
}  // namespace loom
