// The graph IR: a network as a list of nodes in topological order. A node is a graph input,
// a constant (a weight, held as an NDArray) or an operator call (a registry operator with
// normalized attributes, input values and typed outputs). After fusion (passes.h: fuse_ops)
// the graph also carries its partition into fused groups, one kernel each.
#pragma once
#include <compare>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "loom/runtime/ndarray.h"
#include "loom/te/op_registry.h"

namespace loom::graph_opt {

using te::ops::AttrValue;
using te::ops::Attrs;
using te::ops::OpPattern;
using te::ops::TensorType;

/// A value of a graph: output `index` of node `node`.
struct ValueRef {
  int node = -1;
  int index = 0;
  bool valid() const { return node >= 0; }
  auto operator<=>(const ValueRef&) const = default;
};

enum class NodeKind : uint8_t { kInput, kConstant, kOp };
/// "input", "constant", "op".
const char* to_string(NodeKind k);

/// One node. Inputs and constants have exactly one output and no inputs.
struct Node {
  NodeKind kind = NodeKind::kOp;
  std::string name;                 // unique in its graph
  std::string op;                   // kOp: the registry operator
  Attrs attrs;                      // kOp: normalized (every schema attribute present)
  std::vector<ValueRef> inputs;     // kOp: values of earlier nodes
  std::vector<TensorType> outputs;  // one type per output value
  runtime::NDArray value;           // kConstant: the data (shape and dtype of outputs[0])

  bool is_op() const { return kind == NodeKind::kOp; }
  bool is_input() const { return kind == NodeKind::kInput; }
  bool is_constant() const { return kind == NodeKind::kConstant; }
};

/// Operators fused into one kernel (fuse_ops). Members are op nodes of one graph.
struct FusedGroup {
  std::string name;                // "fused_conv2d_add_relu", unique in the graph
  std::vector<int> nodes;          // member op nodes, in topological order
  int anchor = -1;                 // the out_elemwise_fusable member (conv2d, dense, …) or an opaque
                                   // operator with a template alone in its group (softmax), or -1
  OpPattern pattern = OpPattern::kOpaque;  // the group's pattern: its anchor's, else its members' highest
  std::vector<ValueRef> inputs;    // values read from outside the group, in first-use order
  std::vector<ValueRef> outputs;   // member values read outside the group or returned by the graph
};

/// A network. `nodes` are in topological order: every input of a node is an output of an
/// earlier node. Values of the graph are referenced by ValueRef (node index, output index).
struct Graph {
  std::string name = "graph";
  std::vector<Node> nodes;
  std::vector<ValueRef> outputs;
  /// The partition into kernels, in execution order; empty until fuse_ops. Every op node is
  /// in exactly one group.
  std::vector<FusedGroup> groups;

  const Node& node(ValueRef v) const { return nodes.at(size_t(v.node)); }
  const TensorType& type(ValueRef v) const;
  /// The node named `name`, or -1.
  int find(std::string_view name) const;
  /// The node named `name`; throws loom::Error naming the graph if there is none.
  int at(std::string_view name) const;
  /// Indices of the input nodes, in order (the order a caller passes inputs in).
  std::vector<int> input_nodes() const;
  /// Number of operator nodes.
  size_t num_ops() const;
  /// "%conv1" for output 0, "%split:1" for output 1 of node "split".
  std::string value_name(ValueRef v) const;
  /// For every node, the nodes that read one of its outputs (each once, ascending).
  std::vector<std::vector<int>> consumers() const;
  /// For every node, the group holding it (-1 for inputs, constants, or before fusion).
  std::vector<int> group_of() const;
};

/// Checks the graph's invariants and throws loom::Error naming the node (and the graph) that
/// breaks one: unique non-empty names; inputs of op nodes refer to earlier nodes' outputs
/// (topological order, no dangling reference); operators registered, attributes normalized,
/// output types equal to the registry's inference; constants' arrays match their types;
/// outputs valid; groups (if any) a partition of the op nodes in execution order whose
/// inputs/outputs are exactly the values crossing their boundary.
void verify(const Graph& g);

/// Sets every group's `inputs` and `outputs` from its `nodes` (the values crossing its
/// boundary, as verify() expects them).
void set_group_boundaries(Graph& g);

/// A readable listing, one line per node, groups (if any) after the nodes:
///   graph resnet18(%data: float32[1,3,224,224]@NCHW) {
///     %conv1.weight = constant float32[64,3,7,7]
///     %conv1 = conv2d(%data, %conv1.weight) {padding=[3,3], stride=[2,2]} : float32[1,64,112,112]  # group 0
///     return %fc
///   }
std::string to_text(const Graph& g);
std::ostream& operator<<(std::ostream& os, const Graph& g);

/// Bytes of one value of type `t`.
int64_t nbytes(const TensorType& t);
/// Number of elements of `t`.
int64_t numel(const TensorType& t);

}  // namespace loom::graph_opt
