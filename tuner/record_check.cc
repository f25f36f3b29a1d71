// The record check every tuning-log reader applies (build_best.h install_record_check): a record
// of a template's workload must name a config of that template's space.
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "loom/records/record_check.h"
#include "loom/tuner/build_best.h"

namespace loom::tuner {

namespace {

/// The tasks the check has made, by workload key and target; null where no task can be made
/// (a fused kernel's workload, an unknown op or target), whose records are kept.
struct TaskCache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const Task>> tasks;
};

std::shared_ptr<const Task> task_of(TaskCache& cache, const records::Record& r) {
  std::string key = r.workload.key() + "\n" + r.target;
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.tasks.find(key);
  if (it != cache.tasks.end()) return it->second;
  std::shared_ptr<const Task> t;
  try {
    t = std::make_shared<const Task>(Task::create(r.workload, Target(r.target)));
  } catch (const Error&) {
  }
  cache.tasks.emplace(key, t);
  return t;
}

}  // namespace

std::string record_problem(const Task& task, const records::Record& r) {
  if (!r.steps.empty()) return "";  // replayable whatever the space is now (instantiate_record)
  const int64_t n = task.space().size();
  if (r.config.index < 0 || r.config.index >= n)
    return fmt::format("config index {} is outside the config space of {} on {} ({} configs)", r.config.index,
                       task.key(), r.target, n);
  ConfigEntity e;
  try {
    e = task.space().from_record(r.config);
  } catch (const Error& err) {
    return fmt::format("config {} does not fit the config space of {} on {}: {}", r.config.index, task.key(),
                       r.target, err.what());
  }
  if (e.index() != r.config.index)
    return fmt::format("config index {} does not match its knob values, which are config {} of {} on {}",
                       r.config.index, e.index(), task.key(), r.target);
  return "";
}

void install_record_check() {
  auto cache = std::make_shared<TaskCache>();
  records::set_record_check([cache](const records::Record& r) -> std::string {
    std::shared_ptr<const Task> t = task_of(*cache, r);
    return t ? record_problem(*t, r) : "";
  });
}

}  // namespace loom::tuner
