// Cost models: predict how good an unmeasured config is from its features.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/tuner/features.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

/// Learns from measured candidates; scores unmeasured ones (higher is better).
class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Trains from scratch on feature vectors and their mean costs in seconds (+inf for a
  /// failed trial). The targets are throughputs normalized by the best (failures 0).
  virtual void fit(const std::vector<std::vector<float>>& xs, const std::vector<double>& costs) = 0;
  /// Scores, one per feature vector; only their order is meaningful for ranking models.
  virtual std::vector<double> predict(const std::vector<std::vector<float>>& xs) const = 0;
  /// True once fit has seen at least one valid cost.
  virtual bool trained() const = 0;
};

struct XGBOptions {
  /// "rank:pairwise" (learns the order) or "reg:squarederror" (learns normalized throughput).
  std::string objective = "rank:pairwise";
  int num_rounds = 60;
  int max_depth = 3;
  double eta = 0.3;
  double gamma = 1e-4;
  double min_child_weight = 1;
  uint64_t seed = 0;
  /// Boosters trained on row subsamples with their own seeds; above 1, a config's score is
  /// their mean plus `uncertainty` times their spread, so configs the members disagree on
  /// (regions the measurements say little about) rank higher.
  int ensemble = 1;
  double uncertainty = 1.0;
  /// Share of the rows each ensemble member sees (ignored with one booster).
  double ensemble_subsample = 0.7;
};

/// Measured configs of one workload as a cost model trains on them: feature vectors and mean
/// costs in seconds (+inf for a failed trial); the targets are normalized by the group's best.
struct TrainingGroup {
  std::vector<std::vector<float>> xs;
  std::vector<double> costs;
};

/// Gradient-boosted trees through the XGBoost C API, one thread, deterministic for a seed.
/// Transfer learning: load_history adds records of other tuning runs of the same template
/// (featurized on their own workloads), kept as extra training groups in every fit.
class XGBCostModel : public CostModel {
 public:
  explicit XGBCostModel(XGBOptions opt = {});
  ~XGBCostModel() override;
  XGBCostModel(const XGBCostModel&) = delete;
  XGBCostModel& operator=(const XGBCostModel&) = delete;

  void fit(const std::vector<std::vector<float>>& xs, const std::vector<double>& costs) override;
  /// fit, with the rows of other workloads of the template as further training groups
  /// (each normalized by its own best), besides those of load_history.
  void fit(const std::vector<std::vector<float>>& xs, const std::vector<double>& costs,
           const std::vector<const TrainingGroup*>& others);
  std::vector<double> predict(const std::vector<std::vector<float>>& xs) const override;
  bool trained() const override { return !boosters_.empty(); }

  /// Adds records of `task`'s template (any shape, this target kind) as history; each
  /// workload forms its own group, with targets normalized by that workload's best
  /// throughput. A record is featurized on its own workload, so other shapes of the template
  /// count; records whose config does not fit their workload's space are skipped, and a
  /// config with several records is one row, at its fastest. Returns the number of rows
  /// added. `set` must be the feature set the model is used with (kAuto
  /// is resolved for `task`'s space).
  int load_history(const Task& task, const std::vector<records::Record>& records,
                   FeatureSet set = FeatureSet::kAuto);
  size_t history_size() const { return hist_x_.size(); }

 private:
  void train(const std::vector<std::vector<float>>& xs, const std::vector<float>& ys,
             const std::vector<unsigned>& groups);
  /// One booster trained on `dmatrix` (a DMatrixHandle); `member` picks its seed.
  void* train_booster(void* dmatrix, int member) const;
  void free_boosters();
  XGBOptions opt_;
  std::vector<void*> boosters_;  // BoosterHandle each
  size_t num_features_ = 0;
  std::vector<std::vector<float>> hist_x_;
  std::vector<float> hist_y_;
  std::vector<unsigned> hist_groups_;
};

/// Targets for a cost model: throughput (1 / cost) divided by the best; failures 0.
std::vector<float> normalized_throughput(const std::vector<double>& costs);

}  // namespace loom::tuner
