// "depthwise_conv2d_nchw": out[N,C,OH,OW] = depthwise conv of data[N,C,H,W] with
// kernel[C,1,R,S] in float32, attrs stride and pad.
//
// Each channel's output rows are tiled (tile_oh rows × tile_ow columns, the columns
// vectorized) and accumulated in a local tile over the kernel window, whose loops may be
// unrolled (unroll_ry, unroll_rx) and ordered around the tile's rows (order_rows); padding is
// its own stage, inlined or computed at the root (pad_inline). A fused epilogue runs on the
// tile before the store.
#include <algorithm>

#include "templates.h"

namespace loom::tuner {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

struct Dims {
  int64_t N, C, H, W, R, S, stride, pad, OH, OW;
};

Dims dims(const records::Workload& w) {
  Dims d{w.shape[0], w.shape[1], w.shape[2], w.shape[3], w.shape[4], w.shape[5],
         tmpl::int_attr(w, "stride", 1, 1), tmpl::int_attr(w, "pad", 0, 0), 0, 0};
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
  for (const auto& [k, v] : w.attrs)
    LOOM_CHECK(k == "stride" || k == "pad", "{}: unknown attribute '{}' (expected stride, pad)", w.op, k);
}

std::vector<Tensor> compute(const records::Workload& w) {
  Dims d = dims(w);
  Tensor data = te::placeholder({d.N, d.C, d.H, d.W}, DataType::Float(32), "data");
  Tensor kernel = te::placeholder({d.C, int64_t(1), d.R, d.S}, DataType::Float(32), "kernel");
  return {data, kernel, te::ops::depthwise_conv2d_nchw(data, kernel, {d.stride, d.stride}, {d.pad, d.pad})};
}

schedule::Schedule schedule_depthwise(ConfigContext& cfg, const Tensor& out, const Tensor& output, const Target&) {
  const int64_t OH = *te::as_const_int(out.shape()[2]), OW = *te::as_const_int(out.shape()[3]);
  cfg.split("tile_oh", OH, tmpl::tile_options(OH, 8));
  cfg.split("tile_ow", OW, tmpl::tile_options(OW, 32));
  cfg.annotate("unroll_rx", {"unroll", "none"});
  cfg.annotate("unroll_ry", {"unroll", "none"});
  // Where the tile's rows sit among the kernel window's loops: innermost (each weight loaded
  // once per tile and applied to every row), between ry and rx, or outermost (each row
  // accumulated over the whole window before the next).
  const std::vector<int64_t> order = cfg.reorder("order_rows", {{0, 1, 2}, {0, 2, 1}, {2, 0, 1}});

  Schedule s = tmpl::create_epilogue_schedule(out, output);
  tmpl::OutputTile tile = tmpl::output_tile(s, out, output);
  schedule::Stage so = tile.out, acc = tile.acc;
  auto ohp = cfg.apply_split("tile_oh", so, so.axis(2));
  auto owp = cfg.apply_split("tile_ow", so, so.axis(3));
  so.reorder({so.axis(0), so.axis(1), ohp[0], owp[0], ohp[1], owp[1]});
  so.parallel(so.fuse(so.axis(0), so.axis(1)));
  so.vectorize(owp[1]);
  tmpl::unroll_tile(so, {ohp[1]});

  acc.compute_at(so, owp[0]);
  te::IterVar ry = acc.reduce_axis(0), rx = acc.reduce_axis(1);
  const te::IterVar window[3] = {ry, rx, acc.axis(2)};
  acc.reorder({acc.axis(0), acc.axis(1), window[order[0]], window[order[1]], window[order[2]], acc.axis(3)});
  cfg.apply_annotate("unroll_rx", acc, rx);
  cfg.apply_annotate("unroll_ry", acc, ry);
  acc.unroll(acc.axis(2));
  acc.vectorize(acc.axis(3));

  tmpl::schedule_pad(cfg, s, out, {1, 0});
  return s;
}

}  // namespace

Template depthwise_conv2d_nchw_template() {
  Template t;
  t.name = "depthwise_conv2d_nchw";
  t.shape_doc = "N,C,H,W,R,S (attrs stride, pad)";
  t.doc = "depthwise 2-D convolution (multiplier 1), NCHW data, C1RS kernel, float32";
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
    // The config with the best geometric mean, relative to each shape's best, over whole-space
    // passes of seven MobileNet-like shapes on an AVX2 host (0.87; docs/benchmarks.md).
    p.values["tile_oh"] = {-1, 8};
    p.values["tile_ow"] = {-1, 8};
    p.values["order_rows"] = {2, 0, 1};
    p.values["pad_inline"] = {1};
    p.labels["unroll_rx"] = "unroll";
    p.labels["unroll_ry"] = "unroll";
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
