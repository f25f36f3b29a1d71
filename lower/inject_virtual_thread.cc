// inject_virtual_thread: virtual threads become interleaved copies of work in one thread.
//
// A thread_extent (or virtual_thread) attribute whose tag starts with "vthread" and whose
// extent n is constant is removed. Below it, as in TVM's InjectVirtualThread:
//  - variables and buffers that depend on the vthread variable are "touched" (a let whose
//    value reads a touched variable, a buffer stored with a touched index or value);
//  - a buffer allocated below the attribute and touched is expanded ×n: virtual thread t
//    uses elements [t * size, (t + 1) * size);
//  - the smallest statements that read a touched variable or buffer are replicated n times
//    with the vthread variable replaced by 0 … n-1 (a serial loop when n > 16); loops and
//    branches that do not depend on it stay shared, so a cooperative fetch into shared
//    memory inside the vthread scope still runs once.
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

using VarSet = std::unordered_set<const te::VarNode*>;

bool is_vthread(const AttrStmtNode* op) {
  if (op->key != attr::kThreadExtent && op->key != attr::kVirtualThread) return false;
  return op->iter_var.defined() && op->iter_var->thread_tag.rfind("vthread", 0) == 0;
}

/// Variables and buffers (including loaded ones) an expression or statement reads.
class UseCollector : public IRVisitor {
 public:
  VarSet vars;
  using IRVisitor::visit;

 protected:
  void visit_(const te::VarNode* op) override { vars.insert(op); }
  void visit_(const te::LoadNode* op) override {
    vars.insert(op->buffer_var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const StoreNode* op) override {
    vars.insert(op->buffer_var.get());
    IRVisitor::visit_(op);
  }
};

VarSet uses(const Expr& e) {
  UseCollector c;
  if (e.defined()) c.visit(e);
  return std::move(c.vars);
}

/// Everything that depends on `v` in `body`: a fixpoint over let, loop and store edges.
class TouchedAnalysis : public IRVisitor {
 public:
  VarSet run(const Stmt& body, const Var& v) {
    visit(body);
    VarSet touched{v.get()};
    bool changed = true;
    while (changed) {
      changed = false;
      for (const auto& [dst, srcs] : edges_) {
        if (touched.count(dst)) continue;
        for (const te::VarNode* s : srcs) {
          if (touched.count(s)) {
            touched.insert(dst);
            changed = true;
            break;
          }
        }
      }
    }
    return touched;
  }

  using IRVisitor::visit;

 protected:
  void visit_(const LetStmtNode* op) override {
    add(op->var.get(), uses(op->value));
    IRVisitor::visit_(op);
  }
  void visit_(const ForNode* op) override {
    VarSet s = uses(op->min);
    for (auto* x : uses(op->extent)) s.insert(x);
    add(op->loop_var.get(), s);
    IRVisitor::visit_(op);
  }
  void visit_(const StoreNode* op) override {
    VarSet s = uses(op->value);
    for (auto* x : uses(op->index)) s.insert(x);
    for (auto* x : uses(op->predicate)) s.insert(x);
    add(op->buffer_var.get(), s);
    IRVisitor::visit_(op);
  }
  void visit_(const te::LetNode* op) override {
    add(op->var.get(), uses(op->value));
    IRVisitor::visit_(op);
  }

 private:
  void add(const te::VarNode* dst, const VarSet& srcs) {
    auto& e = edges_[dst];
    e.insert(srcs.begin(), srcs.end());
  }
  std::unordered_map<const te::VarNode*, VarSet> edges_;
};

/// Offsets every access of an expanded buffer by v * size.
class RemapIndex : public IRMutator {
 public:
  RemapIndex(const Var& v, const std::unordered_map<const te::VarNode*, int64_t>& remap) : v_(v), remap_(remap) {}

 protected:
  Expr mutate_(const te::LoadNode* op) override {
    Expr e = IRMutator::mutate_(op);
    auto it = remap_.find(op->buffer_var.get());
    if (it == remap_.end()) return e;
    const auto* l = e.as<te::LoadNode>();
    return te::make<te::LoadNode>(l->dtype, l->buffer_var, offset(l->index, it->second), l->predicate);
  }
  Stmt mutate_(const StoreNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    auto it = remap_.find(op->buffer_var.get());
    if (it == remap_.end()) return s;
    const auto* st = s.as<StoreNode>();
    return make_stmt<StoreNode>(st->buffer_var, st->value, offset(st->index, it->second), st->predicate);
  }

 private:
  Expr offset(const Expr& index, int64_t size) {
    Expr off = te::cast(index.dtype().element_of(), v_) * te::make_const(index.dtype().element_of(), size);
    if (index.dtype().lanes() > 1) off = te::make<te::BroadcastNode>(off, index.dtype().lanes());
    return index + off;
  }
  Var v_;
  const std::unordered_map<const te::VarNode*, int64_t>& remap_;
};

class VThreadInjector {
 public:
  VThreadInjector(Var v, int64_t n, VarSet touched) : v_(std::move(v)), n_(n), touched_(std::move(touched)) {}

  Stmt mutate(const Stmt& s) {
    if (!s.defined()) return s;
    switch (s.kind()) {
      case StmtKind::For: {
        const auto* op = s.as<ForNode>();
        if (touches(op->min) || touches(op->extent)) return replicate(s);
        auto n = std::make_shared<ForNode>(*op);
        n->body = mutate(op->body);
        return Stmt(std::move(n));
      }
      case StmtKind::LetStmt: {
        const auto* op = s.as<LetStmtNode>();
        // A let of a touched value is inlined so that only its uses are replicated.
        if (touches(op->value)) return mutate(substitute(op->body, {{op->var.get(), op->value}}));
        return make_stmt<LetStmtNode>(op->var, op->value, mutate(op->body));
      }
      case StmtKind::AttrStmt: {
        const auto* op = s.as<AttrStmtNode>();
        if (touches(op->value)) return replicate(s);
        return make_stmt<AttrStmtNode>(op->iter_var, op->var, op->key, op->value, mutate(op->body));
      }
      case StmtKind::IfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        if (touches(op->condition)) return replicate(s);
        return make_stmt<IfThenElseNode>(op->condition, mutate(op->then_case), mutate(op->else_case));
      }
      case StmtKind::While: {
        const auto* op = s.as<WhileNode>();
        if (touches(op->condition)) return replicate(s);
        return make_stmt<WhileNode>(op->condition, mutate(op->body));
      }
      case StmtKind::Allocate: {
        const auto* op = s.as<AllocateNode>();
        if (!touched_.count(op->buffer_var.get())) return make_stmt<AllocateNode>(op->buffer_var, op->dtype, op->extents, op->scope, mutate(op->body));
        auto size = te::as_const_int(te::simplify(op->size()));
        LOOM_CHECK(size.has_value(), "virtual thread: buffer '{}' allocated under a vthread needs a constant size",
                   op->buffer_var.name());
        int64_t stride = *size * op->dtype.lanes();
        remap_[op->buffer_var.get()] = stride;
        Expr total = te::make_const(DataType::Int(32), stride * n_);
        return make_stmt<AllocateNode>(op->buffer_var, op->dtype, std::vector<Expr>{total}, op->scope, mutate(op->body));
      }
      case StmtKind::Seq: {
        std::vector<Stmt> parts;
        for (const Stmt& p : s.as<SeqStmtNode>()->seq) parts.push_back(mutate(p));
        return seq(std::move(parts));
      }
      default:
        return touches(s) ? replicate(s) : s;
    }
  }

 private:
  bool touches(const Expr& e) const {
    if (!e.defined()) return false;
    for (const auto* x : uses(e))
      if (touched_.count(x)) return true;
    return false;
  }
  bool touches(const Stmt& s) const {
    UseCollector c;
    c.visit(s);
    for (const auto* x : c.vars)
      if (touched_.count(x)) return true;
    return false;
  }

  Stmt replicate(const Stmt& s) {
    Stmt body = RemapIndex(v_, remap_).mutate(s);
    if (n_ > kMaxUnroll) {
      Var i(v_.name() + ".s", v_.dtype());
      return make_stmt<ForNode>(i, te::make_zero(v_.dtype()), te::make_const(v_.dtype(), n_), ForKind::kSerial,
                                substitute(body, {{v_.get(), i}}));
    }
    std::vector<Stmt> copies;
    for (int64_t t = 0; t < n_; ++t) copies.push_back(substitute(body, {{v_.get(), te::make_const(v_.dtype(), t)}}));
    return seq(std::move(copies));
  }

  static constexpr int64_t kMaxUnroll = 16;
  Var v_;
  int64_t n_;
  VarSet touched_;
  std::unordered_map<const te::VarNode*, int64_t> remap_;
};

class InjectVirtualThread : public IRMutator {
 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    if (!is_vthread(op)) return s;
    const auto* a = s.as<AttrStmtNode>();
    auto n = te::as_const_int(te::simplify(a->value));
    LOOM_CHECK(n.has_value() && *n >= 1, "virtual thread '{}' needs a constant positive extent, got {}",
               a->iter_var.name(), te::to_string(a->value));
    const Var& v = a->iter_var.var();
    if (*n == 1) return substitute(a->body, {{v.get(), te::make_zero(v.dtype())}});
    VarSet touched = TouchedAnalysis().run(a->body, v);
    return VThreadInjector(v, *n, std::move(touched)).mutate(a->body);
  }
};

}  // namespace

Stmt inject_virtual_thread(const Stmt& s) { return InjectVirtualThread().mutate(s); }

}  // namespace loom::lowering
