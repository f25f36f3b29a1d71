// Rule compute_location: an injective stage that is neither an output nor always inlined (one
// computing a transcendental that several stages read, a padding that a tiled stage reads) is
// inlined, computed at the root (then scheduled as injective.cc does) or computed at a loop of
// its consumers (Ansor's InitChangeComputeLocation): its "loc" knob picks one. Reductions use
// the same knob for where they are computed.
#include "../sketch.h"

namespace loom::tuner::autosched {
namespace {

class ComputeLocation : public SketchRule {
 public:
  const char* name() const override { return "compute_location"; }

  bool match(SketchBuilder& b, int i) const override {
    const StageInfo& st = b.dag.stages()[size_t(i)];
    if (st.output || st.reduction) return false;
    b.plans[size_t(i)].role = Role::kPlaced;
    return true;
  }

  void define(SketchBuilder& b, int i) const override {
    define_location(b, i, first_values(b.dag.stages()[size_t(i)]));
    define_injective(b, i);
  }

  void apply(Generator& g, int i) const override {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    const int first = first_values(st);
    const int root = first - 1;  // values: [inline,] root, locations…
    int value = 0;
    std::optional<Generator::Location> loc = choose_location(g, i, first, root, &value);
    if (!loc && value != root) {
      g.place[size_t(i)].top.compute_inline();
      g.place[size_t(i)].inlined = true;
      return;
    }
    if (loc) g.compute_at(i, *loc);
    schedule_injective(g, i, g.place[size_t(i)].top, !loc);
  }

 private:
  /// A single-output stage may also be inlined.
  static int first_values(const StageInfo& st) { return st.op->num_outputs() == 1 ? 2 : 1; }
};

}  // namespace

const SketchRule& compute_location_rule() {
  static const ComputeLocation rule;
  return rule;
}

void define_location(SketchBuilder& b, int i, int first) {
  std::vector<int64_t> values;
  for (int v = 0; v < first + kMaxLocations; ++v) values.push_back(v);
  b.define_choice(i, "loc", std::move(values), 0);
}

std::optional<Generator::Location> choose_location(Generator& g, int i, int first, int root_value,
                                                   int* first_value) {
  const int64_t v = g.choice(i, "loc");
  if (v < first) {
    *first_value = int(v);
    return std::nullopt;
  }
  const std::vector<Generator::Location> locs = g.locations(i);
  if (locs.empty()) {
    g.normalize(i, "loc", root_value);
    *first_value = root_value;
    return std::nullopt;
  }
  size_t k = size_t(v - first);
  if (k >= locs.size()) {
    k = locs.size() - 1;
    g.normalize(i, "loc", first + int64_t(k));
  }
  return locs[k];
}

}  // namespace loom::tuner::autosched
