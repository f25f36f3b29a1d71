// Dispatch and default traversal of ExprVisitor and ExprMutator, and the helpers built on them.
#include "loom/te/expr_functor.h"

namespace loom::te {

// ---------------------------------------------------------------- visitor
void ExprVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  const ExprNode* n = e.get();
  switch (n->kind) {
#define LOOM_VISIT_CASE(K) \
  case ExprKind::K: visit_(static_cast<const K##Node*>(n)); return;
    LOOM_VISIT_CASE(IntImm) LOOM_VISIT_CASE(FloatImm) LOOM_VISIT_CASE(StringImm) LOOM_VISIT_CASE(Var)
    LOOM_VISIT_CASE(Add) LOOM_VISIT_CASE(Sub) LOOM_VISIT_CASE(Mul) LOOM_VISIT_CASE(Div) LOOM_VISIT_CASE(Mod)
    LOOM_VISIT_CASE(FloorDiv) LOOM_VISIT_CASE(FloorMod) LOOM_VISIT_CASE(Min) LOOM_VISIT_CASE(Max)
    LOOM_VISIT_CASE(EQ) LOOM_VISIT_CASE(NE) LOOM_VISIT_CASE(LT) LOOM_VISIT_CASE(LE) LOOM_VISIT_CASE(GT)
    LOOM_VISIT_CASE(GE) LOOM_VISIT_CASE(And) LOOM_VISIT_CASE(Or) LOOM_VISIT_CASE(Not)
    LOOM_VISIT_CASE(Select) LOOM_VISIT_CASE(Cast) LOOM_VISIT_CASE(Call) LOOM_VISIT_CASE(Let)
    LOOM_VISIT_CASE(ProducerLoad) LOOM_VISIT_CASE(Reduce) LOOM_VISIT_CASE(Load) LOOM_VISIT_CASE(Ramp)
    LOOM_VISIT_CASE(Broadcast)
#undef LOOM_VISIT_CASE
  }
  LOOM_ICHECK(false);
}

void ExprVisitor::visit_(const NotNode* op) { visit(op->a); }
void ExprVisitor::visit_(const SelectNode* op) {
  visit(op->cond);
  visit(op->true_value);
  visit(op->false_value);
}
void ExprVisitor::visit_(const CastNode* op) { visit(op->value); }
void ExprVisitor::visit_(const CallNode* op) {
  for (auto& a : op->args) visit(a);
}
void ExprVisitor::visit_(const LetNode* op) {
  visit(op->value);
  visit(op->body);
}
void ExprVisitor::visit_(const ProducerLoadNode* op) {
  for (auto& i : op->indices) visit(i);
}
void ExprVisitor::visit_(const ReduceNode* op) {
  for (auto& iv : op->axis) {
    visit(iv->dom.min);
    visit(iv->dom.extent);
  }
  for (auto& s : op->source) visit(s);
  visit(op->condition);
  for (auto& i : op->init) visit(i);
}
void ExprVisitor::visit_(const LoadNode* op) {
  visit(op->buffer_var);
  visit(op->index);
  visit(op->predicate);
}
void ExprVisitor::visit_(const RampNode* op) {
  visit(op->base);
  visit(op->stride);
}
void ExprVisitor::visit_(const BroadcastNode* op) { visit(op->value); }

// ---------------------------------------------------------------- mutator
Expr ExprMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  const ExprNode* n = e.get();
  switch (n->kind) {
#define LOOM_MUTATE_CASE(K) \
  case ExprKind::K: return mutate_(static_cast<const K##Node*>(n));
    LOOM_MUTATE_CASE(IntImm) LOOM_MUTATE_CASE(FloatImm) LOOM_MUTATE_CASE(StringImm) LOOM_MUTATE_CASE(Var)
    LOOM_MUTATE_CASE(Add) LOOM_MUTATE_CASE(Sub) LOOM_MUTATE_CASE(Mul) LOOM_MUTATE_CASE(Div) LOOM_MUTATE_CASE(Mod)
    LOOM_MUTATE_CASE(FloorDiv) LOOM_MUTATE_CASE(FloorMod) LOOM_MUTATE_CASE(Min) LOOM_MUTATE_CASE(Max)
    LOOM_MUTATE_CASE(EQ) LOOM_MUTATE_CASE(NE) LOOM_MUTATE_CASE(LT) LOOM_MUTATE_CASE(LE) LOOM_MUTATE_CASE(GT)
    LOOM_MUTATE_CASE(GE) LOOM_MUTATE_CASE(And) LOOM_MUTATE_CASE(Or) LOOM_MUTATE_CASE(Not)
    LOOM_MUTATE_CASE(Select) LOOM_MUTATE_CASE(Cast) LOOM_MUTATE_CASE(Call) LOOM_MUTATE_CASE(Let)
    LOOM_MUTATE_CASE(ProducerLoad) LOOM_MUTATE_CASE(Reduce) LOOM_MUTATE_CASE(Load) LOOM_MUTATE_CASE(Ramp)
    LOOM_MUTATE_CASE(Broadcast)
#undef LOOM_MUTATE_CASE
  }
  LOOM_ICHECK(false);
  return e;
}

bool ExprMutator::mutate_array(const std::vector<Expr>& in, std::vector<Expr>* out) {
  out->clear();
  out->reserve(in.size());
  bool changed = false;
  for (auto& e : in) {
    out->push_back(mutate(e));
    changed |= !out->back().same_as(e);
  }
  return changed;
}

#define LOOM_MUTATE_BINARY(K)                                                          \
  Expr ExprMutator::mutate_(const K##Node* op) {                                       \
    Expr a = mutate(op->a), b = mutate(op->b);                                         \
    if (a.same_as(op->a) && b.same_as(op->b)) return to_expr(op);                      \
    return make<K##Node>(op->dtype, std::move(a), std::move(b));                       \
  }
LOOM_MUTATE_BINARY(Add)
LOOM_MUTATE_BINARY(Sub)
LOOM_MUTATE_BINARY(Mul)
LOOM_MUTATE_BINARY(Div)
LOOM_MUTATE_BINARY(Mod)
LOOM_MUTATE_BINARY(FloorDiv)
LOOM_MUTATE_BINARY(FloorMod)
LOOM_MUTATE_BINARY(Min)
LOOM_MUTATE_BINARY(Max)
LOOM_MUTATE_BINARY(EQ)
LOOM_MUTATE_BINARY(NE)
LOOM_MUTATE_BINARY(LT)
LOOM_MUTATE_BINARY(LE)
LOOM_MUTATE_BINARY(GT)
LOOM_MUTATE_BINARY(GE)
LOOM_MUTATE_BINARY(And)
LOOM_MUTATE_BINARY(Or)
#undef LOOM_MUTATE_BINARY

Expr ExprMutator::mutate_(const NotNode* op) {
  Expr a = mutate(op->a);
  if (a.same_as(op->a)) return to_expr(op);
  return make<NotNode>(std::move(a));
}

Expr ExprMutator::mutate_(const SelectNode* op) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return to_expr(op);
  return make<SelectNode>(std::move(c), std::move(t), std::move(f));
}

Expr ExprMutator::mutate_(const CastNode* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return to_expr(op);
  return make<CastNode>(op->dtype, std::move(v));
}

Expr ExprMutator::mutate_(const CallNode* op) {
  std::vector<Expr> args;
  if (!mutate_array(op->args, &args)) return to_expr(op);
  return make<CallNode>(op->dtype, op->name, std::move(args));
}

Expr ExprMutator::mutate_(const LetNode* op) {
  Expr v = mutate(op->value), b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return to_expr(op);
  return make<LetNode>(op->var, std::move(v), std::move(b));
}

Expr ExprMutator::mutate_(const ProducerLoadNode* op) {
  std::vector<Expr> idx;
  if (!mutate_array(op->indices, &idx)) return to_expr(op);
  return make<ProducerLoadNode>(op->dtype, op->producer, std::move(idx));
}

Expr ExprMutator::mutate_(const ReduceNode* op) {
  std::vector<Expr> source, init;
  bool changed = mutate_array(op->source, &source);
  changed |= mutate_array(op->init, &init);
  Expr cond = mutate(op->condition);
  changed |= !cond.same_as(op->condition);
  if (!changed) return to_expr(op);
  return make<ReduceNode>(op->dtype, op->combiner, std::move(source), op->axis, std::move(cond), op->value_index,
                          std::move(init));
}

Expr ExprMutator::mutate_(const LoadNode* op) {
  Expr buf = mutate(op->buffer_var);
  Expr idx = mutate(op->index), pred = mutate(op->predicate);
  Var new_buf = op->buffer_var;
  if (buf.as<VarNode>() && !buf.same_as(op->buffer_var))
    new_buf = Var(std::static_pointer_cast<const VarNode>(buf.node()));
  if (new_buf.same_as(op->buffer_var) && idx.same_as(op->index) && pred.same_as(op->predicate)) return to_expr(op);
  return make<LoadNode>(op->dtype, std::move(new_buf), std::move(idx), std::move(pred));
}

Expr ExprMutator::mutate_(const RampNode* op) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return to_expr(op);
  return make<RampNode>(std::move(b), std::move(s), op->lanes);
}

Expr ExprMutator::mutate_(const BroadcastNode* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return to_expr(op);
  return make<BroadcastNode>(std::move(v), op->lanes);
}

// ---------------------------------------------------------------- helpers
namespace {

class PostOrderVisitor : public ExprVisitor {
 public:
  explicit PostOrderVisitor(const std::function<void(const Expr&)>& f) : f_(f) {}
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    ExprVisitor::visit(e);
    f_(e);
  }

 private:
  const std::function<void(const Expr&)>& f_;
};

class Substituter : public ExprMutator {
 public:
  explicit Substituter(const VarMap& m) : m_(m) {}

 protected:
  Expr mutate_(const VarNode* op) override {
    auto it = m_.find(op);
    return it == m_.end() ? to_expr(op) : it->second;
  }

 private:
  const VarMap& m_;
};

class VarUseFinder : public ExprVisitor {
 public:
  explicit VarUseFinder(const std::function<bool(const VarNode*)>& p) : p_(p) {}
  void visit(const Expr& e) override {
    if (found) return;
    ExprVisitor::visit(e);
  }
  bool found = false;

 protected:
  void visit_(const VarNode* op) override {
    if (p_(op)) found = true;
  }

 private:
  const std::function<bool(const VarNode*)>& p_;
};

}  // namespace

void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f) { PostOrderVisitor(f).visit(e); }

Expr substitute(const Expr& e, const VarMap& vmap) {
  if (vmap.empty()) return e;
  return Substituter(vmap).mutate(e);
}

bool expr_uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred) {
  VarUseFinder f(pred);
  f.visit(e);
  return f.found;
}

}  // namespace loom::te
