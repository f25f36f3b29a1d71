// float32 GEMM on CUDA, in the structure of fast hand-written SGEMM kernels: "matmul" (C =
// A·B), "dense" (C = X·Wᵀ) and "batch_matmul" (C[b] = A[b]·B[b], either operand possibly
// transposed or broadcast) for target kind "cuda".
//
// A thread block computes one tile of C: warps_m × warps_n warps, each warp's 32 lanes
// arranged lanes_m × lanes_n, each lane thread_m × thread_n accumulators in registers, as
// runs of 4 rows and 4 columns a warp's span apart (virtual threads), so that a warp's lanes
// read consecutive 16-byte vectors. Per step of tile_k along the reduction:
//   - A's and B's tiles are fetched into shared memory by all threads, 16 bytes per load
//     where the rows allow (when K or N is a multiple of 4), and stored k-major
//     (Stage::storage_order), rows padded by 4 floats against bank conflicts (pad);
//   - with double_buffer, the next step's tiles are loaded into registers at the start of the
//     step and stored into the other half of shared memory at its end (inject_double_buffer),
//     one barrier per step;
//   - each lane reads its column of A and row of B into registers as float4 runs and
//     accumulates their outer product, every loop unrolled.
// Every stage of the tile is computed padded (Stage::compute_padded with 0), so a tile past
// M, N or K adds zeros rather than testing bounds in its inner loop; only the output's store
// is guarded. The epilogue of a fused kernel runs on the accumulators before the store.
#include "cuda_gemm.h"

#include "loom/te/expr_functor.h"

namespace loom::tuner {
namespace tmpl {

using te::IterVar;
using te::Tensor;

CudaGemmTile cuda_gemm_tile(ConfigContext& cfg) {
  CudaGemmTile t;
  t.warps_m = cfg.choice("warps_m", {1, 2, 4});
  t.warps_n = cfg.choice("warps_n", {1, 2, 4});
  t.lanes_m = cfg.choice("lanes_m", {2, 4, 8, 16});
  t.thread_m = cfg.choice("thread_m", {4, 8});
  t.thread_n = cfg.choice("thread_n", {4, 8});
  t.tile_k = cfg.choice("tile_k", {8, 16, 32});
  t.pad = cfg.choice("pad", {1, 0}) != 0;
  t.double_buffer = cfg.choice("double_buffer", {1, 0}) != 0;
  if (cfg.defining()) return t;
  if (t.threads() < 64 || t.threads() > 256)
    throw InstantiationError(fmt::format("{} threads per block (64 to 256)", t.threads()));
  if (t.block_m() > 256 || t.block_n() > 256)
    throw InstantiationError(fmt::format("a {}x{} block tile (at most 256 either way)", t.block_m(), t.block_n()));
  if (t.shared_bytes() > 48 * 1024)
    throw InstantiationError(fmt::format("{} bytes of shared memory (at most 49152)", t.shared_bytes()));
  return t;
}

Preferences cuda_gemm_preferences() {
  Preferences p;
  p.values["warps_m"] = {2};
  p.values["warps_n"] = {4};
  p.values["lanes_m"] = {8};
  p.values["thread_m"] = {8};
  p.values["thread_n"] = {8};
  p.values["tile_k"] = {8};
  p.values["pad"] = {1};
  p.values["double_buffer"] = {1};
  return p;
}

namespace {

/// The parts of an output axis: [block, virtual thread, warp, lane, 4].
struct AxisParts {
  IterVar block, vthread, warp, lane, inner;
};

AxisParts split_axis(schedule::Stage out, const IterVar& axis, int64_t runs, int64_t warps, int64_t lanes) {
  AxisParts p;
  IterVar r1, r2, r3;
  std::tie(r1, p.inner) = out.split(axis, 4);
  std::tie(r2, p.lane) = out.split(r1, lanes);
  std::tie(r3, p.warp) = out.split(r2, warps);
  std::tie(p.block, p.vthread) = out.split(r3, runs);
  return p;
}

/// The row/column dimension of an operand: its last non-reduction dimension.
int free_dim(const GemmOperand& op) {
  const int nd = int(op.tensor.ndim());
  return op.k_dim == nd - 1 ? nd - 2 : nd - 1;
}

/// A shared tile of `op`: computed at `ko`, stored k-major (rows padded), fetched by every
/// thread in 16-byte vectors along the operand's contiguous (last) dimension.
void schedule_shared(Schedule& s, const CudaGemmTile& tile, const Tensor& shared, const GemmOperand& op,
                     schedule::Stage acc, const IterVar& ko) {
  schedule::Stage st = s[shared];
  st.compute_at(acc, ko);
  const int nd = int(shared.ndim());
  std::vector<IterVar> order;
  for (int d = 0; d < nd; ++d)
    if (d != op.k_dim && d != free_dim(op)) order.push_back(st.axis(size_t(d)));
  order.push_back(st.axis(size_t(op.k_dim)));
  order.push_back(st.axis(size_t(free_dim(op))));
  st.storage_order(order);
  if (tile.pad) st.storage_align(st.axis(size_t(op.k_dim)), 32, 4);
  auto [outer, vec] = st.split(st.axis(size_t(nd - 1)), 4);
  std::vector<IterVar> rest;
  for (int d = 0; d < nd - 1; ++d) rest.push_back(st.axis(size_t(d)));
  rest.push_back(outer);
  std::vector<IterVar> loop_order = rest;
  loop_order.push_back(vec);
  st.reorder(loop_order);
  IterVar fused = st.fuse(rest);
  auto [f1, tx] = st.split(fused, int64_t(32));
  auto [f2, ty] = st.split(f1, tile.warps_m * tile.warps_n);
  st.reorder({f2, ty, tx, vec});
  st.bind(tx, te::thread_axis("threadIdx.x"));
  st.bind(ty, te::thread_axis("threadIdx.y"));
  st.unroll(f2);
  st.vectorize(vec);
  st.compute_padded(te::make_const(DataType::Float(32), 0.0));
  if (tile.double_buffer) st.double_buffer();
}

/// The register copy of a shared tile for one step of the reduction: 4 consecutive rows (or
/// columns) per run, read as one vector.
void schedule_registers(Schedule& s, const Tensor& local, const GemmOperand& op, schedule::Stage acc,
                        const IterVar& ki) {
  schedule::Stage st = s[local];
  st.compute_at(acc, ki);
  std::vector<IterVar> order;
  for (size_t d = 0; d < local.ndim(); ++d)
    if (int(d) != free_dim(op)) order.push_back(st.axis(d));
  order.push_back(st.axis(size_t(free_dim(op))));
  st.reorder(order);
  st.vectorize(order.back());
  st.compute_padded(te::make_const(DataType::Float(32), 0.0));
}

}  // namespace

void schedule_cuda_gemm(Schedule& s, const CudaGemmTile& tile, schedule::Stage out, const IterVar& batch,
                        const IterVar& m, const IterVar& n, schedule::Stage acc, const GemmOperand& a,
                        const GemmOperand& b) {
  Tensor AS = s.cache_read(a.tensor, "shared", std::vector<te::Operation>{acc->op});
  Tensor BS = s.cache_read(b.tensor, "shared", std::vector<te::Operation>{acc->op});
  Tensor AL = s.cache_read(AS, "local", std::vector<te::Operation>{acc->op});
  Tensor BL = s.cache_read(BS, "local", std::vector<te::Operation>{acc->op});

  AxisParts pm = split_axis(out, m, tile.thread_m / 4, tile.warps_m, tile.lanes_m);
  AxisParts pn = split_axis(out, n, tile.thread_n / 4, tile.warps_n, tile.lanes_n());
  std::vector<IterVar> order;
  if (batch.defined()) order.push_back(batch);
  for (const IterVar& v : {pm.block, pn.block, pm.vthread, pn.vthread, pm.warp, pn.warp, pm.lane, pn.lane, pm.inner,
                           pn.inner})
    order.push_back(v);
  out.reorder(order);
  if (batch.defined()) out.bind(batch, te::thread_axis("blockIdx.z"));
  out.bind(pm.block, te::thread_axis("blockIdx.y"));
  out.bind(pn.block, te::thread_axis("blockIdx.x"));
  out.bind(pm.vthread, te::thread_axis("vthread"));
  out.bind(pn.vthread, te::thread_axis("vthread"));
  IterVar warp = out.fuse(pm.warp, pn.warp);
  IterVar lane = out.fuse(pm.lane, pn.lane);
  out.bind(warp, te::thread_axis("threadIdx.y"));
  out.bind(lane, te::thread_axis("threadIdx.x"));
  out.unroll(pm.inner);
  out.vectorize(pn.inner);

  acc.compute_at(out, lane);
  auto [ko, ki] = acc.split(acc.reduce_axis(0), tile.tile_k);
  std::vector<IterVar> acc_order = {ko, ki};
  for (size_t d = 0; d < acc->op->axis.size(); ++d) acc_order.push_back(acc.axis(d));
  acc.reorder(acc_order);
  for (size_t i = 1; i < acc_order.size(); ++i) acc.unroll(acc_order[i]);
  acc.compute_padded(te::make_const(DataType::Float(32), 0.0));

  schedule_registers(s, AL, a, acc, ki);
  schedule_registers(s, BL, b, acc, ki);
  schedule_shared(s, tile, AS, a, acc, ko);
  schedule_shared(s, tile, BS, b, acc, ko);
}

/// The operand `input` of the GEMM `anchor` (a sum over one reduce axis of products of two
/// tensor reads): its tensor and the dimension the reduce axis indexes.
GemmOperand gemm_operand(const Tensor& anchor, size_t input) {
  const auto* red = anchor.op()->body[0].as<te::ReduceNode>();
  LOOM_CHECK(red && red->axis.size() == 1, "{}: the CUDA GEMM schedule needs a sum over one reduce axis",
             anchor.name());
  const Tensor t = anchor.op()->input_tensors().at(input);
  const te::VarNode* k = red->axis[0].var().get();
  int k_dim = -1;
  te::post_order_visit(red->source[0], [&](const te::Expr& e) {
    if (const auto* ld = e.as<te::ProducerLoadNode>(); ld && Tensor(ld->producer) == t)
      for (size_t d = 0; d < ld->indices.size(); ++d)
        if (ld->indices[d].as<te::VarNode>() == k) k_dim = int(d);
  });
  LOOM_CHECK(k_dim >= 0, "{}: input '{}' is not indexed by the reduce axis", anchor.name(), t.name());
  return GemmOperand{t, k_dim};
}

}  // namespace tmpl

namespace {

using te::Tensor;

/// The GEMM schedule of `anchor` (matmul, dense or batch_matmul) and its epilogue.
Schedule gemm_schedule(ConfigContext& cfg, const Tensor& anchor, const Tensor& output, const Target&) {
  tmpl::CudaGemmTile tile = tmpl::cuda_gemm_tile(cfg);
  tmpl::GemmOperand a = tmpl::gemm_operand(anchor, 0), b = tmpl::gemm_operand(anchor, 1);
  Schedule s = tmpl::create_epilogue_schedule(anchor, output);
  tmpl::OutputTile t = tmpl::output_tile(s, anchor, output);
  const bool batched = anchor.ndim() == 3;
  te::IterVar batch = batched ? t.out.axis(0) : te::IterVar();
  tmpl::schedule_cuda_gemm(s, tile, t.out, batch, t.out.axis(batched ? 1 : 0), t.out.axis(batched ? 2 : 1), t.acc, a,
                           b);
  return s;
}

Template gemm_base(const std::string& name, const std::string& doc) {
  Template t;
  t.name = name;
  t.targets = {"cuda"};
  t.doc = doc;
  t.schedule_epilogue = gemm_schedule;
  t.schedule = tmpl::bare(gemm_schedule);
  t.default_config = [](const ConfigSpace& sp) { return tmpl::closest_config(sp, tmpl::cuda_gemm_preferences()); };
  return t;
}

Template matmul_cuda() {
  Template t = gemm_base("matmul", "C[M,N] = A[M,K] * B[K,N], float32, GPU (pipelined shared-memory GEMM)");
  t.aliases = {"matmul_cuda"};
  t.shape_doc = "M,N,K";
  t.check = [](const records::Workload& w) { tmpl::check_shape(w, {"M", "N", "K"}); };
  t.flop = [](const records::Workload& w) { return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]); };
  t.compute = [](const records::Workload& w) -> std::vector<Tensor> {
    Tensor A = te::placeholder({w.shape[0], w.shape[2]}, DataType::Float(32), "A");
    Tensor B = te::placeholder({w.shape[2], w.shape[1]}, DataType::Float(32), "B");
    return {A, B, te::ops::matmul(A, B, false, false, "C")};
  };
  return t;
}

Template dense_cuda() {
  Template t = gemm_base("dense", "out[N,M] = X[N,K] * W[M,K]^T, float32, GPU (pipelined shared-memory GEMM)");
  t.shape_doc = "N,M,K";
  t.check = [](const records::Workload& w) { tmpl::check_shape(w, {"N", "M", "K"}); };
  t.flop = [](const records::Workload& w) { return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]); };
  t.compute = [](const records::Workload& w) -> std::vector<Tensor> {
    Tensor X = te::placeholder({w.shape[0], w.shape[2]}, DataType::Float(32), "X");
    Tensor W = te::placeholder({w.shape[1], w.shape[2]}, DataType::Float(32), "W");
    return {X, W, te::ops::dense(X, W, Tensor(), "dense")};
  };
  return t;
}

Template batch_matmul_cuda() {
  Template t = gemm_base("batch_matmul",
                         "C[b,M,N] = A[b,M,K] * B[b,K,N], float32, GPU (attrs transpose_a, transpose_b, "
                         "batch_a, batch_b: 1 broadcasts)");
  t.shape_doc = "B,M,N,K";
  t.check = [](const records::Workload& w) {
    tmpl::check_shape(w, {"B", "M", "N", "K"});
    for (const auto& [k, v] : w.attrs)
      LOOM_CHECK(k == "transpose_a" || k == "transpose_b" || k == "batch_a" || k == "batch_b",
                 "{}: unknown attribute '{}' (expected transpose_a, transpose_b, batch_a, batch_b)", w.op, k);
    for (const char* k : {"transpose_a", "transpose_b"})
      LOOM_CHECK(tmpl::int_attr(w, k, 0, 0) <= 1, "{}: attribute {} must be 0 or 1", w.op, k);
    for (const char* k : {"batch_a", "batch_b"}) {
      int64_t v = tmpl::int_attr(w, k, w.shape[0], 1);
      LOOM_CHECK(v == 1 || v == w.shape[0], "{}: {} must be 1 or the batch ({}), got {}", w.op, k, w.shape[0], v);
    }
  };
  t.flop = [](const records::Workload& w) {
    return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]) * double(w.shape[3]);
  };
  t.compute = [](const records::Workload& w) -> std::vector<Tensor> {
    const int64_t bt = w.shape[0], M = w.shape[1], N = w.shape[2], K = w.shape[3];
    const bool ta = tmpl::int_attr(w, "transpose_a", 0, 0) != 0, tb = tmpl::int_attr(w, "transpose_b", 0, 0) != 0;
    const int64_t ba = tmpl::int_attr(w, "batch_a", bt, 1), bb = tmpl::int_attr(w, "batch_b", bt, 1);
    Tensor A = te::placeholder(ta ? std::vector<te::Expr>{ba, K, M} : std::vector<te::Expr>{ba, M, K},
                               DataType::Float(32), "A");
    Tensor B = te::placeholder(tb ? std::vector<te::Expr>{bb, N, K} : std::vector<te::Expr>{bb, K, N},
                               DataType::Float(32), "B");
    return {A, B, te::ops::batch_matmul(A, B, ta, tb, "C")};
  };
  return t;
}

}  // namespace

std::vector<Template> cuda_gemm_templates() { return {matmul_cuda(), dense_cuda(), batch_matmul_cuda()}; }

}  // namespace loom::tuner
