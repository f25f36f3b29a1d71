// The graph IR's queries, its verifier and its text form.
#include "loom/graph_opt/graph.h"

#include <algorithm>
#include <ostream>
#include <set>
#include <sstream>

#include "loom/runtime/error.h"
#include "loom/runtime/shape.h"
#include "loom/runtime/suggest.h"

namespace loom::graph_opt {

const char* to_string(NodeKind k) {
  switch (k) {
    case NodeKind::kInput: return "input";
    case NodeKind::kConstant: return "constant";
    case NodeKind::kOp: return "op";
  }
  return "?";
}

int64_t numel(const TensorType& t) { return runtime::checked_element_count(t.shape, to_string(t)); }

int64_t nbytes(const TensorType& t) { return runtime::checked_byte_count(t.shape, t.dtype, to_string(t)); }

const TensorType& Graph::type(ValueRef v) const {
  LOOM_CHECK(v.node >= 0 && size_t(v.node) < nodes.size(), "graph '{}': no node {} (the graph has {} nodes)", name,
             v.node, nodes.size());
  const Node& n = nodes[size_t(v.node)];
  LOOM_CHECK(v.index >= 0 && size_t(v.index) < n.outputs.size(), "graph '{}': node '{}' has no output {} (it has {})",
             name, n.name, v.index, n.outputs.size());
  return n.outputs[size_t(v.index)];
}

int Graph::find(std::string_view nm) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == nm) return int(i);
  return -1;
}

int Graph::at(std::string_view nm) const {
  int i = find(nm);
  LOOM_CHECK(i >= 0, "graph '{}' has no node named '{}'", name, nm);
  return i;
}

std::vector<int> Graph::input_nodes() const {
  std::vector<int> r;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].is_input()) r.push_back(int(i));
  return r;
}

size_t Graph::num_ops() const {
  return size_t(std::count_if(nodes.begin(), nodes.end(), [](const Node& n) { return n.is_op(); }));
}

std::string Graph::value_name(ValueRef v) const {
  if (v.node < 0 || size_t(v.node) >= nodes.size()) return fmt::format("%<invalid {}>", v.node);
  const std::string& n = nodes[size_t(v.node)].name;
  return v.index == 0 ? "%" + n : fmt::format("%{}:{}", n, v.index);
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> r(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ValueRef& in : nodes[i].inputs) {
      auto& c = r.at(size_t(in.node));
      if (c.empty() || c.back() != int(i)) c.push_back(int(i));
    }
  return r;
}

std::vector<int> Graph::group_of() const {
  std::vector<int> r(nodes.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g)
    for (int n : groups[g].nodes)
      if (n >= 0 && size_t(n) < nodes.size()) r[size_t(n)] = int(g);
  return r;
}

namespace {

/// Per group, the values it reads from outside (first-use order) and its member values used
/// outside it or returned (ascending).
std::vector<std::pair<std::vector<ValueRef>, std::vector<ValueRef>>> boundaries(const Graph& g) {
  std::vector<int> owner = g.group_of();
  std::vector<std::set<ValueRef>> used_outside(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const ValueRef& v : g.nodes[i].inputs)
      if (owner[size_t(v.node)] != owner[i]) used_outside[size_t(v.node)].insert(v);
  for (const ValueRef& v : g.outputs) used_outside[size_t(v.node)].insert(v);
  std::vector<std::pair<std::vector<ValueRef>, std::vector<ValueRef>>> r(g.groups.size());
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    auto& [ins, outs] = r[gi];
    for (int n : g.groups[gi].nodes)
      for (const ValueRef& v : g.nodes[size_t(n)].inputs)
        if (owner[size_t(v.node)] != int(gi) && std::find(ins.begin(), ins.end(), v) == ins.end()) ins.push_back(v);
    for (int n : g.groups[gi].nodes)
      for (const ValueRef& v : used_outside[size_t(n)]) outs.push_back(v);
  }
  return r;
}

}  // namespace

void set_group_boundaries(Graph& g) {
  auto b = boundaries(g);
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    g.groups[gi].inputs = std::move(b[gi].first);
    g.groups[gi].outputs = std::move(b[gi].second);
  }
}

// ---------------------------------------------------------------- verify

namespace {

std::string where(const Graph& g, size_t i) {
  const Node& n = g.nodes[i];
  if (n.is_op()) return fmt::format("graph '{}', node '{}' ({})", g.name, n.name, n.op);
  return fmt::format("graph '{}', {} '{}'", g.name, to_string(n.kind), n.name);
}

void verify_node(const Graph& g, size_t i) {
  const Node& n = g.nodes[i];
  LOOM_CHECK(!n.name.empty(), "graph '{}': node {} has no name", g.name, i);
  if (!n.is_op()) {
    LOOM_CHECK(n.inputs.empty(), "{}: an {} takes no inputs", where(g, i), to_string(n.kind));
    LOOM_CHECK(n.outputs.size() == 1, "{}: has {} output types; it must have one", where(g, i), n.outputs.size());
    for (int64_t d : n.outputs[0].shape)
      LOOM_CHECK(d > 0, "{}: type {} has a dim that is not positive", where(g, i), to_string(n.outputs[0]));
    if (n.is_constant()) {
      LOOM_CHECK(n.value.defined(), "{}: holds no data", where(g, i));
      LOOM_CHECK(n.value.shape() == n.outputs[0].shape && n.value.dtype() == n.outputs[0].dtype,
                 "{}: its data is {}{} but its type is {}", where(g, i), n.value.dtype().str(),
                 fmt::format("[{}]", fmt::join(n.value.shape(), ",")), to_string(n.outputs[0]));
    }
    return;
  }
  const te::ops::OpDef* def = te::ops::find_op(n.op);
  if (!def) {
    const std::string hint = did_you_mean(n.op, te::ops::op_names());
    fail("{}: unknown operator '{}'{}", where(g, i), n.op, hint.empty() ? "" : "; " + hint);
  }
  std::vector<TensorType> in;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ValueRef& v = n.inputs[k];
    LOOM_CHECK(v.node >= 0 && v.node < int(i),
               "{}: input {} refers to node {}, which is not an earlier node (the graph must be in topological "
               "order, with no dangling references)",
               where(g, i), k, v.node);
    const Node& src = g.nodes[size_t(v.node)];
    LOOM_CHECK(v.index >= 0 && size_t(v.index) < src.outputs.size(), "{}: input {} reads output {} of '{}', which has {}",
               where(g, i), k, v.index, src.name, src.outputs.size());
    in.push_back(src.outputs[size_t(v.index)]);
  }
  te::ops::Attrs norm = te::ops::normalize_attrs(*def, n.attrs, where(g, i));
  LOOM_CHECK(norm == n.attrs, "{}: attributes are not normalized (defaults missing)", where(g, i));
  std::vector<TensorType> out;
  try {
    out = te::ops::infer_type(n.op, in, n.attrs);
  } catch (const Error& e) {
    fail("{}: {}", where(g, i), e.what());
  }
  LOOM_CHECK(out.size() == n.outputs.size(), "{}: has {} outputs but the operator gives {}", where(g, i),
             n.outputs.size(), out.size());
  for (size_t k = 0; k < out.size(); ++k)
    LOOM_CHECK(out[k] == n.outputs[k], "{}: output {} is recorded as {} but the operator infers {}", where(g, i), k,
               to_string(n.outputs[k]), to_string(out[k]));
}

void verify_groups(const Graph& g) {
  std::vector<int> owner(g.nodes.size(), -1);
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const FusedGroup& grp = g.groups[gi];
    LOOM_CHECK(!grp.nodes.empty(), "graph '{}': group {} ('{}') has no nodes", g.name, gi, grp.name);
    int prev = -1;
    for (int n : grp.nodes) {
      LOOM_CHECK(n >= 0 && size_t(n) < g.nodes.size() && g.nodes[size_t(n)].is_op(),
                 "graph '{}': group '{}' lists {}, which is not an op node", g.name, grp.name, n);
      LOOM_CHECK(n > prev, "graph '{}': group '{}' lists its nodes out of topological order", g.name, grp.name);
      LOOM_CHECK(owner[size_t(n)] < 0, "graph '{}': node '{}' is in groups {} and {}", g.name, g.nodes[size_t(n)].name,
                 owner[size_t(n)], gi);
      owner[size_t(n)] = int(gi);
      prev = n;
    }
    if (grp.anchor >= 0)
      LOOM_CHECK(std::find(grp.nodes.begin(), grp.nodes.end(), grp.anchor) != grp.nodes.end(),
                 "graph '{}': the anchor of group '{}' is not one of its nodes", g.name, grp.name);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    LOOM_CHECK(!g.nodes[i].is_op() || owner[i] >= 0, "graph '{}': node '{}' is in no group", g.name, g.nodes[i].name);

  // Inputs and outputs are the crossing values, and groups run after the groups they read.
  auto b = boundaries(g);
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const FusedGroup& grp = g.groups[gi];
    for (const ValueRef& v : b[gi].first)
      LOOM_CHECK(owner[size_t(v.node)] < int(gi), "graph '{}': group '{}' reads {} of group {}, which runs after it",
                 g.name, grp.name, g.value_name(v), owner[size_t(v.node)]);
    LOOM_CHECK(b[gi].first == grp.inputs,
               "graph '{}': group '{}' lists inputs that are not the values it reads from outside", g.name, grp.name);
    LOOM_CHECK(b[gi].second == grp.outputs,
               "graph '{}': group '{}' lists outputs that are not the member values used outside it", g.name, grp.name);
  }
}

}  // namespace

void verify(const Graph& g) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    verify_node(g, i);
    LOOM_CHECK(names.insert(g.nodes[i].name).second, "graph '{}': two nodes are named '{}'", g.name, g.nodes[i].name);
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ValueRef& v = g.outputs[k];
    LOOM_CHECK(v.node >= 0 && size_t(v.node) < g.nodes.size() && v.index >= 0 &&
                   size_t(v.index) < g.nodes[size_t(v.node)].outputs.size(),
               "graph '{}': output {} refers to a value that does not exist", g.name, k);
  }
  if (!g.groups.empty()) verify_groups(g);
}

// ---------------------------------------------------------------- text

namespace {

std::string attrs_text(const Attrs& a) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : a) parts.push_back(k + "=" + te::ops::to_string(v));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string to_text(const Graph& g) {
  std::ostringstream os;
  std::vector<std::string> params;
  for (int i : g.input_nodes()) params.push_back(g.value_name({i, 0}) + ": " + to_string(g.nodes[size_t(i)].outputs[0]));
  os << "graph " << g.name << "(" << fmt::format("{}", fmt::join(params, ", ")) << ") {\n";
  std::vector<int> group = g.group_of();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_input()) continue;
    os << "  " << g.value_name({int(i), 0});
    if (n.is_constant()) {
      os << " = constant " << to_string(n.outputs[0]) << "\n";
      continue;
    }
    std::vector<std::string> args, types;
    for (const ValueRef& v : n.inputs) args.push_back(g.value_name(v));
    for (const TensorType& t : n.outputs) types.push_back(to_string(t));
    if (n.outputs.size() > 1) os << fmt::format(" (+{} outputs)", n.outputs.size() - 1);
    os << " = " << n.op << "(" << fmt::format("{}", fmt::join(args, ", ")) << ")";
    if (!n.attrs.empty()) os << " {" << attrs_text(n.attrs) << "}";
    os << " : " << fmt::format("{}", fmt::join(types, ", "));
    if (group[i] >= 0) os << "  # group " << group[i];
    os << "\n";
  }
  std::vector<std::string> outs;
  for (const ValueRef& v : g.outputs) outs.push_back(g.value_name(v));
  os << "  return " << fmt::format("{}", fmt::join(outs, ", ")) << "\n}\n";
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const FusedGroup& grp = g.groups[gi];
    std::vector<std::string> members, ins, outv;
    for (int n : grp.nodes) members.push_back(g.value_name({n, 0}));
    for (const ValueRef& v : grp.inputs) ins.push_back(g.value_name(v));
    for (const ValueRef& v : grp.outputs) outv.push_back(g.value_name(v));
    os << fmt::format("group {} {} ({}{}): [{}] ({}) -> ({})\n", gi, grp.name, te::ops::to_string(grp.pattern),
                      grp.anchor >= 0 ? ", anchor " + g.value_name({grp.anchor, 0}) : std::string(),
                      fmt::join(members, ", "), fmt::join(ins, ", "), fmt::join(outv, ", "));
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << to_text(g); }

}  // namespace loom::graph_opt
