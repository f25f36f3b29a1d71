// Simulated-annealing explorer over a config space.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>

#include "loom/tuner/explorer.h"

namespace loom::tuner {

bool near_duplicate(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.size() != b.size()) return false;
  int diff = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] == b[k]) continue;
    if (std::abs(a[k] - b[k]) != 1 || ++diff > 1) return false;
  }
  return diff == 1;
}

SimulatedAnnealingExplorer::SimulatedAnnealingExplorer(const ConfigSpace& space, SAOptions opt, uint64_t seed)
    : space_(space), opt_(opt), rng_(seed) {
  LOOM_CHECK(opt_.n_chains >= 1, "SAOptions: n_chains must be at least 1, got {}", opt_.n_chains);
  LOOM_CHECK(opt_.epsilon >= 0 && opt_.epsilon <= 1, "SAOptions: epsilon must be in [0, 1], got {}", opt_.epsilon);
  LOOM_CHECK(opt_.novelty >= 0 && opt_.novelty <= 1, "SAOptions: novelty must be in [0, 1], got {}", opt_.novelty);
  LOOM_CHECK(opt_.novelty_pool > 0 && opt_.novelty_pool <= 1, "SAOptions: novelty_pool must be in (0, 1], got {}",
             opt_.novelty_pool);
}

size_t SimulatedAnnealingExplorer::novelty_pool_size() const {
  const double n = std::round(double(space_.size()) * opt_.novelty_pool);
  return size_t(std::clamp(n, 1.0, double(std::max(1, opt_.n_chains * opt_.max_steps))));
}

int SimulatedAnnealingExplorer::share_of(int batch_size, double share) {
  int n = int(std::floor(batch_size * share));
  double frac = batch_size * share - n;
  if (frac > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < frac) ++n;
  return std::min(n, batch_size);
}

int64_t SimulatedAnnealingExplorer::random_config() {
  int64_t n = space_.size();
  LOOM_CHECK(n > 0, "explorer: the config space is empty");
  return std::uniform_int_distribution<int64_t>(0, n - 1)(rng_);
}

int64_t SimulatedAnnealingExplorer::neighbor(int64_t index) {
  std::vector<int> choices = space_.get(index).choices();
  const auto& knobs = space_.knobs();
  std::vector<size_t> movable;
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (knobs[k].values.size() > 1) movable.push_back(k);
  }
  if (movable.empty()) return index;
  size_t k = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng_)];
  int n = int(knobs[k].values.size());
  int v = std::uniform_int_distribution<int>(0, n - 2)(rng_);
  choices[k] = v >= choices[k] ? v + 1 : v;
  return space_.index_of(choices);
}

std::vector<int64_t> SimulatedAnnealingExplorer::random_unvisited(int n, const VisitedFn& visited,
                                                                  const std::vector<int64_t>& exclude) {
  std::unordered_set<int64_t> taken(exclude.begin(), exclude.end());
  std::vector<int64_t> out;
  int64_t size = space_.size();
  int64_t misses = 0;
  while (int(out.size()) < n && misses < 64 + 4 * int64_t(n)) {
    int64_t c = random_config();
    if (visited(c) || taken.count(c)) {
      ++misses;
      continue;
    }
    taken.insert(c);
    out.push_back(c);
  }
  if (int(out.size()) < n && size <= (int64_t(1) << 22)) {
    // Few left: enumerate from a random start so the order stays unbiased enough.
    int64_t start = random_config();
    for (int64_t i = 0; i < size && int(out.size()) < n; ++i) {
      int64_t c = (start + i) % size;
      if (!visited(c) && !taken.count(c)) {
        taken.insert(c);
        out.push_back(c);
      }
    }
  }
  return out;
}

std::vector<int64_t> SimulatedAnnealingExplorer::next_batch(int batch_size, const ScoreFn& score,
                                                            const VisitedFn& visited,
                                                            const std::vector<int64_t>& starts,
                                                            const std::vector<int64_t>& measured) {
  if (batch_size <= 0) return {};
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const int n_random = share_of(batch_size, opt_.epsilon);
  const int n_model = batch_size - n_random;
  const int n_novel = std::min(n_model, share_of(batch_size, opt_.novelty));

  // Ties in score go to the config whose knob values the measured configs hold least: per
  // knob, how many hold each value; a config's rarity sums 1 / (1 + that count).
  std::vector<std::vector<int>> held;  // knob -> value -> measured configs holding it
  if (opt_.rarity_tie_break) {
    for (const auto& knob : space_.knobs()) held.emplace_back(knob.values.size(), 0);
    for (int64_t idx : measured) {
      std::vector<int> c = space_.get(idx).choices();
      for (size_t k = 0; k < c.size(); ++k) ++held[k][size_t(c[k])];
    }
  }
  auto rarity = [&](int64_t idx) {
    if (held.empty()) return 0.0;
    std::vector<int> c = space_.get(idx).choices();
    double r = 0;
    for (size_t k = 0; k < c.size(); ++k) r += 1.0 / (1 + held[k][size_t(c[k])]);
    return r;
  };

  // The best unvisited configs seen: a few times the batch size for de-duplication, and the
  // novelty pool when the batch has novelty picks.
  size_t keep = size_t(std::max(1, n_model)) * 3;
  if (n_novel > 0) keep = std::max(keep, novelty_pool_size());
  std::map<int64_t, Rank> best;
  auto offer = [&](int64_t idx, double s) {
    if (!std::isfinite(s) || best.count(idx) || visited(idx)) return false;
    Rank r{s, rarity(idx), idx};
    if (best.size() < keep) {
      best[idx] = r;
      return true;
    }
    auto worst = std::min_element(best.begin(), best.end(),
                                  [](const auto& a, const auto& b) { return b.second.before(a.second); });
    if (!r.before(worst->second)) return false;
    best.erase(worst);
    best[idx] = r;
    return true;
  };

  if (n_model > 0 && space_.size() <= opt_.exhaustive_up_to) {
    constexpr int64_t kChunk = 4096;
    for (int64_t from = 0; from < space_.size(); from += kChunk) {
      std::vector<int64_t> idx;
      for (int64_t i = from; i < std::min(space_.size(), from + kChunk); ++i)
        if (!visited(i)) idx.push_back(i);
      std::vector<double> s = score(idx);
      LOOM_ICHECK(s.size() == idx.size());
      for (size_t k = 0; k < idx.size(); ++k) offer(idx[k], s[k]);
    }
    return select(best, n_model, n_novel, batch_size, visited, measured);
  }

  if (int(chains_.size()) != opt_.n_chains) {
    chains_.clear();
    for (int i = 0; i < opt_.n_chains; ++i) chains_.push_back(random_config());
  }
  std::vector<double> scores = score(chains_);
  LOOM_ICHECK(scores.size() == chains_.size());
  const size_t n_restart =
      std::min(starts.size(), size_t(std::floor(opt_.restart_from_best * double(chains_.size()))));
  if (n_restart > 0) {
    std::vector<size_t> worst(chains_.size());
    for (size_t i = 0; i < worst.size(); ++i) worst[i] = i;
    std::sort(worst.begin(), worst.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
    std::vector<int64_t> from(starts.begin(), starts.begin() + std::ptrdiff_t(n_restart));
    std::vector<double> from_scores = score(from);
    for (size_t r = 0; r < n_restart; ++r) chains_[worst[r]] = from[r], scores[worst[r]] = from_scores[r];
  }

  for (size_t i = 0; i < chains_.size(); ++i) offer(chains_[i], scores[i]);

  // Temperature in units of the score spread of the current chains.
  double lo = INFINITY, hi = -INFINITY;
  for (double s : scores) {
    if (std::isfinite(s)) lo = std::min(lo, s), hi = std::max(hi, s);
  }
  double scale = hi > lo ? hi - lo : 1.0;

  if (n_model > 0) {
    int since_change = 0;
    for (int step = 0; step < opt_.max_steps && since_change < opt_.early_stop; ++step) {
      double t = opt_.temp_start + (opt_.temp_end - opt_.temp_start) * step / std::max(1, opt_.max_steps);
      std::vector<int64_t> next(chains_.size());
      for (size_t i = 0; i < chains_.size(); ++i) next[i] = neighbor(chains_[i]);
      std::vector<double> ns = score(next);
      LOOM_ICHECK(ns.size() == next.size());
      bool changed = false;
      for (size_t i = 0; i < chains_.size(); ++i) {
        double old_s = scores[i], new_s = ns[i];
        bool accept;
        if (new_s >= old_s || (old_s == kNegInf)) accept = true;
        else if (new_s == kNegInf || t <= 0) accept = false;
        else accept = std::uniform_real_distribution<double>(0, 1)(rng_) < std::exp((new_s - old_s) / (t * scale));
        if (accept) chains_[i] = next[i], scores[i] = new_s;
        changed |= offer(next[i], new_s);
      }
      since_change = changed ? 0 : since_change + 1;
    }
  }

  return select(best, n_model, n_novel, batch_size, visited, measured);
}

std::vector<int64_t> SimulatedAnnealingExplorer::select(const std::map<int64_t, Rank>& best, int n_model,
                                                        int n_novel, int batch_size, const VisitedFn& visited,
                                                        const std::vector<int64_t>& measured) {
  // Best first; skip near-duplicates of what is already chosen, then fill from the skipped.
  std::vector<std::pair<int64_t, Rank>> ranked(best.begin(), best.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second.before(b.second); });
  std::vector<int64_t> out;
  std::vector<std::vector<int>> chosen;
  std::vector<int64_t> skipped;
  const int n_best = n_model - n_novel;
  for (const auto& [idx, s] : ranked) {
    if (int(out.size()) >= n_best) break;
    std::vector<int> c = space_.get(idx).choices();
    bool dup = std::any_of(chosen.begin(), chosen.end(), [&](const auto& o) { return near_duplicate(c, o); });
    if (dup) {
      skipped.push_back(idx);
      continue;
    }
    out.push_back(idx);
    chosen.push_back(std::move(c));
  }
  for (int64_t idx : skipped) {
    if (int(out.size()) >= n_best) break;
    out.push_back(idx);
    chosen.push_back(space_.get(idx).choices());
  }

  // Novelty: the pool's config farthest (in knobs changed) from everything measured or chosen.
  if (n_novel > 0) {
    std::vector<std::vector<int>> known = chosen;
    for (int64_t idx : measured) known.push_back(space_.get(idx).choices());
    const size_t pool = std::min(ranked.size(), novelty_pool_size());
    std::vector<std::vector<int>> candidates(pool);
    std::vector<int> distance(pool, std::numeric_limits<int>::max());
    auto knobs_apart = [](const std::vector<int>& a, const std::vector<int>& b) {
      int d = 0;
      for (size_t k = 0; k < a.size(); ++k) d += a[k] != b[k];
      return d;
    };
    for (size_t p = 0; p < pool; ++p) {
      candidates[p] = space_.get(ranked[p].first).choices();
      for (const auto& k : known) distance[p] = std::min(distance[p], knobs_apart(candidates[p], k));
    }
    std::vector<bool> taken(pool, false);
    for (size_t p = 0; p < pool; ++p) taken[p] = std::find(out.begin(), out.end(), ranked[p].first) != out.end();
    for (int q = 0; q < n_novel; ++q) {
      size_t far = pool;
      for (size_t p = 0; p < pool; ++p)
        if (!taken[p] && (far == pool || distance[p] > distance[far])) far = p;
      if (far == pool) break;
      taken[far] = true;
      out.push_back(ranked[far].first);
      for (size_t p = 0; p < pool; ++p) distance[p] = std::min(distance[p], knobs_apart(candidates[p], candidates[far]));
    }
  }
  int want_random = batch_size - int(out.size());
  std::vector<int64_t> extra = random_unvisited(want_random, visited, out);
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

}  // namespace loom::tuner
