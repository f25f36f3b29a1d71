// Converters of operators that pass a tensor on or make one from a shape: Identity, Dropout
// (inference: the input itself), CastLike, and Size and ConstantOfShape, which are constants
// at import.
#include <fmt/ranges.h>

#include "loom/runtime/shape.h"
#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// An array of `shape` and dtype `t` with every element `v`, within the limit on the
/// constants the import makes.
runtime::NDArray filled(Importer& im, const std::vector<int64_t>& shape, DataType t, double v) {
  const int64_t bytes = runtime::checked_byte_count(shape, t, im.where());
  if (bytes > kMaxBroadcastBytes)
    im.unsupported(fmt::format("a constant {} of {} bytes (at most {} bytes)", shape_str(shape), bytes, kMaxBroadcastBytes));
  runtime::NDArray a = runtime::NDArray::empty(shape, t);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, v);
  return a;
}

void identity(Importer& im) { im.set_output(0, im.input(0), im.input_scalar(0)); }

/// Dropout at inference passes its input on; the mask (bool from opset 10, the input's type
/// before) keeps everything.
void dropout(Importer& im) {
  if (im.opset() < 12) {
    im.attr_float("ratio", 0.5);  // only for training
  } else {
    im.ignore_attr("seed");  // likewise
    // The ratio input (1) scales nothing at inference, so it may be computed at run time;
    // in training mode only a ratio of 0 (which drops nothing) is deterministic.
    if (im.has_input(2) && im.const_scalar(2, "training_mode") != 0.0) {
      const double ratio = im.has_input(1) ? im.const_scalar(1, "ratio") : 0.5;
      if (ratio != 0.0)
        im.unsupported(fmt::format("training_mode=true with ratio {} drops at random (loom imports inference graphs)", ratio));
    }
  }
  Value x = im.input(0);
  const bool scalar = im.input_scalar(0);
  im.set_output(0, x, scalar);
  if (!im.output_used(1)) return;
  const DataType mask_type = im.opset() >= 10 ? DataType::Bool() : im.type(x).dtype;
  im.set_output(1, im.constant(filled(im, im.type(x).shape, mask_type, 1.0), "mask"), scalar);
}

void size(Importer& im) {
  runtime::NDArray a = runtime::NDArray::empty({}, DataType::Int(64));
  a.data<int64_t>()[0] = product(im.input_shape(0));
  im.set_output(0, im.constant(a, "size"), true);
}

void constant_of_shape(Importer& im) {
  std::vector<int64_t> shape = im.const_ints(0, "shape");
  for (int64_t d : shape)
    if (d < 0) im.invalid(fmt::format("shape {} has a negative dim", shape_str(shape)));
  DataType t = DataType::Float(32);
  double v = 0.0;
  if (im.has_attr("value")) {
    runtime::NDArray value = tensor_to_array(im.attr_tensor("value"), "", im.where() + ": attribute 'value'");
    if (value.numel() != 1) im.invalid(fmt::format("value must hold one element, got shape {}", shape_str(value.shape())));
    t = value.dtype();
    v = value.get(0);
  }
  runtime::NDArray a = filled(im, shape, t, v);
  if (a.numel() == 0) return im.set_empty_output(0, a);
  im.set_output(0, im.constant(a, "value"), shape.empty());
}

void cast_like(Importer& im) {
  if (im.opset() >= 19) im.ignore_attr("saturate");  // only for float8 targets, which loom lacks
  if (im.opset() >= 24) im.ignore_attr("round_mode");  // likewise
  const DataType to = im.input_dtype(1);  // target_type's values are not read: it may have no elements
  Value x = im.input(0);
  if (im.type(x).dtype == to) return im.set_output(0, x, im.input_scalar(0));
  im.set_output(0, im.op("cast", {x}, {{"dtype", to.str()}}), im.input_scalar(0));
}

}  // namespace

void add_tensor_converters(std::map<std::string, Converter>& m) {
  m["Identity"] = identity;
  m["Dropout"] = dropout;
  m["Size"] = size;
  m["ConstantOfShape"] = constant_of_shape;
  m["CastLike"] = cast_like;
}

}  // namespace loom::graph_opt::onnx_frontend
