// TemplateSpace: a schedule template as a SearchSpace (the knobs a template defines for one
// workload and target).
#include <fmt/format.h>

#include "templates.h"

namespace loom::tuner {
namespace {

class TemplateSpace : public SearchSpace {
 public:
  TemplateSpace(const Template& t, records::Workload w, Target target)
      : tmpl_(t), workload_(std::move(w)), target_(std::move(target)) {
    if (tmpl_.check) tmpl_.check(workload_);
    flop_ = tmpl_.flop ? tmpl_.flop(workload_) : 0.0;
    try {
      ConfigContext cfg(&space_);
      tmpl_.schedule(cfg, tmpl_.compute(workload_), target_);
    } catch (const Error& e) {
      fail("template '{}' failed to define its config space for {}: {}", tmpl_.name, workload_.key(), e.what());
    }
    default_index_ = tmpl_.workload_default_config ? tmpl_.workload_default_config(space_, workload_)
                     : tmpl_.default_config          ? tmpl_.default_config(space_)
                                                     : 0;
    LOOM_CHECK(default_index_ >= 0 && default_index_ < space_.size(),
               "template '{}': default config {} is outside its space of {}", tmpl_.name, default_index_, space_.size());
  }

  const char* kind() const override { return "template"; }
  std::vector<te::Tensor> compute() const override { return tmpl_.compute(workload_); }
  const ConfigSpace& space() const override { return space_; }
  double flop() const override { return flop_; }
  int64_t default_index() const override { return default_index_; }
  std::string describe() const override {
    return fmt::format("template '{}' ({} configs)", tmpl_.name, space_.size());
  }

  Instance instantiate(const ConfigEntity& e) const override {
    LOOM_CHECK(e.space() == &space_, "template '{}': config {} belongs to another config space", tmpl_.name, e.index());
    Instance inst;
    inst.args = tmpl_.compute(workload_);
    ConfigContext cfg(e);
    inst.schedule = tmpl_.schedule(cfg, inst.args, target_);
    return inst;
  }

  const Template& tmpl() const { return tmpl_; }

 private:
  Template tmpl_;
  records::Workload workload_;
  Target target_;
  ConfigSpace space_;
  double flop_ = 0;
  int64_t default_index_ = 0;
};

}  // namespace

std::shared_ptr<const SearchSpace> make_template_space(const Template& t, const records::Workload& w,
                                                       const Target& target) {
  return std::make_shared<TemplateSpace>(t, w, target);
}

}  // namespace loom::tuner
