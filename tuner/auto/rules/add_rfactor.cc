// Rule add_rfactor: a reduction whose reduce axes, fused into one (Ansor's
// FuseAllReductionIterators), are split by "rf" and factored out (Ansor's RuleAddRfactor).
// rf_inner: the inner part becomes a spatial axis of a partial-result stage, innermost and
// vectorized, so the reduction accumulates whole vectors (a row sum, the sums of softmax and
// layer_norm along the last axis, a 7x7 global pool); the stage then sums the lanes.
// rf_outer: the outer part becomes the partial-result stage's spatial axis, fused with the
// others into one parallel loop, for reductions with little spatial parallelism (a sum of a
// whole tensor, global pooling of one image); the stage then sums the partial results.
#include "../sketch.h"

namespace loom::tuner::autosched {

void apply_rfactor(Generator& g, int i, ReductionMode mode, const std::optional<Generator::Location>& loc) {
  const StageInfo& st = g.dag.stages()[size_t(i)];
  schedule::Stage red = g.place[size_t(i)].top;
  const size_t n = st.spatial.size();
  const std::vector<int64_t>& f = g.split(i, "rf");
  std::vector<te::IterVar> reduce;
  for (size_t d = 0; d < st.reduce.size(); ++d) reduce.push_back(red.reduce_axis(d));
  te::IterVar k = reduce.size() > 1 ? red.fuse(reduce) : reduce[0];
  auto [ko, ki] = red.split(k, te::Expr(f[1]));
  const int64_t inner = st.reduce_size;
  if (mode == ReductionMode::kRfInner) {
    te::Tensor part = g.s.rfactor(g.tensor(i), ki, int(n));
    schedule::Stage rf = g.s[part];
    std::vector<te::IterVar> order, body;
    for (size_t d = 0; d < n; ++d) order.push_back(rf.axis(d));
    for (const te::IterVar& iv : rf.leaf_iter_vars())
      if (iv->type == te::IterVarType::kCommReduce) order.push_back(iv);
    body = order;
    order.push_back(rf.axis(n));
    rf.reorder(order);
    if (f[1] > 1) {
      g.check_vector(f[1], st.op->output_dtype(0));
      rf.vectorize(rf.axis(n));
    }
    std::vector<te::IterVar> spatial;
    for (size_t d = 0; d < n; ++d) spatial.push_back(red.axis(d));
    std::vector<te::IterVar> loops = spatial;
    if (!loc && !spatial.empty()) loops = {g.parallelize(red, spatial, st.spatial_size * st.reduce_size, st.spatial_size)};
    te::IterVar at = loops.empty() ? te::IterVar() : loops.back();
    if (at.defined()) rf.compute_at(red, at);
    g.set_loops(i, red, loops, rf, body, at);
  } else {
    te::Tensor part = g.s.rfactor(g.tensor(i), ko, 0);
    schedule::Stage rf = g.s[part];
    std::vector<te::IterVar> rf_spatial;
    for (size_t d = 0; d <= n; ++d) rf_spatial.push_back(rf.axis(d));
    const int64_t parts = (inner + f[1] - 1) / f[1];
    te::IterVar fused = g.parallelize(rf, rf_spatial, st.spatial_size * st.reduce_size, parts * st.spatial_size);
    std::vector<te::IterVar> spatial;
    for (size_t d = 0; d < n; ++d) spatial.push_back(red.axis(d));
    std::vector<te::IterVar> loops = spatial;
    if (!loc && !spatial.empty()) loops = {g.parallelize(red, spatial, st.spatial_size * parts, st.spatial_size)};
    g.set_loops(i, red, loops, rf, {fused});
  }
  if (loc) g.compute_at(i, *loc);
}

}  // namespace loom::tuner::autosched
