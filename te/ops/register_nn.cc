// Registry entries of the neural-network operators: convolutions, dense and matmul (the
// anchors of fused kernels, with a template per target), pooling, normalization.
#include <fmt/format.h>

#include "op_util.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

using Types = std::vector<TensorType>;

AttrSpec strides_attr() { return attr("strides", AttrKind::kInts, std::vector<int64_t>{1, 1}, "{h, w}"); }
AttrSpec padding_attr() {
  return attr("padding", AttrKind::kInts, std::vector<int64_t>{0, 0}, "{h, w} or {top, left, bottom, right}");
}
AttrSpec dilation_attr() { return attr("dilation", AttrKind::kInts, std::vector<int64_t>{1, 1}, "{h, w}"); }

std::string str(int64_t v) { return std::to_string(v); }

/// The conv templates take one stride and one padding for both spatial dims and no dilation.
bool template_window(const Attrs& a, int64_t* stride, int64_t* pad) {
  Pair s = attr_pair(a, "strides", true), d = attr_pair(a, "dilation", true);
  Padding p = attr_padding(a);
  if (s[0] != s[1] || d[0] != 1 || d[1] != 1 || !p.symmetric() || p.top != p.left) return false;
  *stride = s[0];
  *pad = p.top;
  return true;
}

/// Output types from the compute, with the output layout set.
Types with_layout(const OpDef& def, const Types& in, const Attrs& a, const std::string& layout) {
  Types t = infer_from_compute(def, in, a);
  for (TensorType& o : t) o.layout = layout;
  return t;
}

// ---------------------------------------------------------------- conv2d

OpDef conv2d() {
  OpDef d;
  d.name = "conv2d";
  d.doc = "2-D convolution, NCHW data with OIHW weight (or NHWC with HWIO), groups, dilation, optional bias [K]";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = {strides_attr(), padding_attr(), dilation_attr(),
             attr("groups", AttrKind::kInt, int64_t(1), "channel groups (C for depthwise)"),
             attr("layout", AttrKind::kString, std::string("NCHW"), "\"NCHW\" (weight OIHW) or \"NHWC\" (weight HWIO)")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const std::string& layout = attr_str(a, "layout");
    LOOM_CHECK(layout == "NCHW" || layout == "NHWC", "conv2d: layout must be \"NCHW\" or \"NHWC\", got \"{}\"", layout);
    const bool nhwc = layout == "NHWC";
    Pair stride = attr_pair(a, "strides", true), dil = attr_pair(a, "dilation", true);
    Padding p = attr_padding(a);
    const int64_t groups = attr_int(a, "groups");
    Tensor data = in[0];
    if (!p.symmetric()) {
      LOOM_CHECK(!nhwc, "conv2d: asymmetric padding needs layout NCHW");
      data = pad_asymmetric(data, p);
    }
    Tensor out;
    if (nhwc) {
      out = conv2d_nhwc(data, in[1], stride, p.pair(), dil, groups, "conv2d");
    } else {
      auto ds = const_shape(data, "conv2d", "data"), ws = const_shape(in[1], "conv2d", "weight");
      // Depthwise with multiplier 1: the depthwise compute reads the same [C,1,R,S] weight.
      if (ds.size() == 4 && ws.size() == 4 && groups > 1 && groups == ds[1] && ws[0] == ds[1] && ws[1] == 1)
        out = depthwise_conv2d_nchw(data, in[1], stride, p.pair(), dil, "conv2d");
      else
        out = conv2d_nchw(data, in[1], stride, p.pair(), dil, groups, "conv2d");
    }
    if (in.size() > 2) out = bias_add(out, in[2], nhwc ? 3 : 1, "", "bias_add");
    return {out};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    check_layout("conv2d", "data", in[0], attr_str(a, "layout"));
    return with_layout(d, in, a, attr_str(a, "layout"));
  };
  auto nchw_call = [](const Types& in, const Attrs& a, bool cuda) -> std::optional<TemplateCall> {
    int64_t stride = 0, pad = 0;
    if (attr_str(a, "layout") != "NCHW" || !is_f32(in[0]) || !template_window(a, &stride, &pad)) return std::nullopt;
    const auto &x = in[0].shape, &w = in[1].shape;
    const int64_t groups = attr_int(a, "groups");
    std::map<std::string, std::string> at{{"stride", str(stride)}, {"pad", str(pad)}};
    if (groups == 1)
      return with_bias_finish({"conv2d_nchw", {x[0], x[1], x[2], x[3], w[0], w[2], w[3]}, "float32", at}, 1);
    if (groups == x[1] && w[0] == x[1] && w[1] == 1) {
      if (cuda)
        return with_bias_finish({"depthwise_conv2d_nchw", {x[0], x[1], x[2], x[3], w[0], w[2], w[3]}, "float32", at}, 1);
      return with_bias_finish({"depthwise_conv2d_nchw", {x[0], x[1], x[2], x[3], w[2], w[3]}, "float32", at}, 1);
    }
    return std::nullopt;
  };
  d.strategy["llvm"] = [nchw_call](const Types& in, const Attrs& a) { return nchw_call(in, a, false); };
  d.strategy["cuda"] = [nchw_call](const Types& in, const Attrs& a) { return nchw_call(in, a, true); };
  return d;
}

OpDef conv2d_nchwc_op() {
  OpDef d;
  d.name = "conv2d_nchwc";
  d.doc = "2-D convolution on channel-blocked data NCHW{ib}c with a pre-blocked weight OIHW{ib}i{ob}o -> NCHW{ob}c";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = {strides_attr(), padding_attr(), dilation_attr(),
             attr("layout", AttrKind::kString, std::string("NCHW16c"),
                  "data layout NCHW{ib}c (weight OIHW{ib}i{ob}o), or NCHW (weight OIHW{ob}o)"),
             attr("out_layout", AttrKind::kString, std::string(""),
                  "NCHW{ob}c, ob the weight's last dim (\"\": that one)")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const std::string& layout = attr_str(a, "layout");
    int64_t ib = nchw_block("conv2d_nchwc", layout);
    auto ds = const_shape(in[0], "conv2d_nchwc", "data");
    LOOM_CHECK(ds.size() == (ib ? 5u : 4u) && (!ib || ds[4] == ib),
               "conv2d_nchwc: data is {} but the layout \"{}\" says {}", shape_str(ds), layout,
               ib ? fmt::format("[N,C/{0},H,W,{0}]", ib) : "[N,C,H,W]");
    Tensor data = in[0];
    Padding p = attr_padding(a);
    if (!p.symmetric()) data = pad_asymmetric(data, p);
    Tensor out = conv2d_nchwc(data, in[1], attr_pair(a, "strides", true), p.pair(), attr_pair(a, "dilation", true),
                              "conv2d_nchwc");
    const int64_t ob = *as_const_int(out.shape().back());
    const std::string& ol = attr_str(a, "out_layout");
    LOOM_CHECK(ol.empty() || ol == fmt::format("NCHW{}c", ob),
               "conv2d_nchwc: out_layout \"{}\" does not match the weight's output block {} (NCHW{}c)", ol, ob, ob);
    if (in.size() > 2) out = bias_add(out, in[2], 1, fmt::format("NCHW{}c", ob), "bias_add");
    return {out};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    check_layout("conv2d_nchwc", "data", in[0], attr_str(a, "layout"));
    Types t = infer_from_compute(d, in, a);
    t[0].layout = fmt::format("NCHW{}c", t[0].shape.back());
    return t;
  };
  d.strategy["llvm"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    int64_t stride = 0, pad = 0;
    if (!is_f32(in[0]) || !template_window(a, &stride, &pad)) return std::nullopt;
    const auto &x = in[0].shape, &w = in[1].shape;
    // NCHW data (a first layer) is the template's ic_block 0.
    const bool blocked = x.size() == 5;
    const int64_t ib = blocked ? x[4] : 0, ob = w.back(), C = blocked ? x[1] * ib : x[1];
    TemplateCall c{"conv2d_nchwc", {x[0], C, x[2], x[3], w[0] * ob, w[2], w[3]}, "float32",
                   {{"stride", str(stride)}, {"pad", str(pad)}}};
    if (ib != 16) c.attrs["ic_block"] = str(ib);
    if (ob != 16) c.attrs["oc_block"] = str(ob);
    return with_bias_finish(std::move(c), 1, fmt::format("NCHW{}c", ob));
  };
  return d;
}

OpDef winograd_weight_transform_op() {
  OpDef d;
  d.name = "winograd_weight_transform";
  d.doc = "Winograd weight transform G g G^T of F(m x m, 3x3): OIHW{ib}i{ob}o [K/ob,C/ib,3,3,ib,ob] -> "
          "[m+2,m+2,K/ob,C/ib,ib,ob] (a constant weight folds at compile time)";
  d.inputs = {"weight"};
  d.min_inputs = 1;
  d.attrs = {attr("tile_size", AttrKind::kInt, int64_t(4), "m: output tiles of m x m, in [2, 6]")};
  // Fuses with nothing: on a constant weight it is folded, on a computed one a kernel of its own.
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {winograd_weight_transform(in[0], attr_int(a, "tile_size"), "winograd_weight_transform")};
  };
  return d;
}

OpDef conv2d_nchwc_winograd_op() {
  OpDef d;
  d.name = "conv2d_nchwc_winograd";
  d.doc = "3x3 convolution (stride 1) by Winograd F(m x m, 3x3) on NCHW{ib}c data with a weight from "
          "winograd_weight_transform -> NCHW{ob}c";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = {attr("padding", AttrKind::kInts, std::vector<int64_t>{1, 1}, "{h, w} (both sides alike), each 0..2"),
             attr("layout", AttrKind::kString, std::string("NCHW16c"), "data layout NCHW{ib}c"),
             attr("out_layout", AttrKind::kString, std::string(""),
                  "NCHW{ob}c, ob the weight's last dim (\"\": that one)")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const std::string& layout = attr_str(a, "layout");
    const int64_t ib = nchw_block("conv2d_nchwc_winograd", layout);
    auto ds = const_shape(in[0], "conv2d_nchwc_winograd", "data");
    LOOM_CHECK(ib > 0 && ds.size() == 5 && ds[4] == ib, "conv2d_nchwc_winograd: data is {} but the layout is \"{}\"",
               shape_str(ds), layout);
    Padding p = attr_padding(a);
    LOOM_CHECK(p.symmetric(), "conv2d_nchwc_winograd: asymmetric padding {{{}, {}, {}, {}}} is not supported; give {{h, w}}",
               p.top, p.left, p.bottom, p.right);
    Tensor out = conv2d_nchwc_winograd(in[0], in[1], p.pair(), "conv2d_nchwc_winograd");
    const int64_t ob = *as_const_int(out.shape().back());
    const std::string& ol = attr_str(a, "out_layout");
    LOOM_CHECK(ol.empty() || ol == fmt::format("NCHW{}c", ob),
               "conv2d_nchwc_winograd: out_layout \"{}\" does not match the weight's output block {} (NCHW{}c)", ol, ob,
               ob);
    if (in.size() > 2) out = bias_add(out, in[2], 1, fmt::format("NCHW{}c", ob), "bias_add");
    return {out};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    check_layout("conv2d_nchwc_winograd", "data", in[0], attr_str(a, "layout"));
    Types t = infer_from_compute(d, in, a);
    t[0].layout = fmt::format("NCHW{}c", t[0].shape.back());
    return t;
  };
  d.strategy["llvm"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    Padding p = attr_padding(a);
    if (!is_f32(in[0]) || !p.symmetric() || p.top != p.left) return std::nullopt;
    const auto &x = in[0].shape, &w = in[1].shape;
    const int64_t ib = x[4], ob = w[5];
    // Attributes at the template's defaults are left out, so that the workload key is the one
    // `loom tune` gives without them.
    TemplateCall c{"conv2d_nchwc_winograd", {x[0], x[1] * ib, x[2], x[3], w[2] * ob, 3, 3}, "float32",
                   {{"pad", str(p.top)}}};
    if (w[0] - 2 != 4) c.attrs["tile_size"] = str(w[0] - 2);
    if (ib != 16) c.attrs["ic_block"] = str(ib);
    if (ob != 16) c.attrs["oc_block"] = str(ob);
    return with_bias_finish(std::move(c), 1, fmt::format("NCHW{}c", ob));
  };
  return d;
}

OpDef depthwise_conv2d_nchwc_op() {
  OpDef d;
  d.name = "depthwise_conv2d_nchwc";
  d.doc = "depthwise 2-D convolution (multiplier 1) on NCHW{b}c data with weight OIHW1i{b}o -> NCHW{b}c";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = {strides_attr(), padding_attr(), dilation_attr(),
             attr("layout", AttrKind::kString, std::string("NCHW16c"), "data and output layout NCHW{b}c")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const std::string& layout = attr_str(a, "layout");
    int64_t b = nchw_block("depthwise_conv2d_nchwc", layout);
    auto ds = const_shape(in[0], "depthwise_conv2d_nchwc", "data");
    LOOM_CHECK(b > 0 && ds.size() == 5 && ds[4] == b, "depthwise_conv2d_nchwc: data is {} but the layout is \"{}\"",
               shape_str(ds), layout);
    Tensor data = in[0];
    Padding p = attr_padding(a);
    if (!p.symmetric()) data = pad_asymmetric(data, p);
    Tensor out = depthwise_conv2d_nchwc(data, in[1], attr_pair(a, "strides", true), p.pair(),
                                        attr_pair(a, "dilation", true), "depthwise_conv2d_nchwc");
    if (in.size() > 2) out = bias_add(out, in[2], 1, layout, "bias_add");
    return {out};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    check_layout("depthwise_conv2d_nchwc", "data", in[0], attr_str(a, "layout"));
    return with_layout(d, in, a, attr_str(a, "layout"));
  };
  d.strategy["llvm"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    int64_t stride = 0, pad = 0;
    if (!is_f32(in[0]) || !template_window(a, &stride, &pad)) return std::nullopt;
    const auto &x = in[0].shape, &w = in[1].shape;
    TemplateCall c{"depthwise_conv2d_nchwc", {x[0], x[1] * x[4], x[2], x[3], w[2], w[3]}, "float32",
                   {{"stride", str(stride)}, {"pad", str(pad)}}};
    if (x[4] != 16) c.attrs["block"] = str(x[4]);
    return with_bias_finish(std::move(c), 1, fmt::format("NCHW{}c", x[4]));
  };
  return d;
}

// ---------------------------------------------------------------- dense and matmul

OpDef dense_op() {
  OpDef d;
  d.name = "dense";
  d.doc = "out[N,M] = data[N,K] * weight[M,K]^T (+ bias[M])";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
    return {dense(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), "dense")};
  };
  d.strategy["llvm"] = [](const Types& in, const Attrs&) -> std::optional<TemplateCall> {
    if (!is_f32(in[0])) return std::nullopt;
    return with_bias_finish({"dense", {in[0].shape[0], in[1].shape[0], in[0].shape[1]}, "float32", {}}, 1);
  };
  d.strategy["cuda"] = d.strategy["llvm"];
  return d;
}

OpDef dense_pack_op() {
  OpDef d;
  d.name = "dense_pack";
  d.doc = "dense with the weight pre-packed as [ceil(M/b),K,b] (layout_transform \"OI\" -> \"OI{b}o\")";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = {attr("units", AttrKind::kInt, std::nullopt, "M, the output features (the packed weight may pad them)")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {dense_pack(in[0], in[1], attr_int(a, "units"), in.size() > 2 ? in[2] : Tensor(), "dense_pack")};
  };
  d.strategy["llvm"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    if (!is_f32(in[0]) || in[1].shape.size() != 3 || in[1].shape[2] != 16) return std::nullopt;
    return with_bias_finish({"dense_pack", {in[0].shape[0], attr_int(a, "units"), in[0].shape[1]}, "float32", {}}, 1);
  };
  return d;
}

AttrSpec transpose_attr(const char* name, const char* what) {
  return attr(name, AttrKind::kInt, int64_t(0), what);
}

OpDef matmul_op() {
  OpDef d;
  d.name = "matmul";
  d.doc = "C[M,N] = A[M,K] * B[K,N] (A given as [K,M] with transpose_a, B as [N,K] with transpose_b)";
  d.inputs = {"a", "b"};
  d.min_inputs = 2;
  d.attrs = {transpose_attr("transpose_a", "1: a is [K,M]"), transpose_attr("transpose_b", "1: b is [N,K]")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {matmul(in[0], in[1], attr_int(a, "transpose_a") != 0, attr_int(a, "transpose_b") != 0, "matmul")};
  };
  auto call = [](const Types& in, const Attrs& a, bool cuda) -> std::optional<TemplateCall> {
    if (!is_f32(in[0]) || attr_int(a, "transpose_a")) return std::nullopt;
    const auto &x = in[0].shape, &y = in[1].shape;
    if (attr_int(a, "transpose_b")) {
      // A·B^T with B [N,K] is dense's X·W^T.
      return TemplateCall{"dense", {x[0], y[0], x[1]}, "float32", {}};
    }
    return TemplateCall{"matmul", {x[0], y[1], x[1]}, "float32", {}};
  };
  d.strategy["llvm"] = [call](const Types& in, const Attrs& a) { return call(in, a, false); };
  d.strategy["cuda"] = [call](const Types& in, const Attrs& a) { return call(in, a, true); };
  return d;
}

OpDef batch_matmul_op() {
  OpDef d;
  d.name = "batch_matmul";
  d.doc = "C[b,M,N] = A[b,M,K] * B[b,K,N] (transposes per batch as matmul; a batch of 1 broadcasts)";
  d.inputs = {"a", "b"};
  d.min_inputs = 2;
  d.attrs = {transpose_attr("transpose_a", "1: a is [b,K,M]"), transpose_attr("transpose_b", "1: b is [b,N,K]")};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {batch_matmul(in[0], in[1], attr_int(a, "transpose_a") != 0, attr_int(a, "transpose_b") != 0,
                         "batch_matmul")};
  };
  d.strategy["llvm"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    const auto &x = in[0].shape, &y = in[1].shape;
    if (!is_f32(in[0]) || attr_int(a, "transpose_a") || x[0] != y[0]) return std::nullopt;
    if (attr_int(a, "transpose_b"))  // B [b,N,K], as attention's Q·K^T
      return TemplateCall{"batch_matmul", {x[0], x[1], y[1], x[2]}, "float32", {{"transpose_b", "1"}}};
    return TemplateCall{"batch_matmul", {x[0], x[1], y[2], x[2]}, "float32", {}};
  };
  d.strategy["cuda"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    const auto &x = in[0].shape, &y = in[1].shape;
    if (!is_f32(in[0])) return std::nullopt;
    const bool ta = attr_int(a, "transpose_a") != 0, tb = attr_int(a, "transpose_b") != 0;
    const int64_t batch = std::max(x[0], y[0]), M = ta ? x[2] : x[1], K = ta ? x[1] : x[2], N = tb ? y[1] : y[2];
    std::map<std::string, std::string> at;
    if (ta) at["transpose_a"] = "1";
    if (tb) at["transpose_b"] = "1";
    if (x[0] != batch) at["batch_a"] = str(x[0]);
    if (y[0] != batch) at["batch_b"] = str(y[0]);
    return TemplateCall{"batch_matmul", {batch, M, N, K}, "float32", at};
  };
  return d;
}

// ---------------------------------------------------------------- pooling

AttrSpec layout_attr(const char* doc = "\"NCHW\" or channel-blocked \"NCHW{c}c\"") {
  return attr("layout", AttrKind::kString, std::string("NCHW"), doc);
}

/// Symmetric padding for the pooling computes (they take no other).
Pair pool_padding(const std::string& op, const Attrs& a) {
  Padding p = attr_padding(a);
  LOOM_CHECK(p.symmetric(), "{}: asymmetric padding {{{}, {}, {}, {}}} is not supported; give {{h, w}}", op, p.top,
             p.left, p.bottom, p.right);
  return p.pair();
}

Tensor pool_data(const std::string& op, const Tensor& data, const Attrs& a) {
  const std::string& layout = attr_str(a, "layout");
  int64_t b = nchw_block(op, layout);
  auto s = const_shape(data, op, "data");
  LOOM_CHECK(s.size() == (b ? 5u : 4u) && (!b || s[4] == b), "{}: data is {} but the layout is \"{}\"", op,
             shape_str(s), layout);
  return data;
}

OpDef pool_op(const std::string& name, bool avg) {
  OpDef d;
  d.name = name;
  d.doc = avg ? "mean over each window (count_include_pad: divide by the window size, else by its elements inside)"
              : "max over each window (padding never wins)";
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {attr("pool_size", AttrKind::kInts, std::nullopt, "{h, w}"), strides_attr(),
             attr("padding", AttrKind::kInts, std::vector<int64_t>{0, 0}, "{h, w} (both sides alike)"),
             layout_attr()};
  if (avg) d.attrs.push_back(attr("count_include_pad", AttrKind::kInt, int64_t(0), "1: padding counts as zeros"));
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [name, avg](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    Tensor data = pool_data(name, in[0], a);
    Pair k = attr_pair(a, "pool_size", true), s = attr_pair(a, "strides", true), p = pool_padding(name, a);
    if (avg) return {avg_pool2d(data, k, s, p, attr_int(a, "count_include_pad") != 0, name)};
    return {max_pool2d(data, k, s, p, name)};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    check_layout(d.name, "data", in[0], attr_str(a, "layout"));
    return with_layout(d, in, a, attr_str(a, "layout"));
  };
  return d;
}

OpDef global_avg_pool_op() {
  OpDef d;
  d.name = "global_avg_pool2d";
  d.doc = "mean over H and W -> [N,C,1,1] (or [N,C/c,1,1,c])";
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {layout_attr()};
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {global_avg_pool2d(pool_data("global_avg_pool2d", in[0], a), "global_avg_pool2d")};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    check_layout(d.name, "data", in[0], attr_str(a, "layout"));
    return with_layout(d, in, a, attr_str(a, "layout"));
  };
  return d;
}

// ---------------------------------------------------------------- normalization

OpDef softmax_op() {
  OpDef d;
  d.name = "softmax";
  d.doc = "exp(x - max) / sum(exp(x - max)) along axis";
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(-1), "negative counts from the end")};
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {softmax(in[0], int(attr_int(a, "axis")), "softmax")};
  };
  // The "softmax" template is a row softmax of x[N,M]: a 2-D float32 input along its last axis.
  d.strategy["llvm"] = [](const Types& in, const Attrs& a) -> std::optional<TemplateCall> {
    const int64_t axis = attr_int(a, "axis");
    if (!is_f32(in[0]) || in[0].shape.size() != 2 || (axis != -1 && axis != 1)) return std::nullopt;
    return TemplateCall{"softmax", {in[0].shape[0], in[0].shape[1]}, "float32", {}};
  };
  return d;
}

OpDef layer_norm_op() {
  OpDef d;
  d.name = "layer_norm";
  d.doc = "(x - mean) / sqrt(var + epsilon) * gamma + beta over one axis (gamma, beta of its extent)";
  d.inputs = {"data", "gamma", "beta"};
  d.min_inputs = 3;
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(-1), "the normalized axis"),
             attr("epsilon", AttrKind::kFloat, 1e-5, "added to the variance")};
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {layer_norm(in[0], in[1], in[2], int(attr_int(a, "axis")), attr_float(a, "epsilon"), "layer_norm")};
  };
  return d;
}

OpDef batch_norm_op() {
  OpDef d;
  d.name = "batch_norm";
  d.doc = "inference batch norm: (x - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta per channel";
  d.inputs = {"data", "gamma", "beta", "moving_mean", "moving_var"};
  d.min_inputs = 5;
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(1), "the channel axis (in a blocked layout: its primal axis)"),
             attr("epsilon", AttrKind::kFloat, 1e-5, "added to the variance"),
             attr("layout", AttrKind::kString, std::string(""), "\"\", \"NCHW\" or blocked \"NCHW{c}c\"")};
  d.pattern = OpPattern::kBroadcast;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {batch_norm(in[0], in[1], in[2], in[3], in[4], int(attr_int(a, "axis")), attr_float(a, "epsilon"),
                       attr_str(a, "layout"), "batch_norm")};
  };
  d.infer_type = [d](const Types& in, const Attrs& a) {
    const std::string& l = attr_str(a, "layout");
    if (!l.empty()) check_layout("batch_norm", "data", in[0], l);
    return with_layout(d, in, a, l.empty() ? in[0].layout : l);
  };
  return d;
}

}  // namespace

std::vector<OpDef> nn_ops() {
  return {conv2d(),         conv2d_nchwc_op(),           depthwise_conv2d_nchwc_op(),
          winograd_weight_transform_op(), conv2d_nchwc_winograd_op(),
          dense_op(),       dense_pack_op(),             matmul_op(),
          batch_matmul_op(), pool_op("max_pool2d", false), pool_op("avg_pool2d", true),
          global_avg_pool_op(), softmax_op(),            layer_norm_op(),
          batch_norm_op()};
}

}  // namespace loom::te::ops::detail
