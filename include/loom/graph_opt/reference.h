// The reference execution of a graph and the te computation of a fused group. Both build
// each node's computation from the operator registry (OpDef::compute); the reference runs it
// with te::evaluate, node by node: slow and obviously correct, the oracle every pass test
// compares against.
#pragma once
#include <map>
#include <vector>

#include "loom/graph_opt/graph.h"
#include "loom/runtime/ndarray.h"
#include "loom/te/tensor.h"

namespace loom::graph_opt {

/// A te placeholder with the shape and dtype of `t`.
te::Tensor placeholder_for(const TensorType& t, const std::string& name);

/// The te tensors computing op node `n`'s outputs from `inputs` (one tensor per input value).
/// Throws loom::Error naming the node if the registry's compute rejects them.
std::vector<te::Tensor> node_compute(const Node& n, const std::vector<te::Tensor>& inputs, const std::string& where = "");

/// Evaluates op node `n` on concrete input arrays with te::evaluate.
std::vector<runtime::NDArray> evaluate_node(const Node& n, const std::vector<runtime::NDArray>& inputs,
                                            const std::string& where = "");

/// Runs `g` node by node with te::evaluate. `inputs` are given in the order of
/// g.input_nodes() and must match their types; returns one array per graph output.
std::vector<runtime::NDArray> run_reference(const Graph& g, const std::vector<runtime::NDArray>& inputs);

/// A fused group's computation as one te computation: what the compile step schedules into
/// one kernel. Member nodes are composed in order, each from the registry's compute, so the
/// epilogue ops read the anchor's output tensor directly.
struct GroupCompute {
  std::vector<te::Tensor> inputs;   // one placeholder per FusedGroup::inputs value, same order
  std::vector<te::Tensor> outputs;  // one tensor per FusedGroup::outputs value, same order
  te::Tensor anchor;                // the anchor node's output 0 (undefined without an anchor)
  std::map<ValueRef, te::Tensor> values;  // every member value and every input value
};
/// The composed computation of group `group` of the fused graph `g`.
GroupCompute compose_group(const Graph& g, int group);

/// Runs a fused graph group by group, each group's composed computation evaluated with
/// te::evaluate at once: checks that composing groups preserves what node-by-node
/// execution computes.
std::vector<runtime::NDArray> run_reference_fused(const Graph& g, const std::vector<runtime::NDArray>& inputs);

}  // namespace loom::graph_opt
