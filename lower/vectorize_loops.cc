// vectorize_loops: a vectorized loop of constant extent n becomes its body with the loop
// variable replaced by ramp(min, 1, n) and every expression widened to n lanes. Bodies that
// cannot be expressed lane-wise (a branch on a vector condition, a store whose index does
// not vary with the loop, nested allocations) are scalarized: the loop runs serially.
#include <unordered_map>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"
#include "loom/te/intrinsics.h"
#include "loom/te/expr_functor.h"

namespace loom::lowering {

namespace {

using te::BroadcastNode;
using te::RampNode;

int lanes_of(const Expr& e) { return e.dtype().lanes(); }

Expr broadcast_to(const Expr& e, int lanes) {
  if (lanes_of(e) == lanes) return e;
  LOOM_ICHECK(lanes_of(e) == 1);
  return te::make<BroadcastNode>(e, lanes);
}

/// True if a statement or expression reads or writes buffer `buf`.
bool reads_buffer(const Expr& e, const Var& buf) {
  bool found = false;
  te::post_order_visit(e, [&](const Expr& x) {
    if (const auto* l = x.as<te::LoadNode>(); l && l->buffer_var.same_as(buf)) found = true;
  });
  return found;
}

/// Widens the body of one vectorized loop. Sets `failed` when the body has to stay scalar.
class Vectorizer : public IRMutator {
 public:
  Vectorizer(const Var& var, Expr ramp, int lanes) : lanes_(lanes) { vmap_[var.get()] = std::move(ramp); }
  bool failed = false;

  using IRMutator::mutate;

 protected:
  Expr mutate_(const te::VarNode* op) override {
    auto it = vmap_.find(op);
    return it == vmap_.end() ? to_expr(op) : it->second;
  }

  Expr mutate_(const te::AddNode* op) override { return arith(op, [](Expr a, Expr b) { return add(a, b); }); }
  Expr mutate_(const te::SubNode* op) override { return arith(op, [](Expr a, Expr b) { return sub(a, b); }); }
  Expr mutate_(const te::MulNode* op) override { return arith(op, [](Expr a, Expr b) { return mul(a, b); }); }
  Expr mutate_(const te::DivNode* op) override { return elementwise(op); }
  Expr mutate_(const te::ModNode* op) override { return elementwise(op); }
  Expr mutate_(const te::FloorDivNode* op) override { return elementwise(op); }
  Expr mutate_(const te::FloorModNode* op) override { return elementwise(op); }
  Expr mutate_(const te::MinNode* op) override { return elementwise(op); }
  Expr mutate_(const te::MaxNode* op) override { return elementwise(op); }
  Expr mutate_(const te::EQNode* op) override { return elementwise(op); }
  Expr mutate_(const te::NENode* op) override { return elementwise(op); }
  Expr mutate_(const te::LTNode* op) override { return elementwise(op); }
  Expr mutate_(const te::LENode* op) override { return elementwise(op); }
  Expr mutate_(const te::GTNode* op) override { return elementwise(op); }
  Expr mutate_(const te::GENode* op) override { return elementwise(op); }
  Expr mutate_(const te::AndNode* op) override { return elementwise(op); }
  Expr mutate_(const te::OrNode* op) override { return elementwise(op); }

  Expr mutate_(const te::SelectNode* op) override {
    Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return to_expr(op);
    int l = std::max({lanes_of(c), lanes_of(t), lanes_of(f)});
    return te::make<te::SelectNode>(broadcast_to(c, l), broadcast_to(t, l), broadcast_to(f, l));
  }

  Expr mutate_(const te::CastNode* op) override {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return to_expr(op);
    return te::make<te::CastNode>(op->dtype.with_lanes(lanes_of(v)), v);
  }

  Expr mutate_(const te::CallNode* op) override {
    std::vector<Expr> args;
    if (!mutate_array(op->args, &args)) return to_expr(op);
    int l = 1;
    for (const Expr& a : args) l = std::max(l, lanes_of(a));
    const te::IntrinsicInfo* info = te::find_intrinsic(op->name);
    if (l > 1 && (!info || !info->elementwise || op->dtype.lanes() != 1)) {
      failed = true;  // it does not apply lane by lane (runtime intrinsics take scalars)
      return to_expr(op);
    }
    for (Expr& a : args) a = broadcast_to(a, l);
    return te::make<te::CallNode>(op->dtype.with_lanes(l), op->name, std::move(args));
  }

  Expr mutate_(const te::LetNode* op) override {
    Expr v = mutate(op->value);
    Var var = op->var;
    if (lanes_of(v) != lanes_of(op->var)) {
      var = Var(op->var.name(), v.dtype());
      vmap_[op->var.get()] = var;
    }
    Expr b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return to_expr(op);
    return te::make<te::LetNode>(var, v, b);
  }

  Expr mutate_(const te::LoadNode* op) override {
    Expr idx = mutate(op->index);
    Expr pred = op->predicate.defined() ? mutate(op->predicate) : op->predicate;
    if (idx.same_as(op->index) && pred.same_as(op->predicate)) return to_expr(op);
    int l = std::max(lanes_of(idx), pred.defined() ? lanes_of(pred) : 1);
    if (pred.defined()) pred = broadcast_to(pred, l);
    return te::make<te::LoadNode>(op->dtype.with_lanes(l), op->buffer_var, broadcast_to(idx, l), pred);
  }

  Expr mutate_(const RampNode* op) override { return fail_expr(op); }
  Expr mutate_(const BroadcastNode* op) override { return fail_expr(op); }
  Expr mutate_(const te::ProducerLoadNode* op) override { return fail_expr(op); }
  Expr mutate_(const te::ReduceNode* op) override { return fail_expr(op); }

  Stmt mutate_(const StoreNode* op) override {
    Expr value = mutate(op->value);
    Expr index = mutate(op->index);
    Expr pred = op->predicate.defined() ? mutate(op->predicate) : op->predicate;
    if (value.same_as(op->value) && index.same_as(op->index) && pred.same_as(op->predicate)) {
      // The same store each iteration: once is enough unless it reads what it writes.
      if (reads_buffer(op->value, op->buffer_var)) failed = true;
      return to_stmt(op);
    }
    const auto* ramp = index.as<RampNode>();
    if (!ramp || te::is_zero(ramp->stride) || !te::as_const_int(ramp->stride)) {
      // A store whose lanes may hit one address (a reduction into it, a gather-like index):
      // only a serial loop keeps the order of the writes.
      failed = true;
      return to_stmt(op);
    }
    int l = ramp->lanes;
    if (pred.defined()) pred = broadcast_to(pred, l);
    return make_stmt<StoreNode>(op->buffer_var, broadcast_to(value, l), index, pred);
  }

  Stmt mutate_(const ForNode* op) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    if (lanes_of(mn) != 1 || lanes_of(ext) != 1) return fail_stmt(op);
    Stmt body = mutate(op->body);
    if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return to_stmt(op);
    auto n = std::make_shared<ForNode>(op->loop_var, mn, ext, op->for_kind, body, op->thread_tag);
    n->annotations = op->annotations;
    return Stmt(std::move(n));
  }

  Stmt mutate_(const IfThenElseNode* op) override {
    Expr c = mutate(op->condition);
    if (lanes_of(c) != 1) return fail_stmt(op);
    return IRMutator::mutate_(op);
  }

  Stmt mutate_(const LetStmtNode* op) override {
    Expr v = mutate(op->value);
    Var var = op->var;
    if (lanes_of(v) != lanes_of(op->var)) {
      var = Var(op->var.name(), v.dtype());
      vmap_[op->var.get()] = var;
    }
    Stmt b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return to_stmt(op);
    return make_stmt<LetStmtNode>(var, v, b);
  }

  Stmt mutate_(const AssertStmtNode* op) override {
    Expr c = mutate(op->condition);
    if (lanes_of(c) != 1) return fail_stmt(op);
    return IRMutator::mutate_(op);
  }

  Stmt mutate_(const AllocateNode* op) override { return fail_stmt(op); }
  Stmt mutate_(const WhileNode* op) override { return fail_stmt(op); }
  Stmt mutate_(const ProducerStoreNode* op) override { return fail_stmt(op); }
  Stmt mutate_(const ProducerRealizeNode* op) override { return fail_stmt(op); }

  Stmt mutate_(const EvaluateNode* op) override {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return to_stmt(op);
    return fail_stmt(op);  // an effect repeated per lane cannot be widened
  }

 private:
  template <typename Node>
  Expr fail_expr(const Node* op) {
    failed = true;
    return to_expr(op);
  }
  template <typename Node>
  Stmt fail_stmt(const Node* op) {
    failed = true;
    return to_stmt(op);
  }

  template <typename Node>
  Expr elementwise(const Node* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return to_expr(op);
    int l = std::max(lanes_of(a), lanes_of(b));
    return te::make<Node>(op->dtype.with_lanes(l), broadcast_to(a, l), broadcast_to(b, l));
  }

  template <typename Node, typename F>
  Expr arith(const Node* op, F f) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return to_expr(op);
    if (lanes_of(a) == lanes_of(b) && lanes_of(a) == 1) return te::make<Node>(op->dtype, a, b);
    int l = std::max(lanes_of(a), lanes_of(b));
    Expr r = f(broadcast_to(a, l), broadcast_to(b, l));
    if (r.defined()) return r;
    return te::make<Node>(op->dtype.with_lanes(l), broadcast_to(a, l), broadcast_to(b, l));
  }

  // Ramp arithmetic, so that indices stay ramps; undefined when no rule applies.
  static Expr add(const Expr& a, const Expr& b) {
    const auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
    const auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
    if (ra && bb) return te::make<RampNode>(ra->base + bb->value, ra->stride, ra->lanes);
    if (ba && rb) return te::make<RampNode>(ba->value + rb->base, rb->stride, rb->lanes);
    if (ra && rb) return te::make<RampNode>(ra->base + rb->base, ra->stride + rb->stride, ra->lanes);
    if (ba && bb) return te::make<BroadcastNode>(ba->value + bb->value, ba->lanes);
    return Expr();
  }
  static Expr sub(const Expr& a, const Expr& b) {
    const auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
    const auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
    if (ra && bb) return te::make<RampNode>(ra->base - bb->value, ra->stride, ra->lanes);
    if (ba && rb) return te::make<RampNode>(ba->value - rb->base, te::make_zero(rb->stride.dtype()) - rb->stride, rb->lanes);
    if (ra && rb) return te::make<RampNode>(ra->base - rb->base, ra->stride - rb->stride, ra->lanes);
    if (ba && bb) return te::make<BroadcastNode>(ba->value - bb->value, ba->lanes);
    return Expr();
  }
  static Expr mul(const Expr& a, const Expr& b) {
    const auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
    const auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
    if (ra && bb) return te::make<RampNode>(ra->base * bb->value, ra->stride * bb->value, ra->lanes);
    if (ba && rb) return te::make<RampNode>(ba->value * rb->base, ba->value * rb->stride, rb->lanes);
    if (ba && bb) return te::make<BroadcastNode>(ba->value * bb->value, ba->lanes);
    return Expr();
  }

  int lanes_;
  te::VarMap vmap_;
};

Stmt serial_loop(const ForNode* op, Stmt body) {
  auto n = std::make_shared<ForNode>(op->loop_var, op->min, op->extent, ForKind::kSerial, std::move(body), op->thread_tag);
  n->annotations = op->annotations;
  return Stmt(std::move(n));
}

class LoopVectorizer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const ForNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* f = s.as<ForNode>();
    if (!f || f->for_kind != ForKind::kVectorized) return s;
    auto n = te::as_const_int(f->extent);
    if (!n || *n < 1) return serial_loop(f, f->body);
    if (*n == 1) return substitute(f->body, {{f->loop_var.get(), f->min}});
    int lanes = int(*n);
    Vectorizer v(f->loop_var, te::make<RampNode>(f->min, te::make_const(f->min.dtype(), 1), lanes), lanes);
    Stmt body = v.mutate(f->body);
    if (v.failed) return serial_loop(f, f->body);
    return body;
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) { return LoopVectorizer().mutate(s); }

}  // namespace loom::lowering
