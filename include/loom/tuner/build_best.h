// build_best: a task compiled with its best tuned config, or its default when untuned.
#pragma once
#include <iostream>

#include "loom/records/record.h"
#include "loom/runtime/module.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

/// Builds `task` with the config of the best record for (task.key(), task.target().str()) in
/// `best`; without one, writes "no tuning record for <key> on <target>; using the default
/// config" to `warn` (if not null) and builds the default config. The module's function is
/// named after the workload's op.
runtime::Module build_best(const Task& task, const records::ApplyHistoryBest& best, std::ostream* warn = &std::cerr);

}  // namespace loom::tuner
