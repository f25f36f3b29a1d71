// Tuners: the loop that proposes configs, measures them and logs every trial.
#pragma once
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/records/record.h"
#include "loom/tuner/cost_model.h"
#include "loom/tuner/explorer.h"
#include "loom/tuner/measure.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

struct TuneOptions {
  /// Trials (measurements) this call makes at most.
  int n_trial = 200;
  /// Log every trial is appended to; empty: no log.
  std::string log_file;
  /// Configs proposed, then measured, before the tuner learns from them; 0: one round of the
  /// measurer's build workers (measure_workers(measure), or service->parallelism(measure)),
  /// so no worker idles and the model is refit as often as that allows. The configs a seeded
  /// search explores depend on it, not on where they are measured.
  int batch_size = 0;
  /// Stop after this many trials without a better result; -1: never.
  int early_stopping = -1;
  MeasureOptions measure;
  uint64_t seed = 0;
  /// Reads log_file first: configs already there for this task are never measured again,
  /// and the tuner learns from them before its first batch.
  bool resume = false;
  /// Measure the search space's first configs first (unless already measured): the default,
  /// so that the result is never worse than the untuned default, and for an auto-scheduled
  /// task also its rules' preferred config (SearchSpace::first_configs).
  bool include_default = true;
  /// After the search, re-measure the `confirm_top` fastest configs of the task (ranked by the
  /// median of their records, resumed ones included: records::median_cost) until each has
  /// `confirm_measurements` records, round-robin so that a slow spell of the machine falls on
  /// all of them alike, and append them to the log with tuner "confirm". On a noisy machine a
  /// config whose first measurement was lucky then no longer wins; up to three passes confirm
  /// the configs that move into the top in its place. 0: off.
  int confirm_top = 0;
  int confirm_measurements = 3;
  /// Other logs whose records of the same template seed the cost model (XGBTuner).
  std::vector<std::string> transfer_from;
  /// Progress and the final summary; null: silent.
  std::ostream* progress = &std::cerr;
  /// Replaces the Measurer when set: one result per config index, in order. For studying or
  /// testing search against known costs (a table measured once), free of timing noise.
  std::function<std::vector<records::MeasureResult>(const std::vector<int64_t>&)> measure_fn;
  /// Measures the batches in place of a Measurer of this process when set (and measure_fn is
  /// not): e.g. tuner::distributed::Cluster::service(), which spreads them over MPI ranks.
  std::shared_ptr<MeasureService> service;
};

struct TuneSummary {
  /// Best config as records::ApplyHistoryBest chooses it from every record of the task
  /// (measured now or, with resume, earlier): its median record; none if no trial succeeded.
  std::optional<records::Record> best;
  /// The mean cost of every record of the best config, ascending.
  std::vector<double> best_measurements;
  int confirmed = 0;  // re-measurements by the confirm step (not counted in trials)
  int trials = 0;   // measured in this call
  int errors = 0;   // of those, failed
  int resumed = 0;  // records of this task read from the log
  std::map<records::ErrorCode, int> errors_by_code;
  double elapsed_s = 0;
  double best_gflops() const { return best ? best->gflops() : 0.0; }
};

/// Base of all tuners: the measurement loop, logging, resume and progress. A subclass only
/// proposes configs (next_batch) and learns from results (update).
class Tuner {
 public:
  explicit Tuner(Task task);
  virtual ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  /// begin(opt), step(opt.n_trial), finish().
  TuneSummary tune(const TuneOptions& opt);

  /// Tuning in steps, for a loop that divides trials among many tasks (TaskScheduler):
  /// begin() does what tune() does before its first batch (reset, resume from the log, open
  /// the log); step(n) measures up to n more trials, in batches of opt.batch_size, learning
  /// after each batch as tune() does, and returns how many it measured (fewer than n once
  /// done()); finish() runs the confirm step and returns the summary. The model, the
  /// explorer and the measured configs persist from one step to the next.
  void begin(const TuneOptions& opt);
  int step(int n_trial);
  TuneSummary finish();
  /// The summary so far of the run begun last (best, trials, errors, resumed).
  const TuneSummary& summary() const;
  /// True once the space is exhausted or early stopping ended the run.
  bool done() const;
  /// The measurements finish()'s confirm step would make in its first pass if called now
  /// (a further pass may add some when a confirmed config drops out); 0 without a run begun.
  int planned_confirmations() const;

  const Task& task() const { return task_; }
  /// "xgb", "random", "grid", "ga": written into each record.
  virtual std::string name() const = 0;

 protected:
  /// Called at the start of tune(), before resumed records arrive through update().
  virtual void reset(const TuneOptions& opt);
  /// Up to n configs never measured (is_measured false), distinct; empty when the space
  /// is exhausted. The loop measures each proposal's canonical config (Task::canonical).
  virtual std::vector<int64_t> next_batch(int n) = 0;
  /// Results of measured configs, also those loaded on resume.
  virtual void update(const std::vector<int64_t>& indices, const std::vector<records::MeasureResult>& results);

  /// Whether `index`, or a config that schedules as it does (Task::canonical), was measured.
  bool is_measured(int64_t index) const { return measured_.count(task_.canonical(index)) != 0; }
  /// Every measured index with its mean cost (+inf for errors), in measuring order.
  const std::vector<std::pair<int64_t, double>>& history() const { return history_; }
  int64_t space_size() const { return task_.space().size(); }

  Task task_;
  std::mt19937_64 rng_;

 private:
  struct Session;
  std::vector<records::MeasureResult> measure(const std::vector<int64_t>& batch);
  std::unordered_set<int64_t> measured_;
  std::vector<std::pair<int64_t, double>> history_;
  std::unique_ptr<Session> session_;
};

/// Uniformly random unmeasured configs.
class RandomTuner : public Tuner {
 public:
  using Tuner::Tuner;
  std::string name() const override { return "random"; }

 protected:
  std::vector<int64_t> next_batch(int n) override;
};

/// Configs in index order.
class GridTuner : public Tuner {
 public:
  using Tuner::Tuner;
  std::string name() const override { return "grid"; }

 protected:
  void reset(const TuneOptions& opt) override;
  std::vector<int64_t> next_batch(int n) override;

 private:
  int64_t next_ = 0;
};

struct GAOptions {
  int population = 32;
  int elite = 4;
  double mutation_prob = 0.1;
};

/// A genetic algorithm: the fittest measured configs (by throughput) breed by uniform
/// crossover over knobs, and each knob mutates with mutation_prob.
class GATuner : public Tuner {
 public:
  explicit GATuner(Task task, GAOptions opt = {});
  std::string name() const override { return "ga"; }

 protected:
  std::vector<int64_t> next_batch(int n) override;

 private:
  GAOptions ga_;
};

/// What the XGBTuners of several tasks of one template learn from together (the task
/// scheduler gives each template of a network one): each tuner publishes the features and
/// costs of the configs it measured under its workload's key, and fits its cost model on its
/// own rows and every other workload's (each a ranking group of its own), so that what one
/// shape of a template taught ranks the configs of the others, from their first batch on.
/// Every tuner sharing it models the same feature set.
class SharedTrainingSet {
 public:
  explicit SharedTrainingSet(FeatureSet set) : set_(set) {}
  /// The feature set of every row (never kAuto).
  FeatureSet feature_set() const { return set_; }
  /// Replaces the rows of `workload_key`.
  void publish(const std::string& workload_key, TrainingGroup rows);
  /// The groups of every workload but `workload_key`, in key order.
  std::vector<const TrainingGroup*> others(const std::string& workload_key) const;
  /// Rows of all workloads, and the number of workloads with rows.
  size_t rows() const;
  size_t workloads() const { return groups_.size(); }

 private:
  FeatureSet set_;
  std::map<std::string, TrainingGroup> groups_;
};

struct XGBTunerOptions {
  XGBOptions model;
  SAOptions explorer;
  /// What the model sees of a config (see FeatureSet; kAuto is resolved for the task's space).
  /// With knob features (kKnob, or kAuto on a small space), scoring is cheap enough that the
  /// explorer ranks spaces of up to 65536 configs whole (or explorer.exhaustive_up_to if larger).
  FeatureSet features = FeatureSet::kAuto;
  /// Trials chosen at random before the model guides the search (it always waits for a
  /// valid result, whatever this says).
  int random_warmup = 0;
  /// Set: the model also learns from (and feeds) these rows of other tasks of the template;
  /// its feature set replaces `features`.
  std::shared_ptr<SharedTrainingSet> shared;
  /// Threads that extract the features of the configs the explorer scores (each lowers its
  /// config; the measurers are idle meanwhile); 0: one per core.
  int feature_threads = 0;
};

/// Model-guided search: an XGBoost cost model trained on every measured config (refit after
/// each batch), simulated annealing over its predictions. Random until the model has seen a
/// valid result and XGBTunerOptions::random_warmup trials are measured.
class XGBTuner : public Tuner {
 public:
  explicit XGBTuner(Task task, XGBTunerOptions opt = {});
  ~XGBTuner() override;
  std::string name() const override { return "xgb"; }
  const XGBCostModel& model() const { return *model_; }
  /// The annealing explorer; its chains stay empty until the model first guides a batch.
  const SimulatedAnnealingExplorer& explorer() const { return *explorer_; }
  /// The feature set in use: XGBTunerOptions::features resolved for the task's space.
  FeatureSet feature_set() const { return feature_set_; }

 protected:
  void reset(const TuneOptions& opt) override;
  std::vector<int64_t> next_batch(int n) override;
  void update(const std::vector<int64_t>& indices, const std::vector<records::MeasureResult>& results) override;

 private:
  /// Features of a config (cached); empty when it cannot be instantiated.
  const std::vector<float>& features(int64_t index);
  /// Extracts the features of the uncached configs among `indices` into the cache, on
  /// XGBTunerOptions::feature_threads threads.
  void cache_features(const std::vector<int64_t>& indices);
  /// False for a config the template rejects. Extracting loop features instantiates the
  /// config; knob features do not, so those configs are instantiated here, once.
  bool buildable(int64_t index);
  std::vector<double> score(const std::vector<int64_t>& indices);

  XGBTunerOptions xopt_;
  FeatureSet feature_set_;
  std::unique_ptr<XGBCostModel> model_;
  std::unique_ptr<SimulatedAnnealingExplorer> explorer_;
  std::unordered_map<int64_t, std::vector<float>> feature_cache_;
  std::unordered_set<int64_t> instantiated_;  // knob features: configs checked by buildable()
};

/// A tuner by name: "xgb", "random", "grid" or "ga".
std::unique_ptr<Tuner> make_tuner(const std::string& name, const Task& task);

}  // namespace loom::tuner
