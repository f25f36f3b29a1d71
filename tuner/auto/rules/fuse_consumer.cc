// Rule fuse_consumer: a multi-level tiled stage whose only consumer (through inlined stages)
// is an elementwise stage of its shape reading it at the same indices (a bias add, GELU, a
// residual add) is computed in that consumer's tiles (Ansor's RuleMultiLevelTilingWithFusion):
// the consumer follows the tiled stage's spatial tiles, its first level fused into one parallel
// loop and its last vectorized, and the tiled stage is computed at the end of its first or
// second level (the tiled stage's "at" knob), in registers, before the store.
#include <fmt/format.h>

#include "../sketch.h"

namespace loom::tuner::autosched {
namespace {

/// Whether every path from `from` to consumer `to` through inlined stages reads at identity
/// indices, over stages of `spatial` extents.
bool identity_path(const SketchBuilder& b, int from, int to, const std::vector<int64_t>& spatial) {
  for (int c : b.dag.stages()[size_t(from)].consumers) {
    const StageInfo& cs = b.dag.stages()[size_t(c)];
    if (!cs.reads.at(from).identity || cs.spatial != spatial) return false;
    if (c == to) continue;
    if (b.plans[size_t(c)].role != Role::kInline || !identity_path(b, c, to, spatial)) return false;
  }
  return true;
}

class FuseConsumer : public SketchRule {
 public:
  const char* name() const override { return "fuse_consumer"; }
  // The role comes from multi_level_tiling's claim, never from a match of its own.
  bool match(SketchBuilder&, int) const override { return false; }
  void define(SketchBuilder&, int) const override {}
  void apply(Generator& g, int i) const override { tile_epilogue(g, g.plans[size_t(i)].anchor, i, g.place[size_t(i)].top); }
};

}  // namespace

const SketchRule& fuse_consumer_rule() {
  static const FuseConsumer rule;
  return rule;
}

int fusible_consumer(const SketchBuilder& b, int i) {
  const StageInfo& st = b.dag.stages()[size_t(i)];
  if (st.output) return -1;
  const std::vector<int> consumers = b.effective_consumers(i);
  if (consumers.size() != 1) return -1;
  const int e = consumers[0];
  const StageInfo& es = b.dag.stages()[size_t(e)];
  if (b.plans[size_t(e)].role != Role::kInjective || es.reduction || es.op->num_outputs() != 1 ||
      es.spatial != st.spatial)
    return -1;
  return identity_path(b, i, e, st.spatial) ? e : -1;
}

bool claim_tiled_stage(SketchBuilder& b, int i, const SketchRule& epilogue_rule) {
  const StageInfo& st = b.dag.stages()[size_t(i)];
  if (!st.reduction || !st.data_reuse) return false;
  StagePlan& p = b.plans[size_t(i)];
  p.role = Role::kTiled;
  p.epilogue = fusible_consumer(b, i);
  if (p.epilogue >= 0) {
    StagePlan& e = b.plans[size_t(p.epilogue)];
    e.role = Role::kEpilogue;
    e.anchor = i;
    e.rule = &epilogue_rule;
  }
  return true;
}

void tile_epilogue(Generator& g, int anchor, int owner, schedule::Stage st) {
  const StageInfo& a = g.dag.stages()[size_t(anchor)];
  SpatialTiles t = tile_spatial(g, anchor, st);
  const std::vector<te::IterVar>& unit = t.unit;
  const std::vector<std::vector<te::IterVar>>& level = t.level;
  const int64_t vector = t.vector, outer_iterations = t.outer_iterations;
  std::vector<te::IterVar> order = unit;
  for (const auto& l : level) order.insert(order.end(), l.begin(), l.end());
  st.reorder(order);
  if (!level[3].empty() && vector > 1) {
    g.check_vector(vector, st->op->output_dtype(0));
    st.vectorize(level[3].back());
  }
  std::vector<te::IterVar> first = unit;
  first.insert(first.end(), level[0].begin(), level[0].end());
  te::IterVar fused = g.parallelize(st, first, a.spatial_size * a.reduce_size, outer_iterations);
  std::vector<te::IterVar> loops;
  if (fused.defined()) loops.push_back(fused);
  loops.insert(loops.end(), level[1].begin(), level[1].end());
  loops.insert(loops.end(), level[2].begin(), level[2].end());
  g.set_loops(owner, st, loops);
  Generator::Placement& p = g.place[size_t(owner)];
  p.tile_levels = {fused, level[1].empty() ? fused : level[1].back()};
}

}  // namespace loom::tuner::autosched
