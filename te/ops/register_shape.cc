// Registry entries of the slicing, tiling, gather, scatter, one-hot, triangle, cumulative and
// sequence operators (te/ops/shape.cc).
#include <fmt/format.h>

#include "op_util.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

OpDef def(std::string name, std::string doc, std::vector<std::string> inputs, OpPattern pattern) {
  OpDef d;
  d.name = std::move(name);
  d.doc = std::move(doc);
  d.min_inputs = inputs.size();
  d.inputs = std::move(inputs);
  d.pattern = pattern;
  return d;
}

int int_attr(const Attrs& a, const std::string& name, const char* op) {
  int64_t v = attr_int(a, name);
  LOOM_CHECK(v >= INT32_MIN && v <= INT32_MAX, "{}: attribute '{}' = {} is out of range", op, name, v);
  return int(v);
}

OpDef strided_slice_op() {
  OpDef d = def("strided_slice", "data[begin:end:strides] per dim, ONNX Slice's clamping", {"data"},
                OpPattern::kInjective);
  d.attrs = {attr("begin", AttrKind::kInts, std::nullopt, "one per dim; negative counts from the end"),
             attr("end", AttrKind::kInts, std::nullopt, "one per dim (exclusive); clamped to the dim"),
             attr("strides", AttrKind::kInts, std::vector<int64_t>{}, "one per dim, nonzero; []: all 1")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {strided_slice(in[0], attr_ints(a, "begin"), attr_ints(a, "end"), attr_ints(a, "strides"),
                          "strided_slice")};
  };
  // A slice keeps its input's blocked layout when it takes whole blocks: stride 1 along every split
  // primal axis (begin and end count blocks there) and every sub-axis whole.
  d.infer_type = [d](const std::vector<TensorType>& in, const Attrs& a) {
    std::vector<TensorType> out = infer_from_compute(d, in, a);
    if (in[0].layout.empty()) return out;
    Layout l = Layout::parse(in[0].layout);
    std::vector<int64_t> strides = attr_ints(a, "strides");
    if (!l.blocked() || l.ndim() != in[0].shape.size()) return out;
    for (size_t i = 0; i < l.ndim(); ++i) {
      const int64_t stride = strides.empty() ? 1 : strides[i];
      const bool split = l.axes[i].factor ? true : l.block_of(l.axes[i].name) > 0;
      if (split && stride != 1) return out;
      if (l.axes[i].factor && out[0].shape[i] != in[0].shape[i]) return out;
    }
    out[0].layout = in[0].layout;
    return out;
  };
  return d;
}

OpDef tile_op() {
  OpDef d = def("tile", "data repeated reps[d] times along each dim", {"data"}, OpPattern::kInjective);
  d.attrs = {attr("reps", AttrKind::kInts, std::nullopt, "positive, one per dim")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {tile(in[0], attr_ints(a, "reps"), "tile")};
  };
  return d;
}

OpDef broadcast_to_op() {
  OpDef d = def("broadcast_to", "data broadcast (numpy rules) to shape", {"data"}, OpPattern::kBroadcast);
  d.attrs = {attr("shape", AttrKind::kInts, std::nullopt, "the output shape")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {broadcast_to(in[0], attr_ints(a, "shape"), "broadcast_to")};
  };
  return d;
}

OpDef gather_elements_op() {
  OpDef d = def("gather_elements", "out[i] = data[i with i[axis] = indices[i]] (run-time indices)",
                {"data", "indices"}, OpPattern::kInjective);
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(0), "negative counts from the end")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {gather_elements(in[0], in[1], int_attr(a, "axis", "gather_elements"), "gather_elements")};
  };
  return d;
}

OpDef gather_nd_op() {
  OpDef d = def("gather_nd", "slices of data addressed by the last dim of indices (ONNX GatherND)",
                {"data", "indices"}, OpPattern::kInjective);
  d.attrs = {attr("batch_dims", AttrKind::kInt, int64_t(0), "leading dims shared by data and indices")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {gather_nd(in[0], in[1], int_attr(a, "batch_dims", "gather_nd"), "gather_nd")};
  };
  return d;
}

AttrSpec reduction_attr() {
  return attr("reduction", AttrKind::kString, std::string("none"),
              "\"none\" (the last duplicate wins), \"add\", \"mul\", \"max\", \"min\"");
}

OpDef scatter_elements_op() {
  OpDef d = def("scatter_elements", "data with updates written at indices along axis (ONNX ScatterElements)",
                {"data", "indices", "updates"}, OpPattern::kOpaque);
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(0), "negative counts from the end"), reduction_attr()};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {scatter_elements(in[0], in[1], in[2], int_attr(a, "axis", "scatter_elements"),
                             parse_scatter_reduce(attr_str(a, "reduction")), "scatter_elements")};
  };
  return d;
}

OpDef scatter_nd_op() {
  OpDef d = def("scatter_nd", "data with update slices written at index tuples (ONNX ScatterND)",
                {"data", "indices", "updates"}, OpPattern::kOpaque);
  d.attrs = {reduction_attr()};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {scatter_nd(in[0], in[1], in[2], parse_scatter_reduce(attr_str(a, "reduction")), "scatter_nd")};
  };
  return d;
}

OpDef one_hot_op() {
  OpDef d = def("one_hot", "values[1] where the position along axis equals the index, values[0] elsewhere",
                {"indices", "values"}, OpPattern::kInjective);
  d.attrs = {attr("depth", AttrKind::kInt, std::nullopt, "the extent of the new axis"),
             attr("axis", AttrKind::kInt, int64_t(-1), "the new axis in the output; negative counts from the end")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {one_hot(in[0], in[1], attr_int(a, "depth"), int_attr(a, "axis", "one_hot"), "one_hot")};
  };
  return d;
}

OpDef trilu_op() {
  OpDef d = def("trilu", "the upper or lower triangle of the last two dims (k: diagonal offset), zeros elsewhere",
                {"data"}, OpPattern::kInjective);
  d.attrs = {attr("upper", AttrKind::kInt, int64_t(1), "1: column - row >= k, 0: column - row <= k"),
             attr("k", AttrKind::kInt, int64_t(0), "the diagonal offset")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {trilu(in[0], attr_int(a, "upper") != 0, attr_int(a, "k"), "trilu")};
  };
  return d;
}

OpDef cumulative_op(bool product) {
  const char* name = product ? "cumprod" : "cumsum";
  OpDef d = def(name, product ? "running product along axis" : "running sum along axis", {"data"},
                OpPattern::kOpaque);
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(0), "negative counts from the end"),
             attr("exclusive", AttrKind::kInt, int64_t(0), "1: the element itself is left out"),
             attr("reverse", AttrKind::kInt, int64_t(0), "1: from the end of the axis")};
  d.compute = [product, name](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {cumulative(in[0], int_attr(a, "axis", name), product, attr_int(a, "exclusive") != 0,
                       attr_int(a, "reverse") != 0, name)};
  };
  return d;
}

OpDef reverse_sequence_op() {
  OpDef d = def("reverse_sequence", "the first seq_lens[b] elements along time_axis reversed in every batch b",
                {"data", "seq_lens"}, OpPattern::kInjective);
  d.attrs = {attr("batch_axis", AttrKind::kInt, int64_t(1), ""), attr("time_axis", AttrKind::kInt, int64_t(0), "")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {reverse_sequence(in[0], in[1], int_attr(a, "batch_axis", "reverse_sequence"),
                             int_attr(a, "time_axis", "reverse_sequence"), "reverse_sequence")};
  };
  return d;
}

}  // namespace

std::vector<OpDef> shape_ops() {
  return {strided_slice_op(), tile_op(),       broadcast_to_op(),    gather_elements_op(),
          gather_nd_op(),     scatter_elements_op(), scatter_nd_op(), one_hot_op(),
          trilu_op(),         cumulative_op(false),  cumulative_op(true), reverse_sequence_op()};
}

}  // namespace loom::te::ops::detail
