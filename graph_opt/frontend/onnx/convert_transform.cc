// Converters of ONNX's shape and data-movement operators (Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Gather) and of those folded at import (Shape, Constant).
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// Sets output 0 to `v` reshaped to the ONNX shape `shape` (rank 0 allowed).
void output_shaped(Importer& im, Value v, const std::vector<int64_t>& shape) {
  im.set_output(0, im.reshape(v, shape), shape.empty());
}

void reshape(Importer& im) {
  const bool allowzero = im.opset() >= 14 && im.attr_int("allowzero", 0) != 0;
  std::vector<int64_t> in = im.input_shape(0);
  std::vector<int64_t> want = im.const_ints(1, "shape");
  std::vector<int64_t> out;
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < want.size(); ++d) {
    int64_t v = want[d];
    if (v == 0 && !allowzero) {
      if (d >= in.size()) im.invalid(fmt::format("shape {} copies dim {} (0) but the input is {}", shape_str(want), d, shape_str(in)));
      v = in[d];
    } else if (v == 0) {
      im.unsupported(fmt::format("shape {} with allowzero=1 makes an empty tensor", shape_str(want)));
    } else if (v == -1) {
      if (infer >= 0) im.invalid(fmt::format("shape {} has more than one -1", shape_str(want)));
      infer = int(d);
      out.push_back(1);
      continue;
    } else if (v < -1) {
      im.invalid(fmt::format("shape {} has a negative dim", shape_str(want)));
    }
    if (__builtin_mul_overflow(known, v, &known))
      im.invalid(fmt::format("shape {} has more than 2^63-1 elements", shape_str(want)));
    out.push_back(v);
  }
  const int64_t n = product(in);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      im.invalid(fmt::format("cannot reshape {} into {}: {} elements do not divide", shape_str(in), shape_str(want), n));
    out[size_t(infer)] = n / known;
  } else if (known != n) {
    im.invalid(fmt::format("cannot reshape {} ({} elements) into {}", shape_str(in), n, shape_str(out)));
  }
  output_shaped(im, im.input(0), out);
}

void flatten(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  int64_t axis = im.attr_int("axis", 1);
  const int64_t r = int64_t(in.size());
  if (axis < -r || axis > r) im.invalid(fmt::format("axis {} is out of range for rank {}", axis, r));
  if (axis < 0) axis += r;
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? rows : cols) *= in[size_t(d)];
  output_shaped(im, im.input(0), {rows, cols});
}

/// The axes of Squeeze, Unsqueeze and the reductions: an attribute before opset
/// `input_since`, input `input` from it on ({} when absent).
std::vector<int64_t> axes_input_or_attr(Importer& im, int input, int input_since) {
  if (im.opset() < input_since) {
    if (im.has_input(input))
      im.invalid(fmt::format("input {} (axes) is from opset {}; the model imports opset {}, whose axes are an attribute",
                             input, input_since, im.opset()));
    return im.attr_ints("axes", std::vector<int64_t>{});
  }
  if (im.has_input(input)) return im.const_ints(input, "axes");
  return {};
}

void squeeze(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  std::vector<int64_t> axes = axes_input_or_attr(im, 1, 13);
  std::vector<bool> drop(in.size(), false);
  if (axes.empty())
    for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
  for (int64_t a : axes) {
    size_t d = size_t(normalize_axis(im, a, in.size(), "axis"));
    if (in[d] != 1) im.invalid(fmt::format("cannot squeeze dim {} of {}: its extent is {}", d, shape_str(in), in[d]));
    drop[d] = true;
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  output_shaped(im, im.input(0), out);
}

void unsqueeze(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  std::vector<int64_t> axes = axes_input_or_attr(im, 1, 13);
  if (axes.empty()) im.invalid("no axes given");
  const size_t n = in.size() + axes.size();
  std::vector<bool> ins(n, false);
  for (int64_t a : axes) {
    size_t d = size_t(normalize_axis(im, a, n, "axis"));
    if (ins[d]) im.invalid(fmt::format("axis {} is given twice", d));
    ins[d] = true;
  }
  std::vector<int64_t> out;
  size_t j = 0;
  for (size_t d = 0; d < n; ++d) out.push_back(ins[d] ? 1 : in[j++]);
  output_shaped(im, im.input(0), out);
}

void transpose(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  std::vector<int64_t> perm = im.attr_ints("perm", std::vector<int64_t>{});
  if (perm.empty())
    for (size_t d = in.size(); d-- > 0;) perm.push_back(int64_t(d));
  if (perm.size() != in.size()) im.invalid(fmt::format("perm [{}] does not fit rank {}", fmt::join(perm, ","), in.size()));
  std::vector<bool> seen(in.size(), false);
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d) {
    int64_t p = normalize_axis(im, perm[d], in.size(), "perm entry");
    if (seen[size_t(p)]) im.invalid(fmt::format("perm [{}] repeats {}", fmt::join(perm, ","), p));
    seen[size_t(p)] = true;
    perm[d] = p;
    identity = identity && p == int64_t(d);
  }
  if (identity) return im.set_output(0, im.input(0), in.empty());
  im.set_output(0, im.op("transpose", {im.input(0)}, {{"axes", perm}}));
}

/// Concat; inputs without elements add nothing and are left out (all of them: an output without elements).
void concat(Importer& im) {
  const int64_t axis_attr = im.attr_int("axis");
  std::vector<Value> inputs;
  std::vector<int64_t> shape;
  bool any = false;
  for (int i = 0; i < im.num_inputs(); ++i) {
    if (!im.has_input(i)) continue;
    if (!im.input_empty(i) && im.input_scalar(i)) im.invalid(fmt::format("input {} is a scalar (rank 0)", i));
    const std::vector<int64_t> s = im.input_shape(i);
    if (!any) shape = s;
    const int64_t axis = normalize_axis(im, axis_attr, s.size(), "axis");
    bool fits = s.size() == shape.size();
    for (size_t d = 0; fits && d < s.size(); ++d) fits = int64_t(d) == axis || s[d] == shape[d];
    if (!fits) im.invalid(fmt::format("input {} {} does not fit the first input {} but on axis {}", i, shape_str(s), shape_str(shape), axis));
    if (any) shape[size_t(axis)] += s[size_t(axis)];
    any = true;
    if (!im.input_empty(i)) inputs.push_back(im.input(i));
  }
  if (!any) im.invalid("no inputs");
  const int64_t axis = normalize_axis(im, axis_attr, shape.size(), "axis");
  if (inputs.empty()) return im.set_empty_output(0, runtime::NDArray::empty(shape, im.input_dtype(0)));
  if (inputs.size() == 1) return im.set_output(0, inputs[0]);
  im.set_output(0, im.op("concat", inputs, {{"axis", axis}}));
}

void gather(Importer& im) {
  std::vector<int64_t> data = im.input_shape(0), idx = im.input_shape(1);
  if (data.empty()) im.invalid("data is a scalar");
  const int64_t axis = normalize_axis(im, im.attr_int("axis", 0), data.size(), "axis");
  Value indices = im.input(1);
  if (!im.type(indices).dtype.is_integer()) im.invalid("indices must be integers, got " + im.type(indices).dtype.str());
  if (const runtime::NDArray* c = im.constant_of(indices)) {
    for (int64_t k = 0; k < c->numel(); ++k) {
      int64_t i = int64_t(c->get(k));
      if (i < -data[size_t(axis)] || i >= data[size_t(axis)])
        im.invalid(fmt::format("index {} is out of range for extent {} of axis {}", i, data[size_t(axis)], axis));
    }
  }
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  // loom's take with [1]-shaped indices standing for a scalar keeps a dim of 1: reshape to ONNX's.
  output_shaped(im, im.op("take", {im.input(0), indices}, {{"axis", axis}}), out);
}

void shape(Importer& im) {
  std::vector<int64_t> in = im.input_shape(0);
  const int64_t r = int64_t(in.size());
  int64_t start = 0, end = r;
  if (im.opset() >= 15) {
    start = im.attr_int("start", 0);
    end = im.attr_int("end", r);
  }
  auto clampi = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t(0), r); };
  start = clampi(start);
  end = clampi(end);
  if (end <= start) im.unsupported(fmt::format("the slice [{}, {}) of a rank-{} shape is empty", start, end, r));
  runtime::NDArray a = runtime::NDArray::empty({end - start}, DataType::Int(64));
  for (int64_t d = start; d < end; ++d) a.data<int64_t>()[d - start] = in[size_t(d)];
  im.set_output(0, im.constant(a, "shape"));
}

void constant(Importer& im) {
  runtime::NDArray a;
  int set = 0;
  auto one = [&](std::vector<int64_t> shape, DataType t) { ++set; return runtime::NDArray::empty(std::move(shape), t); };
  // value_* from opset 12, sparse_value from 11; before, an unread attribute is an error.
  const bool since12 = im.opset() >= 12;
  for (const char* s : {"value_string", "value_strings"})
    if (since12 && im.has_attr(s)) im.unsupported(fmt::format("attribute '{}' (loom has no string tensors)", s));
  if (im.opset() >= 11 && im.has_attr("sparse_value")) im.unsupported("attribute 'sparse_value' (sparse tensors)");
  if (im.has_attr("value")) {
    ++set;
    a = tensor_to_array(im.attr_tensor("value"), "", im.where() + ": attribute 'value'");
  }
  if (since12 && im.has_attr("value_float")) {
    a = one({}, DataType::Float(32));
    a.data<float>()[0] = float(im.attr_float("value_float"));
  }
  if (since12 && im.has_attr("value_int")) {
    a = one({}, DataType::Int(64));
    a.data<int64_t>()[0] = im.attr_int("value_int");
  }
  if (since12 && im.has_attr("value_floats")) {
    std::vector<double> v = im.attr_floats("value_floats");
    if (v.empty()) im.unsupported("an empty value_floats (loom has no empty tensors)");
    a = one({int64_t(v.size())}, DataType::Float(32));
    for (size_t k = 0; k < v.size(); ++k) a.data<float>()[k] = float(v[k]);
  }
  if (since12 && im.has_attr("value_ints")) {
    std::vector<int64_t> v = im.attr_ints("value_ints");
    if (v.empty()) im.unsupported("an empty value_ints (loom has no empty tensors)");
    a = one({int64_t(v.size())}, DataType::Int(64));
    std::memcpy(a.raw_data(), v.data(), v.size() * sizeof(int64_t));
  }
  if (set == 0 && !since12)
    for (const char* s : {"value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings"})
      if (im.has_attr(s)) im.invalid(fmt::format("attribute '{}' is from opset 12; the model imports opset {}", s, im.opset()));
  if (set != 1) im.invalid(fmt::format("needs exactly one value attribute, has {}", set));
  if (a.numel() == 0) return im.set_empty_output(0, a);
  const bool scalar = a.ndim() == 0;
  im.set_output(0, im.constant(a, "value"), scalar);
}

}  // namespace

void add_transform_converters(std::map<std::string, Converter>& m) {
  m["Reshape"] = reshape;
  m["Flatten"] = flatten;
  m["Squeeze"] = squeeze;
  m["Unsqueeze"] = unsqueeze;
  m["Transpose"] = transpose;
  m["Concat"] = concat;
  m["Gather"] = gather;
  m["Shape"] = shape;
  m["Constant"] = constant;
}

}  // namespace loom::graph_opt::onnx_frontend
