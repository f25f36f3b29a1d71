// "conv2d_nchwc": the convolution of conv2d_nchw on channel-blocked arrays, as a network whose
// layouts were transformed ahead of time calls it (oneDNN's nChw16c / OIhw16i16o):
//   data   [N, C/ic, H, W, ic]
//   kernel [K/oc, C/ic, R, S, ic, oc]
//   out    [N, K/oc, OH, OW, oc]
// (te::ops::conv2d_nchwc). Shape and attrs are the logical ones of conv2d_nchw, with the
// blocks as attrs ic_block and oc_block (16 when absent); C and K must be multiples of them.
// ic_block 0 takes NCHW data with a kernel [K/oc, C, R, S, oc] (OIHW{oc}o), as a network's
// first layer (3 input channels) runs when the rest is laid out in NCHW{oc}c.
//
// The output is computed in register tiles of tile_oc channel blocks × tile_oh rows × tile_ow
// columns, vectorized over a block's output channels, and a fused epilogue runs on the tile: for every input channel one
// broadcast of the input and tile_oc vector loads of the kernel feed tile_oc × tile_oh ×
// tile_ow fused multiply-adds. The outer reduction loops (channel blocks, kernel rows and
// columns) run in the order reduce_order, the 16 channels of a block innermost.
#include <algorithm>

#include "templates.h"

namespace loom::tuner {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;
using tmpl::kBlock;

// Vector registers a register tile may use for its accumulators (of 32 with AVX-512; the
// rest hold kernel vectors and the broadcast input).
constexpr int64_t kMaxAccumulators = 28;

struct Blocks {
  int64_t ic, oc;
};

/// ic 0: NCHW data (not blocked) with an OIHW{oc}o kernel, a network's first layer.
Blocks blocks(const records::Workload& w) {
  return {tmpl::int_attr(w, "ic_block", kBlock, 0), tmpl::int_attr(w, "oc_block", kBlock, 1)};
}

void check(const records::Workload& w) {
  tmpl::check_conv(w, {"ic_block", "oc_block"});
  tmpl::ConvDims d = tmpl::conv_dims(w);
  Blocks b = blocks(w);
  LOOM_CHECK((b.ic == 0 || d.C % b.ic == 0) && d.K % b.oc == 0,
             "{}: input channels C={} and output channels K={} must be multiples of the blocks ic_block={} and "
             "oc_block={} (use conv2d_nchw otherwise)",
             w.op, d.C, d.K, b.ic, b.oc);
}

std::vector<Tensor> compute(const records::Workload& w) {
  tmpl::ConvDims d = tmpl::conv_dims(w);
  Blocks b = blocks(w);
  Tensor data = b.ic ? te::placeholder({d.N, d.C / b.ic, d.H, d.W, b.ic}, DataType::Float(32), "data")
                     : te::placeholder({d.N, d.C, d.H, d.W}, DataType::Float(32), "data");
  Tensor kernel = b.ic ? te::placeholder({d.K / b.oc, d.C / b.ic, d.R, d.S, b.ic, b.oc}, DataType::Float(32), "kernel")
                       : te::placeholder({d.K / b.oc, d.C, d.R, d.S, b.oc}, DataType::Float(32), "kernel");
  return {data, kernel, te::ops::conv2d_nchwc(data, kernel, {d.stride, d.stride}, {d.pad, d.pad}, {1, 1})};
}

schedule::Schedule schedule_conv(ConfigContext& cfg, const Tensor& out, const Tensor& output, const Target&) {
  const int64_t KB = *te::as_const_int(out.shape()[1]), OH = *te::as_const_int(out.shape()[2]),
                OW = *te::as_const_int(out.shape()[3]);

  SplitOptions toc;
  toc.max_factor = 4;
  const int64_t oc = cfg.split("tile_oc", KB, toc).back();
  const int64_t oh = cfg.split("tile_oh", OH, tmpl::tile_options(OH, 2)).back();
  const int64_t ow = cfg.split("tile_ow", OW, tmpl::tile_options(OW, kMaxAccumulators)).back();
  std::vector<int64_t> order = cfg.reorder("reduce_order", tmpl::permutations(3));
  cfg.annotate("unroll_rci", {"unroll", "none"});
  // 0: output-channel blocks outside rows (a kernel block is reused over all rows), 1: rows
  // outside channel blocks (an input row is reused over all channel blocks).
  int64_t rows_outer = cfg.choice("rows_outer", {0, 1});

  if (!cfg.defining() && oc * oh * ow > kMaxAccumulators)
    throw InstantiationError(fmt::format("register tile of {}x{}x{} accumulators exceeds {}", oc, oh, ow,
                                         kMaxAccumulators));

  Schedule s = tmpl::create_epilogue_schedule(out, output);
  tmpl::OutputTile tile = tmpl::output_tile(s, out, output);
  schedule::Stage so = tile.out, acc = tile.acc;

  auto kbp = cfg.apply_split("tile_oc", so, so.axis(1));
  auto ohp = cfg.apply_split("tile_oh", so, so.axis(2));
  auto owp = cfg.apply_split("tile_ow", so, so.axis(3));
  std::vector<te::IterVar> outer = rows_outer ? std::vector<te::IterVar>{so.axis(0), ohp[0], kbp[0]}
                                              : std::vector<te::IterVar>{so.axis(0), kbp[0], ohp[0]};
  so.reorder({outer[0], outer[1], outer[2], owp[0], kbp[1], ohp[1], owp[1], so.axis(4)});
  so.parallel(so.fuse(outer));
  so.vectorize(so.axis(4));
  // The write-out unrolled, so that the accumulators stay in registers under an epilogue
  // that calls a function (SiLU's exp), as schedule_gemm's.
  so.unroll(kbp[1]);
  so.unroll(ohp[1]);
  so.unroll(owp[1]);

  acc.compute_at(so, owp[0]);
  std::vector<te::IterVar> red{acc.reduce_axis(0), acc.reduce_axis(1), acc.reduce_axis(2)};
  // Unblocked (NCHW) data has no channel block: the innermost of the ordered reduction loops
  // takes its place.
  const bool blocked = acc->op->reduce_axis.size() == 4;
  te::IterVar rci = blocked ? acc.reduce_axis(3) : red[order[2]];
  std::vector<te::IterVar> acc_order{acc.axis(0)};
  for (int64_t i : order)
    if (blocked || red[i] != rci) acc_order.push_back(red[i]);
  // Channel blocks innermost: one broadcast input value feeds tile_oc multiply-adds at once
  // and is dead after them, so only the accumulators and tile_oc kernel vectors stay live.
  acc_order.insert(acc_order.end(), {rci, acc.axis(2), acc.axis(3), acc.axis(1), acc.axis(4)});
  acc.reorder(acc_order);
  cfg.apply_annotate("unroll_rci", acc, rci);
  acc.unroll(acc.axis(1));
  acc.unroll(acc.axis(2));
  acc.unroll(acc.axis(3));
  acc.vectorize(acc.axis(4));

  tmpl::schedule_pad(cfg, s, out, {0, 1});
  return s;
}

}  // namespace

Template conv2d_nchwc_template() {
  Template t;
  t.name = "conv2d_nchwc";
  t.shape_doc = "N,C,H,W,K,R,S (attrs stride, pad, ic_block and oc_block (16) dividing C and K; ic_block 0: NCHW data)";
  t.doc = "2-D convolution on channel-blocked arrays: data NCHW{ic}c, kernel OIHW{ic}i{oc}o, out NCHW{oc}c, float32";
  t.check = check;
  t.flop = [](const records::Workload& w) { return tmpl::conv_dims(w).flop(); };
  t.compute = compute;
  t.schedule = tmpl::bare(schedule_conv);
  t.schedule_epilogue = schedule_conv;
  t.workload_default_config = [](const ConfigSpace& sp, const records::Workload& w) {
    // A first layer (ic_block 0: a few NCHW channels, each tap a strided broadcast) runs
    // best with the channels innermost in the reduction, half the tile of the blocked case
    // and rows outside the channel blocks (config 739 of ResNet-18's 7x7 stride-2 layer, 1.6x
    // config 31 at 1 thread; the tuner's best there are alike).
    const bool first_layer = blocks(w).ic == 0;
    tmpl::Preferences p;
    p.values["tile_oc"] = {-1, 2};
    p.values["tile_oh"] = {-1, 1};
    p.values["tile_ow"] = {-1, first_layer ? 7 : 14};
    p.values["reduce_order"] = first_layer ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{0, 1, 2};
    p.values["rows_outer"] = {first_layer ? 1 : 0};
    p.values["pad_inline"] = {0};
    p.labels["unroll_rci"] = "unroll";
    // Few channel blocks or narrow rows can make the preferred tile too big for the registers.
    return tmpl::closest_config(sp, p, [](const ConfigEntity& e) {
      return e.value("tile_oc").back() * e.value("tile_oh").back() * e.value("tile_ow").back() <= kMaxAccumulators;
    });
  };
  return t;
}

}  // namespace loom::tuner
