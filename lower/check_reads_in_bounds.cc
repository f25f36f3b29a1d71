// check_reads_in_bounds: rejects, at lower(), a compute that provably reads a tensor outside
// its extent. Each stage's unguarded reads are evaluated over the stage's whole domain (its
// spatial and reduce axes); a read that a select, if_then_else, && / || or a reduction's
// condition guards is left alone, as padding reads are guarded so.
#include "loom/lower/passes.h"
#include "loom/te/arith.h"
#include "loom/te/expr_functor.h"
#include "loom/te/tensor.h"

namespace loom::lowering {

namespace {

/// The reads of tensors that happen whenever the expression is evaluated.
class UnguardedReads : public te::ExprVisitor {
 public:
  std::vector<const te::ProducerLoadNode*> reads;

 protected:
  void visit_(const te::ProducerLoadNode* op) override {
    if (guarded_ == 0) reads.push_back(op);
    te::ExprVisitor::visit_(op);
  }
  void visit_(const te::SelectNode* op) override {
    visit(op->cond);
    guarded(op->true_value);
    guarded(op->false_value);
  }
  void visit_(const te::AndNode* op) override {
    visit(op->a);
    guarded(op->b);
  }
  void visit_(const te::OrNode* op) override {
    visit(op->a);
    guarded(op->b);
  }
  void visit_(const te::CallNode* op) override {
    if (op->name != "if_then_else" || op->args.size() != 3) return te::ExprVisitor::visit_(op);
    visit(op->args[0]);
    guarded(op->args[1]);
    guarded(op->args[2]);
  }
  void visit_(const te::ReduceNode* op) override {
    bool conditional = op->condition.defined() && !te::is_one(op->condition);
    if (op->condition.defined()) visit(op->condition);
    for (const Expr& s : op->source) conditional ? guarded(s) : visit(s);
    for (const Expr& s : op->init) visit(s);
  }

 private:
  void guarded(const Expr& e) {
    ++guarded_;
    visit(e);
    --guarded_;
  }
  int guarded_ = 0;
};

}  // namespace

void check_reads_in_bounds(const schedule::Schedule& s, const std::string& func) {
  for (const schedule::Stage& st : s->stages) {
    const te::OperationNode& op = *st->op;
    if (op.kind != te::OpKind::kCompute) continue;
    te::IntSetMap dom;
    for (const auto* axes : {&op.axis, &op.reduce_axis})
      for (const te::IterVar& iv : *axes)
        if (iv->dom.min.defined() && iv->dom.extent.defined()) dom[iv->var.get()] = te::IntSet::from_range(iv->dom);
    UnguardedReads finder;
    for (const Expr& b : op.body) finder.visit(b);
    for (const te::ProducerLoadNode* load : finder.reads) {
      const te::TensorNode& t = *load->producer;
      for (size_t d = 0; d < load->indices.size() && d < t.shape.size(); ++d) {
        auto extent = te::as_const_int(t.shape[d]);
        te::IntSet set = te::eval_set(load->indices[d], dom);
        if (!extent || !set.is_bounded()) continue;
        auto lo = te::as_const_int(te::simplify(set.min));
        auto hi = te::as_const_int(te::simplify(set.max));
        if (!lo || !hi || (*lo >= 0 && *hi < *extent)) continue;
        fail("lower '{}': stage '{}' reads tensor '{}' out of bounds: index {} of dimension {} ranges over [{}, {}], "
             "but the extent is {}",
             func, op.name, t.op->name, te::to_string(load->indices[d]), d, *lo, *hi, *extent);
      }
    }
  }
}

}  // namespace loom::lowering
