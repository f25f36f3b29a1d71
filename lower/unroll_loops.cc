// unroll_loops: unrolled loops of constant extent (and loops under pragma_unroll_explicit)
// become copies of their body, one per iteration with the loop variable made a constant.
// Inside a loop with the pragma auto_unroll_max_step = N (itself included; simplify keeps the
// pragma of a unit loop it removes as an AttrStmt, which this pass drops), a serial loop of
// constant extent whose body has no loop left is unrolled too when extent × (stores in its
// body) ≤ N: innermost first, so a small nest unrolls whole (TVM's auto_max_step).
#include <algorithm>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"

namespace loom::lowering {

namespace {

bool has_loop(const Stmt& s) {
  bool found = false;
  post_order_visit(s, [&](const Stmt& x) { found |= x.kind() == StmtKind::For; });
  return found;
}

int64_t count_stores(const Stmt& s) {
  int64_t n = 0;
  post_order_visit(s, [&](const Stmt& x) { n += x.kind() == StmtKind::Store; });
  return n;
}

class LoopUnroller : public IRMutator {
 public:
  explicit LoopUnroller(int auto_max_extent) : auto_max_extent_(auto_max_extent) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key != attr::kAutoUnrollMaxStep) return IRMutator::mutate_(op);
    const int64_t outer_max_step = max_step_;
    max_step_ = te::as_const_int(op->value).value_or(0);
    Stmt body = mutate(op->body);
    max_step_ = outer_max_step;
    return body;
  }

  Stmt mutate_(const ForNode* op) override {
    bool is_innermost = !has_loop(op->body);
    const int64_t outer_max_step = max_step_;
    if (auto it = op->annotations.find(attr::kAutoUnrollMaxStep); it != op->annotations.end())
      max_step_ = te::as_const_int(it->second).value_or(0);
    Stmt s = IRMutator::mutate_(op);
    const int64_t max_step = max_step_;
    max_step_ = outer_max_step;
    const auto* f = s.as<ForNode>();
    if (!f) return s;
    auto n = te::as_const_int(f->extent);
    bool explicit_pragma = false;
    if (auto it = f->annotations.find("pragma_unroll_explicit"); it != f->annotations.end())
      explicit_pragma = te::as_const_int(it->second).value_or(0) != 0;
    const bool auto_step = max_step > 0 && f->for_kind == ForKind::kSerial && n && *n >= 1 && !has_loop(f->body) &&
                           *n * std::max<int64_t>(1, count_stores(f->body)) <= max_step;
    bool want = f->for_kind == ForKind::kUnrolled || explicit_pragma || auto_step ||
                (auto_max_extent_ > 0 && f->for_kind == ForKind::kSerial && is_innermost && n && *n <= auto_max_extent_);
    if (!want || (f->for_kind != ForKind::kUnrolled && f->for_kind != ForKind::kSerial)) return s;
    if (!n) {
      if (f->for_kind == ForKind::kSerial) return s;
      auto m = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, ForKind::kSerial, f->body, f->thread_tag);
      m->annotations = f->annotations;
      return Stmt(std::move(m));
    }
    std::vector<Stmt> copies;
    copies.reserve(size_t(std::max<int64_t>(*n, 0)));
    for (int64_t i = 0; i < *n; ++i) {
      Expr value = f->min + te::make_const(f->loop_var.dtype(), i);
      copies.push_back(substitute(f->body, {{f->loop_var.get(), value}}));
    }
    return simplify(seq(std::move(copies)));
  }

 private:
  int auto_max_extent_;
  int64_t max_step_ = 0;  // of the innermost enclosing auto_unroll_max_step pragma; 0: none
};

}  // namespace

Stmt unroll_loops(const Stmt& s, int auto_max_extent) { return LoopUnroller(auto_max_extent).mutate(s); }

}  // namespace loom::lowering
