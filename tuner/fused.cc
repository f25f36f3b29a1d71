// schedule_fused: a fused group scheduled by its anchor's template (with an epilogue) or by
// its pattern.
#include "loom/tuner/fused.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "loom/tuner/build_best.h"
#include "loom/tuner/schedule_by_pattern.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

/// The anchor node's core (conv, dense, matmul), reached from `anchor` without passing
/// through the anchor's inputs: the one stage without reduce axes tagged with the template's
/// name `tmpl` where there is one (a multi-stage computation such as Winograd's, whose output
/// transform follows its GEMM), else the one reduction; undefined if none or several.
te::Tensor anchor_core(const te::Tensor& anchor, const std::vector<te::Tensor>& inputs, const std::string& tmpl) {
  std::vector<te::Operation> found, tagged;
  std::vector<te::Tensor> stack{anchor};
  std::set<const te::OperationNode*> seen;
  while (!stack.empty()) {
    te::Tensor t = stack.back();
    stack.pop_back();
    if (!seen.insert(t.op().get()).second) continue;
    if (std::find(inputs.begin(), inputs.end(), t) != inputs.end()) continue;
    if (!t.op()->reduce_axis.empty()) found.push_back(t.op());
    else if (t.op()->tag == tmpl) tagged.push_back(t.op());
    for (const te::Tensor& in : t.op()->input_tensors()) stack.push_back(in);
  }
  if (!tagged.empty()) found = tagged;
  if (found.size() != 1) return te::Tensor();
  return te::output(found[0]);
}

FusedSchedule pattern(const FusedGroup& g, const Target& target, const std::string& why) {
  FusedSchedule fs;
  std::string how;
  fs.schedule = schedule_by_pattern(g.outputs, target, &how);
  fs.args = g.inputs;
  fs.args.insert(fs.args.end(), g.outputs.begin(), g.outputs.end());
  fs.source = ScheduleSource::kPattern;
  fs.note = "schedule generated from the pattern" + (why.empty() ? std::string() : " (" + why + ")");
  return fs;
}

records::Workload workload_of(const te::ops::TemplateCall& c) {
  records::Workload w;
  w.op = c.name;
  w.shape = c.shape;
  w.dtype = c.dtype;
  w.attrs = c.attrs;
  return w;
}

}  // namespace

const char* to_string(ScheduleSource s) {
  switch (s) {
    case ScheduleSource::kTuned: return "tuned";
    case ScheduleSource::kDefault: return "default";
    case ScheduleSource::kPattern: return "pattern";
  }
  return "?";
}

FusedSchedule schedule_fused(const FusedGroup& g, const Target& target, const records::ApplyHistoryBest* best) {
  LOOM_CHECK(!g.outputs.empty(), "schedule_fused: the group has no outputs");
  for (const te::Tensor& t : g.inputs)
    LOOM_CHECK(t.defined() && t.op()->kind == te::OpKind::kPlaceholder,
               "schedule_fused: input '{}' of the group is not a placeholder", t.defined() ? t.name() : "(undefined)");
  for (const te::Tensor& t : g.anchor_inputs)
    LOOM_CHECK(t.defined() && (t.op()->kind == te::OpKind::kCompute ||
                               std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end()),
               "schedule_fused: the anchor's input '{}' is neither one of the group's inputs nor computed in it",
               t.defined() ? t.name() : "(undefined)");
  if (!g.anchor.defined() || !g.call) return pattern(g, target, g.anchor.defined() ? "the anchor has no template" : "");
  for (const te::Tensor& t : g.anchor_inputs)
    if (t.op()->kind == te::OpKind::kCompute)
      return pattern(g, target, fmt::format("the anchor reads '{}', computed in the group; a template reads inputs",
                                            t.name()));
  const te::ops::TemplateCall& call = *g.call;
  const Template* tmpl = find_template(call.name, target.kind());
  if (!tmpl) return pattern(g, target, fmt::format("no template '{}' on {}", call.name, target.kind()));
  if (g.outputs.size() != 1) return pattern(g, target, "a template kernel has one output");
  te::Tensor core = anchor_core(g.anchor, g.anchor_inputs, tmpl->name);
  if (!core.defined()) return pattern(g, target, "the anchor has no single reduction for its template");
  const bool epilogue = g.outputs[0] != core;
  if (epilogue && !tmpl->schedule_epilogue)
    return pattern(g, target, fmt::format("template '{}' takes no epilogue", tmpl->name));

  std::optional<Task> task;
  try {
    task = Task::create(workload_of(call), target);
  } catch (const Error& e) {
    return pattern(g, target, fmt::format("the template refuses the workload: {}", e.what()));
  }
  // The template's own computation of the workload stands in for the anchor's reduction.
  std::vector<te::Tensor> targs = tmpl->compute(task->workload());
  const te::Tensor tout = targs.back();
  std::map<te::Tensor, te::Tensor> replace{{core, tout}};
  const size_t n_in = std::min(targs.size() - 1, g.anchor_inputs.size());
  for (size_t i = 0; i < n_in; ++i) replace[g.anchor_inputs[i]] = targs[i];
  te::Tensor output;
  try {
    output = te::replace_tensors(g.outputs, replace)[0];
  } catch (const Error& e) {
    return pattern(g, target, fmt::format("the template's computation does not fit the anchor: {}", e.what()));
  }

  std::optional<records::Record> rec;
  if (best) rec = best_record(*task, *best);
  FusedSchedule fs;
  fs.workload_key = task->key();
  auto instantiate = [&](const ConfigEntity& e) {
    ConfigContext cfg(e);
    return epilogue ? tmpl->schedule_epilogue(cfg, tout, output, target)
                    : tmpl->schedule(cfg, std::vector<te::Tensor>(targs.begin(), targs.end()), target);
  };
  try {
    std::string note;
    if (rec) {
      try {
        ConfigEntity e = record_config(*task, *rec);
        fs.schedule = instantiate(e);
        fs.config_index = e.index();
        fs.source = ScheduleSource::kTuned;
        note = fmt::format("{}: tuned config {} on {}", fs.workload_key, e.index(), rec->target);
      } catch (const Error& e) {
        note = fmt::format("{}: the tuned config {} does not apply ({}); ", fs.workload_key, rec->config.index,
                           e.what());
      }
    }
    if (fs.source != ScheduleSource::kTuned) {
      fs.schedule = instantiate(task->space().get(task->default_index()));
      fs.config_index = task->default_index();
      fs.source = ScheduleSource::kDefault;
      if (note.empty()) note = fmt::format("{}: no tuning record on {}; ", fs.workload_key, target.str());
      note += fmt::format("the template's default config {}", fs.config_index);
    }
    fs.note = note + (epilogue ? " (with a fused epilogue)" : "");
  } catch (const Error& e) {
    return pattern(g, target, fmt::format("template '{}' cannot schedule the group: {}", tmpl->name, e.what()));
  }
  for (const te::Tensor& in : g.inputs) {
    auto it = replace.find(in);
    fs.args.push_back(it == replace.end() ? in : it->second);
  }
  fs.args.push_back(output);
  return fs;
}

}  // namespace loom::tuner
