// Registry entries of the linear quantization operators (quantize, dequantize, requantize).
#include "loom/te/ops/quantize.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

using QuantFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, DataType, const std::string&);

OpDef quant_op(std::string name, std::string doc, std::vector<std::string> inputs, std::string dtype_doc, QuantFn f) {
  OpDef d;
  d.name = name;
  d.doc = std::move(doc);
  d.inputs = std::move(inputs);
  d.min_inputs = 3;
  d.pattern = OpPattern::kBroadcast;
  d.attrs = {attr("dtype", AttrKind::kString, std::nullopt, std::move(dtype_doc))};
  d.compute = [f, name](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {f(in[0], in[1], in[2], DataType::parse(attr_str(a, "dtype")), name)};
  };
  return d;
}

}  // namespace

std::vector<OpDef> quantize_ops() {
  return {quant_op("quantize", "clamp(round(data / scale) + zero_point) as int8/uint8/int16/uint16 (ONNX QuantizeLinear)",
                   {"data", "scale", "zero_point"}, "the quantized type: \"int8\", \"uint8\", \"int16\" or \"uint16\"",
                   quantize),
          quant_op("dequantize", "(data - zero_point) * scale in float32 (ONNX DequantizeLinear)",
                   {"data", "scale", "zero_point"}, "the result type: \"float32\", \"float16\" or \"float64\"", dequantize),
          quant_op("requantize",
                   "an int32 accumulator as clamp(round(acc * multiplier) + zero_point) in the quantized type "
                   "(integer convolution and matmul outputs)",
                   {"acc", "multiplier", "zero_point"}, "the quantized type: \"int8\", \"uint8\", \"int16\" or \"uint16\"",
                   requantize)};
}

}  // namespace loom::te::ops::detail
