// "matmul_tensorcore" (target cuda): C[M,N] = A[M,K] · B[K,N] with float16 A and B and float32
// accumulation on tensor cores (the WMMA tensor intrinsics of te/tensor_intrinsics.h), row-major
// arrays; M, N and K multiples of 16.
//
// A block computes a tile of warps_m × warps_n warps, each warp a tile of warp_m × warp_n
// 16×16 accumulator fragments (cache_write "wmma.accumulator"), stored to C with
// store_matrix_sync. The reduction runs in steps of chunk·16: the block's A and B panels of
// one step are fetched into shared memory by all its threads (cooperative fetch: fused,
// 16 bytes per thread and step, split over threadIdx.x (the 32 lanes of a warp) and the
// warps), then each warp loads its fragments from shared memory (load_matrix_sync,
// cache_read "wmma.matrix_a"/"matrix_b") and multiplies them (mma_sync) 16 deep at a time. The fragment stages bind no threadIdx.x: the
// 32 threads of a warp run them together, as WMMA requires. Configs whose tiles do not divide
// the shape, or that need more than 1024 threads or 48 KiB of shared memory, are rejected.
#include <loom/te/tensor_intrinsics.h>

#include "templates.h"

namespace loom::tuner {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

constexpr int64_t kTile = 16;
constexpr int64_t kVector = 8;  // float16 elements a thread fetches at once

void check(const records::Workload& w) {
  LOOM_CHECK(w.dtype == "float16", "{}: dtype must be float16 (float16 inputs, float32 accumulation and output), got '{}'",
             w.op, w.dtype);
  LOOM_CHECK(w.shape.size() == 3, "{}: shape must be [M, N, K], got {} sizes", w.op, w.shape.size());
  for (int64_t v : w.shape)
    LOOM_CHECK(v >= kTile && v <= INT32_MAX && v % kTile == 0, "{}: M, N and K must be multiples of {}, got {}", w.op,
               kTile, v);
  LOOM_CHECK(w.attrs.empty(), "{}: takes no attributes", w.op);
}

std::vector<Tensor> compute(const records::Workload& w) {
  check(w);
  const int64_t M = w.shape[0], N = w.shape[1], K = w.shape[2];
  Tensor A = te::placeholder({M, K}, DataType::Float(16), "A");
  Tensor B = te::placeholder({K, N}, DataType::Float(16), "B");
  IterVar k = te::reduce_axis({0, K}, "k");
  Tensor C = te::compute(
      {M, N},
      [&](Var i, Var j) {
        return te::sum(te::cast(DataType::Float(32), A(i, k)) * te::cast(DataType::Float(32), B(k, j)), {k});
      },
      "C", "matmul");
  return {A, B, C};
}

/// Fetches a shared stage with all threads of the block, 8 float16 (16 bytes, one uint4
/// copy) per thread and step, 32 lanes next.
void cooperative_fetch(schedule::Stage st, int64_t warps_m, int64_t warps_n) {
  IterVar fused = st.fuse(st.axis(0), st.axis(1));
  auto [vectors, v] = st.split(fused, kVector);
  st.vectorize(v);
  auto [rest, tx] = st.split(vectors, int64_t(32));
  auto [rest2, ty] = st.split(rest, warps_m);
  auto [rest3, tz] = st.split(rest2, warps_n);
  st.reorder({rest3, tz, ty, tx, v});
  st.bind(tx, te::thread_axis("threadIdx.x"));
  st.bind(ty, te::thread_axis("threadIdx.y"));
  st.bind(tz, te::thread_axis("threadIdx.z"));
}

Schedule schedule_tc(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor A = args[0], B = args[1], C = args[2];
  const int64_t M = *te::as_const_int(C.shape()[0]), N = *te::as_const_int(C.shape()[1]);
  const int64_t K = *te::as_const_int(A.shape()[1]);
  const int64_t warp_m = cfg.choice("warp_m", {1, 2, 4}), warp_n = cfg.choice("warp_n", {1, 2, 4});
  const int64_t warps_m = cfg.choice("warps_m", {1, 2, 4}), warps_n = cfg.choice("warps_n", {1, 2, 4});
  const int64_t chunk = cfg.choice("chunk", {1, 2, 4});
  const int64_t BM = warps_m * warp_m * kTile, BN = warps_n * warp_n * kTile, BK = chunk * kTile;
  if (!cfg.defining()) {
    if (M % BM || N % BN || K % BK)
      throw InstantiationError(fmt::format("block tile {}x{}x{} does not divide {}x{}x{}", BM, BN, BK, M, N, K));
    if ((BM + BN) * BK * 2 > 48 * 1024)
      throw InstantiationError(fmt::format("{} bytes of shared memory (at most 49152)", (BM + BN) * BK * 2));
  }

  Schedule s = create_schedule({C});
  Tensor AS = s.cache_read(A, "shared", std::vector<Tensor>{C});
  Tensor BS = s.cache_read(B, "shared", std::vector<Tensor>{C});
  Tensor AF = s.cache_read(AS, "wmma.matrix_a", std::vector<Tensor>{C});
  Tensor BF = s.cache_read(BS, "wmma.matrix_b", std::vector<Tensor>{C});
  Tensor CF = s.cache_write(C, "wmma.accumulator");

  schedule::Stage sc = s[C];
  auto [bi, ri] = sc.split(sc.axis(0), BM);
  auto [bj, rj] = sc.split(sc.axis(1), BN);
  auto [wi, fi_] = sc.split(ri, warp_m * kTile);
  auto [wj, fj_] = sc.split(rj, warp_n * kTile);
  auto [fi, ti] = sc.split(fi_, kTile);
  auto [fj, tj] = sc.split(fj_, kTile);
  sc.reorder({bi, bj, wi, wj, fi, fj, ti, tj});
  sc.bind(bi, te::thread_axis("blockIdx.y"));
  sc.bind(bj, te::thread_axis("blockIdx.x"));
  sc.bind(wi, te::thread_axis("threadIdx.y"));
  sc.bind(wj, te::thread_axis("threadIdx.z"));
  sc.tensorize(ti, te::wmma_store());

  schedule::Stage cf = s[CF];
  cf.compute_at(sc, wj);
  auto [cfi, cti] = cf.split(cf.axis(0), kTile);
  auto [cfj, ctj] = cf.split(cf.axis(1), kTile);
  auto [ko, kr] = cf.split(cf.reduce_axis(0), BK);
  auto [kf, kt] = cf.split(kr, kTile);
  cf.reorder({ko, kf, cfi, cfj, cti, ctj, kt});
  if (cfg.choice("unroll_frag", {0, 1})) {
    cf.unroll(cfi);
    cf.unroll(cfj);
  }
  cf.tensorize(cti, te::wmma_mma());

  schedule::Stage af = s[AF], bf = s[BF];
  af.compute_at(cf, kf);
  auto [afo, afi] = af.split(af.axis(0), kTile);
  af.reorder({afo, afi, af.axis(1)});
  af.tensorize(afi, te::wmma_load_a());
  bf.compute_at(cf, kf);
  auto [bfo, bfi] = bf.split(bf.axis(1), kTile);
  bf.reorder({bfo, bf.axis(0), bfi});
  bf.tensorize(bf.axis(0), te::wmma_load_b());

  s[AS].compute_at(cf, ko);
  s[BS].compute_at(cf, ko);
  cooperative_fetch(s[AS], warps_m, warps_n);
  cooperative_fetch(s[BS], warps_m, warps_n);
  return s;
}

}  // namespace

Template matmul_tensorcore_template() {
  Template t;
  t.name = "matmul_tensorcore";
  t.shape_doc = "M,N,K (dtype float16; multiples of 16)";
  t.doc = "C[M,N] = A[M,K] * B[K,N] on CUDA tensor cores (WMMA), float16 in, float32 accumulation and out";
  t.targets = {"cuda"};
  t.check = check;
  t.flop = [](const records::Workload& w) { return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]); };
  t.compute = compute;
  t.schedule = schedule_tc;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["warp_m"] = {2};
    p.values["warp_n"] = {2};
    p.values["warps_m"] = {2};
    p.values["warps_n"] = {2};
    p.values["chunk"] = {2};
    p.values["unroll_frag"] = {1};
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
