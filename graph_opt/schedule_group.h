// How the compile step schedules one fused group: the seam between graph_opt's compile and
// the tuner's fused-group scheduling.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

#include "loom/graph_opt/graph.h"
#include "loom/graph_opt/reference.h"
#include "loom/records/record.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"

namespace loom::graph_opt {

/// A group's schedule and how it was chosen.
struct GroupSchedule {
  schedule::Schedule sched;
  /// What to lower with: tensors standing for the group's inputs then its outputs, position
  /// for position (a template may recompute the group over placeholders of its own).
  std::vector<te::Tensor> args;
  std::string note;      // "conv2d_nchwc [1,64,56,56,64,3,3] tuned config 1234", "pattern injective"
  std::string workload;  // the anchor's workload key ("" without a template)
  records::Workload task;  // that workload (op "" without a template): what to tune
  bool tuned = false;
};

/// Schedules group `group` of the fused graph `g`, whose composed computation is `c`.
GroupSchedule schedule_group(const Graph& g, int group, const GroupCompute& c, const Target& target,
                             const records::ApplyHistoryBest* best);

}  // namespace loom::graph_opt
