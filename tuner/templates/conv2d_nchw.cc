// "conv2d_nchw": out[N,K,OH,OW] = conv(data[N,C,H,W], kernel[K,C,R,S]) in float32, with
// attrs stride and pad (both spatial dims alike).
//
// NCHWc-style blocking: the kernel is packed into [ceil(K/16), C, R, S, 16] and the
// convolution computes a blocked result [N, ceil(K/16), OH, OW, 16], accumulating a register
// tile of tile_oc 16-channel blocks × tile_ow output columns (vectorized over channels) over
// the reduction in the order reduce_order; a last stage unpacks it into NCHW. Padding is its
// own stage, inlined or computed at the root (pad_inline).
#include <algorithm>

#include "templates.h"

namespace loom::tuner {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;
using tmpl::kBlock;

std::vector<Tensor> compute(const records::Workload& w) {
  tmpl::ConvDims d = tmpl::conv_dims(w);
  Tensor data = te::placeholder({d.N, d.C, d.H, d.W}, DataType::Float(32), "data");
  Tensor kernel = te::placeholder({d.K, d.C, d.R, d.S}, DataType::Float(32), "kernel");
  Tensor in = d.pad > 0 ? te::ops::pad(data, {0, 0, d.pad, d.pad}) : data;
  Tensor P = te::compute(
      {tmpl::ceil_div(d.K, kBlock), d.C, d.R, d.S, kBlock},
      [&](Var kb, Var c, Var r, Var s, Var v) {
        Expr k = kb * int64_t(kBlock) + v;
        if (d.K % kBlock == 0) return kernel(k, c, r, s);
        return te::select(k < d.K, kernel(te::min(k, Expr(d.K - 1)), c, r, s), Expr(0.0f));
      },
      "packed_kernel", "injective");
  te::IterVar rc = te::reduce_axis({0, d.C}, "rc");
  te::IterVar ry = te::reduce_axis({0, d.R}, "ry");
  te::IterVar rx = te::reduce_axis({0, d.S}, "rx");
  Tensor conv = te::compute(
      {d.N, tmpl::ceil_div(d.K, kBlock), d.OH, d.OW, kBlock},
      [&](Var n, Var kb, Var oh, Var ow, Var v) {
        return te::sum(in(n, rc, oh * d.stride + ry, ow * d.stride + rx) * P(kb, rc, ry, rx, v), {rc, ry, rx});
      },
      "conv_blocked", "conv2d_nchw");
  Tensor out = te::compute(
      {d.N, d.K, d.OH, d.OW},
      [&](Var n, Var k, Var oh, Var ow) {
        return conv(n, te::floordiv(k, int64_t(kBlock)), oh, ow, te::floormod(k, int64_t(kBlock)));
      },
      "conv2d_nchw", "conv2d_nchw");
  return {data, kernel, out};
}

schedule::Schedule schedule_conv(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor out = args[2];
  Tensor conv = tmpl::find_input(out, "conv_blocked");
  Tensor P = tmpl::find_input(out, "packed_kernel");
  const int64_t KB = *te::as_const_int(conv.shape()[1]), OW = *te::as_const_int(conv.shape()[3]);

  SplitOptions toc;
  toc.max_factor = 4;
  cfg.split("tile_oc", KB, toc);
  SplitOptions tow;
  tow.policy = SplitOptions::kCandidates;
  for (int64_t f = 1; f <= std::min<int64_t>(OW, 16); ++f)
    if (OW % f == 0 || f == 4 || f == 8 || f == 16) tow.candidates.push_back({-1, f});
  cfg.split("tile_ow", OW, tow);
  std::vector<int64_t> order = cfg.reorder("reduce_order", tmpl::permutations(3));
  cfg.annotate("unroll_rx", {"unroll", "none"});

  Schedule s = create_schedule({out});
  Tensor CC = s.cache_write(conv, "local");
  schedule::Stage sc = s[conv], acc = s[CC], so = s[out];

  auto kbp = cfg.apply_split("tile_oc", sc, sc.axis(1));
  auto owp = cfg.apply_split("tile_ow", sc, sc.axis(3));
  sc.reorder({sc.axis(0), kbp[0], sc.axis(2), owp[0], kbp[1], owp[1], sc.axis(4)});
  sc.parallel(sc.fuse({sc.axis(0), kbp[0], sc.axis(2)}));
  sc.vectorize(sc.axis(4));

  acc.compute_at(sc, owp[0]);
  std::vector<te::IterVar> red{acc.reduce_axis(0), acc.reduce_axis(1), acc.reduce_axis(2)};
  std::vector<te::IterVar> acc_order{acc.axis(0), acc.axis(2)};
  for (int64_t i : order) acc_order.push_back(red[i]);
  // Channel blocks innermost: each broadcast input value is used by all of them at once (see
  // conv2d_nchwc.cc).
  acc_order.insert(acc_order.end(), {acc.axis(3), acc.axis(1), acc.axis(4)});
  acc.reorder(acc_order);
  cfg.apply_annotate("unroll_rx", acc, red[order[2]]);
  acc.unroll(acc.axis(1));
  acc.unroll(acc.axis(3));
  acc.vectorize(acc.axis(4));

  so.parallel(so.fuse(so.axis(0), so.axis(1)));
  tmpl::schedule_pack(s[P]);
  tmpl::schedule_pad(cfg, s, out, {1, 0});
  return s;
}

}  // namespace

Template conv2d_nchw_template() {
  Template t;
  t.name = "conv2d_nchw";
  t.shape_doc = "N,C,H,W,K,R,S (attrs stride, pad)";
  t.doc = "2-D convolution, NCHW data, KCRS kernel, float32, output channels blocked by 16";
  t.check = tmpl::check_conv;
  t.flop = [](const records::Workload& w) { return tmpl::conv_dims(w).flop(); };
  t.compute = compute;
  t.schedule = schedule_conv;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["tile_oc"] = {-1, 2};
    p.values["tile_ow"] = {-1, 8};
    p.values["reduce_order"] = {0, 1, 2};
    p.values["pad_inline"] = {1};
    p.labels["unroll_rx"] = "unroll";
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
