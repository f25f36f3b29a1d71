// Tensor intrinsic declarations and the buffer regions their implementations receive.
#include "loom/te/tensor_intrin.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "loom/te/arith.h"
#include "loom/te/expr_functor.h"
#include "loom/te/intrinsics.h"

namespace loom::te {

Expr BufferRegion::access_ptr(Expr offset) const {
  LOOM_CHECK(defined(), "tensor intrinsic: access_ptr of an unbound region");
  return address_of(data, dtype, simplify(elem_offset + offset));
}

Expr BufferRegion::vload(Expr offset, int lanes) const {
  LOOM_CHECK(defined(), "tensor intrinsic: vload of an unbound region");
  Expr base = simplify(elem_offset + offset);
  Expr index = lanes == 1 ? base : make<RampNode>(base, make_const(base.dtype(), 1), lanes);
  return make<LoadNode>(dtype.with_lanes(lanes), data, index, Expr());
}

bool BufferRegion::is_dense() const {
  int64_t expect = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (!is_const_int(simplify(strides[d]), expect)) return false;
    expect *= shape[d];
  }
  return true;
}

std::string BufferRegion::strides_str() const {
  std::string s = "(";
  for (size_t d = 0; d < strides.size(); ++d) s += (d ? ", " : "") + to_string(simplify(strides[d]));
  return s + ")";
}

bool TensorIntrinNode::is_reduction() const { return output->op->body[0].as<ReduceNode>() != nullptr; }

namespace {

/// Checks that every read of an input indexes each dimension by a distinct axis variable.
void check_reads(const std::string& name, const Expr& e, const std::vector<Tensor>& inputs,
                 const std::unordered_set<const VarNode*>& axes) {
  post_order_visit(e, [&](const Expr& x) {
    const auto* load = x.as<ProducerLoadNode>();
    if (!load) return;
    Tensor t(load->producer);
    LOOM_CHECK(std::find(inputs.begin(), inputs.end(), t) != inputs.end(),
               "decl_tensor_intrin '{}': it reads '{}', which is not among its inputs", name, t.name());
    std::unordered_set<const VarNode*> used;
    for (size_t d = 0; d < load->indices.size(); ++d) {
      const auto* v = load->indices[d].as<VarNode>();
      LOOM_CHECK(v && axes.count(v),
                 "decl_tensor_intrin '{}': dimension {} of '{}' is indexed by {}; each dimension of an input must be "
                 "indexed by one axis of the intrinsic",
                 name, d, t.name(), to_string(load->indices[d]));
      LOOM_CHECK(used.insert(v).second, "decl_tensor_intrin '{}': '{}' is indexed by axis '{}' in two dimensions", name,
                 t.name(), v->name);
    }
  });
}

void check_axis(const std::string& name, const IterVar& iv) {
  auto mn = as_const_int(iv->dom.min), ext = as_const_int(iv->dom.extent);
  LOOM_CHECK(mn && *mn == 0 && ext && *ext >= 2,
             "decl_tensor_intrin '{}': axis '{}' must range over [0, n) with a constant n >= 2, got min {} extent {}",
             name, iv.name(), to_string(iv->dom.min), to_string(iv->dom.extent));
}

}  // namespace

TensorIntrin decl_tensor_intrin(std::string name, Tensor output, std::vector<Tensor> inputs, TensorIntrinImpl body,
                                TensorIntrinImpl reset, TensorIntrinImpl update, std::string doc) {
  LOOM_CHECK(!name.empty(), "decl_tensor_intrin: the intrinsic needs a name");
  LOOM_CHECK(output.defined() && output.op()->kind == OpKind::kCompute,
             "decl_tensor_intrin '{}': the output must be a computed tensor", name);
  const OperationNode& op = *output.op();
  LOOM_CHECK(op.num_outputs() == 1, "decl_tensor_intrin '{}': the computation must have one output, '{}' has {}", name,
             op.name, op.num_outputs());
  for (const Tensor& t : inputs) {
    LOOM_CHECK(t.defined() && t.op()->kind == OpKind::kPlaceholder,
               "decl_tensor_intrin '{}': every input must be a placeholder", name);
  }
  for (const Tensor& t : op.input_tensors()) {
    LOOM_CHECK(std::find(inputs.begin(), inputs.end(), t) != inputs.end(),
               "decl_tensor_intrin '{}': '{}' reads '{}', which is not among the inputs", name, op.name, t.name());
  }
  std::unordered_set<const VarNode*> axes;
  for (const IterVar& iv : op.axis) {
    check_axis(name, iv);
    axes.insert(iv.var().get());
  }
  for (const IterVar& iv : op.reduce_axis) {
    check_axis(name, iv);
    axes.insert(iv.var().get());
  }
  const Expr& e = op.body[0];
  if (const auto* r = e.as<ReduceNode>()) {
    LOOM_CHECK(r->source.size() == 1, "decl_tensor_intrin '{}': tuple reductions are not supported", name);
    LOOM_CHECK(!r->condition.defined() || is_one(r->condition),
               "decl_tensor_intrin '{}': a reduction with a condition is not supported", name);
    LOOM_CHECK(r->init.empty(), "decl_tensor_intrin '{}': a reduction with an initial value is not supported", name);
    check_reads(name, r->source[0], inputs, axes);
    LOOM_CHECK(reset && update, "decl_tensor_intrin '{}': a reduction needs a reset and an update implementation",
               name);
  } else {
    check_reads(name, e, inputs, axes);
    LOOM_CHECK(body, "decl_tensor_intrin '{}': a computation without reduction needs a body implementation", name);
  }
  auto n = std::make_shared<TensorIntrinNode>();
  n->name = std::move(name);
  n->output = std::move(output);
  n->inputs = std::move(inputs);
  n->body = std::move(body);
  n->reset = std::move(reset);
  n->update = std::move(update);
  n->doc = std::move(doc);
  return n;
}

}  // namespace loom::te
