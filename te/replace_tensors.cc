// replace_tensors: a tensor program with some of its tensors swapped for others.
#include <fmt/format.h>

#include <unordered_map>

#include "loom/te/expr_functor.h"
#include "loom/te/tensor.h"

namespace loom::te {
namespace {

struct Key {
  const OperationNode* op;
  int index;
  bool operator<(const Key& o) const { return op != o.op ? op < o.op : index < o.index; }
};

/// Rewrites tensor reads through `map` (keyed by producing operation and output index).
class ReplaceReads : public ExprMutator {
 public:
  explicit ReplaceReads(const std::map<Key, Tensor>& map) : map_(map) {}

 protected:
  Expr mutate_(const ProducerLoadNode* op) override {
    Expr e = ExprMutator::mutate_(op);
    const auto* load = e.as<ProducerLoadNode>();
    auto it = map_.find(Key{load->producer->op.get(), load->producer->value_index});
    if (it == map_.end()) return e;
    return make<ProducerLoadNode>(load->dtype, it->second.node(), load->indices);
  }

 private:
  const std::map<Key, Tensor>& map_;
};

}  // namespace

std::vector<Tensor> replace_tensors(const std::vector<Tensor>& outputs, const std::map<Tensor, Tensor>& map) {
  std::map<Key, Tensor> tensor_map;
  for (const auto& [from, to] : map) {
    LOOM_CHECK(from.defined() && to.defined(), "replace_tensors: an undefined tensor in the map");
    LOOM_CHECK(from.dtype() == to.dtype() && from.ndim() == to.ndim(),
               "replace_tensors: '{}' ({}, {}-D) cannot be replaced by '{}' ({}, {}-D)", from.name(), from.dtype().str(),
               from.ndim(), to.name(), to.dtype().str(), to.ndim());
    for (size_t d = 0; d < from.ndim(); ++d) {
      auto a = as_const_int(from.shape()[d]), b = as_const_int(to.shape()[d]);
      LOOM_CHECK(a && b && *a == *b, "replace_tensors: '{}' and '{}' differ in dim {} ({} vs {})", from.name(),
                 to.name(), d, to_string(from.shape()[d]), to_string(to.shape()[d]));
    }
    tensor_map[Key{from.op().get(), from.value_index()}] = to;
  }
  std::unordered_map<const OperationNode*, Operation> rebuilt;
  for (const Operation& op : post_dfs_order(outputs)) {
    if (op->kind == OpKind::kPlaceholder || tensor_map.count(Key{op.get(), 0})) continue;
    bool reads_replaced = false;
    for (const Tensor& in : op->input_tensors())
      reads_replaced |= tensor_map.count(Key{in.op().get(), in.value_index()}) > 0;
    if (!reads_replaced) continue;
    ReplaceReads rr(tensor_map);
    auto n = std::make_shared<OperationNode>(*op);
    for (Expr& b : n->body) b = rr.mutate(b);
    // An extern operation reads its inputs by position (its reference has placeholders of its own).
    for (Tensor& in : n->inputs) {
      auto it = tensor_map.find(Key{in.op().get(), in.value_index()});
      if (it != tensor_map.end()) in = it->second;
    }
    Operation fresh = n;
    rebuilt[op.get()] = fresh;
    for (int i = 0; i < op->num_outputs(); ++i) tensor_map[Key{op.get(), i}] = output(fresh, i);
  }
  std::vector<Tensor> out;
  for (const Tensor& t : outputs) {
    auto it = tensor_map.find(Key{t.op().get(), t.value_index()});
    out.push_back(it == tensor_map.end() ? t : it->second);
  }
  return out;
}

}  // namespace loom::te
