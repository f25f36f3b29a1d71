// Subgraphs (If's branches): the outer-scope values they read, and their import inline into
// the graph being built.
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

void Importer::import_subgraph_as_outputs(const onnx::GraphProto& g, const std::string& scope) {
  if (g.input_size() > 0) invalid(fmt::format("subgraph {} has {} inputs; it takes none", scope, g.input_size()));
  if (g.sparse_initializer_size() > 0) unsupported(fmt::format("subgraph {} has sparse initializers", scope));
  if (g.output_size() != node_->output_size())
    invalid(fmt::format("subgraph {} has {} outputs but the node has {}", scope, g.output_size(), node_->output_size()));
  const onnx::NodeProto* const node = node_;
  const int index = node_index_;
  const std::set<std::string> attrs_read = attrs_read_;
  const int hint_counter = hint_counter_;
  const std::string outer_scope = scope_;
  const std::string inner_scope = fmt::format("{}: node #{} '{}' ({}): {}", scope_, index, node->name(), node->op_type(), scope);

  for (const auto& init : g.initializer()) {
    const std::string what = where() + ": " + scope + ": initializer";
    LOOM_CHECK(!init.name().empty(), "{}: an initializer has no name", what);
    if (values_.count(init.name()) || empty_.count(init.name()))
      invalid(fmt::format("{} initializer '{}' reuses the name of another value", scope, init.name()));
    runtime::NDArray a = tensor_to_array(init, base_dir_, what);
    if (a.numel() == 0) empty_[init.name()] = a;
    else values_[init.name()] = OnnxValue{constant(a, init.name()), a.ndim() == 0};
  }
  scope_ = inner_scope;
  for (int i : node_order(g)) convert(g, i);
  scope_ = outer_scope;
  node_ = node;
  node_index_ = index;
  attrs_read_ = attrs_read;
  hint_counter_ = hint_counter;

  for (int k = 0; k < g.output_size(); ++k) {
    const std::string& name = g.output(k).name();
    if (!output_used(k)) continue;
    if (auto it = values_.find(name); it != values_.end()) {
      set_output(k, it->second.value, it->second.scalar);
    } else if (auto e = empty_.find(name); e != empty_.end()) {
      set_empty_output(k, e->second);
    } else if (empty_inputs_.count(name)) {
      unsupported(fmt::format("{} output {} '{}' has no elements (loom has no empty tensors)", scope, k, name));
    } else {
      invalid(fmt::format("{} output {} '{}' is not computed by any of its nodes", scope, k, name));
    }
  }
}

}  // namespace loom::graph_opt::onnx_frontend
