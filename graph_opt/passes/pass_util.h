// Helpers the graph passes share (private to graph_opt/passes).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/graph_opt/builder.h"

namespace loom::graph_opt::detail {

/// A constant of shape `shape` with every element `v` (dtype `t`).
Value fill_constant(GraphBuilder& b, const std::string& name, std::vector<int64_t> shape, DataType t, double v);

/// The shape a per-channel vector of `channels` elements takes to broadcast against a value
/// of type `x` whose channel is axis `axis`: [C, 1, …] up to the last dim, or, when `layout`
/// blocks that axis (NCHW16c), [C/16, 1, …, 16] with the block at the sub-axis.
std::vector<int64_t> per_channel_shape(const TensorType& x, int axis, const std::string& layout, int64_t channels);

/// If a value of shape `s` broadcast against `out` varies only along axis `axis` of `out`
/// (every other aligned dim 1) and does not grow `out`, the number of its elements along
/// that axis (1 for a scalar-like value, else out[axis]); otherwise nullopt.
std::optional<int64_t> per_axis_extent(const std::vector<int64_t>& s, const std::vector<int64_t>& out, int axis);

/// `v` reshaped to `shape` (v itself when it has that shape already).
Value reshape_to(GraphBuilder& b, Value v, const std::vector<int64_t>& shape, const std::string& name);

/// True for an operator that only reshapes its input (reshape, flatten, squeeze, unsqueeze):
/// the same elements in the same order.
bool is_reshape(const Node& n);

/// The consumers of every node of `g`, counting a graph output as a consumer (-1).
std::vector<std::vector<int>> users_with_outputs(const Graph& g);

}  // namespace loom::graph_opt::detail
