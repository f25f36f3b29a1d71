// Tasks and the template registry: what a tuning job tunes, and how a config becomes a schedule.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"
#include "loom/tuner/space.h"

namespace loom::tuner {

/// A schedule with the tensors it computes, in call order (inputs, then outputs).
struct Instance {
  schedule::Schedule schedule;
  std::vector<te::Tensor> args;
};

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

/// A tuning task: a template, a workload and a target, with its config space.
class Task {
 public:
  /// E.g. Task::create("matmul", {1024, 1024, 1024}, Target("llvm")). Checks the workload
  /// with the template (loom::Error naming what is expected) and defines the config space.
  static Task create(const std::string& op, std::vector<int64_t> shape, const Target& target,
                     const std::string& dtype = "float32", std::map<std::string, std::string> attrs = {});
  static Task create(const records::Workload& w, const Target& target);

  const records::Workload& workload() const;
  const Target& target() const;
  const ConfigSpace& space() const;
  const Template& tmpl() const;
  double flop() const;
  /// Workload key (records::Workload::key()).
  std::string key() const;

  /// The schedule of config `index` (loom::Error if out of range); throws InstantiationError,
  /// naming the config, if the template or a schedule primitive rejects it.
  Instance instantiate(int64_t index) const;
  Instance instantiate(const ConfigEntity& e) const;
  /// The template's default config (index 0 unless the template says otherwise).
  Instance instantiate_default() const;
  int64_t default_index() const;

  /// The log record of config `index` measured as `result` by `tuner`: with the host name and
  /// CPU name of the machine that measured it (result.host and result.cpu, or this machine's
  /// when result.host is empty), the target's features and this loom's version.
  records::Record record(int64_t index, const records::MeasureResult& result, const std::string& tuner) const;

 private:
  struct Node;
  std::shared_ptr<const Node> node_;
};

}  // namespace loom::tuner
