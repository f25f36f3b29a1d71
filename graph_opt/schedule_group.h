// How the compile step hands one fused group to the tuner: the seam between graph_opt's
// compile and the tuner's fused kernels (tuner/fused.h). The group goes over whole, as the
// registry operators it fuses; the tuner builds its computation and schedule together.
#pragma once
#include <string>

#include "loom/graph_opt/graph.h"
#include "loom/records/record.h"
#include "loom/runtime/target.h"
#include "loom/tuner/fused.h"

namespace loom::graph_opt {

/// Group `group` of the fused graph `g` as the tuner takes it: its member operators with their
/// attributes, reading the group's inputs in order, its outputs in order, and its anchor.
tuner::FusedKernel fused_kernel(const Graph& g, int group);

}  // namespace loom::graph_opt
