// The task scheduler's progress by phase: every round line carries the search's ETA, the
// confirm step is announced before it starts with the number of measurements it makes and
// their expected time, and each task it confirms is reported; the summary splits the time.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "loom/tuner/task_scheduler.h"

namespace loom::tuner {
namespace {

TaskSchedulerOptions options(std::ostream* progress, int confirm_top) {
  TaskSchedulerOptions o;
  o.n_trial = 24;
  o.round_trials = 4;
  o.tune.batch_size = 4;
  o.tune.seed = 1;
  o.tune.confirm_top = confirm_top;
  o.tune.confirm_measurements = 3;
  o.tuner = "random";
  o.progress = progress;
  // Every config of task t costs (t + 1) ms × (1 + index / 100), always the same.
  o.measure_fn = [](size_t t, const std::vector<int64_t>& configs) {
    std::vector<records::MeasureResult> out(configs.size());
    for (size_t k = 0; k < configs.size(); ++k) out[k].costs = {1e-3 * double(t + 1) * (1 + double(configs[k]) / 100)};
    return out;
  };
  return o;
}

std::vector<WeightedTask> two_tasks() {
  return {{Task::create("matmul", {32, 32, 32}, Target("llvm")), 2},
          {Task::create("matmul", {16, 32, 64}, Target("llvm")), 1}};
}

TEST(TaskSchedulerPhases, TheConfirmStepIsAnnouncedWithItsSize) {
  std::ostringstream progress;
  TaskScheduler s(two_tasks(), options(&progress, 2));
  SchedulerSummary sum = s.run();
  const std::string text = progress.str();

  // Each round line has the search's ETA; the last one has nothing left.
  std::regex round_line(R"re(\[scheduler\] round \d+ [^\n]*search ETA ([^\n]*) \(then the confirm step\)\n)re");
  int rounds = 0;
  std::string last_eta;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), round_line); it != std::sregex_iterator(); ++it) {
    ++rounds;
    last_eta = (*it)[1];
  }
  EXPECT_EQ(rounds, sum.rounds) << text;
  EXPECT_EQ(last_eta, "0.0 s") << text;

  // Announced before any task is confirmed, with the number the step then makes: 2 configs
  // of each task with 1 record each need 2 more measurements each.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      text, m, std::regex(R"re(\[scheduler\] search done: 24 trials in [^;]+; confirming the 2 best configs of each task: (\d+) measurements, ~)re")))
      << text;
  EXPECT_EQ(std::stoi(m[1]), 8);
  EXPECT_EQ(sum.confirmed, 8);
  const size_t announced = text.find("confirming the 2 best");
  const size_t first_confirmed = text.find("[scheduler] confirm: task 0");
  const size_t second_confirmed = text.find("[scheduler] confirm: task 1");
  ASSERT_NE(first_confirmed, std::string::npos) << text;
  ASSERT_NE(second_confirmed, std::string::npos) << text;
  EXPECT_LT(announced, first_confirmed);
  EXPECT_NE(text.find("4/8 measurements"), std::string::npos) << text;
  EXPECT_NE(text.find("8/8 measurements"), std::string::npos) << text;
  EXPECT_NE(text.find("(median of 3)"), std::string::npos) << text;

  EXPECT_GE(sum.search_s, 0);
  EXPECT_GE(sum.confirm_s, 0);
  EXPECT_LE(sum.search_s + sum.confirm_s, sum.elapsed_s + 1e-6);
}

TEST(TaskSchedulerPhases, WithoutAConfirmStepNoneIsAnnounced) {
  std::ostringstream progress;
  TaskScheduler s(two_tasks(), options(&progress, 0));
  SchedulerSummary sum = s.run();
  const std::string text = progress.str();
  EXPECT_EQ(sum.confirmed, 0);
  EXPECT_EQ(text.find("(then the confirm step)"), std::string::npos) << text;
  EXPECT_EQ(text.find("confirming"), std::string::npos) << text;
  EXPECT_NE(text.find("no confirm step"), std::string::npos) << text;
  EXPECT_NE(text.find("search ETA"), std::string::npos) << text;
}

}  // namespace
}  // namespace loom::tuner
