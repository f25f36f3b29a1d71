// Rule multi_level_tiling: a reduction with data reuse (matmul, convolutions: some read misses
// a spatial axis) is tiled "SSRSRS" as Ansor does on CPUs: each spatial axis split into four
// levels and each reduce axis into two, ordered S0 S1 R0 S2 R1 S3; the innermost spatial level
// is vectorized, and an auto_unroll_max_step pragma (0, 16, 64 or 512 steps) unrolls the inner
// nest. The stage is computed in the tiles of its fused consumer (fuse_consumer.cc) or of its
// cache_write copy (add_cache_write.cc), at the end of their first or second level.
// Knobs: S<d> per spatial axis [-1, f1, f2, f3], R<d> per reduce axis [-1, f], at, unroll.
#include <fmt/format.h>

#include <utility>

#include "../sketch.h"
#include "loom/lower/stmt.h"

namespace loom::tuner::autosched {
namespace {

class MultiLevelTiling : public SketchRule {
 public:
  const char* name() const override { return "multi_level_tiling"; }

  bool match(SketchBuilder& b, int i) const override { return claim_tiled_stage(b, i, fuse_consumer_rule()); }

  void define(SketchBuilder& b, int i) const override {
    const StageInfo& st = b.dag.stages()[size_t(i)];
    int last = -1;
    for (size_t d = 0; d < st.spatial.size(); ++d)
      if (st.spatial[d] > 1) last = int(d);
    for (size_t d = 0; d < st.spatial.size(); ++d) {
      if (st.spatial[d] <= 1) continue;
      auto values = tile_values(st.spatial[d], 4);
      const std::vector<int64_t> want =
          int(d) == last ? std::vector<int64_t>{1, 1, std::min<int64_t>(b.lanes, st.spatial[d])}
                         : std::vector<int64_t>{1, std::min<int64_t>(4, st.spatial[d]), 1};
      const size_t pref = closest_value(values, want);
      b.define_split(i, fmt::format("S{}", d), st.spatial[d], std::move(values), pref);
    }
    for (size_t d = 0; d < st.reduce.size(); ++d) {
      if (st.reduce[d] <= 1) continue;
      auto values = tile_values(st.reduce[d], 2);
      const size_t pref = closest_value(values, {std::min<int64_t>(8, st.reduce[d])});
      b.define_split(i, fmt::format("R{}", d), st.reduce[d], std::move(values), pref);
    }
    b.define_choice(i, "at", {1, 2}, 1);
    b.define_choice(i, "unroll", {0, 16, 64, 512}, 2);
  }

  void apply(Generator& g, int i) const override {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    const int epilogue = g.plans[size_t(i)].epilogue;
    schedule::Stage compute;
    int owner;
    if (epilogue >= 0) {
      owner = epilogue;
      compute = g.place[size_t(i)].top;
    } else {
      owner = i;
      compute = add_cache_write(g, i);
      tile_epilogue(g, i, i, g.place[size_t(i)].top);
    }
    // SSRSRS
    SpatialTiles tiles = tile_spatial(g, i, compute);
    std::vector<te::IterVar> unit = tiles.unit;
    const std::vector<std::vector<te::IterVar>>& s = tiles.level;
    const int64_t vector = tiles.vector;
    std::vector<std::vector<te::IterVar>> r(2);
    for (size_t d = 0; d < st.reduce.size(); ++d) {
      if (st.reduce[d] <= 1) {
        unit.push_back(compute.reduce_axis(d));
        continue;
      }
      auto parts = g.split_by(compute, compute.reduce_axis(d), g.split(i, fmt::format("R{}", d)));
      r[0].push_back(parts[0]);
      r[1].push_back(parts[1]);
    }
    std::vector<te::IterVar> order = unit;
    for (const std::vector<te::IterVar>* l : {&s[0], &s[1], &std::as_const(r)[0], &s[2], &std::as_const(r)[1], &s[3]})
      order.insert(order.end(), l->begin(), l->end());
    compute.reorder(order);
    if (!s[3].empty() && vector > 1) {
      g.check_vector(vector, st.op->output_dtype(0));
      compute.vectorize(s[3].back());
    }
    if (const int64_t steps = g.choice(i, "unroll"); steps > 0)
      compute.pragma(order[0], lowering::attr::kAutoUnrollMaxStep, te::Expr(steps));
    // Producers may be computed at any loop above the innermost spatial level.
    std::vector<te::IterVar> inner(order.begin(), order.end() - std::ptrdiff_t(s[3].size()));
    const Generator::Placement& host = g.place[size_t(owner)];
    const te::IterVar at = host.tile_levels.at(size_t(g.choice(i, "at") - 1));
    if (epilogue >= 0) {
      g.set_loops(i, compute, inner);
      g.compute_at(i, {owner, host.top, at});
    } else {
      compute.compute_at(host.top, at);
      g.set_loops(i, host.top, host.top_loops, compute, inner, at);
    }
  }
};

}  // namespace

SpatialTiles tile_spatial(Generator& g, int anchor, schedule::Stage st) {
  const StageInfo& a = g.dag.stages()[size_t(anchor)];
  SpatialTiles t;
  t.level.resize(4);
  for (size_t d = 0; d < a.spatial.size(); ++d) {
    if (a.spatial[d] <= 1) {
      t.unit.push_back(st.axis(d));
      continue;
    }
    const std::vector<int64_t>& f = g.split(anchor, fmt::format("S{}", d));
    std::vector<te::IterVar> parts = g.split_by(st, st.axis(d), f);
    for (size_t l = 0; l < 4; ++l) t.level[l].push_back(parts[l]);
    const int64_t tile = f[1] * f[2] * f[3];
    t.outer_iterations *= (a.spatial[d] + tile - 1) / tile;
    t.vector = f[3];
  }
  return t;
}

const SketchRule& multi_level_tiling_rule() {
  static const MultiLevelTiling rule;
  return rule;
}

}  // namespace loom::tuner::autosched
