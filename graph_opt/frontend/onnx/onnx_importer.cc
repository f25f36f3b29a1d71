// The ONNX importer: reads a ModelProto, orders its nodes, converts each through its op
// type's converter, folds nodes whose inputs are all constants, and checks the declared
// output types against the inferred ones.
#include "onnx_importer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <queue>

#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/shape.h"

namespace loom::graph_opt::onnx_frontend {

std::string read_model_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  LOOM_CHECK(fs::exists(st), "onnx: cannot open {}: no such file", path);
  LOOM_CHECK(!fs::is_directory(st), "onnx: {} is a directory, not a model file", path);
  LOOM_CHECK(fs::is_regular_file(st), "onnx: {} is not a regular file (a device, socket or pipe)", path);
  const uint64_t size = fs::file_size(path, ec);
  LOOM_CHECK(!ec, "onnx: cannot read the size of {}: {}", path, ec.message());
  LOOM_CHECK(size < uint64_t(INT32_MAX), "onnx: {}: {} bytes is past protobuf's 2 GiB limit", path, size);
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "onnx: cannot open {}", path);
  std::string bytes(size, '\0');
  in.read(bytes.data(), std::streamsize(size));
  LOOM_CHECK(uint64_t(in.gcount()) == size, "onnx: reading {} failed after {} of {} bytes", path, in.gcount(), size);
  return bytes;
}

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

int64_t product(const std::vector<int64_t>& s) { return runtime::checked_element_count(s, "onnx: element count"); }

int64_t normalize_axis(const Importer& im, int64_t axis, size_t rank, const std::string& what) {
  const int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) im.invalid(fmt::format("{} {} is out of range for rank {}", what, axis, r));
  return axis < 0 ? axis + r : axis;
}

int first_opset(const std::string& op_type) {
  // The operators loom imports that are younger than kOldestOnnxOpset.
  static const std::map<std::string, int> since{
      {"ConstantOfShape", 9}, {"Erf", 9}, {"Sign", 9}, {"Compress", 9}, {"NonZero", 9}, {"ThresholdedRelu", 10},
      {"NonMaxSuppression", 10}, {"Round", 11}, {"Unique", 11}, {"Celu", 12}, {"NegativeLogLikelihoodLoss", 12},
      {"SoftmaxCrossEntropyLoss", 12}, {"HardSwish", 14}, {"CastLike", 15}, {"LayerNormalization", 17}, {"Mish", 18},
      {"Gelu", 20}};
  auto it = since.find(op_type);
  return it == since.end() ? kOldestOnnxOpset : it->second;
}

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = [] {
    std::map<std::string, Converter> m;
    add_nn_converters(m);
    add_elementwise_converters(m);
    add_transform_converters(m);
    add_shape_converters(m);
    add_reduce_converters(m);
    add_logic_converters(m);
    add_window_converters(m);
    add_normalization_converters(m);
    add_resize_converters(m);
    add_einsum_converters(m);
    add_control_flow_converters(m);
    add_grid_converters(m);
    add_attention_converters(m);
    add_quant_converters(m);
    add_signal_converters(m);
    add_misc_converters(m);
    add_sequence_converters(m);
    add_ml_converters(m);
    add_recurrent_converters(m);
    add_softmax_converters(m);
    add_tensor_converters(m);
    add_loss_converters(m);
    add_data_dependent_converters(m);
    return m;
  }();
  return table;
}

Importer::Importer(const onnx::ModelProto& model, std::string source, std::string base_dir,
                   const OnnxImportOptions& opt)
    : model_(model), graph_(model.graph()), source_(std::move(source)), base_dir_(std::move(base_dir)), opt_(opt),
      builder_(model.graph().name().empty() ? "onnx" : model.graph().name()) {}

std::string Importer::where() const {
  if (!node_) return "onnx: " + source_;
  return fmt::format("onnx: {}{}: node #{} '{}' ({})", source_, scope_, node_index_, node_->name(), node_->op_type());
}

void Importer::unsupported(const std::string& what) const { throw OnnxUnsupported(where() + ": " + what); }
void Importer::invalid(const std::string& what) const { throw Error(where() + ": " + what); }

// ---------------------------------------------------------------- inputs and constants

Value Importer::input(int i) const {
  if (!has_input(i)) invalid(fmt::format("input {} is missing", i));
  if (input_empty(i))
    unsupported(fmt::format("input {} '{}' has no elements (loom has no empty tensors)", i, node_->input(i)));
  auto it = values_.find(node_->input(i));
  LOOM_ICHECK(it != values_.end());  // node_order() checked every reference
  return it->second.value;
}

DataType Importer::input_dtype(int i) const {
  if (input_empty(i)) return empty_.at(node_->input(i)).dtype();
  return type(input(i)).dtype;
}

bool Importer::input_scalar(int i) const {
  input(i);
  return values_.at(node_->input(i)).scalar;
}

std::vector<int64_t> Importer::input_shape(int i) const {
  if (input_empty(i)) return empty_.at(node_->input(i)).shape();
  if (input_scalar(i)) return {};
  return type(input(i)).shape;
}

const runtime::NDArray* Importer::constant_of(Value v) const {
  auto it = constants_.find(v.node);
  return it == constants_.end() ? nullptr : &it->second;
}

runtime::NDArray Importer::const_input(int i, const std::string& what) const {
  if (input_empty(i)) return empty_.at(node_->input(i));
  Value v = input(i);
  const runtime::NDArray* a = constant_of(v);
  if (!a) {
    const Graph& g = builder_.graph();
    const bool graph_input = g.nodes.at(size_t(v.node)).is_input();
    auto unfolded = unfolded_.find(v.node);
    // A value computed from a graph input (a shape, a window's length) folds once that input is bound.
    std::string source;
    if (!graph_input && unfolded == unfolded_.end()) {
      std::vector<int> stack{v.node};
      std::set<int> seen;
      while (!stack.empty() && source.empty()) {
        const int n = stack.back();
        stack.pop_back();
        if (!seen.insert(n).second) continue;
        const Node& node = g.nodes.at(size_t(n));
        if (node.is_input()) source = node.name;
        if (unfolded_.count(n)) break;
        if (node.is_op())
          for (ValueRef in : node.inputs) stack.push_back(in.node);
      }
    }
    throw OnnxUnsupported(fmt::format("{}: {} (input {} '{}') is computed at run time; loom needs it constant at import{}",
                                      where(), what, i, node_->input(i),
                                      graph_input ? " (bind the graph input to a value: OnnxImportOptions::bind_inputs)"
                                      : unfolded != unfolded_.end()
                                          ? " (it was not folded at import: " + unfolded->second + ")"
                                      : !source.empty()
                                          ? " (it is computed from graph input '" + source +
                                                "': bind that input to a value: OnnxImportOptions::bind_inputs)"
                                          : ""),
                          graph_input ? node_->input(i) : source);
  }
  return *a;
}

std::vector<int64_t> Importer::const_ints(int i, const std::string& what) const {
  runtime::NDArray a = const_input(i, what);
  if (!a.dtype().is_integer()) invalid(fmt::format("{} (input {}) must be integers, got {}", what, i, a.dtype().str()));
  std::vector<int64_t> v(size_t(a.numel()));
  for (int64_t k = 0; k < a.numel(); ++k)
    v[size_t(k)] = a.dtype().bits() == 64 && a.dtype().is_int() ? a.data<int64_t>()[k] : int64_t(a.get(k));
  return v;
}

double Importer::const_scalar(int i, const std::string& what) const {
  runtime::NDArray a = const_input(i, what);
  if (a.numel() != 1) invalid(fmt::format("{} (input {}) must hold one value, got shape {}", what, i, shape_str(a.shape())));
  return a.get(0);
}

// ---------------------------------------------------------------- attributes

const onnx::AttributeProto* Importer::find_attr(const std::string& name) const {
  for (const auto& a : node_->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool Importer::has_attr(const std::string& name) const { return find_attr(name) != nullptr; }

void Importer::ignore_attr(const std::string& name) { attrs_read_.insert(name); }

const onnx::AttributeProto& Importer::attr_of(const std::string& name, onnx::AttributeProto_AttributeType type) {
  const onnx::AttributeProto* a = find_attr(name);
  LOOM_ICHECK(a != nullptr);
  attrs_read_.insert(name);
  if (!a->ref_attr_name().empty()) unsupported(fmt::format("attribute '{}' refers to a function attribute", name));
  // Older writers leave `type` unset; then the field that is set decides.
  if (a->type() != onnx::AttributeProto::UNDEFINED && a->type() != type)
    invalid(fmt::format("attribute '{}' has type {}, expected {}", name,
                        onnx::AttributeProto_AttributeType_Name(a->type()), onnx::AttributeProto_AttributeType_Name(type)));
  return *a;
}

int64_t Importer::attr_int(const std::string& name, std::optional<int64_t> def) {
  if (!has_attr(name)) {
    if (!def) invalid(fmt::format("required attribute '{}' is missing", name));
    return *def;
  }
  return attr_of(name, onnx::AttributeProto::INT).i();
}

double Importer::attr_float(const std::string& name, std::optional<double> def) {
  if (!has_attr(name)) {
    if (!def) invalid(fmt::format("required attribute '{}' is missing", name));
    return *def;
  }
  return attr_of(name, onnx::AttributeProto::FLOAT).f();
}

std::string Importer::attr_str(const std::string& name, std::optional<std::string> def) {
  if (!has_attr(name)) {
    if (!def) invalid(fmt::format("required attribute '{}' is missing", name));
    return *def;
  }
  return attr_of(name, onnx::AttributeProto::STRING).s();
}

std::vector<int64_t> Importer::attr_ints(const std::string& name, std::optional<std::vector<int64_t>> def) {
  if (!has_attr(name)) {
    if (!def) invalid(fmt::format("required attribute '{}' is missing", name));
    return *def;
  }
  const auto& a = attr_of(name, onnx::AttributeProto::INTS);
  return {a.ints().begin(), a.ints().end()};
}

std::vector<double> Importer::attr_floats(const std::string& name) {
  const auto& a = attr_of(name, onnx::AttributeProto::FLOATS);
  return {a.floats().begin(), a.floats().end()};
}

const onnx::TensorProto& Importer::attr_tensor(const std::string& name) {
  return attr_of(name, onnx::AttributeProto::TENSOR).t();
}

// ---------------------------------------------------------------- emitting

void Importer::set_output(int k, Value v, bool scalar) {
  if (!output_used(k)) return;
  values_[node_->output(k)] = OnnxValue{v, scalar};
}

void Importer::set_empty_output(int k, runtime::NDArray a) {
  if (output_used(k)) empty_[node_->output(k)] = a;
}

Value Importer::constant(runtime::NDArray a, const std::string& hint) {
  if (a.ndim() == 0) {  // loom holds rank 0 as [1]
    runtime::NDArray b = runtime::NDArray::empty({1}, a.dtype());
    std::memcpy(b.raw_data(), a.raw_data(), a.nbytes());
    a = b;
  }
  std::string base = node_ ? (node_->output_size() > 0 && !node_->output(0).empty() ? node_->output(0) : node_->op_type()) + "." + hint : hint;
  Value v = builder_.constant(builder_.unique_name(base), a);
  constants_[v.node] = a;
  return v;
}

Value Importer::scalar(double v, DataType t, size_t rank, const std::string& hint) {
  runtime::NDArray a = runtime::NDArray::empty(std::vector<int64_t>(std::max<size_t>(rank, 1), 1), t);
  a.set(0, v);
  return constant(a, hint);
}

Value Importer::op(const std::string& op, const std::vector<Value>& inputs, const te::ops::Attrs& attrs) {
  const std::string base = node_->output_size() > 0 && !node_->output(0).empty() ? node_->output(0) : node_->op_type();
  const std::string name = builder_.unique_name(hint_counter_++ == 0 ? base : base + "." + op);
  std::vector<runtime::NDArray> args;
  for (Value v : inputs) {
    const runtime::NDArray* a = constant_of(v);
    if (!a) break;
    args.push_back(*a);
  }
  try {
    if (args.size() != inputs.size() || inputs.empty()) return builder_.op(op, inputs, attrs, name);
    // Every input is a constant: evaluate now.
    const te::ops::OpDef& def = te::ops::get_op(op);
    Node n;
    n.kind = NodeKind::kOp;
    n.name = name;
    n.op = op;
    n.attrs = te::ops::normalize_attrs(def, attrs, name);
    std::vector<TensorType> types;
    for (Value v : inputs) types.push_back(type(v));
    n.outputs = te::ops::infer_type(op, types, n.attrs);
    // Too big to compute at import: a run-time operator (fold_constants will not fold it either).
    if (!fold_budget_.admit(n, types, name)) {
      Value r = builder_.op(op, inputs, attrs, name);
      unfolded_[r.node] = fold_budget_.reason();
      return r;
    }
    std::vector<runtime::NDArray> out = evaluate_node(n, args, name);
    LOOM_ICHECK(out.size() == 1);
    Value c = builder_.constant(name, out[0]);
    constants_[c.node] = out[0];
    return c;
  } catch (const OnnxUnsupported&) {
    throw;
  } catch (const Error& e) {
    invalid(fmt::format("loom operator {} rejects it: {}", op, e.what()));
  }
}

Value Importer::reshape(Value v, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s = shape.empty() ? std::vector<int64_t>{1} : shape;
  if (type(v).shape == s) return v;
  Value r = op("reshape", {v}, {{"newshape", s}});
  if (!constant_of(r)) reshaped_from_[r.node] = v;
  return r;
}

std::optional<Value> Importer::reshape_source(Value v) const {
  auto it = reshaped_from_.find(v.node);
  if (it == reshaped_from_.end()) return std::nullopt;
  return it->second;
}

Value Importer::broadcast_to(Value v, const std::vector<int64_t>& shape) {
  if (type(v).shape == shape) return v;
  const int64_t bytes = runtime::checked_byte_count(shape, type(v).dtype, where());
  if (bytes > kMaxBroadcastBytes)
    unsupported(fmt::format("broadcasting {} to {} needs a constant of {} bytes (loom materializes the broadcast; "
                            "at most {} bytes)",
                            to_string(type(v)), shape_str(shape), bytes, kMaxBroadcastBytes));
  runtime::NDArray zeros = runtime::NDArray::empty(shape, type(v).dtype);
  std::memset(zeros.raw_data(), 0, zeros.nbytes());
  return op("add", {v, constant(zeros, "broadcast")});
}

// ---------------------------------------------------------------- the walk

void Importer::resolve_input_shapes() {
  std::set<std::string> initializers, inputs, dims;
  for (const auto& t : graph_.initializer()) initializers.insert(t.name());
  for (const auto& in : graph_.input()) {
    if (initializers.count(in.name())) continue;
    inputs.insert(in.name());
    if (in.type().has_tensor_type() && in.type().tensor_type().has_shape())
      for (const auto& d : in.type().tensor_type().shape().dim())
        if (!d.has_dim_value() && !d.dim_param().empty()) dims.insert(d.dim_param());
  }
  for (const auto& [name, extents] : opt_.input_shapes) {
    if (inputs.count(name)) continue;
    if (!dims.count(name))
      fail("onnx: {}: an input shape is given for '{}', which is neither a graph input nor a symbolic dim (graph "
           "inputs: {}; symbolic dims: {})",
           source_, name, inputs.empty() ? "none" : fmt::format("{}", fmt::join(inputs, ", ")),
           dims.empty() ? "none" : fmt::format("{}", fmt::join(dims, ", ")));
    if (extents.size() != 1 || extents[0] < 0)
      fail("onnx: {}: symbolic dim '{}' takes one extent (e.g. {}=1), got [{}]", source_, name, name,
           fmt::join(extents, ","));
    dim_values_[name] = extents[0];
  }
}

void Importer::add_graph_inputs() {
  resolve_input_shapes();
  std::set<std::string> initializers;
  for (const auto& t : graph_.initializer()) initializers.insert(t.name());
  if (graph_.sparse_initializer_size() > 0)
    throw OnnxUnsupported(fmt::format("onnx: {}: sparse initializers are not supported", source_));
  for (const auto& in : graph_.input()) {
    if (initializers.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    const std::string what = fmt::format("onnx: {}: graph input '{}'", source_, in.name());
    if (auto bound = opt_.bind_inputs.find(in.name()); bound != opt_.bind_inputs.end()) {
      const runtime::NDArray& a = bound->second;
      if (in.type().has_tensor_type() && in.type().tensor_type().elem_type() != 0 &&
          to_dtype(in.type().tensor_type().elem_type(), what) != a.dtype())
        fail("{} is {} but is bound to a {} array", what, onnx_type_name(in.type().tensor_type().elem_type()), a.dtype().str());
      if (a.numel() == 0) empty_[in.name()] = a;
      else values_[in.name()] = OnnxValue{constant(a, in.name()), a.ndim() == 0};
      continue;
    }
    LOOM_CHECK(!in.name().empty(), "onnx: {}: a graph input has no name", source_);
    LOOM_CHECK(!values_.count(in.name()), "{} is declared twice", what);
    if (!in.type().has_tensor_type())
      throw OnnxUnsupported(what + ": only tensor inputs are supported (not sequences, maps or optionals)");
    const auto& tt = in.type().tensor_type();
    TensorType t;
    t.dtype = to_dtype(tt.elem_type(), what);
    auto given = opt_.input_shapes.find(in.name());
    if (given != opt_.input_shapes.end()) {
      t.shape = given->second;
    } else {
      if (!tt.has_shape())
        throw OnnxUnsupported(what + ": has no shape; give one (OnnxImportOptions::input_shapes, --input-shape)");
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        if (dim.has_dim_value()) {
          t.shape.push_back(dim.dim_value());
        } else if (auto v = dim_values_.find(dim.dim_param()); v != dim_values_.end()) {
          t.shape.push_back(v->second);
        } else {
          throw OnnxUnsupported(fmt::format("{}: dim {} is dynamic ('{}'); give a static shape "
                                            "(OnnxImportOptions::input_shapes, --input-shape {}=D0,D1,…{})",
                                            what, d, dim.dim_param(), in.name(),
                                            dim.dim_param().empty() ? "" : " or --input-shape " + dim.dim_param() + "=N"));
        }
      }
    }
    if (runtime::checked_element_count(t.shape, what) == 0) {
      // No data to pass, and its one possible value known: left out of the signature, a value
      // without elements (as a bound one) that consumers read at import (empty axes, a slice
      // of nothing to concatenate, a reduction of nothing).
      empty_[in.name()] = runtime::NDArray::empty(t.shape, t.dtype);
      continue;
    }
    const bool scalar = t.shape.empty();
    if (scalar) t.shape = {1};
    values_[in.name()] = OnnxValue{builder_.input(in.name(), t), scalar};
  }
  for (const auto& init : graph_.initializer()) {
    const std::string what = fmt::format("onnx: {}: initializer", source_);
    LOOM_CHECK(!init.name().empty(), "{}: an initializer has no name", what);
    LOOM_CHECK(!values_.count(init.name()), "onnx: {}: initializer '{}' is defined twice", source_, init.name());
    runtime::NDArray a = tensor_to_array(init, base_dir_, what);
    if (a.numel() == 0) {
      empty_[init.name()] = a;
      continue;
    }
    const bool scalar = a.ndim() == 0;
    values_[init.name()] = OnnxValue{constant(a, init.name()), scalar};
  }
}

std::vector<int> Importer::node_order(const onnx::GraphProto& g) const {
  // Kahn's algorithm, preferring the file's order; every input must be a graph input, an
  // initializer or some node's output (or, in a subgraph, an outer scope's value). The values a
  // node's subgraphs read from outside count as its inputs.
  const int n = g.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : g.node(i).output()) {
      if (o.empty()) continue;
      auto node_where = [&](int k) { return fmt::format("node #{} '{}' ({})", k, g.node(k).name(), g.node(k).op_type()); };
      LOOM_CHECK(!values_.count(o), "onnx: {}{}: {} writes '{}', which is also a graph input or initializer", source_, scope_,
                 node_where(i), o);
      auto [it, fresh] = producer.emplace(o, i);
      LOOM_CHECK(fresh, "onnx: {}{}: value '{}' is written by {} and by {}", source_, scope_, o, node_where(it->second), node_where(i));
    }
  std::vector<std::vector<int>> users(static_cast<size_t>(n));
  std::vector<int> pending(size_t(n), 0);
  for (int i = 0; i < n; ++i) {
    const auto& nd = g.node(i);
    std::vector<std::string> inputs(nd.input().begin(), nd.input().end());
    const size_t explicit_inputs = inputs.size();
    for (const std::string& outer : outer_references(nd)) inputs.push_back(outer);
    std::set<int> producers;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const std::string& in = inputs[k];
      if (in.empty() || values_.count(in) || empty_.count(in)) continue;
      auto it = producer.find(in);
      LOOM_CHECK(it != producer.end(),
                 "onnx: {}{}: node #{} '{}' ({}): {} '{}' is not a graph input, an initializer or any node's output",
                 source_, scope_, i, nd.name(), nd.op_type(),
                 k < explicit_inputs ? fmt::format("input {}", k) : std::string("the value its subgraph reads"), in);
      if (!producers.insert(it->second).second) continue;
      users[size_t(it->second)].push_back(i);
      ++pending[size_t(i)];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[size_t(i)] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[size_t(i)])
      if (--pending[size_t(u)] == 0) ready.push(u);
  }
  if (int(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[size_t(i)] > 0)
        fail("onnx: {}{}: node #{} '{}' ({}) is on a cycle (or depends on one): its inputs are never all computed", source_,
             scope_, i, g.node(i).name(), g.node(i).op_type());
  }
  return order;
}

void Importer::convert(const onnx::GraphProto& g, int index) {
  node_ = &g.node(index);
  node_index_ = index;
  attrs_read_.clear();
  hint_counter_ = 0;
  std::set<std::string> names;
  for (const auto& a : node_->attribute())
    if (!names.insert(a.name()).second) invalid(fmt::format("attribute '{}' is given more than once", a.name()));
  const std::string& domain = node_->domain();
  const bool ml = domain == kOnnxMlDomain, preview = domain == kOnnxPreviewDomain;
  if (!domain.empty() && domain != "ai.onnx" && !ml && !preview)
    unsupported(fmt::format("operators of domain '{}' are not supported", domain));
  if ((ml && ml_opset_ == 0) || (preview && preview_opset_ == 0))
    invalid(fmt::format("the model does not import the domain '{}' of its operator", domain));
  if (preview && preview_opset_ > kNewestOnnxPreviewOpset)
    unsupported(fmt::format("{} opset {} is newer than {}, the newest loom imports", domain, preview_opset_,
                            kNewestOnnxPreviewOpset));
  // ONNX operator names hold no '.'; a default-domain one that does must not reach another domain's converter.
  auto it = !ml && !preview && node_->op_type().find('.') != std::string::npos
                ? converters().end()
                : converters().find(ml || preview ? domain + "." + node_->op_type() : node_->op_type());
  if (auto since = first_opset(node_->op_type()); !ml && !preview && since > opset_)
    invalid(fmt::format("operator {} exists from opset {}; the model imports opset {}", node_->op_type(), since, opset_));
  if (it == converters().end())
    unsupported(fmt::format("operator {} is not supported (loom imports {})", node_->op_type(),
                            fmt::join(onnx_supported_ops(), ", ")));
  it->second(*this);
  for (const auto& a : node_->attribute())
    if (!attrs_read_.count(a.name())) unsupported(fmt::format("attribute '{}' is not supported", a.name()));
  for (int k = 0; k < node_->output_size(); ++k)
    if (output_used(k) && !values_.count(node_->output(k)) && !empty_.count(node_->output(k)))
      unsupported(fmt::format("output {} '{}' is not supported", k, node_->output(k)));
  node_ = nullptr;
}

void Importer::set_graph_outputs() {
  LOOM_CHECK(graph_.output_size() > 0, "onnx: {}: the graph has no outputs", source_);
  for (const auto& out : graph_.output()) {
    auto it = values_.find(out.name());
    if (it == values_.end() && empty_.count(out.name()))
      throw OnnxUnsupported(fmt::format("onnx: {}: graph output '{}' has no elements (loom has no empty tensors)", source_, out.name()));
    LOOM_CHECK(it != values_.end(), "onnx: {}: graph output '{}' is not computed by any node", source_, out.name());
    const TensorType& t = type(it->second.value);
    if (out.type().has_tensor_type()) {
      const auto& tt = out.type().tensor_type();
      const std::string what = fmt::format("onnx: {}: graph output '{}'", source_, out.name());
      if (tt.elem_type() != 0 && to_dtype(tt.elem_type(), what) != t.dtype)
        fail("{} is declared {} but computes {}", what, onnx_type_name(tt.elem_type()), t.dtype.str());
      if (tt.has_shape()) {
        std::vector<int64_t> have = it->second.scalar ? std::vector<int64_t>{} : t.shape;
        bool ok = tt.shape().dim_size() == int(have.size());
        for (int d = 0; ok && d < tt.shape().dim_size(); ++d) {
          // A symbolic dim given an extent (input_shapes) is compared as that extent.
          const auto& dim = tt.shape().dim(d);
          auto given = dim_values_.find(dim.dim_param());
          if (dim.has_dim_value()) ok = dim.dim_value() == have[size_t(d)];
          else if (given != dim_values_.end()) ok = given->second == have[size_t(d)];
        }
        if (!ok && opt_.warn) {
          // Exporters declare output shapes they did not infer (PyTorch's symbolic dims): the
          // graph's own shapes stand.
          std::vector<std::string> dims;
          for (const auto& d : tt.shape().dim())
            dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param().empty() ? "?" : d.dim_param());
          *opt_.warn << fmt::format("warning: {} is declared with shape [{}] but the graph computes {}; using {}\n", what,
                                    fmt::join(dims, ","), shape_str(have), shape_str(have));
        }
      }
    }
    builder_.output(it->second.value);
  }
}

Graph Importer::run() {
  for (const auto& o : model_.opset_import()) {
    if (o.domain() == kOnnxMlDomain) {
      LOOM_CHECK(o.version() > 0 && o.version() <= INT32_MAX, "onnx: {}: {} opset version {} is not valid", source_,
                 kOnnxMlDomain, o.version());
      ml_opset_ = int(o.version());
    }
    if (o.domain() == kOnnxPreviewDomain) {
      LOOM_CHECK(o.version() > 0 && o.version() <= INT32_MAX, "onnx: {}: {} opset version {} is not valid", source_,
                 kOnnxPreviewDomain, o.version());
      preview_opset_ = int(o.version());
    }
    if (!o.domain().empty() && o.domain() != "ai.onnx") continue;
    if (opset_ != 0 && o.version() != opset_)
      fail("onnx: {}: the model imports the default-domain opset twice (versions {} and {})", source_, opset_,
           o.version());
    LOOM_CHECK(o.version() > 0 && o.version() <= INT32_MAX, "onnx: {}: default-domain opset version {} is not valid",
               source_, o.version());
    opset_ = int(o.version());
  }
  if (opset_ == 0 && ml_opset_ == 0)
    throw OnnxUnsupported(fmt::format("onnx: {}: the model imports no default-domain opset", source_));
  if (opset_ != 0 && opset_ < kOldestOnnxOpset)
    throw OnnxUnsupported(fmt::format("onnx: {}: opset {} is older than {}, the oldest loom imports "
                                      "(convert it with onnx.version_converter)",
                                      source_, opset_, kOldestOnnxOpset));
  if (opset_ != 0 && opset_ > kNewestOnnxOpset)
    throw OnnxUnsupported(fmt::format("onnx: {}: opset {} is newer than {}, the newest loom imports (operators may "
                                      "have changed meaning since)",
                                      source_, opset_, kNewestOnnxOpset));
  add_graph_inputs();
  int64_t constant_bytes = 0;
  for (const auto& [node, a] : constants_) constant_bytes += int64_t(a.nbytes());
  fold_budget_ = FoldBudget(FoldLimits{}, constant_bytes);
  for (int i : node_order(graph_)) convert(graph_, i);
  set_graph_outputs();
  try {
    // Nodes left unread by the rewrites above (a reshape an operator moved before) go.
    return eliminate_dead_code(builder_.build());
  } catch (const Error& e) {
    fail("onnx: {}: the imported graph does not verify: {}", source_, e.what());
  }
}

}  // namespace loom::graph_opt::onnx_frontend

namespace loom::graph_opt {

namespace {

onnx::ModelProto parse_model(std::string_view bytes, const std::string& source) {
  LOOM_CHECK(bytes.size() < size_t(INT32_MAX), "onnx: {}: {} bytes is past protobuf's 2 GiB limit", source, bytes.size());
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    fail("onnx: {}: not a valid ONNX model (the protobuf does not parse: truncated, or not a ModelProto)", source);
  LOOM_CHECK(model.has_graph(), "onnx: {}: the model has no graph", source);
  return model;
}

}  // namespace

Graph import_onnx_bytes(std::string_view bytes, const std::string& source, const OnnxImportOptions& opt,
                        const std::string& base_dir) {
  onnx::ModelProto model = parse_model(bytes, source);
  return onnx_frontend::Importer(model, source, base_dir, opt).run();
}

Graph import_onnx(const std::string& path, const OnnxImportOptions& opt) {
  onnx::ModelProto model;
  {
    std::string bytes = onnx_frontend::read_model_file(path);
    model = parse_model(bytes, path);
  }  // the file's bytes go before the import copies the initializers
  std::string dir = std::filesystem::path(path).parent_path().string();
  return onnx_frontend::Importer(model, path, dir.empty() ? "." : dir, opt).run();
}

bool onnx_frontend_available() { return true; }

std::vector<std::string> onnx_supported_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, _] : onnx_frontend::converters()) ops.push_back(name);
  return ops;
}

}  // namespace loom::graph_opt
