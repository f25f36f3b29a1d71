// "depthwise_conv2d_nchwc": the depthwise convolution (multiplier 1) of depthwise_conv2d_nchw
// on channel-blocked arrays, as a network laid out in NCHW{b}c calls it (MobileNetV2):
//   data   [N, C/b, H, W, b]
//   kernel [C/b, 1, R, S, 1, b]   (layout_transform of a [C,1,R,S] kernel to "OIHW1i{b}o")
//   out    [N, C/b, OH, OW, b]
// (te::ops::depthwise_conv2d_nchwc). Shape N,C,H,W,R,S and attrs stride, pad as
// depthwise_conv2d_nchw, the block as attr "block" (16 when absent), dividing C.
//
// Each channel block's output rows are tiled (tile_oh rows × tile_ow columns) and accumulated
// in a local register tile, one vector of b channels per output pixel: per kernel tap one
// weight vector and, per pixel, one dense input vector feed a fused multiply-add (where the
// NCHW template vectorizes along a row and its stride-2 layers gather, every access here is
// a whole vector). The window loops may be unrolled (unroll_ry, unroll_rx) and ordered
// around the tile's rows (order_rows); padding is its own stage, inlined or computed at the
// root (pad_inline). A fused epilogue runs on the tile before the store.
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using tmpl::kBlock;

// Vector registers a tile's accumulators may use (of 32 with AVX-512; the rest hold the
// weight and input vectors).
constexpr int64_t kMaxAccumulators = 28;

struct Dims {
  int64_t N, C, H, W, R, S, stride, pad, block, OH, OW;
};

Dims dims(const records::Workload& w) {
  Dims d{w.shape[0],
         w.shape[1],
         w.shape[2],
         w.shape[3],
         w.shape[4],
         w.shape[5],
         tmpl::int_attr(w, "stride", 1, 1),
         tmpl::int_attr(w, "pad", 0, 0),
         tmpl::int_attr(w, "block", kBlock, 1),
         0,
         0};
  d.OH = (d.H + 2 * d.pad - d.R) / d.stride + 1;
  d.OW = (d.W + 2 * d.pad - d.S) / d.stride + 1;
  return d;
}

void check(const records::Workload& w) {
  tmpl::check_shape(w, {"N", "C", "H", "W", "R", "S"});
  Dims d = dims(w);
  LOOM_CHECK(d.H + 2 * d.pad >= d.R && d.W + 2 * d.pad >= d.S,
             "{}: kernel {}x{} is larger than the padded input {}x{}", w.op, d.R, d.S, d.H + 2 * d.pad,
             d.W + 2 * d.pad);
  LOOM_CHECK(d.C % d.block == 0, "{}: channels C={} must be a multiple of the block {}", w.op, d.C, d.block);
  for (const auto& [k, v] : w.attrs)
    LOOM_CHECK(k == "stride" || k == "pad" || k == "block", "{}: unknown attribute '{}' (expected stride, pad, block)",
               w.op, k);
}

std::vector<Tensor> compute(const records::Workload& w) {
  Dims d = dims(w);
  Tensor data = te::placeholder({d.N, d.C / d.block, d.H, d.W, d.block}, DataType::Float(32), "data");
  Tensor kernel = te::placeholder({d.C / d.block, 1, d.R, d.S, 1, d.block}, DataType::Float(32), "kernel");
  return {data, kernel, te::ops::depthwise_conv2d_nchwc(data, kernel, {d.stride, d.stride}, {d.pad, d.pad})};
}

schedule::Schedule schedule_depthwise(ConfigContext& cfg, const Tensor& out, const Tensor& output, const Target&) {
  const int64_t OH = *te::as_const_int(out.shape()[2]), OW = *te::as_const_int(out.shape()[3]);
  const int64_t oh = cfg.split("tile_oh", OH, tmpl::tile_options(OH, 4)).back();
  const int64_t ow = cfg.split("tile_ow", OW, tmpl::tile_options(OW, kMaxAccumulators)).back();
  cfg.annotate("unroll_rx", {"unroll", "none"});
  cfg.annotate("unroll_ry", {"unroll", "none"});
  // Where the tile's rows sit among the window's loops: innermost (each weight vector loaded
  // once per tile), between ry and rx, or outermost.
  const std::vector<int64_t> order = cfg.reorder("order_rows", {{0, 1, 2}, {0, 2, 1}, {2, 0, 1}});
  if (!cfg.defining() && oh * ow > kMaxAccumulators)
    throw InstantiationError(fmt::format("register tile of {}x{} accumulators exceeds {}", oh, ow, kMaxAccumulators));

  Schedule s = tmpl::create_epilogue_schedule(out, output);
  tmpl::OutputTile tile = tmpl::output_tile(s, out, output);
  schedule::Stage so = tile.out, acc = tile.acc;
  auto ohp = cfg.apply_split("tile_oh", so, so.axis(2));
  auto owp = cfg.apply_split("tile_ow", so, so.axis(3));
  so.reorder({so.axis(0), so.axis(1), ohp[0], owp[0], ohp[1], owp[1], so.axis(4)});
  so.parallel(so.fuse({so.axis(0), so.axis(1), ohp[0]}));
  so.vectorize(so.axis(4));
  // The write-out unrolled, so that the accumulators stay in registers under an epilogue
  // that calls a function (SiLU's exp), as schedule_gemm's.
  so.unroll(ohp[1]);
  so.unroll(owp[1]);

  acc.compute_at(so, owp[0]);
  te::IterVar ry = acc.reduce_axis(0), rx = acc.reduce_axis(1);
  const te::IterVar window[3] = {ry, rx, acc.axis(2)};
  acc.reorder({acc.axis(0), acc.axis(1), window[order[0]], window[order[1]], window[order[2]], acc.axis(3),
               acc.axis(4)});
  cfg.apply_annotate("unroll_rx", acc, rx);
  cfg.apply_annotate("unroll_ry", acc, ry);
  acc.unroll(acc.axis(2));
  acc.unroll(acc.axis(3));
  acc.vectorize(acc.axis(4));

  tmpl::schedule_pad(cfg, s, out, {1, 0});
  return s;
}

}  // namespace

Template depthwise_conv2d_nchwc_template() {
  Template t;
  t.name = "depthwise_conv2d_nchwc";
  t.shape_doc = "N,C,H,W,R,S (attrs stride, pad, block (16) dividing C)";
  t.doc = "depthwise 2-D convolution (multiplier 1) on channel-blocked arrays: data NCHW{b}c, kernel OIHW1i{b}o, float32";
  t.check = check;
  t.flop = [](const records::Workload& w) {
    Dims d = dims(w);
    return 2.0 * double(d.N) * double(d.C) * double(d.OH) * double(d.OW) * double(d.R) * double(d.S);
  };
  t.compute = compute;
  t.schedule = tmpl::bare(schedule_depthwise);
  t.schedule_epilogue = schedule_depthwise;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["tile_oh"] = {-1, 2};
    p.values["tile_ow"] = {-1, 8};
    p.values["order_rows"] = {0, 1, 2};
    p.values["pad_inline"] = {1};
    p.labels["unroll_rx"] = "unroll";
    p.labels["unroll_ry"] = "unroll";
    return tmpl::closest_config(sp, p, [](const ConfigEntity& e) {
      return e.value("tile_oh").back() * e.value("tile_ow").back() <= kMaxAccumulators;
    });
  };
  return t;
}

}  // namespace loom::tuner
