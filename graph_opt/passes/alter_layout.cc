// Layout alteration: NCHW convolution regions run on channel-blocked data (NCHW{b}c, oneDNN's
// nChw16c), dense weights are pre-packed.
//
// The pass walks the nodes in order and keeps, per source value, the value that now stands
// for it (its "primary" form, blocked or not) and any other layouts asked of it, so that a
// value is transformed to a layout at most once whatever the number of its consumers:
//   conv2d (NCHW, groups 1)   → conv2d_nchwc: data NCHW{ib}c (as it arrives, else transformed;
//                               NCHW when no block divides C, e.g. 3 input channels), weight
//                               layout_transform'ed to OIHW{ib}i{ob}o, output NCHW{ob}c;
//                               with LayoutOptions::winograd_tile (or choose_winograd) a 3×3
//                               stride-1 one is conv2d_nchwc_winograd instead, its weight
//                               then winograd_weight_transform'ed as well;
//   conv2d (depthwise)        → depthwise_conv2d_nchwc on NCHW{b}c, weight OIHW1i{b}o;
//   elementwise and broadcast (quantize, dequantize and requantize among them) → blocked when an input of the output's shape arrives blocked:
//                               same-shape inputs take that layout, per-channel constants are
//                               reshaped to [C/b,1,1,b], scalars stay;
//   bias_add, batch_norm, max/avg/global pooling → blocked through their layout attribute;
//   conv2d_int8 (groups 1, C and K multiples of 16, a square window) → conv2d_nchwc_int8:
//                               data NCHW16c, weight pack_int8_kernel'ed, output NCHW16c;
//   dense, matmul (2-D, constant weight) → dense_pack with the weight laid out OI{16}o;
//   concat along C of values one of which arrives blocked, every channel count a multiple of
//                               the block → concat of the blocked values (of their blocks);
//   strided_slice of a blocked value taking whole channel blocks (begin and end multiples of
//                               the block, step 1) → the slice of the blocked value: a
//                               network's channel Split (YOLO's C2f) stays blocked;
//   anything else             → reads every input in its original layout.
// So layout_transform nodes appear only where a region starts or ends (or its block
// changes), and graph outputs keep their layouts. Weight transforms are layout_transform
// nodes on constants, which fold_constants evaluates.
#include <map>

#include "loom/graph_opt/passes.h"
#include "loom/te/ops.h"
#include "pass_util.h"

namespace loom::graph_opt {

namespace {

std::string nchwc(int64_t b) { return fmt::format("NCHW{}c", b); }

/// The channel block of a layout "NCHW{b}c", or 0.
int64_t block_of(const std::string& layout) {
  if (layout.size() < 6 || layout.rfind("NCHW", 0) != 0 || layout.back() != 'c') return 0;
  std::string digits = layout.substr(4, layout.size() - 5);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoll(digits);
}

class LayoutRewriter {
 public:
  LayoutRewriter(const Graph& g, const LayoutOptions& opt) : g_(g), opt_(opt), rw_(g) {}

  Graph run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (!n.is_op() || !(rewrite_conv(int(i)) || rewrite_conv_int8(int(i)) || rewrite_dense(int(i)) || rewrite_blocked(int(i)) ||
                           rewrite_channel_concat(int(i)) || rewrite_channel_slice(int(i)))) keep(int(i));
    }
    for (const ValueRef& v : g_.outputs) rw_.replace(v, get(v, ""));
    return rw_.finish();
  }

 private:
  /// Source value `v` in layout `want` ("": its original layout), transformed once from the
  /// form it now has. `src_hint` names its layout when the value carries none (a weight).
  Value get(ValueRef v, const std::string& want, const std::string& src_hint = "") {
    const std::string& orig = g_.type(v).layout;
    auto now = primary_.find(v);
    std::string src;
    if (now == primary_.end()) {
      if (want.empty() || want == orig || (orig.empty() && want == src_hint)) return rw_.map(v);
      src = orig.empty() ? src_hint : orig;
    } else {
      if (want == now->second) return rw_.map(v);
      src = now->second;
    }
    std::string dst = !want.empty() ? want : !orig.empty() ? orig : "NCHW";
    auto& alt = alternates_[v];
    auto it = alt.find(dst);
    if (it != alt.end()) return it->second;
    Value t = rw_.layout_transform(rw_.map(v), src, dst,
                                   rw_.unique_name(fmt::format("{}.{}", g_.nodes[size_t(v.node)].name, dst)));
    alt.emplace(dst, t);
    return t;
  }

  /// The blocked layout source value `v` now has, or "".
  std::string blocked(ValueRef v) const {
    auto it = primary_.find(v);
    return it == primary_.end() ? "" : it->second;
  }

  void keep(int i) {
    const Node& n = g_.nodes[size_t(i)];
    if (!n.is_op()) {
      rw_.copy(i);
      return;
    }
    std::vector<Value> in;
    for (const ValueRef& v : n.inputs) in.push_back(get(v, ""));
    rw_.copy_with(i, in, n.attrs);
  }

  void emit(int i, const std::string& op, const std::vector<Value>& in, const Attrs& attrs) {
    const Node& n = g_.nodes[size_t(i)];
    Value y = rw_.op(op, in, attrs, rw_.unique_name(n.name));
    rw_.replace({i, 0}, y);
    if (block_of(rw_.type(y).layout)) primary_[{i, 0}] = rw_.type(y).layout;
  }

  int64_t first_block(int64_t channels, int64_t prefer = 0) const {
    if (prefer && channels % prefer == 0) return prefer;
    for (int64_t b : opt_.blocks)
      if (b > 0 && channels % b == 0) return b;
    return 0;
  }

  bool rewrite_conv(int i) {
    const Node& n = g_.nodes[size_t(i)];
    if (n.op != "conv2d" || te::ops::attr_str(n.attrs, "layout") != "NCHW") return false;
    const TensorType& xt = g_.type(n.inputs[0]);
    const TensorType& wt = g_.type(n.inputs[1]);
    if (xt.shape.size() != 4 || wt.shape.size() != 4) return false;
    const int64_t C = xt.shape[1], K = wt.shape[0], groups = te::ops::attr_int(n.attrs, "groups");
    int64_t ob = opt_.choose_block ? opt_.choose_block(g_, i) : first_block(K);
    if (ob <= 0 || K % ob != 0) return false;
    int64_t ib = block_of(blocked(n.inputs[0]));
    Attrs attrs;
    for (const char* k : {"strides", "padding", "dilation"}) attrs[k] = n.attrs.at(k);
    std::vector<Value> in;
    if (groups == 1) {
      if (ib == 0) ib = first_block(C, ob);
      std::string dl = ib ? nchwc(ib) : "NCHW";
      std::string wl = ib ? fmt::format("OIHW{}i{}o", ib, ob) : fmt::format("OIHW{}o", ob);
      in = {get(n.inputs[0], dl, "NCHW"), get(n.inputs[1], wl, "OIHW")};
      attrs["layout"] = dl;
      attrs["out_layout"] = nchwc(ob);
      const int64_t m = ib ? winograd_tile(i, ib, ob) : 0;
      if (m) {
        in[1] = rw_.op("winograd_weight_transform", {in[1]}, {{"tile_size", m}},
                       rw_.unique_name(fmt::format("{}.winograd{}", g_.nodes[size_t(n.inputs[1].node)].name, m)));
        attrs.erase("strides");
        attrs.erase("dilation");
      }
      if (n.inputs.size() > 2) in.push_back(rw_.map(n.inputs[2]));
      emit(i, m ? "conv2d_nchwc_winograd" : "conv2d_nchwc", in, attrs);
      return true;
    }
    if (groups == C && K == C && wt.shape[1] == 1) {
      int64_t b = ib && C % ib == 0 ? ib : ob;
      in = {get(n.inputs[0], nchwc(b), "NCHW"), get(n.inputs[1], fmt::format("OIHW1i{}o", b), "OIHW")};
      attrs["layout"] = nchwc(b);
      if (n.inputs.size() > 2) in.push_back(rw_.map(n.inputs[2]));
      emit(i, "depthwise_conv2d_nchwc", in, attrs);
      return true;
    }
    return false;
  }

  /// conv2d_int8 as conv2d_nchwc_int8, the int8 template's layouts (16-channel blocks).
  bool rewrite_conv_int8(int i) {
    const Node& n = g_.nodes[size_t(i)];
    if (n.op != "conv2d_int8") return false;
    const TensorType& xt = g_.type(n.inputs[0]);
    const TensorType& wt = g_.type(n.inputs[1]);
    const int64_t b = te::ops::kInt8Block;
    if (xt.shape.size() != 4 || wt.shape.size() != 4 || te::ops::attr_int(n.attrs, "groups") != 1 ||
        xt.shape[1] % b != 0 || wt.shape[0] % b != 0)
      return false;
    const std::vector<int64_t> s = te::ops::attr_ints(n.attrs, "strides"), d = te::ops::attr_ints(n.attrs, "dilation");
    std::vector<int64_t> p = te::ops::attr_ints(n.attrs, "padding");
    if (p.size() == 4 && p[0] == p[2] && p[1] == p[3]) p.resize(2);
    if (s.size() != 2 || s[0] != s[1] || d != std::vector<int64_t>{1, 1} || p.size() != 2 || p[0] != p[1]) return false;
    std::vector<Value> in = {get(n.inputs[0], nchwc(b), "NCHW"),
                             rw_.op("pack_int8_kernel", {rw_.map(n.inputs[1])}, {},
                                    rw_.unique_name(g_.nodes[size_t(n.inputs[1].node)].name + ".packed"))};
    if (n.inputs.size() > 2) in.push_back(rw_.map(n.inputs[2]));
    emit(i, "conv2d_nchwc_int8", in, {{"strides", s}, {"padding", p}});
    return true;
  }

  /// Winograd's m for conv2d node `i` (groups 1, blocked input), or 0 when it stays direct.
  int64_t winograd_tile(int i, int64_t ib, int64_t ob) const {
    if (!opt_.winograd_tile && !opt_.choose_winograd) return 0;
    const Node& n = g_.nodes[size_t(i)];
    const std::vector<int64_t>& w = g_.type(n.inputs[1]).shape;
    if (w[2] != 3 || w[3] != 3 || !g_.node(n.inputs[1]).is_constant()) return 0;
    if (w[0] < opt_.winograd_min_channels || w[1] < opt_.winograd_min_channels) return 0;
    if (te::ops::attr_ints(n.attrs, "strides") != std::vector<int64_t>{1, 1} ||
        te::ops::attr_ints(n.attrs, "dilation") != std::vector<int64_t>{1, 1})
      return 0;
    std::vector<int64_t> p = te::ops::attr_ints(n.attrs, "padding");
    if (p.size() == 4 && (p[0] != p[2] || p[1] != p[3])) return 0;
    if (p.size() < 2 || p[0] > 2 || p[1] > 2) return 0;
    const int64_t m = opt_.choose_winograd ? opt_.choose_winograd(g_, i, ib, ob) : opt_.winograd_tile;
    LOOM_CHECK(m == 0 || (m >= 2 && m <= 6), "alter_layout: Winograd tile {} for conv2d '{}' is not in 2..6", m,
               n.name);
    return m;
  }

  /// dense, and matmul of a 2-D input by a constant 2-D matrix (ONNX's MatMul with a weight),
  /// as dense_pack: the weight read with its output units outermost and blocked, so the
  /// kernel walks it contiguously instead of one row of a wide [K,N] matrix per k.
  bool rewrite_dense(int i) {
    const Node& n = g_.nodes[size_t(i)];
    if ((n.op != "dense" && n.op != "matmul") || opt_.dense_block <= 0 || !g_.node(n.inputs[1]).is_constant())
      return false;
    std::string weight_layout = "OI";
    if (n.op == "matmul") {
      if (te::ops::attr_int(n.attrs, "transpose_a") != 0 || n.inputs.size() != 2 || g_.type(n.inputs[0]).shape.size() != 2 ||
          g_.type(n.inputs[1]).shape.size() != 2 || g_.type(n.inputs[0]).dtype != DataType::Float(32))
        return false;
      if (te::ops::attr_int(n.attrs, "transpose_b") == 0) weight_layout = "IO";
    }
    int64_t units = g_.type(n.inputs[1]).shape[weight_layout == "OI" ? 0 : 1];
    std::vector<Value> in = {get(n.inputs[0], ""),
                             get(n.inputs[1], fmt::format("OI{}o", opt_.dense_block), weight_layout)};
    if (n.inputs.size() > 2) in.push_back(rw_.map(n.inputs[2]));
    emit(i, "dense_pack", in, {{"units", units}});
    return true;
  }

  /// Elementwise, broadcast and pooling ops whose data arrives blocked.
  bool rewrite_blocked(int i) {
    const Node& n = g_.nodes[size_t(i)];
    if (n.inputs.empty() || n.outputs.size() != 1) return false;
    const te::ops::OpDef& def = te::ops::get_op(n.op);
    const std::vector<int64_t>& out = n.outputs[0].shape;
    if (out.size() != 4) return false;
    static const char* kPools[] = {"max_pool2d", "avg_pool2d", "global_avg_pool2d"};
    bool pool = std::find(std::begin(kPools), std::end(kPools), n.op) != std::end(kPools);
    bool per_channel = n.op == "bias_add" || n.op == "batch_norm";
    if (pool || per_channel) {
      std::string l = blocked(n.inputs[0]);
      if (!block_of(l)) return false;
      if (per_channel) {
        int64_t axis = te::ops::attr_int(n.attrs, "axis");
        if (axis != 1 || !te::ops::attr_str(n.attrs, "layout").empty()) return false;
      } else if (te::ops::attr_str(n.attrs, "layout") != "NCHW") {
        return false;
      }
      Attrs attrs = n.attrs;
      attrs["layout"] = l;
      std::vector<Value> in = {rw_.map(n.inputs[0])};
      for (size_t k = 1; k < n.inputs.size(); ++k) in.push_back(rw_.map(n.inputs[k]));
      emit(i, n.op, in, attrs);
      return true;
    }
    if (def.pattern != OpPattern::kElemwise && def.pattern != OpPattern::kBroadcast) return false;
    if (!n.attrs.empty()) {
      // Only attribute-free ops, those whose one attribute is the result type (quantize,
      // dequantize, requantize, cast), and unary ones whose attributes are not about axes.
      const bool dtype_only = def.attrs.size() == 1 && def.attrs[0].name == "dtype";
      if (n.inputs.size() != 1 && !dtype_only) return false;
      for (const te::ops::AttrSpec& a : def.attrs)
        if (a.name == "axis" || a.name == "axes" || a.name == "layout") return false;
    }
    std::string lead;
    for (const ValueRef& v : n.inputs)
      if (g_.type(v).shape == out && block_of(blocked(v))) {
        lead = blocked(v);
        break;
      }
    if (lead.empty()) return false;
    int64_t b = block_of(lead);
    if (out[1] % b != 0) return false;
    // Every input must fit before any is transformed.
    for (const ValueRef& v : n.inputs) {
      const TensorType& t = g_.type(v);
      if (t.shape != out && !detail::per_axis_extent(t.shape, out, 1)) return false;
    }
    std::vector<Value> in;
    for (const ValueRef& v : n.inputs) {
      const TensorType& t = g_.type(v);
      if (t.shape == out) {
        in.push_back(get(v, lead, "NCHW"));
      } else if (numel(t) == 1) {
        in.push_back(rw_.map(v));
      } else {
        int64_t ext = *detail::per_axis_extent(t.shape, out, 1);
        TensorType blocked_out{{out[0], out[1] / b, out[2], out[3], b}, t.dtype, lead};
        in.push_back(detail::reshape_to(rw_, rw_.map(v), detail::per_channel_shape(blocked_out, 1, lead, ext),
                                        g_.nodes[size_t(v.node)].name + "." + lead));
      }
    }
    emit(i, n.op, in, n.attrs);
    return true;
  }

  bool rewrite_channel_concat(int i) {
    const Node& n = g_.nodes[size_t(i)];
    if (n.op != "concat" || n.outputs.size() != 1 || n.outputs[0].shape.size() != 4) return false;
    int64_t axis = te::ops::attr_int(n.attrs, "axis");
    if (axis != 1 && axis != -3) return false;
    std::string lead;
    for (const ValueRef& v : n.inputs)
      if (block_of(blocked(v))) {
        lead = blocked(v);
        break;
      }
    const int64_t b = block_of(lead);
    if (!b) return false;
    for (const ValueRef& v : n.inputs)
      if (g_.type(v).shape.size() != 4 || g_.type(v).shape[1] % b != 0) return false;
    std::vector<Value> in;
    for (const ValueRef& v : n.inputs) in.push_back(get(v, lead, "NCHW"));
    emit(i, "concat", in, {{"axis", int64_t(1)}});
    return true;
  }

  bool rewrite_channel_slice(int i) {
    const Node& n = g_.nodes[size_t(i)];
    if (n.op != "strided_slice" || n.outputs.size() != 1) return false;
    const std::string lead = blocked(n.inputs[0]);
    const int64_t b = block_of(lead);
    const std::vector<int64_t>& s = g_.type(n.inputs[0]).shape;
    if (!b || s.size() != 4) return false;
    std::vector<int64_t> begin = te::ops::attr_ints(n.attrs, "begin"), end = te::ops::attr_ints(n.attrs, "end"),
                         strides = te::ops::attr_ints(n.attrs, "strides");
    if (strides.empty()) strides.assign(4, 1);
    if (begin.size() != 4 || end.size() != 4 || strides.size() != 4 || strides[1] != 1) return false;
    int64_t first = 0;
    const int64_t extent = te::ops::slice_extent(s[1], begin[1], end[1], 1, &first);
    if (first % b != 0 || extent % b != 0) return false;
    // N, H and W keep their slices; C counts blocks; the block's channels are taken whole.
    std::vector<int64_t> bb{begin[0], first / b, begin[2], begin[3], 0};
    std::vector<int64_t> be{end[0], (first + extent) / b, end[2], end[3], b};
    std::vector<int64_t> bs{strides[0], 1, strides[2], strides[3], 1};
    emit(i, "strided_slice", {rw_.map(n.inputs[0])}, {{"begin", bb}, {"end", be}, {"strides", bs}});
    return true;
  }

  const Graph& g_;
  const LayoutOptions& opt_;
  GraphRewriter rw_;
  std::map<ValueRef, std::string> primary_;                       // values now in another layout
  std::map<ValueRef, std::map<std::string, Value>> alternates_;  // other layouts asked of a value
};

}  // namespace

Graph alter_layout(const Graph& g, const LayoutOptions& opt) { return LayoutRewriter(g, opt).run(); }

}  // namespace loom::graph_opt
