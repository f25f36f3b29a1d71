// Constant folding: an op node whose inputs are all constants becomes constants, computed at
// compile time by te::evaluate. Walking the nodes in order folds whole constant subgraphs.
//
// te::evaluate rather than compiling with loom: it needs no schedule, no code generator and
// no JIT per folded node (a ResNet-18 folds about a hundred small computations: weight
// scaling, layout transforms of weights, batch-norm parameters), it is the same evaluator the
// reference execution trusts, and its cost grows only with the folded elements (all the
// weights of a network, once, at compile time).
//
// What is folded is bounded (FoldLimits), decided from the node's te computation before
// anything is evaluated: a few bytes of model can ask for gigabytes (a Pad by 2^30, a chain
// of Concats of a constant with itself), which then stay operators computed at run time.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/shape.h"
#include "loom/te/expr.h"

namespace loom::graph_opt {

namespace {

/// Product of the constant extents, or nullopt when one is not constant or it overflows.
std::optional<int64_t> extent_product(const std::vector<te::IterVar>& axes) {
  int64_t n = 1;
  for (const te::IterVar& iv : axes) {
    auto e = te::as_const_int(iv.dom().extent);
    if (!e || *e < 0 || __builtin_mul_overflow(n, *e, &n)) return std::nullopt;
  }
  return n;
}

}  // namespace

FoldBudget::FoldBudget(const FoldLimits& limits, int64_t constant_bytes)
    : limits_(limits),
      total_limit_(std::max(limits.max_total_bytes, constant_bytes)) {}

bool FoldBudget::admit(const Node& n, const std::vector<TensorType>& inputs, const std::string& where) {
  reason_.clear();
  int64_t largest_input = 0;
  for (const TensorType& t : inputs) largest_input = std::max(largest_input, nbytes(t));
  // A result larger than the limit folds only when no larger than an input (a transpose or
  // scaling of a big weight); growth past the limit stays at run time.
  const int64_t max_bytes = std::max(limits_.max_result_bytes, largest_input);
  int64_t out_bytes = 0;
  for (const TensorType& t : n.outputs) {
    int64_t b = INT64_MAX;
    try {
      b = runtime::checked_byte_count(t.shape, t.dtype, n.name);
    } catch (const Error&) {
    }
    if (__builtin_add_overflow(out_bytes, b, &out_bytes)) out_bytes = INT64_MAX;
  }
  auto refuse = [&](std::string why) {
    reason_ = std::move(why);
    return false;
  };
  if (out_bytes > max_bytes)
    return refuse(fmt::format("its result of {} bytes is over the fold limit of {} bytes", out_bytes, max_bytes));
  if (out_bytes > limits_.small_result_bytes && used_bytes_ + out_bytes > total_limit_)
    return refuse(fmt::format("the results folded so far ({} bytes) and its {} bytes are over the total fold limit of "
                              "{} bytes",
                              used_bytes_, out_bytes, total_limit_));
  // The te computation as te::evaluate would run it: every operation it materializes, each
  // element evaluated once per reduction step.
  std::vector<te::Tensor> ph;
  for (size_t k = 0; k < inputs.size(); ++k) ph.push_back(placeholder_for(inputs[k], fmt::format("in{}", k)));
  int64_t work = 0;
  for (const te::Operation& op : te::post_dfs_order(node_compute(n, ph, where))) {
    if (op->kind != te::OpKind::kCompute) continue;
    auto elems = extent_product(op->axis), steps = extent_product(op->reduce_axis);
    int64_t bytes = 0, w = 0;
    if (!elems || !steps || __builtin_mul_overflow(*elems, int64_t(op->body.size()), &bytes) ||
        __builtin_mul_overflow(bytes, int64_t(op->output_dtype(0).bytes()), &bytes) ||
        __builtin_mul_overflow(*elems, std::max<int64_t>(*steps, 1), &w) || __builtin_add_overflow(work, w, &work))
      return refuse("its computation's size is not a constant that fits in 64 bits");
    if (bytes > max_bytes)
      return refuse(fmt::format("its step '{}' makes {} bytes, over the fold limit of {} bytes", op->name, bytes,
                                max_bytes));
    if (work > limits_.max_work)
      return refuse(fmt::format("it evaluates over {} element steps, more than the fold limit of {}", work,
                                limits_.max_work));
  }
  used_bytes_ += out_bytes;
  return true;
}

Graph fold_constants(const Graph& g) { return fold_constants_within(g, FoldLimits{}); }

Graph fold_constants_within(const Graph& g, const FoldLimits& limits) {
  GraphRewriter rw(g);
  int64_t constant_bytes = 0;
  for (const Node& n : g.nodes)
    if (n.is_constant()) constant_bytes += int64_t(n.value.nbytes());
  FoldBudget budget(limits, constant_bytes);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.is_op() || n.inputs.empty()) {
      rw.copy(int(i));
      continue;
    }
    std::vector<Value> ins = rw.map_inputs(int(i));
    bool all_constant = true;
    std::vector<TensorType> types;
    for (const Value& v : ins) {
      all_constant = all_constant && rw.graph().node(v).is_constant();
      types.push_back(rw.type(v));
    }
    const std::string where = fmt::format("graph '{}', node '{}' ({}), folding constants", g.name, n.name, n.op);
    if (!all_constant || !budget.admit(n, types, where)) {
      rw.copy_with(int(i), ins, n.attrs);
      continue;
    }
    std::vector<runtime::NDArray> args;
    for (const Value& v : ins) args.push_back(rw.graph().node(v).value);
    std::vector<runtime::NDArray> out = evaluate_node(n, args, where);
    for (size_t k = 0; k < out.size(); ++k) {
      std::string name = rw.unique_name(k == 0 ? n.name : fmt::format("{}:{}", n.name, k));
      rw.replace({int(i), int(k)}, rw.constant(name, out[k], n.outputs[k].layout));
    }
  }
  return rw.finish();
}

}  // namespace loom::graph_opt
