#include "loom/tuner/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace loom::tuner {
namespace {

/// Synthetic configs: throughput depends on a few features nonlinearly.
void synthetic(int n, uint64_t seed, std::vector<std::vector<float>>* xs, std::vector<double>* costs) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  for (int i = 0; i < n; ++i) {
    std::vector<float> x(6);
    for (float& v : x) v = u(rng);
    double throughput = 1 + 4 * x[0] + 2 * (x[1] > 0.5 ? 1 : 0) + x[2] * x[3];
    xs->push_back(x);
    costs->push_back(1.0 / throughput);
  }
}

double pairwise_accuracy(const std::vector<double>& pred, const std::vector<double>& costs) {
  int64_t good = 0, all = 0;
  for (size_t i = 0; i < pred.size(); ++i) {
    for (size_t j = i + 1; j < pred.size(); ++j) {
      if (costs[i] == costs[j]) continue;
      ++all;
      bool want = costs[i] < costs[j];  // i faster
      if ((pred[i] > pred[j]) == want) ++good;
    }
  }
  return double(good) / double(all);
}

/// 300 synthetic configs to train on and 100 others to test on.
struct KnownRanking {
  std::vector<std::vector<float>> train_x;
  std::vector<double> train_c;
  std::vector<std::vector<float>> test_x;
  std::vector<double> test_c;
};

KnownRanking known_ranking() {
  KnownRanking d;
  synthetic(300, 1, &d.train_x, &d.train_c);
  synthetic(100, 2, &d.test_x, &d.test_c);
  return d;
}

TEST(CostModel, NormalizedThroughput) {
  auto y = normalized_throughput({2.0, 1.0, INFINITY, 4.0});
  EXPECT_FLOAT_EQ(y[0], 0.5f);
  EXPECT_FLOAT_EQ(y[1], 1.0f);
  EXPECT_FLOAT_EQ(y[2], 0.0f);
  EXPECT_FLOAT_EQ(y[3], 0.25f);
}

class CostModelObjective : public ::testing::TestWithParam<std::string> {};

TEST_P(CostModelObjective, LearnsAKnownRanking) {
  const KnownRanking d = known_ranking();
  const auto& [train_x, train_c, test_x, test_c] = d;
  XGBOptions o;
  o.objective = GetParam();
  XGBCostModel m(o);
  EXPECT_FALSE(m.trained());
  m.fit(train_x, train_c);
  ASSERT_TRUE(m.trained());
  std::vector<double> pred = m.predict(test_x);
  ASSERT_EQ(pred.size(), test_x.size());
  EXPECT_GT(pairwise_accuracy(pred, test_c), 0.9);
  // Seeded and single-threaded: the same data gives the same model.
  XGBCostModel again(o);
  again.fit(train_x, train_c);
  EXPECT_EQ(again.predict(test_x), pred);
}

INSTANTIATE_TEST_SUITE_P(Objectives, CostModelObjective, ::testing::Values("rank:pairwise", "reg:squarederror"));

TEST(CostModel, EnsembleLearnsTheRankingAndScoresItsSpread) {
  const KnownRanking d = known_ranking();
  const auto& [train_x, train_c, test_x, test_c] = d;
  XGBOptions o;
  o.ensemble = 4;
  o.uncertainty = 0;
  XGBCostModel mean_only(o);
  mean_only.fit(train_x, train_c);
  std::vector<double> mean = mean_only.predict(test_x);
  EXPECT_GT(pairwise_accuracy(mean, test_c), 0.9);
  o.uncertainty = 1;
  XGBCostModel with_spread(o);
  with_spread.fit(train_x, train_c);
  std::vector<double> ucb = with_spread.predict(test_x);
  // The members saw different rows, so they disagree somewhere, and only upwards.
  int above = 0;
  for (size_t i = 0; i < ucb.size(); ++i) {
    EXPECT_GE(ucb[i], mean[i] - 1e-9);
    above += ucb[i] > mean[i] + 1e-9;
  }
  EXPECT_GT(above, 0);
  XGBCostModel again(o);
  again.fit(train_x, train_c);
  EXPECT_EQ(again.predict(test_x), ucb);
}

TEST(CostModel, FailedTrialsRankLast) {
  std::vector<std::vector<float>> xs;
  std::vector<double> costs;
  synthetic(200, 3, &xs, &costs);
  // Configs with x[5] > 0.8 fail.
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i][5] > 0.8f) costs[i] = INFINITY;
  }
  XGBCostModel m;
  m.fit(xs, costs);
  auto p = m.predict({{0.9f, 0.9f, 0.9f, 0.9f, 0.5f, 0.95f}, {0.9f, 0.9f, 0.9f, 0.9f, 0.5f, 0.2f}});
  EXPECT_LT(p[0], p[1]);
}

TEST(CostModel, NothingValidLeavesItUntrained) {
  XGBCostModel m;
  m.fit({{1, 2}, {3, 4}}, {INFINITY, INFINITY});
  EXPECT_FALSE(m.trained());
  EXPECT_EQ(m.predict({{1, 2}}), std::vector<double>{0.0});
}

TEST(CostModel, RejectsUnknownObjective) {
  XGBOptions o;
  o.objective = "binary:logistic";
  EXPECT_THROW(XGBCostModel{o}, Error);
  XGBOptions no_members;
  no_members.ensemble = 0;
  EXPECT_THROW(XGBCostModel{no_members}, Error);
  XGBOptions no_rows;
  no_rows.ensemble = 2;
  no_rows.ensemble_subsample = 0;
  EXPECT_THROW(XGBCostModel{no_rows}, Error);
}

TEST(CostModel, LoadHistoryUsesRecordsOfTheSameTemplate) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  std::vector<records::Record> recs;
  for (int64_t k = 0; k < std::min<int64_t>(task.space().size(), 12); ++k) {
    records::Record r;
    r.workload = task.workload();
    r.target = task.target().str();
    r.flop = task.flop();
    r.config = task.space().get(k).to_record();
    r.result.costs = {1e-3 * double(1 + k % 5)};
    recs.push_back(r);
  }
  records::Record other = recs[0];
  other.workload.op = "softmax";
  recs.push_back(other);
  XGBCostModel m;
  int used = m.load_history(task, recs);
  EXPECT_GT(used, 0);
  EXPECT_LE(used, 12);
  EXPECT_EQ(m.history_size(), size_t(used));
  EXPECT_TRUE(m.trained());
}

TEST(CostModel, LoadHistoryLearnsEachConfigOnce) {
  // Three runs' logs of one task: every config three times, with different costs.
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  std::vector<records::Record> recs;
  for (int run = 0; run < 3; ++run) {
    for (int64_t k = 0; k < 6; ++k) {
      records::Record r;
      r.workload = task.workload();
      r.target = task.target().str();
      r.flop = task.flop();
      r.config = task.space().get(k).to_record();
      r.result.costs = {1e-3 * double(1 + (k + run) % 4)};
      recs.push_back(r);
    }
  }
  XGBCostModel m;
  EXPECT_EQ(m.load_history(task, recs), 6);
  EXPECT_EQ(m.history_size(), 6u);
  EXPECT_TRUE(m.trained());
}

TEST(CostModel, LoadHistoryLearnsFromOtherShapes) {
  // Records of matmul(48,80,32), whose split values mostly do not exist in matmul(64,64,64)'s
  // space: each is featurized on its own workload, and every one of them is used.
  Task other = Task::create("matmul", {48, 80, 32}, Target("llvm"));
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  std::vector<records::Record> recs;
  int fits_task = 0;
  for (int64_t k = 0; k < 12; ++k) {
    records::Record r;
    r.workload = other.workload();
    r.target = other.target().str();
    r.flop = other.flop();
    r.config = other.space().get(k * 7).to_record();
    r.result.costs = {1e-3 * double(1 + k % 5)};
    recs.push_back(r);
    try {
      task.space().from_record(r.config);
      ++fits_task;
    } catch (const Error&) {
    }
  }
  EXPECT_LT(fits_task, 12);
  for (FeatureSet set : {FeatureSet::kItervarKnob, FeatureSet::kKnob}) {
    XGBCostModel m;
    EXPECT_EQ(m.load_history(task, recs, set), 12);
    EXPECT_TRUE(m.trained());
  }
}

}  // namespace
}  // namespace loom::tuner
