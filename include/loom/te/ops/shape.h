// Shape and data-movement operators beyond the basic transforms: slicing, tiling, padding
// modes, gathers and scatters by run-time indices, one-hot, triangles, cumulative sums and
// sequence reversal. Index inputs are read at run time: a negative index counts from the
// end of its axis and an index still out of range is clamped into it (reads stay in
// bounds), except where a function says otherwise.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// x[begin[d] : end[d] : strides[d]] on every dim, with ONNX Slice's rules: a negative begin
/// or end counts from the end, then both are clamped ([0, n] for a positive stride, [-1, n-1]
/// for a negative one). Strides must be nonzero and the result non-empty. Tag "injective".
Tensor strided_slice(const Tensor& x, std::vector<int64_t> begin, std::vector<int64_t> end,
                     std::vector<int64_t> strides, const std::string& name = "strided_slice");

/// The extent of x[begin:end:stride] on a dim of extent n under strided_slice's rules (0 when
/// empty); stride must be nonzero.
int64_t slice_extent(int64_t n, int64_t begin, int64_t end, int64_t stride, int64_t* first = nullptr);

/// x repeated reps[d] times along each dim d (reps positive, one per dim). Tag "injective".
Tensor tile(const Tensor& x, std::vector<int64_t> reps, const std::string& name = "tile");

/// x broadcast (numpy rules: aligned at the right, dims of 1 stretch) to `shape`, which must
/// be what x broadcast with `shape` gives. Tag "broadcast".
Tensor broadcast_to(const Tensor& x, std::vector<int64_t> shape, const std::string& name = "broadcast_to");

enum class PadMode : uint8_t { kConstant, kEdge, kReflect, kWrap };
/// "constant", "edge", "reflect", "wrap" -> PadMode; throws for anything else.
PadMode parse_pad_mode(const std::string& mode);

/// x padded by before[d] / after[d] elements on each side of dim d; a negative amount crops.
/// Constant fills with `value` (zero when undefined), edge repeats the border element,
/// reflect mirrors without repeating the border (numpy's "reflect"; a dim of one element
/// repeats it), wrap repeats the dim periodically. Tag "injective", stage name "pad".
Tensor pad_mode(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after, PadMode mode,
                Expr value = Expr(), const std::string& name = "pad");

/// out[i] = data[i with i[axis] replaced by indices[i]]; indices has data's rank and its
/// shape bounds data's on every dim but axis. Tag "injective".
Tensor gather_elements(const Tensor& data, const Tensor& indices, int axis, const std::string& name = "gather_elements");

/// ONNX GatherND: indices [B..., M..., k] (B the first batch_dims dims of data) picks slices
/// data[b..., indices[b..., m..., :], ...] -> [B..., M..., data.shape[batch_dims + k:]...].
/// Tag "injective".
Tensor gather_nd(const Tensor& data, const Tensor& indices, int batch_dims = 0, const std::string& name = "gather_nd");

enum class ScatterReduce : uint8_t { kNone, kAdd, kMul, kMax, kMin };
/// "none", "add", "mul", "max", "min" -> ScatterReduce; throws for anything else.
ScatterReduce parse_scatter_reduce(const std::string& reduction);

/// A copy of data where updates[u] is written (kNone; the last of duplicate indices wins) or
/// combined (add, mul, max, min with every update of the element) at u with u[axis] replaced
/// by indices[u]; indices and updates have the same shape, of data's rank. Every output
/// element searches the updates along axis: a reduction stage "<name>_pick" (kNone) or
/// "<name>_combine" before the output.
Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int axis,
                        ScatterReduce reduce = ScatterReduce::kNone, const std::string& name = "scatter_elements");

/// ONNX ScatterND: indices [M..., k] addresses slices data[indices[m, :], ...], updates is
/// [M..., data.shape[k:]...]; written or combined as scatter_elements does (same stages;
/// each output element searches every m).
Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates,
                  ScatterReduce reduce = ScatterReduce::kNone, const std::string& name = "scatter_nd");

/// A one-hot encoding: indices' shape with `depth` inserted at `axis` (of the output; negative
/// counts from the end), values[1] where the position along axis equals the index (negative
/// indices count from depth), values[0] elsewhere, also for indices out of [-depth, depth).
/// values holds 2 elements of the output dtype. Tag "injective".
Tensor one_hot(const Tensor& indices, const Tensor& values, int64_t depth, int axis = -1,
               const std::string& name = "one_hot");

/// The upper (column - row >= k) or lower (column - row <= k) triangle of each matrix of the
/// last two dims, zero elsewhere. Tag "injective".
Tensor trilu(const Tensor& x, bool upper, int64_t k = 0, const std::string& name = "trilu");

/// Running sum (`product` false) or product along `axis`: out[i] combines x[j] for j <= i
/// (j < i when exclusive; j >= i, j > i when reverse). One reduction stage, tag "cumulative".
Tensor cumulative(const Tensor& x, int axis, bool product = false, bool exclusive = false, bool reverse = false,
                  const std::string& name = "cumsum");

/// Reverses the first seq_lens[b] elements along time_axis of every batch b (along
/// batch_axis); the rest stay. seq_lens is 1-D of the batch extent (integers; clamped to
/// [0, time extent]). Tag "injective".
Tensor reverse_sequence(const Tensor& x, const Tensor& seq_lens, int batch_axis = 1, int time_axis = 0,
                        const std::string& name = "reverse_sequence");

}  // namespace loom::te::ops
