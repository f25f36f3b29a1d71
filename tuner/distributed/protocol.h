// The messages rank 0 and the serving ranks exchange, as JSON text (internal).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/tuner/machine.h"
#include "loom/tuner/measure.h"
#include "loom/tuner/task.h"

namespace loom::tuner::distributed::protocol {

/// MPI tags, one per kind of message.
enum Tag : int {
  kHello = 1,       // rank → 0 at start: its MachineInfo
  kProbe = 2,       // 0 → rank: {"target", "reference"}: may it measure the target?
  kProbeReply = 3,  // rank → 0: {"why"}: "" if it measures
  kWork = 4,        // 0 → rank: a chunk (work_json)
  kResult = 5,      // rank → 0: {"id", "results"}
  kStop = 6,        // 0 → rank: serve() returns
};

nlohmann::json to_json(const MachineInfo& m);
MachineInfo machine_from_json(const nlohmann::json& j);

/// Every field of MeasureOptions.
nlohmann::json to_json(const MeasureOptions& o);
MeasureOptions measure_options_from_json(const nlohmann::json& j);

/// The task as its workload and target; Task::create rebuilds it (with its config space) on
/// the receiving rank.
nlohmann::json task_json(const Task& task);
Task task_from_json(const nlohmann::json& j);

/// A result without host and cpu (the receiver knows the sender's machine).
nlohmann::json to_json(const records::MeasureResult& r);
records::MeasureResult result_from_json(const nlohmann::json& j);

}  // namespace loom::tuner::distributed::protocol
