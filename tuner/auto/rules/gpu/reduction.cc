// GPU rule reduction: a reduction without data reuse (softmax's max and sum, layer_norm's
// moments, row and column sums, pooling). At the root its "mode" knob chooses
//   thread_per_output  the spatial axes fused and split over blocks of "threads" threads, each
//                      thread reducing one output serially (much spatial parallelism);
//   cross_thread       one block per output (the spatial axes fused and bound to blockIdx.x),
//                      the reduce axes fused and split over the block's "threads" threads, which
//                      combine their partial results (a cross-thread reduction, lowered by
//                      schedule_ops): for little spatial parallelism and long reductions.
// A reduction whose only consumer is an injective stage keeping its leading axes (softmax's
// and layer_norm's output, through other such reductions) may instead be computed in that
// stage's blocks ("loc" = 1) when that stage runs one block per row (gpu/injective.cc): a
// cross-thread reduction with its threads, so the whole operator is one kernel.
#include "../../sketch.h"

namespace loom::tuner::autosched {
namespace {

constexpr int64_t kThreadPerOutput = 0, kCrossThread = 1;

class GpuReduction : public SketchRule {
 public:
  const char* name() const override { return "reduction"; }

  bool match(SketchBuilder& b, int i) const override {
    if (!b.dag.stages()[size_t(i)].reduction) return false;
    b.plans[size_t(i)].role = Role::kReduction;
    return true;
  }

  void define(SketchBuilder& b, int i) const override {
    const StageInfo& st = b.dag.stages()[size_t(i)];
    const int host = gpu_reduction_host(b, i);
    b.plans[size_t(i)].host = host;
    if (host >= 0) b.define_choice(i, "loc", {0, 1}, 1);
    std::vector<int64_t> modes;
    if (!st.spatial.empty()) modes.push_back(kThreadPerOutput);
    if (st.reduce_size >= 2 || st.spatial.empty()) modes.push_back(kCrossThread);
    const bool cross = st.reduce_size >= 64 && modes.back() == kCrossThread;
    b.define_choice(i, "mode", modes, cross ? modes.size() - 1 : 0);
    std::vector<int64_t> threads = gpu_thread_values(std::max(st.spatial_size, st.reduce_size));
    b.define_choice(i, "threads", threads, std::min<size_t>(threads.size() - 1, cross ? 2 : 3));
  }

  void apply(Generator& g, int i) const override {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    schedule::Stage s = g.place[size_t(i)].top;
    std::vector<te::IterVar> spatial, reduce;
    for (size_t d = 0; d < st.spatial.size(); ++d) spatial.push_back(s.axis(d));
    for (size_t d = 0; d < st.reduce.size(); ++d) reduce.push_back(s.reduce_axis(d));
    auto fused = [&](const std::vector<te::IterVar>& axes) { return axes.size() > 1 ? s.fuse(axes) : axes[0]; };
    const int host = g.plans[size_t(i)].host;
    if (host >= 0 && g.choice(i, "loc") == 1) {
      te::IterVar block;
      int64_t threads = 0;
      // Reductions reading this one must be in the block too (they are scheduled already).
      bool consumers_in_block = true;
      std::vector<int> todo = g.dag.stages()[size_t(i)].consumers;
      while (!todo.empty()) {
        const int c = todo.back();
        todo.pop_back();
        if (g.place[size_t(c)].inlined) {
          for (int cc : g.dag.stages()[size_t(c)].consumers) todo.push_back(cc);
        } else if (g.plans[size_t(c)].role == Role::kReduction && g.place[size_t(c)].host != host) {
          consumers_in_block = false;
        }
      }
      if (consumers_in_block && gpu_rows(g, host, &block, &threads)) {
        s.compute_at(g.place[size_t(host)].top, block);
        g.place[size_t(i)].host = host;
        auto [ko, ki] = s.split(fused(reduce), te::Expr(threads));
        (void)ko;
        s.bind(ki, te::thread_axis("threadIdx.x"));
        return;
      }
      g.normalize(i, "loc", 0);  // the host runs flat, or a reduction reading this one is at the root
    }
    const int64_t threads = g.choice(i, "threads");
    if (g.choice(i, "mode") == kThreadPerOutput) {
      auto [bx, tx] = s.split(fused(spatial), te::Expr(threads));
      s.bind(bx, te::thread_axis("blockIdx.x"));
      s.bind(tx, te::thread_axis("threadIdx.x"));
      return;
    }
    if (!spatial.empty()) s.bind(fused(spatial), te::thread_axis("blockIdx.x"));
    auto [ko, ki] = s.split(fused(reduce), te::Expr(threads));
    (void)ko;
    s.bind(ki, te::thread_axis("threadIdx.x"));
  }
};

}  // namespace

const SketchRule& gpu_reduction_rule() {
  static const GpuReduction rule;
  return rule;
}

int gpu_reduction_host(const SketchBuilder& b, int i) {
  const StageInfo& st = b.dag.stages()[size_t(i)];
  if (st.output || !st.reduction || st.spatial.empty()) return -1;
  int host = -1;
  for (int c : b.effective_consumers(i)) {
    const Role r = b.plans[size_t(c)].role;
    int h = -1;
    if (r == Role::kInjective) h = c;
    else if (r == Role::kReduction) h = gpu_reduction_host(b, c);
    if (h < 0 || (host >= 0 && h != host)) return -1;
    host = h;
  }
  if (host < 0) return -1;
  const std::vector<int64_t>& hs = b.dag.stages()[size_t(host)].spatial;
  if (hs.size() <= st.spatial.size() || !std::equal(st.spatial.begin(), st.spatial.end(), hs.begin())) return -1;
  return host;
}

}  // namespace loom::tuner::autosched
