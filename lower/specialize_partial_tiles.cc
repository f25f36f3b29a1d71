// specialize_partial_tiles: when the unrolled or vectorized loops of a tile have extents
// like min(X, c) (c for every full tile, less for the last tile of a split that does not
// divide, X depending only on which tile it is), the body of the loop that picks the tile
// is versioned:
//   if (X >= c) { body with min(X, c) replaced by c } else { body }
// so that full tiles, nearly all of them, have constant extents for unroll_loops and
// vectorize_loops (and a register tile stays in registers), and only the last tile runs the
// general code. loop_partition cannot peel that tile off when the tile loop is fused with
// another: it is then every n-th iteration of the fused loop. Halide's loop partitioning
// keeps its steady state under a likely() condition in the same way.
#include <algorithm>
#include <optional>
#include <unordered_set>
#include <vector>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/intrinsics.h"
#include "loom/te/expr_functor.h"

namespace loom::lowering {

namespace {

/// Conditions of one versioned body: at most this many partial extents at once, so the
/// body is copied once, not once per combination.
constexpr size_t kMaxConditions = 2;

/// min(X, c) with c a constant (either operand order): X and c, or nothing.
std::optional<std::pair<Expr, int64_t>> partial_extent(const Expr& e) {
  const auto* m = e.as<te::MinNode>();
  if (!m) return std::nullopt;
  if (auto c = te::as_const_int(m->b); c && !te::as_const_int(m->a)) return std::make_pair(m->a, *c);
  if (auto c = te::as_const_int(m->a); c && !te::as_const_int(m->b)) return std::make_pair(m->b, *c);
  return std::nullopt;
}

/// Every min(X, c) inside `e`.
void collect_mins(const Expr& e, std::vector<Expr>* out) {
  te::post_order_visit(e, [&](const Expr& x) {
    if (partial_extent(x)) out->push_back(x);
  });
}

/// The variables that statements inside `s` bind (loops, lets, buffers).
std::unordered_set<const te::VarNode*> bound_inside(const Stmt& s) {
  std::unordered_set<const te::VarNode*> vars;
  post_order_visit(s, [&](const Stmt& x) {
    if (const auto* f = x.as<ForNode>()) vars.insert(f->loop_var.get());
    if (const auto* l = x.as<LetStmtNode>()) vars.insert(l->var.get());
    if (const auto* a = x.as<AllocateNode>()) vars.insert(a->buffer_var.get());
  });
  return vars;
}

bool uses_any(const Expr& e, const std::unordered_set<const te::VarNode*>& vars) {
  bool found = false;
  te::post_order_visit(e, [&](const Expr& x) {
    if (const auto* v = x.as<te::VarNode>(); v && vars.count(v)) found = true;
  });
  return found;
}

/// Replaces the chosen min(X, c) expressions by c.
class ReplaceMins : public IRMutator {
 public:
  explicit ReplaceMins(const std::vector<Expr>& mins) : mins_(mins) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const te::MinNode* op) override {
    Expr self = te::ExprMutator::mutate_(op);
    for (const Expr& m : mins_)
      if (te::structural_equal(self, m)) return te::make_const(self.dtype(), partial_extent(m)->second);
    return self;
  }

 private:
  const std::vector<Expr>& mins_;
};

class Specializer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const ForNode* op) override {
    std::vector<Expr> chosen = partial_extents_decided_by(op);
    Stmt body = op->body;
    if (!chosen.empty()) {
      Expr cond;
      for (const Expr& m : chosen) {
        auto [x, c] = *partial_extent(m);
        Expr full = x >= te::make_const(x.dtype(), c);
        cond = cond.defined() ? (cond && full) : full;
      }
      for (const Expr& m : chosen) versioned_.push_back(m);
      Stmt full_tile = mutate(ReplaceMins(chosen).mutate(body));
      Stmt any_tile = mutate(body);
      versioned_.resize(versioned_.size() - chosen.size());
      body = make_stmt<IfThenElseNode>(te::call(DataType::Bool(), te::intrin::kLikely, {cond}), full_tile, any_tile);
    } else {
      body = mutate(body);
    }
    if (body.same_as(op->body)) return to_stmt(op);
    auto n = std::make_shared<ForNode>(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    n->annotations = op->annotations;
    return Stmt(std::move(n));
  }

 private:
  /// The min(X, c) extents of unrolled or vectorized loops inside `loop` whose X is fixed
  /// once `loop`'s variable is: X uses it and nothing bound inside the body.
  std::vector<Expr> partial_extents_decided_by(const ForNode* loop) {
    if (loop->for_kind == ForKind::kThreadBinding) return {};
    std::unordered_set<const te::VarNode*> inner = bound_inside(loop->body);
    std::vector<Expr> found;
    post_order_visit(loop->body, [&](const Stmt& x) {
      const auto* f = x.as<ForNode>();
      if (!f || (f->for_kind != ForKind::kUnrolled && f->for_kind != ForKind::kVectorized)) return;
      std::vector<Expr> mins;
      collect_mins(f->extent, &mins);
      for (const Expr& m : mins) {
        const Expr& x_part = partial_extent(m)->first;
        if (!te::expr_uses_var(x_part, loop->loop_var) || uses_any(x_part, inner)) continue;
        auto same = [&](const Expr& o) { return te::structural_equal(o, m); };
        if (std::any_of(found.begin(), found.end(), same) || std::any_of(versioned_.begin(), versioned_.end(), same))
          continue;
        found.push_back(m);
      }
    });
    if (found.size() > kMaxConditions) found.resize(kMaxConditions);
    return found;
  }

  std::vector<Expr> versioned_;  // conditions of the enclosing versions
};

}  // namespace

Stmt specialize_partial_tiles(const Stmt& s) { return Specializer().mutate(s); }

}  // namespace loom::lowering
