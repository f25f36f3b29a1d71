#include "loom/tuner/explorer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace loom::tuner {
namespace {

/// Two 3-part splits of 64 and a choice: 28 * 28 * 4 = 3136 configs.
ConfigSpace make_space() {
  ConfigSpace s;
  SplitOptions three;
  three.num_outputs = 3;
  s.define_split("a", 64, three);
  s.define_split("b", 64, three);
  s.define_choice("c", {0, 1, 2, 3});
  return s;
}

/// A score with one peak: minus the distance of each knob's value index to the target's.
ScoreFn peak_at(const ConfigSpace& space, int64_t target) {
  std::vector<int> t = space.get(target).choices();
  return [&space, t](const std::vector<int64_t>& idx) {
    std::vector<double> out;
    for (int64_t i : idx) {
      std::vector<int> c = space.get(i).choices();
      double d = 0;
      for (size_t k = 0; k < c.size(); ++k) d += std::abs(c[k] - t[k]);
      out.push_back(-d);
    }
    return out;
  };
}

TEST(Explorer, NearDuplicatesDifferInOneKnobByOneStep) {
  EXPECT_TRUE(near_duplicate({1, 2, 3}, {1, 3, 3}));
  EXPECT_FALSE(near_duplicate({1, 2, 3}, {1, 2, 3}));
  EXPECT_FALSE(near_duplicate({1, 2, 3}, {1, 4, 3}));
  EXPECT_FALSE(near_duplicate({1, 2, 3}, {2, 3, 3}));
}

TEST(Explorer, AnnealingFindsThePeakAndReturnsDistinctUnvisitedConfigs) {
  ConfigSpace space = make_space();
  ASSERT_EQ(space.size(), 3136);
  const int64_t target = 2000;
  SAOptions o;
  o.epsilon = 0;
  o.max_steps = 400;
  o.early_stop = 400;
  SimulatedAnnealingExplorer ex(space, o, 3);
  std::set<int64_t> visited = {5, 6, 7};
  auto is_visited = [&](int64_t i) { return visited.count(i) != 0; };
  std::vector<int64_t> batch = ex.next_batch(8, peak_at(space, target), is_visited);
  ASSERT_EQ(batch.size(), 8u);
  EXPECT_EQ(std::set<int64_t>(batch.begin(), batch.end()).size(), 8u);
  for (int64_t i : batch) EXPECT_FALSE(is_visited(i));
  EXPECT_EQ(batch[0], target);
  // Once the peak is measured it is never proposed again.
  visited.insert(target);
  for (int64_t i : ex.next_batch(8, peak_at(space, target), is_visited)) EXPECT_NE(i, target);
}

TEST(Explorer, SmallSpacesAreRankedWhole) {
  ConfigSpace space = make_space();
  SAOptions o;
  o.epsilon = 0;
  o.novelty = 0;
  o.max_steps = 0;  // no annealing at all: only the exhaustive path can find the peak
  o.exhaustive_up_to = space.size();
  SimulatedAnnealingExplorer ex(space, o, 1);
  const int64_t target = 1234;
  int64_t calls = 0;
  ScoreFn peak = peak_at(space, target);
  ScoreFn counted = [&](const std::vector<int64_t>& idx) {
    calls += int64_t(idx.size());
    return peak(idx);
  };
  std::vector<int64_t> batch = ex.next_batch(4, counted, [](int64_t i) { return i == 0; });
  ASSERT_EQ(batch.size(), 4u);
  EXPECT_EQ(batch[0], target);
  EXPECT_EQ(calls, space.size() - 1);  // every unvisited config scored once
  // The rest are the next best: one knob one step away from the peak, not near-duplicates of
  // each other where avoidable.
  std::vector<double> s = peak(batch);
  EXPECT_EQ(s[0], 0);
  for (size_t k = 1; k < s.size(); ++k) EXPECT_GE(s[k], -2);
}

int knobs_apart(const ConfigSpace& space, int64_t x, int64_t y) {
  std::vector<int> a = space.get(x).choices(), b = space.get(y).choices();
  int d = 0;
  for (size_t k = 0; k < a.size(); ++k) d += a[k] != b[k];
  return d;
}

TEST(Explorer, NoveltyPicksPromisingConfigsAwayFromTheMeasuredOnes) {
  ConfigSpace space = make_space();
  // Only knob a matters: the 112 configs with a = 5 score best, all alike.
  auto a_is_5 = [&space](const std::vector<int64_t>& idx) {
    std::vector<double> out;
    for (int64_t i : idx) out.push_back(-std::abs(space.get(i).choices()[0] - 5));
    return out;
  };
  const std::vector<int64_t> measured = {space.index_of({5, 0, 0}), space.index_of({5, 0, 1})};
  auto visited = [&](int64_t i) { return std::find(measured.begin(), measured.end(), i) != measured.end(); };
  auto nearest_known = [&](int64_t i, const std::vector<int64_t>& batch) {
    int d = 1 << 30;
    for (int64_t m : measured) d = std::min(d, knobs_apart(space, i, m));
    for (int64_t b : batch)
      if (b != i) d = std::min(d, knobs_apart(space, i, b));
    return d;
  };
  SAOptions o;
  o.epsilon = 0;
  o.exhaustive_up_to = space.size();
  o.rarity_tie_break = false;

  o.novelty = 0;
  SimulatedAnnealingExplorer greedy(space, o, 1);
  std::vector<int64_t> g = greedy.next_batch(4, a_is_5, visited, {}, measured);
  ASSERT_EQ(g.size(), 4u);
  int greedy_nearest = 1 << 30;
  for (int64_t i : g) {
    EXPECT_EQ(space.get(i).choices()[0], 5);
    greedy_nearest = std::min(greedy_nearest, nearest_known(i, g));
  }
  EXPECT_EQ(greedy_nearest, 1);  // ties go to the lowest indices, next to the measured ones

  o.novelty = 0.5;
  SimulatedAnnealingExplorer novel(space, o, 1);
  std::vector<int64_t> n = novel.next_batch(4, a_is_5, visited, {}, measured);
  ASSERT_EQ(n.size(), 4u);
  for (int64_t i : n) EXPECT_EQ(space.get(i).choices()[0], 5);  // all still among the best
  // The two novelty picks (last) differ from everything known in both free knobs.
  EXPECT_EQ(nearest_known(n[2], n), 2);
  EXPECT_EQ(nearest_known(n[3], n), 2);
}

TEST(Explorer, TiesGoToKnobValuesTheMeasuredConfigsLack) {
  ConfigSpace space = make_space();
  // Every config scores alike, as configs a tree model cannot tell apart do.
  ScoreFn flat = [](const std::vector<int64_t>& idx) { return std::vector<double>(idx.size(), 1.0); };
  std::vector<int64_t> measured;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) measured.push_back(space.index_of({a, b, 0}));
  auto visited = [&](int64_t i) { return std::find(measured.begin(), measured.end(), i) != measured.end(); };
  SAOptions o;
  o.epsilon = 0;
  o.novelty = 0;
  o.exhaustive_up_to = space.size();
  SimulatedAnnealingExplorer rare(space, o, 1);
  std::vector<int64_t> r = rare.next_batch(4, flat, visited, {}, measured);
  ASSERT_EQ(r.size(), 4u);
  for (int64_t i : r) {
    std::vector<int> c = space.get(i).choices();
    EXPECT_GE(c[0], 4);  // a, b and c at values no measured config holds
    EXPECT_GE(c[1], 4);
    EXPECT_NE(c[2], 0);
  }
  o.rarity_tie_break = false;
  SimulatedAnnealingExplorer by_index(space, o, 1);
  std::vector<int64_t> x = by_index.next_batch(4, flat, visited, {}, measured);
  ASSERT_EQ(x.size(), 4u);
  EXPECT_TRUE(std::all_of(x.begin(), x.end(), [&](int64_t i) {  // the lowest indices share b and c with them
    std::vector<int> c = space.get(i).choices();
    return c[1] < 4 && c[2] == 0;
  }));
}

TEST(Explorer, RandomShareNeverRepeatsOrRevisits) {
  ConfigSpace space = make_space();
  SAOptions o;
  o.epsilon = 1;  // the whole batch random
  SimulatedAnnealingExplorer ex(space, o, 9);
  auto visited = [](int64_t i) { return i >= 20; };  // 20 configs left
  std::vector<int64_t> batch = ex.next_batch(16, peak_at(space, 7), visited);
  ASSERT_EQ(batch.size(), 16u);
  EXPECT_EQ(std::set<int64_t>(batch.begin(), batch.end()).size(), 16u);
  for (int64_t i : batch) EXPECT_LT(i, 20);
  EXPECT_EQ(ex.next_batch(40, peak_at(space, 7), visited).size(), 20u);  // no more than there are
}

TEST(Explorer, BadOptions) {
  ConfigSpace space = make_space();
  SAOptions o;
  o.n_chains = 0;
  EXPECT_THROW(SimulatedAnnealingExplorer(space, o, 0), Error);
  o = SAOptions();
  o.epsilon = 1.5;
  EXPECT_THROW(SimulatedAnnealingExplorer(space, o, 0), Error);
  o = SAOptions();
  o.novelty = -0.1;
  EXPECT_THROW(SimulatedAnnealingExplorer(space, o, 0), Error);
  o = SAOptions();
  o.novelty_pool = 0;
  EXPECT_THROW(SimulatedAnnealingExplorer(space, o, 0), Error);
}

}  // namespace
}  // namespace loom::tuner
