// Rule multi_level_tiling: a reduction with data reuse (matmul, convolutions: some read misses
// a spatial axis) is tiled "SSRSRS" as Ansor does on CPUs: each spatial axis split into four
// levels and each reduce axis into two, ordered S0 S1 R0 S2 R1 S3; the innermost spatial level
// is vectorized, and an auto_unroll_max_step pragma (0, 16, 64 or 512 steps) on the micro-kernel
// (the R1 S3 loops: the register tile and the reduction steps around it) unrolls it. The stage
// is computed in the tiles of its fused consumer (fuse_consumer.cc) or of its cache_write copy
// (add_cache_write.cc), at the end of their first or second level.
// Knobs: S<d> per spatial axis [-1, f1, f2, f3], R<d> per reduce axis [-1, f], at, unroll.
//
// The rules' default config is a register-blocked micro-kernel sized from the target's vector
// registers, as a person writes a GEMM template: the accumulators of S3 (two vectors along the
// vectorized axis times `rows` along the widest other spatial axis) stay in registers while
// R1 steps through the reduction; S1 blocks such tiles along the rows axis only, so that an
// outer tile is one register tile wide and its packed panel exactly that wide (contiguous);
// the cache is computed at the end of S1. S3 of an axis other than the vectorized one is at
// most kMaxRegisterRows: wider register tiles only spill.
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
    int last = -1, rows = -1;
    for (size_t d = 0; d < st.spatial.size(); ++d)
      if (st.spatial[d] > 1) last = int(d);
    for (size_t d = 0; d < st.spatial.size(); ++d)
      if (st.spatial[d] > 1 && int(d) != last && (rows < 0 || st.spatial[d] > st.spatial[size_t(rows)])) rows = int(d);
    // Vector registers of the target: 32 with AVX-512, else 16. Two of them hold a reduction
    // step's operands; the rest the accumulators (two vectors wide).
    const int64_t registers = b.target.vector_bits() >= 512 ? 32 : 16;
    const int64_t tile_rows = std::min<int64_t>(kMaxRegisterRows, (registers - 2) / 2 >= 8 ? 8 : 4);
    for (size_t d = 0; d < st.spatial.size(); ++d) {
      if (st.spatial[d] <= 1) continue;
      const bool vec = int(d) == last;
      auto values = tile_values(st.spatial[d], 4, vec ? 0 : kMaxRegisterRows);
      std::vector<int64_t> want{1, 1, 1};
      if (vec) want = {1, 1, std::min<int64_t>(2 * b.lanes, st.spatial[d])};
      else if (int(d) == rows) want = {std::min<int64_t>(32, std::max<int64_t>(1, st.spatial[d] / tile_rows / 4)), 1,
                                       std::min<int64_t>(tile_rows, st.spatial[d])};
      const size_t pref = closest_value(values, want);
      b.define_split(i, fmt::format("S{}", d), st.spatial[d], std::move(values), pref);
    }
    int last_reduce = -1;
    for (size_t d = 0; d < st.reduce.size(); ++d)
      if (st.reduce[d] > 1) last_reduce = int(d);
    for (size_t d = 0; d < st.reduce.size(); ++d) {
      if (st.reduce[d] <= 1) continue;
      auto values = tile_values(st.reduce[d], 2);
      const int64_t want = int(d) == last_reduce ? std::min<int64_t>(4, st.reduce[d]) : 1;
      const size_t pref = closest_value(values, {want});
      b.define_split(i, fmt::format("R{}", d), st.reduce[d], std::move(values), pref);
    }
    b.define_choice(i, "at", {1, 2}, 1);
    b.define_choice(i, "unroll", {0, 16, 64, 512}, 2);
    for (const auto& [p, reads] : st.reads)
      if (reads.panel && b.dag.stages()[size_t(p)].placeholder) b.define_choice(i, pack_knob(b.dag, p), {0, 1}, 1);
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
    // Only the micro-kernel unrolls: unrolling the outer tiles too makes code many times
    // larger (slower to lower and compile) for no speed.
    const std::vector<te::IterVar>& micro = !r[1].empty() ? r[1] : s[3];
    if (const int64_t steps = g.choice(i, "unroll"); steps > 0 && !micro.empty())
      compute.pragma(micro[0], lowering::attr::kAutoUnrollMaxStep, te::Expr(int(steps)));
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
    pack_panels(g, i, compute, host.top, host.tile_levels.at(0), vector);
  }

 private:
  static std::string pack_knob(const ComputeDag& dag, int p) { return "pack_" + dag.stages()[size_t(p)].label; }

  /// Packing (the "pack_<input>" knobs): an input read as a panel (ProducerReads::panel: matmul's
  /// B[k, j]) is copied, in each iteration of the parallel outer tile loop, into a buffer of
  /// just the panel that iteration reads (all of k × the tile's columns, contiguous), which the
  /// micro-kernel then reads at a small fixed stride instead of the input's row stride. The copy
  /// is vectorized along the columns by the micro-kernel's vector length.
  static void pack_panels(Generator& g, int i, const schedule::Stage& compute, const schedule::Stage& host,
                          const te::IterVar& outer, int64_t vector) {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    for (const auto& [p, reads] : st.reads) {
      const std::string what = pack_knob(g.dag, p);
      if (!g.plans[size_t(i)].knobs.count(what) || g.choice(i, what) == 0) continue;
      if (!outer.defined()) {  // no outer tile loop: nothing to pack per iteration
        g.normalize(i, what, 0);
        continue;
      }
      const te::Tensor packed = g.s.cache_read(g.tensor(p), "global", std::vector<te::Operation>{compute->op});
      schedule::Stage ps = g.s[packed];
      ps.compute_at(host, outer);
      if (vector > 1) {
        auto [o, v] = ps.split(ps.axis(packed.ndim() - 1), te::Expr(vector));
        ps.vectorize(v);
      }
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
