// Schedules generated from the patterns of a computation's stages, for fused kernels that no
// template schedules: pooling, reductions, softmax and layer_norm over any axis, injective
// chains, convolutions a template does not take.
#pragma once
#include <string>
#include <vector>

#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"

namespace loom::tuner {

/// A schedule for `outputs` made from the pattern of each stage, never a naive loop nest:
/// - elementwise, broadcast and injective stages that are not outputs are inlined into
///   their consumers (except one computing a transcendental for several consumers, which
///   is computed once at the root);
/// - a stage without reduction (an injective output): its innermost axis of extent > 1 is
///   split by the target's vector lanes (the tail left to the partial-tile passes) and
///   vectorized, or vectorized whole when shorter; the other axes are fused into one
///   parallel loop (when the stage has at least 32768 elements of work: output elements ×
///   reduction extent);
/// - a reduction whose innermost input dimension is indexed by a kept axis (pooling, a
///   softmax along an outer axis): that axis is vectorized as above, the reduction
///   accumulating in a register tile inside the vector loop; one whose innermost input
///   dimension is indexed by its innermost reduce axis (a row sum, softmax along the last
///   axis): that axis is split by the lanes and rfactor'd, the partial sums accumulated in
///   one vector;
/// - on "cuda": every stage left at the root has its spatial axes fused and split over
///   blockIdx.x / threadIdx.x (reductions run serially in each thread).
/// `why`, if given, receives one line per stage saying what was done.
schedule::Schedule schedule_by_pattern(const std::vector<te::Tensor>& outputs, const Target& target,
                                       std::string* why = nullptr);

}  // namespace loom::tuner
