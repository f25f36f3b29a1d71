// The operator library: common tensor operators as te::compute definitions, ready to
// schedule. Every op checks its arguments (constant shapes, matching dims and dtypes) and
// throws loom::Error naming the op and the mismatch.
//
// Stage tags, as schedule templates look for them:
//   "matmul", "batch_matmul", "dense"                     reductions over K
//   "conv2d_nchw", "conv2d_nhwc", "depthwise_conv2d_nchw" reductions over channels/kernel
//   "pool_max", "pool_sum", "pool_avg"                    pooling
//   "softmax", "layer_norm" (outputs) and their reduction stages
//   "elemwise" (one input, same shape), "broadcast" (numpy-style broadcast of inputs),
//   "injective" (any index mapping: pad, transpose, reshape, concat).
// Padding is its own stage named "pad" (tag "injective") whose body is a te::select over the
// padded bounds, so it can be inlined into or computed at its consumer. The untaken branch
// of such a select (and of concat's) may index outside its input; it must not be read.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// Two spatial sizes {height, width}: strides, paddings (applied on both sides), dilations,
/// pooling windows.
using Pair = std::array<int64_t, 2>;

// ---------------------------------------------------------------- matmul and dense
/// C[M,N] = sum_k A[M,K] * B[K,N]. With transpose_a, A is given as [K,M]; with transpose_b,
/// B as [N,K]. Tag "matmul", reduce axis "k".
Tensor matmul(const Tensor& A, const Tensor& B, bool transpose_a = false, bool transpose_b = false,
              const std::string& name = "matmul");

/// C[b,M,N] = sum_k A[b,M,K] * B[b,K,N] (transposes as in matmul, per batch). A batch of 1 on
/// either side broadcasts. Tag "batch_matmul".
Tensor batch_matmul(const Tensor& A, const Tensor& B, bool transpose_a = false, bool transpose_b = false,
                    const std::string& name = "batch_matmul");

/// out[N,M] = sum_k data[N,K] * weight[M,K] (+ bias[M]). Tag "dense". A defined bias is added
/// by a separate stage "bias_add" (tag "broadcast") that reads the dense stage, so the two
/// can be scheduled (or inlined) independently; that stage is then the returned tensor.
Tensor dense(const Tensor& data, const Tensor& weight, const Tensor& bias = Tensor(),
             const std::string& name = "dense");

// ---------------------------------------------------------------- convolution
/// 2-D convolution of data[N,C,H,W] with kernel[K,C/groups,R,S] -> [N,K,OH,OW], where
/// OH = (H + 2*ph - dh*(R-1) - 1) / sh + 1 (likewise OW). Nonzero padding adds a "pad" stage.
/// Reduce axes "rc", "ry", "rx". Tag "conv2d_nchw".
Tensor conv2d_nchw(const Tensor& data, const Tensor& kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                   Pair dilation = {1, 1}, int64_t groups = 1, const std::string& name = "conv2d_nchw");

/// 2-D convolution of data[N,H,W,C] with kernel[R,S,C/groups,K] -> [N,OH,OW,K].
/// Tag "conv2d_nhwc".
Tensor conv2d_nhwc(const Tensor& data, const Tensor& kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                   Pair dilation = {1, 1}, int64_t groups = 1, const std::string& name = "conv2d_nhwc");

/// Depthwise convolution of data[N,C,H,W] with kernel[C,M,R,S] -> [N,C*M,OH,OW]: output
/// channel c*M+m convolves input channel c with kernel[c,m]. Tag "depthwise_conv2d_nchw".
Tensor depthwise_conv2d_nchw(const Tensor& data, const Tensor& kernel, Pair stride = {1, 1},
                             Pair padding = {0, 0}, Pair dilation = {1, 1},
                             const std::string& name = "depthwise_conv2d_nchw");

// ---------------------------------------------------------------- pooling (NCHW)
/// Max over each kernel window; padding takes the dtype's lowest value. Output size
/// (H + 2*ph - kh) / sh + 1. Tag "pool_max", reduce axes "rh", "rw".
Tensor max_pool2d(const Tensor& data, Pair kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                  const std::string& name = "max_pool2d");

/// Mean over each window: a "pool_sum" stage (tag "pool_sum") then a division stage (tag
/// "pool_avg"). With count_include_pad, divides by kh*kw; otherwise by the number of window
/// elements inside the input.
Tensor avg_pool2d(const Tensor& data, Pair kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                  bool count_include_pad = true, const std::string& name = "avg_pool2d");

/// Mean over H and W of data[N,C,H,W] -> [N,C,1,1]: a "pool_sum" stage then "pool_avg".
Tensor global_avg_pool2d(const Tensor& data, const std::string& name = "global_avg_pool2d");

// ---------------------------------------------------------------- normalization
/// exp(x - max) / sum(exp(x - max)) along `axis` (negative counts from the end). Stages:
/// "softmax_maxelem" (max-reduce), "softmax_exp", "softmax_expsum" (sum-reduce), each tagged
/// with its name, and the output (tag "softmax"). The reduction stages drop `axis` (a 1-D input reduces to [1]).
Tensor softmax(const Tensor& x, int axis = -1, const std::string& name = "softmax");

/// (x - mean) / sqrt(var + eps) * gamma + beta over `axis` (default and usual: the last),
/// with gamma and beta of shape [x.shape[axis]]. Stages "layer_norm_mean",
/// "layer_norm_var" (sum-reductions, tag "layer_norm_reduce") and the output (tag
/// "layer_norm").
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int axis = -1, double eps = 1e-5,
                  const std::string& name = "layer_norm");

// ---------------------------------------------------------------- elementwise and broadcast
/// Numpy-style broadcasting binary ops: shapes align at the right; each pair of dims must
/// be equal or one of them 1. Both inputs must have the same dtype. Tag "broadcast".
Tensor add(const Tensor& a, const Tensor& b, const std::string& name = "add");
Tensor subtract(const Tensor& a, const Tensor& b, const std::string& name = "subtract");
Tensor multiply(const Tensor& a, const Tensor& b, const std::string& name = "multiply");
Tensor divide(const Tensor& a, const Tensor& b, const std::string& name = "divide");
Tensor maximum(const Tensor& a, const Tensor& b, const std::string& name = "maximum");
Tensor minimum(const Tensor& a, const Tensor& b, const std::string& name = "minimum");

/// data + bias broadcast along `axis` (bias is 1-D of size data.shape[axis]). Tag "broadcast".
Tensor bias_add(const Tensor& data, const Tensor& bias, int axis = 1, const std::string& name = "bias_add");

/// Unary elementwise ops. Tag "elemwise".
Tensor relu(const Tensor& x, const std::string& name = "relu");
/// min(max(x, lo), hi); requires lo <= hi.
Tensor clip(const Tensor& x, double lo, double hi, const std::string& name = "clip");
Tensor exp(const Tensor& x, const std::string& name = "exp");
Tensor tanh(const Tensor& x, const std::string& name = "tanh");
Tensor sigmoid(const Tensor& x, const std::string& name = "sigmoid");

// ---------------------------------------------------------------- layout transforms
/// Permutes dims: out.shape[i] = x.shape[axes[i]]; empty axes reverses them. Tag "injective".
Tensor transpose(const Tensor& x, std::vector<int> axes = {}, const std::string& name = "transpose");

/// Same elements in row-major order under a new shape; one entry may be -1 (inferred). The
/// element counts must match. Tag "injective".
Tensor reshape(const Tensor& x, std::vector<int64_t> newshape, const std::string& name = "reshape");

/// Pads each dim d with before[d] elements in front and after[d] behind (after defaults to
/// before), filled with `value` (converted to x's dtype; undefined: zero). Tag "injective".
Tensor pad(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after = {}, Expr value = Expr(),
           const std::string& name = "pad");

/// Joins tensors along `axis`; all other dims and the dtypes must match. Tag "injective".
Tensor concat(const std::vector<Tensor>& inputs, int axis = 0, const std::string& name = "concat");

// ---------------------------------------------------------------- test registry
/// One small instance of an op: `make()` builds fresh tensors and returns the input
/// placeholders first, then the output(s).
struct OpCase {
  std::string name;
  std::function<std::vector<Tensor>()> make;
};

/// Small instances of every op above, including extents that common split factors do not
/// divide (13, 17, 30, …). Used by tests and schedule fuzzers.
std::vector<OpCase> test_cases();

}  // namespace loom::te::ops
