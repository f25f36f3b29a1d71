// "conv2d_nchwc_int8": the convolution of conv2d_nchw with uint8 data, int8 weights and
// int32 accumulation, on channel-blocked arrays with a 4-deep inner reduction (the layouts
// TVM's conv2d_NCHWc_int8 and oneDNN's VNNI kernels use):
//   data   uint8 [N, C/16, H, W, 16c]                     (nChw16c)
//   kernel int8  [K/16, C/16, R, S, 4, 16k, 4]            (OIhw4i16o4i: input channel
//                c of a block at [.., c/4, k, c%4])
//   bias   int32 [K], only when the output is requantized
//   out    int32 [N, K/16, OH, OW, 16k], or requantize(out + bias) as int8/uint8 with attrs
//          out_dtype, scale, zero_point (int8.h)
// Shape and attrs stride and pad are the logical ones of conv2d_nchw; C and K must be
// multiples of 16. Padding (with 0) is a stage of its own computed first (pad_inline 0), or
// inlined (pad_inline 1): the dot products on the padding are then skipped, not computed
// on zeros (lower/tensorize.cc runs each under the padding's condition; loop_partition
// bounds the kernel-row loop of border rows, and the kernel-column loop, unrolled here,
// folds the column checks).
//
// The output is computed in register tiles of tile_oc 16-channel blocks × tile_oh rows ×
// tile_ow columns: for every 4 input channels one dot product (te::dot_u8s8s32: vpdpbusd
// with AVX-512 VNNI) per accumulator, a broadcast of 4 data bytes per output pixel and a
// 64-byte kernel load per output-channel block. The reduction runs over channel blocks,
// kernel rows and columns in the order reduce_order, then the 4 groups of 4 channels of a
// block (unrolled with unroll_rc).
#include <loom/te/ops/qnn.h>
#include <loom/te/tensor_intrinsics.h>

#include "int8.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using te::Var;
using int8::kLanes;

tmpl::ConvDims check(const records::Workload& w) {
  int8::check_workload(w, {"N", "C", "H", "W", "K", "R", "S"}, {"stride", "pad"});
  tmpl::ConvDims d = tmpl::conv_dims(w);
  LOOM_CHECK(d.H + 2 * d.pad >= d.R && d.W + 2 * d.pad >= d.S,
             "{}: kernel {}x{} is larger than the padded input {}x{}", w.op, d.R, d.S, d.H + 2 * d.pad,
             d.W + 2 * d.pad);
  LOOM_CHECK(d.C % kLanes == 0 && d.K % kLanes == 0,
             "{}: input channels C={} and output channels K={} must be multiples of {}", w.op, d.C, d.K, kLanes);
  return d;
}

std::vector<Tensor> compute(const records::Workload& w) {
  const tmpl::ConvDims d = check(w);
  const int8::Requant q = int8::check_workload(w, {"N", "C", "H", "W", "K", "R", "S"}, {"stride", "pad"});
  const int64_t CB = d.C / kLanes, KB = d.K / kLanes, D = int8::kDepth;
  Tensor data = te::placeholder({d.N, CB, d.H, d.W, kLanes}, DataType::UInt(8), "data");
  Tensor kernel = te::placeholder({KB, CB, d.R, d.S, kLanes / D, kLanes, D}, DataType::Int(8), "kernel");
  Tensor conv = te::ops::conv2d_nchwc_int8(data, kernel, {d.stride, d.stride}, {d.pad, d.pad}, "conv");
  if (!q.enabled()) return {data, kernel, conv};
  Tensor bias = te::placeholder({d.K}, DataType::Int(32), "bias");
  Tensor out = te::compute(
      {d.N, KB, d.OH, d.OW, kLanes},
      [&](Var n, Var kb, Var oh, Var ow, Var v) {
        return int8::requantize(q, conv(n, kb, oh, ow, v) + bias(kb * kLanes + v));
      },
      "requantize", "elemwise");
  return {data, kernel, bias, out};
}

/// `out` is the int32 convolution (the template's "conv", or a fused kernel's anchor) and
/// `output` what the kernel stores: `out` itself, or an elementwise epilogue of it (the
/// template's own requantization, or a graph's).
schedule::Schedule schedule_conv(ConfigContext& cfg, const Tensor& out, const Tensor& output, const Target&) {
  const int64_t KB = *te::as_const_int(out.shape()[1]), OH = *te::as_const_int(out.shape()[2]),
                OW = *te::as_const_int(out.shape()[3]);

  SplitOptions toc;
  toc.max_factor = 4;
  const int64_t oc = cfg.split("tile_oc", KB, toc).back();
  const int64_t oh = cfg.split("tile_oh", OH, int8::tile_options(OH, 2)).back();
  const int64_t ow = cfg.split("tile_ow", OW, int8::tile_options(OW, int8::kMaxAccumulators)).back();
  std::vector<int64_t> order = cfg.reorder("reduce_order", tmpl::permutations(3));
  cfg.annotate("unroll_rc", {"unroll", "none"});
  const int64_t rows_outer = cfg.choice("rows_outer", {0, 1});
  if (!cfg.defining() && oc * oh * ow > int8::kMaxAccumulators)
    throw InstantiationError(fmt::format("register tile of {}x{}x{} accumulators exceeds {}", oc, oh, ow,
                                         int8::kMaxAccumulators));

  Schedule s = tmpl::create_epilogue_schedule(out, output);
  const bool pad_inline = tmpl::schedule_pad(cfg, s, out, {0, 1});
  tmpl::OutputTile tile = tmpl::output_tile(s, out, output);
  schedule::Stage acc = tile.acc;
  schedule::Stage so = tile.out;
  auto kbp = cfg.apply_split("tile_oc", so, so.axis(1));
  auto ohp = cfg.apply_split("tile_oh", so, so.axis(2));
  auto owp = cfg.apply_split("tile_ow", so, so.axis(3));
  std::vector<te::IterVar> outer = rows_outer ? std::vector<te::IterVar>{so.axis(0), ohp[0], kbp[0]}
                                              : std::vector<te::IterVar>{so.axis(0), kbp[0], ohp[0]};
  so.reorder({outer[0], outer[1], outer[2], owp[0], kbp[1], ohp[1], owp[1], so.axis(4)});
  so.parallel(so.fuse(outer));
  so.vectorize(so.axis(4));
  tmpl::unroll_tile(so, {kbp[1], ohp[1], owp[1]});

  acc.compute_at(so, owp[0]);
  std::vector<te::IterVar> red{acc.reduce_axis(0), acc.reduce_axis(1), acc.reduce_axis(2)};
  const te::IterVar rc4 = acc.reduce_axis(3), rc1 = acc.reduce_axis(4);
  std::vector<te::IterVar> acc_order{acc.axis(0)};
  for (int64_t i : order) acc_order.push_back(red[size_t(i)]);
  acc_order.insert(acc_order.end(), {rc4, acc.axis(2), acc.axis(3), acc.axis(1), acc.axis(4), rc1});
  acc.reorder(acc_order);
  cfg.apply_annotate("unroll_rc", acc, rc4);
  acc.unroll(acc.axis(1));
  acc.unroll(acc.axis(2));
  acc.unroll(acc.axis(3));
  if (pad_inline) acc.unroll(red[2]);
  acc.tensorize(acc.axis(4), te::dot_u8s8s32(int(kLanes)));
  return s;
}

}  // namespace

Template conv2d_nchwc_int8_template() {
  Template t;
  t.name = "conv2d_nchwc_int8";
  t.shape_doc = "N,C,H,W,K,R,S (dtype int8; attrs stride, pad, out_dtype, scale, zero_point; C, K multiples of 16)";
  t.doc = "2-D convolution, uint8 data NCHW16c x int8 kernel OIHW4i16o4i -> int32 NCHW16c; requantized to "
          "int8/uint8 with out_dtype";
  t.check = [](const records::Workload& w) { check(w); };
  t.flop = [](const records::Workload& w) { return tmpl::conv_dims(w).flop(); };
  t.compute = compute;
  t.schedule = [](ConfigContext& cfg, const std::vector<Tensor>& args, const Target& target) {
    const Tensor out = args.back();
    return schedule_conv(cfg, args.size() == 4 ? tmpl::find_input(out, "conv") : out, out, target);
  };
  t.schedule_epilogue = schedule_conv;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["tile_oc"] = {-1, 2};
    p.values["tile_oh"] = {-1, 1};
    p.values["tile_ow"] = {-1, 14};
    p.values["reduce_order"] = {0, 1, 2};
    p.values["rows_outer"] = {0};
    p.labels["unroll_rc"] = "unroll";
    // The closest tile within the accumulator limit (e.g. 3 channel blocks cannot take 14 columns).
    return tmpl::closest_config(sp, p, [](const ConfigEntity& e) {
      return e.value("tile_oc").back() * e.value("tile_oh").back() * e.value("tile_ow").back() <=
             int8::kMaxAccumulators;
    });
  };
  return t;
}

}  // namespace loom::tuner
