// Fused kernels: the tasks that can schedule a group of registry operators (its anchor's
// template with the group composed on the template's computation, the auto-scheduler's task of
// the group), and the choice among their records.
#include "loom/tuner/fused.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "loom/te/op_registry.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/schedule_by_pattern.h"

namespace loom::tuner {
namespace {

records::Workload workload_of(const te::ops::TemplateCall& c) {
  return records::Workload{c.name, c.shape, c.dtype, c.attrs};
}

std::string type_str(const te::Tensor& t) {
  std::vector<int64_t> s;
  for (const te::Expr& e : t.shape()) s.push_back(te::as_const_int(e) ? *te::as_const_int(e) : -1);
  return fmt::format("{}[{}]", t.dtype().str(), fmt::join(s, ","));
}

std::string type_str(const te::ops::TensorType& t) { return fmt::format("{}[{}]", t.dtype.str(), fmt::join(t.shape, ",")); }

/// A kernel scheduled by its anchor's template: the template's computation of the workload is
/// the anchor (finished by TemplateCall::finish), the other operators of the group are composed
/// on it from the registry, and the template schedules the whole with them in its output tile.
/// The config space is the bare workload's (`bare`), so the records of one serve the other.
class TemplateKernelSpace final : public SearchSpace {
 public:
  TemplateKernelSpace(const FusedKernel& k, te::ops::TemplateCall call, const Template& tmpl, Task bare,
                      const Target& target)
      : k_(k), call_(std::move(call)), tmpl_(tmpl), bare_(std::move(bare)), target_(target) {
    Composed c = compose();  // checks the template's computation against the operator's
    if (c.outputs.size() != 1)
      fail("a template kernel has one output (the group has {})", c.outputs.size());
    if (c.outputs[0] != c.core && !tmpl_.schedule_epilogue)
      fail("template '{}' takes no epilogue", tmpl_.name);
  }

  const char* kind() const override { return "template"; }
  std::vector<te::Tensor> compute() const override { return compose().args(); }
  const ConfigSpace& space() const override { return bare_.space(); }
  Instance instantiate(const ConfigEntity& e) const override {
    Composed c = compose();
    ConfigContext cfg(e);
    Instance out;
    try {
      out.schedule = c.outputs[0] == c.core
                         ? tmpl_.schedule(cfg, c.template_args, target_)
                         : tmpl_.schedule_epilogue(cfg, c.core, c.outputs[0], target_);
    } catch (const InstantiationError&) {
      throw;
    } catch (const Error& err) {
      throw InstantiationError(fmt::format("config {} of {}: {}", e.index(), bare_.key(), err.what()));
    }
    out.args = c.args();
    return out;
  }
  double flop() const override { return bare_.flop(); }
  int64_t default_index() const override { return bare_.default_index(); }
  std::string describe() const override {
    return fmt::format("template '{}' with {} operator{} composed on its output", tmpl_.name,
                       k_.graph.nodes.size() - 1, k_.graph.nodes.size() == 2 ? "" : "s");
  }

 private:
  struct Composed {
    std::vector<te::Tensor> inputs, outputs;
    std::vector<te::Tensor> template_args;  // the template's computation as it built it
    te::Tensor core;                        // its output
    std::vector<te::Tensor> args() const {
      std::vector<te::Tensor> a = inputs;
      a.insert(a.end(), outputs.begin(), outputs.end());
      return a;
    }
  };

  /// The kernel's computation with the template's stand-in for the anchor. Throws loom::Error
  /// saying what does not fit.
  Composed compose() const {
    const autosched::OpGraph& g = k_.graph;
    const autosched::OpGraph::Node& anchor = g.nodes[size_t(k_.anchor)];
    Composed c;
    c.template_args = tmpl_.compute(bare_.workload());
    c.core = c.template_args.back();
    const size_t n_tmpl = c.template_args.size() - 1;
    if (n_tmpl > anchor.inputs.size() || (n_tmpl < anchor.inputs.size() && !call_.finish))
      fail("the template reads {} inputs, the operator {}", n_tmpl, anchor.inputs.size());
    // The template's placeholders are the kernel's inputs the anchor reads first.
    std::map<int, te::Tensor> values;
    for (size_t i = 0; i < n_tmpl; ++i) {
      const int v = anchor.inputs[i];
      if (v >= int(g.inputs.size()))
        fail("the anchor's input {} is computed in the group; a template reads kernel inputs", i);
      const te::Tensor& p = c.template_args[i];
      if (type_str(p) != type_str(g.inputs[size_t(v)]))
        fail("the template's input {} is {}, the operator's {}", i, type_str(p), type_str(g.inputs[size_t(v)]));
      if (values.count(v) && values[v] != p) fail("the operator reads one input as two of the template's");
      values[v] = p;
    }
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (values.count(int(i))) continue;
      std::vector<te::Expr> shape;
      for (int64_t d : g.inputs[i].shape) shape.push_back(te::Expr(d));
      values[int(i)] = te::placeholder(shape, g.inputs[i].dtype, fmt::format("in{}", i));
    }
    for (size_t i = 0; i < g.inputs.size(); ++i) c.inputs.push_back(values.at(int(i)));
    int next = int(g.inputs.size());
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      std::vector<te::Tensor> in;
      for (int v : g.nodes[n].inputs) in.push_back(values.at(v));
      std::vector<te::Tensor> out;
      if (int(n) == k_.anchor) {
        out = call_.finish ? call_.finish(c.core, in) : std::vector<te::Tensor>{c.core};
        std::vector<te::Tensor> want = te::ops::apply_op(anchor.op, in, anchor.attrs);
        if (out.size() != want.size()) fail("the template gives {} outputs, the operator {}", out.size(), want.size());
        for (size_t o = 0; o < out.size(); ++o)
          if (type_str(out[o]) != type_str(want[o]))
            fail("the template's output is {}, the operator's {}", type_str(out[o]), type_str(want[o]));
      } else {
        out = te::ops::apply_op(g.nodes[n].op, in, g.nodes[n].attrs);
      }
      for (te::Tensor& t : out) values[next++] = std::move(t);
    }
    for (int v : g.outputs) c.outputs.push_back(values.at(v));
    return c;
  }

  FusedKernel k_;
  te::ops::TemplateCall call_;
  const Template& tmpl_;
  Task bare_;
  Target target_;
};

/// The anchor's template task, or why there is none.
std::optional<Task> template_task(const FusedKernel& k, const Target& target, std::string* why) {
  if (k.anchor < 0) return std::nullopt;
  const autosched::OpGraph::Node& a = k.graph.nodes[size_t(k.anchor)];
  std::vector<te::ops::TensorType> in;
  std::vector<te::ops::TensorType> types = k.graph.inputs;
  // Types of the values the anchor reads: the kernel's inputs or values computed before it.
  for (size_t n = 0; n < size_t(k.anchor); ++n) {
    std::vector<te::ops::TensorType> nin;
    for (int v : k.graph.nodes[n].inputs) nin.push_back(types.at(size_t(v)));
    for (auto& t : te::ops::infer_type(k.graph.nodes[n].op, nin, k.graph.nodes[n].attrs)) types.push_back(t);
  }
  for (int v : a.inputs) in.push_back(types.at(size_t(v)));
  std::optional<te::ops::TemplateCall> call = te::ops::select_template(a.op, target.kind(), in, a.attrs);
  if (!call) {
    *why = fmt::format("'{}' has no template for this instance on {}", a.op, target.kind());
    return std::nullopt;
  }
  const Template* tmpl = find_template(call->name, target.kind());
  if (!tmpl) {
    *why = fmt::format("no template '{}' on {}", call->name, target.kind());
    return std::nullopt;
  }
  try {
    Task bare = Task::create(workload_of(*call), target);
    records::Workload w = bare.workload();
    return Task::create(std::move(w), target, std::make_shared<TemplateKernelSpace>(k, *call, *tmpl, bare, target));
  } catch (const Error& e) {
    *why = fmt::format("template '{}' cannot schedule the kernel: {}", call->name, e.what());
    return std::nullopt;
  }
}

FusedSchedule pattern(const FusedKernel& k, const Target& target, const std::string& why) {
  FusedSchedule fs;
  fs.args = k.graph.build();
  fs.schedule = schedule_by_pattern(outputs_of(fs.args), target);
  fs.source = ScheduleSource::kPattern;
  fs.note = "schedule generated from the pattern" + (why.empty() ? std::string() : " (" + why + ")");
  return fs;
}

}  // namespace

const char* to_string(SearchKind k) {
  switch (k) {
    case SearchKind::kTemplate: return "template";
    case SearchKind::kAuto: return "auto";
    case SearchKind::kBoth: return "both";
  }
  return "?";
}

SearchKind parse_search_kind(const std::string& s) {
  for (SearchKind k : {SearchKind::kTemplate, SearchKind::kAuto, SearchKind::kBoth})
    if (s == to_string(k)) return k;
  fail("unknown search '{}' (expected template, auto or both)", s);
}

const char* to_string(ScheduleSource s) {
  switch (s) {
    case ScheduleSource::kTuned: return "tuned";
    case ScheduleSource::kAuto: return "auto";
    case ScheduleSource::kDefault: return "default";
    case ScheduleSource::kPattern: return "pattern";
  }
  return "?";
}

records::Workload auto_workload(const FusedKernel& k) { return autosched::workload_of(k.graph); }

KernelTasks kernel_tasks(const FusedKernel& k, const Target& target, SearchKind kind) {
  LOOM_CHECK(!k.graph.outputs.empty(), "fused kernel {}: no outputs", k.graph.display_name());
  LOOM_CHECK(k.anchor < int(k.graph.nodes.size()), "fused kernel {}: anchor {} of {} operators",
             k.graph.display_name(), k.anchor, k.graph.nodes.size());
  KernelTasks out;
  if (kind != SearchKind::kAuto) out.templated = template_task(k, target, &out.template_note);
  if (kind != SearchKind::kTemplate) {
    try {
      out.automatic = Task::create_auto(k.graph, target);
    } catch (const Error& e) {
      out.auto_note = e.what();
    }
  }
  return out;
}

FusedSchedule schedule_fused(const FusedKernel& k, const Target& target, const records::ApplyHistoryBest* best) {
  KernelTasks kt = kernel_tasks(k, target, SearchKind::kTemplate);
  std::optional<records::Record> trec, arec;
  if (best && kt.templated) trec = best_record(Task::create(kt.templated->workload(), target), *best);
  const records::Workload aw = auto_workload(k);
  if (best) arec = best->best(aw, target.str());
  std::string note;
  // The auto record first when it is the faster one (or the only one).
  if (arec && (!trec || arec->result.mean_cost() < trec->result.mean_cost())) {
    try {
      Task task = Task::create_auto(k.graph, target);
      std::string how;
      Instance inst = instantiate_record(task, *arec, &how);
      FusedSchedule fs;
      fs.schedule = inst.schedule;
      fs.args = inst.args;
      fs.source = ScheduleSource::kAuto;
      fs.workload_key = task.key();
      fs.workload = task.workload();
      fs.config_index = arec->config.index;
      fs.note = fmt::format("{}: auto-scheduled, {} on {}{}", task.key(), how.empty() ? fmt::format("config {}", arec->config.index) : how,
                            arec->target,
                            trec ? fmt::format(" ({:.4g} ms, the template's record {:.4g} ms)", arec->result.mean_cost() * 1e3,
                                               trec->result.mean_cost() * 1e3)
                                 : "");
      return fs;
    } catch (const Error& e) {
      note = fmt::format("{}: the auto-scheduled record does not apply ({}); ", aw.key(), e.what());
    }
  }
  if (!kt.templated) return pattern(k, target, note + kt.template_note);
  const Task& task = *kt.templated;
  FusedSchedule fs;
  fs.workload_key = task.key();
  fs.workload = task.workload();
  if (trec) {
    try {
      ConfigEntity e = record_config(task, *trec);
      Instance inst = task.instantiate(e);
      fs.schedule = inst.schedule;
      fs.args = inst.args;
      fs.config_index = e.index();
      fs.source = ScheduleSource::kTuned;
      note += fmt::format("{}: tuned config {} on {}", fs.workload_key, e.index(), trec->target);
    } catch (const Error& e) {
      note += fmt::format("{}: the tuned config {} does not apply ({}); ", fs.workload_key, trec->config.index,
                          e.what());
    }
  }
  if (fs.source != ScheduleSource::kTuned) {
    try {
      Instance inst = task.instantiate(task.default_index());
      fs.schedule = inst.schedule;
      fs.args = inst.args;
    } catch (const Error& e) {
      return pattern(k, target, fmt::format("template '{}' cannot schedule the kernel: {}", task.workload().op,
                                            e.what()));
    }
    fs.config_index = task.default_index();
    fs.source = ScheduleSource::kDefault;
    if (!trec) note += fmt::format("{}: no tuning record on {}; ", fs.workload_key, target.str());
    note += fmt::format("the template's default config {}", fs.config_index);
  }
  fs.note = note + (k.graph.nodes.size() > 1 ? " (with a fused epilogue)" : "");
  return fs;
}

}  // namespace loom::tuner
