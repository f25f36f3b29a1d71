// `loom records plot`'s curves and chart: every valid trial a point, failed trials counted,
// the best-so-far line ranked as ApplyHistoryBest ranks configs (confirm re-measurements
// included, so it ends where `loom build` picks), the workload in the title.
#include "loom/records/plot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "loom/records/record.h"

namespace loom::records {
namespace {

namespace fs = std::filesystem;

Record trial(int64_t index, double cost, const std::string& tuner = "random", ErrorCode err = ErrorCode::kNoError) {
  Record r;
  r.workload.op = "matmul";
  r.workload.shape = {64, 64, 64};
  r.target = "llvm -mcpu=x86-64-v3";
  r.flop = 2.0 * 64 * 64 * 64;
  r.config.index = index;
  r.config.knobs["tile_x"] = {-1, 8};
  r.result.error = err;
  if (err == ErrorCode::kNoError) r.result.costs = {cost};
  else r.result.error_msg = "failed";
  r.tuner = tuner;
  return r;
}

double gflops(double cost) { return 2.0 * 64 * 64 * 64 / cost / 1e9; }

class PlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = (fs::temp_directory_path() / fmt::format("loom_plot_test_{}.jsonl", ::getpid())).string();
    fs::remove(log_);
    LogWriter w(log_);
    // Config 1 looks fastest once (1e-5) but its re-measurements are slower: its median is
    // 4e-5. Config 2 is steadily 2e-5: the best as loom build ranks them.
    for (const Record& r : {trial(0, 8e-5), trial(1, 1e-5), trial(3, 0, "random", ErrorCode::kCompile),
                            trial(2, 2e-5), trial(4, 5e-5), trial(5, 0, "random", ErrorCode::kRuntime),
                            trial(1, 4e-5, kConfirmTuner), trial(2, 2e-5, kConfirmTuner),
                            trial(1, 4.5e-5, kConfirmTuner), trial(2, 2.1e-5, kConfirmTuner)})
      w.write(r);
  }
  void TearDown() override { fs::remove(log_); }
  std::string log_;
};

TEST_F(PlotTest, CurvesRankAsBuildDoes) {
  std::vector<TrialCurve> cs = trial_curves(log_);
  ASSERT_EQ(cs.size(), 1u);
  const TrialCurve& c = cs[0];
  EXPECT_EQ(c.workload, "matmul(64,64,64;float32)");
  EXPECT_EQ(c.target, "llvm -mcpu=x86-64-v3");
  EXPECT_EQ(c.trials, 6);
  EXPECT_EQ(c.failed, 2);
  ASSERT_EQ(c.points.size(), 4u);
  EXPECT_EQ(c.points[1].first, 2);
  EXPECT_DOUBLE_EQ(c.points[1].second, gflops(1e-5));
  EXPECT_EQ(c.points[2].first, 4) << "trial numbers count the failed trials too";
  ASSERT_EQ(c.best.size(), 6u);
  EXPECT_DOUBLE_EQ(c.best[0], gflops(8e-5));
  EXPECT_DOUBLE_EQ(c.best[1], gflops(1e-5));  // the search's view: one lucky measurement
  // At the end the confirmations moved config 1's median: the last trial's value is the
  // confirmed best, config 2.
  EXPECT_DOUBLE_EQ(c.best.back(), gflops(2e-5));
  EXPECT_EQ(c.best_config, 2);
  EXPECT_EQ(c.best_measurements, 3u);

  ApplyHistoryBest hist(log_);
  std::optional<Record> b = hist.best(Workload{"matmul", {64, 64, 64}, "float32", {}}, c.target);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->config.index, c.best_config);
  EXPECT_DOUBLE_EQ(b->gflops(), c.best_gflops);
}

TEST_F(PlotTest, TheChartDrawsEveryValidTrial) {
  std::vector<TrialCurve> cs = trial_curves(log_);
  const std::string svg = plot_trials_svg(cs, "tuned <today>");
  std::regex circle(R"re(<circle class="trial" data-trial="(\d+)" data-gflops="([0-9.]+)")re");
  std::vector<int> trials;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it)
    trials.push_back(std::stoi((*it)[1]));
  EXPECT_EQ(trials, (std::vector<int>{1, 2, 4, 5}));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(<polyline class="best" data-final-gflops="([0-9.]+)")re")));
  EXPECT_EQ(m[1].str(), fmt::format("{:.3f}", gflops(2e-5)));
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(<text class="title"[^>]*>([^<]*)</text>)re")));
  EXPECT_NE(m[1].str().find("matmul(64,64,64;float32) on llvm -mcpu=x86-64-v3"), std::string::npos) << m[1];
  EXPECT_NE(m[1].str().find("tuned &lt;today&gt;"), std::string::npos) << m[1];
  EXPECT_NE(svg.find("data-failed=\"2\""), std::string::npos);
  EXPECT_NE(svg.find("2 failed, not drawn"), std::string::npos);
  EXPECT_NE(svg.find("config 2, the median of 3 measurements"), std::string::npos);
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}

TEST_F(PlotTest, SeveralWorkloadsAndNone) {
  {
    LogWriter w(log_);
    Record r = trial(0, 1e-4);
    r.workload.shape = {32, 32, 32};
    w.write(r);
  }
  std::vector<TrialCurve> cs = trial_curves(log_);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[1].workload, "matmul(32,32,32;float32)");
  EXPECT_EQ(cs[1].trials, 1);
  const std::string svg = plot_trials_svg(cs);
  EXPECT_NE(svg.find(">GFLOP/s by trial<"), std::string::npos);
  EXPECT_NE(svg.find("matmul(32,32,32;float32) on llvm"), std::string::npos) << "the legend names each workload";
  const std::string empty = plot_trials_svg({});
  EXPECT_EQ(empty.find("<circle class=\"trial\""), std::string::npos);
  EXPECT_EQ(empty.rfind("</svg>\n"), empty.size() - 7);
}

}  // namespace
}  // namespace loom::records
