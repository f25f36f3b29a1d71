// The task scheduler: tunes the tasks of a network together, giving each round of trials to
// the task where it is expected to lower the network's estimated latency most (Ansor's task
// scheduler, §6 of Zheng et al., OSDI 2020). Each task is searched by its own XGBTuner
// (cost model + simulated annealing), run in steps; the cost model of tasks of one template
// learns from all of them (SharedTrainingSet).
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "loom/tuner/tuner.h"

namespace loom::tuner {

/// A task of a network and how often the network runs it.
struct WeightedTask {
  Task task;
  /// Kernels of the network that run this workload (its weight in the estimate).
  int weight = 1;
};

/// How the scheduler picks the next task after the warm-up.
enum class SchedulerStrategy {
  kGradient,    // the task whose round is expected to lower the estimate most
  kRoundRobin,  // each task in turn
};
/// "gradient", "round-robin"; parse_strategy throws loom::Error naming the choices.
std::string to_string(SchedulerStrategy s);
SchedulerStrategy parse_strategy(const std::string& name);

struct TaskSchedulerOptions {
  /// New trials across all tasks (records resumed from the log do not count).
  int n_trial = 1000;
  /// Trials a task gets each time it is chosen; 0: min(8, n_trial / tasks), at least 1.
  int round_trials = 0;
  SchedulerStrategy strategy = SchedulerStrategy::kGradient;
  /// The gradient (Ansor's): α weighs the measured improvement over the last
  /// `backward_window` rounds of a task against the optimistic forward guess; β bounds that
  /// guess by β × the task's flops over the best throughput of a task of its template.
  double alpha = 0.2;
  double beta = 2.0;
  int backward_window = 3;
  /// What every task's tuning run gets: log_file, resume, measure, batch_size, confirm_top
  /// (applied to each task at the end), transfer_from, service; seed (task i uses seed + i).
  /// n_trial and progress are the scheduler's own; a tuner's progress goes nowhere.
  TuneOptions tune;
  /// The xgb tuners' options; `features` applies per template, resolved for its largest space.
  XGBTunerOptions xgb;
  /// One SharedTrainingSet per template: the tuners of its tasks learn from each other.
  bool share_model = true;
  /// "xgb" (default) or another make_tuner name (random, grid, ga) for studies.
  std::string tuner = "xgb";
  /// Replaces measuring when set: results for configs of task `task` (its index), in order.
  /// For testing the allocation against known costs.
  std::function<std::vector<records::MeasureResult>(size_t task, const std::vector<int64_t>& configs)> measure_fn;
  /// JSON-lines file the estimate is appended to after every round ("" for none).
  std::string latency_file;
  /// The progress table (after the warm-up, every `table_every` rounds and at the end), a
  /// line per round with the search's ETA, the confirm step announced (its measurements and
  /// their expected time at the search's pace) and a line per task confirmed; null: silent.
  std::ostream* progress = nullptr;
  int table_every = 10;
};

/// Where one task stands.
struct TaskProgress {
  std::string key;         // the workload key
  int weight = 1;
  double flop = 0;
  int resumed = 0;         // trials read back from the log
  int trials = 0;          // trials measured in this run
  int errors = 0;          // of those, failed
  int rounds = 0;          // rounds of this task, resumed ones counted as trials / round size
  int confirmed = 0;       // re-measurements of the confirm step
  /// Best latency in seconds (the median of the best config's records); +inf while no trial
  /// succeeded.
  double best_s = std::numeric_limits<double>::infinity();
  /// best_s after each round (the first entry: after resuming, if anything was resumed).
  std::vector<double> best_history;
  bool done = false;       // its space is exhausted, or nothing of it builds and runs
  /// Its template's group of similar tasks (-1: left the group, see TaskScheduler).
  int group = -1;
};

struct SchedulerSummary {
  std::vector<TaskProgress> tasks;
  int trials = 0;     // measured in this run, all tasks
  int rounds = 0;     // rounds run (warm-up included)
  double elapsed_s = 0;
  double search_s = 0;   // of which the rounds (warm-up and scheduled)
  double confirm_s = 0;  // and the confirm step
  int confirmed = 0;     // the confirm step's measurements, all tasks
  /// Σ weight × best latency (seconds); +inf if some task has no successful trial.
  double estimated_s = std::numeric_limits<double>::infinity();
};

/// Tunes weighted tasks together: a round-robin warm-up (one round per task not resumed),
/// then rounds given by the strategy until n_trial trials are measured or every task is done,
/// then each task's confirm step. The objective is the estimated end-to-end latency
/// Σ weight × best latency. Deterministic for a seed with measure_fn.
class TaskScheduler {
 public:
  TaskScheduler(std::vector<WeightedTask> tasks, TaskSchedulerOptions opt);
  ~TaskScheduler();
  TaskScheduler(const TaskScheduler&) = delete;
  TaskScheduler& operator=(const TaskScheduler&) = delete;

  SchedulerSummary run();

  /// The state as it is now (before run: as constructed).
  const std::vector<TaskProgress>& progress() const { return state_; }
  double estimated_latency() const;
  /// The progress table: one row per task (weight, trials, best latency, GFLOP/s, share of
  /// the estimate) and the estimate.
  std::string table() const;

  /// The gradient of the estimate with respect to task i's trials (negative: more trials are
  /// expected to help); what the gradient strategy minimizes. Exposed for tests.
  double gradient(size_t i) const;

 private:
  void begin_tasks();
  int run_round(size_t i, int n, const char* phase);
  size_t choose();
  void leave_group_if_dissimilar(size_t i);
  void write_latency(const char* event, long task, const char* phase);
  double elapsed() const;

  std::vector<WeightedTask> tasks_;
  TaskSchedulerOptions opt_;
  std::vector<TaskProgress> state_;
  std::vector<std::unique_ptr<Tuner>> tuners_;
  int round_trials_ = 1;
  int trials_ = 0;
  int rounds_ = 0;
  double start_ = 0;
  double search_start_ = 0;  // after begin_tasks: the rounds' time, for their ETA
  uint64_t rng_state_ = 0;
};

}  // namespace loom::tuner
