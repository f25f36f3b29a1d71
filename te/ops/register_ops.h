// The built-in operator entries, by family, and the helpers their definitions share (private
// to te/ops).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/te/op_registry.h"
#include "loom/te/ops.h"

namespace loom::te::ops::detail {

/// conv2d, conv2d_nchwc, depthwise_conv2d_nchwc, winograd_weight_transform,
/// conv2d_nchwc_winograd, dense, dense_pack, matmul, batch_matmul,
/// pooling, softmax, layer_norm, batch_norm.
std::vector<OpDef> nn_ops();
/// Unary elementwise, broadcasting binary, bias_add, cast.
std::vector<OpDef> elementwise_ops();
/// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod.
std::vector<OpDef> reduce_ops();
/// Comparisons, logical and bitwise operators, where, mod, isnan, isinf, tan … atanh,
/// prelu, shrink, swish.
std::vector<OpDef> logic_ops();
/// argmax, argmin, topk.
std::vector<OpDef> search_ops();
/// reshape, flatten, squeeze, unsqueeze, transpose, concat, pad, take, layout_transform.
std::vector<OpDef> transform_ops();
/// quantize, dequantize, requantize.
std::vector<OpDef> quantize_ops();
/// conv2d_int8, conv2d_nchwc_int8, pack_int8_kernel.
std::vector<OpDef> qnn_ops();
/// log_softmax, hardmax.
std::vector<OpDef> softmax_family_ops();
/// strided_slice, tile, broadcast_to, gather_elements, gather_nd, scatter_elements, scatter_nd,
/// one_hot, trilu, cumsum, cumprod, reverse_sequence.
std::vector<OpDef> shape_ops();
/// conv3d, max_pool_nd, avg_pool_nd, lp_pool_nd, max_pool_nd_indices, col2im,
/// max_unpool, group_norm.
std::vector<OpDef> spatial_nd_ops();
/// resample, grid_sample.
std::vector<OpDef> resize_ops();
/// det, bitcast.
std::vector<OpDef> linalg_ops();
/// roi_align, deform_conv2d.
std::vector<OpDef> vision_ops();
/// nll_loss, nll_loss_weight.
std::vector<OpDef> loss_ops();
/// attention.
std::vector<OpDef> attention_ops();

/// An attribute spec with a default (`required` makes one without).
inline AttrSpec attr(std::string name, AttrKind kind, std::optional<AttrValue> def, std::string doc) {
  return AttrSpec{std::move(name), kind, std::move(def), std::move(doc)};
}

/// A pair of positive (`positive`) or non-negative ints from an ints attribute of two values.
Pair attr_pair(const Attrs& a, const std::string& name, bool positive);

/// Spatial padding from an ints attribute of 2 values {h, w} (both sides alike) or 4
/// {top, left, bottom, right}, each non-negative.
struct Padding {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
  bool symmetric() const { return top == bottom && left == right; }
  Pair pair() const { return {top, left}; }
};
Padding attr_padding(const Attrs& a, const std::string& name = "padding");

/// `data` padded explicitly on dims 2 and 3 ("pad" stage) when `p` is not symmetric; `p`
/// then becomes zero. Symmetric padding is left to the operator.
Tensor pad_asymmetric(const Tensor& data, Padding& p, Expr value = Expr());

/// `call` with TemplateCall::finish adding the operator's optional third input, its bias, to
/// the template's output along `axis` of `layout` (a "bias_add" stage, as the operator's own
/// compute adds it).
TemplateCall with_bias_finish(TemplateCall call, int axis, const std::string& layout = "");

/// True if the dtype is float32 (templates take no other).
inline bool is_f32(const TensorType& t) { return t.dtype == DataType::Float(32); }

/// Checks that an input's layout (when it has one) is `expected`; names the operator and input.
void check_layout(const std::string& op, const char* input, const TensorType& t, const std::string& expected);

/// "NCHW{b}c" -> b; 0 for "NCHW"; throws naming `op` for any other layout.
int64_t nchw_block(const std::string& op, const std::string& layout);

}  // namespace loom::te::ops::detail
