// Structural equality and hashing of expressions.
#include <cmath>
#include <functional>

#include "expr_internal.h"
#include "loom/te/expr.h"
#include "loom/te/tensor.h"

namespace loom::te {

// ---------------------------------------------------------------- structural equality
namespace {

bool same_tensor(const std::shared_ptr<const TensorNode>& a, const std::shared_ptr<const TensorNode>& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->op == b->op && a->value_index == b->value_index;
}

/// Structural comparison. Free variables compare by identity; variables bound inside the
/// expressions (by a Let or a reducer) compare by position.
class EqualChecker {
 public:
  EqualChecker() = default;
  explicit EqualChecker(std::vector<std::pair<const VarNode*, const VarNode*>> bound) : bound_(std::move(bound)) {}
  bool eq(const Expr& a, const Expr& b) {
    // One node is equal to itself unless it uses a bound variable, which may stand for
    // another one on each side.
    if (a.same_as(b) && (bound_.empty() || !a.defined())) return true;
    if (!a.defined() || !b.defined()) return false;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    const ExprNode* x = a.get();
    const ExprNode* y = b.get();
    if (is_binary(x->kind)) {
      auto [xa, xb] = binary_operands(x);
      auto [ya, yb] = binary_operands(y);
      return eq(*xa, *ya) && eq(*xb, *yb);
    }
    switch (x->kind) {
      case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
      case ExprKind::FloatImm: {
        double u = a.as<FloatImmNode>()->value, v = b.as<FloatImmNode>()->value;
        return u == v || (std::isnan(u) && std::isnan(v));
      }
      case ExprKind::StringImm: return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value;
      case ExprKind::Var: return eq_var(a.as<VarNode>(), b.as<VarNode>());
      case ExprKind::Not: return eq(a.as<NotNode>()->a, b.as<NotNode>()->a);
      case ExprKind::Select: {
        auto *p = a.as<SelectNode>(), *q = b.as<SelectNode>();
        return eq(p->cond, q->cond) && eq(p->true_value, q->true_value) && eq(p->false_value, q->false_value);
      }
      case ExprKind::Cast: return eq(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case ExprKind::Call: {
        auto *p = a.as<CallNode>(), *q = b.as<CallNode>();
        return p->name == q->name && eq_array(p->args, q->args);
      }
      case ExprKind::Let: {
        auto *p = a.as<LetNode>(), *q = b.as<LetNode>();
        if (!eq(p->value, q->value)) return false;
        bound_.emplace_back(p->var.get(), q->var.get());
        bool r = eq(p->body, q->body);
        bound_.pop_back();
        return r;
      }
      case ExprKind::ProducerLoad: {
        auto *p = a.as<ProducerLoadNode>(), *q = b.as<ProducerLoadNode>();
        return same_tensor(p->producer, q->producer) && eq_array(p->indices, q->indices);
      }
      case ExprKind::Reduce: return eq_reduce(a.as<ReduceNode>(), b.as<ReduceNode>());
      case ExprKind::Load: {
        auto *p = a.as<LoadNode>(), *q = b.as<LoadNode>();
        return eq_var(p->buffer_var.get(), q->buffer_var.get()) && eq(p->index, q->index) &&
               eq_opt(p->predicate, q->predicate);
      }
      case ExprKind::Ramp: {
        auto *p = a.as<RampNode>(), *q = b.as<RampNode>();
        return p->lanes == q->lanes && eq(p->base, q->base) && eq(p->stride, q->stride);
      }
      case ExprKind::Broadcast: {
        auto *p = a.as<BroadcastNode>(), *q = b.as<BroadcastNode>();
        return p->lanes == q->lanes && eq(p->value, q->value);
      }
      default: break;
    }
    LOOM_ICHECK(false);
    return false;
  }

 private:
  bool eq_var(const VarNode* a, const VarNode* b) {
    if (!a || !b) return a == b;
    for (auto it = bound_.rbegin(); it != bound_.rend(); ++it) {
      if (it->first == a || it->second == b) return it->first == a && it->second == b;
    }
    return a == b;
  }
  bool eq_opt(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return eq(a, b);
  }
  bool eq_array(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!eq_opt(a[i], b[i])) return false;
    return true;
  }
  bool eq_combiner(const CommReducer& a, const CommReducer& b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->lhs.size() != b->lhs.size() || a->rhs.size() != b->rhs.size()) return false;
    if (!eq_array(a->identity, b->identity)) return false;
    size_t mark = bound_.size();
    for (size_t i = 0; i < a->lhs.size(); ++i) bound_.emplace_back(a->lhs[i].get(), b->lhs[i].get());
    for (size_t i = 0; i < a->rhs.size(); ++i) bound_.emplace_back(a->rhs[i].get(), b->rhs[i].get());
    bool r = eq_array(a->result, b->result);
    bound_.resize(mark);
    return r;
  }
  bool eq_reduce(const ReduceNode* a, const ReduceNode* b) {
    if (a->value_index != b->value_index || a->axis.size() != b->axis.size()) return false;
    for (size_t i = 0; i < a->axis.size(); ++i)
      if (a->axis[i] != b->axis[i]) return false;
    return eq_combiner(a->combiner, b->combiner) && eq_array(a->source, b->source) &&
           eq_opt(a->condition, b->condition) && eq_array(a->init, b->init);
  }

  std::vector<std::pair<const VarNode*, const VarNode*>> bound_;
};

class Hasher {
 public:
  Hasher() = default;
  explicit Hasher(std::vector<const VarNode*> bound) : bound_(std::move(bound)) {}
  size_t hash(const Expr& e) {
    if (!e.defined()) return 0x51ed27;
    size_t h = hash_combine(size_t(e.kind()) * 1000003u, std::hash<uint64_t>()(
        uint64_t(e.dtype().code()) | (uint64_t(e.dtype().bits()) << 8) | (uint64_t(e.dtype().lanes()) << 16)));
    const ExprNode* n = e.get();
    if (is_binary(n->kind)) {
      auto [a, b] = binary_operands(n);
      return hash_combine(hash_combine(h, hash(*a)), hash(*b));
    }
    switch (n->kind) {
      case ExprKind::IntImm: return hash_combine(h, std::hash<int64_t>()(e.as<IntImmNode>()->value));
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        if (v == 0) v = 0;  // -0.0 equals 0.0
        return hash_combine(h, std::isnan(v) ? 7 : std::hash<double>()(v));
      }
      case ExprKind::StringImm: return hash_combine(h, std::hash<std::string>()(e.as<StringImmNode>()->value));
      case ExprKind::Var: return hash_combine(h, hash_var(e.as<VarNode>()));
      case ExprKind::Not: return hash_combine(h, hash(e.as<NotNode>()->a));
      case ExprKind::Select: {
        auto* p = e.as<SelectNode>();
        return hash_combine(hash_combine(hash_combine(h, hash(p->cond)), hash(p->true_value)), hash(p->false_value));
      }
      case ExprKind::Cast: return hash_combine(h, hash(e.as<CastNode>()->value));
      case ExprKind::Call: {
        auto* p = e.as<CallNode>();
        return hash_array(hash_combine(h, std::hash<std::string>()(p->name)), p->args);
      }
      case ExprKind::Let: {
        auto* p = e.as<LetNode>();
        h = hash_combine(h, hash(p->value));
        bound_.push_back(p->var.get());
        h = hash_combine(h, hash(p->body));
        bound_.pop_back();
        return h;
      }
      case ExprKind::ProducerLoad: {
        auto* p = e.as<ProducerLoadNode>();
        size_t t = p->producer ? hash_combine(std::hash<const void*>()(p->producer->op.get()), size_t(p->producer->value_index)) : 0;
        return hash_array(hash_combine(h, t), p->indices);
      }
      case ExprKind::Reduce: {
        auto* p = e.as<ReduceNode>();
        h = hash_combine(h, size_t(p->value_index));
        for (auto& iv : p->axis) h = hash_combine(h, std::hash<const void*>()(iv.get()));
        if (p->combiner) {
          h = hash_array(h, p->combiner->identity);
          size_t mark = bound_.size();
          for (auto& v : p->combiner->lhs) bound_.push_back(v.get());
          for (auto& v : p->combiner->rhs) bound_.push_back(v.get());
          h = hash_array(h, p->combiner->result);
          bound_.resize(mark);
        }
        h = hash_array(h, p->source);
        h = hash_combine(h, hash(p->condition));
        return hash_array(h, p->init);
      }
      case ExprKind::Load: {
        auto* p = e.as<LoadNode>();
        h = hash_combine(h, hash_var(p->buffer_var.get()));
        return hash_combine(hash_combine(h, hash(p->index)), hash(p->predicate));
      }
      case ExprKind::Ramp: {
        auto* p = e.as<RampNode>();
        return hash_combine(hash_combine(hash_combine(h, hash(p->base)), hash(p->stride)), size_t(p->lanes));
      }
      case ExprKind::Broadcast: {
        auto* p = e.as<BroadcastNode>();
        return hash_combine(hash_combine(h, hash(p->value)), size_t(p->lanes));
      }
      default: break;
    }
    LOOM_ICHECK(false);
    return h;
  }

 private:
  size_t hash_var(const VarNode* v) {
    for (size_t i = bound_.size(); i-- > 0;)
      if (bound_[i] == v) return hash_combine(0xb0b, i);
    return std::hash<const void*>()(v);
  }
  size_t hash_array(size_t h, const std::vector<Expr>& a) {
    h = hash_combine(h, a.size());
    for (auto& e : a) h = hash_combine(h, hash(e));
    return h;
  }
  std::vector<const VarNode*> bound_;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) { return EqualChecker().eq(a, b); }
size_t structural_hash(const Expr& e) { return Hasher().hash(e); }

bool structural_equal(const Expr& a, const Expr& b, const std::vector<std::pair<const VarNode*, const VarNode*>>& bound) {
  return EqualChecker(bound).eq(a, b);
}
size_t structural_hash(const Expr& e, const std::vector<const VarNode*>& bound) { return Hasher(bound).hash(e); }

}  // namespace loom::te
