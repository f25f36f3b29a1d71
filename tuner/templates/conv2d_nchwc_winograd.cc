// "conv2d_nchwc_winograd": a 3x3, stride-1 convolution on channel-blocked arrays by
// Winograd's F(m×m, 3×3) (te::ops::conv2d_nchwc_winograd), the weight transformed ahead of
// time (te::ops::winograd_weight_transform, which a graph folds on its constant weight):
//   data   [N, C/ic, H, W, ic]
//   kernel [m+2, m+2, K/oc, C/ic, ic, oc]   (U = G g Gᵀ)
//   out    [N, K/oc, OH, OW, oc]
// Shape and attrs are the logical ones of conv2d_nchwc (N,C,H,W,K,3,3; pad; ic_block and
// oc_block, 16 when absent) with tile_size m (4 when absent). Its FLOPs are the direct
// convolution's, so that GFLOP/s compare with conv2d_nchwc's (an effective rate).
//
// Three phases, each vectorized over a 16-channel block:
//  - input transform: per tile and input-channel block, Bᵀ d B from the (padded) data, in
//    registers, stored as V [alpha, alpha, C/ic, P, ic];
//  - batched GEMM, the FLOP-heavy part: for each of the alpha² points M = U·V, in register
//    tiles of tile_k output-channel blocks × tile_p tiles accumulating over the input
//    channels (a broadcast of V and tile_k vector loads of U feed tile_k × tile_p fused
//    multiply-adds), as conv2d_nchwc's 1x1 case;
//  - output transform: per output tile Aᵀ M A in registers, the fused epilogue applied to
//    it before the store.
// tile_rows 0 runs each phase over the whole image (each its own parallel loop); tile_rows
// b > 0 runs all three for a block of b rows of tiles before the next (V and M of the block
// stay in cache), blocks in parallel.
#include <algorithm>

#include "loom/lower/stmt.h"
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using tmpl::kBlock;

int64_t dim(const Tensor& t, size_t i) { return *te::as_const_int(t.shape()[i]); }

/// 16-float accumulators a register tile may hold: AVX-512 has 32 vector registers of 16
/// floats (the rest hold U's vectors and the broadcast V), narrower targets 16 registers
/// of 8 or 4 floats.
int64_t accumulator_budget(const Target& target) { return target.vector_bits() >= 512 ? 28 : 6; }

struct Params {
  int64_t tile, ic, oc;
};

Params params(const records::Workload& w) {
  return {tmpl::int_attr(w, "tile_size", 4, 2), tmpl::int_attr(w, "ic_block", kBlock, 1),
          tmpl::int_attr(w, "oc_block", kBlock, 1)};
}

void check(const records::Workload& w) {
  tmpl::check_conv(w, {"tile_size", "ic_block", "oc_block"});
  tmpl::ConvDims d = tmpl::conv_dims(w);
  Params p = params(w);
  LOOM_CHECK(d.R == 3 && d.S == 3 && d.stride == 1,
             "{}: Winograd F(m x m, 3x3) takes a 3x3 kernel with stride 1, got {}x{} stride {} (use conv2d_nchwc)", w.op,
             d.R, d.S, d.stride);
  LOOM_CHECK(d.pad <= 2, "{}: pad must be in [0, 2], got {}", w.op, d.pad);
  LOOM_CHECK(p.tile <= 6, "{}: tile_size must be in [2, 6], got {}", w.op, p.tile);
  LOOM_CHECK(d.C % p.ic == 0 && d.K % p.oc == 0,
             "{}: input channels C={} and output channels K={} must be multiples of the blocks ic_block={} and "
             "oc_block={}",
             w.op, d.C, d.K, p.ic, p.oc);
}

std::vector<Tensor> compute(const records::Workload& w) {
  tmpl::ConvDims d = tmpl::conv_dims(w);
  Params p = params(w);
  const int64_t alpha = p.tile + 2;
  Tensor data = te::placeholder({d.N, d.C / p.ic, d.H, d.W, p.ic}, DataType::Float(32), "data");
  Tensor kernel =
      te::placeholder({alpha, alpha, d.K / p.oc, d.C / p.ic, p.ic, p.oc}, DataType::Float(32), "kernel");
  return {data, kernel, te::ops::conv2d_nchwc_winograd(data, kernel, {d.pad, d.pad})};
}

schedule::Schedule schedule_winograd(ConfigContext& cfg, const Tensor& out, const Tensor& output,
                                     const Target& target) {
  const Tensor out_rows = tmpl::find_input(out, "winograd_output_rows");
  const Tensor gemm = tmpl::find_input(out, "winograd_gemm");
  const Tensor input = tmpl::find_input(out, "winograd_input");
  const Tensor in_rows = tmpl::find_input(out, "winograd_input_rows");
  const int64_t KB = dim(gemm, 2), P = dim(gemm, 3), m = dim(out_rows, 2);
  const int64_t nH = tmpl::ceil_div(dim(out, 2), m);
  // A knob of one value: the default config reads the target's budget from the space.
  const int64_t budget = cfg.choice("accumulators", {accumulator_budget(target)});

  SplitOptions tk;
  tk.max_factor = budget >= 28 ? 4 : 2;
  const int64_t tile_k = cfg.split("tile_k", KB, tk).back();
  SplitOptions tp;
  tp.policy = SplitOptions::kCandidates;
  for (int64_t f = 1; f <= std::min<int64_t>(P, budget >= 28 ? 14 : 6); ++f) tp.candidates.push_back({-1, f});
  const int64_t tile_p = cfg.split("tile_p", P, tp).back();
  // Rows of tiles per block (0: every phase over the whole image); divisors of the tile rows.
  std::vector<int64_t> rows_options{0};
  for (int64_t b = 1; b <= nH; ++b)
    if (nH % b == 0) rows_options.push_back(b);
  const int64_t rows = cfg.choice("tile_rows", rows_options);
  // 0: output-channel blocks outside tiles (a block of U is reused over all tiles), 1: tiles
  // outside channel blocks (a tile's V is reused over all channel blocks).
  const int64_t tiles_outer = cfg.choice("gemm_order", {0, 1});
  cfg.annotate("unroll_rci", {"unroll", "none"});
  if (!cfg.defining() && tile_k * tile_p > budget)
    throw InstantiationError(fmt::format("register tile of {}x{} accumulators exceeds {}", tile_k, tile_p, budget));

  Schedule s = tmpl::create_epilogue_schedule(out, output);
  tmpl::OutputTile tile = tmpl::output_tile(s, out, output);
  schedule::Stage so = tile.out, acc = tile.acc;

  // The output in tiles of m x m: the transform of each tile in registers, the epilogue on it.
  const te::IterVar n = so.axis(0), kb = so.axis(1), co = so.axis(4);
  auto [th, yi] = so.split(so.axis(2), m);
  auto [tw, xi] = so.split(so.axis(3), m);
  te::IterVar block;
  if (rows) {
    auto [tho, thi] = so.split(th, rows);
    so.reorder({n, tho, kb, thi, tw, yi, xi, co});
    block = so.fuse(n, tho);
    so.parallel(block);
  } else {
    so.reorder({n, kb, th, tw, yi, xi, co});
    // One contiguous range of channel blocks per thread, as a pattern kernel after it (a global
    // pool) splits its work: it then reads what its own core wrote.
    const te::IterVar blocks = so.fuse({n, kb, th});
    so.parallel(blocks);
    so.pragma(blocks, lowering::attr::kParallelTaskPerThread);
  }
  so.unroll(yi);
  so.unroll(xi);
  so.vectorize(co);
  acc.compute_at(so, tw);
  acc.unroll(acc.axis(2));
  acc.unroll(acc.axis(3));
  acc.vectorize(acc.axis(4));
  schedule::Stage sr = s[out_rows];
  sr.set_scope("local");
  sr.compute_at(so, tw);
  sr.unroll(sr.axis(2));
  sr.unroll(sr.axis(3));
  sr.vectorize(sr.axis(4));

  // The batched GEMM in register tiles.
  const Tensor gemm_local = s.cache_write(gemm, "local");
  schedule::Stage sg = s[gemm], sl = s[gemm_local];
  const te::IterVar e = sg.axis(0), nu = sg.axis(1), gco = sg.axis(4);
  auto kp = cfg.apply_split("tile_k", sg, sg.axis(2));
  auto pp = cfg.apply_split("tile_p", sg, sg.axis(3));
  const te::IterVar o1 = tiles_outer ? pp[0] : kp[0], o2 = tiles_outer ? kp[0] : pp[0];
  sg.reorder({e, nu, o1, o2, kp[1], pp[1], gco});
  if (rows) sg.compute_at(so, block);
  else sg.parallel(sg.fuse({e, nu, o1}));
  sg.unroll(kp[1]);
  sg.unroll(pp[1]);
  sg.vectorize(gco);
  sl.compute_at(sg, o2);
  sl.reorder({sl.axis(0), sl.axis(1), sl.reduce_axis(0), sl.reduce_axis(1), sl.axis(2), sl.axis(3), sl.axis(4)});
  cfg.apply_annotate("unroll_rci", sl, sl.reduce_axis(1));
  sl.unroll(sl.axis(2));
  sl.unroll(sl.axis(3));
  sl.vectorize(sl.axis(4));

  // The input transform: per (channel block, tile), Bᵀ d in registers, then V = (Bᵀ d) B.
  schedule::Stage sv = s[input], si = s[in_rows];
  const te::IterVar ve = sv.axis(0), vnu = sv.axis(1), vci = sv.axis(4);
  sv.reorder({sv.axis(2), sv.axis(3), ve, vnu, vci});
  const te::IterVar vtile = sv.fuse(sv.axis(2), sv.axis(3));
  if (rows) sv.compute_at(so, block);
  else sv.parallel(vtile);
  sv.unroll(ve);
  sv.unroll(vnu);
  sv.vectorize(vci);
  si.set_scope("local");
  si.compute_at(sv, vtile);
  si.unroll(si.axis(2));
  si.unroll(si.axis(3));
  si.vectorize(si.axis(4));

  tmpl::schedule_pad(cfg, s, out, {0, 1});
  return s;
}

}  // namespace

Template conv2d_nchwc_winograd_template() {
  Template t;
  t.name = "conv2d_nchwc_winograd";
  t.shape_doc =
      "N,C,H,W,K,3,3 (attrs pad (0..2), tile_size m (4; 2..6), ic_block and oc_block (16) dividing C and K)";
  t.doc = "3x3 stride-1 convolution by Winograd F(m x m, 3x3): data NCHW{ic}c, kernel G g G^T "
          "[m+2,m+2,K/oc,C/ic,ic,oc], out NCHW{oc}c, float32 (FLOPs: the direct convolution's)";
  t.check = check;
  t.flop = [](const records::Workload& w) { return tmpl::conv_dims(w).flop(); };
  t.compute = compute;
  t.schedule = tmpl::bare(schedule_winograd);
  t.schedule_epilogue = schedule_winograd;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["tile_k"] = {-1, 2};
    p.values["tile_p"] = {-1, 8};
    p.values["tile_rows"] = {0};
    p.values["gemm_order"] = {0};
    p.values["pad_inline"] = {0};
    p.labels["unroll_rci"] = "unroll";
    return tmpl::closest_config(sp, p, [](const ConfigEntity& e) {
      return e.value("tile_k").back() * e.value("tile_p").back() <= e.value("accumulators").back();
    });
  };
  return t;
}

}  // namespace loom::tuner
