// GPU rule multi_level_tiling: a reduction with data reuse (matmul, convolutions) is tiled
// "SSSRRSRS" as Ansor does on GPUs. Each spatial axis is split five ways by its S<d> knob,
// [-1, vthread, thread, inner1, inner2]: the block parts fused and bound to blockIdx.x, each
// vthread part bound to a vthread, the thread parts fused and bound to threadIdx.x. The stage
// accumulates in registers ("local"): through cache_write, or, when it has an elementwise
// consumer of its shape (fuse_consumer's test), computed in that consumer's threads, which
// take the tiles in its place. Inside a thread the accumulator's loops are R0 R1 S3 R2 S4
// (each reduce axis split three ways by R<d>), and every input is fetched into shared memory
// at the last R0 loop (cache_read "shared"): the fetch's loops fused, split by the "vec"
// knob into a vectorized inner loop and over the block's threads (cooperative fetch). An
// auto_unroll_max_step pragma ("unroll") unrolls the inner nest. Configs with more than 1024
// threads or more accumulators per thread than the registers hold are rejected here; the
// shared memory a config needs is checked when the auto space lowers it (verify_gpu).
#include <fmt/format.h>

#include "../../sketch.h"
#include "loom/lower/passes.h"
#include "loom/lower/stmt.h"

namespace loom::tuner::autosched {
namespace {

/// [-1, vthread, thread, inner1, inner2] with up to 4 vthreads, 64 threads and 4 x 4 inner
/// points, their product at most the extent (a tile need not divide it).
std::vector<std::vector<int64_t>> gpu_tile_values(int64_t extent) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t v : {1, 2, 4})
    for (int64_t t = 1; t <= 64; t *= 2)
      for (int64_t i1 : {1, 2, 4})
        for (int64_t i2 : {1, 2, 4})
          if (v * t * i1 * i2 <= extent) out.push_back({-1, v, t, i1, i2});
  return out;
}

/// [-1, r1, r2] with r1, r2 in 1, 2, 4, 8, their product at most the extent.
std::vector<std::vector<int64_t>> gpu_reduce_values(int64_t extent) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r1 = 1; r1 <= 8; r1 *= 2)
    for (int64_t r2 = 1; r2 <= 8; r2 *= 2)
      if (r1 * r2 <= extent) out.push_back({-1, r1, r2});
  return out;
}

/// The epilogue of a GPU tiled stage: the tiled stage's rule schedules it.
class GpuEpilogue : public SketchRule {
 public:
  const char* name() const override { return "fuse_consumer"; }
  bool match(SketchBuilder&, int) const override { return false; }
  void define(SketchBuilder&, int) const override {}
  void apply(Generator&, int) const override {}
};
const GpuEpilogue epilogue_rule;

class GpuMultiLevelTiling : public SketchRule {
 public:
  const char* name() const override { return "multi_level_tiling"; }

  bool match(SketchBuilder& b, int i) const override { return claim_tiled_stage(b, i, epilogue_rule); }

  void define(SketchBuilder& b, int i) const override {
    const StageInfo& st = b.dag.stages()[size_t(i)];
    std::vector<size_t> split;
    for (size_t d = 0; d < st.spatial.size(); ++d)
      if (st.spatial[d] > 1) split.push_back(d);
    for (size_t k = 0; k < split.size(); ++k) {
      const size_t d = split[k];
      auto values = gpu_tile_values(st.spatial[d]);
      // 16 x 8 threads over the last two axes, 2 x 2 points each.
      const std::vector<int64_t> want = k + 1 == split.size()   ? std::vector<int64_t>{1, 16, 1, 2}
                                        : k + 2 == split.size() ? std::vector<int64_t>{1, 8, 2, 1}
                                                                : std::vector<int64_t>{1, 1, 1, 1};
      const size_t pref = closest_value(values, want);
      b.define_split(i, fmt::format("S{}", d), st.spatial[d], std::move(values), pref);
    }
    bool first = true;
    for (size_t d = 0; d < st.reduce.size(); ++d) {
      if (st.reduce[d] <= 1) continue;
      auto values = gpu_reduce_values(st.reduce[d]);
      const size_t pref = closest_value(values, first ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{1, 1});
      b.define_split(i, fmt::format("R{}", d), st.reduce[d], std::move(values), pref);
      first = false;
    }
    b.define_choice(i, "vec", {1, 2, 4}, 0);
    b.define_choice(i, "unroll", {0, 16, 64, 512}, 2);
  }

  void apply(Generator& g, int i) const override {
    const StageInfo& st = g.dag.stages()[size_t(i)];
    const int epilogue = g.plans[size_t(i)].epilogue;
    schedule::Stage out, compute;
    if (epilogue >= 0) {
      out = g.place[size_t(epilogue)].top;
      compute = g.place[size_t(i)].top;
    } else {
      out = g.place[size_t(i)].top;
      compute = add_cache_write(g, i);
    }
    // Every input of the accumulator is fetched into shared memory (when it has reduce loops
    // to fetch at).
    bool reduce_split = false;
    for (int64_t r : st.reduce) reduce_split |= r > 1;
    std::vector<te::Tensor> shared;
    if (reduce_split) {
      std::vector<te::Tensor> inputs;
      for (const te::Tensor& t : compute->op->input_tensors())
        if (std::find(inputs.begin(), inputs.end(), t) == inputs.end()) inputs.push_back(t);
      for (const te::Tensor& t : inputs)
        shared.push_back(g.s.cache_read(t, "shared", std::vector<te::Operation>{compute->op}));
    }

    // The block, vthread and thread levels, on the stage that stores the result.
    std::vector<te::IterVar> unit, block, vthread, thread, inner1, inner2;
    int64_t threads = 1, accumulators = 1;
    std::vector<std::vector<int64_t>> tiles(st.spatial.size());
    for (size_t d = 0; d < st.spatial.size(); ++d) {
      if (st.spatial[d] <= 1) {
        unit.push_back(out.axis(d));
        continue;
      }
      tiles[d] = g.split(i, fmt::format("S{}", d));
      std::vector<te::IterVar> parts = g.split_by(out, out.axis(d), tiles[d]);
      block.push_back(parts[0]);
      vthread.push_back(parts[1]);
      thread.push_back(parts[2]);
      inner1.push_back(parts[3]);
      inner2.push_back(parts[4]);
      threads *= tiles[d][2];
      accumulators *= tiles[d][1] * tiles[d][3] * tiles[d][4];
    }
    if (threads > kGpuMaxThreads)
      throw InstantiationError(fmt::format("{} threads per block (at most {})", threads, kGpuMaxThreads));
    const int64_t local_bytes = accumulators * st.op->output_dtype(0).bytes();
    if (local_bytes > lowering::GpuLimits{}.max_local_bytes)
      throw InstantiationError(fmt::format("{} accumulators per thread ({} bytes, at most {} in registers)",
                                           accumulators, local_bytes, lowering::GpuLimits{}.max_local_bytes));
    std::vector<te::IterVar> order = unit;
    for (const auto* l : {&block, &vthread, &thread, &inner1, &inner2}) order.insert(order.end(), l->begin(), l->end());
    out.reorder(order);
    std::vector<te::IterVar> outer = unit;
    outer.insert(outer.end(), block.begin(), block.end());
    out.bind(outer.size() > 1 ? out.fuse(outer) : outer[0], te::thread_axis("blockIdx.x"));
    for (const te::IterVar& v : vthread) out.bind(v, te::thread_axis("vthread"));
    const te::IterVar tx = thread.size() > 1 ? out.fuse(thread) : thread[0];
    out.bind(tx, te::thread_axis("threadIdx.x"));

    // The accumulator in each thread: R0 R1 S3 R2 S4.
    compute.compute_at(out, tx);
    std::vector<te::IterVar> rest, s3, s4, r0, r1, r2;
    for (size_t d = 0; d < st.spatial.size(); ++d) {
      if (st.spatial[d] <= 1) {
        rest.push_back(compute.axis(d));
        continue;
      }
      std::vector<te::IterVar> parts = g.split_by(compute, compute.axis(d), {-1, tiles[d][3], tiles[d][4]});
      rest.push_back(parts[0]);
      s3.push_back(parts[1]);
      s4.push_back(parts[2]);
    }
    for (size_t d = 0; d < st.reduce.size(); ++d) {
      if (st.reduce[d] <= 1) {
        rest.push_back(compute.reduce_axis(d));
        continue;
      }
      std::vector<te::IterVar> parts =
          g.split_by(compute, compute.reduce_axis(d), g.split(i, fmt::format("R{}", d)));
      r0.push_back(parts[0]);
      r1.push_back(parts[1]);
      r2.push_back(parts[2]);
    }
    std::vector<te::IterVar> acc_order = rest;
    for (const auto* l : {&r0, &r1, &s3, &r2, &s4}) acc_order.insert(acc_order.end(), l->begin(), l->end());
    compute.reorder(acc_order);
    if (const int64_t steps = g.choice(i, "unroll"); steps > 0)
      compute.pragma(acc_order[0], lowering::attr::kAutoUnrollMaxStep, te::Expr(steps));

    // Cooperative fetch of each input at the last R0 loop.
    const int64_t vec = shared.empty() ? 1 : g.choice(i, "vec");
    for (const te::Tensor& t : shared) {
      schedule::Stage fetch = g.s[t];
      fetch.compute_at(compute, r0.back());
      std::vector<te::IterVar> axes;
      for (size_t d = 0; d < t.shape().size(); ++d) axes.push_back(fetch.axis(d));
      te::IterVar fused = axes.size() > 1 ? fetch.fuse(axes) : axes[0];
      if (vec > 1) {
        check_gpu_vector(vec, t.dtype());
        auto [f, v] = fetch.split(fused, te::Expr(vec));
        fetch.vectorize(v);
        fused = f;
      }
      auto [rest_loop, ftx] = fetch.split(fused, te::Expr(threads));
      (void)rest_loop;
      fetch.bind(ftx, te::thread_axis("threadIdx.x"));
    }
  }
};

}  // namespace

const SketchRule& gpu_multi_level_tiling_rule() {
  static const GpuMultiLevelTiling rule;
  return rule;
}

}  // namespace loom::tuner::autosched
