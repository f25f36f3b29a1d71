// Registry entries of the integer convolutions: conv2d_int8 (NCHW, as importers emit it) and
// conv2d_nchwc_int8 (channel-blocked, alter_layout's form; the int8 template anchors it),
// and pack_int8_kernel (the weight layout of the latter, folded on constant weights).
#include <fmt/format.h>

#include "loom/te/ops/qnn.h"
#include "op_util.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

using Types = std::vector<TensorType>;

AttrSpec strides_attr() { return attr("strides", AttrKind::kInts, std::vector<int64_t>{1, 1}, "{h, w}"); }
AttrSpec dilation_attr() { return attr("dilation", AttrKind::kInts, std::vector<int64_t>{1, 1}, "{h, w}"); }

/// The int32 bias [K] added along the output channels (blocked when `layout` says so).
Tensor with_bias(Tensor out, const std::vector<Tensor>& in, const std::string& layout) {
  if (in.size() < 3) return out;
  LOOM_CHECK(in[2].dtype() == DataType::Int(32), "{}: bias must be int32, got {}", out.name(), in[2].dtype().str());
  return bias_add(out, in[2], 1, layout, "bias_add");
}

OpDef conv2d_int8_op() {
  OpDef d;
  d.name = "conv2d_int8";
  d.doc = "2-D convolution of uint8 NCHW data with an int8 OIHW weight accumulated in int32 (+ int32 bias [K]); "
          "groups as conv2d (ONNX ConvInteger, the core of QLinearConv and QDQ convolutions)";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = {strides_attr(),
             attr("padding", AttrKind::kInts, std::vector<int64_t>{0, 0}, "{h, w} or {top, left, bottom, right}, zeros"),
             dilation_attr(), attr("groups", AttrKind::kInt, int64_t(1), "channel groups (C for depthwise)")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    Padding p = attr_padding(a);
    Tensor data = pad_asymmetric(in[0], p);
    Tensor out = conv2d_int8(data, in[1], attr_pair(a, "strides", true), p.pair(), attr_pair(a, "dilation", true),
                             attr_int(a, "groups"), "conv2d_int8");
    return {with_bias(out, in, "")};
  };
  return d;
}

OpDef conv2d_nchwc_int8_op() {
  OpDef d;
  d.name = "conv2d_nchwc_int8";
  d.doc = "conv2d_int8 on channel-blocked arrays: uint8 data NCHW16c, int8 weight [K/16,C/16,R,S,4,16,4] "
          "(pack_int8_kernel), int32 bias [K] -> int32 NCHW16c";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = {strides_attr(), attr("padding", AttrKind::kInts, std::vector<int64_t>{0, 0}, "{h, w} (both sides alike)")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    Padding p = attr_padding(a);
    LOOM_CHECK(p.symmetric(), "conv2d_nchwc_int8: asymmetric padding {{{}, {}, {}, {}}}; give {{h, w}}", p.top, p.left,
               p.bottom, p.right);
    Tensor out = conv2d_nchwc_int8(in[0], in[1], attr_pair(a, "strides", true), p.pair(), "conv2d_nchwc_int8");
    return {with_bias(out, in, fmt::format("NCHW{}c", kInt8Block))};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    check_layout("conv2d_nchwc_int8", "data", in[0], fmt::format("NCHW{}c", kInt8Block));
    Types t = infer_from_compute(d, in, a);
    t[0].layout = fmt::format("NCHW{}c", kInt8Block);
    return t;
  };
  d.strategy["llvm"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    const Pair s = attr_pair(a, "strides", true);
    const Padding p = attr_padding(a);
    if (s[0] != s[1] || !p.symmetric() || p.top != p.left) return std::nullopt;
    const auto &x = in[0].shape, &w = in[1].shape;
    return with_bias_finish({"conv2d_nchwc_int8",
                             {x[0], x[1] * kInt8Block, x[2], x[3], w[0] * kInt8Block, w[2], w[3]},
                             "int8",
                             {{"stride", std::to_string(s[0])}, {"pad", std::to_string(p.top)}}},
                            1, fmt::format("NCHW{}c", kInt8Block));
  };
  return d;
}

OpDef pack_int8_kernel_op() {
  OpDef d;
  d.name = "pack_int8_kernel";
  d.doc = "an int8 OIHW weight [K,C,R,S] (K, C multiples of 16) as conv2d_nchwc_int8 reads it: [K/16,C/16,R,S,4,16,4]";
  d.inputs = {"weight"};
  d.min_inputs = 1;
  d.pattern = OpPattern::kInjective;
  d.compute = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
    return {pack_int8_kernel(in[0], "pack_int8_kernel")};
  };
  return d;
}

}  // namespace

std::vector<OpDef> qnn_ops() { return {conv2d_int8_op(), conv2d_nchwc_int8_op(), pack_int8_kernel_op()}; }

}  // namespace loom::te::ops::detail
