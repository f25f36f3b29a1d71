// Rule always_inline: an injective stage that is not an output is inlined into its consumers
// (Ansor's RuleAlwaysInline for strictly inlinable stages), except one computing a
// transcendental that several stages read (computed once: compute_location decides where) and
// a padding-like stage (a select) that a multi-level tiled stage reads (compute_location:
// inlined, at the root, or at a loop of the tiles). On a GPU every such stage is inlined (the
// padding into the shared-memory fetch that reads it).
#include "../sketch.h"

namespace loom::tuner::autosched {
namespace {

class AlwaysInline : public SketchRule {
 public:
  const char* name() const override { return "always_inline"; }

  bool match(SketchBuilder& b, int i) const override {
    const StageInfo& st = b.dag.stages()[size_t(i)];
    if (st.output || st.reduction || st.op->num_outputs() != 1) return false;
    // On a GPU recomputing is cheaper than a kernel or a barrier more.
    if (b.target.is_cuda()) {
      b.plans[size_t(i)].role = Role::kInline;
      return true;
    }
    const std::vector<int> consumers = b.effective_consumers(i);
    if (st.expensive && consumers.size() >= 2) return false;
    if (st.has_select)
      for (int c : consumers)
        if (b.plans[size_t(c)].role == Role::kTiled) return false;
    b.plans[size_t(i)].role = Role::kInline;
    return true;
  }

  void define(SketchBuilder&, int) const override {}

  void apply(Generator& g, int i) const override {
    g.place[size_t(i)].top.compute_inline();
    g.place[size_t(i)].inlined = true;
  }
};

}  // namespace

const SketchRule& always_inline_rule() {
  static const AlwaysInline rule;
  return rule;
}

}  // namespace loom::tuner::autosched
