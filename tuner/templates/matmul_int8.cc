// "matmul_int8": C[M,N] = A[M,K] · B[K,N] with uint8 A, int8 B and int32 accumulation
// (a dense layer, oneDNN's u8s8s32), tensorized with the u8·s8 dot-product intrinsic
// (te::dot_u8s8s32: vpdpbusd with AVX-512 VNNI). Arguments:
//   A      uint8 [M, K]
//   B      int8 packed [ceil(N/16), ceil(K/4), 16, 4]: element (k, n) of the logical B at
//          [n/16, k/4, n%16, k%4] (the layout TVM and oneDNN use for VNNI; the padding is
//          never read), so that one dot product's 16 columns × 4 k are 64 contiguous bytes
//   bias   int32 [N], only when the output is requantized
//   C      int32 [M, N]; with attrs out_dtype=int8|uint8, scale, zero_point the output is
//          requantize(C + bias) in that type (int8.h)
//
// C accumulates in a local register tile of tile_y.inner rows × tile_x.inner columns
// (tile_x.inner/16 vectors of 16 int32 per row) over the whole reduction, k.outer steps of 4
// split by tile_k with the inner part unrolled (unroll_k); each step is one dot product per
// accumulator vector, with one broadcast of 4 A bytes per row and one 64-byte load of B per
// column block. The epilogue (the copy out, or the requantization) runs on the tile.
// Register tiles divide M and N where they can (int8::row_options); columns beyond a
// multiple of 16 and a k remainder below 4 run as plain loops.
#include <loom/te/tensor_intrinsics.h>

#include "int8.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using te::Var;

std::vector<Tensor> compute(const records::Workload& w) {
  const int64_t M = w.shape[0], N = w.shape[1], K = w.shape[2];
  const int8::Requant q = int8::check_workload(w, {"M", "N", "K"});
  const int64_t L = int8::kLanes, D = int8::kDepth;
  Tensor A = te::placeholder({M, K}, DataType::UInt(8), "A");
  Tensor B = te::placeholder({tmpl::ceil_div(N, L), tmpl::ceil_div(K, D), L, D}, DataType::Int(8), "B");
  te::IterVar k = te::reduce_axis({0, K}, "k");
  Tensor C = te::compute(
      {M, N},
      [&](Var i, Var j) {
        te::Expr b = B(te::floordiv(j, L), te::floordiv(k, D), te::floormod(j, L), te::floormod(k, D));
        return te::sum(te::cast(DataType::Int(32), A(i, k)) * te::cast(DataType::Int(32), b), {k});
      },
      "C", "matmul_int8");
  if (!q.enabled()) return {A, B, C};
  Tensor bias = te::placeholder({N}, DataType::Int(32), "bias");
  Tensor out = te::compute(
      {M, N}, [&](Var i, Var j) { return int8::requantize(q, C(i, j) + bias(j)); }, "requantize", "elemwise");
  return {A, B, bias, out};
}

schedule::Schedule schedule_matmul_int8(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor out = args.back();
  const bool requant = args.size() == 4;
  Tensor C = requant ? tmpl::find_input(out, "C") : out;
  const int64_t M = *te::as_const_int(out.shape()[0]), N = *te::as_const_int(out.shape()[1]);
  const int64_t K = *te::as_const_int(args[0].shape()[1]);
  const int64_t L = int8::kLanes;

  cfg.split("tile_y", M, int8::row_options(M));
  cfg.split("tile_x", N, int8::block_options(N));
  SplitOptions tk;
  tk.max_factor = 8;
  cfg.split("tile_k", tmpl::ceil_div(K, int8::kDepth), tk);
  cfg.annotate("unroll_k", {"unroll", "none"});
  const int64_t rows = cfg.value("tile_y")[2], blocks = cfg.value("tile_x")[2] / L;
  if (!cfg.defining() && rows * blocks > int8::kMaxAccumulators)
    throw InstantiationError(fmt::format("register tile of {} rows x {} column blocks exceeds {} accumulators", rows,
                                         blocks, int8::kMaxAccumulators));

  Schedule s = create_schedule({out});
  schedule::Stage acc;
  if (requant) {
    acc = s[C];
    acc.set_scope("local");
  } else {
    acc = s[s.cache_write(out, "local")];
  }
  schedule::Stage so = s[out];
  auto yp = cfg.apply_split("tile_y", so, so.axis(0));
  auto xp = cfg.apply_split("tile_x", so, so.axis(1));
  so.reorder({yp[0], xp[0], yp[1], xp[1], yp[2], xp[2]});
  so.parallel(so.fuse(yp[0], xp[0]));
  auto [xr, xv] = so.split(xp[2], L);
  so.vectorize(xv);
  (void)xr;

  acc.compute_at(so, xp[1]);
  auto [ko, ki] = acc.split(acc.reduce_axis(0), int8::kDepth);
  auto kp = cfg.apply_split("tile_k", acc, ko);
  auto [xo, xi] = acc.split(acc.axis(1), L);
  acc.reorder({kp[0], kp[1], acc.axis(0), xo, xi, ki});
  cfg.apply_annotate("unroll_k", acc, kp[1]);
  acc.unroll(acc.axis(0));
  acc.unroll(xo);
  acc.tensorize(xi, te::dot_u8s8s32(int(L)));
  return s;
}

}  // namespace

Template matmul_int8_template() {
  Template t;
  t.name = "matmul_int8";
  t.shape_doc = "M,N,K (dtype int8; attrs out_dtype, scale, zero_point)";
  t.doc = "C[M,N] = A[M,K] * B[K,N], uint8 x int8 -> int32 (B packed [N/16, K/4, 16, 4]); requantized to "
          "int8/uint8 with out_dtype";
  t.check = [](const records::Workload& w) { int8::check_workload(w, {"M", "N", "K"}); };
  t.flop = [](const records::Workload& w) { return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]); };
  t.compute = compute;
  t.schedule = schedule_matmul_int8;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["tile_y"] = {-1, 4, 8};
    p.values["tile_x"] = {-1, 2, 32};
    p.values["tile_k"] = {-1, 4};
    p.labels["unroll_k"] = "unroll";
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
