// Workloads of auto-scheduled tasks: op graphs of registry operators (JSON, build), hashed te
// computations and the process's registry of them.
#include "loom/tuner/auto/workload.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "loom/tuner/auto/compute_dag.h"

namespace loom::tuner::autosched {

using nlohmann::json;

namespace {

json attr_json(const te::ops::AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
  return std::get<std::vector<double>>(v);
}

te::ops::AttrValue attr_value(const json& j, const std::string& where) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  LOOM_CHECK(j.is_array(), "{}: expected a number, a string or an array, got a {}", where, j.type_name());
  bool floats = false;
  for (const json& e : j) {
    LOOM_CHECK(e.is_number(), "{}: expected an array of numbers", where);
    floats |= e.is_number_float();
  }
  if (floats) return j.get<std::vector<double>>();
  return j.get<std::vector<int64_t>>();
}

std::vector<te::ops::TensorType> value_types(const OpGraph& g, size_t upto_node) {
  std::vector<te::ops::TensorType> types = g.inputs;
  for (size_t k = 0; k < upto_node; ++k) {
    std::vector<te::ops::TensorType> in;
    for (int v : g.nodes[k].inputs) in.push_back(types.at(size_t(v)));
    for (auto& t : te::ops::infer_type(g.nodes[k].op, in, g.nodes[k].attrs)) types.push_back(std::move(t));
  }
  return types;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, std::vector<te::Tensor>> computations;  // by workload key
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

te::ops::TensorType parse_tensor_type(const std::string& text) {
  te::ops::TensorType t;
  const size_t open = text.find('['), close = text.find(']');
  LOOM_CHECK(open != std::string::npos && close != std::string::npos && close > open,
             "'{}' is not a tensor type DTYPE[D0,D1,…] (e.g. float32[128,768])", text);
  try {
    t.dtype = DataType::parse(text.substr(0, open));
  } catch (const Error& e) {
    fail("'{}' is not a tensor type: {}", text, e.what());
  }
  const std::string dims = text.substr(open + 1, close - open - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    const std::string d = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    LOOM_CHECK(!d.empty() && d.find_first_not_of("0123456789") == std::string::npos && d.size() <= 10,
               "'{}' is not a tensor type: dimension '{}' is not a non-negative integer", text, d);
    t.shape.push_back(std::stoll(d));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  const std::string rest = text.substr(close + 1);
  if (!rest.empty()) {
    LOOM_CHECK(rest[0] == '@' && rest.size() > 1, "'{}' is not a tensor type: unexpected '{}' after the shape", text,
               rest);
    t.layout = rest.substr(1);
  }
  return t;
}

OpGraph OpGraph::single(const std::string& op, std::vector<te::ops::TensorType> inputs, te::ops::Attrs attrs) {
  OpGraph g;
  g.inputs = std::move(inputs);
  std::vector<int> in;
  for (size_t i = 0; i < g.inputs.size(); ++i) in.push_back(int(i));
  const int first = g.add(op, std::move(in), std::move(attrs));
  const size_t n_out = value_types(g, g.nodes.size()).size() - size_t(first);
  for (size_t k = 0; k < n_out; ++k) g.outputs.push_back(first + int(k));
  return g;
}

int OpGraph::add(const std::string& op, std::vector<int> in, te::ops::Attrs attrs) {
  const te::ops::OpDef& def = te::ops::get_op(op);
  const std::vector<te::ops::TensorType> types = value_types(*this, nodes.size());
  std::vector<te::ops::TensorType> in_types;
  for (int v : in) {
    LOOM_CHECK(v >= 0 && size_t(v) < types.size(), "op graph: operator '{}' reads value {}, which does not exist ({} "
               "values so far)", op, v, types.size());
    in_types.push_back(types[size_t(v)]);
  }
  Node n{op, te::ops::normalize_attrs(def, attrs), std::move(in)};
  te::ops::infer_type(op, in_types, n.attrs);  // checks the input count and types
  nodes.push_back(std::move(n));
  return int(types.size());
}

std::vector<te::Tensor> OpGraph::build() const {
  std::vector<te::Tensor> values, args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<te::Expr> shape;
    for (int64_t d : inputs[i].shape) shape.push_back(te::Expr(d));
    values.push_back(te::placeholder(shape, inputs[i].dtype, fmt::format("in{}", i)));
  }
  args = values;
  for (const Node& n : nodes) {
    std::vector<te::Tensor> in;
    for (int v : n.inputs) {
      LOOM_CHECK(v >= 0 && size_t(v) < values.size(), "op graph: operator '{}' reads value {}, which does not exist",
                 n.op, v);
      in.push_back(values[size_t(v)]);
    }
    for (te::Tensor& t : te::ops::apply_op(n.op, in, n.attrs)) values.push_back(std::move(t));
  }
  for (int v : outputs) {
    LOOM_CHECK(v >= int(inputs.size()) && size_t(v) < values.size(),
               "op graph: output value {} is not computed by a node ({} inputs, {} values)", v, inputs.size(),
               values.size());
    args.push_back(values[size_t(v)]);
  }
  return args;
}

std::string OpGraph::display_name() const {
  if (!name.empty()) return name;
  std::vector<std::string> ops;
  for (const Node& n : nodes) ops.push_back(n.op);
  return fmt::format("{}", fmt::join(ops, "+"));
}

std::string OpGraph::to_json() const {
  json j = json::object();
  json in = json::array();
  for (const auto& t : inputs) in.push_back(te::ops::to_string(t));
  j["inputs"] = in;
  json nodes_j = json::array();
  for (const Node& n : nodes) {
    json a = json::object();
    for (const auto& [k, v] : n.attrs) a[k] = attr_json(v);
    nodes_j.push_back({{"op", n.op}, {"attrs", a}, {"inputs", n.inputs}});
  }
  j["nodes"] = nodes_j;
  j["outputs"] = outputs;
  if (!name.empty()) j["name"] = name;
  return j.dump();
}

OpGraph OpGraph::from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail("op graph: malformed JSON: {}", e.what());
  }
  LOOM_CHECK(j.is_object() && j.contains("inputs") && j.contains("nodes") && j.contains("outputs"),
             "op graph: expected an object with inputs, nodes and outputs");
  OpGraph g;
  try {
    for (const json& t : j.at("inputs")) g.inputs.push_back(parse_tensor_type(t.get<std::string>()));
    if (j.contains("name")) g.name = j.at("name").get<std::string>();
    for (size_t k = 0; k < j.at("nodes").size(); ++k) {
      const json& n = j.at("nodes")[k];
      te::ops::Attrs attrs;
      for (const auto& [name, v] : n.at("attrs").items())
        attrs[name] = attr_value(v, fmt::format("op graph node {} attribute '{}'", k, name));
      g.add(n.at("op").get<std::string>(), n.at("inputs").get<std::vector<int>>(), std::move(attrs));
    }
    g.outputs = j.at("outputs").get<std::vector<int>>();
  } catch (const json::exception& e) {
    fail("op graph: {}", e.what());
  }
  return g;
}

records::Workload workload_of(const OpGraph& g) {
  LOOM_CHECK(!g.nodes.empty() && !g.outputs.empty(), "op graph: no nodes or no outputs");
  records::Workload w;
  w.op = kAutoOpPrefix + g.display_name();
  std::vector<te::ops::TensorType> types = value_types(g, g.nodes.size());
  w.dtype = types.at(size_t(g.outputs[0])).dtype.str();
  w.attrs["graph"] = g.to_json();
  return w;
}

records::Workload workload_of(const std::string& name, const std::vector<te::Tensor>& args) {
  LOOM_CHECK(!name.empty(), "auto-scheduled task: the computation needs a name");
  std::vector<te::Tensor> outputs;
  for (const te::Tensor& t : args)
    if (t.op()->kind != te::OpKind::kPlaceholder) outputs.push_back(t);
  LOOM_CHECK(!outputs.empty(), "auto-scheduled task '{}': no computed tensor among the arguments", name);
  ComputeDag dag(outputs);
  records::Workload w;
  w.op = kAutoOpPrefix + name;
  w.dtype = outputs[0].dtype().str();
  // The argument order is part of the computation as called.
  std::string order;
  for (const te::Tensor& t : args) order += fmt::format("{}.{},", dag.index_of(t.op()), t.value_index());
  w.attrs["hash"] = dag.hash();
  w.attrs["args"] = order;
  return w;
}

bool is_auto_workload(const records::Workload& w) { return w.op.rfind(kAutoOpPrefix, 0) == 0; }

void register_computation(const records::Workload& w, std::vector<te::Tensor> args) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.computations[w.key()] = std::move(args);
}

std::vector<te::Tensor> registered_computation(const records::Workload& w) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.computations.find(w.key());
  LOOM_CHECK(it != r.computations.end(),
             "{} is a te computation auto-scheduled in another process: its record names it by a hash of its "
             "structure, so only a process that builds it again (tuner::Task::create_auto) can schedule it",
             w.key());
  return it->second;
}

}  // namespace loom::tuner::autosched
