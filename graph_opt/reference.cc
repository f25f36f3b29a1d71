// Reference execution with te::evaluate, and the composed te computation of a fused group.
#include "loom/graph_opt/reference.h"

#include "loom/runtime/error.h"
#include "loom/te/evaluate.h"

namespace loom::graph_opt {

namespace {

std::string node_where(const Graph& g, int i) {
  const Node& n = g.nodes[size_t(i)];
  return fmt::format("graph '{}', node '{}' ({})", g.name, n.name, n.op);
}

void check_inputs(const Graph& g, const std::vector<runtime::NDArray>& inputs) {
  std::vector<int> ins = g.input_nodes();
  LOOM_CHECK(inputs.size() == ins.size(), "graph '{}' takes {} inputs, {} were given", g.name, ins.size(),
             inputs.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    const TensorType& t = g.nodes[size_t(ins[k])].outputs[0];
    LOOM_CHECK(inputs[k].defined() && inputs[k].shape() == t.shape && inputs[k].dtype() == t.dtype,
               "graph '{}': input '{}' must be {}", g.name, g.nodes[size_t(ins[k])].name, to_string(t));
  }
}

}  // namespace

te::Tensor placeholder_for(const TensorType& t, const std::string& name) {
  std::vector<te::Expr> shape;
  for (int64_t d : t.shape) shape.push_back(te::Expr(int32_t(d)));
  return te::placeholder(shape, t.dtype, name);
}

std::vector<te::Tensor> node_compute(const Node& n, const std::vector<te::Tensor>& inputs, const std::string& where) {
  LOOM_ICHECK(n.is_op());
  const te::ops::OpDef& def = te::ops::get_op(n.op);
  LOOM_CHECK(def.compute, "{}: operator '{}' has no compute", where.empty() ? n.name : where, n.op);
  std::vector<te::Tensor> out;
  try {
    out = def.compute(inputs, n.attrs);
  } catch (const Error& e) {
    fail("{}: {}", where.empty() ? n.name : where, e.what());
  }
  LOOM_CHECK(out.size() == n.outputs.size(), "{}: the compute of '{}' gives {} tensors for {} outputs",
             where.empty() ? n.name : where, n.op, out.size(), n.outputs.size());
  return out;
}

std::vector<runtime::NDArray> evaluate_node(const Node& n, const std::vector<runtime::NDArray>& inputs,
                                            const std::string& where) {
  std::vector<te::Tensor> ph;
  std::map<te::Tensor, runtime::NDArray> bind;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const runtime::NDArray& a = inputs[k];
    te::Tensor p = placeholder_for(TensorType{a.shape(), a.dtype(), ""}, fmt::format("in{}", k));
    ph.push_back(p);
    bind[p] = a;
  }
  std::vector<te::Tensor> out = node_compute(n, ph, where);
  return te::evaluate(out, bind);
}

std::vector<runtime::NDArray> run_reference(const Graph& g, const std::vector<runtime::NDArray>& inputs) {
  check_inputs(g, inputs);
  std::vector<std::vector<runtime::NDArray>> values(g.nodes.size());
  size_t next_input = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_input()) values[i] = {inputs[next_input++]};
    else if (n.is_constant()) values[i] = {n.value};
    else {
      std::vector<runtime::NDArray> in;
      for (const ValueRef& v : n.inputs) in.push_back(values[size_t(v.node)][size_t(v.index)]);
      values[i] = evaluate_node(n, in, node_where(g, int(i)));
    }
  }
  std::vector<runtime::NDArray> out;
  for (const ValueRef& v : g.outputs) out.push_back(values[size_t(v.node)][size_t(v.index)]);
  return out;
}

GroupCompute compose_group(const Graph& g, int group) {
  LOOM_CHECK(group >= 0 && size_t(group) < g.groups.size(), "graph '{}' has no group {} (it has {})", g.name, group,
             g.groups.size());
  const FusedGroup& grp = g.groups[size_t(group)];
  GroupCompute gc;
  for (const ValueRef& v : grp.inputs) {
    te::Tensor p = placeholder_for(g.type(v), g.value_name(v).substr(1));
    gc.inputs.push_back(p);
    gc.values[v] = p;
  }
  for (int n : grp.nodes) {
    const Node& node = g.nodes[size_t(n)];
    std::vector<te::Tensor> in;
    for (const ValueRef& v : node.inputs) {
      auto it = gc.values.find(v);
      LOOM_CHECK(it != gc.values.end(), "graph '{}', group '{}': node '{}' reads {}, which is neither a member nor an input",
                 g.name, grp.name, node.name, g.value_name(v));
      in.push_back(it->second);
    }
    std::vector<te::Tensor> out = node_compute(node, in, node_where(g, n));
    for (size_t k = 0; k < out.size(); ++k) gc.values[{n, int(k)}] = out[k];
    if (n == grp.anchor) gc.anchor = out[0];
  }
  for (const ValueRef& v : grp.outputs) gc.outputs.push_back(gc.values.at(v));
  return gc;
}

std::vector<runtime::NDArray> run_reference_fused(const Graph& g, const std::vector<runtime::NDArray>& inputs) {
  check_inputs(g, inputs);
  LOOM_CHECK(!g.groups.empty() || g.num_ops() == 0, "graph '{}' is not fused (run fuse_ops first)", g.name);
  std::map<ValueRef, runtime::NDArray> values;
  std::vector<int> ins = g.input_nodes();
  for (size_t k = 0; k < ins.size(); ++k) values[{ins[k], 0}] = inputs[k];
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].is_constant()) values[{int(i), 0}] = g.nodes[i].value;
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const FusedGroup& grp = g.groups[gi];
    GroupCompute gc = compose_group(g, int(gi));
    std::map<te::Tensor, runtime::NDArray> bind;
    for (size_t k = 0; k < grp.inputs.size(); ++k) bind[gc.inputs[k]] = values.at(grp.inputs[k]);
    std::vector<runtime::NDArray> out = te::evaluate(gc.outputs, bind);
    for (size_t k = 0; k < grp.outputs.size(); ++k) values[grp.outputs[k]] = out[k];
  }
  std::vector<runtime::NDArray> out;
  for (const ValueRef& v : g.outputs) out.push_back(values.at(v));
  return out;
}

}  // namespace loom::graph_opt
