// build_best: apply the best record of a task, or fall back to its default config.
#include "loom/tuner/build_best.h"

#include <fmt/format.h>

#include "loom/codegen/build.h"

namespace loom::tuner {

runtime::Module build_best(const Task& task, const records::ApplyHistoryBest& best, std::ostream* warn) {
  const std::string target = task.target().str();
  std::optional<records::Record> rec = best.best(task.workload(), target);
  Instance inst;
  if (rec) {
    inst = task.instantiate(task.space().from_record(rec->config));
  } else {
    if (warn) *warn << fmt::format("no tuning record for {} on {}; using the default config\n", task.key(), target);
    inst = task.instantiate_default();
  }
  return codegen::build(inst.schedule, inst.args, task.target(), task.workload().op);
}

}  // namespace loom::tuner
