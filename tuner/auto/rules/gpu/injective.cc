// GPU rule injective: an injective stage at the root (outputs, multi-output stages) runs one
// point per thread: its axes fused and split by the "threads" knob, the outer part bound to
// blockIdx.x and the inner to threadIdx.x. A stage that reductions may be computed in
// (gpu_reduction_host: softmax's and layer_norm's output) also has a "rows" knob: 0 keeps the
// flat form; the number of its leading axes the reductions keep runs one block per row (those
// axes fused and bound to blockIdx.x, the rest fused and split over the block's threads), so
// that the reductions of the row are computed in its block, across its threads.
#include "../../sketch.h"

namespace loom::tuner::autosched {
namespace {

class GpuInjective : public SketchRule {
 public:
  const char* name() const override { return "injective"; }

  bool match(SketchBuilder& b, int i) const override {
    if (b.dag.stages()[size_t(i)].reduction) return false;
    b.plans[size_t(i)].role = Role::kInjective;
    return true;
  }

  void define(SketchBuilder& b, int i) const override {
    const StageInfo& st = b.dag.stages()[size_t(i)];
    const size_t rows = gpu_row_axes(b, i);
    int64_t per_row = st.spatial_size;
    if (rows > 0) {
      per_row = 1;
      for (size_t d = rows; d < st.spatial.size(); ++d) per_row *= st.spatial[d];
      b.define_choice(i, "rows", {0, int64_t(rows)}, 1);
    }
    std::vector<int64_t> values = gpu_thread_values(std::max(per_row, st.spatial_size));
    const size_t pref = std::min<size_t>(values.size() - 1, rows > 0 ? 2 : 3);  // 128 per row, else 256
    b.define_choice(i, "threads", std::move(values), pref);
  }

  void apply(Generator& g, int i) const override {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    schedule::Stage s = g.place[size_t(i)].top;
    LOOM_CHECK(!st.spatial.empty(), "auto-scheduler: stage '{}' has no axes to bind to GPU threads", st.label);
    const int64_t threads = g.choice(i, "threads");
    const size_t rows = g.plans[size_t(i)].knobs.count("rows") ? size_t(g.choice(i, "rows")) : 0;
    std::vector<te::IterVar> axes;
    for (size_t d = 0; d < st.spatial.size(); ++d) axes.push_back(s.axis(d));
    auto fuse = [&](size_t from, size_t to) {
      std::vector<te::IterVar> part(axes.begin() + std::ptrdiff_t(from), axes.begin() + std::ptrdiff_t(to));
      return part.size() > 1 ? s.fuse(part) : part[0];
    };
    if (rows > 0) {
      const te::IterVar block = fuse(0, rows);
      s.bind(block, te::thread_axis("blockIdx.x"));
      auto [o, tx] = s.split(fuse(rows, axes.size()), te::Expr(threads));
      (void)o;
      s.bind(tx, te::thread_axis("threadIdx.x"));
      g.set_loops(i, s, {block});
      return;
    }
    auto [bx, tx] = s.split(fuse(0, axes.size()), te::Expr(threads));
    s.bind(bx, te::thread_axis("blockIdx.x"));
    s.bind(tx, te::thread_axis("threadIdx.x"));
    g.set_loops(i, s, {});
  }
};

}  // namespace

const SketchRule& gpu_injective_rule() {
  static const GpuInjective rule;
  return rule;
}

size_t gpu_row_axes(const SketchBuilder& b, int i) {
  size_t rows = 0;
  for (size_t j = 0; j < b.plans.size(); ++j) {
    if (b.plans[j].role != Role::kReduction || gpu_reduction_host(b, int(j)) != i) continue;
    const size_t n = b.dag.stages()[j].spatial.size();
    if (rows > 0 && n != rows) return 0;
    rows = n;
  }
  return rows;
}

bool gpu_rows(Generator& g, int i, te::IterVar* block, int64_t* threads) {
  if (!g.plans[size_t(i)].knobs.count("rows") || g.choice(i, "rows") == 0) return false;
  *block = g.place[size_t(i)].top_loops.at(0);
  *threads = g.choice(i, "threads");
  return true;
}

std::vector<int64_t> gpu_thread_values(int64_t extent) {
  std::vector<int64_t> out;
  for (int64_t t = 32; t <= kGpuMaxThreads; t *= 2) {
    out.push_back(t);
    if (t >= extent) break;
  }
  return out;
}

void check_gpu_vector(int64_t lanes, DataType t) {
  if (lanes > 1 && lanes * t.bits() > kGpuVectorBits)
    throw InstantiationError(
        fmt::format("a vector of {} x {} is wider than a GPU thread's {} bits", lanes, t.str(), kGpuVectorBits));
}

}  // namespace loom::tuner::autosched
