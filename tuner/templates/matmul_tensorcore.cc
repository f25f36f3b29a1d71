// The tensor-core matmuls (target cuda): C[M,N] = A[M,K] · B[K,N] with float16 A and B and
// float32 accumulation, row-major arrays, in one schedule over two sets of tensor intrinsics
// (te/tensor_intrinsics.h):
//   "matmul_tensorcore": WMMA, 16×16×16 fragments (M, N and K multiples of 16);
//   "matmul_mma": PTX mma.sync.m16n8k16 on register fragments loaded with ldmatrix
//     (M and K multiples of 16, N of 8).
//
// A block computes a tile of warps_m × warps_n warps, each warp a tile of warp_m × warp_n
// accumulator tiles (cache_write into the accumulator scope), stored to C by the store
// intrinsic. The reduction runs in steps of chunk·16: the block's A and B panels of one step
// are fetched into shared memory by all its threads (16 bytes per thread and step, split over
// threadIdx.x, the 32 lanes of a warp, and the warps), then each warp loads its fragments
// from shared memory and multiplies them, 16 deep at a time. The fragment stages bind no
// threadIdx.x: the 32 threads of a warp run them together. matmul_mma also pads the panels'
// rows by 16 bytes (pad: the eight rows one ldmatrix phase reads fall in different banks) and
// double-buffers them with the next panel's loads staged in registers (double_buffer). Configs
// whose tiles do not divide the shape, or that need more than 1024 threads or 48 KiB of
// shared memory, are rejected.
#include <loom/te/tensor_intrinsics.h>

#include "templates.h"

namespace loom::tuner {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

constexpr int64_t kVector = 8;  // float16 elements a thread fetches at once

/// One way of running the matmul on tensor cores.
struct TensorCoreKind {
  std::string scope;        // fragment scopes: scope + "matrix_a", "matrix_b", "accumulator"
  int64_t tm, tn, tk;       // an accumulator tile is tm × tn, tk deep
  std::vector<int64_t> warp_n_choices;
  bool pipelined;           // pad and double_buffer knobs, fragment loops always unrolled
  te::TensorIntrin (*load_a)(), (*load_b)(), (*mma)(), (*store)();
};

const TensorCoreKind kWmma{"wmma.", 16, 16, 16, {1, 2, 4}, false,
                           te::wmma_load_a, te::wmma_load_b, te::wmma_mma, te::wmma_store};
const TensorCoreKind kMma{"mma.", 16, 8, 16, {1, 2, 4, 8}, true,
                          te::mma_load_a, te::mma_load_b, te::mma_m16n8k16, te::mma_store};

void check(const records::Workload& w, const TensorCoreKind& kind) {
  LOOM_CHECK(w.dtype == "float16", "{}: dtype must be float16 (float16 inputs, float32 accumulation and output), got '{}'",
             w.op, w.dtype);
  LOOM_CHECK(w.shape.size() == 3, "{}: shape must be [M, N, K], got {} sizes", w.op, w.shape.size());
  const int64_t align[3] = {kind.tm, kind.tn, kind.tk};
  for (size_t d = 0; d < 3; ++d)
    LOOM_CHECK(w.shape[d] >= align[d] && w.shape[d] <= INT32_MAX && w.shape[d] % align[d] == 0,
               "{}: {} must be a multiple of {}, got {}", w.op, "MNK"[d], align[d], w.shape[d]);
  LOOM_CHECK(w.attrs.empty(), "{}: takes no attributes", w.op);
}

std::vector<Tensor> compute(const records::Workload& w, const TensorCoreKind& kind) {
  check(w, kind);
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

/// Fetches a shared panel with all threads of the block, 8 float16 (16 bytes, one uint4 copy)
/// per thread and step, 32 lanes next. `pipelined`: its rows of `row` elements padded by 8
/// when `pad`, the vectors split off before the fuse (so that a padded row keeps them
/// contiguous), double-buffered when `double_buffer`.
void cooperative_fetch(schedule::Stage st, int64_t warps_m, int64_t warps_n, bool pipelined, int64_t row, bool pad,
                       bool double_buffer) {
  IterVar vectors, v;
  if (pipelined) {
    if (pad) st.storage_align(st.axis(0), int(row), int(kVector));
    IterVar cols;
    std::tie(cols, v) = st.split(st.axis(1), kVector);
    vectors = st.fuse(st.axis(0), cols);
  } else {
    std::tie(vectors, v) = st.split(st.fuse(st.axis(0), st.axis(1)), kVector);
  }
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

Schedule schedule_tc(ConfigContext& cfg, const std::vector<Tensor>& args, const TensorCoreKind& kind) {
  Tensor A = args[0], B = args[1], C = args[2];
  const int64_t M = *te::as_const_int(C.shape()[0]), N = *te::as_const_int(C.shape()[1]);
  const int64_t K = *te::as_const_int(A.shape()[1]);
  const int64_t warp_m = cfg.choice("warp_m", {1, 2, 4}), warp_n = cfg.choice("warp_n", kind.warp_n_choices);
  const int64_t warps_m = cfg.choice("warps_m", {1, 2, 4}), warps_n = cfg.choice("warps_n", {1, 2, 4});
  const int64_t chunk = cfg.choice("chunk", {1, 2, 4});
  bool pad = false, double_buffer = false, unroll = true;
  if (kind.pipelined) {
    pad = cfg.choice("pad", {1, 0}) != 0;
    double_buffer = cfg.choice("double_buffer", {1, 0}) != 0;
  }
  const int64_t BM = warps_m * warp_m * kind.tm, BN = warps_n * warp_n * kind.tn, BK = chunk * kind.tk;
  // B's rows are padded only when longer than one vector (storage_align needs offset < factor).
  const bool pad_b = pad && BN > kVector;
  if (!cfg.defining()) {
    if (M % BM || N % BN || K % BK)
      throw InstantiationError(fmt::format("block tile {}x{}x{} does not divide {}x{}x{}", BM, BN, BK, M, N, K));
    const int64_t shared =
        (double_buffer ? 2 : 1) * (BM * (BK + (pad ? kVector : 0)) + BK * (BN + (pad_b ? kVector : 0))) * 2;
    if (shared > 48 * 1024) throw InstantiationError(fmt::format("{} bytes of shared memory (at most 49152)", shared));
    const int64_t threads = 32 * warps_m * warps_n;
    if (kind.pipelined && ((BM * BK) % (kVector * threads) || (BK * BN) % (kVector * threads)))
      throw InstantiationError(fmt::format("{} threads do not share the {}x{} and {}x{} panels in 16-byte vectors",
                                           threads, BM, BK, BK, BN));
  }
  if (!kind.pipelined) unroll = cfg.choice("unroll_frag", {0, 1}) != 0;

  Schedule s = create_schedule({C});
  Tensor AS = s.cache_read(A, "shared", std::vector<Tensor>{C});
  Tensor BS = s.cache_read(B, "shared", std::vector<Tensor>{C});
  Tensor AF = s.cache_read(AS, kind.scope + "matrix_a", std::vector<Tensor>{C});
  Tensor BF = s.cache_read(BS, kind.scope + "matrix_b", std::vector<Tensor>{C});
  Tensor CF = s.cache_write(C, kind.scope + "accumulator");

  schedule::Stage sc = s[C];
  auto [bi, ri] = sc.split(sc.axis(0), BM);
  auto [bj, rj] = sc.split(sc.axis(1), BN);
  auto [wi, fi_] = sc.split(ri, warp_m * kind.tm);
  auto [wj, fj_] = sc.split(rj, warp_n * kind.tn);
  auto [fi, ti] = sc.split(fi_, kind.tm);
  auto [fj, tj] = sc.split(fj_, kind.tn);
  sc.reorder({bi, bj, wi, wj, fi, fj, ti, tj});
  sc.bind(bi, te::thread_axis("blockIdx.y"));
  sc.bind(bj, te::thread_axis("blockIdx.x"));
  sc.bind(wi, te::thread_axis("threadIdx.y"));
  sc.bind(wj, te::thread_axis("threadIdx.z"));
  sc.tensorize(ti, kind.store());

  schedule::Stage cf = s[CF];
  cf.compute_at(sc, wj);
  auto [cfi, cti] = cf.split(cf.axis(0), kind.tm);
  auto [cfj, ctj] = cf.split(cf.axis(1), kind.tn);
  auto [ko, kr] = cf.split(cf.reduce_axis(0), BK);
  auto [kf, kt] = cf.split(kr, kind.tk);
  cf.reorder({ko, kf, cfi, cfj, cti, ctj, kt});
  if (unroll) {
    if (kind.pipelined) cf.unroll(kf);
    cf.unroll(cfi);
    cf.unroll(cfj);
  }
  cf.tensorize(cti, kind.mma());

  schedule::Stage af = s[AF], bf = s[BF];
  af.compute_at(cf, kf);
  auto [afo, afi] = af.split(af.axis(0), kind.tm);
  af.reorder({afo, afi, af.axis(1)});
  if (kind.pipelined) af.unroll(afo);
  af.tensorize(afi, kind.load_a());
  bf.compute_at(cf, kf);
  auto [bfo, bfi] = bf.split(bf.axis(1), kind.tn);
  bf.reorder({bfo, bf.axis(0), bfi});
  if (kind.pipelined) bf.unroll(bfo);
  bf.tensorize(bf.axis(0), kind.load_b());

  s[AS].compute_at(cf, ko);
  s[BS].compute_at(cf, ko);
  cooperative_fetch(s[AS], warps_m, warps_n, kind.pipelined, BK, pad, double_buffer);
  cooperative_fetch(s[BS], warps_m, warps_n, kind.pipelined, BN, pad_b, double_buffer);
  return s;
}

Template tensor_core_template(const TensorCoreKind& kind) {
  Template t;
  t.targets = {"cuda"};
  t.check = [&kind](const records::Workload& w) { check(w, kind); };
  t.flop = [](const records::Workload& w) { return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]); };
  t.compute = [&kind](const records::Workload& w) { return compute(w, kind); };
  t.schedule = [&kind](ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
    return schedule_tc(cfg, args, kind);
  };
  return t;
}

}  // namespace

Template matmul_tensorcore_template() {
  Template t = tensor_core_template(kWmma);
  t.name = "matmul_tensorcore";
  t.shape_doc = "M,N,K (dtype float16; multiples of 16)";
  t.doc = "C[M,N] = A[M,K] * B[K,N] on CUDA tensor cores (WMMA), float16 in, float32 accumulation and out";
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

Template matmul_mma_template() {
  Template t = tensor_core_template(kMma);
  t.name = "matmul_mma";
  t.shape_doc = "M,N,K (dtype float16; M, K multiples of 16, N of 8)";
  t.doc = "C[M,N] = A[M,K] * B[K,N] on CUDA tensor cores (mma.sync.m16n8k16, ldmatrix), float16 in, float32 out";
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
