// build_best: a task compiled with its best tuned config, or its default when untuned.
#pragma once
#include <iostream>
#include <string>

#include "loom/records/record.h"
#include "loom/runtime/module.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

/// The config a record of `task` names. Throws loom::Error naming the workload, target and
/// config index when the record's knobs do not fit the task's space (a log written before
/// the template's knobs changed).
ConfigEntity record_config(const Task& task, const records::Record& record);

/// The schedule a record of `task` stands for: its config, when that is a config of the task's
/// space (and, for a record that carries steps, one that makes the same steps), else its steps
/// replayed on the computation (an auto-scheduled record whose rules have changed since). Throws
/// loom::Error naming the workload, target and config when neither works (a template's log
/// written before its knobs changed: tune again). `how`, if given, says which was used.
Instance instantiate_record(const Task& task, const records::Record& record, std::string* how = nullptr);

/// Why `record` (of `task`'s workload) cannot stand for a config of `task`: its config index
/// lies outside the space, its knob values do not fit the space, or they are another config than
/// its index names; "" when it is a config of the space, or when it carries steps (it replays).
std::string record_problem(const Task& task, const records::Record& record);

/// Installs (records::set_record_check) record_problem as the check every tuning-log reader of
/// this process applies: read_log, and so ApplyHistoryBest, `loom records`, build, show, compile,
/// tune --resume and tune-model, skips such a record with a warning naming the file, the line
/// and why. Records no template's task can be made for (fused kernels, unknown ops or targets)
/// are kept. The `loom` CLI installs it at start-up.
void install_record_check();

/// The best record of `task` in `best`: for its workload on its target or, when there is
/// none, for the same workload under another name of its template (an alias such as
/// "matmul_cuda" that older logs carry, or the template's name for a task created under an
/// alias).
std::optional<records::Record> best_record(const Task& task, const records::ApplyHistoryBest& best);

/// The name of a task's function in built modules: its op, or for an auto-scheduled task the
/// op without "auto:" and with each character other than a letter, digit or '_' made '_'
/// ("auto:dense+add" → "dense_add").
std::string function_name(const Task& task);

/// Builds `task` with the config of its best_record in `best`; without one, writes "no tuning record for <key> on <target>; using the default
/// config" to `warn` (if not null) and builds the default config. The module's function is
/// named `name`, or function_name(task) when `name` is empty. With `check_accesses`,
/// every tensor access is checked at run time (lowering::LowerOptions::check_accesses).
runtime::Module build_best(const Task& task, const records::ApplyHistoryBest& best, std::ostream* warn = &std::cerr,
                           const std::string& name = "", bool check_accesses = false);

}  // namespace loom::tuner
