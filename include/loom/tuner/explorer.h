// Explorers: choose which configs to measure next, guided by a cost model's scores.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "loom/tuner/space.h"

namespace loom::tuner {

struct SAOptions {
  /// Parallel chains, kept between batches.
  int n_chains = 16;
  /// Annealing steps per batch at most.
  int max_steps = 80;
  /// Temperature, linearly from start to end over max_steps, in units of the score spread.
  double temp_start = 1.0, temp_end = 0.0;
  /// Stop when the best candidates have not changed for this many steps.
  int early_stop = 25;
  /// Fraction of each batch chosen uniformly at random among unmeasured configs.
  double epsilon = 0.05;
  /// Fraction of the chains restarted at each batch from the best measured configs (the
  /// `starts` of next_batch), so the search refines around what measured fast.
  double restart_from_best = 0.5;
  /// Fraction of each batch chosen for novelty: among the best-scored configs the search
  /// saw (the pool), the one that differs in the most knobs from every measured config (and
  /// from those already in the batch); ties go to the better score. A model fit on one
  /// plateau of a landscape ranks that plateau first; these picks stay promising but sample
  /// the regions its measurements do not cover.
  double novelty = 0.5;
  /// The pool's size as a share of the space (at least 1 config, at most the n_chains *
  /// max_steps an annealing round can score).
  double novelty_pool = 1.0 / 32;
  /// Among equally scored configs, prefer those whose knob values the measured configs hold
  /// least (else the lower index). A tree model scores alike the configs it cannot tell
  /// apart, e.g. a split factor larger than any measured; measuring those first separates them.
  bool rarity_tie_break = true;
  /// Spaces of at most this many configs are scored whole instead of annealed (for scores
  /// cheap enough to compute for every config).
  int64_t exhaustive_up_to = 0;
};

/// Scores a list of config indices (higher is better; -inf for configs that cannot be built).
using ScoreFn = std::function<std::vector<double>(const std::vector<int64_t>&)>;
/// True for configs already measured (or otherwise not to propose).
using VisitedFn = std::function<bool(int64_t)>;

/// Simulated annealing over a config space: a neighbor changes one knob's value. Returns the
/// top predicted unmeasured configs, avoiding near-duplicates within a batch, plus an
/// epsilon-greedy share of random ones. Small spaces (SAOptions::exhaustive_up_to) are
/// ranked whole instead.
class SimulatedAnnealingExplorer {
 public:
  SimulatedAnnealingExplorer(const ConfigSpace& space, SAOptions opt = {}, uint64_t seed = 0);

  /// Up to `batch_size` distinct configs, none of them visited; fewer only when the space
  /// has no more. `starts`, best first (e.g. the fastest measured configs), replace the
  /// chains' worst positions, up to restart_from_best of the chains. `measured` are the
  /// configs the novelty picks keep away from.
  std::vector<int64_t> next_batch(int batch_size, const ScoreFn& score, const VisitedFn& visited,
                                  const std::vector<int64_t>& starts = {},
                                  const std::vector<int64_t>& measured = {});

  /// A config differing from `index` in one knob's value.
  int64_t neighbor(int64_t index);
  /// A uniformly random config.
  int64_t random_config();
  /// `n` distinct random configs not visited and not in `exclude` (fewer if the space runs out).
  std::vector<int64_t> random_unvisited(int n, const VisitedFn& visited, const std::vector<int64_t>& exclude);

  const std::vector<int64_t>& chains() const { return chains_; }

 private:
  /// A candidate's place: higher score first, then higher rarity (SAOptions::rarity_tie_break),
  /// then lower index.
  struct Rank {
    double score = 0, rarity = 0;
    int64_t index = 0;
    bool before(const Rank& o) const {
      if (score != o.score) return score > o.score;
      if (rarity != o.rarity) return rarity > o.rarity;
      return index < o.index;
    }
  };
  /// The `n_model` best of `best` (index -> rank), skipping near-duplicates of those already
  /// chosen while others remain, `n_novel` of them chosen for novelty against `measured`,
  /// then random unvisited configs up to `batch_size`.
  std::vector<int64_t> select(const std::map<int64_t, Rank>& best, int n_model, int n_novel, int batch_size,
                              const VisitedFn& visited, const std::vector<int64_t>& measured);
  /// Stochastic rounding of batch_size * share.
  int share_of(int batch_size, double share);
  size_t novelty_pool_size() const;

  const ConfigSpace& space_;
  SAOptions opt_;
  std::mt19937_64 rng_;
  std::vector<int64_t> chains_;
};

/// True when two configs differ in exactly one knob, by one step of its value index.
bool near_duplicate(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace loom::tuner
