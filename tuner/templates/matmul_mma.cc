// "matmul_mma" (target cuda): C[M,N] = A[M,K] · B[K,N] with float16 A and B and float32
// accumulation on tensor cores through PTX mma.sync.m16n8k16 (the mma tensor intrinsics of
// te/tensor_intrinsics.h), row-major arrays; M and K multiples of 16, N of 8.
//
// The structure of matmul_tensorcore with register fragments instead of WMMA's: a block of
// warps_m × warps_n warps, each warp a tile of warp_m × warp_n accumulator tiles of 16×8
// (cache_write "mma.accumulator"), stored to C lane by lane. The reduction runs in steps of
// chunk·16: the block's A and B panels are fetched into shared memory by all its threads
// (16 bytes per thread and step, 32 lanes next), double-buffered with the next panel's loads
// staged in registers (double_buffer), rows padded by 16 bytes (pad) so that the 8 rows an
// ldmatrix reads fall in different banks; each warp then loads its fragments with ldmatrix
// (A ×4, B ×2 transposed) and multiplies them with mma.sync, 16 deep at a time. Configs
// whose tiles do not divide the shape, or that need more than 1024 threads or 48 KiB of
// shared memory, are rejected.
#include <loom/te/tensor_intrinsics.h>

#include "templates.h"

namespace loom::tuner {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

constexpr int64_t kM = 16, kN = 8, kK = 16;
constexpr int64_t kVector = 8;  // float16 elements a thread fetches at once

void check(const records::Workload& w) {
  LOOM_CHECK(w.dtype == "float16", "{}: dtype must be float16 (float16 inputs, float32 accumulation and output), got '{}'",
             w.op, w.dtype);
  LOOM_CHECK(w.shape.size() == 3, "{}: shape must be [M, N, K], got {} sizes", w.op, w.shape.size());
  const int64_t align[3] = {kM, kN, kK};
  for (size_t d = 0; d < 3; ++d)
    LOOM_CHECK(w.shape[d] >= align[d] && w.shape[d] <= INT32_MAX && w.shape[d] % align[d] == 0,
               "{}: {} must be a multiple of {}, got {}", w.op, "MNK"[d], align[d], w.shape[d]);
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

/// A shared panel fetched by all threads of the block, 8 float16 (one 16-byte copy) per
/// thread and step, 32 lanes next; its rows of `row` elements padded by 8 (16 bytes) when `pad`.
void fetch_panel(schedule::Stage st, int64_t row, int64_t warps_m, int64_t warps_n, bool pad, bool double_buffer) {
  if (pad) st.storage_align(st.axis(0), int(row), int(kVector));
  // The vector split before the fuse, so that a padded row keeps its vectors contiguous.
  auto [cols, v] = st.split(st.axis(1), kVector);
  IterVar vectors = st.fuse(st.axis(0), cols);
  st.vectorize(v);
  auto [rest, tx] = st.split(vectors, int64_t(32));
  auto [rest2, ty] = st.split(rest, warps_m);
  auto [rest3, tz] = st.split(rest2, warps_n);
  st.reorder({rest3, tz, ty, tx, v});
  st.bind(tx, te::thread_axis("threadIdx.x"));
  st.bind(ty, te::thread_axis("threadIdx.y"));
  st.bind(tz, te::thread_axis("threadIdx.z"));
  if (double_buffer) st.double_buffer();
}

Schedule schedule_mma(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor A = args[0], B = args[1], C = args[2];
  const int64_t M = *te::as_const_int(C.shape()[0]), N = *te::as_const_int(C.shape()[1]);
  const int64_t K = *te::as_const_int(A.shape()[1]);
  const int64_t warp_m = cfg.choice("warp_m", {1, 2, 4}), warp_n = cfg.choice("warp_n", {1, 2, 4, 8});
  const int64_t warps_m = cfg.choice("warps_m", {1, 2, 4}), warps_n = cfg.choice("warps_n", {1, 2, 4});
  const int64_t chunk = cfg.choice("chunk", {1, 2, 4});
  const bool pad = cfg.choice("pad", {1, 0}) != 0;
  const bool double_buffer = cfg.choice("double_buffer", {1, 0}) != 0;
  const int64_t BM = warps_m * warp_m * kM, BN = warps_n * warp_n * kN, BK = chunk * kK;
  if (!cfg.defining()) {
    if (M % BM || N % BN || K % BK)
      throw InstantiationError(fmt::format("block tile {}x{}x{} does not divide {}x{}x{}", BM, BN, BK, M, N, K));
    const int64_t p = pad ? kVector : 0;
    const int64_t shared = (double_buffer ? 2 : 1) * (BM * (BK + p) + BK * (BN + (BN > kVector ? p : 0))) * 2;
    if (shared > 48 * 1024) throw InstantiationError(fmt::format("{} bytes of shared memory (at most 49152)", shared));
    // Every thread fetches whole 16-byte vectors of each panel.
    const int64_t threads = 32 * warps_m * warps_n;
    if ((BM * BK) % (kVector * threads) || (BK * BN) % (kVector * threads))
      throw InstantiationError(fmt::format("{} threads do not share the {}x{} and {}x{} panels in 16-byte vectors",
                                           threads, BM, BK, BK, BN));
  }

  Schedule s = create_schedule({C});
  Tensor AS = s.cache_read(A, "shared", std::vector<Tensor>{C});
  Tensor BS = s.cache_read(B, "shared", std::vector<Tensor>{C});
  Tensor AF = s.cache_read(AS, "mma.matrix_a", std::vector<Tensor>{C});
  Tensor BF = s.cache_read(BS, "mma.matrix_b", std::vector<Tensor>{C});
  Tensor CF = s.cache_write(C, "mma.accumulator");

  schedule::Stage sc = s[C];
  auto [bi, ri] = sc.split(sc.axis(0), BM);
  auto [bj, rj] = sc.split(sc.axis(1), BN);
  auto [wi, fi_] = sc.split(ri, warp_m * kM);
  auto [wj, fj_] = sc.split(rj, warp_n * kN);
  auto [fi, ti] = sc.split(fi_, kM);
  auto [fj, tj] = sc.split(fj_, kN);
  sc.reorder({bi, bj, wi, wj, fi, fj, ti, tj});
  sc.bind(bi, te::thread_axis("blockIdx.y"));
  sc.bind(bj, te::thread_axis("blockIdx.x"));
  sc.bind(wi, te::thread_axis("threadIdx.y"));
  sc.bind(wj, te::thread_axis("threadIdx.z"));
  sc.tensorize(ti, te::mma_store());

  schedule::Stage cf = s[CF];
  cf.compute_at(sc, wj);
  auto [cfi, cti] = cf.split(cf.axis(0), kM);
  auto [cfj, ctj] = cf.split(cf.axis(1), kN);
  auto [ko, kr] = cf.split(cf.reduce_axis(0), BK);
  auto [kf, kt] = cf.split(kr, kK);
  cf.reorder({ko, kf, cfi, cfj, cti, ctj, kt});
  cf.unroll(kf);
  cf.unroll(cfi);
  cf.unroll(cfj);
  cf.tensorize(cti, te::mma_m16n8k16());

  schedule::Stage af = s[AF], bf = s[BF];
  af.compute_at(cf, kf);
  auto [afo, afi] = af.split(af.axis(0), kM);
  af.reorder({afo, afi, af.axis(1)});
  af.unroll(afo);
  af.tensorize(afi, te::mma_load_a());
  bf.compute_at(cf, kf);
  auto [bfo, bfi] = bf.split(bf.axis(1), kN);
  bf.reorder({bfo, bf.axis(0), bfi});
  bf.unroll(bfo);
  bf.tensorize(bf.axis(0), te::mma_load_b());

  s[AS].compute_at(cf, ko);
  s[BS].compute_at(cf, ko);
  fetch_panel(s[AS], BK, warps_m, warps_n, pad, double_buffer);
  fetch_panel(s[BS], BN, warps_m, warps_n, pad && BN > kVector, double_buffer);
  return s;
}

}  // namespace

Template matmul_mma_template() {
  Template t;
  t.name = "matmul_mma";
  t.shape_doc = "M,N,K (dtype float16; M, K multiples of 16, N of 8)";
  t.doc = "C[M,N] = A[M,K] * B[K,N] on CUDA tensor cores (mma.sync.m16n8k16, ldmatrix), float16 in, float32 out";
  t.targets = {"cuda"};
  t.check = check;
  t.flop = [](const records::Workload& w) { return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]); };
  t.compute = compute;
  t.schedule = schedule_mma;
  // 2×2 warps of 64×64 (4×8 tiles of 16×8): a 128×128 block tile, 32 deep.
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["warp_m"] = {4};
    p.values["warp_n"] = {8};
    p.values["warps_m"] = {2};
    p.values["warps_n"] = {2};
    p.values["chunk"] = {2};
    p.values["pad"] = {1};
    p.values["double_buffer"] = {1};
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
