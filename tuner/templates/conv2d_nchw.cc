// "conv2d_nchw": out[N,K,OH,OW] = conv(data[N,C,H,W], kernel[K,C,R,S]) in float32, with
// attrs stride and pad (both spatial dims alike).
//
// NCHWc-style blocking: the kernel is packed into [ceil(K/16), C, R, S, 16] (te::ops::
// layout_transform "OIHW" -> "OIHW16o") and the convolution (te::ops::conv2d_nchwc of NCHW
// data) computes a blocked result [N, ceil(K/16), OH, OW, 16], accumulating a register tile of
// tile_oc 16-channel blocks × tile_ow output columns (vectorized over channels) over the
// reduction in the order reduce_order; a last stage unpacks it into NCHW (layout_transform
// back, cropping the padded channels). A fused epilogue is applied in that unpacking stage,
// which reads each value once from the blocked result: the blocked tile cannot hold an NCHW
// epilogue's operands without gathers. Padding is its own stage, inlined or computed at the
// root (pad_inline).
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
  const std::string blocked = fmt::format("NCHW{}c", kBlock);
  Tensor P = te::ops::layout_transform(kernel, "OIHW", fmt::format("OIHW{}o", kBlock), {}, "packed_kernel");
  Tensor conv = te::ops::conv2d_nchwc(data, P, {d.stride, d.stride}, {d.pad, d.pad}, {1, 1}, "conv_blocked");
  Tensor out = te::ops::layout_transform(conv, blocked, "NCHW", {d.N, d.K, d.OH, d.OW}, "conv2d_nchw");
  return {data, kernel, out};
}

schedule::Schedule schedule_conv(ConfigContext& cfg, const Tensor& anchor, const Tensor& output, const Target&) {
  Tensor conv = tmpl::find_input(anchor, "conv_blocked");
  Tensor P = tmpl::find_input(anchor, "packed_kernel");
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

  Schedule s = tmpl::create_epilogue_schedule(anchor, output);
  Tensor CC = s.cache_write(conv, "local");
  schedule::Stage sc = s[conv], acc = s[CC], so = s[output];
  if (anchor != output) s[anchor].compute_inline();

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
  tmpl::schedule_pad(cfg, s, anchor, {1, 0});
  return s;
}

}  // namespace

Template conv2d_nchw_template() {
  Template t;
  t.name = "conv2d_nchw";
  t.shape_doc = "N,C,H,W,K,R,S (attrs stride, pad)";
  t.doc = "2-D convolution, NCHW data, KCRS kernel, float32, output channels blocked by 16";
  t.check = [](const records::Workload& w) { tmpl::check_conv(w); };
  t.flop = [](const records::Workload& w) { return tmpl::conv_dims(w).flop(); };
  t.compute = compute;
  t.schedule = tmpl::bare(schedule_conv);
  t.schedule_epilogue = schedule_conv;
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
