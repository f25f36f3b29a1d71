// Integer convolutions of quantized networks: uint8 data times int8 weights accumulated
// exactly in int32 (oneDNN's u8s8s32, ONNX's ConvInteger); the requantization that follows
// is the registry's `requantize` (loom/te/ops/quantize.h), fused as an epilogue.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

using Pair = std::array<int64_t, 2>;

/// Channel block of conv2d_nchwc_int8 (16 int32 lanes) and its reduction depth (4 bytes).
inline constexpr int64_t kInt8Block = 16;
inline constexpr int64_t kInt8Depth = 4;

/// sum(int32(data) · int32(kernel)) of data uint8 [N,C,H,W] and kernel int8 [K,C/groups,R,S]
/// -> int32 [N,K,OH,OW], zero-padded, as conv2d_nchw (depthwise_conv2d_nchw for groups = C = K).
Tensor conv2d_int8(const Tensor& data, const Tensor& kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                   Pair dilation = {1, 1}, int64_t groups = 1, const std::string& name = "conv2d_int8");

/// The same convolution on channel-blocked arrays, as the int8 templates lay them out:
/// data uint8 [N,C/16,H,W,16] (NCHW16c), kernel int8 [K/16,C/16,R,S,4,16,4] (input channel
/// c of a block at [.., c/4, k, c%4]) -> int32 [N,K/16,OH,OW,16]. Zero padding is a "pad"
/// stage; the reduction over "rco", "ry", "rx", "rc4", "rc1". Tag "conv2d_nchwc_int8".
Tensor conv2d_nchwc_int8(const Tensor& data, const Tensor& kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                         const std::string& name = "conv2d_nchwc_int8");

/// An int8 OIHW kernel [K,C,R,S] (K and C multiples of 16) in conv2d_nchwc_int8's layout.
Tensor pack_int8_kernel(const Tensor& kernel, const std::string& name = "pack_int8_kernel");

}  // namespace loom::te::ops
