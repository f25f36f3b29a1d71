// Tensors, placeholder, compute and extern operations, reducers, and the operation graph walk.
#include "loom/te/tensor.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "loom/runtime/shape.h"
#include "loom/te/expr_functor.h"

namespace loom::te {

namespace {

/// Index and shape expressions are int32: int64 constants that fit are narrowed.
Expr normalize_index(const Expr& e, const char* what, const std::string& name) {
  LOOM_CHECK(e.defined(), "{} '{}': an index or extent is undefined", what, name);
  DataType t = e.dtype();
  LOOM_CHECK(t.is_scalar() && (t.is_integer() || t.is_bool()), "{} '{}': index or extent {} has type {}, expected an integer",
             what, name, to_string(e), t.str());
  if (t == DataType::Int(32)) return e;
  if (auto c = as_const_int(e); c && *c >= INT32_MIN && *c <= INT32_MAX) return make_const(DataType::Int(32), *c);
  if (t.is_bool() || (t.bits() < 32)) return cast(DataType::Int(32), e);
  return e;
}

/// A constant extent must be in [1, INT32_MAX]: loop variables and indices are int32.
void check_extent(const Expr& extent, const char* what, const std::string& name, const std::string& where) {
  auto c = as_const_int(extent);
  if (!c) return;
  LOOM_CHECK(*c >= 1, "{} '{}': {} is {} (extents must be >= 1)", what, name, where, *c);
  LOOM_CHECK(*c <= INT32_MAX, "{} '{}': {} is {}, larger than the largest extent, 2^31-1 (indices are int32)", what,
             name, where, *c);
}

/// Normalized shape whose constant extents are in range and whose element count, where
/// constant, fits the int32 flat index that storage flattening computes.
std::vector<Expr> normalize_shape(std::vector<Expr> shape, const char* what, const std::string& name) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    shape[d] = normalize_index(shape[d], what, name);
    check_extent(shape[d], what, name, fmt::format("extent of dimension {}", d));
    if (auto c = as_const_int(shape[d])) dims.push_back(*c);
  }
  if (dims.size() == shape.size())
    runtime::checked_element_count(dims, fmt::format("{} '{}' (flat indices are int32)", what, name), INT32_MAX);
  return shape;
}

std::string join_exprs(const std::vector<Expr>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + to_string(v[i]);
  return s;
}

std::vector<Var> make_axis_vars(size_t n) {
  static const char* kNames[] = {"i", "j", "k", "l"};
  std::vector<Var> vars;
  for (size_t d = 0; d < n; ++d) vars.emplace_back(n <= 4 ? std::string(kNames[d]) : fmt::format("ax{}", d));
  return vars;
}

/// True if a Reduce appears anywhere in `e`.
bool contains_reduce(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&](const Expr& x) { found |= x.kind() == ExprKind::Reduce; });
  return found;
}

/// Checks that reductions appear only at the top of each body and returns the reduce axes.
std::vector<IterVar> check_bodies(const std::vector<Expr>& bodies, const std::string& name) {
  const ReduceNode* first = nullptr;
  for (auto& b : bodies) {
    LOOM_CHECK(b.defined(), "compute '{}': the body is undefined", name);
    LOOM_CHECK(b.dtype().is_scalar(), "compute '{}': the body has vector type {}", name, b.dtype().str());
    const ReduceNode* r = b.as<ReduceNode>();
    if (!r) {
      LOOM_CHECK(!contains_reduce(b), "compute '{}': a reduction must be the whole body, found it nested in {}", name,
                 to_string(b));
      continue;
    }
    for (auto& s : r->source)
      LOOM_CHECK(!contains_reduce(s), "compute '{}': a reduction must be the whole body, found one nested in {}", name,
                 to_string(s));
    LOOM_CHECK(!contains_reduce(r->condition), "compute '{}': a reduction condition may not contain a reduction", name);
    if (!first) {
      first = r;
      continue;
    }
    bool same_axes = r->axis.size() == first->axis.size();
    for (size_t i = 0; same_axes && i < r->axis.size(); ++i) same_axes = r->axis[i] == first->axis[i];
    LOOM_CHECK(same_axes, "compute '{}': all outputs of a multi-output reduction must reduce over the same axes", name);
  }
  if (first) {
    for (auto& b : bodies)
      LOOM_CHECK(b.as<ReduceNode>(), "compute '{}': outputs mix reductions and non-reductions", name);
    return first->axis;
  }
  return {};
}

}  // namespace

// ---------------------------------------------------------------- Tensor
const std::string& Tensor::name() const {
  LOOM_CHECK(defined() && node_->op, "Tensor::name: tensor is undefined");
  return node_->op->name;
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  LOOM_CHECK(defined(), "reading an element of an undefined tensor");
  LOOM_CHECK(indices.size() == ndim(), "tensor '{}' has {} dimensions but was indexed with {} indices", name(), ndim(),
             indices.size());
  for (auto& i : indices) {
    LOOM_CHECK(i.defined(), "tensor '{}': an index is undefined", name());
    LOOM_CHECK(i.dtype().is_scalar() && (i.dtype().is_integer() || i.dtype().is_bool()),
               "tensor '{}': index {} has type {}, expected an integer", name(), to_string(i), i.dtype().str());
    i = normalize_index(i, "tensor", name());
  }
  return make<ProducerLoadNode>(dtype(), node_, std::move(indices));
}

bool Tensor::operator==(const Tensor& o) const {
  if (node_ == o.node_) return true;
  if (!node_ || !o.node_) return false;
  return node_->op == o.node_->op && node_->value_index == o.node_->value_index;
}

bool Tensor::operator<(const Tensor& o) const {
  const void* a = node_ ? node_->op.get() : nullptr;
  const void* b = o.node_ ? o.node_->op.get() : nullptr;
  if (a != b) return std::less<const void*>()(a, b);
  int ia = node_ ? node_->value_index : -1, ib = o.node_ ? o.node_->value_index : -1;
  return ia < ib;
}

// ---------------------------------------------------------------- operations
int OperationNode::num_outputs() const {
  switch (kind) {
    case OpKind::kPlaceholder: return 1;
    case OpKind::kCompute: return int(body.size());
    case OpKind::kExtern: return int(output_dtypes.size());
  }
  return 0;
}

DataType OperationNode::output_dtype(int i) const {
  switch (kind) {
    case OpKind::kPlaceholder: return dtype;
    case OpKind::kCompute: return body[size_t(i)].dtype();
    case OpKind::kExtern: return output_dtypes[size_t(i)];
  }
  return dtype;
}

std::vector<Expr> OperationNode::output_shape(int i) const {
  if (kind == OpKind::kPlaceholder) return shape;
  if (kind == OpKind::kExtern) return output_shapes[size_t(i)];
  std::vector<Expr> s;
  s.reserve(axis.size());
  for (auto& iv : axis) s.push_back(iv->dom.extent);
  return s;
}

std::vector<Tensor> OperationNode::input_tensors() const {
  std::vector<Tensor> result;
  if (kind == OpKind::kExtern) {
    for (const Tensor& t : inputs)
      if (std::find(result.begin(), result.end(), t) == result.end()) result.push_back(t);
    return result;
  }
  if (kind != OpKind::kCompute) return result;
  auto add = [&](const Expr& e) {
    if (auto* p = e.as<ProducerLoadNode>()) {
      Tensor t(p->producer);
      for (auto& r : result)
        if (r == t) return;
      result.push_back(t);
    }
  };
  for (auto& b : body) post_order_visit(b, add);
  return result;
}

Tensor output(const Operation& op, int i) {
  LOOM_CHECK(op != nullptr, "output: operation is undefined");
  LOOM_CHECK(i >= 0 && i < op->num_outputs(), "operation '{}' has {} outputs, asked for output {}", op->name,
             op->num_outputs(), i);
  auto n = std::make_shared<TensorNode>();
  n->shape = op->output_shape(i);
  n->dtype = op->output_dtype(i);
  n->op = op;
  n->value_index = i;
  return Tensor(std::move(n));
}

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name) {
  auto op = std::make_shared<OperationNode>();
  op->kind = OpKind::kPlaceholder;
  op->shape = normalize_shape(std::move(shape), "placeholder", name);
  op->dtype = dtype;
  op->name = std::move(name);
  return output(op, 0);
}

IterVar reduce_axis(Range dom, std::string name) {
  LOOM_CHECK(dom.min.defined() && dom.extent.defined(), "reduce_axis '{}': the range is undefined", name);
  dom.min = normalize_index(dom.min, "reduce_axis", name);
  dom.extent = normalize_index(dom.extent, "reduce_axis", name);
  check_extent(dom.extent, "reduce_axis", name, "the extent");
  return IterVar(std::move(dom), Var(std::move(name)), IterVarType::kCommReduce);
}

IterVar thread_axis(std::string tag, Range dom) {
  if (dom.min.defined()) dom.min = normalize_index(dom.min, "thread_axis", tag);
  if (dom.extent.defined()) dom.extent = normalize_index(dom.extent, "thread_axis", tag);
  return IterVar(std::move(dom), Var(tag), IterVarType::kThreadIndex, tag);
}

std::vector<Tensor> compute_multi(std::vector<Expr> shape, FComputeMulti f, std::string name, std::string tag,
                                  std::map<std::string, std::string> attrs) {
  shape = normalize_shape(std::move(shape), "compute", name);
  std::vector<Var> vars = make_axis_vars(shape.size());
  auto op = std::make_shared<OperationNode>();
  op->kind = OpKind::kCompute;
  op->name = std::move(name);
  op->tag = std::move(tag);
  op->attrs = std::move(attrs);
  for (size_t d = 0; d < shape.size(); ++d)
    op->axis.emplace_back(Range(make_zero(DataType::Int(32)), shape[d]), vars[d], IterVarType::kDataPar);
  op->body = f(vars);
  LOOM_CHECK(!op->body.empty(), "compute '{}': the body returned no values", op->name);
  op->reduce_axis = check_bodies(op->body, op->name);
  std::vector<Tensor> outs;
  for (int i = 0; i < op->num_outputs(); ++i) outs.push_back(output(op, i));
  return outs;
}

Tensor compute(std::vector<Expr> shape, FCompute f, std::string name, std::string tag,
               std::map<std::string, std::string> attrs) {
  FComputeMulti g = [&f](const std::vector<Var>& v) { return std::vector<Expr>{f(v)}; };
  return compute_multi(std::move(shape), g, std::move(name), std::move(tag), std::move(attrs))[0];
}

// ---------------------------------------------------------------- extern
std::vector<Tensor> extern_op(std::string name, std::vector<std::vector<Expr>> shapes, std::vector<DataType> dtypes,
                              std::vector<Tensor> inputs, std::shared_ptr<const ExternBody> body,
                              std::map<std::string, int64_t> params, const FReference& reference, std::string tag,
                              std::map<std::string, std::string> attrs) {
  LOOM_CHECK(!shapes.empty(), "extern '{}': it has no outputs", name);
  LOOM_CHECK(shapes.size() == dtypes.size(), "extern '{}': {} output shapes but {} output types", name, shapes.size(),
             dtypes.size());
  LOOM_CHECK(body != nullptr, "extern '{}': the body is undefined", name);
  for (size_t i = 0; i < inputs.size(); ++i)
    LOOM_CHECK(inputs[i].defined(), "extern '{}': input {} is undefined", name, i);
  auto op = std::make_shared<OperationNode>();
  op->kind = OpKind::kExtern;
  op->name = std::move(name);
  op->tag = std::move(tag);
  op->attrs = std::move(attrs);
  for (auto& s : shapes) op->output_shapes.push_back(normalize_shape(std::move(s), "extern", op->name));
  op->output_dtypes = std::move(dtypes);
  op->inputs = std::move(inputs);
  op->extern_body = std::move(body);
  op->params = std::move(params);
  if (reference) {
    for (const Tensor& t : op->inputs) op->reference_inputs.push_back(placeholder(t.shape(), t.dtype(), t.name()));
    op->reference = reference(op->reference_inputs);
    LOOM_CHECK(op->reference.size() == op->output_dtypes.size(),
               "extern '{}': the reference computes {} tensors for {} outputs", op->name, op->reference.size(),
               op->output_dtypes.size());
    for (size_t i = 0; i < op->reference.size(); ++i) {
      const Tensor& r = op->reference[i];
      LOOM_CHECK(r.defined(), "extern '{}': reference output {} is undefined", op->name, i);
      bool same = r.dtype() == op->output_dtypes[i] && r.ndim() == op->output_shapes[i].size();
      for (size_t d = 0; same && d < r.ndim(); ++d) {
        auto a = as_const_int(r.shape()[d]), b = as_const_int(op->output_shapes[i][d]);
        same = a && b && *a == *b;
      }
      LOOM_CHECK(same, "extern '{}': reference output {} is {} [{}], the output {} [{}]", op->name, i,
                 r.dtype().str(), join_exprs(r.shape()), op->output_dtypes[i].str(),
                 join_exprs(op->output_shapes[i]));
    }
  }
  std::vector<Tensor> outs;
  for (int i = 0; i < op->num_outputs(); ++i) outs.push_back(output(op, i));
  return outs;
}

// ---------------------------------------------------------------- reductions
CommReducer comm_reducer(
    std::function<std::vector<Expr>(const std::vector<Var>&, const std::vector<Var>&)> fcombine,
    std::function<std::vector<Expr>(const std::vector<DataType>&)> fidentity, const std::vector<DataType>& dtypes) {
  LOOM_CHECK(!dtypes.empty(), "comm_reducer: needs at least one value type");
  auto r = std::make_shared<CommReducerNode>();
  for (size_t i = 0; i < dtypes.size(); ++i) {
    r->lhs.emplace_back(dtypes.size() == 1 ? std::string("x") : fmt::format("x{}", i), dtypes[i]);
    r->rhs.emplace_back(dtypes.size() == 1 ? std::string("y") : fmt::format("y{}", i), dtypes[i]);
  }
  r->result = fcombine(r->lhs, r->rhs);
  r->identity = fidentity(dtypes);
  LOOM_CHECK(r->result.size() == dtypes.size(), "comm_reducer: combine returned {} values for {} types",
             r->result.size(), dtypes.size());
  LOOM_CHECK(r->identity.size() == dtypes.size(), "comm_reducer: identity returned {} values for {} types",
             r->identity.size(), dtypes.size());
  for (size_t i = 0; i < dtypes.size(); ++i) {
    LOOM_CHECK(r->result[i].defined() && r->identity[i].defined(), "comm_reducer: value {} is undefined", i);
    r->result[i] = cast(dtypes[i], r->result[i]);
    r->identity[i] = cast(dtypes[i], r->identity[i]);
  }
  return r;
}

std::vector<Expr> reduce(const CommReducer& r, std::vector<Expr> source, std::vector<IterVar> axis, Expr condition) {
  LOOM_CHECK(r != nullptr, "reduce: the reducer is undefined");
  LOOM_CHECK(source.size() == r->lhs.size(), "reduce: the reducer takes {} values, got {} sources", r->lhs.size(),
             source.size());
  LOOM_CHECK(!axis.empty(), "reduce: no reduce axes given for {}", join_exprs(source));
  for (auto& iv : axis) {
    LOOM_CHECK(iv.defined(), "reduce: a reduce axis is undefined");
    LOOM_CHECK(iv.type() == IterVarType::kCommReduce,
               "reduce of {}: axis '{}' is not a reduce axis (make it with te::reduce_axis)", join_exprs(source),
               iv.name());
  }
  for (size_t i = 0; i < source.size(); ++i) {
    LOOM_CHECK(source[i].defined(), "reduce: source {} is undefined", i);
    source[i] = cast(r->lhs[i].dtype(), source[i]);
  }
  if (!condition.defined()) condition = make_const(DataType::Bool(), int64_t(1));
  LOOM_CHECK(condition.dtype().is_scalar(), "reduce: condition {} must be a scalar", to_string(condition));
  if (!condition.dtype().is_bool()) condition = condition != make_zero(condition.dtype());
  std::vector<Expr> out;
  for (size_t i = 0; i < source.size(); ++i)
    out.push_back(make<ReduceNode>(source[i].dtype(), r, source, axis, condition, int(i), std::vector<Expr>{}));
  return out;
}

namespace {
using Combine = Expr (*)(Expr, Expr);
Expr builtin_reduce(const char* what, Expr source, std::vector<IterVar> axis, Expr condition, Combine combine,
                    Expr (*identity)(DataType)) {
  LOOM_CHECK(source.defined(), "{}: the source is undefined", what);
  DataType t = source.dtype();
  auto r = comm_reducer([&](const std::vector<Var>& x, const std::vector<Var>& y) {
                          return std::vector<Expr>{combine(x[0], y[0])};
                        },
                        [&](const std::vector<DataType>& ts) { return std::vector<Expr>{identity(ts[0])}; }, {t});
  return reduce(r, {std::move(source)}, std::move(axis), std::move(condition))[0];
}
Expr add_op(Expr a, Expr b) { return make<AddNode>(a.dtype(), a, b); }
Expr mul_op(Expr a, Expr b) { return make<MulNode>(a.dtype(), a, b); }
Expr max_op(Expr a, Expr b) { return make<MaxNode>(a.dtype(), a, b); }
Expr min_op(Expr a, Expr b) { return make<MinNode>(a.dtype(), a, b); }
Expr one_of(DataType t) { return t.is_float() ? make_const(t, 1.0) : make_const(t, int64_t(1)); }
/// The identities of max and min: -inf and +inf for floats (the largest finite values would
/// make the max of a row of -inf finite), the type's bounds otherwise.
Expr max_identity(DataType t) {
  return t.is_float() ? make_const(t, -std::numeric_limits<double>::infinity()) : min_value(t);
}
Expr min_identity(DataType t) {
  return t.is_float() ? make_const(t, std::numeric_limits<double>::infinity()) : max_value(t);
}
}  // namespace

Expr sum(Expr source, std::vector<IterVar> axis, Expr condition) {
  return builtin_reduce("sum", std::move(source), std::move(axis), std::move(condition), add_op, make_zero);
}
Expr max_reduce(Expr source, std::vector<IterVar> axis, Expr condition) {
  return builtin_reduce("max_reduce", std::move(source), std::move(axis), std::move(condition), max_op, max_identity);
}
Expr min_reduce(Expr source, std::vector<IterVar> axis, Expr condition) {
  return builtin_reduce("min_reduce", std::move(source), std::move(axis), std::move(condition), min_op, min_identity);
}
Expr prod(Expr source, std::vector<IterVar> axis, Expr condition) {
  return builtin_reduce("prod", std::move(source), std::move(axis), std::move(condition), mul_op, one_of);
}

// ---------------------------------------------------------------- graph
std::vector<Operation> post_dfs_order(const std::vector<Tensor>& outputs) {
  std::vector<Operation> order;
  std::unordered_set<const OperationNode*> visited;
  // Iterative DFS: deep chains of elementwise ops must not overflow the stack.
  struct Frame {
    Operation op;
    std::vector<Tensor> inputs;
    size_t next = 0;
  };
  for (auto& t : outputs) {
    LOOM_CHECK(t.defined() && t.op(), "post_dfs_order: an output tensor is undefined");
    if (!visited.insert(t.op().get()).second) continue;
    std::vector<Frame> stack;
    stack.push_back({t.op(), t.op()->input_tensors()});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.inputs.size()) {
        const Operation& in = f.inputs[f.next++].op();
        if (in && visited.insert(in.get()).second) {
          Operation op = in;
          stack.push_back({op, op->input_tensors()});
        }
        continue;
      }
      order.push_back(f.op);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace loom::te
