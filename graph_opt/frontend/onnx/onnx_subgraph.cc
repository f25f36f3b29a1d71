// Subgraphs (If's branches, FlexAttention's score_mod and prob_mod): the outer-scope values
// they read, and their import inline into the graph being built.
#include <fmt/format.h>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

void add_outer_references(const onnx::GraphProto& g, std::vector<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  std::vector<std::string> used;
  for (const auto& n : g.node()) {
    used.insert(used.end(), n.input().begin(), n.input().end());
    for (const std::string& r : outer_references(n)) used.push_back(r);
  }
  for (const auto& o : g.output()) used.push_back(o.name());
  for (const std::string& u : used)
    if (!u.empty() && !defined.count(u) && std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
}

}  // namespace

std::vector<std::string> outer_references(const onnx::NodeProto& n) {
  std::vector<std::string> out;
  for (const auto& a : n.attribute()) {
    if (a.has_g()) add_outer_references(a.g(), out);
    for (const auto& g : a.graphs()) add_outer_references(g, out);
  }
  return out;
}

const onnx::GraphProto& Importer::attr_graph(const std::string& name) {
  return attr_of(name, onnx::AttributeProto::GRAPH).g();
}

void Importer::import_subgraph(const onnx::GraphProto& g, const std::string& scope, const std::vector<OnnxValue>& inputs,
                               const std::function<void()>& read_outputs) {
  if (g.input_size() != int(inputs.size()))
    invalid(fmt::format("subgraph {} has {} inputs; it takes {}", scope, g.input_size(),
                        inputs.empty() ? "none" : std::to_string(inputs.size())));
  if (g.sparse_initializer_size() > 0) unsupported(fmt::format("subgraph {} has sparse initializers", scope));
  const onnx::NodeProto* const node = node_;
  const int index = node_index_;
  const std::set<std::string> attrs_read = attrs_read_;
  const int hint_counter = hint_counter_;
  const std::string outer_scope = scope_;
  const std::string inner_scope = fmt::format("{}: node #{} '{}' ({}): {}", scope_, index, node->name(), node->op_type(), scope);

  // The names the subgraph defines are its own: they are dropped after it, so that sibling
  // subgraphs (two nodes with one score_mod, two If branches) may reuse them.
  std::vector<std::string> local;
  auto define = [&](const std::string& name, const std::string& what) {
    if (values_.count(name) || empty_.count(name))
      invalid(fmt::format("{} {} '{}' reuses the name of another value", scope, what, name));
    local.push_back(name);
  };
  for (int i = 0; i < g.input_size(); ++i) {
    const auto& in = g.input(i);
    LOOM_CHECK(!in.name().empty(), "{}: {}: input {} has no name", where(), scope, i);
    define(in.name(), "input");
    const TensorType& t = type(inputs[size_t(i)].value);
    if (in.type().has_tensor_type()) {
      const auto& tt = in.type().tensor_type();
      const size_t rank = inputs[size_t(i)].scalar ? 0 : t.shape.size();
      if (tt.elem_type() != 0 && to_dtype(tt.elem_type(), where() + ": " + scope + ": input '" + in.name() + "'") != t.dtype)
        invalid(fmt::format("{} input '{}' is declared {} but takes {}", scope, in.name(), onnx_type_name(tt.elem_type()),
                            t.dtype.str()));
      if (tt.has_shape() && size_t(tt.shape().dim_size()) != rank)
        invalid(fmt::format("{} input '{}' is declared of rank {} but takes {}", scope, in.name(),
                            tt.shape().dim_size(), to_string(t)));
    }
    values_[in.name()] = inputs[size_t(i)];
  }
  for (const auto& init : g.initializer()) {
    const std::string what = where() + ": " + scope + ": initializer";
    LOOM_CHECK(!init.name().empty(), "{}: an initializer has no name", what);
    define(init.name(), "initializer");
    runtime::NDArray a = tensor_to_array(init, base_dir_, what);
    if (a.numel() == 0) empty_[init.name()] = a;
    else values_[init.name()] = OnnxValue{constant(a, init.name()), a.ndim() == 0};
  }
  for (const auto& n : g.node())
    for (const std::string& o : n.output())
      if (!o.empty()) define(o, "node output");
  scope_ = inner_scope;
  for (int i : node_order(g)) convert(g, i);
  scope_ = outer_scope;
  node_ = node;
  node_index_ = index;
  attrs_read_ = attrs_read;
  hint_counter_ = hint_counter;
  read_outputs();
  // (A branch may name a value as the node's own output; that one stays, as the node's.)
  const std::set<std::string> node_outputs(node->output().begin(), node->output().end());
  for (const std::string& name : local) {
    if (node_outputs.count(name)) continue;
    values_.erase(name);
    empty_.erase(name);
  }
}

void Importer::import_subgraph_as_outputs(const onnx::GraphProto& g, const std::string& scope) {
  if (g.output_size() != node_->output_size())
    invalid(fmt::format("subgraph {} has {} outputs but the node has {}", scope, g.output_size(), node_->output_size()));
  import_subgraph(g, scope, {}, [&] {
    for (int k = 0; k < g.output_size(); ++k) {
      const std::string& name = g.output(k).name();
      if (!output_used(k)) continue;
      if (auto it = values_.find(name); it != values_.end()) {
        set_output(k, it->second.value, it->second.scalar);
      } else if (auto e = empty_.find(name); e != empty_.end()) {
        set_empty_output(k, e->second);
      } else {
        invalid(fmt::format("{} output {} '{}' is not computed by any of its nodes", scope, k, name));
      }
    }
  });
}

OnnxValue Importer::import_subgraph_function(const onnx::GraphProto& g, const std::string& scope,
                                             const std::vector<OnnxValue>& inputs) {
  if (g.output_size() != 1) invalid(fmt::format("subgraph {} has {} outputs; it must have one", scope, g.output_size()));
  OnnxValue out;
  import_subgraph(g, scope, inputs, [&] {
    const std::string& name = g.output(0).name();
    auto it = values_.find(name);
    if (it != values_.end()) out = it->second;
    else if (empty_.count(name))
      unsupported(fmt::format("{} output '{}' has no elements (loom has no empty tensors)", scope, name));
    else invalid(fmt::format("{} output '{}' is not computed by any of its nodes", scope, name));
  });
  return out;
}

}  // namespace loom::graph_opt::onnx_frontend
