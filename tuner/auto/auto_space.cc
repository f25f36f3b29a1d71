// AutoSpace: the auto-scheduler's SearchSpace: roles and knobs from the sketch rules, configs
// applied by the Generator, canonical configs, and the pattern schedule as one more sketch.
#include "loom/tuner/auto/auto_space.h"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "loom/lower/lower.h"
#include "loom/tuner/schedule_by_pattern.h"
#include "sketch.h"

namespace loom::tuner {
namespace {

using autosched::ComputeDag;
using autosched::Generator;
using autosched::Role;
using autosched::SketchBuilder;
using autosched::StagePlan;

constexpr int64_t kRulesSketch = 0, kPatternSketch = 1;

class AutoSpace : public SearchSpace {
 public:
  AutoSpace(std::vector<te::Tensor> args, Target target, AutoOptions opt)
      : args_(std::move(args)), target_(std::move(target)), opt_(opt), dag_(outputs_of(args_)) {
    if (opt_.include_pattern) {
      space_.define_choice("sketch", {kRulesSketch, kPatternSketch});
      sketch_knob_ = 0;
    }
    SketchBuilder b(dag_, target_, &space_);
    if (opt_.include_pattern) b.count_knob(2);
    const auto& rules = autosched::rules_for(target_);
    const int n = int(dag_.stages().size());
    for (int i = n - 1; i >= 0; --i) {
      if (dag_.stages()[size_t(i)].placeholder) continue;
      if (b.plans[size_t(i)].role == Role::kEpilogue) continue;  // claimed by the stage it follows
      for (const autosched::SketchRule* r : rules) {
        if (!r->match(b, i)) continue;
        b.plans[size_t(i)].rule = r;
        break;
      }
      LOOM_CHECK(b.plans[size_t(i)].rule, "auto-scheduler: no rule takes stage '{}'", dag_.stages()[size_t(i)].label);
    }
    for (int i = n - 1; i >= 0; --i)
      if (b.plans[size_t(i)].rule) b.plans[size_t(i)].rule->define(b, i);
    plans_ = b.plans;
    lanes_ = b.lanes;
    std::vector<int> preferred = b.preferred();
    if (opt_.include_pattern) preferred.insert(preferred.begin(), 0);  // the sketch knob
    rules_default_ = canonical(space_.index_of(preferred));
    const int64_t rules_default = rules_default_;
    if (opt_.include_pattern) {
      std::vector<int> c(space_.knobs().size(), 0);
      c[0] = 1;
      default_index_ = space_.index_of(c);
    } else {
      default_index_ = rules_default;
    }
  }

  const char* kind() const override { return "auto"; }
  std::vector<te::Tensor> compute() const override { return args_; }
  const ConfigSpace& space() const override { return space_; }
  double flop() const override { return dag_.flop(); }
  int64_t default_index() const override { return default_index_; }
  std::vector<int64_t> first_configs() const override {
    if (rules_default_ == default_index_) return {default_index_};
    return {default_index_, rules_default_};
  }
  bool records_steps() const override { return true; }

  Instance instantiate(const ConfigEntity& e) const override {
    LOOM_CHECK(e.space() == &space_, "auto-scheduler: config {} belongs to another config space", e.index());
    Instance inst{generate(e, nullptr), args_};
    if (target_.is_cuda()) check_gpu_limits(inst, e);
    return inst;
  }

  int64_t canonical(int64_t index) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = canonical_.find(index);
      if (it != canonical_.end()) return it->second;
    }
    std::vector<int> choices;
    try {
      generate(space_.get(index), &choices);
    } catch (const Error&) {
      // A config that cannot be instantiated stands for itself (it fails when measured).
      choices = space_.choices_of(index);
    }
    const int64_t c = space_.index_of(choices);
    std::lock_guard<std::mutex> lock(mu_);
    canonical_.emplace(index, c);
    return c;
  }

  std::string describe() const override {
    std::string out = fmt::format("auto-scheduled ({} configs{})", space_.size(),
                                  opt_.include_pattern ? ", the pattern schedule among them" : "");
    for (size_t i = 0; i < plans_.size(); ++i) {
      const StagePlan& p = plans_[i];
      if (!p.rule) continue;
      std::string what = autosched::to_string(p.role);
      if (p.role == Role::kTiled)
        what += p.epilogue >= 0 ? fmt::format(", computed in the tiles of {}", dag_.stages()[size_t(p.epilogue)].label)
                                : ", through a cache_write";
      if (p.role == Role::kEpilogue) what += fmt::format(" of {}", dag_.stages()[size_t(p.anchor)].label);
      out += fmt::format("\n{}: {} (rule {})", dag_.stages()[i].label, what, p.rule->name());
    }
    return out;
  }

 private:
  /// A GPU config is lowered (not compiled): one whose kernels break the GPU's limits (shared
  /// memory, registers for local arrays, threads; lowering::verify_gpu) is rejected before it
  /// is built.
  void check_gpu_limits(const Instance& inst, const ConfigEntity& e) const {
    lowering::LowerOptions opts;
    opts.target = target_;
    try {
      lowering::lower(inst.schedule, inst.args, "auto_check", opts);
    } catch (const Error& err) {
      throw InstantiationError(fmt::format("auto-scheduler: config {} ({}): {}", e.index(), e.str(), err.what()));
    }
  }

  /// The schedule of config `e`; with `canonical`, the choices of its canonical config.
  schedule::Schedule generate(const ConfigEntity& e, std::vector<int>* canonical) const {
    Generator g(dag_, plans_, target_, lanes_, e);
    try {
      if (sketch_knob_ >= 0 && space_.knobs()[size_t(sketch_knob_)].values[size_t(g.knob(sketch_knob_))][0] ==
                                   kPatternSketch) {
        if (canonical) *canonical = g.canonical_choices();
        return schedule_by_pattern(dag_.outputs(), target_);
      }
      for (int i = int(plans_.size()) - 1; i >= 0; --i)
        if (plans_[size_t(i)].rule) plans_[size_t(i)].rule->apply(g, i);
    } catch (const InstantiationError&) {
      throw;
    } catch (const Error& err) {
      throw InstantiationError(fmt::format("auto-scheduler: config {} ({}): {}", e.index(), e.str(), err.what()));
    }
    if (canonical) *canonical = g.canonical_choices();
    return g.s;
  }

  std::vector<te::Tensor> args_;
  Target target_;
  AutoOptions opt_;
  ComputeDag dag_;
  ConfigSpace space_;
  std::vector<StagePlan> plans_;
  int lanes_ = 1;
  int sketch_knob_ = -1;
  int64_t default_index_ = 0;
  int64_t rules_default_ = 0;  // the rules' preferred config
  mutable std::mutex mu_;
  mutable std::unordered_map<int64_t, int64_t> canonical_;
};

}  // namespace

std::shared_ptr<const SearchSpace> make_auto_space(std::vector<te::Tensor> args, const Target& target,
                                                   const AutoOptions& opt) {
  return std::make_shared<AutoSpace>(std::move(args), target, opt);
}

namespace autosched {

const std::vector<const SketchRule*>& cpu_rules() {
  static const std::vector<const SketchRule*> rules = {
      &always_inline_rule(), &multi_level_tiling_rule(), &reduction_rule(), &compute_location_rule(),
      &injective_rule(),
  };
  return rules;
}

const std::vector<const SketchRule*>& gpu_rules() {
  static const std::vector<const SketchRule*> rules = {
      &always_inline_rule(), &gpu_multi_level_tiling_rule(), &gpu_reduction_rule(), &gpu_injective_rule(),
  };
  return rules;
}

const std::vector<const SketchRule*>& rules_for(const Target& target) {
  return target.is_cuda() ? gpu_rules() : cpu_rules();
}

}  // namespace autosched
}  // namespace loom::tuner
