// Log lines from outside: deep nesting, integers out of range, a trial with no error and no
// time, and records that name no config of their template's space are each skipped with a
// warning naming the file, the line and why, by every reader alike (read_log, ApplyHistoryBest,
// the log tools).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "loom/records/log_tools.h"
#include "loom/records/record.h"
#include "loom/records/record_check.h"
#include "loom/runtime/error.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/space.h"
#include "loom/tuner/task.h"

namespace loom::records {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class BadRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("loom_bad_records_{}_{}", info->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    set_record_check(nullptr);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::vector<std::string>& lines) {
    std::string p = path(name);
    std::ofstream f(p);
    for (const std::string& l : lines) f << l << "\n";
    return p;
  }
  fs::path dir_;
};

tuner::Task matmul_task() { return tuner::Task::create("matmul", {64, 64, 64}, Target("llvm")); }

/// The name of a split knob of the task's space (whose value, not a label, says the config).
std::string split_knob(const tuner::Task& task) {
  for (const tuner::Knob& k : task.space().knobs())
    if (k.kind == tuner::KnobKind::kSplit) return k.name;
  ADD_FAILURE() << "no split knob";
  return "";
}

Record valid_record(const tuner::Task& task, int64_t index, double cost) {
  MeasureResult res;
  res.costs = {cost, cost};
  res.all_cost = 0.1;
  res.timestamp = 1700000000.0;
  return task.record(index, res, "random");
}

/// The record's JSON with `edit` applied.
std::string edited(const Record& r, const std::function<void(json&)>& edit) {
  json j = json::parse(r.to_json());
  edit(j);
  return j.dump();
}

TEST_F(BadRecords, MalformedLinesAreSkippedWithTheirReason) {
  tuner::Task task = matmul_task();
  Record good = valid_record(task, 1, 1e-3);
  std::string deep = std::string(100000, '[') + "1" + std::string(100000, ']');
  std::string deep_line = good.to_json();
  deep_line.replace(deep_line.find("\"shape\":[64,64,64]"), 18, "\"shape\":" + deep);
  struct Case {
    std::string line, reason;
  };
  std::vector<Case> cases = {
      {deep_line, "JSON nested more than 64 levels deep at workload.shape[0]×62"},
      {std::string(100000, '['), "JSON nested more than 64 levels deep at [0]×64"},
      {edited(good, [](json& j) { j["config"]["index"] = json::parse("9223372036854775808"); }),
       "record field 'config.index': 9223372036854775808 does not fit in int64"},
      {edited(good, [](json& j) { j["config"]["index"] = 1.5; }), "record field 'config.index': must be an integer"},
      {edited(good, [](json& j) { j["config"]["index"] = "3"; }),
       "record field 'config.index' is a string, expected an integer"},
      {edited(good, [](json& j) { j["config"]["index"] = true; }),
       "record field 'config.index' is a boolean, expected an integer"},
      {edited(good, [](json& j) { j["v"] = 4294967297LL; }), "record field 'v': 4294967297 does not fit in int32"},
      {edited(good, [](json& j) { j["workload"]["shape"][0] = 1e19; }),
       "record field 'workload.shape[0]': 1e+19 does not fit in int64"},
      {edited(good, [](json& j) { j["result"]["costs"] = json::array(); }),
       "record field 'result.costs' is empty but 'result.error' is \"no_error\""},
  };
  std::vector<std::string> lines = {good.to_json()};
  for (const Case& c : cases) lines.push_back(c.line);
  std::string p = write("log.jsonl", lines);
  LogContents log = read_log(p);
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.warnings.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string prefix = fmt::format("{}:{}: skipped: ", p, i + 2);
    EXPECT_EQ(log.warnings[i].rfind(prefix, 0), 0u) << log.warnings[i];
    EXPECT_NE(log.warnings[i].find(cases[i].reason), std::string::npos) << log.warnings[i];
    EXPECT_LT(log.warnings[i].size(), 600u) << log.warnings[i].substr(0, 600);
  }
  // A failed trial without times is a failure, not a malformed line.
  Record failed = good;
  failed.result.costs.clear();
  failed.result.error = ErrorCode::kRuntime;
  EXPECT_NO_THROW(Record::from_json(failed.to_json()));
}

TEST_F(BadRecords, RecordProblemJudgesIndexAndKnobs) {
  tuner::Task task = matmul_task();
  const int64_t n = task.space().size();
  ASSERT_GT(n, 3);
  Record r = valid_record(task, 2, 1e-3);
  EXPECT_EQ(tuner::record_problem(task, r), "");
  Record outside = r;
  outside.config.index = n;
  EXPECT_NE(tuner::record_problem(task, outside).find(fmt::format("config index {} is outside the config space", n)),
            std::string::npos);
  Record unknown_knob = r;
  unknown_knob.config.knobs["no_such_knob"] = {1};
  EXPECT_NE(tuner::record_problem(task, unknown_knob).find("knob 'no_such_knob' is not in this config space"),
            std::string::npos)
      << tuner::record_problem(task, unknown_knob);
  Record bad_value = r;
  bad_value.config.knobs[split_knob(task)] = {524288, 524288, 524288};
  std::string why = tuner::record_problem(task, bad_value);
  EXPECT_NE(why.find("config 2 does not fit the config space of matmul(64,64,64;float32) on " + r.target), std::string::npos)
      << why;
  Record other = r;
  other.config.index = 3;  // the knobs are config 2's
  EXPECT_EQ(tuner::record_problem(task, other),
            fmt::format("config index 3 does not match its knob values, which are config 2 of {} on {}", task.key(),
                        r.target));
}

TEST_F(BadRecords, EveryReaderSkipsRecordsThatFitNoConfig) {
  tuner::Task task = matmul_task();
  Record good = valid_record(task, 2, 1e-3);
  Record fast_but_bogus = valid_record(task, 5, 1e-9);
  fast_but_bogus.config.knobs[split_knob(task)] = {524288, 1, 1};
  std::string p = write("log.jsonl", {good.to_json(), fast_but_bogus.to_json()});
  tuner::install_record_check();

  LogContents log = read_log(p);
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_EQ(log.warnings[0].rfind(p + ":2: skipped: config 5 does not fit the config space of matmul", 0), 0u)
      << log.warnings[0];

  ApplyHistoryBest best(p);
  std::optional<Record> b = best.best(task.workload(), task.target().str());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->config.index, 2);
  EXPECT_NO_THROW(tuner::record_config(task, *b));

  std::vector<WorkloadSummary> rows = summary({p});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].best_config, 2);
  EXPECT_EQ(rows[0].trials, 1);
  EXPECT_LT(rows[0].best_gflops, 1e4);

  std::string merged = path("merged.jsonl");
  EXPECT_EQ(merge({p}, merged).written, 1);
  EXPECT_EQ(distill({p}, path("distilled.jsonl")), 1);
  EXPECT_EQ(best_curve(p).size(), 1u);

  // Records of a workload no template makes are kept: the check cannot judge them.
  Record fused = valid_record(task, 7, 1e-3);
  fused.workload.op = "fused_kernel_0";
  std::string q = write("fused.jsonl", {fused.to_json()});
  EXPECT_EQ(read_log(q).records.size(), 1u);
}

}  // namespace
}  // namespace loom::records
