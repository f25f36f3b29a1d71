// Tasks and the template registry.
#include "loom/tuner/task.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "loom/runtime/suggest.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/auto/workload.h"
#include "loom/tuner/measure.h"
#include "templates/templates.h"

namespace loom::tuner {
namespace {

/// Templates by (name or alias, target kind).
using Key = std::pair<std::string, std::string>;

struct Registry {
  std::mutex mu;
  std::map<Key, std::shared_ptr<const Template>> templates;
  std::vector<std::shared_ptr<const Template>> replaced;  // keeps references handed out valid
};

Registry& registry() {
  static Registry r;
  return r;
}

void add(Registry& r, Template t) {
  LOOM_CHECK(!t.name.empty(), "register_template: a template needs a name");
  LOOM_CHECK(t.compute && t.schedule, "register_template: template '{}' needs compute and schedule functions", t.name);
  LOOM_CHECK(!t.targets.empty(), "register_template: template '{}' names no target", t.name);
  auto p = std::make_shared<const Template>(std::move(t));
  for (const std::string& kind : p->targets) {
    std::vector<std::string> names = p->aliases;
    names.insert(names.begin(), p->name);
    for (const std::string& n : names) {
      auto it = r.templates.find({n, kind});
      if (it != r.templates.end()) r.replaced.push_back(it->second);
      r.templates[{n, kind}] = p;
    }
  }
}

// Built-in templates register once, on first use of the registry (no static-init order).
Registry& ready_registry() {
  static std::once_flag once;
  Registry& r = registry();
  std::call_once(once, [&] {
    std::lock_guard<std::mutex> lock(r.mu);
    for (Template& t : builtin_templates()) add(r, std::move(t));
  });
  return r;
}

/// Sorted names (not aliases) of the registered templates; the caller holds the lock.
std::vector<std::string> names_locked(const Registry& r) {
  std::set<std::string> names;
  for (const auto& [key, t] : r.templates) names.insert(t->name);
  return {names.begin(), names.end()};
}

}  // namespace

void register_template(Template t) {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  add(r, std::move(t));
}

const Template* find_template(const std::string& name, const std::string& target_kind) {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.templates.find({name, target_kind});
  return it == r.templates.end() ? nullptr : it->second.get();
}

const Template& get_template(const std::string& name, const std::string& target_kind) {
  if (const Template* t = find_template(name, target_kind)) return *t;
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> kinds;
  for (const auto& [key, t] : r.templates)
    if (key.first == name) kinds.push_back(key.second);
  if (!kinds.empty())
    fail("template '{}' does not support target '{}' (it supports: {})", name, target_kind, fmt::join(kinds, ", "));
  const std::vector<std::string> names = names_locked(r);
  const std::string hint = did_you_mean(name, names);
  fail("no schedule template '{}'{} (templates: {})", name, hint.empty() ? "" : "; " + hint, fmt::join(names, ", "));
}

const Template& get_template(const std::string& name) {
  if (const Template* t = find_template(name, "llvm")) return *t;
  {
    Registry& r = ready_registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const auto& [key, t] : r.templates)
      if (key.first == name) return *t;
  }
  return get_template(name, "llvm");  // throws, listing the templates
}

std::vector<std::string> template_names() {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return names_locked(r);
}

std::vector<const Template*> templates() {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const Template*> out;
  std::set<const Template*> seen;
  for (const auto& [key, t] : r.templates)
    if (key.first == t->name && seen.insert(t.get()).second) out.push_back(t.get());
  return out;
}

// ---------------------------------------------------------------- Task

std::vector<te::Tensor> outputs_of(const std::vector<te::Tensor>& args) {
  std::vector<te::Tensor> outs;
  for (const te::Tensor& t : args)
    if (t.op()->kind != te::OpKind::kPlaceholder) outs.push_back(t);
  return outs;
}

std::vector<schedule::Step> SearchSpace::steps(const ConfigEntity& e) const {
  return schedule::trace(instantiate(e).schedule);
}

struct Task::Node {
  records::Workload workload;
  Target target;
  std::shared_ptr<const SearchSpace> space;
  std::optional<Template> tmpl;  // for template tasks
};

Task Task::create(const std::string& op, std::vector<int64_t> shape, const Target& target, const std::string& dtype,
                  std::map<std::string, std::string> attrs) {
  records::Workload w;
  w.op = op;
  w.shape = std::move(shape);
  w.dtype = dtype;
  w.attrs = std::move(attrs);
  return create(w, target);
}

Task Task::create(const records::Workload& w, const Target& target) {
  if (autosched::is_auto_workload(w)) {
    auto graph = w.attrs.find("graph");
    if (graph != w.attrs.end()) {
      Task t = create_auto(autosched::OpGraph::from_json(graph->second), target);
      LOOM_CHECK(t.key() == w.key(), "auto-scheduled workload {}: its op graph makes the workload {}", w.key(), t.key());
      return t;
    }
    return create(w, target, make_auto_space(autosched::registered_computation(w), target));
  }
  const Template& t = get_template(w.op, target.kind());
  auto node = std::make_shared<Node>();
  node->workload = w;
  node->target = target;
  node->space = make_template_space(t, w, target);
  node->tmpl = t;
  Task task;
  task.node_ = std::move(node);
  return task;
}

Task Task::create(records::Workload w, const Target& target, std::shared_ptr<const SearchSpace> space) {
  LOOM_CHECK(space != nullptr, "Task::create: the search space of {} is null", w.key());
  auto node = std::make_shared<Node>();
  node->workload = std::move(w);
  node->target = target;
  node->space = std::move(space);
  Task task;
  task.node_ = std::move(node);
  return task;
}

Task Task::create_auto(const std::string& name, const std::vector<te::Tensor>& args, const Target& target) {
  return create_auto(name, args, target, AutoOptions{});
}

Task Task::create_auto(const std::string& name, const std::vector<te::Tensor>& args, const Target& target,
                       const AutoOptions& opt) {
  records::Workload w = autosched::workload_of(name, args);
  autosched::register_computation(w, args);
  return create(std::move(w), target, make_auto_space(args, target, opt));
}

Task Task::create_auto(const autosched::OpGraph& graph, const Target& target) {
  return create_auto(graph, target, AutoOptions{});
}

Task Task::create_auto(const autosched::OpGraph& graph, const Target& target, const AutoOptions& opt) {
  return create(autosched::workload_of(graph), target, make_auto_space(graph.build(), target, opt));
}

const records::Workload& Task::workload() const { return node_->workload; }
const Target& Task::target() const { return node_->target; }
const ConfigSpace& Task::space() const { return node_->space->space(); }
const SearchSpace& Task::search_space() const { return *node_->space; }
bool Task::is_auto() const { return std::string(node_->space->kind()) == "auto"; }
const Template& Task::tmpl() const {
  LOOM_CHECK(node_->tmpl.has_value(), "task {} is scheduled by a {} search space, not a template", key(),
             node_->space->kind());
  return *node_->tmpl;
}
double Task::flop() const { return node_->space->flop(); }
std::string Task::key() const { return node_->workload.key(); }
std::vector<te::Tensor> Task::compute() const { return node_->space->compute(); }
int64_t Task::default_index() const { return node_->space->default_index(); }
int64_t Task::canonical(int64_t index) const { return node_->space->canonical(index); }

std::vector<schedule::Step> Task::steps(int64_t index) const { return node_->space->steps(space().get(index)); }

Instance Task::replay(const std::vector<schedule::Step>& steps) const {
  Instance inst;
  inst.args = compute();
  try {
    inst.schedule = schedule::create_schedule(outputs_of(inst.args));
    schedule::apply_steps(inst.schedule, steps);
  } catch (const Error& err) {
    throw InstantiationError(fmt::format("{}: the recorded steps do not replay: {}", key(), err.what()));
  }
  return inst;
}

records::Record Task::record(int64_t index, const records::MeasureResult& result, const std::string& tuner) const {
  static const std::string cpu = host_cpu_name();
  static const std::string host = host_name();
  records::Record rec;
  rec.workload = node_->workload;
  rec.target = node_->target.str();
  rec.target_cpu = result.host.empty() ? cpu : result.cpu;
  rec.host = result.host.empty() ? host : result.host;
  rec.target_features = node_->target.get("mattr");
  rec.flop = flop();
  rec.config = space().get(index).to_record();
  rec.result = result;
  rec.result.host.clear();
  rec.result.cpu.clear();
  rec.tuner = tuner;
  rec.loom_version = records::loom_version();
  if (node_->space->records_steps()) {
    try {
      rec.steps = schedule::steps_to_json(steps(index));
    } catch (const Error&) {
      // A config that cannot be instantiated has no steps; its record says why it failed.
    }
  }
  return rec;
}

Instance Task::instantiate(int64_t index) const { return instantiate(space().get(index)); }

Instance Task::instantiate(const ConfigEntity& e) const {
  LOOM_CHECK(e.space() == &space(), "task {}: config {} belongs to another config space", key(), e.index());
  try {
    return node_->space->instantiate(e);
  } catch (const Error& err) {
    throw InstantiationError(fmt::format("{}: config {} ({}) cannot be instantiated: {}", key(), e.index(), e.str(),
                                         err.what()));
  }
}

Instance Task::instantiate_default() const { return instantiate(default_index()); }

}  // namespace loom::tuner
