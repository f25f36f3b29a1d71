// Building graphs: GraphBuilder reads like a model definition (inputs, weights, operator
// calls, outputs), inferring each node's output types through the operator registry as it
// goes; GraphRewriter is the same builder seeded from an existing graph, which is how passes
// produce their result.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph_opt/graph.h"

namespace loom::graph_opt {

/// A value while building: the node and output index in the graph being built.
using Value = ValueRef;

/// Attributes of conv2d (see the registry's schema for the rest).
struct Conv2dAttrs {
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};
  int64_t groups = 1;
};

/// Attributes of max_pool2d / avg_pool2d.
struct Pool2dAttrs {
  std::array<int64_t, 2> pool_size = {1, 1};
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  bool count_include_pad = true;  // avg_pool2d only
};

/// Builds a Graph node by node. Every op call checks its inputs and attributes against the
/// registry and infers its output types; a mistake throws loom::Error naming the node.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name = "graph");

  /// A graph input of type `type` (inputs are passed to the graph in the order declared).
  Value input(const std::string& name, TensorType type);
  /// A constant holding `value` (shared, not copied).
  Value constant(const std::string& name, runtime::NDArray value, std::string layout = "");
  /// A call of registry operator `op`; `name` empty: "<op>_<n>". Returns every output.
  std::vector<Value> call(const std::string& op, const std::vector<Value>& inputs, const Attrs& attrs = {},
                          const std::string& name = "");
  /// A call of a single-output operator.
  Value op(const std::string& op, const std::vector<Value>& inputs, const Attrs& attrs = {},
           const std::string& name = "");
  /// Marks `v` as a graph output (in order).
  void output(Value v);

  // Typed helpers, named as the registry's operators.
  Value conv2d(Value data, Value weight, const Conv2dAttrs& a = {}, const std::string& name = "");
  Value conv2d(Value data, Value weight, Value bias, const Conv2dAttrs& a = {}, const std::string& name = "");
  Value dense(Value data, Value weight, const std::string& name = "");
  Value dense(Value data, Value weight, Value bias, const std::string& name = "");
  Value batch_norm(Value data, Value gamma, Value beta, Value mean, Value var, double epsilon = 1e-5,
                   const std::string& name = "");
  Value bias_add(Value data, Value bias, int64_t axis = 1, const std::string& name = "");
  Value relu(Value x, const std::string& name = "");
  Value clip(Value x, double lo, double hi, const std::string& name = "");
  Value add(Value a, Value b, const std::string& name = "");
  Value multiply(Value a, Value b, const std::string& name = "");
  Value max_pool2d(Value x, const Pool2dAttrs& a, const std::string& name = "");
  Value avg_pool2d(Value x, const Pool2dAttrs& a, const std::string& name = "");
  Value global_avg_pool2d(Value x, const std::string& name = "");
  Value flatten(Value x, const std::string& name = "");
  Value reshape(Value x, std::vector<int64_t> newshape, const std::string& name = "");
  Value layout_transform(Value x, const std::string& src_layout, const std::string& dst_layout,
                         const std::string& name = "");

  const TensorType& type(Value v) const { return graph_.type(v); }
  /// The graph so far (unverified).
  const Graph& graph() const { return graph_; }
  /// `base` if no node has that name yet, else `base_1`, `base_2`, …
  std::string unique_name(const std::string& base) const;
  /// The finished graph, checked with verify(). The builder is left empty.
  Graph build();

 protected:
  /// Appends a node with `name` (which must be new), returning its index.
  int add_node(Node n);
  Graph graph_;
  std::map<std::string, int, std::less<>> names_;
  std::map<std::string, int> counters_;
};

/// A builder that rewrites `source` into a new graph: a pass walks the source's nodes in
/// order, keeps a node with `copy` or emits replacements with the builder calls and records
/// them with `replace`; `finish` maps the outputs. Nodes no source output reaches stay until
/// dead-code elimination drops them.
class GraphRewriter : public GraphBuilder {
 public:
  explicit GraphRewriter(const Graph& source);
  const Graph& source() const { return source_; }
  /// The new value standing for source value `v` (which must be copied or replaced already).
  Value map(ValueRef v) const;
  /// The new values of the source node `i`'s inputs.
  std::vector<Value> map_inputs(int i) const;
  /// Source value `v` is now `now`.
  void replace(ValueRef v, Value now);
  /// Copies source node `i` (same name, attributes and kind) with its inputs mapped.
  void copy(int i);
  /// Re-emits source node `i` with other inputs and/or attributes, keeping its name.
  void copy_with(int i, const std::vector<Value>& inputs, const Attrs& attrs);
  /// The rewritten graph (source outputs mapped), verified.
  Graph finish();

 private:
  const Graph& source_;
  std::vector<std::vector<Value>> map_;  // per source node, per output
};

}  // namespace loom::graph_opt
