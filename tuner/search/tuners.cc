// The tuning loop shared by every tuner, and the random, grid and genetic tuners.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <unordered_set>

#include "loom/tuner/tuner.h"

namespace loom::tuner {
namespace {

using Clock = std::chrono::steady_clock;

/// Up to n distinct unmeasured random configs (fewer when the space runs out).
std::vector<int64_t> sample_unmeasured(std::mt19937_64& rng, int64_t size, int n,
                                       const std::function<bool(int64_t)>& measured) {
  std::vector<int64_t> out;
  if (size <= 0 || n <= 0) return out;
  std::unordered_set<int64_t> taken;
  std::uniform_int_distribution<int64_t> dist(0, size - 1);
  int misses = 0;
  while (int(out.size()) < n && misses < 64 + 4 * n) {
    int64_t c = dist(rng);
    if (measured(c) || !taken.insert(c).second) {
      ++misses;
      continue;
    }
    out.push_back(c);
  }
  if (int(out.size()) < n && size <= (int64_t(1) << 22)) {
    int64_t start = dist(rng);
    for (int64_t i = 0; i < size && int(out.size()) < n; ++i) {
      int64_t c = (start + i) % size;
      if (!measured(c) && taken.insert(c).second) out.push_back(c);
    }
  }
  return out;
}

std::string format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

bool stream_is_terminal(const std::ostream* os) {
  if (os == &std::cerr || os == &std::clog) return ::isatty(2) != 0;
  if (os == &std::cout) return ::isatty(1) != 0;
  return false;
}

/// The `top` fastest configs of the workload (by median), each repeated until it would have
/// `measurements` records, round-robin: a round of every config that needs one, then the next.
std::vector<int64_t> confirm_batch(const records::ApplyHistoryBest& hist, const records::Workload& workload,
                                   const std::string& target, int top, int measurements) {
  std::vector<int64_t> configs = hist.top(workload, target, size_t(top));
  std::vector<int> need;
  int rounds = 0;
  for (int64_t i : configs) {
    need.push_back(std::max(0, measurements - int(hist.measurements(workload, target, i).size())));
    rounds = std::max(rounds, need.back());
  }
  std::vector<int64_t> batch;
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < configs.size(); ++k)
      if (round < need[k]) batch.push_back(configs[k]);
  return batch;
}

}  // namespace

Tuner::Tuner(Task task) : task_(std::move(task)) {}
Tuner::~Tuner() = default;

void Tuner::reset(const TuneOptions&) {}
void Tuner::update(const std::vector<int64_t>&, const std::vector<records::MeasureResult>&) {}

/// One tuning run's state between begin() and finish().
struct Tuner::Session {
  TuneOptions opt;
  int batch_size = 1;
  Clock::time_point start;
  TuneSummary sum;
  records::Workload workload;
  std::string target;
  // Every record of this task, resumed or new: the best config is the one with the lowest
  // median (records::median_cost), as `loom build` will choose it from the log.
  records::ApplyHistoryBest hist;
  std::unique_ptr<records::LogWriter> writer;
  std::unique_ptr<Measurer> measurer;
  int64_t planned = 0;  // trials the progress line counts towards
  bool live = false;    // progress rewrites one terminal line
  int last_improvement = 0;
  bool done = false;    // the space is exhausted or early stopping ended the search

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  double best_cost() const {
    std::optional<records::Record> b = hist.best(workload, target);
    return b ? b->result.mean_cost() : INFINITY;
  }
  void refresh_best() {
    sum.best = hist.best(workload, target);
    sum.best_measurements.clear();
    if (sum.best) sum.best_measurements = hist.measurements(workload, target, sum.best->config.index);
  }
};

void Tuner::begin(const TuneOptions& opt) {
  LOOM_CHECK(opt.batch_size >= 0, "TuneOptions: batch_size must not be negative, got {}", opt.batch_size);
  LOOM_CHECK(opt.n_trial >= 0, "TuneOptions: n_trial must not be negative, got {}", opt.n_trial);
  LOOM_CHECK(opt.confirm_top >= 0, "TuneOptions: confirm_top must not be negative, got {}", opt.confirm_top);
  session_ = std::make_unique<Session>();
  Session& s = *session_;
  s.opt = opt;
  s.batch_size = opt.batch_size > 0 ? opt.batch_size
                 : opt.service     ? std::max(1, opt.service->parallelism(opt.measure))
                                   : measure_workers(opt.measure);
  s.start = Clock::now();
  s.workload = task_.workload();
  s.target = task_.target().str();
  rng_.seed(opt.seed);
  measured_.clear();
  history_.clear();
  reset(opt);

  if (opt.resume && !opt.log_file.empty() && std::filesystem::exists(opt.log_file)) {
    records::LogContents log = records::read_log(opt.log_file, opt.progress);
    std::vector<int64_t> idx;
    std::vector<records::MeasureResult> res;
    for (records::Record& r : log.records) {
      if (r.workload.key() != task_.key() || r.target != s.target) continue;
      int64_t index;
      try {
        index = task_.canonical(task_.space().from_record(r.config).index());
      } catch (const std::exception&) {
        continue;
      }
      r.config.index = index;
      s.hist.add(r);
      if (!measured_.insert(index).second) continue;
      history_.emplace_back(index, r.valid() ? r.result.mean_cost() : INFINITY);
      idx.push_back(index);
      res.push_back(r.result);
    }
    s.sum.resumed = int(idx.size());
    if (!idx.empty()) update(idx, res);
    if (opt.progress)
      *opt.progress << fmt::format("[{}] {}: resumed {} trials from {}\n", name(), task_.key(), s.sum.resumed,
                                   opt.log_file);
  }
  s.refresh_best();
  // A CUDA task measured here needs a GPU: say so before the log is created, not after an
  // empty log and a failed first batch.
  if (task_.target().is_cuda() && !opt.measure_fn && !opt.service) {
    const std::string why = cuda_worker_unavailable_reason();
    LOOM_CHECK(why.empty(), "no CUDA driver/GPU: {}; tuning {} for target '{}' measures on an NVIDIA GPU", why,
               task_.key(), task_.target().str());
  }
  if (!opt.log_file.empty()) s.writer = std::make_unique<records::LogWriter>(opt.log_file);
  // n_trial counts new trials; a resumed run may have fewer configs left than that.
  s.planned = std::min<int64_t>(opt.n_trial, space_size() - int64_t(measured_.size()));
  s.live = opt.progress && stream_is_terminal(opt.progress);
}

std::vector<records::MeasureResult> Tuner::measure(const std::vector<int64_t>& batch) {
  Session& s = *session_;
  if (s.opt.measure_fn) {
    std::vector<records::MeasureResult> results = s.opt.measure_fn(batch);
    LOOM_CHECK(results.size() == batch.size(), "TuneOptions::measure_fn returned {} results for {} configs",
               results.size(), batch.size());
    return results;
  }
  if (s.opt.service) {
    std::vector<records::MeasureResult> results = s.opt.service->measure(task_, s.opt.measure, batch);
    LOOM_CHECK(results.size() == batch.size(), "TuneOptions::service returned {} results for {} configs",
               results.size(), batch.size());
    return results;
  }
  if (!s.measurer) s.measurer = std::make_unique<Measurer>(task_, s.opt.measure);
  return s.measurer->measure(batch);
}

int Tuner::step(int n_trial) {
  LOOM_CHECK(session_ != nullptr, "Tuner::step: no tuning run begun (call begin first)");
  LOOM_CHECK(n_trial >= 0, "Tuner::step: the number of trials must not be negative, got {}", n_trial);
  Session& s = *session_;
  const TuneOptions& opt = s.opt;
  auto report = [&]() {
    if (!opt.progress) return;
    double t = s.elapsed();
    double eta = s.sum.trials > 0 ? t / s.sum.trials * double(s.planned - s.sum.trials) : NAN;
    std::string line = fmt::format("[{}] {}: {}/{} trials, best {:.2f} GFLOP/s, {} errors, {} elapsed, ETA {}",
                                   name(), task_.key(), s.sum.trials, s.planned, s.sum.best_gflops(), s.sum.errors,
                                   format_seconds(t), format_seconds(eta));
    if (s.live) *opt.progress << '\r' << line << "\x1b[K" << std::flush;
    else *opt.progress << line << '\n';
  };

  int measured = 0;
  while (measured < n_trial && !s.done) {
    if (opt.early_stopping >= 0 && s.sum.trials - s.last_improvement >= opt.early_stopping) {
      s.done = true;
      break;
    }
    int n = std::min(s.batch_size, n_trial - measured);
    std::vector<int64_t> proposed, batch;
    if (opt.include_default)
      for (int64_t first : task_.search_space().first_configs())
        if (!is_measured(first)) proposed.push_back(first);
    std::vector<int64_t> more = next_batch(n - int(proposed.size()));
    proposed.insert(proposed.end(), more.begin(), more.end());
    std::unordered_set<int64_t> seen;
    for (int64_t i : proposed) {
      if (i < 0 || i >= space_size()) continue;
      i = task_.canonical(i);
      if (int(batch.size()) < n && !is_measured(i) && seen.insert(i).second) batch.push_back(i);
    }
    if (batch.empty()) {  // the space is exhausted
      s.done = true;
      break;
    }
    std::vector<records::MeasureResult> results = measure(batch);
    for (size_t k = 0; k < batch.size(); ++k) {
      measured_.insert(batch[k]);
      const records::MeasureResult& r = results[k];
      bool ok = r.error == records::ErrorCode::kNoError && !r.costs.empty();
      history_.emplace_back(batch[k], ok ? r.mean_cost() : INFINITY);
      records::Record rec = task_.record(batch[k], r, name());
      if (s.writer) s.writer->write(rec);
      ++s.sum.trials;
      ++measured;
      if (!ok) {
        ++s.sum.errors;
        ++s.sum.errors_by_code[r.error];
      }
      const double before = s.best_cost();
      s.hist.add(std::move(rec));
      if (s.best_cost() < before) s.last_improvement = s.sum.trials;
    }
    s.refresh_best();
    update(batch, results);
    report();
  }
  if (measured_.size() >= size_t(space_size())) s.done = true;
  return measured;
}

const TuneSummary& Tuner::summary() const {
  LOOM_CHECK(session_ != nullptr, "Tuner::summary: no tuning run begun (call begin first)");
  return session_->sum;
}

bool Tuner::done() const { return session_ && session_->done; }

int Tuner::planned_confirmations() const {
  if (!session_ || session_->opt.confirm_top <= 0) return 0;
  const Session& s = *session_;
  return int(confirm_batch(s.hist, s.workload, s.target, s.opt.confirm_top, s.opt.confirm_measurements).size());
}

TuneSummary Tuner::finish() {
  LOOM_CHECK(session_ != nullptr, "Tuner::finish: no tuning run begun (call begin first)");
  Session& s = *session_;
  const TuneOptions& opt = s.opt;
  if (s.live && s.sum.trials > 0) *opt.progress << '\n';

  // Confirm: re-measure the fastest configs, interleaved, until each has confirm_measurements
  // records; a config that rose into the top only through a lucky first measurement drops out,
  // and the next ones are confirmed in a further pass.
  for (int pass = 0; pass < 3 && opt.confirm_top > 0; ++pass) {
    std::vector<int64_t> batch =
        confirm_batch(s.hist, s.workload, s.target, opt.confirm_top, opt.confirm_measurements);
    if (batch.empty()) break;
    if (opt.progress)
      *opt.progress << fmt::format("[{}] {}: confirming {} of the {} fastest configs: {} more measurements\n",
                                   name(), task_.key(), std::set<int64_t>(batch.begin(), batch.end()).size(),
                                   opt.confirm_top, batch.size());
    std::vector<records::MeasureResult> results = measure(batch);
    for (size_t k = 0; k < batch.size(); ++k) {
      records::Record rec = task_.record(batch[k], results[k], records::kConfirmTuner);
      if (s.writer) s.writer->write(rec);
      s.hist.add(std::move(rec));
      ++s.sum.confirmed;
    }
  }
  s.refresh_best();

  TuneSummary sum = s.sum;
  sum.elapsed_s = s.elapsed();
  if (opt.progress) {
    std::string errs;
    for (const auto& [code, count] : sum.errors_by_code) {
      errs += fmt::format("{}{} {}", errs.empty() ? "" : ", ", count, records::to_string(code));
    }
    std::string best;
    if (sum.best) {
      best = fmt::format(" (config {}", sum.best->config.index);
      if (sum.best_measurements.size() > 1)
        best += fmt::format(", median of {} measurements", sum.best_measurements.size());
      best += ")";
    }
    *opt.progress << fmt::format("[{}] {}: done, {} trials ({} errors{}{}){} in {}; best {:.2f} GFLOP/s{}\n", name(),
                                 task_.key(), sum.trials, sum.errors, errs.empty() ? "" : ": ", errs,
                                 sum.confirmed ? fmt::format(" and {} confirming measurements", sum.confirmed) : "",
                                 format_seconds(sum.elapsed_s), sum.best_gflops(), best);
  }
  session_.reset();
  return sum;
}

TuneSummary Tuner::tune(const TuneOptions& opt) {
  begin(opt);
  step(opt.n_trial);
  return finish();
}

// ---------------------------------------------------------------- random and grid

std::vector<int64_t> RandomTuner::next_batch(int n) {
  return sample_unmeasured(rng_, space_size(), n, [&](int64_t i) { return is_measured(i); });
}

void GridTuner::reset(const TuneOptions&) { next_ = 0; }

std::vector<int64_t> GridTuner::next_batch(int n) {
  std::vector<int64_t> out;
  for (; next_ < space_size() && int(out.size()) < n; ++next_) {
    if (!is_measured(next_)) out.push_back(next_);
  }
  return out;
}

// ---------------------------------------------------------------- genetic

GATuner::GATuner(Task task, GAOptions opt) : Tuner(std::move(task)), ga_(opt) {
  LOOM_CHECK(ga_.population >= 2, "GAOptions: population must be at least 2, got {}", ga_.population);
  LOOM_CHECK(ga_.elite >= 1 && ga_.elite <= ga_.population, "GAOptions: elite must be in [1, population], got {}",
             ga_.elite);
}

std::vector<int64_t> GATuner::next_batch(int n) {
  auto measured = [&](int64_t i) { return is_measured(i); };
  std::vector<std::pair<int64_t, double>> pop;
  for (const auto& [idx, cost] : history()) {
    if (std::isfinite(cost) && cost > 0) pop.emplace_back(idx, cost);
  }
  if (pop.size() < 2) return sample_unmeasured(rng_, space_size(), n, measured);
  std::sort(pop.begin(), pop.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  if (pop.size() > size_t(ga_.population)) pop.resize(size_t(ga_.population));
  std::vector<double> fitness;
  for (const auto& p : pop) fitness.push_back(pop[0].second / p.second + 1e-3);
  std::discrete_distribution<size_t> roulette(fitness.begin(), fitness.end());
  std::uniform_int_distribution<size_t> elite(0, std::min(pop.size(), size_t(ga_.elite)) - 1);
  std::uniform_real_distribution<double> coin(0, 1);

  const ConfigSpace& space = task_.space();
  const auto& knobs = space.knobs();
  std::vector<int64_t> out;
  std::unordered_set<int64_t> taken;
  for (int attempt = 0; int(out.size()) < n && attempt < 20 * n + 100; ++attempt) {
    std::vector<int> a = space.get(pop[elite(rng_)].first).choices();
    std::vector<int> b = space.get(pop[roulette(rng_)].first).choices();
    std::vector<int> child(a.size());
    for (size_t k = 0; k < a.size(); ++k) {
      child[k] = coin(rng_) < 0.5 ? a[k] : b[k];
      if (coin(rng_) < ga_.mutation_prob && knobs[k].values.size() > 1)
        child[k] = std::uniform_int_distribution<int>(0, int(knobs[k].values.size()) - 1)(rng_);
    }
    int64_t idx = space.index_of(child);
    if (!measured(idx) && taken.insert(idx).second) out.push_back(idx);
  }
  if (int(out.size()) < n) {
    auto extra = sample_unmeasured(rng_, space_size(), n - int(out.size()),
                                   [&](int64_t i) { return measured(i) || taken.count(i) != 0; });
    out.insert(out.end(), extra.begin(), extra.end());
  }
  return out;
}

std::unique_ptr<Tuner> make_tuner(const std::string& name, const Task& task) {
  if (name == "xgb") return std::make_unique<XGBTuner>(task);
  if (name == "random") return std::make_unique<RandomTuner>(task);
  if (name == "grid") return std::make_unique<GridTuner>(task);
  if (name == "ga") return std::make_unique<GATuner>(task);
  fail("unknown tuner '{}' (expected xgb, random, grid or ga)", name);
}

}  // namespace loom::tuner
