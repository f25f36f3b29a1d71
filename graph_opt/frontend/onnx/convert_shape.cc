// Converters of ONNX's slicing, padding and index operators: Slice, Split, Pad,
// CenterCropPad, Expand, Tile, DepthToSpace, SpaceToDepth, Gather{Elements,ND},
// Scatter{,Elements,ND}, OneHot, Trilu, CumSum, CumProd, ReverseSequence, and those folded
// at import (Range, EyeLike).
#include <fmt/ranges.h>

#include <cmath>

#include "loom/te/ops/shape.h"
#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

std::vector<int64_t> iota(size_t n) {
  std::vector<int64_t> v(n);
  for (size_t d = 0; d < n; ++d) v[d] = int64_t(d);
  return v;
}

/// Axes (each normalized, none twice) from `given`, or 0..count-1 when empty.
std::vector<int64_t> axes_of(const Importer& im, std::vector<int64_t> given, size_t count, size_t rank) {
  if (given.empty()) return iota(count);
  std::vector<bool> seen(rank, false);
  for (int64_t& a : given) {
    a = normalize_axis(im, a, rank, "axis");
    if (seen[size_t(a)]) im.invalid(fmt::format("axis {} is given twice in axes [{}]", a, fmt::join(given, ",")));
    seen[size_t(a)] = true;
  }
  return given;
}

void require_rank(const Importer& im, const std::vector<int64_t>& shape, size_t at_least, const char* what) {
  if (shape.size() < at_least)
    im.invalid(fmt::format("{} is {} but needs at least {} dim{}", what, shape.empty() ? "a scalar" : shape_str(shape),
                           at_least, at_least == 1 ? "" : "s"));
}

void require_integer_input(const Importer& im, int i, const char* what) {
  if (!im.input_dtype(i).is_integer()) im.invalid(fmt::format("{} must be integers, got {}", what, im.input_dtype(i).str()));
}

/// Output 0 as `data` sliced [begin:end:step] along `axes` (ONNX Slice rules).
Value slice_value(Importer& im, Value data, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes,
                  const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                  const std::vector<int64_t>& steps) {
  std::vector<int64_t> begin(shape.size(), 0), end = shape, stride(shape.size(), 1);
  bool identity = true;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = size_t(axes[k]);
    if (steps[k] == 0) im.invalid(fmt::format("steps [{}] has a 0 (axis {})", fmt::join(steps, ","), d));
    begin[d] = starts[k];
    end[d] = ends[k];
    stride[d] = steps[k];
    int64_t first = 0;
    const int64_t ext = te::ops::slice_extent(shape[d], starts[k], ends[k], steps[k], &first);
    if (ext == 0)
      im.unsupported(fmt::format("slicing axis {} (extent {}) by [{}:{}:{}] is empty; loom has no empty tensors", d,
                                 shape[d], starts[k], ends[k], steps[k]));
    identity = identity && ext == shape[d] && steps[k] == 1;
  }
  if (identity) return data;
  return im.op("strided_slice", {data}, {{"begin", begin}, {"end", end}, {"strides", stride}});
}

void slice(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  require_rank(im, in, 1, "the input");
  std::vector<int64_t> starts, ends, axes, steps;
  if (im.opset() < 10) {
    starts = im.attr_ints("starts");
    ends = im.attr_ints("ends");
    axes = im.attr_ints("axes", std::vector<int64_t>{});
  } else {
    starts = im.const_ints(1, "starts");
    ends = im.const_ints(2, "ends");
    if (im.has_input(3)) axes = im.const_ints(3, "axes");
    if (im.has_input(4)) steps = im.const_ints(4, "steps");
  }
  if (ends.size() != starts.size())
    im.invalid(fmt::format("starts has {} values but ends {}", starts.size(), ends.size()));
  if (!axes.empty() && axes.size() != starts.size())
    im.invalid(fmt::format("starts has {} values but axes {}", starts.size(), axes.size()));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (steps.size() != starts.size())
    im.invalid(fmt::format("starts has {} values but steps {}", starts.size(), steps.size()));
  if (starts.size() > in.size())
    im.invalid(fmt::format("{} starts for an input of rank {}", starts.size(), in.size()));
  axes = axes_of(im, axes, starts.size(), in.size());
  // A slice without elements is a value without elements (a shape's empty prefix).
  std::vector<int64_t> out = in;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (steps[k] == 0) im.invalid(fmt::format("steps [{}] has a 0 (axis {})", fmt::join(steps, ","), axes[k]));
    int64_t first = 0;
    out[size_t(axes[k])] = te::ops::slice_extent(in[size_t(axes[k])], starts[k], ends[k], steps[k], &first);
  }
  if (product(out) == 0) return im.set_empty_output(0, runtime::NDArray::empty(out, im.input_dtype(0)));
  im.set_output(0, slice_value(im, im.input(0), in, axes, starts, ends, steps));
}

void split(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  require_rank(im, in, 1, "the input");
  const size_t axis = size_t(normalize_axis(im, im.attr_int("axis", 0), in.size(), "axis"));
  const int64_t n = in[axis];
  const int outputs = im.node().output_size();
  std::vector<int64_t> parts;
  if (im.opset() < 13 && im.has_attr("split")) parts = im.attr_ints("split");
  if (im.opset() >= 13 && im.has_input(1)) parts = im.const_ints(1, "split");
  const bool has_num = im.opset() >= 18 && im.has_attr("num_outputs");
  if (has_num) {
    const int64_t k = im.attr_int("num_outputs");
    if (!parts.empty()) im.invalid("both the split input and num_outputs are given");
    if (k < 1) im.invalid(fmt::format("num_outputs is {}; it must be positive", k));
    if (k != outputs) im.invalid(fmt::format("num_outputs is {} but the node has {} outputs", k, outputs));
    // Chunks of ceil(n / k), the last one smaller.
    const int64_t chunk = (n + k - 1) / k;
    for (int64_t at = 0; at < n; at += chunk) parts.push_back(std::min(chunk, n - at));
    if (int64_t(parts.size()) != k)
      im.invalid(fmt::format("axis {} of extent {} cannot be split into {} chunks of {}", axis, n, k, chunk));
  } else if (parts.empty()) {
    if (outputs < 1 || n % outputs != 0)
      im.invalid(fmt::format("axis {} of extent {} does not split into {} equal parts", axis, n, outputs));
    parts.assign(size_t(outputs), n / outputs);
  }
  if (int64_t(parts.size()) != outputs)
    im.invalid(fmt::format("split [{}] has {} parts but the node has {} outputs", fmt::join(parts, ","), parts.size(),
                           outputs));
  int64_t total = 0;
  for (int64_t p : parts) {
    if (p < 0) im.invalid(fmt::format("split [{}] has a negative part", fmt::join(parts, ",")));
    total += p;
  }
  if (total != n)
    im.invalid(fmt::format("split [{}] sums to {} but axis {} has extent {}", fmt::join(parts, ","), total, axis, n));
  int64_t at = 0;
  for (int k = 0; k < outputs; ++k) {
    const int64_t p = parts[size_t(k)];
    if (im.output_used(k)) {
      if (p == 0 || im.input_empty(0)) {
        std::vector<int64_t> shape = in;
        shape[axis] = p;
        im.set_empty_output(k, runtime::NDArray::empty(shape, im.input_dtype(0)));
      } else {
        im.set_output(k, slice_value(im, im.input(0), in, {int64_t(axis)}, {at}, {at + p}, {1}));
      }
    }
    at += p;
  }
}

/// Output 0 as input 0 padded by pads (begins of `axes`, then ends; negative crops).
void pad_output(Importer& im, const std::vector<int64_t>& in, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& pads, const std::string& mode, double value) {
  if (pads.size() != 2 * axes.size())
    im.invalid(fmt::format("pads has {} values; {} axes need {}", pads.size(), axes.size(), 2 * axes.size()));
  if (in.empty()) im.invalid("cannot pad a scalar");
  std::vector<int64_t> full(2 * in.size(), 0);
  bool any = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = size_t(axes[k]);
    const int64_t b = pads[k], e = pads[k + axes.size()];
    full[d] = b;
    full[d + in.size()] = e;
    any = any || b || e;
    if (in[d] + b + e <= 0)
      im.unsupported(fmt::format("pads {} leave axis {} (extent {}) empty; loom has no empty tensors",
                                 shape_str(pads), d, in[d]));
  }
  if (!any) return im.set_output(0, im.input(0));
  im.set_output(0, im.op("pad", {im.input(0)}, {{"pads", full}, {"pad_value", value}, {"mode", mode}}));
}

void pad(Importer& im) {
  const std::string mode = im.attr_str("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && !(mode == "wrap" && im.opset() >= 19))
    im.invalid(fmt::format("mode '{}' is not one of constant, edge, reflect{}", mode, im.opset() >= 19 ? ", wrap" : ""));
  std::vector<int64_t> in = im.input_shape(0);
  std::vector<int64_t> pads, axes;
  double value = 0.0;
  if (im.opset() < 11) {
    pads = im.attr_ints("pads");
    value = im.attr_float("value", 0.0);
  } else {
    pads = im.const_ints(1, "pads");
    if (im.has_input(2) && !im.input_empty(2)) value = im.const_scalar(2, "constant_value");
    if (im.has_input(3)) axes = im.const_ints(3, "axes");
  }
  axes = axes_of(im, axes, in.size(), in.size());
  pad_output(im, in, axes, pads, mode, value);
}

void center_crop_pad(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  std::vector<int64_t> shape = im.const_ints(1, "shape");
  std::vector<int64_t> axes = axes_of(im, im.attr_ints("axes", std::vector<int64_t>{}), in.size(), in.size());
  if (shape.size() != axes.size())
    im.invalid(fmt::format("shape {} has {} values for {} axes", shape_str(shape), shape.size(), axes.size()));
  std::vector<int64_t> pads(2 * axes.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t n = in[size_t(axes[k])], t = shape[k];
    if (t <= 0) im.unsupported(fmt::format("target extent {} (loom has no empty tensors)", t));
    // Centred as ONNX: half of a pad (d > 0) or crop (d < 0), rounded toward zero, before.
    const int64_t d = t - n, before = d / 2;
    pads[k] = before;
    pads[k + axes.size()] = d - before;
  }
  pad_output(im, in, axes, pads, "constant", 0.0);
}

void expand(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0), want = im.const_ints(1, "shape");
  const size_t r = std::max(in.size(), want.size());
  std::vector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t a = k + in.size() >= r ? in[k + in.size() - r] : 1;
    const int64_t b = k + want.size() >= r ? want[k + want.size() - r] : 1;
    if (a != b && a != 1 && b != 1)
      im.invalid(fmt::format("input {} cannot be expanded to {}", shape_str(in), shape_str(want)));
    out[k] = a == 1 ? b : a;
    if (out[k] <= 0) im.unsupported(fmt::format("expanding to {} makes an empty tensor", shape_str(want)));
  }
  if (out == in) return im.set_output(0, im.input(0), im.input_scalar(0));
  Value x = im.input(0);
  if (in.empty()) x = im.reshape(x, std::vector<int64_t>(r, 1));
  im.set_output(0, im.op("broadcast_to", {x}, {{"shape", out}}), out.empty());
}

void tile(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0), reps = im.const_ints(1, "repeats");
  require_rank(im, in, 1, "the input");
  if (reps.size() != in.size())
    im.invalid(fmt::format("repeats has {} values for an input of rank {}", reps.size(), in.size()));
  for (int64_t r : reps) {
    if (r < 0) im.invalid(fmt::format("repeats [{}] has a negative count", fmt::join(reps, ",")));
    if (r == 0) im.unsupported(fmt::format("repeats [{}] makes an empty tensor", fmt::join(reps, ",")));
  }
  if (reps == std::vector<int64_t>(in.size(), 1)) return im.set_output(0, im.input(0));
  im.set_output(0, im.op("tile", {im.input(0)}, {{"reps", reps}}));
}

void depth_to_space(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  const int64_t b = im.attr_int("blocksize");
  const std::string mode = im.opset() >= 11 ? im.attr_str("mode", "DCR") : "DCR";
  if (in.size() != 4) im.invalid(fmt::format("the input is {}; it must be 4-D [N, C, H, W]", shape_str(in)));
  if (b < 1) im.invalid(fmt::format("blocksize {} must be positive", b));
  const int64_t n = in[0], c = in[1], h = in[2], w = in[3];
  if (c % (b * b) != 0) im.invalid(fmt::format("channels {} are not a multiple of blocksize² = {}", c, b * b));
  Value x;
  if (mode == "DCR") {
    x = im.reshape(im.input(0), {n, b, b, c / (b * b), h, w});
    x = im.op("transpose", {x}, {{"axes", std::vector<int64_t>{0, 3, 4, 1, 5, 2}}});
  } else if (mode == "CRD") {
    x = im.reshape(im.input(0), {n, c / (b * b), b, b, h, w});
    x = im.op("transpose", {x}, {{"axes", std::vector<int64_t>{0, 1, 4, 2, 5, 3}}});
  } else {
    im.invalid(fmt::format("mode '{}' is not DCR or CRD", mode));
  }
  im.set_output(0, im.reshape(x, {n, c / (b * b), h * b, w * b}));
}

void space_to_depth(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  const int64_t b = im.attr_int("blocksize");
  const std::string mode = im.has_attr("mode") ? im.attr_str("mode") : "DCR";
  if (in.size() != 4) im.invalid(fmt::format("the input is {}; it must be 4-D [N, C, H, W]", shape_str(in)));
  if (b < 1) im.invalid(fmt::format("blocksize {} must be positive", b));
  const int64_t n = in[0], c = in[1], h = in[2], w = in[3];
  if (h % b != 0 || w % b != 0) im.invalid(fmt::format("H {} and W {} must be multiples of blocksize {}", h, w, b));
  Value x = im.reshape(im.input(0), {n, c, h / b, b, w / b, b});
  std::vector<int64_t> perm;
  if (mode == "DCR") perm = {0, 3, 5, 1, 2, 4};
  else if (mode == "CRD") perm = {0, 1, 3, 5, 2, 4};
  else im.invalid(fmt::format("mode '{}' is not DCR or CRD", mode));
  x = im.op("transpose", {x}, {{"axes", perm}});
  im.set_output(0, im.reshape(x, {n, c * b * b, h / b, w / b}));
}

/// Checks every element of a constant index input against the extents it addresses.
void check_const_indices(Importer& im, int input, const std::function<int64_t(int64_t flat)>& extent_at) {
  const runtime::NDArray* c = im.constant_of(im.input(input));
  if (!c) return;
  for (int64_t k = 0; k < c->numel(); ++k) {
    const int64_t i = int64_t(c->get(k)), n = extent_at(k);
    if (i < -n || i >= n) im.invalid(fmt::format("index {} (element {} of input {}) is out of range for extent {}", i, k, input, n));
  }
}

void gather_elements(Importer& im) {
  std::vector<int64_t> data = im.input_shape(0), idx = im.input_shape(1);
  require_rank(im, data, 1, "data");
  require_integer_input(im, 1, "indices");
  const int64_t axis = normalize_axis(im, im.attr_int("axis", 0), data.size(), "axis");
  if (idx.size() != data.size())
    im.invalid(fmt::format("data is {} but indices is {}; their ranks must match", shape_str(data), shape_str(idx)));
  check_const_indices(im, 1, [&](int64_t) { return data[size_t(axis)]; });
  im.set_output(0, im.op("gather_elements", {im.input(0), im.input(1)}, {{"axis", axis}}));
}

void gather_nd(Importer& im) {
  std::vector<int64_t> data = im.input_shape(0), idx = im.input_shape(1);
  require_rank(im, data, 1, "data");
  require_rank(im, idx, 1, "indices");
  require_integer_input(im, 1, "indices");
  const int64_t b = im.opset() >= 12 ? im.attr_int("batch_dims", 0) : 0;
  const int64_t k = idx.back();
  if (b < 0 || b >= int64_t(std::min(data.size(), idx.size())))
    im.invalid(fmt::format("batch_dims {} must be below the ranks of data {} and indices {}", b, shape_str(data),
                           shape_str(idx)));
  if (k < 1 || b + k > int64_t(data.size()))
    im.invalid(fmt::format("indices {} address {} dims but data {} has {} after {} batch dims", shape_str(idx), k,
                           shape_str(data), int64_t(data.size()) - b, b));
  check_const_indices(im, 1, [&](int64_t flat) { return data[size_t(b + flat % k)]; });
  std::vector<int64_t> out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  im.set_output(0, im.op("gather_nd", {im.input(0), im.input(1)}, {{"batch_dims", b}}), out.empty());
}

std::string reduction_of(Importer& im) {
  if (im.opset() < 16) return "none";
  const std::string r = im.attr_str("reduction", "none");
  const bool known = r == "none" || r == "add" || r == "mul" || (im.opset() >= 18 && (r == "max" || r == "min"));
  if (!known) im.invalid(fmt::format("reduction '{}' is not one of none, add, mul{}", r, im.opset() >= 18 ? ", max, min" : ""));
  return r;
}

void scatter_elements(Importer& im) {
  std::vector<int64_t> data = im.input_shape(0), idx = im.input_shape(1), upd = im.input_shape(2);
  require_rank(im, data, 1, "data");
  require_integer_input(im, 1, "indices");
  const int64_t axis = normalize_axis(im, im.attr_int("axis", 0), data.size(), "axis");
  const std::string reduction = im.node().op_type() == "Scatter" ? "none" : reduction_of(im);
  if (idx != upd) im.invalid(fmt::format("indices {} and updates {} must have the same shape", shape_str(idx), shape_str(upd)));
  check_const_indices(im, 1, [&](int64_t) { return data[size_t(axis)]; });
  im.set_output(0, im.op("scatter_elements", {im.input(0), im.input(1), im.input(2)},
                         {{"axis", axis}, {"reduction", reduction}}));
}

void scatter_nd(Importer& im) {
  std::vector<int64_t> data = im.input_shape(0), idx = im.input_shape(1);
  require_rank(im, data, 1, "data");
  require_rank(im, idx, 1, "indices");
  require_integer_input(im, 1, "indices");
  const std::string reduction = reduction_of(im);
  const int64_t k = idx.back();
  if (k < 1 || k > int64_t(data.size()))
    im.invalid(fmt::format("indices {} address {} dims of data {}", shape_str(idx), k, shape_str(data)));
  check_const_indices(im, 1, [&](int64_t flat) { return data[size_t(flat % k)]; });
  im.set_output(0, im.op("scatter_nd", {im.input(0), im.input(1), im.input(2)}, {{"reduction", reduction}}));
}

void one_hot(Importer& im) {
  std::vector<int64_t> idx = im.input_shape(0);
  const double depth_v = im.const_scalar(1, "depth");
  const int64_t depth = int64_t(std::trunc(depth_v));
  if (depth < 1) im.unsupported(fmt::format("depth {} makes an empty tensor", depth_v));
  std::vector<int64_t> values = im.input_shape(2);
  if (values.size() != 1 || values[0] != 2)
    im.invalid(fmt::format("values is {}; it must hold 2 elements [off, on]", shape_str(values)));
  const int64_t rank = int64_t(idx.size()) + 1;
  const int64_t axis = normalize_axis(im, im.attr_int("axis", -1), size_t(rank), "axis");
  Value indices = im.input(0);
  if (idx.empty()) {
    im.set_output(0, im.reshape(im.op("one_hot", {indices, im.input(2)}, {{"depth", depth}, {"axis", int64_t(1)}}),
                                {depth}));
    return;
  }
  im.set_output(0, im.op("one_hot", {indices, im.input(2)}, {{"depth", depth}, {"axis", axis}}));
}

void trilu(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  require_rank(im, in, 2, "the input");
  const int64_t upper = im.attr_int("upper", 1);
  int64_t k = 0;
  if (im.has_input(1)) k = int64_t(im.const_scalar(1, "k"));
  im.set_output(0, im.op("trilu", {im.input(0)}, {{"upper", int64_t(upper != 0)}, {"k", k}}));
}

void cumulative(Importer& im, const char* op) {
  std::vector<int64_t> in = im.input_shape(0);
  require_rank(im, in, 1, "x");
  const int64_t axis = normalize_axis(im, int64_t(im.const_scalar(1, "axis")), in.size(), "axis");
  const int64_t exclusive = im.attr_int("exclusive", 0) != 0, reverse = im.attr_int("reverse", 0) != 0;
  const DataType t = im.input_dtype(0);
  if (t.is_bool()) im.invalid(fmt::format("x is {}; {} takes numbers", t.str(), op));
  im.set_output(0, im.op(op, {im.input(0)}, {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}}));
}

void reverse_sequence(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0), lens = im.input_shape(1);
  require_rank(im, in, 2, "the input");
  require_integer_input(im, 1, "sequence_lens");
  const int64_t batch = normalize_axis(im, im.attr_int("batch_axis", 1), in.size(), "batch_axis");
  const int64_t time = normalize_axis(im, im.attr_int("time_axis", 0), in.size(), "time_axis");
  if (batch == time) im.invalid(fmt::format("batch_axis and time_axis are both {}", batch));
  if (lens.size() != 1 || lens[0] != in[size_t(batch)])
    im.invalid(fmt::format("sequence_lens is {}; it must be 1-D of the batch extent {}", shape_str(lens), in[size_t(batch)]));
  check_const_indices(im, 1, [&](int64_t) { return in[size_t(time)] + 1; });
  im.set_output(0, im.op("reverse_sequence", {im.input(0), im.input(1)},
                         {{"batch_axis", batch}, {"time_axis", time}}));
}

void range(Importer& im) {
  const std::string need = " (loom folds Range at import: start, limit and delta must be constants)";
  const double start = im.const_scalar(0, "start" + need), limit = im.const_scalar(1, "limit" + need),
               delta = im.const_scalar(2, "delta" + need);
  const DataType t = im.input_dtype(0);
  if (delta == 0) im.invalid("delta is 0");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (count > double(int64_t(1) << 31)) im.unsupported(fmt::format("a range of {} elements", count));
  runtime::NDArray a = runtime::NDArray::empty({int64_t(count)}, t);
  if (count == 0) return im.set_empty_output(0, a);
  for (int64_t k = 0; k < int64_t(count); ++k) a.set(k, start + double(k) * delta);
  im.set_output(0, im.constant(a, "range"));
}

void eye_like(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  if (in.size() != 2) im.invalid(fmt::format("the input is {}; it must be 2-D", in.empty() ? "a scalar" : shape_str(in)));
  const DataType t = im.has_attr("dtype") ? to_dtype(int(im.attr_int("dtype")), im.where() + ": attribute 'dtype'")
                                           : im.input_dtype(0);
  const int64_t k = im.attr_int("k", 0);
  runtime::NDArray a = runtime::NDArray::empty(in, t);
  for (int64_t r = 0; r < in[0]; ++r)
    for (int64_t c = 0; c < in[1]; ++c) a.set(r * in[1] + c, c - r == k ? 1.0 : 0.0);
  im.set_output(0, im.constant(a, "eye"));
}

}  // namespace

void add_shape_converters(std::map<std::string, Converter>& m) {
  m["Slice"] = slice;
  m["Split"] = split;
  m["Pad"] = pad;
  m["CenterCropPad"] = center_crop_pad;
  m["Expand"] = expand;
  m["Tile"] = tile;
  m["DepthToSpace"] = depth_to_space;
  m["SpaceToDepth"] = space_to_depth;
  m["GatherElements"] = gather_elements;
  m["GatherND"] = gather_nd;
  m["Scatter"] = scatter_elements;
  m["ScatterElements"] = scatter_elements;
  m["ScatterND"] = scatter_nd;
  m["OneHot"] = one_hot;
  m["Trilu"] = trilu;
  m["CumSum"] = [](Importer& im) { cumulative(im, "cumsum"); };
  m["CumProd"] = [](Importer& im) { cumulative(im, "cumprod"); };
  m["ReverseSequence"] = reverse_sequence;
  m["Range"] = range;
  m["EyeLike"] = eye_like;
}

}  // namespace loom::graph_opt::onnx_frontend
