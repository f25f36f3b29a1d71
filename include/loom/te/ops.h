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
#include <string_view>
#include <vector>

#include "loom/te/ops/shape.h"
#include "loom/te/ops/logic.h"
#include "loom/te/ops/linalg.h"
#include "loom/te/ops/loss.h"
#include "loom/te/ops/vision.h"
#include "loom/te/ops/search.h"
#include "loom/te/ops/spatial_nd.h"
#include "loom/te/tensor.h"
#include "loom/te/ops/quantize.h"
#include "loom/te/ops/qnn.h"
#include "loom/te/ops/softmax_family.h"
#include "loom/te/ops/grid_sample.h"
#include "loom/te/ops/resize.h"
#include "loom/te/ops/attention.h"

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

/// 2-D convolution on channel-blocked arrays (oneDNN's nChw{b}c), -> [N, K/ob, OH, OW, ob]:
///   data [N, C/ib, H, W, ib] ("NCHW{ib}c") with kernel [K/ob, C/ib, R, S, ib, ob] ("OIHW{ib}i{ob}o"), or
///   data [N, C, H, W] ("NCHW") with kernel [K/ob, C, R, S, ob] ("OIHW{ob}o").
/// Output sizes as conv2d_nchw; nonzero padding adds a "pad" stage. Reduce axes "rco", "ry", "rx",
/// "rci" (blocked data) or "rc", "ry", "rx". Tag "conv2d_nchwc".
Tensor conv2d_nchwc(const Tensor& data, const Tensor& kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                    Pair dilation = {1, 1}, const std::string& name = "conv2d_nchwc");

/// Depthwise convolution (multiplier 1) of data [N, C/b, H, W, b] ("NCHW{b}c") with kernel
/// [C/b, 1, R, S, 1, b] ("OIHW1i{b}o", layout_transform of a [C,1,R,S] kernel) -> [N, C/b, OH,
/// OW, b]. Reduce axes "ry", "rx". Tag "depthwise_conv2d_nchwc".
Tensor depthwise_conv2d_nchwc(const Tensor& data, const Tensor& kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                              Pair dilation = {1, 1}, const std::string& name = "depthwise_conv2d_nchwc");

/// The matrices of Winograd's minimal filtering F(m×m, r×r) (Lavin & Gray 2015), built by
/// Toom-Cook on the points 0, 1, -1, 2, -2, 1/2, -1/2 (the first alpha-1) and infinity: for
/// a tile d of alpha×alpha inputs (alpha = m + r - 1) and a filter g of r×r,
/// Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A is their m×m correlation. Row-major.
struct WinogradMatrices {
  int64_t m, r, alpha;
  std::vector<double> AT;  // [m][alpha]
  std::vector<double> G;   // [alpha][r]
  std::vector<double> BT;  // [alpha][alpha]
};
/// Throws unless 1 <= m, 2 <= r and m + r - 2 <= 7 (the points available).
WinogradMatrices winograd_matrices(int64_t m, int64_t r = 3);

/// The Winograd weight transform U = G g Gᵀ of F(tile_size×tile_size, 3×3) for a 3×3 kernel
/// [K/ob, C/ib, 3, 3, ib, ob] ("OIHW{ib}i{ob}o") -> [alpha, alpha, K/ob, C/ib, ib, ob], alpha =
/// tile_size + 2, tile_size in [2, 6]. Two stages ("<name>_rows" = G g, then ·Gᵀ), tag
/// "winograd_weight".
Tensor winograd_weight_transform(const Tensor& kernel, int64_t tile_size,
                                 const std::string& name = "winograd_weight_transform");

/// A 3×3 convolution with stride 1 and dilation 1 by Winograd's F(m×m, 3×3) on NCHW{ib}c data
/// [N, C/ib, H, W, ib] with a transformed weight [alpha, alpha, K/ob, C/ib, ib, ob] (from
/// winograd_weight_transform; m = alpha - 2 in [2, 6]) -> [N, K/ob, OH, OW, ob], OH = H +
/// 2·padding - 2. The output is cut into nH×nW tiles of m×m (nH = ceil(OH/m); P = N·nH·nW
/// tiles, the last row and column cropped). Stages, as the template finds them by name:
///   "pad"                   data padded by `padding` and up to whole tiles (absent when
///                           neither is needed), tag "injective";
///   "winograd_input_rows"   [C/ib, P, alpha, alpha, ib]: Bᵀ d of each tile;
///   "winograd_input"        [alpha, alpha, C/ib, P, ib]: V = (Bᵀ d) B;
///   "winograd_gemm"         [alpha, alpha, K/ob, P, ob]: M = Σ_c U·V per point (reduce axes
///                           "rco", "rci"), tag "winograd_gemm";
///   "winograd_output_rows"  [K/ob, P, m, alpha, ob]: Aᵀ M of each tile;
///   the output              (Aᵀ M) A, cropped, tag "conv2d_nchwc_winograd".
Tensor conv2d_nchwc_winograd(const Tensor& data, const Tensor& weight, Pair padding = {1, 1},
                             const std::string& name = "conv2d_nchwc_winograd");

// ---------------------------------------------------------------- pooling (NCHW or NCHW{c}c)
// data is [N,C,H,W] or channel-blocked [N,C/c,H,W,c]: the window slides over dims 2 and 3.
/// Max over each kernel window; padding takes the dtype's lowest value. Output size
/// (H + 2*ph - kh) / sh + 1. Tag "pool_max", reduce axes "rh", "rw".
Tensor max_pool2d(const Tensor& data, Pair kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                  const std::string& name = "max_pool2d");

/// Mean over each window: a "pool_sum" stage (tag "pool_sum") then a division stage (tag
/// "pool_avg"). With count_include_pad, divides by kh*kw; otherwise by the number of window
/// elements inside the input.
Tensor avg_pool2d(const Tensor& data, Pair kernel, Pair stride = {1, 1}, Pair padding = {0, 0},
                  bool count_include_pad = true, const std::string& name = "avg_pool2d");

/// Mean over H and W of data[N,C,H,W] -> [N,C,1,1] (or [N,C/c,H,W,c] -> [N,C/c,1,1,c]): a
/// "pool_sum" stage then "pool_avg".
Tensor global_avg_pool2d(const Tensor& data, const std::string& name = "global_avg_pool2d");

/// out[N,M] = sum_k data[N,K] * packed[j/b, k, j%b] (+ bias[M]) with the weight pre-packed as
/// [ceil(M/b), K, b] (layout_transform of a [M,K] weight from "OI" to "OI{b}o", zero-padded),
/// M = `units`. Tag "dense"; a bias is a "bias_add" stage as in dense.
Tensor dense_pack(const Tensor& data, const Tensor& packed, int64_t units, const Tensor& bias = Tensor(),
                  const std::string& name = "dense_pack");

/// C[b,M,N] = sum_k A[b,M,K] * packed[b, j/blk, k, j%blk] with B pre-packed as [batch,
/// ceil(N/blk), K, blk] (layout_transform "BKN" -> "BNK{blk}n"), N = `units`. Tag "batch_matmul".
Tensor batch_matmul_pack(const Tensor& A, const Tensor& packed, int64_t units,
                         const std::string& name = "batch_matmul_pack");

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
/// a ** b elementwise (floating point).
Tensor power(const Tensor& a, const Tensor& b, const std::string& name = "power");

/// The channel index of an element for per-channel operators: along `axis` of an unblocked
/// `layout` (or of no layout), or, when the layout splits that axis's letter into blocks
/// ("NCHW16c", axis 1), outer * block + inner.
Expr channel_index(const std::vector<Var>& index, int axis, const std::string& layout, std::string_view op);
/// The channel count (the extent of the `axis` channel, times its block in a blocked `layout`).
int64_t channel_count(const std::vector<int64_t>& shape, int axis, const std::string& layout, std::string_view op);

/// data + bias broadcast along `axis`, or along the channel that `layout` blocks (bias is 1-D
/// of the channel count; see channel_index). Tag "broadcast".
Tensor bias_add(const Tensor& data, const Tensor& bias, int axis = 1, const std::string& layout = "",
                const std::string& name = "bias_add");

/// Inference batch normalization along the channel `axis` (layout as in bias_add):
/// (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c], each parameter 1-D of the channel
/// count. Tag "broadcast".
Tensor batch_norm(const Tensor& data, const Tensor& gamma, const Tensor& beta, const Tensor& mean, const Tensor& var,
                  int axis = 1, double eps = 1e-5, const std::string& layout = "",
                  const std::string& name = "batch_norm");

/// Unary elementwise ops. Tag "elemwise".
Tensor relu(const Tensor& x, const std::string& name = "relu");
/// min(max(x, lo), hi); requires lo <= hi.
Tensor clip(const Tensor& x, double lo, double hi, const std::string& name = "clip");
Tensor exp(const Tensor& x, const std::string& name = "exp");
Tensor tanh(const Tensor& x, const std::string& name = "tanh");
Tensor sigmoid(const Tensor& x, const std::string& name = "sigmoid");
Tensor sqrt(const Tensor& x, const std::string& name = "sqrt");
Tensor log(const Tensor& x, const std::string& name = "log");
Tensor abs(const Tensor& x, const std::string& name = "abs");
Tensor negative(const Tensor& x, const std::string& name = "negative");
Tensor erf(const Tensor& x, const std::string& name = "erf");
/// x * Phi(x): 0.5 x (1 + erf(x / sqrt 2)), or with `tanh_approximation` 0.5 x (1 + tanh(sqrt(2/pi)
/// (x + 0.044715 x^3))).
Tensor gelu(const Tensor& x, bool tanh_approximation = false, const std::string& name = "gelu");
/// Each element converted to `dtype`.
Tensor cast(const Tensor& x, DataType dtype, const std::string& name = "cast");

/// Activations and rounding, floating point only (as ONNX defines them). Tag "elemwise".
/// max(0, min(1, alpha x + beta)).
Tensor hard_sigmoid(const Tensor& x, double alpha = 0.2, double beta = 0.5, const std::string& name = "hard_sigmoid");
/// x * max(0, min(1, x / 6 + 1/2)).
Tensor hard_swish(const Tensor& x, const std::string& name = "hard_swish");
/// x for x >= 0, alpha x below.
Tensor leaky_relu(const Tensor& x, double alpha = 0.01, const std::string& name = "leaky_relu");
/// x for x > 0, alpha (e^x - 1) otherwise.
Tensor elu(const Tensor& x, double alpha = 1.0, const std::string& name = "elu");
/// gamma x for x > 0, gamma alpha (e^x - 1) otherwise.
Tensor selu(const Tensor& x, double alpha = 1.67326319217681884765625, double gamma = 1.05070102214813232421875,
            const std::string& name = "selu");
/// max(0, x) + min(0, alpha (e^(x / alpha) - 1)); alpha must not be 0.
Tensor celu(const Tensor& x, double alpha = 1.0, const std::string& name = "celu");
/// log(1 + e^x), computed as max(x, 0) + log(1 + e^-|x|).
Tensor softplus(const Tensor& x, const std::string& name = "softplus");
/// x / (1 + |x|).
Tensor softsign(const Tensor& x, const std::string& name = "softsign");
/// x for x > alpha, 0 otherwise.
Tensor thresholded_relu(const Tensor& x, double alpha = 1.0, const std::string& name = "thresholded_relu");
/// x * tanh(softplus(x)).
Tensor mish(const Tensor& x, const std::string& name = "mish");
Tensor floor(const Tensor& x, const std::string& name = "floor");
Tensor ceil(const Tensor& x, const std::string& name = "ceil");
/// Rounds to the nearest integer, halves to the even one.
Tensor round(const Tensor& x, const std::string& name = "round");
Tensor reciprocal(const Tensor& x, const std::string& name = "reciprocal");
Tensor sin(const Tensor& x, const std::string& name = "sin");
Tensor cos(const Tensor& x, const std::string& name = "cos");
/// -1, 0 or 1 by the sign of x (any numeric dtype; a NaN stays NaN).
Tensor sign(const Tensor& x, const std::string& name = "sign");

// ---------------------------------------------------------------- reductions
enum class ReduceKind : uint8_t { kSum, kMean, kMax, kMin, kProd };
/// Reduces `axes` (negative count from the end; empty: all) with sum, mean, max, min or product; with
/// `keepdims` each reduced dim stays as extent 1, otherwise it is dropped (all of them: shape
/// [1]). One stage, tag "reduce", reduce axes "k0", "k1", …
Tensor reduce(const Tensor& x, ReduceKind kind, std::vector<int64_t> axes = {}, bool keepdims = false,
              const std::string& name = "reduce");

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

/// x reshaped to 2-D [prod(shape[:axis]), prod(shape[axis:])]. Tag "injective".
Tensor flatten(const Tensor& x, int axis = 1, const std::string& name = "flatten");
/// x without the dims `axes` (each of extent 1; empty: every extent-1 dim). Tag "injective".
Tensor squeeze(const Tensor& x, std::vector<int64_t> axes = {}, const std::string& name = "squeeze");
/// x with extent-1 dims inserted at `axes` (positions in the output). Tag "injective".
Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes, const std::string& name = "unsqueeze");
/// Elements of x picked along `axis` by an integer tensor of indices: out.shape =
/// x.shape[:axis] + indices.shape + x.shape[axis+1:] (a 0-D index drops the axis). Negative
/// indices count from the end; indices outside [-n, n) are clamped into it. Tag "injective".
Tensor take(const Tensor& x, const Tensor& indices, int axis = 0, const std::string& name = "take");

/// A layout string: uppercase letters are primal axes ("NCHW"); a number followed by a
/// lowercase letter is a sub-axis of that many elements splitting the primal axis of the
/// same letter, which then counts blocks ("NCHW16c": [N, C/16, H, W, 16]; "OIHW16i16o").
struct Layout {
  struct Axis {
    char name;            // 'C' (primal) or 'c' (sub-axis)
    int64_t factor = 0;   // the sub-axis' extent; 0 for a primal axis
  };
  std::vector<Axis> axes;
  /// Throws loom::Error naming the string and what is wrong (a sub-axis without its primal
  /// axis, a letter twice, a zero factor, a character that is not a letter or digit).
  static Layout parse(const std::string& s);
  std::string str() const;
  size_t ndim() const { return axes.size(); }
  /// Position of axis `name` ('C' or 'c'), or -1.
  int index_of(char name) const;
  /// The factor splitting primal axis `primal` ('C'), or 0 when it is not split.
  int64_t block_of(char primal) const;
  /// Whether some primal axis is split ("NCHW16c", not "NCHW").
  bool blocked() const;
};

/// x, laid out as `src`, rearranged into layout `dst` (the same primal axes, each split at
/// most once, by any factor). A primal axis's extent is its source extent (times the
/// source block when split). Splitting it by a factor that does not divide it pads the last
/// block with zeros; merging a split axis gives blocks*factor elements, padding included,
/// unless `dst_shape` says the output shape: it may only shrink primal (unsplit) axes, which
/// crops the padding away. E.g. "NCHW" -> "NCHW16c", "OIHW" -> "OIHW16i16o", "OI" ->
/// "OI16o" (dense_pack's weight), "NCHW16c" -> "NCHW". Tag "injective".
Tensor layout_transform(const Tensor& x, const std::string& src, const std::string& dst,
                        std::vector<int64_t> dst_shape = {}, const std::string& name = "layout_transform");

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
