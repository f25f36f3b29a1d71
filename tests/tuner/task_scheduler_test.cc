// The task scheduler against known costs (TaskSchedulerOptions::measure_fn): the warm-up, the
// allocation by gradient and round-robin, the budget, exhausted tasks, resume, the progress
// table and the latency file, and the cost model shared by the tasks of one template.
#include "loom/tuner/task_scheduler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace loom::tuner {
namespace {

namespace fs = std::filesystem;

/// A synthetic landscape per task: config i costs base × (1 + spread × d(i, peak)), d the
/// squared distance of its knob choices from the peak's. spread 0: every config costs base.
struct Landscape {
  double base = 1e-3;
  double spread = 1.0;
  int64_t peak = 0;
};

double landscape_cost(const Task& task, const Landscape& l, int64_t index) {
  const std::vector<int> c = task.space().get(index).choices();
  const std::vector<int> p = task.space().get(l.peak).choices();
  double d = 0;
  for (size_t k = 0; k < c.size(); ++k) d += double(c[k] - p[k]) * double(c[k] - p[k]);
  return l.base * (1 + l.spread * d);
}

class TaskSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("loom_scheduler_test_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// Options measuring task i on landscapes[i]; every measured (task, config) is counted in
  /// measured_ (a config measured twice would count 2).
  TaskSchedulerOptions options(const std::vector<WeightedTask>& tasks, const std::vector<Landscape>& landscapes,
                               int n_trial, int round) {
    TaskSchedulerOptions o;
    o.n_trial = n_trial;
    o.round_trials = round;
    o.tune.batch_size = 4;
    o.tune.seed = 3;
    o.tune.confirm_top = 0;
    o.tuner = "random";
    o.measure_fn = [this, tasks, landscapes](size_t t, const std::vector<int64_t>& configs) {
      std::vector<records::MeasureResult> out;
      for (int64_t c : configs) {
        ++measured_[{t, c}];
        records::MeasureResult r;
        r.costs = {landscape_cost(tasks[t].task, landscapes[t], c)};
        out.push_back(r);
      }
      return out;
    };
    return o;
  }

  fs::path dir_;
  std::map<std::pair<size_t, int64_t>, int> measured_;
};

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

Task matmul(int64_t n) { return Task::create("matmul", {n, n, n}, Target("llvm")); }

TEST_F(TaskSchedulerTest, WarmUpGivesEveryTaskARoundThenSpendsTheBudgetExactly) {
  std::vector<WeightedTask> tasks = {{matmul(32), 2}, {matmul(16), 1}, {Task::create("matmul", {32, 16, 8}, Target("llvm")), 3}};
  std::vector<Landscape> ls = {{2e-3, 1.0, 100}, {1e-3, 0.5, 20}, {1e-3, 1.0, 5}};
  TaskSchedulerOptions o = options(tasks, ls, 46, 4);
  o.latency_file = path("e2e.jsonl");
  SchedulerSummary s = TaskScheduler(tasks, o).run();
  EXPECT_EQ(s.trials, 46);
  int sum = 0;
  for (const TaskProgress& t : s.tasks) {
    EXPECT_GE(t.rounds, 1);
    EXPECT_GT(t.trials, 0);
    EXPECT_TRUE(std::isfinite(t.best_s));
    sum += t.trials;
  }
  EXPECT_EQ(sum, 46);
  EXPECT_EQ(int(measured_.size()), 46);  // nothing measured twice
  // The first three rounds are the warm-up, one per task in order.
  std::vector<nlohmann::json> lines = read_lines(o.latency_file);
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines.front()["event"], "start");
  EXPECT_EQ(lines.back()["event"], "end");
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(lines[size_t(1 + k)]["phase"], "warm-up");
    EXPECT_EQ(lines[size_t(1 + k)]["task"], k);
  }
  EXPECT_TRUE(lines[1]["estimated_ms"].is_null());  // tasks 1 and 2 have no latency yet
  EXPECT_FALSE(lines[3]["estimated_ms"].is_null());
  EXPECT_EQ(lines[4]["phase"], "gradient");
  // 46 trials in rounds of 4: 11 full rounds and one of 2.
  EXPECT_EQ(s.rounds, 12);
  EXPECT_EQ(lines.size(), size_t(1 + 12 + 1));
}

TEST_F(TaskSchedulerTest, EstimateIsTheWeightedSumOfTheBestMeasuredLatencies) {
  std::vector<WeightedTask> tasks = {{matmul(32), 4}, {matmul(16), 1}};
  std::vector<Landscape> ls = {{1e-3, 2.0, 300}, {3e-4, 1.0, 40}};
  TaskSchedulerOptions o = options(tasks, ls, 40, 8);
  o.latency_file = path("e2e.jsonl");
  SchedulerSummary s = TaskScheduler(tasks, o).run();
  std::vector<double> best(2, INFINITY);
  for (const auto& [tc, n] : measured_)
    best[tc.first] = std::min(best[tc.first], landscape_cost(tasks[tc.first].task, ls[tc.first], tc.second));
  EXPECT_DOUBLE_EQ(s.tasks[0].best_s, best[0]);
  EXPECT_DOUBLE_EQ(s.tasks[1].best_s, best[1]);
  EXPECT_DOUBLE_EQ(s.estimated_s, 4 * best[0] + best[1]);
  EXPECT_NEAR(read_lines(o.latency_file).back()["estimated_ms"].get<double>(), s.estimated_s * 1e3, 1e-9);
}

TEST_F(TaskSchedulerTest, GradientSpendsTrialsWhereTheEstimateFalls) {
  // Task 0 runs 10 times per network run and improves with tuning; task 1 runs once and every
  // config costs the same. After the warm-up nearly every round goes to task 0.
  std::vector<WeightedTask> tasks = {{matmul(32), 10}, {matmul(16), 1}};
  std::vector<Landscape> ls = {{1e-3, 1.0, 300}, {1e-3, 0.0, 0}};
  TaskSchedulerOptions o = options(tasks, ls, 96, 8);
  SchedulerSummary s = TaskScheduler(tasks, o).run();
  EXPECT_EQ(s.trials, 96);
  EXPECT_GE(s.tasks[0].trials, 4 * s.tasks[1].trials) << s.tasks[0].trials << " vs " << s.tasks[1].trials;

  measured_.clear();
  o.strategy = SchedulerStrategy::kRoundRobin;
  SchedulerSummary rr = TaskScheduler(tasks, o).run();
  EXPECT_EQ(rr.tasks[0].trials, 48);
  EXPECT_EQ(rr.tasks[1].trials, 48);
  // The gradient's allocation gives the lower estimate.
  EXPECT_LE(s.estimated_s, rr.estimated_s);
}

TEST_F(TaskSchedulerTest, GradientPrefersTheHeavierOfTwoEqualTasks) {
  std::vector<WeightedTask> tasks = {{matmul(32), 1}, {Task::create("matmul", {32, 32, 16}, Target("llvm")), 6}};
  std::vector<Landscape> ls = {{1e-3, 1.0, 200}, {1e-3, 1.0, 200}};
  SchedulerSummary s = TaskScheduler(tasks, options(tasks, ls, 80, 8)).run();
  EXPECT_GT(s.tasks[1].trials, s.tasks[0].trials);
}

TEST_F(TaskSchedulerTest, DeterministicForASeed) {
  std::vector<WeightedTask> tasks = {{matmul(32), 3}, {matmul(16), 1}, {matmul(8), 2}};
  std::vector<Landscape> ls = {{1e-3, 1.0, 100}, {1e-3, 0.3, 30}, {2e-4, 1.0, 10}};
  auto run = [&](const std::string& log) {
    measured_.clear();
    TaskSchedulerOptions o = options(tasks, ls, 60, 4);
    o.tuner = "xgb";
    o.tune.log_file = log;
    SchedulerSummary s = TaskScheduler(tasks, o).run();
    std::vector<std::string> configs;
    for (const records::Record& r : records::read_log(log).records)
      configs.push_back(r.workload.key() + " " + std::to_string(r.config.index));
    return std::make_pair(s, configs);
  };
  auto [a, ca] = run(path("a.jsonl"));
  auto [b, cb] = run(path("b.jsonl"));
  ASSERT_EQ(ca.size(), 60u);
  EXPECT_EQ(ca, cb);
  for (size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(a.tasks[i].trials, b.tasks[i].trials);
}

TEST_F(TaskSchedulerTest, ExhaustedTasksGetNoMoreTrials) {
  // matmul 4x4x4 has a space of a few dozen configs; it is measured whole and then left.
  Task tiny = matmul(4);
  const int64_t tiny_size = tiny.space().size();
  ASSERT_LT(tiny_size, 64);
  std::vector<WeightedTask> tasks = {{tiny, 50}, {matmul(32), 1}};
  std::vector<Landscape> ls = {{1e-3, 1.0, 3}, {1e-3, 1.0, 100}};
  SchedulerSummary s = TaskScheduler(tasks, options(tasks, ls, 160, 8)).run();
  EXPECT_EQ(s.trials, 160);
  EXPECT_EQ(s.tasks[0].trials, tiny_size);
  EXPECT_TRUE(s.tasks[0].done);
  EXPECT_EQ(s.tasks[1].trials, 160 - tiny_size);
}

TEST_F(TaskSchedulerTest, ResumeMeasuresNothingTwiceAndRebuildsEachTasksState) {
  std::vector<WeightedTask> tasks = {{matmul(32), 2}, {matmul(16), 1}, {matmul(8), 1}};
  std::vector<Landscape> ls = {{1e-3, 1.0, 100}, {1e-3, 0.5, 20}, {1e-3, 1.0, 5}};
  const std::string log = path("net.jsonl");
  TaskSchedulerOptions o = options(tasks, ls, 36, 4);
  o.tuner = "xgb";
  o.tune.log_file = log;
  SchedulerSummary first = TaskScheduler(tasks, o).run();
  ASSERT_EQ(records::read_log(log).records.size(), 36u);

  // A fourth task joins (not in the log): it is warmed up, the others are not.
  std::vector<WeightedTask> more = tasks;
  more.push_back({Task::create("matmul", {16, 32, 8}, Target("llvm")), 1});
  std::vector<Landscape> more_ls = ls;
  more_ls.push_back({1e-3, 1.0, 7});
  TaskSchedulerOptions r = options(more, more_ls, 24, 4);
  r.tuner = "xgb";
  r.tune.log_file = log;
  r.tune.resume = true;
  r.latency_file = path("e2e.jsonl");
  std::ostringstream progress;
  r.progress = &progress;
  TaskScheduler second(more, r);
  SchedulerSummary s = second.run();
  EXPECT_EQ(s.trials, 24);
  for (const auto& [tc, n] : measured_) EXPECT_EQ(n, 1) << "task " << tc.first << " config " << tc.second;
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(s.tasks[i].resumed, first.tasks[i].trials);
    EXPECT_LE(s.tasks[i].best_s, first.tasks[i].best_s);
    EXPECT_GE(s.tasks[i].rounds, (first.tasks[i].trials + 3) / 4);
  }
  EXPECT_EQ(s.tasks[3].resumed, 0);
  EXPECT_GT(s.tasks[3].trials, 0);
  std::vector<nlohmann::json> lines = read_lines(r.latency_file);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0]["resume"], true);
  EXPECT_EQ(lines[1]["phase"], "warm-up");
  EXPECT_EQ(lines[1]["task"], 3);
  EXPECT_NE(lines[2]["phase"], "warm-up");
  EXPECT_NE(progress.str().find("36 trials resumed from"), std::string::npos) << progress.str();
  EXPECT_EQ(records::read_log(log).records.size(), 60u);
}

TEST_F(TaskSchedulerTest, ProgressTableNamesEveryTaskAndTheEstimate) {
  std::vector<WeightedTask> tasks = {{matmul(32), 2}, {matmul(16), 1}};
  std::vector<Landscape> ls = {{1e-3, 1.0, 100}, {5e-4, 1.0, 20}};
  TaskSchedulerOptions o = options(tasks, ls, 32, 4);
  std::ostringstream progress;
  o.progress = &progress;
  o.table_every = 3;
  o.tune.confirm_top = 2;
  o.tune.confirm_measurements = 2;
  TaskScheduler ts(tasks, o);
  SchedulerSummary s = ts.run();
  const std::string p = progress.str();
  EXPECT_NE(p.find("after the warm-up"), std::string::npos);
  EXPECT_NE(p.find("[scheduler] done:"), std::string::npos);
  EXPECT_NE(p.find("round 1 (warm-up): task 0"), std::string::npos) << p;
  for (const TaskProgress& t : s.tasks) {
    EXPECT_NE(p.find(t.key), std::string::npos);
    EXPECT_EQ(t.confirmed, 2);  // each of the 2 fastest measured once more
  }
  const std::string table = ts.table();
  EXPECT_NE(table.find("estimated end-to-end latency"), std::string::npos);
  EXPECT_NE(table.find(fmt::format("{:.3f} ms", s.estimated_s * 1e3)), std::string::npos) << table;
  EXPECT_NE(table.find("confirm"), std::string::npos);
}

TEST_F(TaskSchedulerTest, GradientIsZeroForDoneTasksAndNegativeOtherwise) {
  std::vector<WeightedTask> tasks = {{matmul(4), 1}, {matmul(32), 1}};
  std::vector<Landscape> ls = {{1e-3, 1.0, 3}, {1e-3, 1.0, 100}};
  TaskScheduler ts(tasks, options(tasks, ls, 100, 8));
  for (size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(ts.gradient(i), -INFINITY);  // nothing measured yet
  ts.run();
  ASSERT_TRUE(ts.progress()[0].done);
  EXPECT_EQ(ts.gradient(0), 0.0);
  EXPECT_LT(ts.gradient(1), 0.0);
}

TEST_F(TaskSchedulerTest, RejectsBadTaskLists) {
  TaskSchedulerOptions o;
  EXPECT_THROW(TaskScheduler({}, o), Error);
  EXPECT_THROW(TaskScheduler({{matmul(8), 0}}, o), Error);
  EXPECT_THROW(TaskScheduler({{matmul(8), 1}, {matmul(8), 2}}, o), Error);
  o.alpha = 2;
  EXPECT_THROW(TaskScheduler({{matmul(8), 1}}, o), Error);
  EXPECT_EQ(parse_strategy("round-robin"), SchedulerStrategy::kRoundRobin);
  EXPECT_THROW(parse_strategy("greedy"), Error);
}

// The tasks of one template learn from each other: a tuner that starts after another task of
// its template was measured has a trained model before its first trial.
TEST_F(TaskSchedulerTest, TasksOfOneTemplateShareTheCostModelsRows) {
  auto shared = std::make_shared<SharedTrainingSet>(FeatureSet::kKnob);
  Task a = matmul(32), b = Task::create("matmul", {32, 16, 32}, Target("llvm"));
  Landscape l{1e-3, 1.0, 50};
  auto opts = [&](const Task& t) {
    TuneOptions o;
    o.batch_size = 4;
    o.progress = nullptr;
    o.measure_fn = [t, l](const std::vector<int64_t>& configs) {
      std::vector<records::MeasureResult> out(configs.size());
      for (size_t k = 0; k < configs.size(); ++k) out[k].costs = {landscape_cost(t, l, configs[k])};
      return out;
    };
    return o;
  };
  XGBTunerOptions xo;
  xo.shared = shared;
  XGBTuner ta(a, xo), tb(b, xo);
  EXPECT_EQ(ta.feature_set(), FeatureSet::kKnob);
  ta.begin(opts(a));
  ta.step(12);
  EXPECT_EQ(shared->workloads(), 1u);
  EXPECT_EQ(shared->rows(), 12u);
  std::ostringstream progress;
  TuneOptions ob = opts(b);
  ob.progress = &progress;
  tb.begin(ob);
  EXPECT_TRUE(tb.model().trained());  // from task a's rows alone
  EXPECT_NE(progress.str().find("shared with 1 other workload"), std::string::npos) << progress.str();
  tb.step(8);
  EXPECT_EQ(shared->workloads(), 2u);
  EXPECT_EQ(shared->rows(), 20u);
  EXPECT_EQ(shared->others(a.key()).size(), 1u);
  EXPECT_EQ(shared->others(a.key())[0]->xs.size(), 8u);
  ta.finish();
  tb.finish();
}

}  // namespace
}  // namespace loom::tuner
