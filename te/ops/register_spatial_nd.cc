// Registry entries of the N-D window operators (conv3d, max/avg/Lp pooling and MaxPool's
// indices over 1 to 3 spatial dims, col2im, max_unpool) and of group normalization.
#include "op_util.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

std::vector<AttrSpec> window_attrs(bool pool) {
  std::vector<AttrSpec> a;
  if (pool) a.push_back(attr("pool_size", AttrKind::kInts, std::nullopt, "the window, one extent per spatial dim"));
  a.push_back(attr("strides", AttrKind::kInts, std::vector<int64_t>{}, "one per spatial dim ([]: all 1)"));
  a.push_back(attr("dilations", AttrKind::kInts, std::vector<int64_t>{}, "one per spatial dim ([]: all 1)"));
  a.push_back(attr("padding", AttrKind::kInts, std::vector<int64_t>{},
                   "the begins, then the ends of each spatial dim ([]: none)"));
  if (pool)
    a.push_back(attr("ceil_mode", AttrKind::kInt, int64_t(0),
                     "1: output extents round up (a last window may reach past the end padding)"));
  return a;
}

WindowNd window_of(const Attrs& a, bool pool) {
  WindowNd w;
  if (pool) w.kernel = attr_ints(a, "pool_size");
  w.strides = attr_ints(a, "strides");
  w.dilations = attr_ints(a, "dilations");
  w.pads = attr_ints(a, "padding");
  if (pool) w.ceil_mode = attr_int(a, "ceil_mode") != 0;
  return w;
}

OpDef conv3d_op() {
  OpDef d;
  d.name = "conv3d";
  d.doc = "3-D convolution, NCDHW data with OIDHW weight, groups, dilations, optional bias [K]";
  d.inputs = {"data", "weight", "bias"};
  d.min_inputs = 2;
  d.attrs = window_attrs(false);
  d.attrs.push_back(attr("groups", AttrKind::kInt, int64_t(1), "channel groups"));
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    Tensor out = conv3d_ncdhw(in[0], in[1], window_of(a, false), attr_int(a, "groups"), "conv3d");
    if (in.size() > 2) out = bias_add(out, in[2], 1, "", "bias_add");
    return {out};
  };
  return d;
}

OpDef pool_nd_op(const std::string& name, PoolNdKind kind) {
  OpDef d;
  d.name = name;
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = window_attrs(true);
  switch (kind) {
    case PoolNdKind::kMax: d.doc = "max over each window of [N,C,spatial...] data (padding never wins)"; break;
    case PoolNdKind::kAvg:
      d.doc = "mean over each window of [N,C,spatial...] data (taps inside the input, or with count_include_pad "
              "inside input and padding)";
      d.attrs.push_back(attr("count_include_pad", AttrKind::kInt, int64_t(0), "1: explicit padding counts as zeros"));
      break;
    case PoolNdKind::kLp:
      d.doc = "(sum |x|^p)^(1/p) over each window of [N,C,spatial...] data";
      d.attrs.push_back(attr("p", AttrKind::kFloat, 2.0, "the norm's exponent, positive"));
      break;
  }
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [name, kind](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const bool include = kind == PoolNdKind::kAvg && attr_int(a, "count_include_pad") != 0;
    const double p = kind == PoolNdKind::kLp ? attr_float(a, "p") : 2.0;
    return {pool_nd(in[0], kind, window_of(a, true), include, p, name)};
  };
  return d;
}

OpDef max_pool_nd_indices_op() {
  OpDef d;
  d.name = "max_pool_nd_indices";
  d.doc = "int64 position of each window's maximum in the data flattened over N, C and the spatial dims (ONNX "
          "MaxPool's Indices)";
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = window_attrs(true);
  d.attrs.push_back(attr("column_major", AttrKind::kInt, int64_t(0), "1: spatial offsets column-major"));
  // Two reductions (the max, then the first position holding it): a kernel of its own.
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {max_pool_nd_indices(in[0], window_of(a, true), attr_int(a, "column_major") != 0, "max_pool_nd_indices")};
  };
  return d;
}

OpDef col2im_op() {
  OpDef d;
  d.name = "col2im";
  d.doc = "sums the columns [N,C*prod(block),L] of sliding blocks back into an image [N,C,image...] (ONNX Col2Im)";
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {attr("image_shape", AttrKind::kInts, std::nullopt, "the image's spatial extents"),
             attr("block_shape", AttrKind::kInts, std::nullopt, "the block, one extent per spatial dim")};
  for (AttrSpec& a : window_attrs(false)) d.attrs.push_back(std::move(a));
  d.pattern = OpPattern::kOutEWiseFusable;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    WindowNd w = window_of(a, false);
    w.kernel = attr_ints(a, "block_shape");
    return {col2im(in[0], attr_ints(a, "image_shape"), w, "col2im")};
  };
  return d;
}

OpDef max_unpool_op() {
  OpDef d;
  d.name = "max_unpool";
  d.doc = "writes each element to the flat position its int64 index names in scatter_shape, placed at the start "
          "of output_shape (ONNX MaxUnpool; a gather scanning every index)";
  d.inputs = {"data", "indices"};
  d.min_inputs = 2;
  d.attrs = {attr("scatter_shape", AttrKind::kInts, std::nullopt, "the shape the indices are flat positions in"),
             attr("output_shape", AttrKind::kInts, std::nullopt, "the output's shape, each dim at least scatter_shape's")};
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {max_unpool(in[0], in[1], attr_ints(a, "scatter_shape"), attr_ints(a, "output_shape"), "max_unpool")};
  };
  return d;
}

OpDef group_norm_op() {
  OpDef d;
  d.name = "group_norm";
  d.doc = "(x - mean) / sqrt(var + epsilon) * gamma[c] + beta[c], statistics per sample and group of channels of "
          "[N,C,...] data";
  d.inputs = {"data", "gamma", "beta"};
  d.min_inputs = 3;
  d.attrs = {attr("groups", AttrKind::kInt, std::nullopt, "channel groups (C: instance normalization)"),
             attr("epsilon", AttrKind::kFloat, 1e-5, "added to the variance")};
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {group_norm(in[0], in[1], in[2], attr_int(a, "groups"), attr_float(a, "epsilon"), "group_norm")};
  };
  return d;
}

}  // namespace

std::vector<OpDef> spatial_nd_ops() {
  return {conv3d_op(),
          pool_nd_op("max_pool_nd", PoolNdKind::kMax),
          pool_nd_op("avg_pool_nd", PoolNdKind::kAvg),
          pool_nd_op("lp_pool_nd", PoolNdKind::kLp),
          max_pool_nd_indices_op(),
          col2im_op(),
          max_unpool_op(),
          group_norm_op()};
}

}  // namespace loom::te::ops::detail
