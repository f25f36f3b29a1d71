// Registry entries of the injective operators: reshapes, transposes, concat, pad, take,
// layout transforms.
#include <fmt/format.h>

#include "op_util.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

OpDef injective(std::string name, std::string doc, std::vector<std::string> inputs) {
  OpDef d;
  d.name = std::move(name);
  d.doc = std::move(doc);
  d.min_inputs = inputs.size();
  d.inputs = std::move(inputs);
  d.pattern = OpPattern::kInjective;
  return d;
}

OpDef reshape_op() {
  OpDef d = injective("reshape", "same elements under newshape (-1: inferred, 0: the input's dim)", {"data"});
  d.attrs = {attr("newshape", AttrKind::kInts, std::nullopt, "the new shape; one -1 may be inferred, 0 copies")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    std::vector<int64_t> ns = attr_ints(a, "newshape");
    auto s = const_shape(in[0], "reshape", "data");
    for (size_t i = 0; i < ns.size(); ++i)
      if (ns[i] == 0) {
        LOOM_CHECK(i < s.size(), "reshape: newshape dim {} is 0 (copy) but data has only {} dims", i, s.size());
        ns[i] = s[i];
      }
    return {reshape(in[0], ns, "reshape")};
  };
  return d;
}

OpDef flatten_op() {
  OpDef d = injective("flatten", "2-D [prod(shape[:axis]), prod(shape[axis:])]", {"data"});
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(1), "")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {flatten(in[0], int(attr_int(a, "axis")), "flatten")};
  };
  return d;
}

OpDef squeeze_op() {
  OpDef d = injective("squeeze", "drops extent-1 dims", {"data"});
  d.attrs = {attr("axes", AttrKind::kInts, std::vector<int64_t>{}, "[]: every extent-1 dim")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {squeeze(in[0], attr_ints(a, "axes"), "squeeze")};
  };
  return d;
}

OpDef unsqueeze_op() {
  OpDef d = injective("unsqueeze", "inserts extent-1 dims at axes (positions in the output)", {"data"});
  d.attrs = {attr("axes", AttrKind::kInts, std::nullopt, "")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {unsqueeze(in[0], attr_ints(a, "axes"), "unsqueeze")};
  };
  return d;
}

OpDef transpose_op() {
  OpDef d = injective("transpose", "permutes dims: out.shape[i] = in.shape[axes[i]]", {"data"});
  d.attrs = {attr("axes", AttrKind::kInts, std::vector<int64_t>{}, "[]: reversed")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    std::vector<int> axes;
    for (int64_t v : attr_ints(a, "axes")) {
      LOOM_CHECK(v >= INT32_MIN && v <= INT32_MAX, "transpose: axis {} is out of range", v);
      axes.push_back(int(v));
    }
    return {transpose(in[0], axes, "transpose")};
  };
  return d;
}

OpDef concat_op() {
  OpDef d = injective("concat", "joins the inputs along axis", {"data..."});
  d.min_inputs = 1;
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(0), "negative counts from the end")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {concat(in, int(attr_int(a, "axis")), "concat")};
  };
  // Inputs sharing a blocked layout join in it along a primal axis (a concat of NCHW16c values
  // along C, channel blocks, is the NCHW16c value of the joined channels).
  d.infer_type = [d](const std::vector<TensorType>& in, const Attrs& a) {
    std::vector<TensorType> out = infer_from_compute(d, in, a);
    const std::string& layout = in[0].layout;
    if (layout.empty()) return out;
    for (const TensorType& t : in)
      if (t.layout != layout) return out;
    Layout l = Layout::parse(layout);
    if (!l.blocked()) return out;
    int64_t axis = attr_int(a, "axis");
    if (axis < 0) axis += int64_t(l.ndim());
    if (axis >= 0 && axis < int64_t(l.ndim()) && l.axes[size_t(axis)].factor == 0) out[0].layout = layout;
    return out;
  };
  return d;
}

OpDef pad_op() {
  OpDef d = injective("pad", "padding (constant, edge, reflect, wrap); pads = begins of every dim, then ends "
                      "(ONNX's order); a negative pad crops", {"data"});
  d.attrs = {attr("pads", AttrKind::kInts, std::nullopt, "[b0, b1, …, e0, e1, …], 2 per dim"),
             attr("pad_value", AttrKind::kFloat, 0.0, "the fill value (mode constant)"),
             attr("mode", AttrKind::kString, std::string("constant"),
                  "\"constant\", \"edge\" (the border repeated), \"reflect\" (mirrored, border not repeated), "
                  "\"wrap\" (periodic)")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    std::vector<int64_t> p = attr_ints(a, "pads");
    LOOM_CHECK(p.size() == 2 * in[0].ndim(), "pad: data is {}-D, so pads needs {} values (begins, then ends), got {}",
               in[0].ndim(), 2 * in[0].ndim(), p.size());
    std::vector<int64_t> before(p.begin(), p.begin() + long(in[0].ndim())), after(p.begin() + long(in[0].ndim()), p.end());
    return {pad_mode(in[0], before, after, parse_pad_mode(attr_str(a, "mode")),
                     const_of(in[0].dtype(), attr_float(a, "pad_value")), "pad")};
  };
  return d;
}

OpDef take_op() {
  OpDef d = injective("take", "elements picked along axis by integer indices (negative from the end, clamped)",
                      {"data", "indices"});
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(0), "")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {take(in[0], in[1], int(attr_int(a, "axis")), "take")};
  };
  return d;
}

OpDef layout_transform_op() {
  OpDef d = injective("layout_transform",
                      "re-lays data out from src_layout to dst_layout (\"NCHW\" <-> \"NCHW16c\", \"OIHW\" -> "
                      "\"OIHW16i16o\"); splitting pads with zeros",
                      {"data"});
  d.attrs = {attr("src_layout", AttrKind::kString, std::nullopt, ""),
             attr("dst_layout", AttrKind::kString, std::nullopt, ""),
             attr("dst_shape", AttrKind::kInts, std::vector<int64_t>{},
                  "[]: the layout's shape; else it, with unsplit axes cropped")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {layout_transform(in[0], attr_str(a, "src_layout"), attr_str(a, "dst_layout"), attr_ints(a, "dst_shape"),
                             "layout_transform")};
  };
  d.infer_type = [d](const std::vector<TensorType>& in, const Attrs& a) {
    check_layout("layout_transform", "data", in[0], attr_str(a, "src_layout"));
    auto t = infer_from_compute(d, in, a);
    t[0].layout = attr_str(a, "dst_layout");
    return t;
  };
  return d;
}

}  // namespace

std::vector<OpDef> transform_ops() {
  return {reshape_op(), flatten_op(), squeeze_op(), unsqueeze_op(), transpose_op(),
          concat_op(),  pad_op(),     take_op(),    layout_transform_op()};
}

}  // namespace loom::te::ops::detail
