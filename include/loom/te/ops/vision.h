// Region and sampling operators of detection models: RoiAlign and deformable convolution
// (ONNX's RoiAlign and DeformConv).
#pragma once
#include <array>
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// The parameters of roi_align.
struct RoiAlignParams {
  int64_t output_height = 1, output_width = 1;
  /// Sample points per bin along each axis (positive; the adaptive 0 of ONNX is not taken).
  int64_t sampling_ratio = 1;
  double spatial_scale = 1.0;
  bool max_mode = false;    // max of the samples rather than their mean
  bool half_pixel = true;   // shift ROI corners by -0.5 (ONNX's "half_pixel")
};

/// Pools each region of interest rois[r] = (x1, y1, x2, y2) (image coordinates, times
/// spatial_scale) of image batch_indices[r] of data [N, C, H, W] into [R, C, output_height,
/// output_width]: each bin averages (or with max_mode takes the largest of) sampling_ratio²
/// bilinear samples of data; a sample farther than one pixel outside the image counts as 0.
/// Stages "<name>_samples" (a sum- or max-reduction over the sample grid, reduce axes "iy",
/// "ix") and the output (tag "roi_align"). rois is floating point, batch_indices integer.
Tensor roi_align(const Tensor& data, const Tensor& rois, const Tensor& batch_indices, const RoiAlignParams& p,
                 const std::string& name = "roi_align");

/// The window of deform_conv2d: {h, w} strides and dilations, pads {top, left, bottom, right}.
struct DeformConvParams {
  std::array<int64_t, 2> strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t groups = 1, offset_groups = 1;
};

/// Deformable 2-D convolution of data [N, C, H, W] by weight [M, C/groups, kh, kw] ->
/// [N, M, OH, OW] (OH, OW as a convolution's): each kernel tap (i, j) of output (y, x) reads
/// data at (y·sh − top + i·dh + Δh, x·sw − left + j·dw + Δw), bilinearly (zero outside the
/// image), with the offsets Δ of offset [N, offset_groups·kh·kw·2, OH, OW] (per offset group
/// of input channels, per tap, h then w) and scaled by mask [N, offset_groups·kh·kw, OH, OW]
/// when `mask` is defined. A defined bias [M] is added by a second stage. Reduce axes "rc",
/// "ry", "rx"; tag "deform_conv2d".
Tensor deform_conv2d(const Tensor& data, const Tensor& weight, const Tensor& offset, const Tensor& mask,
                     const Tensor& bias, const DeformConvParams& p, const std::string& name = "deform_conv2d");

}  // namespace loom::te::ops
