// XGBTuner: cost-model-guided search (XGBoost model + simulated annealing).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <thread>
#include <unordered_set>

#include "loom/records/log_tools.h"
#include "loom/tuner/features.h"
#include "loom/tuner/tuner.h"

namespace loom::tuner {

void SharedTrainingSet::publish(const std::string& workload_key, TrainingGroup rows) {
  groups_[workload_key] = std::move(rows);
}

std::vector<const TrainingGroup*> SharedTrainingSet::others(const std::string& workload_key) const {
  std::vector<const TrainingGroup*> out;
  for (const auto& [key, g] : groups_)
    if (key != workload_key) out.push_back(&g);
  return out;
}

size_t SharedTrainingSet::rows() const {
  size_t n = 0;
  for (const auto& [key, g] : groups_) n += g.xs.size();
  return n;
}

XGBTuner::XGBTuner(Task task, XGBTunerOptions opt)
    : Tuner(std::move(task)),
      xopt_(std::move(opt)),
      feature_set_(xopt_.shared ? xopt_.shared->feature_set()
                                : resolve_feature_set(xopt_.features, task_.space().size())) {
  LOOM_CHECK(feature_set_ != FeatureSet::kAuto, "SharedTrainingSet: its feature set must not be auto");
}
XGBTuner::~XGBTuner() = default;

void XGBTuner::reset(const TuneOptions& opt) {
  XGBOptions mopt = xopt_.model;
  mopt.seed = opt.seed;
  model_ = std::make_unique<XGBCostModel>(mopt);
  SAOptions sa = xopt_.explorer;
  if (feature_set_ == FeatureSet::kKnob) sa.exhaustive_up_to = std::max<int64_t>(sa.exhaustive_up_to, 1 << 16);
  explorer_ = std::make_unique<SimulatedAnnealingExplorer>(task_.space(), sa, opt.seed);
  feature_cache_.clear();
  instantiated_.clear();
  if (opt.progress)
    *opt.progress << fmt::format("[{}] {}: cost model on {} features{} ({} configs in the space)\n", name(), task_.key(),
                                 to_string(feature_set_), xopt_.features == FeatureSet::kAuto ? ", chosen by auto" : "",
                                 task_.space().size());
  if (xopt_.shared && xopt_.shared->workloads() > 0) {
    std::vector<const TrainingGroup*> others = xopt_.shared->others(task_.key());
    if (!others.empty()) {
      model_->fit({}, {}, others);
      if (opt.progress)
        *opt.progress << fmt::format("[{}] {}: cost model shared with {} other workload(s) of the template ({} rows)\n",
                                     name(), task_.key(), others.size(), xopt_.shared->rows());
    }
  }
  if (!opt.transfer_from.empty()) {
    // All logs at once, so that a config logged by several runs is learned once.
    std::vector<records::Record> all = records::read_logs(opt.transfer_from, opt.progress);
    int used = model_->load_history(task_, all, feature_set_);
    if (opt.progress)
      *opt.progress << fmt::format("[{}] {}: transfer learning from {} distinct configs ({} records in {})\n", name(),
                                   task_.key(), used, all.size(),
                                   opt.transfer_from.size() == 1 ? opt.transfer_from[0]
                                                                 : fmt::format("{} logs", opt.transfer_from.size()));
  }
}

const std::vector<float>& XGBTuner::features(int64_t index) {
  auto it = feature_cache_.find(index);
  if (it != feature_cache_.end()) return it->second;
  std::vector<float> f;
  try {
    f = extract_features(task_, task_.space().get(index), feature_set_);
  } catch (const Error&) {
    f.clear();  // cannot be instantiated or lowered
  }
  return feature_cache_.emplace(index, std::move(f)).first->second;
}

void XGBTuner::cache_features(const std::vector<int64_t>& indices) {
  std::vector<int64_t> todo;
  std::unordered_set<int64_t> seen;
  for (int64_t i : indices)
    if (!feature_cache_.count(i) && seen.insert(i).second) todo.push_back(i);
  const int threads = std::min<int>(xopt_.feature_threads > 0 ? xopt_.feature_threads
                                                               : int(std::max(1u, std::thread::hardware_concurrency())),
                                    int(todo.size()));
  if (threads <= 1) return;  // features() extracts them one by one
  std::vector<std::vector<float>> out(todo.size());
  std::vector<std::exception_ptr> failed(todo.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < todo.size(); k = next++) {
      try {
        out[k] = extract_features(task_, task_.space().get(todo[k]), feature_set_);
      } catch (const Error&) {
        out[k].clear();  // cannot be instantiated or lowered
      } catch (...) {
        failed[k] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (size_t k = 0; k < todo.size(); ++k) {
    if (failed[k]) std::rethrow_exception(failed[k]);
    feature_cache_.emplace(todo[k], std::move(out[k]));
  }
}

bool XGBTuner::buildable(int64_t index) {
  if (features(index).empty()) return false;
  if (feature_set_ != FeatureSet::kKnob || !instantiated_.insert(index).second) return true;
  try {
    task_.instantiate(index);
    return true;
  } catch (const Error&) {
    feature_cache_[index].clear();  // scored -inf from now on
    return false;
  }
}

std::vector<double> XGBTuner::score(const std::vector<int64_t>& indices) {
  std::vector<double> out(indices.size(), -std::numeric_limits<double>::infinity());
  if (feature_set_ != FeatureSet::kKnob) cache_features(indices);
  std::vector<std::vector<float>> xs;
  std::vector<size_t> where;
  for (size_t i = 0; i < indices.size(); ++i) {
    const auto& f = features(indices[i]);
    if (f.empty()) continue;
    xs.push_back(f);
    where.push_back(i);
  }
  std::vector<double> p = model_->predict(xs);
  for (size_t k = 0; k < where.size(); ++k) out[where[k]] = p[k];
  return out;
}

void XGBTuner::update(const std::vector<int64_t>&, const std::vector<records::MeasureResult>&) {
  std::vector<std::vector<float>> xs;
  std::vector<double> costs;
  for (const auto& [idx, cost] : history()) {
    const auto& f = features(idx);
    if (f.empty()) continue;
    xs.push_back(f);
    costs.push_back(cost);
  }
  if (!xopt_.shared) {
    model_->fit(xs, costs);
    return;
  }
  xopt_.shared->publish(task_.key(), TrainingGroup{xs, costs});
  model_->fit(xs, costs, xopt_.shared->others(task_.key()));
}

std::vector<int64_t> XGBTuner::next_batch(int n) {
  std::unordered_set<int64_t> proposed;  // by the explorer in this call, kept or not
  auto measured = [&](int64_t i) { return is_measured(i) || proposed.count(i) != 0; };
  if (!model_->trained() || int64_t(history().size()) < xopt_.random_warmup)
    return explorer_->random_unvisited(n, measured, {});
  // The fastest measured configs seed some of the annealing chains.
  std::vector<std::pair<double, int64_t>> by_cost;
  for (const auto& [idx, cost] : history())
    if (std::isfinite(cost)) by_cost.emplace_back(cost, idx);
  std::sort(by_cost.begin(), by_cost.end());
  std::vector<int64_t> starts;
  for (size_t i = 0; i < by_cost.size() && i < size_t(xopt_.explorer.n_chains); ++i) starts.push_back(by_cost[i].second);
  auto score_fn = [&](const std::vector<int64_t>& idx) { return score(idx); };
  // Knob features cannot see that the template rejects a config: such proposals are dropped
  // (and scored -inf from then on) and the explorer asked again until the batch is full. Each
  // round excludes at least one more config, so an empty batch means the space is exhausted.
  std::vector<int64_t> out, known;  // known: measured or in this batch, for novelty picks
  for (const auto& entry : history()) known.push_back(entry.first);
  while (int(out.size()) < n) {
    std::vector<int64_t> more = explorer_->next_batch(n - int(out.size()), score_fn, measured, starts, known);
    if (more.empty()) break;
    for (int64_t i : more) {
      if (buildable(i)) out.push_back(i), known.push_back(i);
      proposed.insert(i);
    }
  }
  return out;
}

}  // namespace loom::tuner
