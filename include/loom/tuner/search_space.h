// What a tuning task searches: a computation, the config space defined over it, and how a
// config of that space schedules it. A schedule template is one implementation
// (tuner/templates: knobs a person chose), the auto-scheduler the other (tuner/auto: knobs
// the sketch rules derive from the computation); the explorer, cost model, measurer, records,
// ApplyHistoryBest and the task scheduler see only this interface, through tuner::Task.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/target.h"
#include "loom/schedule/trace.h"
#include "loom/tuner/space.h"

namespace loom::tuner {

/// A schedule with the tensors it computes, in call order (inputs, then outputs).
struct Instance {
  schedule::Schedule schedule;
  std::vector<te::Tensor> args;
};

/// A search space over the schedules of one computation on one target.
class SearchSpace {
 public:
  virtual ~SearchSpace() = default;
  /// "template" or "auto".
  virtual const char* kind() const = 0;
  /// A fresh build of the computation's tensors, unscheduled, in call order (inputs first).
  virtual std::vector<te::Tensor> compute() const = 0;
  /// The config space (fixed for the life of the object).
  virtual const ConfigSpace& space() const = 0;
  /// The schedule of config `e` of space(). Throws InstantiationError when the config is
  /// rejected (a template's check, a target limit, a primitive's error).
  virtual Instance instantiate(const ConfigEntity& e) const = 0;
  /// Floating point operations of one run.
  virtual double flop() const = 0;
  /// A good untuned config (what `build_best` uses without a record).
  virtual int64_t default_index() const = 0;
  /// The configs a tuning run measures first (TuneOptions::include_default), distinct: the
  /// default, and for the auto-scheduler its rules' own preferred config too.
  virtual std::vector<int64_t> first_configs() const { return {default_index()}; }
  /// The primitives config `e` applies, replayable on a fresh schedule of compute()'s outputs
  /// (schedule/trace.h). By default the trace of instantiate(e).
  virtual std::vector<schedule::Step> steps(const ConfigEntity& e) const;
  /// The config that stands for every config scheduling the same way as `index` (the auto
  /// space's knobs that the chosen sketch does not read are set to their first value).
  /// Tuners measure only canonical configs. By default `index` itself.
  virtual int64_t canonical(int64_t index) const { return index; }
  /// Whether the records of this space carry their steps (the auto-scheduler's do, so that a
  /// record outlives a change of the rules; a template's config index is its record).
  virtual bool records_steps() const { return false; }
  /// One line for `loom show`: "template 'matmul'", "auto-scheduled: 2 stages, 3 sketches…".
  virtual std::string describe() const = 0;
};

/// The tensors among `args` that are computed (not placeholders), in order.
std::vector<te::Tensor> outputs_of(const std::vector<te::Tensor>& args);

}  // namespace loom::tuner
