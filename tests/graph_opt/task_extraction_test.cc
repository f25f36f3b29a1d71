// Task extraction: the tasks of a network are exactly the workloads compile looks up, with
// their kernel counts; a log the task scheduler wrote for them tunes every templated kernel
// of the compiled network.
#include "loom/graph_opt/task_extraction.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "examples/models/models.h"
#include "graph_test_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/tuner/task_scheduler.h"

namespace loom::graph_opt {
namespace {

namespace fs = std::filesystem;

/// Workload key → number of kernels compile schedules with that workload's template.
std::map<std::string, int> compiled_workloads(const CompileReport& r) {
  std::map<std::string, int> out;
  for (const CompiledKernel& k : r.kernels)
    if (!k.workload.empty()) ++out[k.workload];
  return out;
}

/// The same from the extraction: its template tasks' weights (the untuned compile looks up no
/// auto-scheduled workload), plus the kernels it could make no task of, each with a reason.
std::map<std::string, int> extracted_workloads(const TaskExtraction& x) {
  std::map<std::string, int> out;
  for (const ExtractedTask& t : x.tasks)
    if (!t.task.is_auto()) out[t.task.key()] = t.weight;
  for (const UntunedKernel& u : x.untuned) {
    EXPECT_FALSE(u.reason.empty()) << u.kernel;
    if (!u.workload.empty()) ++out[u.workload];
  }
  return out;
}

TEST(TaskExtraction, SmallResNet18TasksAreTheWorkloadsCompileLooksUp) {
  Graph g = models::resnet18(test::small_model());
  const Target target("llvm");
  TaskExtraction x = extract_tasks(g, target);
  CompileReport report = lower_graph(g, target).report;
  ASSERT_EQ(x.fused.groups.size(), report.kernels.size());
  EXPECT_EQ(extracted_workloads(x), compiled_workloads(report));
  // Every kernel is a task's or listed as untuned, with the reason.
  int weights = 0;
  for (const ExtractedTask& t : x.tasks) {
    weights += t.weight;
    EXPECT_EQ(size_t(t.weight), t.kernels.size());
    EXPECT_EQ(t.task.target().str(), target.str());
  }
  EXPECT_EQ(size_t(weights) + x.untuned.size(), report.kernels.size());
  // ResNet-18: the 3x3 convs of a stage share a workload; max pool and global pool have no
  // template: each is an auto-scheduled task of its kernel.
  ASSERT_FALSE(x.tasks.empty());
  EXPECT_EQ(x.tasks[0].task.workload().op, "conv2d_nchwc");
  int max_weight = 0;
  for (const ExtractedTask& t : x.tasks) max_weight = std::max(max_weight, t.weight);
  EXPECT_GE(max_weight, 3) << "layer1's four 3x3 convs are one workload";
  EXPECT_TRUE(x.untuned.empty());
  bool pool_auto = false;
  for (const ExtractedTask& t : x.tasks)
    pool_auto |= t.task.is_auto() && t.kernels == std::vector<std::string>{"fused_max_pool2d"} &&
                 t.task.workload().op == "auto:max_pool2d";
  EXPECT_TRUE(pool_auto);
}

TEST(TaskExtraction, SmallMobileNetV2TasksAreTheWorkloadsCompileLooksUp) {
  Graph g = models::mobilenet_v2(test::small_model());
  TaskExtraction x = extract_tasks(g, Target("llvm"));
  EXPECT_EQ(extracted_workloads(x), compiled_workloads(lower_graph(g, Target("llvm")).report));
  EXPECT_FALSE(x.tasks.empty());
}

TEST(TaskExtraction, FollowsTheCompileOptions) {
  Graph g = models::resnet18(test::small_model());
  CompileOptions level2;
  level2.passes.opt_level = 2;  // no blocked layouts: the NCHW conv2d template
  TaskExtraction x = extract_tasks(g, Target("llvm"), level2);
  EXPECT_EQ(extracted_workloads(x), compiled_workloads(lower_graph(g, Target("llvm"), nullptr, level2).report));
  for (const ExtractedTask& t : x.tasks) EXPECT_NE(t.task.workload().op, "conv2d_nchwc");
}

class TaskExtractionLog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("loom_task_extraction_test_{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// What tune-model writes, compile reads: the scheduler tunes the extracted tasks (costs
// made up, so nothing is timed), and compiling with the log finds a record for every kernel
// a template schedules.
TEST_F(TaskExtractionLog, CompilePicksUpTheSchedulersRecords) {
  Graph g = models::resnet18(test::small_model());
  const Target target("llvm");
  TaskExtraction x = extract_tasks(g, target);
  std::vector<tuner::WeightedTask> tasks;
  for (const ExtractedTask& t : x.tasks) tasks.push_back({t.task, t.weight});
  tuner::TaskSchedulerOptions o;
  o.n_trial = int(tasks.size()) * 3;
  o.round_trials = 3;
  o.tuner = "random";
  o.tune.log_file = (dir_ / "net.jsonl").string();
  o.tune.batch_size = 3;
  o.measure_fn = [](size_t task, const std::vector<int64_t>& configs) {
    std::vector<records::MeasureResult> out(configs.size());
    for (size_t k = 0; k < configs.size(); ++k) out[k].costs = {1e-4 * double(1 + task) + 1e-7 * double(configs[k] % 97)};
    return out;
  };
  tuner::SchedulerSummary s = tuner::TaskScheduler(tasks, o).run();
  EXPECT_EQ(s.trials, o.n_trial);

  records::ApplyHistoryBest best(o.tune.log_file);
  CompileReport report = lower_graph(g, target, &best).report;
  // Untuned: only workloads the extraction could make no task of (and said so).
  std::set<std::string> no_task;
  for (const UntunedKernel& u : x.untuned)
    if (!u.workload.empty()) no_task.insert(u.workload);
  for (const std::string& w : report.untuned) EXPECT_TRUE(no_task.count(w)) << w;
  int tuned = 0;
  for (const CompiledKernel& k : report.kernels) {
    EXPECT_EQ(k.tuned, !k.workload.empty() && !no_task.count(k.workload)) << k.name << " " << k.schedule;
    tuned += k.tuned;
  }
  int weights = 0;
  for (const ExtractedTask& t : x.tasks) weights += t.weight;
  EXPECT_EQ(tuned, weights);
}

}  // namespace
}  // namespace loom::graph_opt
