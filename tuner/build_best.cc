// build_best: apply the best record of a task, or fall back to its default config.
#include "loom/tuner/build_best.h"

#include <fmt/format.h>

#include <cctype>

#include "loom/codegen/build.h"
#include "loom/tuner/auto/workload.h"

namespace loom::tuner {

ConfigEntity record_config(const Task& task, const records::Record& record) {
  try {
    return task.space().from_record(record.config);
  } catch (const Error& e) {
    fail("the record for {} on {} (config {}) does not fit the template's config space, which has changed "
         "since it was logged; tune again: {}",
         task.key(), record.target, record.config.index, e.what());
  }
}

Instance instantiate_record(const Task& task, const records::Record& record, std::string* how) {
  std::vector<schedule::Step> steps;
  if (!record.steps.empty()) {
    try {
      steps = schedule::steps_from_json(record.steps);
    } catch (const Error& e) {
      fail("the record for {} on {} (config {}) has malformed steps: {}", task.key(), record.target,
           record.config.index, e.what());
    }
  }
  std::string misfit;
  try {
    ConfigEntity e = task.space().from_record(record.config);
    if (e.index() != record.config.index)
      misfit = fmt::format("its knob values are config {} of the space, not {}", e.index(), record.config.index);
    else if (!steps.empty() && task.steps(e.index()) != steps)
      misfit = "the config's steps are not the recorded ones";
    if (misfit.empty()) {
      if (how) *how = fmt::format("config {}", e.index());
      return task.instantiate(e);
    }
  } catch (const InstantiationError& e) {
    if (steps.empty()) throw;
    misfit = e.what();
  } catch (const Error& e) {
    misfit = e.what();
  }
  if (steps.empty())
    fail("the record for {} on {} (config {}) does not fit the template's config space, which has changed "
         "since it was logged; tune again: {}",
         task.key(), record.target, record.config.index, misfit);
  if (how) *how = fmt::format("the recorded steps of config {} ({})", record.config.index, misfit);
  return task.replay(steps);
}

std::optional<records::Record> best_record(const Task& task, const records::ApplyHistoryBest& best) {
  const std::string target = task.target().str();
  if (auto r = best.best(task.workload(), target)) return r;
  if (task.is_auto()) return std::nullopt;
  std::vector<std::string> names = task.tmpl().aliases;
  names.insert(names.begin(), task.tmpl().name);
  records::Workload w = task.workload();
  for (const std::string& n : names) {
    if (n == task.workload().op) continue;
    w.op = n;
    if (auto r = best.best(w, target)) return r;
  }
  return std::nullopt;
}

std::string function_name(const Task& task) {
  std::string name = task.workload().op;
  if (!task.is_auto()) return name;
  name = name.substr(std::string(autosched::kAutoOpPrefix).size());
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return name;
}

runtime::Module build_best(const Task& task, const records::ApplyHistoryBest& best, std::ostream* warn,
                           const std::string& name, bool check_accesses) {
  const std::string target = task.target().str();
  std::optional<records::Record> rec = best_record(task, best);
  Instance inst;
  if (rec) {
    inst = instantiate_record(task, *rec);
  } else {
    if (warn) *warn << fmt::format("no tuning record for {} on {}; using the default config\n", task.key(), target);
    inst = task.instantiate_default();
  }
  lowering::LowerOptions opts;
  opts.target = task.target();
  opts.check_accesses = check_accesses;
  return codegen::build(inst.schedule, inst.args, name.empty() ? function_name(task) : name, opts);
}

}  // namespace loom::tuner
