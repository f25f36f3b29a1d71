// Features of a candidate for the cost model, read from its lowered loop IR (AutoTVM's
// "itervar" style) plus the config's knob values.
#pragma once
#include <vector>

#include "loom/lower/lower.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

/// Layout of the feature vector. All counts and sizes enter as log2(1 + x).
///
/// Loop part: the loops enclosing the hottest store (the one executed most often; its
/// vector lanes count as an innermost "vectorized" level), outermost first, at most
/// kMaxLoops of them (the innermost ones when the nest is deeper). Per level:
///   [0] extent  [1] nesting depth (0 = outermost kept)  [2] top-down product of extents
///   [3] bottom-up product  [4..8] one-hot kind: serial, parallel, vectorized, unrolled,
///   thread-bound  [9..13] operations executed per entry of the loop, weighted by trip
///   counts: add/sub, mul, div/mod, compare/select/min/max, math calls
///   [14..] per buffer slot (kMaxBuffers, buffers sorted by total touch count, then name):
///   |stride| w.r.t. this loop's variable (-1 when not affine), touches per entry, reuse
///   ratio (touches / distinct elements).
/// Then kGlobalFeatures: total add, mul, div, compare, math ops; number of loops; number of
/// stores; bytes of local allocations. Then up to kMaxKnobFeatures knob values (knobs by name,
/// each value's integers in order: 1 + log2(v) when positive, 0 for 0, -1 for a split's
/// "rest"). Unused slots are 0.
namespace features {
inline constexpr int kMaxLoops = 8;
inline constexpr int kMaxBuffers = 5;
inline constexpr int kPerBuffer = 3;
inline constexpr int kOpKinds = 5;
inline constexpr int kPerLoop = 4 + 5 + kOpKinds + kMaxBuffers * kPerBuffer;
inline constexpr int kGlobalFeatures = kOpKinds + 3;
inline constexpr int kMaxKnobFeatures = 24;
inline constexpr int kLength = kMaxLoops * kPerLoop + kGlobalFeatures + kMaxKnobFeatures;
/// Offsets within one loop level.
inline constexpr int kExtent = 0, kDepth = 1, kTopDown = 2, kBottomUp = 3, kKind = 4, kOps = 9, kBuffers = 14;
/// Offsets of the global and knob parts.
inline constexpr int kGlobal = kMaxLoops * kPerLoop;
inline constexpr int kKnobs = kGlobal + kGlobalFeatures;
}  // namespace features

/// The fixed-length (features::kLength) feature vector of a lowered function (lowered with
/// skip_packed_api) and, if given, of the config that produced it. Deterministic.
std::vector<float> extract_features(const lowering::LoweredFunc& f, const ConfigEntity* e = nullptr);

/// Instantiates config `e` of `task`, lowers it and extracts its features. Throws
/// InstantiationError (or loom::Error from lowering) for a config that cannot be built.
std::vector<float> extract_features(const Task& task, const ConfigEntity& e);

}  // namespace loom::tuner
