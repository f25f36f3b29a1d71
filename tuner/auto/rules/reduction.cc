// Rule reduction: a reduction without data reuse (row sums, softmax's max and sum, layer_norm's
// moments, pooling) chooses by its "mode" knob how it runs:
//   plain      reduce loops inside the spatial loops (those fused and parallel at the root);
//   vec_kept   accumulators in a cache, the innermost spatial axis split by "vec" and
//              vectorized, the reduce loops outside it (pooling, sums over an outer axis);
//   rf_inner / rf_outer   rfactor of the fused reduce axes (add_rfactor.cc).
// A reduction that is not an output is computed at the root or at a loop of its consumers
// ("loc", compute_location.cc): softmax's sums in the row loop of the normalization.
#include <fmt/format.h>

#include "../sketch.h"

namespace loom::tuner::autosched {
namespace {

/// The modes that apply to a stage, in the order of its "mode" knob.
std::vector<int64_t> modes_of(const StageInfo& st) {
  std::vector<int64_t> m{int64_t(ReductionMode::kPlain)};
  const int vec = vector_axis(st);
  if (st.spatial_innermost_contiguous && vec >= 0) m.push_back(int64_t(ReductionMode::kVecKept));
  if (st.reduce_size >= 2) m.push_back(int64_t(ReductionMode::kRfInner));
  if (st.spatial_size <= 64 && st.reduce_size >= 2048) m.push_back(int64_t(ReductionMode::kRfOuter));
  return m;
}

class Reduction : public SketchRule {
 public:
  const char* name() const override { return "reduction"; }

  bool match(SketchBuilder& b, int i) const override {
    if (!b.dag.stages()[size_t(i)].reduction) return false;
    b.plans[size_t(i)].role = Role::kReduction;
    return true;
  }

  void define(SketchBuilder& b, int i) const override {
    const StageInfo& st = b.dag.stages()[size_t(i)];
    const std::vector<int64_t> modes = modes_of(st);
    auto has = [&](ReductionMode m) { return std::find(modes.begin(), modes.end(), int64_t(m)) != modes.end(); };
    // The pattern schedule's choice first: partial vectors along a contiguous reduction, else
    // vectors across a contiguous kept axis.
    const int64_t inner = st.reduce_size;  // rfactor splits the fused reduce axes
    ReductionMode pref = ReductionMode::kPlain;
    if (st.reduce_innermost_contiguous && inner >= 4 && has(ReductionMode::kRfInner)) pref = ReductionMode::kRfInner;
    else if (has(ReductionMode::kVecKept)) pref = ReductionMode::kVecKept;
    b.define_choice(i, "mode", modes, size_t(std::find(modes.begin(), modes.end(), int64_t(pref)) - modes.begin()));
    const int vec = vector_axis(st);
    if (has(ReductionMode::kVecKept)) {
      auto values = factor_values(st.spatial[size_t(vec)], 64);
      const size_t p = closest_value(values, {std::min<int64_t>(b.lanes, st.spatial[size_t(vec)])});
      b.define_split(i, "vec", st.spatial[size_t(vec)], std::move(values), p);
    }
    if (has(ReductionMode::kRfInner) || has(ReductionMode::kRfOuter)) {
      auto values = factor_values(inner, 64);
      const size_t p = closest_value(values, {std::min<int64_t>(b.lanes, inner)});
      b.define_split(i, "rf", inner, std::move(values), p);
    }
    if (!st.output) define_location(b, i, 1);
  }

  void apply(Generator& g, int i) const override {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    std::optional<Generator::Location> loc;
    if (!st.output) {
      int first = 0;
      loc = choose_location(g, i, 1, 0, &first);
    }
    const auto mode = ReductionMode(g.choice(i, "mode"));
    switch (mode) {
      case ReductionMode::kPlain: plain(g, i, loc); break;
      case ReductionMode::kVecKept: vec_kept(g, i, loc); break;
      case ReductionMode::kRfInner:
      case ReductionMode::kRfOuter: apply_rfactor(g, i, mode, loc); return;
    }
    if (loc) g.compute_at(i, *loc);
  }

 private:
  static void plain(Generator& g, int i, const std::optional<Generator::Location>& loc) {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    schedule::Stage s = g.place[size_t(i)].top;
    std::vector<te::IterVar> spatial, reduce;
    for (size_t d = 0; d < st.spatial.size(); ++d) spatial.push_back(s.axis(d));
    for (size_t d = 0; d < st.reduce.size(); ++d) reduce.push_back(s.reduce_axis(d));
    std::vector<te::IterVar> loops = spatial;
    if (!loc && !spatial.empty()) loops = {g.parallelize(s, spatial, st.spatial_size * st.reduce_size, st.spatial_size)};
    std::vector<te::IterVar> body = loops;
    body.insert(body.end(), reduce.begin(), reduce.end());
    g.set_loops(i, s, loops, s, body);
  }

  static void vec_kept(Generator& g, int i, const std::optional<Generator::Location>& loc) {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    const int vec = vector_axis(st);
    te::Tensor cache = g.s.cache_write(g.tensor(i), "local");
    schedule::Stage copy = g.place[size_t(i)].top, acc = g.s[cache];
    const std::vector<int64_t>& f = g.split(i, "vec");
    auto parts = g.split_by(copy, copy.axis(size_t(vec)), f);
    std::vector<te::IterVar> outer;
    int64_t iterations = 1;
    for (size_t d = 0; d < st.spatial.size(); ++d) {
      if (int(d) == vec) continue;
      outer.push_back(copy.axis(d));
      iterations *= st.spatial[d];
    }
    outer.push_back(parts[0]);
    iterations *= (st.spatial[size_t(vec)] + f[1] - 1) / f[1];
    std::vector<te::IterVar> order = outer;
    order.push_back(parts[1]);
    copy.reorder(order);
    if (f[1] > 1) {
      g.check_vector(f[1], st.op->output_dtype(0));
      copy.vectorize(parts[1]);
    }
    std::vector<te::IterVar> loops = outer;
    if (!loc) loops = {g.parallelize(copy, outer, st.spatial_size * st.reduce_size, iterations)};
    const te::IterVar at = loops.back();
    acc.compute_at(copy, at);
    std::vector<te::IterVar> acc_order;
    for (size_t d = 0; d < st.spatial.size(); ++d)
      if (int(d) != vec) acc_order.push_back(acc.axis(d));
    for (size_t d = 0; d < st.reduce.size(); ++d) acc_order.push_back(acc.reduce_axis(d));
    std::vector<te::IterVar> acc_loops = acc_order;
    acc_order.push_back(acc.axis(size_t(vec)));
    acc.reorder(acc_order);
    if (f[1] > 1) acc.vectorize(acc.axis(size_t(vec)));
    g.set_loops(i, copy, loops, acc, acc_loops, at);
  }
};

}  // namespace

const SketchRule& reduction_rule() {
  static const Reduction rule;
  return rule;
}

}  // namespace loom::tuner::autosched
