// The Conv attribute handling of convert_window.cc, shared with the converters of the other
// convolutions (ConvInteger, QLinearConv).
#pragma once
#include <optional>
#include <vector>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {

/// The spatial window of Conv and the pools, over r spatial dims.
struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // the r begins, then the r ends
};

/// The shape of input 0 of Conv, ConvTranspose and the pools: N, C and 1 to 3 spatial dims.
std::vector<int64_t> spatial_input(Importer& im);
/// Kernel, strides, dilations and explicit pads from ONNX's attributes for input spatial
/// extents `in` (auto_pad resolved).
/// `has_dilations` false: the operator's version has no dilations attribute (all 1; one given
/// is left unread, an error).
Window read_window(Importer& im, const std::vector<int64_t>& in, std::vector<int64_t> kernel, bool has_dilations = true);
/// The kernel_shape attribute, checked against the weight's spatial extents when given.
std::vector<int64_t> kernel_of(Importer& im, const std::vector<int64_t>& w);
/// A convolution of `data` [N,C,spatial...] by `weight` [M,C/groups,k...] (+ bias [M]) with
/// stride, pads (begins then ends) and dilation per spatial dim: conv2d for 2-D, conv2d on a
/// unit height for 1-D, conv3d for 3-D.
Value emit_conv(Importer& im, Value data, Value weight, std::optional<Value> bias, const Window& w, int64_t groups);

}  // namespace loom::graph_opt::onnx_frontend
