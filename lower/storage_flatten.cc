// storage_flatten: multi-dimensional tensors → flat buffers with row-major indices.
#include <map>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

using TensorKey = std::pair<const te::OperationNode*, int>;

TensorKey key_of(const Tensor& t) { return {t.op().get(), t.value_index()}; }

/// A flat buffer standing for a tensor: element (i0, i1, …) lives at
/// sum((i_d - min_d) * stride_d).
struct FlatBuffer {
  Var data;
  DataType dtype;
  std::vector<Expr> mins;
  std::vector<Expr> strides;
};

std::string buffer_name(const Tensor& t) {
  if (t.op() && t.op()->num_outputs() > 1) return fmt::format("{}.v{}", t.name(), t.value_index());
  return t.name();
}

/// Row-major strides of `extents` with the dimensions laid out in `order` (outermost first;
/// empty: natural); with a (factor, offset) alignment on a dimension its stride is padded up
/// until stride % factor == offset. Returns the total size last.
std::vector<Expr> row_major_strides(const std::vector<Expr>& extents, const std::vector<std::pair<int, int>>& align,
                                    Expr* total, const std::vector<int>& order = {}) {
  size_t n = extents.size();
  std::vector<Expr> strides(n);
  Expr stride = te::make_const(DataType::Int(32), 1);
  for (size_t pos = n; pos-- > 0;) {
    size_t i = order.empty() ? pos : size_t(order[pos]);
    if (i < align.size() && align[i].first != 0) {
      Expr factor = te::make_const(stride.dtype(), align[i].first);
      Expr offset = te::make_const(stride.dtype(), align[i].second);
      stride = te::simplify(stride + te::floormod(factor + offset - te::floormod(stride, factor), factor));
    }
    strides[i] = stride;
    stride = te::simplify(stride * extents[i]);
  }
  *total = stride;
  return strides;
}

class StorageFlattener : public IRMutator {
 public:
  explicit StorageFlattener(const std::vector<BufferArg>& args) {
    for (const BufferArg& a : args) {
      if (!a.tensor.defined()) continue;
      Expr total;
      std::vector<Expr> strides = row_major_strides(a.shape, {}, &total);
      std::vector<Expr> mins(a.shape.size(), te::make_const(DataType::Int(32), 0));
      bufs_[key_of(a.tensor)] = FlatBuffer{a.data, a.dtype, std::move(mins), std::move(strides)};
      arg_keys_.emplace(key_of(a.tensor), true);
    }
  }

  using IRMutator::mutate;

 protected:
  Stmt mutate_(const ProducerRealizeNode* op) override {
    TensorKey key = key_of(op->tensor);
    if (arg_keys_.count(key)) return mutate(op->body);
    LOOM_ICHECK(!bufs_.count(key));
    std::vector<Expr> extents, mins;
    for (const Range& r : op->bounds) {
      mins.push_back(r.min);
      extents.push_back(r.extent);
    }
    Expr total;
    LOOM_ICHECK(op->order.empty() || op->order.size() == extents.size());
    std::vector<Expr> strides = row_major_strides(extents, op->align, &total, op->order);
    Var data(buffer_name(op->tensor), DataType::Handle());
    DataType dtype = op->tensor.dtype();
    bufs_[key] = FlatBuffer{data, dtype, std::move(mins), std::move(strides)};
    Stmt body = mutate(op->body);
    bufs_.erase(key);
    std::string scope = op->scope.empty() ? "global" : op->scope;
    Stmt alloc = make_stmt<AllocateNode>(data, dtype, std::vector<Expr>{total}, scope, body);
    if (scope != "global")
      alloc = make_stmt<AttrStmtNode>(te::IterVar(), data, attr::kStorageScope, te::make<te::StringImmNode>(scope), alloc);
    return alloc;
  }

  /// A kDoubleBuffer marker around a realize goes to the Allocate (by its buffer var);
  /// around anything else (the realize of an argument was stripped) it is dropped.
  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key != attr::kDoubleBuffer) return IRMutator::mutate_(op);
    if (!op->body.as<ProducerRealizeNode>()) return mutate(op->body);
    Stmt body = mutate(op->body);
    Var data;
    if (const auto* a = body.as<AllocateNode>()) data = a->buffer_var;
    if (const auto* a = body.as<AttrStmtNode>(); a && a->key == attr::kStorageScope) data = a->var;
    if (!data.defined()) return body;
    return make_stmt<AttrStmtNode>(te::IterVar(), data, attr::kDoubleBuffer, op->value, body);
  }

  Stmt mutate_(const ProducerStoreNode* op) override {
    const FlatBuffer& b = lookup(op->tensor);
    Expr value = mutate(op->value);
    std::vector<Expr> idx;
    mutate_array(op->indices, &idx);
    return make_stmt<StoreNode>(b.data, value, flat_index(b, idx, op->tensor), Expr());
  }

  Expr mutate_(const te::ProducerLoadNode* op) override {
    Tensor t(op->producer);
    const FlatBuffer& b = lookup(t);
    std::vector<Expr> idx;
    mutate_array(op->indices, &idx);
    return te::make<te::LoadNode>(op->dtype, b.data, flat_index(b, idx, t), Expr());
  }

 private:
  const FlatBuffer& lookup(const Tensor& t) {
    auto it = bufs_.find(key_of(t));
    if (it == bufs_.end())
      fail("internal error: storage_flatten: tensor '{}' is neither realized nor a function argument", t.name());
    return it->second;
  }

  static Expr flat_index(const FlatBuffer& b, const std::vector<Expr>& idx, const Tensor& t) {
    LOOM_CHECK(idx.size() == b.strides.size(), "storage_flatten: tensor '{}' accessed with {} indices, has {} dimensions",
               t.name(), idx.size(), b.strides.size());
    Expr flat;
    for (size_t d = 0; d < idx.size(); ++d) {
      Expr i = is_zero(b.mins[d]) ? idx[d] : idx[d] - b.mins[d];
      Expr term = is_one(b.strides[d]) ? i : i * b.strides[d];
      flat = flat.defined() ? flat + term : term;
    }
    if (!flat.defined()) flat = te::make_const(DataType::Int(32), 0);
    return te::simplify(flat);
  }

  std::map<TensorKey, FlatBuffer> bufs_;
  std::map<TensorKey, bool> arg_keys_;
};

}  // namespace

Stmt storage_flatten(const Stmt& s, const std::vector<BufferArg>& args) { return StorageFlattener(args).mutate(s); }

}  // namespace loom::lowering
