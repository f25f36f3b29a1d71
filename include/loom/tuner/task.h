// Tasks and the template registry: what a tuning job tunes, and how a config becomes a schedule.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"
#include "loom/tuner/search_space.h"
#include "loom/tuner/space.h"

namespace loom::tuner {

namespace autosched {
struct OpGraph;
}
struct AutoOptions;

/// A schedule template: it builds the computation for a workload and schedules it under a
/// config context (defining the knobs or applying a config's values).
struct Template {
  std::string name;       // "matmul"
  std::string shape_doc;  // "M,N,K"
  std::string doc;        // one line for `loom ops`
  std::vector<std::string> targets = {"llvm"};  // target kinds it supports
  /// Validates the workload's shape/attrs (throws loom::Error with what is expected).
  std::function<void(const records::Workload&)> check;
  /// Floating point operations of one run.
  std::function<double(const records::Workload&)> flop;
  /// The tensors of the computation, unscheduled, in call order.
  std::function<std::vector<te::Tensor>(const records::Workload&)> compute;
  /// Schedules the tensors (as `compute` returned them) for `target` under `cfg`.
  std::function<schedule::Schedule(ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target& target)> schedule;
  /// Optional: the index of a good untuned config in the space the template defined
  /// (absent: index 0).
  std::function<int64_t(const ConfigSpace&)> default_config;
  /// Optional, in place of default_config: the untuned config for one workload, where the
  /// space alone does not tell what suits it (e.g. a first layer's few unblocked channels).
  std::function<int64_t(const ConfigSpace&, const records::Workload&)> workload_default_config;
  /// Other names the template answers to on its targets (e.g. "matmul_cuda", the CUDA
  /// matmul's name before one op name served every target), so that old logs and command
  /// lines keep working. A workload keeps the name it was created with.
  std::vector<std::string> aliases;
  /// Optional: schedules the computation with a fused epilogue. `anchor` is the output of
  /// `compute` (unscheduled, as `compute` built it) and `output` the last stage of a chain of
  /// elementwise/broadcast stages of the anchor's shape that reads it (and other inputs);
  /// the chain is computed in the anchor's output tile, in registers, before the store. It
  /// defines the same config space as `schedule` does for the bare workload, so a tuned
  /// config of the workload schedules its fused kernels too (AutoTVM's rule). `output ==
  /// anchor` is the bare computation. Absent: the template takes no epilogue.
  std::function<schedule::Schedule(ConfigContext& cfg, const te::Tensor& anchor, const te::Tensor& output,
                                   const Target& target)>
      schedule_epilogue;
};

/// Registers a template under its name and aliases for each of its targets (replacing what
/// was registered there). The built-in ones (the list in tuner/templates) are added on the
/// registry's first use; tests and users may add their own.
void register_template(Template t);
/// The template `name` (or alias) for target kind `target_kind` ("llvm", "cuda"). Throws
/// loom::Error saying which targets have one when this target has none, or listing the
/// templates when no target has one.
const Template& get_template(const std::string& name, const std::string& target_kind);
/// Null where get_template would throw.
const Template* find_template(const std::string& name, const std::string& target_kind);
/// The template `name` (or alias) on any target, the "llvm" one first; throws as above.
const Template& get_template(const std::string& name);
/// Registered template names (not aliases), sorted, each once.
std::vector<std::string> template_names();
/// Every registered template once (per target it was registered for), sorted by name.
std::vector<const Template*> templates();

/// A tuning task: a workload and a target with the search space that schedules it: a
/// template's (Task::create of a template workload) or the auto-scheduler's (create_auto, or
/// Task::create of an "auto:" workload).
class Task {
 public:
  /// E.g. Task::create("matmul", {1024, 1024, 1024}, Target("llvm")). Checks the workload
  /// with the template (loom::Error naming what is expected) and defines the config space.
  static Task create(const std::string& op, std::vector<int64_t> shape, const Target& target,
                     const std::string& dtype = "float32", std::map<std::string, std::string> attrs = {});
  /// The task of a workload as records name it: a template's, or an auto-scheduled one
  /// ("auto:…" ops, tuner/auto/workload.h), re-created from its op graph or, for a hashed te
  /// computation, from the computation this process registered (else loom::Error says so).
  static Task create(const records::Workload& w, const Target& target);
  /// An auto-scheduled task of any te computation: `args` are its inputs then its outputs, in
  /// call order; `name` names it in records. Its workload key is the name and a hash of the
  /// computation's structure, so a rebuild of the same computation (here or in another
  /// process that builds it again) finds its records.
  static Task create_auto(const std::string& name, const std::vector<te::Tensor>& args, const Target& target);
  static Task create_auto(const std::string& name, const std::vector<te::Tensor>& args, const Target& target,
                          const AutoOptions& opt);
  /// An auto-scheduled task of registry operators (one operator instance or a fused group),
  /// re-creatable from its record alone.
  static Task create_auto(const autosched::OpGraph& graph, const Target& target);
  static Task create_auto(const autosched::OpGraph& graph, const Target& target, const AutoOptions& opt);
  /// A task over a search space of one's own (the workload names it in records).
  static Task create(records::Workload w, const Target& target, std::shared_ptr<const SearchSpace> space);

  const records::Workload& workload() const;
  const Target& target() const;
  const ConfigSpace& space() const;
  const SearchSpace& search_space() const;
  /// Whether the auto-scheduler made the space (not a template).
  bool is_auto() const;
  /// The template (loom::Error for an auto-scheduled task).
  const Template& tmpl() const;
  double flop() const;
  /// Workload key (records::Workload::key()).
  std::string key() const;
  /// The computation, unscheduled, in call order (SearchSpace::compute).
  std::vector<te::Tensor> compute() const;

  /// The schedule of config `index` (loom::Error if out of range); throws InstantiationError,
  /// naming the config, if the template or a schedule primitive rejects it.
  Instance instantiate(int64_t index) const;
  Instance instantiate(const ConfigEntity& e) const;
  /// The template's default config (index 0 unless the template says otherwise).
  Instance instantiate_default() const;
  int64_t default_index() const;
  /// The config standing for every config that schedules as `index` does (SearchSpace::canonical).
  int64_t canonical(int64_t index) const;
  /// The replayable steps of config `index` (SearchSpace::steps).
  std::vector<schedule::Step> steps(int64_t index) const;
  /// `steps` (e.g. a record's) applied to a fresh schedule of the computation; throws
  /// InstantiationError naming the step that does not apply.
  Instance replay(const std::vector<schedule::Step>& steps) const;

  /// The log record of config `index` measured as `result` by `tuner`: with the host name and
  /// CPU name of the machine that measured it (result.host and result.cpu, or this machine's
  /// when result.host is empty), the target's features and this loom's version, and the
  /// config's steps when the search space records them (auto-scheduled tasks).
  records::Record record(int64_t index, const records::MeasureResult& result, const std::string& tuner) const;

 private:
  struct Node;
  std::shared_ptr<const Node> node_;
};

}  // namespace loom::tuner
