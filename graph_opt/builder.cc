// GraphBuilder and GraphRewriter.
#include "loom/graph_opt/builder.h"

#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"

namespace loom::graph_opt {

using te::ops::AttrValue;

GraphBuilder::GraphBuilder(std::string graph_name) { graph_.name = std::move(graph_name); }

std::string GraphBuilder::unique_name(const std::string& base) const {
  if (!names_.count(base)) return base;
  for (int k = 1;; ++k) {
    std::string s = fmt::format("{}_{}", base, k);
    if (!names_.count(s)) return s;
  }
}

int GraphBuilder::add_node(Node n) {
  LOOM_CHECK(!n.name.empty(), "graph '{}': a node needs a name", graph_.name);
  LOOM_CHECK(!names_.count(n.name), "graph '{}': a node named '{}' exists already", graph_.name, n.name);
  int id = int(graph_.nodes.size());
  names_.emplace(n.name, id);
  graph_.nodes.push_back(std::move(n));
  return id;
}

Value GraphBuilder::input(const std::string& name, TensorType type) {
  for (int64_t d : type.shape)
    LOOM_CHECK(d > 0, "graph '{}': input '{}' has type {}; dims must be positive", graph_.name, name, to_string(type));
  Node n;
  n.kind = NodeKind::kInput;
  n.name = name;
  n.outputs = {std::move(type)};
  return {add_node(std::move(n)), 0};
}

Value GraphBuilder::constant(const std::string& name, runtime::NDArray value, std::string layout) {
  LOOM_CHECK(value.defined(), "graph '{}': constant '{}' holds no array", graph_.name, name);
  Node n;
  n.kind = NodeKind::kConstant;
  n.name = name;
  n.outputs = {TensorType{value.shape(), value.dtype(), std::move(layout)}};
  n.value = std::move(value);
  return {add_node(std::move(n)), 0};
}

std::vector<Value> GraphBuilder::call(const std::string& op, const std::vector<Value>& inputs, const Attrs& attrs,
                                      const std::string& name) {
  std::string nm = name;
  if (nm.empty()) {
    int& c = counters_[op];
    do nm = fmt::format("{}_{}", op, c++);
    while (names_.count(nm));
  }
  std::string where = fmt::format("graph '{}', node '{}' ({})", graph_.name, nm, op);
  const te::ops::OpDef* def = te::ops::find_op(op);
  if (!def) {
    std::string known = fmt::format("{}", fmt::join(te::ops::op_names(), ", "));
    const std::string hint = did_you_mean(op, te::ops::op_names());
    fail("{}: unknown operator '{}'{} (registered: {})", where, op, hint.empty() ? "" : "; " + hint, known);
  }
  Node n;
  n.kind = NodeKind::kOp;
  n.name = nm;
  n.op = op;
  n.attrs = te::ops::normalize_attrs(*def, attrs, where);
  std::vector<TensorType> in;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Value& v = inputs[k];
    LOOM_CHECK(v.node >= 0 && size_t(v.node) < graph_.nodes.size() && v.index >= 0 &&
                   size_t(v.index) < graph_.nodes[size_t(v.node)].outputs.size(),
               "{}: input {} is not a value of this graph", where, k);
    in.push_back(graph_.type(v));
  }
  try {
    n.outputs = te::ops::infer_type(op, in, n.attrs);
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
  n.inputs = inputs;
  int id = add_node(std::move(n));
  std::vector<Value> out;
  for (size_t k = 0; k < graph_.nodes[size_t(id)].outputs.size(); ++k) out.push_back({id, int(k)});
  return out;
}

Value GraphBuilder::op(const std::string& op, const std::vector<Value>& inputs, const Attrs& attrs,
                       const std::string& name) {
  std::vector<Value> out = call(op, inputs, attrs, name);
  LOOM_CHECK(out.size() == 1, "graph '{}': operator '{}' has {} outputs; use call() for it", graph_.name, op,
             out.size());
  return out[0];
}

void GraphBuilder::output(Value v) {
  LOOM_CHECK(v.node >= 0 && size_t(v.node) < graph_.nodes.size(), "graph '{}': output is not a value of this graph",
             graph_.name);
  graph_.outputs.push_back(v);
}

Graph GraphBuilder::build() {
  verify(graph_);
  Graph g = std::move(graph_);
  graph_ = Graph{};
  graph_.name = g.name;
  names_.clear();
  counters_.clear();
  return g;
}

// ---------------------------------------------------------------- typed helpers

namespace {

std::vector<int64_t> ints(const std::array<int64_t, 2>& p) { return {p[0], p[1]}; }

Attrs conv_attrs(const Conv2dAttrs& a) {
  return {{"strides", ints(a.strides)}, {"padding", ints(a.padding)}, {"dilation", ints(a.dilation)},
          {"groups", a.groups}};
}

Attrs pool_attrs(const Pool2dAttrs& a) {
  return {{"pool_size", ints(a.pool_size)}, {"strides", ints(a.strides)}, {"padding", ints(a.padding)}};
}

}  // namespace

Value GraphBuilder::conv2d(Value data, Value weight, const Conv2dAttrs& a, const std::string& name) {
  return op("conv2d", {data, weight}, conv_attrs(a), name);
}
Value GraphBuilder::conv2d(Value data, Value weight, Value bias, const Conv2dAttrs& a, const std::string& name) {
  return op("conv2d", {data, weight, bias}, conv_attrs(a), name);
}
Value GraphBuilder::dense(Value data, Value weight, const std::string& name) {
  return op("dense", {data, weight}, {}, name);
}
Value GraphBuilder::dense(Value data, Value weight, Value bias, const std::string& name) {
  return op("dense", {data, weight, bias}, {}, name);
}
Value GraphBuilder::batch_norm(Value data, Value gamma, Value beta, Value mean, Value var, double epsilon,
                               const std::string& name) {
  return op("batch_norm", {data, gamma, beta, mean, var}, {{"epsilon", epsilon}}, name);
}
Value GraphBuilder::bias_add(Value data, Value bias, int64_t axis, const std::string& name) {
  return op("bias_add", {data, bias}, {{"axis", axis}}, name);
}
Value GraphBuilder::relu(Value x, const std::string& name) { return op("relu", {x}, {}, name); }
Value GraphBuilder::clip(Value x, double lo, double hi, const std::string& name) {
  return op("clip", {x}, {{"min", lo}, {"max", hi}}, name);
}
Value GraphBuilder::add(Value a, Value b, const std::string& name) { return op("add", {a, b}, {}, name); }
Value GraphBuilder::multiply(Value a, Value b, const std::string& name) { return op("multiply", {a, b}, {}, name); }
Value GraphBuilder::max_pool2d(Value x, const Pool2dAttrs& a, const std::string& name) {
  return op("max_pool2d", {x}, pool_attrs(a), name);
}
Value GraphBuilder::avg_pool2d(Value x, const Pool2dAttrs& a, const std::string& name) {
  Attrs at = pool_attrs(a);
  at["count_include_pad"] = int64_t(a.count_include_pad);
  return op("avg_pool2d", {x}, at, name);
}
Value GraphBuilder::global_avg_pool2d(Value x, const std::string& name) {
  return op("global_avg_pool2d", {x}, {}, name);
}
Value GraphBuilder::flatten(Value x, const std::string& name) { return op("flatten", {x}, {}, name); }
Value GraphBuilder::reshape(Value x, std::vector<int64_t> newshape, const std::string& name) {
  return op("reshape", {x}, {{"newshape", std::move(newshape)}}, name);
}
Value GraphBuilder::layout_transform(Value x, const std::string& src_layout, const std::string& dst_layout,
                                     const std::string& name) {
  return op("layout_transform", {x}, {{"src_layout", src_layout}, {"dst_layout", dst_layout}}, name);
}

// ---------------------------------------------------------------- rewriter

GraphRewriter::GraphRewriter(const Graph& source) : GraphBuilder(source.name), source_(source) {
  map_.resize(source.nodes.size());
}

Value GraphRewriter::map(ValueRef v) const {
  LOOM_ICHECK(v.node >= 0 && size_t(v.node) < map_.size());
  const auto& m = map_[size_t(v.node)];
  LOOM_CHECK(size_t(v.index) < m.size(), "graph '{}': value {} is used before it was rewritten", source_.name,
             source_.value_name(v));
  return m[size_t(v.index)];
}

std::vector<Value> GraphRewriter::map_inputs(int i) const {
  std::vector<Value> r;
  for (const ValueRef& v : source_.nodes.at(size_t(i)).inputs) r.push_back(map(v));
  return r;
}

void GraphRewriter::replace(ValueRef v, Value now) {
  auto& m = map_.at(size_t(v.node));
  m.resize(source_.nodes[size_t(v.node)].outputs.size());
  m[size_t(v.index)] = now;
}

void GraphRewriter::copy(int i) {
  const Node& n = source_.nodes.at(size_t(i));
  if (!n.is_op()) {
    Node c = n;
    c.name = unique_name(n.name);
    int id = add_node(std::move(c));
    replace({i, 0}, {id, 0});
    return;
  }
  copy_with(i, map_inputs(i), n.attrs);
}

void GraphRewriter::copy_with(int i, const std::vector<Value>& inputs, const Attrs& attrs) {
  const Node& n = source_.nodes.at(size_t(i));
  std::vector<Value> out = call(n.op, inputs, attrs, unique_name(n.name));
  for (size_t k = 0; k < out.size(); ++k) replace({i, int(k)}, out[k]);
}

Graph GraphRewriter::finish() {
  for (const ValueRef& v : source_.outputs) output(map(v));
  return build();
}

}  // namespace loom::graph_opt
