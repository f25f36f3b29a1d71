#include "loom/tuner/measure.h"

#include <gtest/gtest.h>

#include "tuner/test_templates.h"

namespace loom::tuner {
namespace {

using records::ErrorCode;

MeasureOptions fast_options() {
  MeasureOptions o;
  o.min_repeat_ms = 5;
  o.repeat = 2;
  o.timeout_s = 5;
  o.n_parallel = 2;
  return o;
}

/// The index of the config of `task` with the given knob value indices.
int64_t config_with(const Task& task, const std::map<std::string, int>& picks) {
  std::vector<int> choices(task.space().knobs().size(), 0);
  for (const auto& [name, v] : picks) choices[size_t(task.space().knob_index(name))] = v;
  return task.space().index_of(choices);
}

class MeasureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::register_test_templates(); }
};

TEST_F(MeasureTest, ValidMatmulConfigsHavePositiveCosts) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  Measurer m(task, fast_options());
  std::vector<int64_t> idx = {task.default_index(), (task.default_index() + 1) % task.space().size()};
  auto res = m.measure(idx);
  ASSERT_EQ(res.size(), 2u);
  for (const auto& r : res) {
    EXPECT_EQ(r.error, ErrorCode::kNoError) << r.error_msg;
    ASSERT_EQ(r.costs.size(), 2u);
    for (double c : r.costs) EXPECT_GT(c, 0);
    EXPECT_GT(r.all_cost, 0);
    EXPECT_GT(r.timestamp, 1.6e9);
  }
}

TEST_F(MeasureTest, FailuresAreRecordedWithTheirCodesAndTheBatchGoesOn) {
  Task task = Task::create("test_faulty", {64}, Target("llvm"));
  MeasureOptions o = fast_options();
  o.timeout_s = 2;
  Measurer m(task, o);
  std::vector<int64_t> idx = {
      config_with(task, {{"mode", 0}}), config_with(task, {{"mode", 1}}), config_with(task, {{"mode", 2}}),
      config_with(task, {{"mode", 3}}), config_with(task, {{"mode", 4}}), config_with(task, {{"mode", 0}, {"split", 1}}),
  };
  auto res = m.measure(idx);
  ASSERT_EQ(res.size(), idx.size());
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
  EXPECT_EQ(res[1].error, ErrorCode::kBuildTimeout) << res[1].error_msg;
  EXPECT_EQ(res[2].error, ErrorCode::kCompile) << res[2].error_msg;
  EXPECT_NE(res[2].error_msg.find("SIGABRT"), std::string::npos) << res[2].error_msg;
  EXPECT_EQ(res[3].error, ErrorCode::kWrongAnswer) << res[3].error_msg;
  EXPECT_EQ(res[4].error, ErrorCode::kInstantiation) << res[4].error_msg;
  EXPECT_NE(res[4].error_msg.find("mode 4 is rejected"), std::string::npos) << res[4].error_msg;
  EXPECT_EQ(res[5].error, ErrorCode::kNoError) << res[5].error_msg;
  for (size_t i = 1; i < 5; ++i) EXPECT_TRUE(res[i].costs.empty());
  // The replaced workers still measure.
  auto again = m.measure(std::vector<int64_t>{idx[0], idx[5]});
  EXPECT_EQ(again[0].error, ErrorCode::kNoError) << again[0].error_msg;
  EXPECT_EQ(again[1].error, ErrorCode::kNoError) << again[1].error_msg;
}

TEST_F(MeasureTest, BuildOnlyRecordsBuildFailuresAndTimesNothing) {
  Task task = Task::create("test_faulty", {64}, Target("llvm"));
  MeasureOptions o = fast_options();
  o.timeout_s = 2;
  Measurer m(task, o);
  std::vector<int64_t> idx = {config_with(task, {{"mode", 0}}), config_with(task, {{"mode", 1}}),
                              config_with(task, {{"mode", 2}}), config_with(task, {{"mode", 3}}),
                              config_with(task, {{"mode", 4}})};
  auto res = m.build(idx);
  ASSERT_EQ(res.size(), idx.size());
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
  EXPECT_EQ(res[1].error, ErrorCode::kBuildTimeout) << res[1].error_msg;
  EXPECT_EQ(res[2].error, ErrorCode::kCompile) << res[2].error_msg;
  EXPECT_EQ(res[3].error, ErrorCode::kNoError) << "a wrong answer shows only when run: " << res[3].error_msg;
  EXPECT_EQ(res[4].error, ErrorCode::kInstantiation) << res[4].error_msg;
  for (const auto& r : res) EXPECT_TRUE(r.costs.empty());
  for (const auto& r : res) EXPECT_GT(r.timestamp, 1.6e9);
  // The same workers measure afterwards.
  auto measured = m.measure(std::vector<int64_t>{idx[0], idx[3]});
  EXPECT_EQ(measured[0].error, ErrorCode::kNoError) << measured[0].error_msg;
  EXPECT_EQ(measured[1].error, ErrorCode::kWrongAnswer) << measured[1].error_msg;
}

TEST_F(MeasureTest, ARunTimeCrashIsARuntimeErrorNamingTheSignal) {
  Task task = Task::create("test_segv", {16}, Target("llvm"));
  Measurer m(task, fast_options());
  auto res = m.measure(std::vector<int64_t>{0, 1, 2});
  for (const auto& r : res) {
    EXPECT_EQ(r.error, ErrorCode::kRuntime) << r.error_msg;
    EXPECT_NE(r.error_msg.find("SIGSEGV"), std::string::npos) << r.error_msg;
  }
}

TEST_F(MeasureTest, ARunTimeHangIsARunTimeout) {
  Task task = Task::create("test_hang", {4}, Target("llvm"));
  MeasureOptions o = fast_options();
  o.timeout_s = 1;
  Measurer m(task, o);
  auto res = m.measure(std::vector<int64_t>{0, 1});
  for (const auto& r : res) EXPECT_EQ(r.error, ErrorCode::kRunTimeout) << r.error_msg;
}

// rotate_inputs: runs timed on copies of the inputs (64 of a small task's) give costs as
// the plain measurement does, and a wrong answer is still one.
TEST_F(MeasureTest, RotatedInputsAreTimedAndStillChecked) {
  Task task = Task::create("matmul", {64, 48, 40}, Target("llvm"));
  MeasureOptions o = fast_options();
  o.rotate_inputs = true;
  Measurer m(task, o);
  auto res = m.measure(std::vector<int64_t>{task.default_index()});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
  ASSERT_EQ(res[0].costs.size(), 2u);
  for (double c : res[0].costs) EXPECT_GT(c, 0);
  Task faulty = Task::create("test_faulty", {64}, Target("llvm"));
  Measurer mf(faulty, o);
  auto bad = mf.measure(std::vector<int64_t>{config_with(faulty, {{"mode", 3}})});
  EXPECT_EQ(bad[0].error, ErrorCode::kWrongAnswer) << bad[0].error_msg;
}

TEST_F(MeasureTest, WithoutCorrectnessCheckingAWrongScheduleIsTimed) {
  Task task = Task::create("test_faulty", {64}, Target("llvm"));
  MeasureOptions o = fast_options();
  o.check_correctness = false;
  o.n_parallel = 1;
  Measurer m(task, o);
  auto res = m.measure(std::vector<int64_t>{config_with(task, {{"mode", 3}})});
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
}

TEST_F(MeasureTest, LargeTasksUseTheCompiledDefaultAsReference) {
  Task task = Task::create("test_faulty", {64}, Target("llvm"));
  MeasureOptions o = fast_options();
  o.evaluate_flop_limit = 0;  // as if te::evaluate were too slow
  Measurer m(task, o);
  auto res = m.measure(std::vector<int64_t>{config_with(task, {{"mode", 0}, {"split", 1}}), config_with(task, {{"mode", 3}})});
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
  EXPECT_EQ(res[1].error, ErrorCode::kWrongAnswer) << res[1].error_msg;
}

// A template whose default config it rejects itself: the other configs are still checked
// against a reference (evaluated, or built with a plain schedule), not all failed with it.
TEST_F(MeasureTest, ARejectedDefaultConfigFailsOnlyItself) {
  Template t = get_template("test_faulty");
  t.name = "test_rejected_default";
  t.default_config = [](const ConfigSpace& space) {
    std::vector<int> c(space.knobs().size(), 0);
    c[size_t(space.knob_index("mode"))] = 4;  // mode 4: the template rejects it
    return space.index_of(c);
  };
  register_template(t);
  Task task = Task::create("test_rejected_default", {64}, Target("llvm"));
  for (double limit : {1e18, 0.0}) {  // the reference evaluated, then built
    SCOPED_TRACE(limit);
    MeasureOptions o = fast_options();
    o.evaluate_flop_limit = limit;
    Measurer m(task, o);
    auto res = m.measure(std::vector<int64_t>{task.default_index(), config_with(task, {{"mode", 0}, {"split", 1}}),
                                              config_with(task, {{"mode", 3}})});
    EXPECT_EQ(res[0].error, ErrorCode::kInstantiation) << res[0].error_msg;
    EXPECT_EQ(res[1].error, ErrorCode::kNoError) << res[1].error_msg;
    EXPECT_EQ(res[2].error, ErrorCode::kWrongAnswer) << res[2].error_msg;
  }
}

TEST_F(MeasureTest, HostCpuName) {
  // /proc/cpuinfo has a model name on the machines we test on; the call must not throw.
  EXPECT_NO_THROW(host_cpu_name());
}

}  // namespace
}  // namespace loom::tuner
