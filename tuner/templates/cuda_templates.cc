// GPU schedule templates for target kind "cuda" (AutoTVM-style): "conv2d_nchw" and
// "depthwise_conv2d_nchw" on that target (the template registry is keyed by name and target),
// also known by their earlier names "conv2d_nchw_cuda" and "depthwise_conv2d_nchw_cuda", which
// logs carry; cuda_templates() also returns the GEMM templates of cuda_gemm.cc (matmul,
// dense, batch_matmul).
//
// Every output spatial axis is split four ways, [block, vthread, thread, inner], bound to
// blockIdx / vthread / threadIdx; a local accumulator (cache_write "local") is computed at
// the thread's inner tile; its reduction is split by a tile_k-style knob and the inputs are
// fetched into shared memory (cache_read "shared") at the reduction's outer loop, the fetch
// fused, split over the block's threads and bound to them (cooperative fetching). An unroll
// knob unrolls the inner reduction. Each axis's [vthread, thread, inner] parts are at most
// [4, 64, 8]; configs with more than 1024 threads per block, more than 128 accumulators per
// thread or more than 48 KiB of shared memory are rejected as instantiation errors, so that
// every config a template instantiates passes verify_gpu. The default configs use
// 256-thread blocks. A fused epilogue is computed by each thread on its accumulators before
// the store.
#include "cuda_gemm.h"

namespace loom::tuner {
namespace {

constexpr int64_t kMaxVthreads = 4, kMaxThreadsPerAxis = 64, kMaxInner = 8;
/// Accumulators one thread may hold: they must stay in its registers (255 of them).
constexpr int64_t kMaxAccumulators = 128;

using te::IterVar;
using te::Tensor;
using te::Var;

/// The [vthread, thread, inner] parts of a GPU tile over `extent`, their product dividing it:
/// up to 4 vthreads, 64 threads and 8 inner points (the ranges AutoTVM's GPU templates
/// explore). Any factors at all would make almost every config of a large extent useless
/// (tiles of thousands of accumulators per thread).
SplitOptions four_way(int64_t extent) {
  SplitOptions o;
  o.num_outputs = 4;
  o.policy = SplitOptions::kCandidates;
  for (int64_t v = 1; v <= kMaxVthreads; ++v)
    for (int64_t t = 1; t <= kMaxThreadsPerAxis; ++t)
      for (int64_t i = 1; i <= kMaxInner; ++i)
        if (extent % (v * t * i) == 0) o.candidates.push_back({v, t, i});
  return o;
}

/// Shared scheduling: `out` has spatial axes `axes` (outermost first, each tiled by the knob
/// of the same index in `knobs`, at most three: bound to z, y, x); its accumulator `acc`
/// reduces over `acc_reduce` whose first axis is split by knob "tile_k" (the rest stay
/// inside, in order); `shared` are the input stages fetched at the split's outer loop.
void schedule_gpu(ConfigContext& cfg, Schedule& s, schedule::Stage out, const std::vector<IterVar>& axes,
                  const std::vector<std::string>& knobs, schedule::Stage acc, const std::vector<IterVar>& acc_axes,
                  const std::vector<IterVar>& acc_reduce, const std::vector<Tensor>& shared, int64_t shared_elem_bound) {
  static const char* dims[] = {"z", "y", "x"};
  const size_t off = 3 - axes.size();
  std::vector<std::vector<IterVar>> parts;
  int64_t threads = 1, accumulators = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    parts.push_back(cfg.apply_split(knobs[i], out, axes[i]));
    const std::vector<int64_t>& v = cfg.value(knobs[i]);
    threads *= v[2];
    accumulators *= v[1] * v[3];
  }
  std::vector<IterVar> order;
  for (int level = 0; level < 4; ++level)
    for (auto& p : parts) order.push_back(p[level]);
  out.reorder(order);
  for (size_t i = 0; i < axes.size(); ++i) {
    std::string d = dims[off + i];
    out.bind(parts[i][0], te::thread_axis("blockIdx." + d));
    out.bind(parts[i][1], te::thread_axis("vthread"));
    out.bind(parts[i][2], te::thread_axis("threadIdx." + d));
  }
  if (threads > 1024) throw InstantiationError(fmt::format("{} threads per block (at most 1024)", threads));
  if (accumulators > kMaxAccumulators)
    throw InstantiationError(fmt::format("{} accumulators per thread (at most {}, in registers)", accumulators,
                                         kMaxAccumulators));
  if (shared_elem_bound * 4 > 48 * 1024)
    throw InstantiationError(fmt::format("about {} bytes of shared memory (at most 49152)", shared_elem_bound * 4));
  acc.compute_at(out, parts.back()[2]);
  std::vector<IterVar> kparts = cfg.apply_split("tile_k", acc, acc_reduce[0]);
  std::vector<IterVar> acc_order = {kparts[0]};
  for (size_t r = 1; r < acc_reduce.size(); ++r) acc_order.push_back(acc_reduce[r]);
  acc_order.push_back(kparts[1]);
  for (const auto& a : acc_axes) acc_order.push_back(a);
  acc.reorder(acc_order);
  if (cfg.choice("unroll_k", {0, 1}) == 1) acc.unroll(kparts[1]);
  for (const Tensor& t : shared) {
    schedule::Stage st = s[t];
    st.compute_at(acc, kparts[0]);
    std::vector<IterVar> ax;
    for (size_t i = 0; i < t.shape().size(); ++i) ax.push_back(st.axis(i));
    IterVar fused = st.fuse(ax);
    for (size_t i = 0; i < axes.size(); ++i) {
      auto [th, rest] = st.split_nparts(fused, cfg.value(knobs[i])[2]);
      st.bind(th, te::thread_axis(std::string("threadIdx.") + dims[off + i]));
      fused = rest;
    }
  }
}

int64_t prod(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

// ---- conv2d_nchw and depthwise: shape N,C,H,W,K,R,S (depthwise: K = C * multiplier)
void conv_check(const records::Workload& w, bool depthwise) {
  tmpl::check_conv(w);
  tmpl::ConvDims d = tmpl::conv_dims(w);
  LOOM_CHECK(!depthwise || d.K % d.C == 0, "{}: K ({}) must be a multiple of C ({})", w.op, d.K, d.C);
}

std::vector<Tensor> conv_compute(const records::Workload& w, bool depthwise) {
  tmpl::ConvDims d = tmpl::conv_dims(w);
  Tensor data = te::placeholder({d.N, d.C, d.H, d.W}, DataType::Float(32), "data");
  if (depthwise) {
    Tensor kernel = te::placeholder({d.C, d.K / d.C, d.R, d.S}, DataType::Float(32), "kernel");
    return {data, kernel,
            te::ops::depthwise_conv2d_nchw(data, kernel, {d.stride, d.stride}, {d.pad, d.pad})};
  }
  Tensor kernel = te::placeholder({d.K, d.C, d.R, d.S}, DataType::Float(32), "kernel");
  return {data, kernel, te::ops::conv2d_nchw(data, kernel, {d.stride, d.stride}, {d.pad, d.pad})};
}

Schedule conv_schedule(ConfigContext& cfg, const Tensor& out, const Tensor& output, bool depthwise) {
  const Tensor kernel = out.op()->input_tensors()[1];
  const int64_t K = *te::as_const_int(out.shape()[1]), OH = *te::as_const_int(out.shape()[2]),
                OW = *te::as_const_int(out.shape()[3]);
  cfg.split("tile_f", K, four_way(K));
  cfg.split("tile_y", OH, four_way(OH));
  cfg.split("tile_x", OW, four_way(OW));
  Schedule s = tmpl::create_epilogue_schedule(out, output);
  // Padding is inlined into the shared-memory fetch.
  Tensor padded = out.op()->input_tensors()[0];
  if (padded.op()->kind == te::OpKind::kCompute) s[padded].compute_inline();
  Tensor DS = s.cache_read(padded, "shared", std::vector<Tensor>{out});
  Tensor KS = s.cache_read(kernel, "shared", std::vector<Tensor>{out});
  tmpl::OutputTile tile = tmpl::output_tile(s, out, output);
  schedule::Stage acc = tile.acc;
  Tensor OL = te::output(acc->op);
  std::vector<IterVar> red;
  for (size_t i = 0; i < OL.op()->reduce_axis.size(); ++i) red.push_back(acc.reduce_axis(i));
  cfg.split("tile_k", *te::as_const_int(red[0]->dom.extent), SplitOptions{SplitOptions::kFactors, 2, 32, {}});
  const auto &tf = cfg.value("tile_f"), &ty = cfg.value("tile_y"), &tx = cfg.value("tile_x");
  int64_t kin = cfg.value("tile_k")[1];
  const int64_t R = *te::as_const_int(kernel.shape()[2]), S = *te::as_const_int(kernel.shape()[3]);
  int64_t span_y = prod(ty, 1) * 2 + R, span_x = prod(tx, 1) * 2 + S;  // bound with stride <= 2
  int64_t shared = (depthwise ? prod(tf, 1) : kin) * span_y * span_x + prod(tf, 1) * (depthwise ? 1 : kin) * R * S;
  // Batch shares blockIdx.z with the outer output-channel tile.
  schedule::Stage o = tile.out;
  std::vector<IterVar> acc_axes;
  for (int i = 0; i < 4; ++i) acc_axes.push_back(acc.axis(i));
  schedule_gpu(cfg, s, o, {o.axis(1), o.axis(2), o.axis(3)}, {"tile_f", "tile_y", "tile_x"}, acc, acc_axes, red,
               {DS, KS}, shared);
  return s;
}

Template conv_template(bool depthwise) {
  Template t;
  t.name = depthwise ? "depthwise_conv2d_nchw" : "conv2d_nchw";
  t.aliases = {depthwise ? "depthwise_conv2d_nchw_cuda" : "conv2d_nchw_cuda"};
  t.shape_doc = "N,C,H,W,K,R,S";
  t.doc = depthwise ? "depthwise conv2d NCHW, float32, GPU (K = C * multiplier; attrs stride, pad)"
                    : "conv2d NCHW, float32, GPU (shared-memory tiles, vthreads; attrs stride, pad)";
  t.targets = {"cuda"};
  t.check = [depthwise](const records::Workload& w) { conv_check(w, depthwise); };
  t.flop = [depthwise](const records::Workload& w) {
    tmpl::ConvDims d = tmpl::conv_dims(w);
    return depthwise ? d.flop() / double(d.C) : d.flop();  // a depthwise output sums over one channel
  };
  t.compute = [depthwise](const records::Workload& w) { return conv_compute(w, depthwise); };
  t.schedule_epilogue = [depthwise](ConfigContext& cfg, const Tensor& anchor, const Tensor& output, const Target&) {
    return conv_schedule(cfg, anchor, output, depthwise);
  };
  t.schedule = tmpl::bare(t.schedule_epilogue);
  // 8 channel threads × 2 vthreads × 2 channels, 4 × 8 pixel threads: 256 threads.
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["tile_f"] = {-1, 2, 8, 2};
    p.values["tile_y"] = {-1, 1, 4, 1};
    p.values["tile_x"] = {-1, 1, 8, 1};
    p.values["tile_k"] = {-1, 4};
    p.values["unroll_k"] = {1};
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace

std::vector<Template> cuda_templates() {
  std::vector<Template> all = cuda_gemm_templates();
  all.push_back(conv_template(false));
  all.push_back(conv_template(true));
  return all;
}

}  // namespace loom::tuner
