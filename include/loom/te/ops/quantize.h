// Linear quantization (ONNX's QuantizeLinear / DequantizeLinear arithmetic) as te computes.
// `scale` and `zero_point` broadcast against `data` (numpy rules, to data's shape): one value,
// one per channel of an axis, or one per element. Tag "broadcast".
#pragma once
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// clamp(round_half_even(data / scale) + zero_point) to `dtype`'s range, as `dtype` (int8,
/// uint8, int16 or uint16), computed in data's floating-point type.
Tensor quantize(const Tensor& data, const Tensor& scale, const Tensor& zero_point, DataType dtype,
                const std::string& name = "quantize");

/// (float32(data) - float32(zero_point)) * float32(scale), as `dtype` (a floating-point type).
Tensor dequantize(const Tensor& data, const Tensor& scale, const Tensor& zero_point, DataType dtype,
                  const std::string& name = "dequantize");

/// An integer accumulator (int32) requantized: clamp(round_half_even(float32(acc) · multiplier)
/// + zero_point) to `dtype`'s range, as `dtype` — what integer convolution and matmul kernels
/// (ONNX Runtime's QLinearConv, oneDNN's u8s8s32 with output scales) compute.
Tensor requantize(const Tensor& acc, const Tensor& multiplier, const Tensor& zero_point, DataType dtype,
                  const std::string& name = "requantize");

}  // namespace loom::te::ops
