// The auto-scheduler's search space (tuner/auto/): sketch rules applied to a computation's
// stages, outputs first, decide each stage's role (inlined, multi-level tiled and fused into
// its consumer, a reduction with or without rfactor, placed at a consumer's loop, an injective
// root) and define its decisions as knobs of a ConfigSpace (tile sizes, compute locations,
// vector lengths, unroll steps, reduction strategy), which the tuners search as they search a
// template's. docs/auto_scheduler.md describes the rules.
#pragma once
#include <memory>
#include <vector>

#include "loom/runtime/target.h"
#include "loom/tuner/search_space.h"

namespace loom::tuner {

struct AutoOptions {
  /// Adds the schedule_by_pattern schedule as a sketch of its own (knob "sketch": 0 the
  /// rules' sketches, 1 the pattern) and makes it the default config, so that an untuned or
  /// tuned auto-scheduled kernel is never worse than the pattern schedule. Without it the
  /// default is the rules' own preferred config.
  bool include_pattern = true;
};

/// The search space of the computation `args` (its inputs, then its outputs, in call order;
/// every placeholder the outputs read must be among them) on `target`: the CPU rules, or the
/// GPU rules for target cuda (docs/auto_scheduler.md). Throws loom::Error for an empty
/// computation.
std::shared_ptr<const SearchSpace> make_auto_space(std::vector<te::Tensor> args, const Target& target,
                                                   const AutoOptions& opt = {});

}  // namespace loom::tuner
