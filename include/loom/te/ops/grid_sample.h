// Sampling an input at the points of a grid (ONNX's GridSample, PyTorch's grid_sample).
#pragma once
#include <cstdint>
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

enum class GridSampleMode : uint8_t { kNearest, kLinear, kCubic };
/// What a sample outside the input reads: zeros, the nearest border pixel, or the input
/// reflected at its borders.
enum class GridPadding : uint8_t { kZeros, kBorder, kReflection };

/// data [N, C, D1..Dk] sampled at grid [N, O1..Ok, k] -> [N, C, O1..Ok], k >= 1. The grid holds
/// normalized coordinates in [-1, 1], the last dim first (x, then y, then z): -1 and 1 are the
/// centres of the edge pixels with `align_corners`, else their outer edges. Nearest rounds
/// halves to even; linear weighs 2^k neighbours, cubic 4^k (Keys's kernel, a = -0.75). As ONNX
/// defines it: coordinates outside the input are first clamped (border) or reflected
/// (reflection), then each neighbour outside reads zero, its border pixel or its reflection.
/// Floating point data and grid. Tag "injective".
Tensor grid_sample(const Tensor& data, const Tensor& grid, GridSampleMode mode = GridSampleMode::kLinear,
                   GridPadding padding = GridPadding::kZeros, bool align_corners = false,
                   const std::string& name = "grid_sample");

}  // namespace loom::te::ops
