#include "loom/tuner/tuner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "tuner/test_templates.h"

namespace loom::tuner {
namespace {

namespace fs = std::filesystem;
using records::ErrorCode;

TuneOptions fast_options(const std::string& log, int n_trial, int batch) {
  TuneOptions o;
  o.n_trial = n_trial;
  o.batch_size = batch;
  o.log_file = log;
  o.measure.min_repeat_ms = 5;
  o.measure.repeat = 3;
  o.measure.timeout_s = 10;
  o.measure.n_parallel = 2;
  o.seed = 7;
  return o;
}

class TunerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::register_test_templates(); }
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("loom_tuner_test_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string log_path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(TunerTest, XGBTuningWritesAValidLogAndMatchesOrBeatsTheDefault) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  std::string log = log_path("xgb.jsonl");
  std::ostringstream progress;
  TuneOptions o = fast_options(log, 24, 8);
  o.progress = &progress;
  XGBTuner tuner(task);
  TuneSummary sum = tuner.tune(o);
  EXPECT_EQ(sum.trials, 24);
  ASSERT_TRUE(sum.best.has_value());
  EXPECT_TRUE(tuner.model().trained());

  records::LogContents contents = records::read_log(log);
  EXPECT_TRUE(contents.warnings.empty());
  ASSERT_EQ(contents.records.size(), 24u);
  std::set<int64_t> seen;
  for (const records::Record& r : contents.records) {
    EXPECT_EQ(r.workload.key(), task.key());
    EXPECT_EQ(r.target, task.target().str());
    EXPECT_EQ(r.tuner, "xgb");
    EXPECT_DOUBLE_EQ(r.flop, task.flop());
    EXPECT_FALSE(r.loom_version.empty());
    EXPECT_TRUE(seen.insert(r.config.index).second) << "config " << r.config.index << " measured twice";
    EXPECT_NO_THROW(task.space().from_record(r.config));
  }
  // The default config was measured first and the tuned best is at least as fast. (Comparing
  // fresh timings of the two would be noise on a loaded machine; timing checks live in bench/.)
  const records::Record* def = nullptr;
  for (const records::Record& r : contents.records) {
    if (r.config.index == task.default_index()) def = &r;
  }
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(contents.records[0].config.index, task.default_index());
  ASSERT_TRUE(def->valid()) << def->result.error_msg;
  EXPECT_GE(sum.best_gflops(), def->gflops());
  EXPECT_GT(sum.best_gflops(), 0);

  std::string text = progress.str();
  EXPECT_NE(text.find("24/24 trials"), std::string::npos) << text;
  EXPECT_NE(text.find("done"), std::string::npos) << text;
  EXPECT_NE(text.find("GFLOP/s"), std::string::npos) << text;
}

TEST_F(TunerTest, ResumeNeverMeasuresAConfigTwice) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  std::string log = log_path("resume.jsonl");
  TuneOptions o = fast_options(log, 8, 4);
  o.progress = nullptr;
  XGBTuner first(task);
  TuneSummary s1 = first.tune(o);
  EXPECT_EQ(s1.trials, 8);

  o.resume = true;
  XGBTuner second(task);
  TuneSummary s2 = second.tune(o);
  EXPECT_EQ(s2.resumed, 8);
  EXPECT_EQ(s2.trials, 8);
  ASSERT_TRUE(s2.best.has_value());
  EXPECT_LE(s2.best->result.mean_cost(), s1.best->result.mean_cost());

  auto recs = records::read_log(log).records;
  ASSERT_EQ(recs.size(), 16u);
  std::set<int64_t> seen;
  for (const auto& r : recs) EXPECT_TRUE(seen.insert(r.config.index).second) << r.config.index;

  // A grid tuner resuming from the same log skips what is there.
  GridTuner grid(task);
  TuneOptions g = o;
  g.include_default = false;
  g.n_trial = 4;
  TuneSummary s3 = grid.tune(g);
  EXPECT_EQ(s3.resumed, 16);
  recs = records::read_log(log).records;
  ASSERT_EQ(recs.size(), 20u);
  seen.clear();
  for (const auto& r : recs) EXPECT_TRUE(seen.insert(r.config.index).second) << r.config.index;
}

TEST_F(TunerTest, BaselineTunersMeasureDistinctConfigs) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  for (const std::string name : {"random", "grid", "ga"}) {
    std::string log = log_path(name + ".jsonl");
    TuneOptions o = fast_options(log, 10, 4);
    o.progress = nullptr;
    o.include_default = false;
    std::unique_ptr<Tuner> t = make_tuner(name, task);
    EXPECT_EQ(t->name(), name);
    TuneSummary s = t->tune(o);
    EXPECT_EQ(s.trials, 10) << name;
    EXPECT_TRUE(s.best.has_value()) << name;
    auto recs = records::read_log(log).records;
    ASSERT_EQ(recs.size(), 10u) << name;
    std::set<int64_t> seen;
    for (const auto& r : recs) {
      EXPECT_TRUE(seen.insert(r.config.index).second) << name << " " << r.config.index;
      EXPECT_EQ(r.tuner, name);
    }
    if (name == "grid") {
      EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    }
  }
  EXPECT_THROW(make_tuner("annealing", task), Error);
}

TEST_F(TunerTest, ErrorsAreLoggedAndCounted) {
  Task task = Task::create("test_faulty", {32}, Target("llvm"));
  std::string log = log_path("faulty.jsonl");
  TuneOptions o = fast_options(log, int(task.space().size()), 8);
  o.measure.timeout_s = 1;
  std::ostringstream progress;
  o.progress = &progress;
  GridTuner t(task);
  TuneSummary s = t.tune(o);
  EXPECT_EQ(s.trials, task.space().size());
  EXPECT_GT(s.errors, 0);
  EXPECT_GT(s.errors_by_code[ErrorCode::kBuildTimeout], 0);
  EXPECT_GT(s.errors_by_code[ErrorCode::kWrongAnswer], 0);
  EXPECT_GT(s.errors_by_code[ErrorCode::kInstantiation], 0);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_TRUE(s.best->valid());
  auto recs = records::read_log(log).records;
  EXPECT_EQ(int64_t(recs.size()), task.space().size());
  // The space is exhausted: another run measures nothing new.
  o.resume = true;
  GridTuner again(task);
  EXPECT_EQ(again.tune(o).trials, 0);
}

TEST_F(TunerTest, XGBNeverProposesAConfigTheTemplateRejectsOnceTrained) {
  Task task = Task::create("test_picky", {64}, Target("llvm"));
  {
    // Unfiltered, the same number of trials does hit rejected configs.
    TuneOptions o = fast_options("", 24, 4);
    o.progress = nullptr;
    EXPECT_GT(RandomTuner(task).tune(o).errors_by_code[ErrorCode::kInstantiation], 0);
  }
  for (FeatureSet set : {FeatureSet::kKnob, FeatureSet::kItervarKnob}) {
    SCOPED_TRACE(to_string(set));
    std::string log = log_path("picky_" + to_string(set) + ".jsonl");
    TuneOptions o = fast_options(log, 24, 4);
    o.progress = nullptr;
    XGBTunerOptions xo;
    xo.features = set;
    XGBTuner t(task, xo);
    TuneSummary s = t.tune(o);
    EXPECT_EQ(s.trials, 24);
    auto recs = records::read_log(log).records;
    ASSERT_EQ(recs.size(), 24u);
    // The first batch is random; once the model is trained, every proposal (the explorer's
    // random share included) is first checked against the template.
    bool first_valid = false;
    int rejected_later = 0;
    for (size_t i = 0; i < recs.size(); ++i) {
      first_valid |= i < 4 && recs[i].valid();
      if (i >= 4 && recs[i].result.error == ErrorCode::kInstantiation) ++rejected_later;
    }
    ASSERT_TRUE(first_valid);  // (seed 7) so the model is trained after the first batch
    EXPECT_EQ(rejected_later, 0);
  }
}

TEST_F(TunerTest, EarlyStoppingEndsARunWithoutProgress) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  TuneOptions o = fast_options("", 40, 2);
  o.early_stopping = 2;
  o.progress = nullptr;
  RandomTuner t(task);
  TuneSummary s = t.tune(o);
  EXPECT_LT(s.trials, 40);
  EXPECT_GE(s.trials, 2);
}

TEST_F(TunerTest, TransferLearningSeedsTheModel) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  std::string old_log = log_path("old.jsonl");
  TuneOptions o = fast_options(old_log, 6, 6);
  o.progress = nullptr;
  RandomTuner(task).tune(o);

  XGBTuner t(task);
  TuneOptions o2 = fast_options(log_path("new.jsonl"), 0, 4);
  o2.transfer_from = {old_log};
  std::ostringstream progress;
  o2.progress = &progress;
  t.tune(o2);
  EXPECT_TRUE(t.model().trained());
  EXPECT_GT(t.model().history_size(), 0u);
  EXPECT_NE(progress.str().find("transfer learning from"), std::string::npos);
}

/// A smooth synthetic landscape over a space: cost grows with the squared distance of each
/// knob's choice from the peak's, so the peak is the one best config.
TuneOptions landscape_options(const Task& task, int64_t peak, int n_trial, int* calls) {
  TuneOptions o = fast_options("", n_trial, 8);
  o.progress = nullptr;
  const std::vector<int> best = task.space().get(peak).choices();
  o.measure_fn = [&task, best, calls](const std::vector<int64_t>& batch) {
    ++*calls;
    std::vector<records::MeasureResult> out;
    for (int64_t i : batch) {
      const std::vector<int> c = task.space().get(i).choices();
      double d = 0;
      for (size_t k = 0; k < c.size(); ++k) d += double(c[k] - best[k]) * double(c[k] - best[k]);
      records::MeasureResult r;
      r.costs = {1e-3 * (1 + d)};
      out.push_back(r);
    }
    return out;
  };
  return o;
}

// batch_size 0: one round of the measurer's build workers per batch.
TEST_F(TunerTest, DefaultBatchIsOneRoundOfTheBuildWorkers) {
  Task task = Task::create("matmul", {500, 300, 700}, Target("llvm"));
  int calls = 0;
  TuneOptions o = landscape_options(task, 0, 9, &calls);
  o.batch_size = 0;
  o.measure.n_parallel = 3;
  EXPECT_EQ(measure_workers(o.measure), 3);
  TuneSummary s = RandomTuner(task).tune(o);
  EXPECT_EQ(s.trials, 9);
  EXPECT_EQ(calls, 3);
  o.batch_size = -1;
  EXPECT_THROW(RandomTuner(task).tune(o), Error);
}

TEST_F(TunerTest, MeasureFnReplacesTheMeasurer) {
  Task task = Task::create("matmul", {500, 300, 700}, Target("llvm"));
  int calls = 0;
  TuneOptions o = landscape_options(task, task.space().size() / 3, 16, &calls);
  o.log_file = log_path("landscape.jsonl");
  TuneSummary s = RandomTuner(task).tune(o);
  EXPECT_EQ(s.trials, 16);
  EXPECT_EQ(calls, 2);
  auto recs = records::read_log(o.log_file).records;
  ASSERT_EQ(recs.size(), 16u);
  for (const records::Record& r : recs) ASSERT_EQ(r.result.costs.size(), 1u);

  o.log_file.clear();
  o.measure_fn = [](const std::vector<int64_t>&) { return std::vector<records::MeasureResult>(1); };
  EXPECT_THROW(
      try { RandomTuner(task).tune(o); } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("measure_fn returned 1 results for 8 configs"), std::string::npos)
            << e.what();
        throw;
      },
      Error);
}

/// A MeasureService that answers from a landscape and says the results came from "node7".
class FakeService : public MeasureService {
 public:
  int parallelism(const MeasureOptions&) override { return 5; }
  std::vector<records::MeasureResult> measure(const Task& task, const MeasureOptions&,
                                              const std::vector<int64_t>& indices) override {
    batches.push_back(indices);
    std::vector<records::MeasureResult> out;
    for (int64_t i : indices) {
      records::MeasureResult r;
      r.costs = {1e-3 * double(1 + i % 7)};
      r.host = "node7";
      r.cpu = "Node CPU";
      out.push_back(r);
    }
    return out;
  }
  std::vector<std::vector<int64_t>> batches;
};

TEST_F(TunerTest, AServiceMeasuresInPlaceOfTheMeasurerAndRecordsNameItsHost) {
  Task task = Task::create("matmul", {500, 300, 700}, Target("llvm"));
  auto service = std::make_shared<FakeService>();
  TuneOptions o = fast_options(log_path("service.jsonl"), 12, 0);
  o.progress = nullptr;
  o.service = service;
  TuneSummary s = RandomTuner(task).tune(o);
  EXPECT_EQ(s.trials, 12);
  // batch_size 0: the service's parallelism.
  ASSERT_EQ(service->batches.size(), 3u);
  EXPECT_EQ(service->batches[0].size(), 5u);
  EXPECT_EQ(service->batches[2].size(), 2u);
  auto recs = records::read_log(o.log_file).records;
  ASSERT_EQ(recs.size(), 12u);
  for (const records::Record& r : recs) {
    EXPECT_EQ(r.host, "node7");
    EXPECT_EQ(r.target_cpu, "Node CPU");
  }
  // The same seed and batch size explore the same configs with the service as without it.
  TuneOptions local = fast_options("", 12, 5);
  local.progress = nullptr;
  std::vector<int64_t> seen;
  local.measure_fn = [&](const std::vector<int64_t>& batch) {
    seen.insert(seen.end(), batch.begin(), batch.end());
    return service->measure(task, local.measure, batch);
  };
  RandomTuner(task).tune(local);
  std::vector<int64_t> first;
  for (size_t b = 0; b < 3; ++b) first.insert(first.end(), service->batches[b].begin(), service->batches[b].end());
  EXPECT_EQ(seen, first);
}

TEST_F(TunerTest, RecordsOfLocalMeasurementsNameThisHost) {
  Task task = Task::create("matmul", {8, 8, 8}, Target("llvm"));
  records::MeasureResult r;
  r.costs = {1e-3};
  records::Record rec = task.record(task.default_index(), r, "random");
  EXPECT_EQ(rec.host, host_name());
  EXPECT_FALSE(rec.host.empty());
  EXPECT_EQ(rec.target_cpu, host_cpu_name());
}

// The confirm step re-measures the fastest configs, interleaved: a config that led only through a
// lucky first measurement drops out, the next one is confirmed in its place, and the log chooses
// the same best as the summary.
TEST_F(TunerTest, ConfirmRemeasuresTheFastestAndALuckyConfigLosesItsLead) {
  Task task = Task::create("matmul", {500, 300, 700}, Target("llvm"));
  std::vector<int64_t> measured;
  TuneOptions o = fast_options(log_path("confirm.jsonl"), 16, 8);
  o.progress = nullptr;
  o.confirm_top = 3;
  o.confirm_measurements = 3;
  o.measure_fn = [&measured](const std::vector<int64_t>& batch) {
    std::vector<records::MeasureResult> out;
    for (int64_t i : batch) {
      bool lucky = i == 5 && std::count(measured.begin(), measured.end(), 5) == 0;
      measured.push_back(i);
      records::MeasureResult r;
      r.costs = {lucky ? 1e-4 : 1e-3 * double(i + 1)};
      out.push_back(r);
    }
    return out;
  };
  TuneSummary s = GridTuner(task).tune(o);
  EXPECT_EQ(s.trials, 16);
  // Pass 1: the top three by first measurement (5, 0, 1) twice more each, round-robin; 5 is
  // now at 6e-3. Pass 2: config 2, which took its place, twice more.
  const std::vector<int64_t> confirm(measured.begin() + 16, measured.end());
  EXPECT_EQ(confirm, (std::vector<int64_t>{5, 0, 1, 5, 0, 1, 2, 2}));
  EXPECT_EQ(s.confirmed, 8);
  ASSERT_TRUE(s.best);
  EXPECT_EQ(s.best->config.index, 0);
  EXPECT_EQ(s.best_measurements, (std::vector<double>{1e-3, 1e-3, 1e-3}));

  auto recs = records::read_log(o.log_file).records;
  ASSERT_EQ(recs.size(), 24u);
  EXPECT_EQ(std::count_if(recs.begin(), recs.end(), [](const auto& r) { return r.tuner == "confirm"; }), 8);
  EXPECT_EQ(records::ApplyHistoryBest(o.log_file).best(task.workload(), task.target().str())->config.index, 0);

  // Resumed, the top three are already confirmed: nothing is measured again.
  o.resume = true;
  o.n_trial = 0;
  TuneSummary again = GridTuner(task).tune(o);
  EXPECT_EQ(again.confirmed, 0);
  EXPECT_EQ(measured.size(), 24u);
  EXPECT_EQ(again.best->config.index, 0);
}

TEST_F(TunerTest, XGBSearchesAtRandomDuringItsWarmup) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  for (int warmup : {8, 4}) {
    SCOPED_TRACE(fmt::format("random_warmup {}", warmup));
    int calls = 0;
    TuneOptions o = landscape_options(task, task.space().size() / 2, 8, &calls);
    o.batch_size = 4;
    XGBTunerOptions xo;
    xo.random_warmup = warmup;
    XGBTuner tuner(task, xo);
    EXPECT_EQ(tuner.tune(o).trials, 8);
    EXPECT_TRUE(tuner.model().trained());
    // Annealing starts its chains the first time the model chooses a batch.
    EXPECT_EQ(tuner.explorer().chains().empty(), warmup == 8);
  }
}

// n_trial counts new trials: progress on a resumed run counts against the configs left.
TEST_F(TunerTest, ProgressOfAResumedRunCountsTheConfigsLeft) {
  Task task = Task::create("matmul", {500, 300, 700}, Target("llvm"));
  int calls = 0;
  TuneOptions o = landscape_options(task, 0, 8, &calls);
  o.log_file = log_path("resumed.jsonl");
  GridTuner(task).tune(o);
  o.resume = true;
  o.n_trial = 1 << 30;
  o.batch_size = 4096;
  std::ostringstream progress;
  o.progress = &progress;
  TuneSummary s = GridTuner(task).tune(o);
  const int64_t left = task.space().size() - 8;
  EXPECT_EQ(s.resumed, 8);
  EXPECT_EQ(s.trials, left);
  EXPECT_NE(progress.str().find(fmt::format("4096/{} trials", left)), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find(fmt::format("{}/{} trials", left, left)), std::string::npos) << progress.str();
}

// On a smooth landscape of 8820 configs with one peak, the model-guided search must find the
// peak within 96 trials for every seed, where random search would need about 4400. (Knob
// features: the loop features would lower thousands of configs, minutes for a unit test.)
TEST_F(TunerTest, XGBFindsThePeakOfASmoothLandscape) {
  Task task = Task::create("matmul", {500, 300, 700}, Target("llvm"));
  const int64_t peak = task.space().size() / 3;
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    int calls = 0;
    TuneOptions o = landscape_options(task, peak, 96, &calls);
    o.seed = seed;
    XGBTunerOptions xo;
    xo.features = FeatureSet::kKnob;
    XGBTuner t(task, xo);
    TuneSummary s = t.tune(o);
    ASSERT_TRUE(s.best.has_value());
    EXPECT_EQ(s.best->config.index, peak) << "best found: " << s.best->result.mean_cost() * 1e3 << " (peak: 1)";
  }
}

}  // namespace
}  // namespace loom::tuner
