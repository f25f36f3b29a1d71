// Convolution and pooling over any number of spatial dims (1-D, 2-D, 3-D), with ONNX's
// window semantics: per-dim strides and dilations, padding that differs at the two ends,
// ceil_mode. Data is [N, C, spatial...].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// A window sliding over the spatial dims of [N, C, spatial...] data: one entry per spatial
/// dim in `kernel`, `strides` and `dilations` (empty: all 1); `pads` holds the begins then
/// the ends (2 per dim; empty: none). With `ceil_mode` the output extent rounds up (a window
/// may reach past the end padding, never start in it), as ONNX's pools do.
struct WindowNd {
  std::vector<int64_t> kernel, strides, dilations, pads;
  bool ceil_mode = false;
};

/// Output extents of `window` over spatial extents `in`; throws naming `op` when a window
/// does not fit or an attribute has the wrong length or sign.
std::vector<int64_t> window_out_extents(std::string_view op, const std::vector<int64_t>& in, const WindowNd& window);

/// 3-D convolution: data [N,C,D,H,W], kernel [K,C/groups,KD,KH,KW] -> [N,K,OD,OH,OW] (window.kernel
/// ignored: the kernel's extents; no ceil_mode). Tag "conv3d_ncdhw", reduce axes "rc", "rz", "ry", "rx".
Tensor conv3d_ncdhw(const Tensor& data, const Tensor& kernel, const WindowNd& window, int64_t groups = 1,
                    const std::string& name = "conv3d_ncdhw");

enum class PoolNdKind : uint8_t { kMax, kAvg, kLp };

/// Max, mean or Lp norm over each window of [N,C,spatial...] data (any spatial rank >= 1).
/// Max ignores padding. Mean divides by the window's taps inside the input, or with
/// `count_include_pad` inside input and explicit pads (never the ceil_mode excess). Lp is
/// (sum |x|^p)^(1/p) (padding adds nothing). A window stage "<name>_sum" (tag "pool_sum")
/// precedes the mean's and Lp's output; max is one stage, tag "pool_max".
Tensor pool_nd(const Tensor& data, PoolNdKind kind, const WindowNd& window, bool count_include_pad = false,
               double p = 2.0, const std::string& name = "pool_nd");

/// The position of each window's maximum (the first in row-major window order among equals)
/// as ONNX's MaxPool Indices: an int64 offset into the data flattened over N, C and the
/// spatial dims, row-major (`column_major` false) or column-major over the spatial dims.
/// Stages "<name>_max" (tag "pool_max") and the output (tag "pool_argmax").
Tensor max_pool_nd_indices(const Tensor& data, const WindowNd& window, bool column_major = false,
                           const std::string& name = "max_pool_nd_indices");

/// ONNX's Col2Im: sums the columns of data [N, C·prod(block), L] back into an image [N, C,
/// image...]: column l's entry for block offset k adds to the image position
/// pos(l)·stride + k·dilation − pad_begin of each spatial dim, where pos(l) is l's position in
/// the grid of (image + pads − dilation·(block − 1) − 1) / stride + 1 windows per dim, which
/// must multiply to L. `window.kernel` is the block; no ceil_mode. One stage, tag "col2im",
/// a sum over the block offsets that reach each position.
Tensor col2im(const Tensor& data, const std::vector<int64_t>& image, const WindowNd& window,
              const std::string& name = "col2im");

/// ONNX's MaxUnpool: each element of data is written to the position its int64 index names
/// in an array of `scatter_shape` flattened (the last of equal indices wins; positions no
/// index names are 0), which is then placed at the start of each dim of `out_shape` (each
/// dim at least scatter_shape's; the rest 0). data and indices have one shape. As a gather,
/// each output element scans every index (O(|out|·|data|)). Stages "<name>_source" (the
/// position of the element written there, or -1; tag "unpool_source") and the output (tag
/// "unpool").
Tensor max_unpool(const Tensor& data, const Tensor& indices, const std::vector<int64_t>& scatter_shape,
                  const std::vector<int64_t>& out_shape, const std::string& name = "max_unpool");

/// Group normalization of x [N,C,...]: per sample and group of C/groups channels,
/// (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], gamma and beta 1-D of C (instance
/// normalization is groups = C). Stages "<name>_mean", "<name>_var" (tag
/// "group_norm_reduce") and the output (tag "group_norm").
Tensor group_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t groups, double eps = 1e-5,
                  const std::string& name = "group_norm");

}  // namespace loom::te::ops
