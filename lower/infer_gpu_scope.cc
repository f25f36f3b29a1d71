// infer_gpu_scope: the default storage scope of a stage computed inside a GPU kernel.
//
// As in TVM: a stage without an explicit scope that is computed at a loop nested in a loop
// bound to threadIdx (following compute_at up through every enclosing stage) is "local";
// one nested only in blockIdx loops is "shared". Root stages stay "global".
#include "loom/lower/passes.h"

namespace loom::lowering {

void infer_gpu_scope(schedule::Schedule& s) {
  using schedule::AttachType;
  for (const schedule::Stage& st : s.stages()) {
    if (!st->scope.empty() || st->attach_type != AttachType::kScope) continue;
    bool thread = false, block = false;
    for (schedule::Stage at = st->attach_stage, prev = st; at.defined(); prev = at, at = at->attach_stage) {
      const te::IterVar& ivar = prev->attach_ivar;
      for (const te::IterVar& leaf : at->leaf_iter_vars) {
        auto it = at->iter_var_attrs.find(leaf.get());
        if (it != at->iter_var_attrs.end() && it->second.annotation == schedule::IterAnnotation::kThreadBind) {
          const std::string& tag = it->second.bind_thread->thread_tag;
          thread |= tag.rfind("threadIdx", 0) == 0;
          block |= tag.rfind("blockIdx", 0) == 0;
        }
        if (leaf == ivar) break;
      }
      if (at->attach_type != AttachType::kScope) break;
    }
    if (thread) st->scope = "local";
    else if (block) st->scope = "shared";
  }
}

}  // namespace loom::lowering
