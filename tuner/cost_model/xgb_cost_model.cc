// XGBCostModel: the one file that talks to XGBoost.
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "loom/tuner/cost_model.h"
#include "loom/tuner/features.h"

namespace loom::tuner {
namespace {

void xgb_check(int status, const char* what) {
  LOOM_CHECK(status == 0, "XGBoost {} failed: {}", what, XGBGetLastError());
}

/// A dense matrix of the rows, padded (or cut) to `ncol`; owns its handle.
struct DMatrix {
  DMatrixHandle h = nullptr;
  DMatrix(const std::vector<std::vector<float>>& xs, size_t ncol) {
    std::vector<float> flat(xs.size() * ncol, 0.0f);
    for (size_t r = 0; r < xs.size(); ++r) {
      std::copy_n(xs[r].begin(), std::min(ncol, xs[r].size()), flat.begin() + long(r * ncol));
    }
    xgb_check(XGDMatrixCreateFromMat_omp(flat.data(), bst_ulong(xs.size()), bst_ulong(ncol), NAN, &h, 1),
              "XGDMatrixCreateFromMat");
  }
  ~DMatrix() {
    if (h) XGDMatrixFree(h);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
};

}  // namespace

std::vector<float> normalized_throughput(const std::vector<double>& costs) {
  double best = 0;
  for (double c : costs) {
    if (std::isfinite(c) && c > 0) best = std::max(best, 1.0 / c);
  }
  std::vector<float> ys(costs.size(), 0.0f);
  if (best <= 0) return ys;
  for (size_t i = 0; i < costs.size(); ++i) {
    if (std::isfinite(costs[i]) && costs[i] > 0) ys[i] = float((1.0 / costs[i]) / best);
  }
  return ys;
}

XGBCostModel::XGBCostModel(XGBOptions opt) : opt_(std::move(opt)) {
  LOOM_CHECK(opt_.objective == "rank:pairwise" || opt_.objective == "reg:squarederror",
             "XGBCostModel: objective must be 'rank:pairwise' or 'reg:squarederror', got '{}'", opt_.objective);
  LOOM_CHECK(opt_.num_rounds >= 1, "XGBCostModel: num_rounds must be at least 1, got {}", opt_.num_rounds);
  LOOM_CHECK(opt_.ensemble >= 1, "XGBCostModel: ensemble must be at least 1, got {}", opt_.ensemble);
  LOOM_CHECK(opt_.ensemble_subsample > 0 && opt_.ensemble_subsample <= 1,
             "XGBCostModel: ensemble_subsample must be in (0, 1], got {}", opt_.ensemble_subsample);
}

XGBCostModel::~XGBCostModel() { free_boosters(); }

void XGBCostModel::fit(const std::vector<std::vector<float>>& xs, const std::vector<double>& costs) {
  fit(xs, costs, {});
}

void XGBCostModel::fit(const std::vector<std::vector<float>>& xs, const std::vector<double>& costs,
                       const std::vector<const TrainingGroup*>& others) {
  LOOM_CHECK(xs.size() == costs.size(), "XGBCostModel::fit: {} feature vectors but {} costs", xs.size(),
             costs.size());
  std::vector<std::vector<float>> all_x = hist_x_;
  std::vector<float> all_y = hist_y_;
  std::vector<unsigned> groups = hist_groups_;
  // A group adds something to learn when one of its trials succeeded; this task's rows are
  // kept even when none did (their zero targets still teach a regression model).
  auto add_group = [&](const std::vector<std::vector<float>>& gx, const std::vector<double>& gc, bool always) {
    LOOM_CHECK(gx.size() == gc.size(), "XGBCostModel::fit: a group of {} feature vectors but {} costs", gx.size(),
               gc.size());
    std::vector<float> ys = normalized_throughput(gc);
    const bool valid = std::any_of(ys.begin(), ys.end(), [](float y) { return y > 0; });
    if (gx.empty() || (!valid && !always)) return false;
    all_x.insert(all_x.end(), gx.begin(), gx.end());
    all_y.insert(all_y.end(), ys.begin(), ys.end());
    groups.push_back(unsigned(gx.size()));
    return valid;
  };
  bool learned = !hist_x_.empty();
  for (const TrainingGroup* g : others) learned |= g != nullptr && add_group(g->xs, g->costs, false);
  learned |= add_group(xs, costs, true);
  if (!learned) return;  // nothing to learn from yet
  train(all_x, all_y, groups);
}

void XGBCostModel::free_boosters() {
  for (void* b : boosters_) XGBoosterFree(static_cast<BoosterHandle>(b));
  boosters_.clear();
}

void XGBCostModel::train(const std::vector<std::vector<float>>& xs, const std::vector<float>& ys,
                         const std::vector<unsigned>& groups) {
  if (xs.empty()) return;
  num_features_ = 0;
  for (const auto& x : xs) num_features_ = std::max(num_features_, x.size());
  DMatrix d(xs, num_features_);
  xgb_check(XGDMatrixSetFloatInfo(d.h, "label", ys.data(), bst_ulong(ys.size())), "XGDMatrixSetFloatInfo");
  if (opt_.objective == "rank:pairwise")
    xgb_check(XGDMatrixSetUIntInfo(d.h, "group", groups.data(), bst_ulong(groups.size())), "XGDMatrixSetUIntInfo");

  // Built aside, so that a failure leaves the previous model in place.
  std::vector<void*> trained;
  try {
    for (int m = 0; m < opt_.ensemble; ++m) trained.push_back(train_booster(d.h, m));
  } catch (...) {
    for (void* b : trained) XGBoosterFree(static_cast<BoosterHandle>(b));
    throw;
  }
  free_boosters();
  boosters_ = std::move(trained);
}

void* XGBCostModel::train_booster(void* dmatrix, int member) const {
  DMatrixHandle d = dmatrix;
  BoosterHandle b = nullptr;
  xgb_check(XGBoosterCreate(&d, 1, &b), "XGBoosterCreate");
  auto check = [&](int status, const char* what) {
    if (status == 0) return;
    XGBoosterFree(b);
    xgb_check(status, what);
  };
  // One member sees every row; ensemble members see their own subsample.
  const std::map<std::string, std::string> params = {
      {"nthread", "1"},
      {"verbosity", "0"},
      {"objective", opt_.objective},
      {"max_depth", std::to_string(opt_.max_depth)},
      {"eta", fmt::format("{}", opt_.eta)},
      {"gamma", fmt::format("{}", opt_.gamma)},
      {"min_child_weight", fmt::format("{}", opt_.min_child_weight)},
      {"subsample", opt_.ensemble > 1 ? fmt::format("{}", opt_.ensemble_subsample) : "1"},
      {"lambda", "1"},
      {"alpha", "0"},
      {"tree_method", "exact"},
      {"seed", std::to_string(opt_.seed * 7919 + uint64_t(member))},
  };
  for (const auto& [k, v] : params) check(XGBoosterSetParam(b, k.c_str(), v.c_str()), "XGBoosterSetParam");
  for (int it = 0; it < opt_.num_rounds; ++it) check(XGBoosterUpdateOneIter(b, it, d), "XGBoosterUpdateOneIter");
  return b;
}

std::vector<double> XGBCostModel::predict(const std::vector<std::vector<float>>& xs) const {
  std::vector<double> out(xs.size(), 0.0);
  if (boosters_.empty() || xs.empty()) return out;
  DMatrix d(xs, num_features_);
  std::vector<double> sum(xs.size(), 0.0), sum_sq(xs.size(), 0.0);
  for (void* b : boosters_) {
    bst_ulong len = 0;
    const float* res = nullptr;
    xgb_check(XGBoosterPredict(static_cast<BoosterHandle>(b), d.h, 0, 0, 0, &len, &res), "XGBoosterPredict");
    LOOM_ICHECK(len == xs.size());
    for (size_t i = 0; i < xs.size(); ++i) sum[i] += double(res[i]), sum_sq[i] += double(res[i]) * double(res[i]);
  }
  const double k = double(boosters_.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double mean = sum[i] / k;
    out[i] = mean;
    if (k > 1) out[i] += opt_.uncertainty * std::sqrt(std::max(0.0, sum_sq[i] / k - mean * mean));
  }
  return out;
}

int XGBCostModel::load_history(const Task& task, const std::vector<records::Record>& recs, FeatureSet set) {
  // Every workload's configs are featurized as this task's are.
  set = resolve_feature_set(set, task.space().size());
  // Group by workload; each group's targets are normalized by its own best.
  std::map<std::string, std::vector<const records::Record*>> by_workload;
  Target target = task.target();
  for (const records::Record& r : recs) {
    if (r.workload.op != task.workload().op) continue;
    try {
      if (Target(r.target).kind() != target.kind()) continue;
    } catch (const std::exception&) {
      continue;
    }
    by_workload[r.workload.key()].push_back(&r);
  }
  int used = 0;
  for (const auto& [key, group] : by_workload) {
    // Each record is featurized on its own workload, so other shapes of the template teach
    // the model too (their split values are not in this task's space).
    std::optional<Task> own;
    try {
      own = key == task.key() ? task : Task::create(group.front()->workload, target);
    } catch (const std::exception&) {
      continue;  // a workload this build cannot create
    }
    // A config measured more than once (several runs of one task) is one row, at its fastest:
    // repeated rows would only weigh it more, and featurizing each copy costs a lowering.
    std::map<int64_t, std::pair<const records::Record*, double>> fastest;
    for (const records::Record* r : group) {
      const double cost = r->valid() ? r->result.mean_cost() : INFINITY;
      auto [it, inserted] = fastest.emplace(r->config.index, std::make_pair(r, cost));
      if (!inserted && cost < it->second.second) it->second = {r, cost};
    }
    std::vector<std::vector<float>> xs;
    std::vector<double> costs;
    for (const auto& [index, best] : fastest) {
      try {
        ConfigEntity e = own->space().from_record(best.first->config);
        xs.push_back(extract_features(*own, e, set));
        costs.push_back(best.second);
      } catch (const std::exception&) {
        continue;  // does not fit (or cannot be built on) this task
      }
    }
    std::vector<float> ys = normalized_throughput(costs);
    if (xs.empty() || std::none_of(ys.begin(), ys.end(), [](float y) { return y > 0; })) continue;
    hist_x_.insert(hist_x_.end(), xs.begin(), xs.end());
    hist_y_.insert(hist_y_.end(), ys.begin(), ys.end());
    hist_groups_.push_back(unsigned(xs.size()));
    used += int(xs.size());
  }
  if (used > 0) train(hist_x_, hist_y_, hist_groups_);
  return used;
}

}  // namespace loom::tuner
