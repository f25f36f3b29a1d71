// Rule injective: an injective stage at the root (an output; a placed stage computed at the
// root) gets its innermost axis of extent > 1 split and vectorized ("vec": [-1, lanes]), up to
// two other axes tiled ("T<d>": [-1, t], cache blocking for transposes), and the first "par"
// of its outer loops fused into one parallel loop (Ansor's InitParallel and InitVectorization).
// At a loop of a consumer only the vector split applies.
#include <fmt/format.h>

#include "../sketch.h"

namespace loom::tuner::autosched {
namespace {

/// The axes (at most two, innermost first, not the vector axis) with a tile knob.
std::vector<int> tiled_axes(const StageInfo& st, int vec) {
  std::vector<int> out;
  for (int d = int(st.spatial.size()) - 1; d >= 0 && out.size() < 2; --d)
    if (d != vec && st.spatial[size_t(d)] > 1) out.push_back(d);
  return out;
}

class Injective : public SketchRule {
 public:
  const char* name() const override { return "injective"; }

  bool match(SketchBuilder& b, int i) const override {
    if (b.dag.stages()[size_t(i)].reduction) return false;
    b.plans[size_t(i)].role = Role::kInjective;
    return true;
  }
  void define(SketchBuilder& b, int i) const override { define_injective(b, i); }
  void apply(Generator& g, int i) const override { schedule_injective(g, i, g.place[size_t(i)].top, true); }
};

}  // namespace

const SketchRule& injective_rule() {
  static const Injective rule;
  return rule;
}

int vector_axis(const StageInfo& st) {
  for (int d = int(st.spatial.size()) - 1; d >= 0; --d)
    if (st.spatial[size_t(d)] > 1) return d;
  return -1;
}

void define_injective(SketchBuilder& b, int i) {
  const StageInfo& st = b.dag.stages()[size_t(i)];
  const int vec = vector_axis(st);
  if (vec < 0) return;
  auto values = factor_values(st.spatial[size_t(vec)], 64);
  const size_t pref = closest_value(values, {std::min<int64_t>(b.lanes, st.spatial[size_t(vec)])});
  b.define_split(i, "vec", st.spatial[size_t(vec)], std::move(values), pref);
  for (int d : tiled_axes(st, vec))
    b.define_split(i, fmt::format("T{}", d), st.spatial[size_t(d)], factor_values(st.spatial[size_t(d)], 32), 0);
  const size_t n_outer = st.spatial.size();
  std::vector<int64_t> par;
  for (size_t p = 0; p <= n_outer; ++p) par.push_back(int64_t(p));
  b.define_choice(i, "par", std::move(par), n_outer > 1 ? n_outer - 1 : n_outer);
}

void schedule_injective(Generator& g, int i, schedule::Stage st, bool at_root) {
  const StageInfo& info = g.dag.stages()[size_t(i)];
  const int vec = vector_axis(info);
  if (vec < 0) {
    std::vector<te::IterVar> axes;
    for (size_t d = 0; d < info.spatial.size(); ++d) axes.push_back(st.axis(d));
    g.set_loops(i, st, axes);
    return;
  }
  const std::vector<int64_t>& fv = g.split(i, "vec");
  auto vparts = g.split_by(st, st.axis(size_t(vec)), fv);
  std::map<int, std::pair<te::IterVar, te::IterVar>> tiles;
  std::map<int, int64_t> tile_factor;
  if (at_root)
    for (int d : tiled_axes(info, vec)) {
      const std::vector<int64_t>& ft = g.split(i, fmt::format("T{}", d));
      auto parts = g.split_by(st, st.axis(size_t(d)), ft);
      tiles[d] = {parts[0], parts[1]};
      tile_factor[d] = ft[1];
    }
  std::vector<te::IterVar> outer, inner;
  std::vector<int64_t> outer_extent;
  for (size_t d = 0; d < info.spatial.size(); ++d) {
    const int64_t e = info.spatial[d];
    if (int(d) == vec) {
      outer.push_back(vparts[0]);
      outer_extent.push_back((e + fv[1] - 1) / fv[1]);
    } else if (auto t = tiles.find(int(d)); t != tiles.end()) {
      outer.push_back(t->second.first);
      outer_extent.push_back((e + tile_factor[int(d)] - 1) / tile_factor[int(d)]);
      inner.push_back(t->second.second);
    } else {
      outer.push_back(st.axis(d));
      outer_extent.push_back(e);
    }
  }
  std::vector<te::IterVar> order = outer;
  order.insert(order.end(), inner.begin(), inner.end());
  order.push_back(vparts[1]);
  st.reorder(order);
  if (fv[1] > 1) {
    g.check_vector(fv[1], info.op->output_dtype(0));
    st.vectorize(vparts[1]);
  }
  std::vector<te::IterVar> loops;
  if (at_root) {
    const size_t p = size_t(g.choice(i, "par"));
    if (p > 0) {
      int64_t iterations = 1;
      for (size_t k = 0; k < p; ++k) iterations *= outer_extent[k];
      loops.push_back(g.parallelize(st, {outer.begin(), outer.begin() + std::ptrdiff_t(p)},
                                    info.spatial_size * info.reduce_size, iterations));
    }
    loops.insert(loops.end(), outer.begin() + std::ptrdiff_t(p), outer.end());
  } else {
    loops = outer;
  }
  loops.insert(loops.end(), inner.begin(), inner.end());
  g.set_loops(i, st, loops);
}

}  // namespace loom::tuner::autosched
