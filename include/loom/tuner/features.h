// Features of a candidate for the cost model, read from its lowered loop IR (AutoTVM's
// "itervar" style) plus the config's knob values.
#pragma once
#include <string>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

/// Layout of the feature vector. All counts and sizes enter as log2(1 + x).
///
/// Loop part: the loops enclosing the hottest store (the one executed most often; its
/// vector lanes count as an innermost "vectorized" level), outermost first, at most
/// kMaxLoops of them (the innermost ones when the nest is deeper), right-aligned: the
/// innermost level fills the last slot, so a slot holds the same depth counted from the
/// inside whatever the nest's depth (unit-extent loops vanish in lowering, so configs of one
/// template differ in depth). Per level:
///   [0] extent  [1] nesting depth (0 = outermost kept)  [2] top-down product of extents
///   [3] bottom-up product  [4..8] one-hot kind: serial, parallel, vectorized, unrolled,
///   thread-bound  [9..13] operations executed per entry of the loop, weighted by trip
///   counts: add/sub, mul, div/mod, compare/select/min/max, math calls  [14] working set:
///   distinct bytes of all buffers touched in one entry of the loop (what must stay in
///   cache for the loop's reuse to pay)
///   [15..] per buffer slot (kMaxBuffers, buffers sorted by total touch count, then name):
///   |stride| w.r.t. this loop's variable (-1 when not affine), touches per entry, reuse
///   ratio (touches / distinct elements), distinct bytes per entry.
/// Then kGlobalFeatures: total add, mul, div, compare, math ops; number of loops; number of
/// stores; bytes of local allocations. Then up to kMaxKnobFeatures knob values, knobs in
/// definition order, each value's integers as 1 + log2(v) (0 for 0); a split's "rest" part
/// enters as its real extent and is followed by the split's padding (parts' product over the
/// extent, minus 1). Unused slots are 0.
namespace features {
inline constexpr int kMaxLoops = 8;
inline constexpr int kMaxBuffers = 5;
inline constexpr int kPerBuffer = 4;
inline constexpr int kOpKinds = 5;
inline constexpr int kPerLoop = 4 + 5 + kOpKinds + 1 + kMaxBuffers * kPerBuffer;
inline constexpr int kGlobalFeatures = kOpKinds + 3;
inline constexpr int kMaxKnobFeatures = 24;
inline constexpr int kLength = kMaxLoops * kPerLoop + kGlobalFeatures + kMaxKnobFeatures;
/// Offsets within one loop level.
inline constexpr int kExtent = 0, kDepth = 1, kTopDown = 2, kBottomUp = 3, kKind = 4, kOps = 9;
inline constexpr int kWorkingSet = 14, kBuffers = 15;
/// Offsets of the global and knob parts.
inline constexpr int kGlobal = kMaxLoops * kPerLoop;
inline constexpr int kKnobs = kGlobal + kGlobalFeatures;
}  // namespace features

/// Which features the cost model sees.
enum class FeatureSet {
  kAuto,         // kKnob for spaces of up to kAutoKnobSpace configs, kItervarKnob beyond
  kItervarKnob,  // the loop IR's and the knob values (features::kLength values)
  kItervar,      // the loop IR's only (knob slots left 0)
  kKnob,         // the knob values only (features::kMaxKnobFeatures values): no lowering, so
                 // cheap enough to score whole spaces; cannot tell which configs fail to build
};
/// The largest space FeatureSet::kAuto models on knob values alone. In a space this small the
/// few first trials pin down a model of a handful of knob values better than one of the
/// loop IR's hundreds of features (on whole-space tables of 120-160-config depthwise spaces,
/// docs/benchmarks.md); in large ones the loop features generalize across knob values.
inline constexpr int64_t kAutoKnobSpace = 1024;

/// `set` for a space of `space_size` configs: kAuto resolved, any other set unchanged.
FeatureSet resolve_feature_set(FeatureSet set, int64_t space_size);

/// "auto", "itervar+knob", "itervar" or "knob"; loom::Error naming the choices otherwise.
FeatureSet parse_feature_set(const std::string& name);
std::string to_string(FeatureSet set);

/// The knob part alone (features::kMaxKnobFeatures values).
std::vector<float> knob_features(const ConfigEntity& e);

/// The fixed-length (features::kLength) feature vector of a lowered function (lowered with
/// skip_packed_api) and, if given, of the config that produced it. Deterministic.
std::vector<float> extract_features(const lowering::LoweredFunc& f, const ConfigEntity* e = nullptr);

/// The features of `set` (kAuto resolved for `task`'s space) of config `e` of `task`. For the
/// loop sets it instantiates and lowers the config, throwing InstantiationError (or
/// loom::Error from lowering) for a config that cannot be built; for kKnob it does neither
/// and throws nothing.
std::vector<float> extract_features(const Task& task, const ConfigEntity& e,
                                    FeatureSet set = FeatureSet::kAuto);

}  // namespace loom::tuner
