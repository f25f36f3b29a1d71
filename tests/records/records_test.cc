// Tuning records: JSON form, log writing and reading, best-record queries and log tools.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "loom/records/log_tools.h"
#include "loom/records/record.h"
#include "loom/records/record_check.h"
#include "loom/runtime/error.h"

namespace loom::records {
namespace {

namespace fs = std::filesystem;

/// A fresh, empty scratch directory per test.
class RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("loom_records_{}_{}_{}", info->name(), ::getpid(), counter_++);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  static inline int counter_ = 0;
};

Record make_record(const std::string& op, std::vector<int64_t> shape, const std::string& target, int64_t index,
                   double cost, ErrorCode err = ErrorCode::kNoError) {
  Record r;
  r.workload.op = op;
  r.workload.shape = std::move(shape);
  r.target = target;
  r.flop = 2.0 * 64 * 64 * 64;
  r.config.index = index;
  r.config.knobs["tile_x"] = {-1, 8};
  r.result.error = err;
  if (err == ErrorCode::kNoError) r.result.costs = {cost, cost};
  else r.result.error_msg = "failed";
  r.result.all_cost = 0.5;
  r.result.timestamp = 1700000000.0 + double(index);
  r.tuner = "random";
  r.loom_version = "0.1.0";
  return r;
}

std::vector<std::string> read_lines(const std::string& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string error_of(const std::string& line) {
  try {
    Record::from_json(line);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ErrorCodeTest, EveryCodeRoundTrips) {
  const char* names[] = {"no_error", "instantiation", "compile", "runtime", "wrong_answer", "build_timeout",
                         "run_timeout", "unknown"};
  for (int i = 0; i <= static_cast<int>(ErrorCode::kUnknown); ++i) {
    auto c = static_cast<ErrorCode>(i);
    EXPECT_STREQ(to_string(c), names[i]);
    EXPECT_EQ(error_code_from_string(to_string(c)), c);
  }
  EXPECT_THROW(error_code_from_string("segfault"), Error);
}

TEST(WorkloadTest, KeyIsCanonical) {
  Workload w{"matmul", {1024, 1024, 1024}, "float32", {}};
  EXPECT_EQ(w.key(), "matmul(1024,1024,1024;float32)");
  Workload c{"conv2d", {1, 64, 56, 56, 64, 3, 3}, "float32", {}};
  c.attrs["stride"] = "1";
  c.attrs["pad"] = "1";
  EXPECT_EQ(c.key(), "conv2d(1,64,56,56,64,3,3;float32;pad=1,stride=1)");
  Workload c2 = c;
  c2.attrs["stride"] = "2";
  EXPECT_NE(c.key(), c2.key());
}

TEST(RecordTest, MeanCostAndGflops) {
  Record r = make_record("matmul", {64, 64, 64}, "llvm", 0, 0);
  r.result.costs = {1e-3, 3e-3};
  EXPECT_DOUBLE_EQ(r.result.mean_cost(), 2e-3);
  EXPECT_DOUBLE_EQ(r.gflops(), r.flop / 2e-3 / 1e9);
  r.result.error = ErrorCode::kRuntime;
  EXPECT_TRUE(std::isinf(r.result.mean_cost()));
  EXPECT_EQ(r.gflops(), 0);
  r.result.error = ErrorCode::kNoError;
  r.result.costs.clear();
  EXPECT_FALSE(r.valid());
  EXPECT_TRUE(std::isinf(r.result.mean_cost()));
}

TEST(RecordTest, JsonRoundTripOfAFullRecord) {
  Record r;
  r.workload = {"conv2d", {1, 64, 56, 56, 64, 3, 3}, "float16", {{"stride", "2"}, {"pad", "1"}}};
  r.target = "llvm -mcpu=skylake-avx512";
  r.target_cpu = "skylake-avx512";
  r.target_features = "+avx512f,+fma";
  r.flop = 1.23456789012345e9;
  r.config.index = 123456789012LL;
  r.config.knobs = {{"tile_y", {-1, 4, 8}}, {"reorder", {2, 0, 1}}, {"unroll", {1}}};
  r.config.labels = {{"unroll", "explicit"}, {"vec", "on \"quoted\"\n"}};
  r.result.costs = {1.0 / 3.0, 2.5e-7, 0.1};
  r.result.error = ErrorCode::kWrongAnswer;
  r.result.error_msg = "mismatch at (0, 3): got 1.5, want 2";
  r.result.all_cost = 3.75;
  r.result.timestamp = 1712345678.123456;
  r.tuner = "xgb";
  r.loom_version = "0.1.0";

  std::string line = r.to_json();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("{", 0), 0u);
  Record b = Record::from_json(line);
  EXPECT_EQ(b.version, kSchemaVersion);
  EXPECT_EQ(b.workload, r.workload);
  EXPECT_EQ(b.target, r.target);
  EXPECT_EQ(b.target_cpu, r.target_cpu);
  EXPECT_EQ(b.target_features, r.target_features);
  EXPECT_EQ(b.flop, r.flop);
  EXPECT_EQ(b.config.index, r.config.index);
  EXPECT_EQ(b.config.knobs, r.config.knobs);
  EXPECT_EQ(b.config.labels, r.config.labels);
  EXPECT_EQ(b.result.costs, r.result.costs);  // exact: doubles round-trip
  EXPECT_EQ(b.result.error, r.result.error);
  EXPECT_EQ(b.result.error_msg, r.result.error_msg);
  EXPECT_EQ(b.result.all_cost, r.result.all_cost);
  EXPECT_EQ(b.result.timestamp, r.result.timestamp);
  EXPECT_EQ(b.tuner, r.tuner);
  EXPECT_EQ(b.loom_version, r.loom_version);
  EXPECT_EQ(b.to_json(), line);

  // The schema's names are what other tools read.
  for (const char* field : {"\"v\":2", "\"workload\":{", "\"key\":\"conv2d(1,64,56,56,64,3,3;float16;pad=1,stride=2)\"",
                            "\"error\":\"wrong_answer\"", "\"error_code\":4", "\"cpu\":", "\"features\":",
                            "\"labels\":", "\"all_cost\":", "\"timestamp\":", "\"tuner\":\"xgb\""})
    EXPECT_NE(line.find(field), std::string::npos) << field << " in " << line;
}

TEST(RecordTest, HostIsAnOptionalFieldOlderLogsLack) {
  Record r = make_record("matmul", {8, 8, 8}, "llvm", 3, 1e-3);
  r.host = "node17";
  std::string line = r.to_json();
  EXPECT_NE(line.find("\"host\":\"node17\""), std::string::npos) << line;
  EXPECT_EQ(Record::from_json(line).host, "node17");
  // A record written before the field existed reads with an empty host.
  r.host.clear();
  std::string old = r.to_json();
  EXPECT_EQ(old.find("\"host\""), std::string::npos) << old;
  EXPECT_EQ(Record::from_json(old).host, "");
  // Present, it must be a string.
  std::string bad = line;
  bad.replace(bad.find("\"node17\""), 8, "17");
  EXPECT_NE(error_of(bad).find("'host' is a integer, expected a string"), std::string::npos) << error_of(bad);
}

TEST(RecordTest, EveryErrorCodeRoundTripsThroughJson) {
  for (int i = 0; i <= static_cast<int>(ErrorCode::kUnknown); ++i) {
    Record r = make_record("matmul", {8, 8, 8}, "llvm", i, 1e-3, static_cast<ErrorCode>(i));
    EXPECT_EQ(Record::from_json(r.to_json()).result.error, static_cast<ErrorCode>(i));
  }
}

TEST(RecordTest, FromJsonErrorsNameTheField) {
  std::string good = make_record("matmul", {8, 8, 8}, "llvm", 3, 1e-3).to_json();
  auto without = [&](const std::string& field) {
    std::string needle = "\"" + field + "\":";
    size_t at = good.find(needle);
    EXPECT_NE(at, std::string::npos) << field;
    return good.substr(0, at) + "\"x" + good.substr(at + 1);  // renames the field
  };
  EXPECT_NE(error_of(without("workload")).find("'workload' is missing"), std::string::npos);
  EXPECT_NE(error_of(without("shape")).find("'workload.shape' is missing"), std::string::npos);
  EXPECT_NE(error_of(without("costs")).find("'result.costs' is missing"), std::string::npos);
  EXPECT_NE(error_of(without("index")).find("'config.index' is missing"), std::string::npos);
  EXPECT_NE(error_of(without("tuner")).find("'tuner' is missing"), std::string::npos);
  EXPECT_NE(error_of(without("v")).find("'v' is missing"), std::string::npos);

  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  std::string e = error_of(replace("\"flop\":", "\"flop\":\"many\",\"old_flop\":"));
  EXPECT_NE(e.find("'flop'"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a number"), std::string::npos) << e;
  e = error_of(replace("\"shape\":[8,", "\"shape\":[8.5,"));
  EXPECT_NE(e.find("'workload.shape[0]'"), std::string::npos) << e;
  e = error_of(replace("\"tile_x\":[-1,8]", "\"tile_x\":[-1,\"8\"]"));
  EXPECT_NE(e.find("'config.knobs.tile_x[1]'"), std::string::npos) << e;
  e = error_of(replace("\"error\":\"no_error\"", "\"error\":\"exploded\""));
  EXPECT_NE(e.find("'result.error'"), std::string::npos) << e;
  e = error_of(replace("\"error_code\":0", "\"error_code\":3"));
  EXPECT_NE(e.find("'result.error_code'"), std::string::npos) << e;
  e = error_of(replace("\"key\":\"matmul(8,8,8;float32)\"", "\"key\":\"matmul(8,8,9;float32)\""));
  EXPECT_NE(e.find("'key'"), std::string::npos) << e;

  e = error_of(replace("\"v\":2", "\"v\":3"));
  EXPECT_NE(e.find("schema version 3, this loom reads 1 to 2"), std::string::npos) << e;
  EXPECT_THROW(Record::from_json(replace("\"v\":2", "\"v\":3")), SchemaVersionError);
  EXPECT_THROW(Record::from_json(replace("\"v\":2", "\"v\":0")), SchemaVersionError);
  // Version 1 (no steps) still reads.
  EXPECT_EQ(Record::from_json(replace("\"v\":2", "\"v\":1")).version, 1);
  e = error_of(replace("\"tuner\":", "\"steps\":{\"p\":1},\"tuner\":"));
  EXPECT_NE(e.find("'steps' is a object, expected an array"), std::string::npos) << e;
  EXPECT_NE(error_of(good.substr(0, good.size() / 2)).find("truncated JSON"), std::string::npos);
  EXPECT_NE(error_of("[1,2]").find("expected an object"), std::string::npos);
  EXPECT_NE(error_of("not json").find("malformed JSON"), std::string::npos);
}

TEST_F(RecordsTest, WriterAppendsWholeLinesAndFillsVersion) {
  std::string p = path("log.jsonl");
  {
    LogWriter w(p);
    Record r = make_record("matmul", {8, 8, 8}, "llvm", 0, 1e-3);
    r.loom_version = "";
    w.write(r);
  }
  {
    LogWriter w(p);  // reopening appends
    w.write(make_record("matmul", {8, 8, 8}, "llvm", 1, 2e-3));
  }
  auto lines = read_lines(p);
  ASSERT_EQ(lines.size(), 2u);
  LogContents c = read_log(p);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_EQ(c.records[0].loom_version, loom_version());
  EXPECT_EQ(c.records[1].config.index, 1);
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::owner_write, fs::perms::owner_write);
}

TEST_F(RecordsTest, WriterAndReaderReportUnusablePaths) {
  try {
    LogWriter w(path("no/such/dir/log.jsonl"));
    FAIL() << "expected loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_log(path("missing.jsonl")), Error);
}

TEST_F(RecordsTest, ReaderSkipsBadLinesWithOneWarningEach) {
  std::string p = path("log.jsonl");
  std::string good1 = make_record("matmul", {8, 8, 8}, "llvm", 0, 1e-3).to_json();
  std::string good2 = make_record("matmul", {8, 8, 8}, "llvm", 1, 2e-3).to_json();
  std::string v2 = good1;
  v2.replace(v2.find("\"v\":2"), 5, "\"v\":7");
  std::string torn = make_record("matmul", {8, 8, 8}, "llvm", 2, 3e-3).to_json();
  torn = torn.substr(0, torn.size() * 2 / 3);
  {
    std::ofstream f(p);
    f << good1 << "\n"            // line 1
      << "\n"                     // line 2: empty, ignored silently
      << v2 << "\n"               // line 3
      << "}}garbage{{\n"          // line 4
      << good2 << "\n"            // line 5
      << torn;                    // line 6: killed mid-write
  }
  std::ostringstream warn;
  LogContents c = read_log(p, &warn);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0].config.index, 0);
  EXPECT_EQ(c.records[1].config.index, 1);
  ASSERT_EQ(c.warnings.size(), 3u);
  EXPECT_EQ(c.warnings[0], p + ":3: skipped: schema version 7 (this loom reads 1 to 2)");
  EXPECT_EQ(c.warnings[1].rfind(p + ":4: skipped: malformed JSON", 0), 0u) << c.warnings[1];
  EXPECT_EQ(c.warnings[2].rfind(p + ":6: skipped: truncated JSON", 0), 0u) << c.warnings[2];
  EXPECT_EQ(warn.str(), c.warnings[0] + "\n" + c.warnings[1] + "\n" + c.warnings[2] + "\n");
}

TEST_F(RecordsTest, ReaderSkipsNonPositiveCostsAndWhatTheRecordCheckRejects) {
  std::string p = path("log.jsonl");
  {
    std::ofstream f(p);
    f << make_record("matmul", {8, 8, 8}, "llvm", 0, 1e-3).to_json() << "\n"  // line 1: kept
      << make_record("matmul", {8, 8, 8}, "llvm", 1, 0.0).to_json() << "\n"   // line 2: 0 s
      << make_record("matmul", {8, 8, 8}, "llvm", 2, -1e-3).to_json() << "\n" // line 3: negative
      << make_record("matmul", {8, 8, 8}, "llvm", 3, 1e-3).to_json() << "\n"  // line 4: rejected below
      << make_record("matmul", {8, 8, 8}, "llvm", 4, 2e-3).to_json() << "\n"; // line 5: kept
  }
  std::string one_e999 = make_record("matmul", {8, 8, 8}, "llvm", 5, 1e-3).to_json();
  one_e999.replace(one_e999.find("0.001"), 5, "1e999");  // parses as infinity
  { std::ofstream(p, std::ios::app) << one_e999 << "\n"; }  // line 6
  set_record_check([](const Record& r) { return r.config.index == 3 ? "config 3 is out of range" : ""; });
  LogContents c = read_log(p);
  set_record_check(nullptr);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0].config.index, 0);
  EXPECT_EQ(c.records[1].config.index, 4);
  ASSERT_EQ(c.warnings.size(), 4u);
  EXPECT_EQ(c.warnings[0], p + ":2: skipped: record field 'result.costs[0]' is 0, expected a positive, finite time "
                               "in seconds");
  EXPECT_EQ(c.warnings[1].rfind(p + ":3: skipped: record field 'result.costs[0]' is -0.001", 0), 0u) << c.warnings[1];
  EXPECT_EQ(c.warnings[2], p + ":4: skipped: config 3 is out of range");
  EXPECT_EQ(c.warnings[3].rfind(p + ":6: skipped:", 0), 0u) << c.warnings[3];
  // A directory is not a log.
  try {
    read_log(dir_.string());
    FAIL() << "expected loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
}

TEST_F(RecordsTest, ResumingAfterATornLineKeepsTheNewRecords) {
  std::string p = path("log.jsonl");
  std::string good = make_record("matmul", {8, 8, 8}, "llvm", 0, 1e-3).to_json();
  std::string torn = make_record("matmul", {8, 8, 8}, "llvm", 1, 1e-3).to_json();
  {
    std::ofstream f(p);
    f << good << "\n" << torn.substr(0, 40);  // the job was killed mid-write
  }
  {
    LogWriter w(p);  // the resumed job
    w.write(make_record("matmul", {8, 8, 8}, "llvm", 2, 1e-3));
  }
  LogContents c = read_log(p);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[1].config.index, 2);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0].rfind(p + ":2: skipped: truncated JSON", 0), 0u) << c.warnings[0];
}

constexpr int kConcurrentRecords = 2000;

/// A record long enough (a few KB) that interleaved writes would show.
Record big_record(int writer, int i) {
  Record r = make_record("matmul", {writer, i, 64}, "llvm", i, 1e-3 * (i + 1));
  r.result.error_msg = std::string(1000 + (i % 7) * 500, char('a' + writer));
  return r;
}

void check_concurrent_log(const std::string& p, int writers) {
  auto lines = read_lines(p);
  ASSERT_EQ(int(lines.size()), kConcurrentRecords);
  std::vector<std::vector<bool>> seen(writers, std::vector<bool>(kConcurrentRecords / writers, false));
  for (size_t n = 0; n < lines.size(); ++n) {
    Record r = Record::from_json(lines[n]);  // throws on a torn or interleaved line
    int w = int(r.workload.shape[0]), i = int(r.workload.shape[1]);
    ASSERT_TRUE(w >= 0 && w < writers && i >= 0 && i < kConcurrentRecords / writers) << "line " << n + 1;
    EXPECT_EQ(r.result.error_msg, big_record(w, i).result.error_msg);
    EXPECT_FALSE(seen[w][i]) << "duplicate " << w << "," << i;
    seen[w][i] = true;
  }
  LogContents c = read_log(p);
  EXPECT_EQ(int(c.records.size()), kConcurrentRecords);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
}

TEST_F(RecordsTest, TwoThreadsAppendConcurrently) {
  std::string p = path("log.jsonl");
  auto work = [&](int writer) {
    LogWriter w(p);
    for (int i = 0; i < kConcurrentRecords / 2; ++i) w.write(big_record(writer, i));
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  check_concurrent_log(p, 2);
}

TEST_F(RecordsTest, TwoProcessesAppendConcurrently) {
  std::string p = path("log.jsonl");
  std::vector<pid_t> kids;
  for (int writer = 0; writer < 2; ++writer) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        LogWriter w(p);
        for (int i = 0; i < kConcurrentRecords / 2; ++i) w.write(big_record(writer, i));
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  check_concurrent_log(p, 2);
}

TEST(ApplyHistoryBestTest, PicksLowestCostIgnoresErrorsSeparatesWorkloadsAndTargets) {
  ApplyHistoryBest h;
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 0, 3e-3));
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 1, 1e-3));
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 2, 2e-3));
  Record err = make_record("matmul", {64, 64, 64}, "llvm", 3, 0, ErrorCode::kWrongAnswer);
  err.result.costs = {1e-9};  // fast but wrong: must not win
  h.add(err);
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 4, 0, ErrorCode::kCompile));
  h.add(make_record("matmul", {128, 64, 64}, "llvm", 5, 9e-3));
  h.add(make_record("matmul", {64, 64, 64}, "llvm -mcpu=skylake-avx512", 6, 5e-3));
  h.add(make_record("matmul", {64, 64, 64}, "cuda -arch=sm_90", 7, 1e-5));
  h.add(make_record("matmul", {32, 32, 32}, "llvm", 8, 0, ErrorCode::kRuntime));
  EXPECT_EQ(h.size(), 4u);

  Workload w{"matmul", {64, 64, 64}, "float32", {}};
  auto b = h.best(w, "llvm");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->config.index, 1);
  EXPECT_EQ(h.best({"matmul", {128, 64, 64}, "float32", {}}, "llvm")->config.index, 5);
  EXPECT_EQ(h.best(w, "llvm -mcpu=skylake-avx512")->config.index, 6);
  EXPECT_EQ(h.best(w, "cuda -arch=sm_90")->config.index, 7);
  EXPECT_FALSE(h.best({"matmul", {32, 32, 32}, "float32", {}}, "llvm"));  // only errors
  EXPECT_FALSE(h.best({"matmul", {64, 64, 64}, "float16", {}}, "llvm"));
  EXPECT_FALSE(h.best(w, "cuda -arch=sm_80"));
  EXPECT_FALSE(h.best(w, "llvm -mcpu=znver4"));

  // No exact target string: same kind and -mcpu stands in (no -mcpu and -mcpu=native: host).
  EXPECT_EQ(h.best(w, "llvm -mcpu=native")->config.index, 1);
  EXPECT_EQ(h.best(w, "llvm -mcpu=skylake-avx512 -mattr=+avx512f")->config.index, 6);
  EXPECT_TRUE(target_compatible("llvm -mtriple=x86_64-linux-gnu", "llvm"));
  EXPECT_FALSE(target_compatible("llvm", "cuda"));
}

TEST(ApplyHistoryBestTest, RanksConfigsMeasuredMoreThanOnceByTheirMedian) {
  EXPECT_DOUBLE_EQ(median_cost({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_cost({1, 2}), 2);  // the slower middle one
  EXPECT_TRUE(std::isinf(median_cost({1, INFINITY})));
  EXPECT_TRUE(std::isinf(median_cost({})));

  ApplyHistoryBest h;
  Workload w{"matmul", {64, 64, 64}, "float32", {}};
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 0, 2e-3));
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 1, 1e-3));  // one lucky measurement
  EXPECT_EQ(h.best(w, "llvm")->config.index, 1);
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 1, 3e-3));  // measured again: slower
  EXPECT_EQ(h.best(w, "llvm")->config.index, 0);
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 1, 1.5e-3));  // median of three: 1.5e-3
  auto b = h.best(w, "llvm");
  EXPECT_EQ(b->config.index, 1);
  EXPECT_DOUBLE_EQ(b->result.mean_cost(), 1.5e-3);  // the median record, not the fastest
  EXPECT_EQ(h.measurements(w, "llvm", 1), (std::vector<double>{1e-3, 1.5e-3, 3e-3}));
  EXPECT_EQ(h.top(w, "llvm", 5), (std::vector<int64_t>{1, 0}));
  // A config failing in most of its measurements (three of six) is never chosen.
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 1, 0, ErrorCode::kRunTimeout));
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 1, 0, ErrorCode::kRunTimeout));
  h.add(make_record("matmul", {64, 64, 64}, "llvm", 1, 0, ErrorCode::kRuntime));
  EXPECT_EQ(h.best(w, "llvm")->config.index, 0);
  EXPECT_EQ(h.top(w, "llvm", 5), (std::vector<int64_t>{0}));
  EXPECT_EQ(h.size(), 1u);
}

TEST_F(RecordsTest, ApplyHistoryBestReadsLogs) {
  std::string p1 = path("a.jsonl"), p2 = path("b.jsonl");
  {
    LogWriter w(p1);
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 0, 3e-3));
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 1, 2e-3));
  }
  {
    LogWriter w(p2);
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 2, 1e-3));
  }
  EXPECT_EQ(ApplyHistoryBest(p1).best({"matmul", {64, 64, 64}, "float32", {}}, "llvm")->config.index, 1);
  ApplyHistoryBest both(std::vector<std::string>{p1, p2});
  EXPECT_EQ(both.best({"matmul", {64, 64, 64}, "float32", {}}, "llvm")->config.index, 2);
  EXPECT_EQ(both.all().size(), 1u);
}

/// Checks that `s` is well-formed XML as far as an SVG writer can get it wrong: balanced,
/// properly nested tags, quoted attributes, and no stray '<' or '&' in text.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> stack;
  size_t i = 0;
  int roots = 0;
  while (i < s.size()) {
    if (s[i] == '<') {
      size_t end = s.find('>', i);
      if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
      std::string tag = s.substr(i + 1, end - i - 1);
      size_t quotes = std::count(tag.begin(), tag.end(), '"');
      if (quotes % 2) return "unbalanced quotes in <" + tag + ">";
      if (tag.find('<') != std::string::npos) return "'<' inside tag <" + tag + ">";
      if (!tag.empty() && tag[0] == '/') {
        if (stack.empty() || stack.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + ">";
        stack.pop_back();
      } else {
        std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
        if (stack.empty()) ++roots;
        if (tag.back() != '/') stack.push_back(name);
      }
      i = end + 1;
    } else {
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) return "text outside the root";
      if (s[i] == '&') {
        size_t semi = s.find(';', i);
        if (semi == std::string::npos || semi - i > 6) return "bare '&'";
      }
      ++i;
    }
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "expected one root element";
  return "";
}

TEST_F(RecordsTest, SummaryCountsConfirmMeasurementsApartFromTrials) {
  std::string p = path("confirmed.jsonl");
  {
    LogWriter w(p);
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 0, 4e-3));  // trial 1
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 1, 2e-3));  // trial 2: one lucky measurement
    for (double cost : {3e-3, 3e-3, 4e-3}) {
      Record c = make_record("matmul", {64, 64, 64}, "llvm", cost == 4e-3 ? 0 : 1, cost);
      c.tuner = kConfirmTuner;
      w.write(c);
    }
  }
  auto rows = summary({p});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].trials, 2);
  EXPECT_EQ(rows[0].valid, 2);
  EXPECT_EQ(rows[0].confirmations, 3);
  EXPECT_EQ(rows[0].best_config, 1);
  EXPECT_DOUBLE_EQ(rows[0].best_gflops, 2.0 * 64 * 64 * 64 / 3e-3 / 1e9);  // config 1's median
  EXPECT_EQ(rows[0].trials_to_95, 2);
  std::string table = format_summary(rows);
  EXPECT_NE(table.find("confirm"), std::string::npos) << table;
  EXPECT_NE(table.find("2      2  -             3"), std::string::npos) << table;
}

// Two shapes of one template, whose configs are matched by knob values (their indices differ).
TEST_F(RecordsTest, PortableConfigsRankByGeometricMeanOfRelativeSpeed) {
  std::string p = path("shapes.jsonl");
  auto rec = [](std::vector<int64_t> shape, int64_t index, int64_t tile, double cost,
                ErrorCode err = ErrorCode::kNoError) {
    Record r = make_record("matmul", std::move(shape), "llvm", index, cost, err);
    r.config.knobs["tile_x"] = {-1, tile};
    return r;
  };
  {
    LogWriter w(p);
    w.write(rec({64, 64, 64}, 0, 4, 1e-3));  // the best of shape 1
    w.write(rec({64, 64, 64}, 1, 8, 2e-3));
    w.write(rec({64, 64, 64}, 2, 16, 4e-3));
    w.write(rec({64, 64, 64}, 3, 32, 1e-3));  // not measured on shape 2: left out
    w.write(rec({32, 32, 32}, 5, 4, 8e-3));
    w.write(rec({32, 32, 32}, 6, 8, 2e-3));   // the best of shape 2
    w.write(rec({32, 32, 32}, 7, 16, 0, ErrorCode::kCompile));  // no valid record: left out
    w.write(rec({32, 32, 32}, 6, 8, 2e-3));   // measured twice: one config still
  }
  std::vector<std::string> workloads;
  std::vector<PortableConfig> c = portable_configs({p}, &workloads);
  EXPECT_EQ(workloads, (std::vector<std::string>{"matmul(64,64,64;float32) llvm", "matmul(32,32,32;float32) llvm"}));
  ASSERT_EQ(c.size(), 2u);
  // tile 8: 1/2 and 1, geomean sqrt(1/2); tile 4: 1 and 1/4, geomean 1/2.
  EXPECT_EQ(c[0].config.knobs.at("tile_x"), (std::vector<int64_t>{-1, 8}));
  EXPECT_EQ(c[0].config.index, 1);
  EXPECT_NEAR(c[0].ratios[0], 0.5, 1e-12);
  EXPECT_NEAR(c[0].ratios[1], 1.0, 1e-12);
  EXPECT_NEAR(c[0].geomean, std::sqrt(0.5), 1e-12);
  EXPECT_EQ(c[1].config.knobs.at("tile_x"), (std::vector<int64_t>{-1, 4}));
  EXPECT_NEAR(c[1].geomean, 0.5, 1e-12);
  std::ofstream(path("empty.jsonl")).close();
  EXPECT_TRUE(portable_configs({path("empty.jsonl")}, &workloads).empty());
  EXPECT_TRUE(workloads.empty());
}

TEST_F(RecordsTest, MergeDistillSummaryCurveAndPlot) {
  std::string p1 = path("a.jsonl"), p2 = path("b.jsonl");
  {
    LogWriter w(p1);
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 0, 4e-3));                       // trial 1
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 1, 0, ErrorCode::kCompile));     // trial 2
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 2, 1.02e-3));                    // trial 3
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 3, 2e-3));                       // trial 4
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 4, 1e-3));                       // trial 5
    w.write(make_record("matmul", {32, 32, 32}, "llvm", 0, 0, ErrorCode::kRunTimeout));
  }
  {
    LogWriter w(p2);
    // A config measured twice ranks by the slower of the two (median_cost).
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 0, 3e-3));  // faster than p1's 4e-3
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 1, 5e-3));  // with p1's compile error: the error
    w.write(make_record("matmul", {64, 64, 64}, "llvm", 2, 9e-3));  // slower than p1's 1.02e-3
    w.write(make_record("matmul", {64, 64, 64}, "llvm -mcpu=znver4", 0, 8e-3));
  }

  auto rows = summary({p1});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "matmul(64,64,64;float32)");
  EXPECT_EQ(rows[0].trials, 5);
  EXPECT_EQ(rows[0].valid, 4);
  EXPECT_EQ(rows[0].errors.at(ErrorCode::kCompile), 1);
  EXPECT_EQ(rows[0].best_config, 4);
  EXPECT_DOUBLE_EQ(rows[0].best_gflops, 2.0 * 64 * 64 * 64 / 1e-3 / 1e9);
  EXPECT_EQ(rows[0].trials_to_95, 3);  // 1.02e-3 is within 5% of 1e-3
  EXPECT_EQ(rows[0].configs, 4);       // the compile error's config has no valid record
  EXPECT_EQ(rows[0].configs_within_95, 2);
  EXPECT_EQ(rows[0].top_configs, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(rows[1].valid, 0);
  EXPECT_EQ(rows[1].errors.at(ErrorCode::kRunTimeout), 1);
  EXPECT_EQ(rows[1].trials_to_95, -1);
  std::string table = format_summary(rows);
  EXPECT_NE(table.find("matmul(64,64,64;float32)"), std::string::npos) << table;
  EXPECT_NE(table.find("compile=1"), std::string::npos) << table;
  EXPECT_NE(table.find("run_timeout=1"), std::string::npos) << table;
  EXPECT_NE(table.find(" 2/4  4,2,3"), std::string::npos) << table;
  // A config counts once, at its median record: 0 at 4e-3, 2 at 9e-3, 1 not at all.
  auto two = summary({p1, p2});
  EXPECT_EQ(two[0].trials, 8);
  EXPECT_EQ(two[0].configs, 4);
  EXPECT_EQ(two[0].top_configs, (std::vector<int64_t>{4, 3, 0}));
  EXPECT_EQ(two[0].configs_within_95, 1);

  std::string merged = path("merged.jsonl");
  MergeStats st = merge({p1, p2}, merged);
  EXPECT_EQ(st.read, 10);
  EXPECT_EQ(st.duplicates, 3);
  EXPECT_EQ(st.written, 7);
  LogContents m = read_log(merged);
  ASSERT_EQ(m.records.size(), 7u);
  std::map<std::pair<std::string, int64_t>, const Record*> by;
  for (const auto& r : m.records) by[{r.workload.key() + r.target, r.config.index}] = &r;
  EXPECT_DOUBLE_EQ(by.at({"matmul(64,64,64;float32)llvm", 0})->result.mean_cost(), 4e-3);
  EXPECT_EQ(by.at({"matmul(64,64,64;float32)llvm", 1})->result.error, ErrorCode::kCompile);
  EXPECT_DOUBLE_EQ(by.at({"matmul(64,64,64;float32)llvm", 2})->result.mean_cost(), 9e-3);
  EXPECT_FALSE(by.at({"matmul(32,32,32;float32)llvm", 0})->valid());  // invalid records are kept
  EXPECT_TRUE(by.count({"matmul(64,64,64;float32)llvm -mcpu=znver4", 0}));
  EXPECT_EQ(merge({merged}, merged).written, 7);  // in place
  EXPECT_EQ(read_log(merged).records.size(), 7u);

  std::string distilled = path("best.jsonl");
  EXPECT_EQ(distill({p1, p2}, distilled), 2);
  LogContents d = read_log(distilled);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[0].target, "llvm");
  EXPECT_EQ(d.records[0].config.index, 4);
  EXPECT_EQ(d.records[1].target, "llvm -mcpu=znver4");

  double g = 2.0 * 64 * 64 * 64 / 1e9;
  std::vector<double> curve = best_curve(p1);
  ASSERT_EQ(curve.size(), 6u);
  EXPECT_DOUBLE_EQ(curve[0], g / 4e-3);
  EXPECT_DOUBLE_EQ(curve[1], g / 4e-3);
  EXPECT_DOUBLE_EQ(curve[2], g / 1.02e-3);
  EXPECT_DOUBLE_EQ(curve[3], g / 1.02e-3);
  EXPECT_DOUBLE_EQ(curve[4], g / 1e-3);
  EXPECT_DOUBLE_EQ(curve[5], g / 1e-3);
  EXPECT_EQ(best_curve(p1, "matmul(32,32,32;float32)"), std::vector<double>{0});
  {  // re-measurements by the confirm step are not trials of the search
    LogWriter w(p1);
    Record again = make_record("matmul", {64, 64, 64}, "llvm", 4, 0.5e-3);
    again.tuner = "confirm";
    w.write(again);
  }
  EXPECT_EQ(best_curve(p1).size(), 6u);

  std::string svg = plot_svg({{"a <xgb>", curve}, {"b & random", best_curve(p2)}}, "matmul \"64\"");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 2u);
  EXPECT_NE(svg.find("a &lt;xgb&gt;"), std::string::npos);
  EXPECT_NE(svg.find("b &amp; random"), std::string::npos);
  EXPECT_NE(svg.find("GFLOP/s"), std::string::npos);
  EXPECT_EQ(xml_problem(plot_svg({}, "empty")), "");
  EXPECT_EQ(xml_problem("<svg><g></svg>"), "mismatched </svg>");  // the checker can fail
}

}  // namespace
}  // namespace loom::records
