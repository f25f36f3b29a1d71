// Resizing (nearest, linear and cubic interpolation) as separable per-axis resampling: the
// taps of each output position along an axis (source indices and weights) are computed once
// on the host in double precision (resize_taps), and `resample` reads them from two small
// tables. ONNX's Resize and Upsample lower to one resample per resized axis.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te::ops {

enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };

/// How an output coordinate x maps to a source coordinate (ONNX's
/// coordinate_transformation_mode; scale = output / input extent, possibly not their ratio):
///   kHalfPixel            (x + 0.5) / scale - 0.5
///   kHalfPixelSymmetric   half_pixel about the centre of the input
///   kPytorchHalfPixel     half_pixel, but 0 ... -0.5 for an output extent of 1
///   kAlignCorners         x * (in - 1) / (out - 1)
///   kAsymmetric           x / scale
///   kTfCropAndResize      the region [roi_start, roi_end] of the input (fractions), outputs
///                         outside [0, in - 1] take the extrapolation value
///   kTfHalfPixelForNn     (x + 0.5) / scale (ONNX opsets 11 and 12, as tf2onnx wrote nearest)
enum class CoordinateMode : uint8_t {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn
};

/// Which neighbour nearest mode picks for a source coordinate between two pixels.
enum class NearestRounding : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateMode coordinate = CoordinateMode::kHalfPixel;
  NearestRounding nearest = NearestRounding::kRoundPreferFloor;
  /// The cubic kernel's a (-0.75 as PyTorch, -0.5 as TensorFlow).
  double cubic_a = -0.75;
  /// Taps outside the input get weight 0 and the rest are renormalized (else edge pixels repeat).
  bool exclude_outside = false;
  /// When downscaling (linear, cubic): the kernel stretched by 1/scale, a low-pass filter.
  bool antialias = false;
};

/// The taps of one axis: output position o reads source indices index[o*taps + t] (in [0, in),
/// or -1 for every tap of an extrapolated position) with weights weight[o*taps + t].
struct ResampleTaps {
  int64_t out = 0, taps = 0;
  std::vector<int32_t> index;
  std::vector<double> weight;
  /// Whether every output position reads its own index with weight 1 (resampling is a no-op).
  bool identity(int64_t in) const;
};

/// The most taps (outputs times kernel width) resize_taps tabulates for one axis.
inline constexpr int64_t kMaxResizeTaps = int64_t(1) << 24;

/// The taps of resizing an axis of `in` elements to `out` with scale factor `scale` (out / in
/// when the caller gave sizes); roi_start / roi_end matter for kTfCropAndResize only. These
/// follow ONNX's Resize definition (its reference implementation) exactly: nearest takes one
/// tap, linear two, cubic four, antialias as many as the stretched kernel covers. Throws
/// loom::Error for a non-positive extent or scale, or more than kMaxResizeTaps taps.
ResampleTaps resize_taps(int64_t in, int64_t out, double scale, const ResizeOptions& opt, double roi_start = 0.0,
                         double roi_end = 1.0);

/// x resampled along `axis`: out[..., o, ...] = sum_t weights[o, t] * x[..., indices[o, t], ...],
/// with indices [O, T] int32 and weights [O, T] floating point (computed in the weights' dtype,
/// converted to x's; integers rounded, halves to even, and saturated), or without weights (undefined) the single tap indices[o, 0] read as is
/// (nearest; any dtype). With an `extrapolation_value`, a position whose first index is
/// negative takes it. Indices outside [0, extent) are clamped. Tag "injective".
Tensor resample(const Tensor& x, const Tensor& indices, const Tensor& weights, int axis,
                std::optional<double> extrapolation_value = std::nullopt, const std::string& name = "resample");

}  // namespace loom::te::ops
