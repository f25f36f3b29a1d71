// loop_partition: a loop whose body checks conditions linear in the loop variable (a bounds
// guard `if (likely(io*32 + ii < 1000))`, a likely() in a select) is split into a prologue,
// a main part where every such condition is known true and dropped, and an epilogue; the
// edge parts keep the checks, and iterations where a condition fails on every check (tiles
// past the extent) are split off with what it guards dropped. Loops are tried from the
// outermost inward.
//
// A condition on inner loop variables is first relaxed over the inner loops' ranges,
// innermost first (the ranges may depend on the loop being partitioned): the rows guard
// `i.c < 1000` of a register tile, i.c in [io*6, io*6 + 6), partitions the loop over io,
// the tile loop, so that the main part's row loop keeps its constant extent 6. Where the
// relaxed condition is not linear in the loop variable (the tile loop is fused with
// another: floordiv(f, 16)*48 + 47 < 1000), the loop's body is versioned instead,
// `if (likely(cond)) {body without the checks} else {body}`, as Halide guards the steady
// state of a parallel loop.
//
// Loops of a register tile keep their constant extent: an unrolled loop, or a serial loop
// inside a local (register tile) allocation whose variable indexes it, is only split where
// the parts' bounds are constants (a tail of constant extent); otherwise its iterations
// keep their checks, and the tail's indices into the tile stay constants. A short serial
// loop with no iteration free of checks (a row of two tiles, each touching one edge of the
// image) is peeled into its iterations, each at a constant. (A vectorized
// loop checked on its own lanes cannot stay a vector loop either way, and is split.)
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"
#include "loom/te/intrinsics.h"

namespace loom::lowering {

namespace {

using te::IntSet;

Expr strip_likely(const Expr& e) {
  if (const auto* c = e.as<te::CallNode>(); c && c->name == te::intrin::kLikely && c->args.size() == 1) return c->args[0];
  return e;
}

void split_conjuncts(const Expr& e, std::vector<Expr>* out) {
  if (const auto* a = e.as<te::AndNode>()) {
    split_conjuncts(a->a, out);
    split_conjuncts(a->b, out);
  } else {
    out->push_back(e);
  }
}

/// True if `e` is linear in `v`: built from v, terms without v, +, - and * by a term
/// without v.
bool is_linear(const Expr& e, const Var& v) {
  if (!te::expr_uses_var(e, v)) return true;
  if (e.same_as(v)) return true;
  if (const auto* n = e.as<te::AddNode>()) return is_linear(n->a, v) && is_linear(n->b, v);
  if (const auto* n = e.as<te::SubNode>()) return is_linear(n->a, v) && is_linear(n->b, v);
  if (const auto* n = e.as<te::MulNode>()) {
    if (!te::expr_uses_var(n->a, v)) return is_linear(n->b, v);
    if (!te::expr_uses_var(n->b, v)) return is_linear(n->a, v);
    return false;
  }
  if (const auto* n = e.as<te::CastNode>()) return n->dtype.is_integer() && n->value.dtype().is_integer() &&
                                                  n->dtype.bits() >= n->value.dtype().bits() && is_linear(n->value, v);
  return false;
}

/// A loop inside the partitioned loop, around a condition.
struct InnerLoop {
  Var var;
  IntSet range;
};

/// A conjunct of a condition together with the loops (inside the partitioned loop) around
/// it, outermost first.
struct Occurrence {
  Expr cond;
  std::vector<InnerLoop> inner;
};

/// Collects the conditions of a loop body: IfThenElse conditions and likely() arguments,
/// each split into conjuncts, with the inner loops around them.
class ConditionCollector : public IRVisitor {
 public:
  std::vector<Occurrence> found;
  std::unordered_set<const te::VarNode*> defined_inside;

  using IRVisitor::visit;

 protected:
  void visit_(const ForNode* op) override {
    defined_inside.insert(op->loop_var.get());
    visit(op->min);
    visit(op->extent);
    inner_.push_back({op->loop_var, IntSet::from_range(Range(op->min, op->extent))});
    visit(op->body);
    inner_.pop_back();
  }
  void visit_(const LetStmtNode* op) override {
    defined_inside.insert(op->var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const AttrStmtNode* op) override {
    if (op->iter_var.defined()) defined_inside.insert(op->iter_var.var().get());
    IRVisitor::visit_(op);
  }
  void visit_(const te::LetNode* op) override {
    defined_inside.insert(op->var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const IfThenElseNode* op) override {
    add(strip_likely(op->condition));
    IRVisitor::visit_(op);
  }
  void visit_(const te::CallNode* op) override {
    if (op->name == te::intrin::kLikely && op->args.size() == 1) add(op->args[0]);
    IRVisitor::visit_(op);
  }

 private:
  void add(const Expr& cond) {
    std::vector<Expr> parts;
    split_conjuncts(cond, &parts);
    for (const Expr& p : parts) found.push_back({p, inner_});
  }
  std::vector<InnerLoop> inner_;
};

/// Bounds of `e` (the condition as `e < 0`) over every iteration of the loops around its
/// check, in terms of the partitioned loop's variable and the variables outside it: `upper
/// < 0` implies the condition wherever it is checked, `lower >= 0` that it fails wherever
/// it is checked (undefined when unknown).
struct RelaxedBounds {
  Expr upper, lower;
};

/// Nothing when the condition is no integer comparison, reads memory (which the loop may
/// write), or its upper bound still depends on something bound inside.
std::optional<RelaxedBounds> relax(const Occurrence& occ, const std::unordered_set<const te::VarNode*>& defined_inside) {
  const Expr& c = occ.cond;
  Expr e;
  if (const auto* n = c.as<te::LTNode>()) e = n->a - n->b;
  else if (const auto* n = c.as<te::LENode>()) e = n->a - n->b - 1;
  else if (const auto* n = c.as<te::GTNode>()) e = n->b - n->a;
  else if (const auto* n = c.as<te::GENode>()) e = n->b - n->a - 1;
  else return std::nullopt;
  if (!e.dtype().is_int() || !e.dtype().is_scalar()) return std::nullopt;
  bool reads_memory = false;
  te::post_order_visit(e, [&](const Expr& x) { reads_memory |= x.as<te::LoadNode>() || x.as<te::ProducerLoadNode>() || x.as<te::CallNode>(); });
  if (reads_memory) return std::nullopt;
  RelaxedBounds b{te::simplify(e), te::simplify(e)};
  // Innermost first: an inner loop's range may use the variables of the loops around it.
  for (auto it = occ.inner.rbegin(); it != occ.inner.rend(); ++it) {
    te::IntSetMap dom{{it->var.get(), it->range}};
    if (te::expr_uses_var(b.upper, it->var)) b.upper = te::eval_set(b.upper, dom).max;
    if (!b.upper.defined()) return std::nullopt;
    if (b.lower.defined() && te::expr_uses_var(b.lower, it->var)) b.lower = te::eval_set(b.lower, dom).min;
  }
  auto inside = [&](const Expr& x) {
    return te::expr_uses_var(x, [&](const te::VarNode* y) { return defined_inside.count(y) > 0; });
  };
  if (inside(b.upper)) return std::nullopt;
  if (b.lower.defined() && inside(b.lower)) b.lower = Expr();
  return b;
}

/// `bound` as coef*v + offset, coef a non-zero constant.
struct Linear {
  int64_t coef;
  Expr offset;
};

std::optional<Linear> as_linear(const Expr& bound, const Var& v) {
  if (!bound.defined() || !v.dtype().is_int() || !is_linear(bound, v)) return std::nullopt;
  Expr r = te::simplify(te::substitute(bound, {{v.get(), te::make_zero(v.dtype())}}));
  Expr at_one = te::simplify(te::substitute(bound, {{v.get(), te::make_const(v.dtype(), 1)}}));
  auto coef = te::as_const_int(te::simplify(at_one - r));
  if (!coef || *coef == 0 || te::expr_uses_var(r, v)) return std::nullopt;
  return Linear{*coef, r};
}

/// Where a condition holds on every check, `upper(v) < 0`: `v < limit` (prefix, upper
/// growing with v) or `v >= limit` (suffix).
struct TrueRegion {
  bool prefix;
  Expr limit;
};

TrueRegion true_region(const Linear& upper) {
  const Expr& r = upper.offset;
  Expr k = te::make_const(r.dtype(), upper.coef);
  if (upper.coef > 0) {
    // coef*v + r < 0  ⟺  v <= floordiv(-r - 1, coef)
    return TrueRegion{true, te::simplify(te::floordiv(te::make_zero(r.dtype()) - r - 1, k) + 1)};
  }
  // coef*v < -r with coef < 0  ⟺  v > r/(-coef)  ⟺  v >= floordiv(r, -coef) + 1
  return TrueRegion{false, te::simplify(te::floordiv(r, te::make_const(r.dtype(), -upper.coef)) + 1)};
}

/// Where a prefix (suffix) condition fails on every check, `lower(v) >= 0`: `v >= limit`
/// (`v < limit`). Nothing unless `lower` is linear with the same direction.
std::optional<Expr> dead_limit(const Expr& lower, const Var& v, bool prefix) {
  auto l = as_linear(lower, v);
  if (!l || (l->coef > 0) != prefix) return std::nullopt;
  const Expr& r = l->offset;
  if (prefix) {
    // coef*v + r >= 0  ⟺  v >= ceil(-r / coef)
    Expr k = te::make_const(r.dtype(), l->coef);
    return te::simplify(te::floordiv(te::make_zero(r.dtype()) - r + k - 1, k));
  }
  // -k*v + r >= 0  ⟺  v <= floordiv(r, k)
  return te::simplify(te::floordiv(r, te::make_const(r.dtype(), -l->coef)) + 1);
}

/// Replaces the conjuncts in `known_true` by true and makes every condition with a conjunct
/// in `known_false` false, in IfThenElse conditions and likely().
class ConditionRewriter : public IRMutator {
 public:
  using Nodes = std::unordered_set<const te::ExprNode*>;
  ConditionRewriter(const Nodes& known_true, const Nodes& known_false) : true_(known_true), false_(known_false) {}
  using IRMutator::mutate;

 protected:
  Expr rewrite(const Expr& cond) {
    std::vector<Expr> parts, kept;
    split_conjuncts(cond, &parts);
    for (const Expr& p : parts) {
      if (false_.count(p.get())) return te::make_const(cond.dtype(), 0);
      if (!true_.count(p.get())) kept.push_back(p);
    }
    if (kept.size() == parts.size()) return cond;
    if (kept.empty()) return te::make_const(cond.dtype(), 1);
    Expr r = kept[0];
    for (size_t i = 1; i < kept.size(); ++i) r = r && kept[i];
    return r;
  }

  Expr mutate_(const te::CallNode* op) override {
    if (op->name == te::intrin::kLikely && op->args.size() == 1) {
      Expr c = rewrite(mutate(op->args[0]));
      if (te::as_const_int(c)) return c;
      if (c.same_as(op->args[0])) return to_expr(op);
      return te::make<te::CallNode>(op->dtype, op->name, std::vector<Expr>{c});
    }
    return IRMutator::mutate_(op);
  }

  Stmt mutate_(const IfThenElseNode* op) override {
    Expr c = mutate(op->condition);
    if (!c.as<te::CallNode>()) c = rewrite(c);
    if (te::is_one(c)) return mutate(op->then_case);
    if (te::is_zero(c)) return op->else_case.defined() ? mutate(op->else_case) : no_op();
    Stmt t = mutate(op->then_case);
    Stmt e = op->else_case.defined() ? mutate(op->else_case) : Stmt();
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return to_stmt(op);
    return make_stmt<IfThenElseNode>(c, t, e);
  }

 private:
  const Nodes& true_;
  const Nodes& false_;
};

/// True if a load or store of one of `buffers` inside `s` has an index that uses `v`.
bool indexes_buffers(const Stmt& s, const Var& v, const std::unordered_set<const te::VarNode*>& buffers) {
  if (buffers.empty()) return false;
  struct Finder : IRVisitor {
    const Var& v;
    const std::unordered_set<const te::VarNode*>& buffers;
    bool found = false;
    Finder(const Var& v, const std::unordered_set<const te::VarNode*>& b) : v(v), buffers(b) {}
    using IRVisitor::visit;
    void visit_(const te::LoadNode* op) override {
      found |= buffers.count(op->buffer_var.get()) && te::expr_uses_var(op->index, v);
      IRVisitor::visit_(op);
    }
    void visit_(const StoreNode* op) override {
      found |= buffers.count(op->buffer_var.get()) && te::expr_uses_var(op->index, v);
      IRVisitor::visit_(op);
    }
  } f(v, buffers);
  f.visit(s);
  return f.found;
}

Stmt make_loop(const ForNode* op, Expr min, Expr extent, Stmt body) {
  auto n = std::make_shared<ForNode>(op->loop_var, std::move(min), std::move(extent), op->for_kind, std::move(body),
                                     op->thread_tag);
  n->annotations = op->annotations;
  return Stmt(std::move(n));
}

/// What the conditions of one loop body allow.
struct Plan {
  ConditionRewriter::Nodes solved;     // linear: the main part drops them
  ConditionRewriter::Nodes versioned;  // not linear: the body is versioned on them
  ConditionRewriter::Nodes prefix, suffix;  // the solved ones true below / above a limit
  std::vector<Expr> lo_bounds, hi_bounds;   // where the solved ones hold
  std::vector<Expr> version_conds;          // where the versioned ones hold
  /// v >= dead_from: every prefix conjunct fails on every check; v < dead_until: every
  /// suffix conjunct does. Undefined when unknown.
  Expr dead_from, dead_until;
};

Plan plan_loop(const ForNode* op) {
  ConditionCollector cc;
  cc.visit(op->body);
  const Var& v = op->loop_var;
  struct Conjunct {
    bool unusable = false;
    bool linear = true;
    bool inside_inner_loops = true;  // every check of it uses an inner loop's variable
    std::vector<Expr> holds;         // where each check holds (versioning)
    std::vector<TrueRegion> regions;
    std::vector<Expr> dead;          // where each check fails, undefined when unknown
  };
  std::unordered_map<const te::ExprNode*, Conjunct> by_node;
  std::vector<const te::ExprNode*> order;
  for (const Occurrence& occ : cc.found) {
    auto [it, fresh] = by_node.try_emplace(occ.cond.get());
    if (fresh) order.push_back(occ.cond.get());
    Conjunct& c = it->second;
    std::optional<RelaxedBounds> b = relax(occ, cc.defined_inside);
    // A conjunct is dropped only where every check of it is known true; one that this
    // loop does not decide is left to the loops inside.
    if (!b || !te::expr_uses_var(b->upper, v)) {
      c.unusable = true;
      continue;
    }
    c.inside_inner_loops &= te::expr_uses_var(occ.cond, [&](const te::VarNode* x) {
      for (const InnerLoop& l : occ.inner)
        if (l.var.get() == x) return true;
      return false;
    });
    c.holds.push_back(te::simplify(b->upper < te::make_zero(b->upper.dtype())));
    auto upper = as_linear(b->upper, v);
    if (!upper) {
      c.linear = false;
      continue;
    }
    TrueRegion r = true_region(*upper);
    c.regions.push_back(r);
    c.dead.push_back(dead_limit(b->lower, v, r.prefix).value_or(Expr()));
  }
  Plan p;
  bool dead_from_known = true, dead_until_known = true;
  for (const te::ExprNode* n : order) {
    const Conjunct& c = by_node.at(n);
    if (c.unusable) continue;
    if (c.linear) {
      p.solved.insert(n);
      bool all_prefix = true, all_suffix = true;
      for (size_t i = 0; i < c.regions.size(); ++i) {
        const TrueRegion& r = c.regions[i];
        (r.prefix ? p.hi_bounds : p.lo_bounds).push_back(r.limit);
        all_prefix &= r.prefix;
        all_suffix &= !r.prefix;
        Expr& dead = r.prefix ? p.dead_from : p.dead_until;
        bool& known = r.prefix ? dead_from_known : dead_until_known;
        if (!c.dead[i].defined()) known = false;
        else if (known) dead = !dead.defined() ? c.dead[i] : r.prefix ? te::max(dead, c.dead[i]) : te::min(dead, c.dead[i]);
      }
      if (all_prefix) p.prefix.insert(n);
      else if (all_suffix) p.suffix.insert(n);
      else dead_from_known = dead_until_known = false;
      continue;
    }
    // A version check lifted out of no loop would cost what the check itself costs.
    if (!c.inside_inner_loops) continue;
    p.versioned.insert(n);
    for (const Expr& h : c.holds) {
      bool seen = false;
      for (const Expr& k : p.version_conds) seen |= te::structural_equal(k, h);
      if (!seen) p.version_conds.push_back(h);
    }
  }
  p.dead_from = dead_from_known && p.dead_from.defined() ? te::simplify(p.dead_from) : Expr();
  p.dead_until = dead_until_known && p.dead_until.defined() ? te::simplify(p.dead_until) : Expr();
  return p;
}

/// A serial loop of at most this many iterations, none of them free of checks, is peeled
/// whole.
constexpr int64_t kMaxPeeled = 4;

class LoopPartitioner : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const AllocateNode* op) override {
    if (op->scope != "local") return IRMutator::mutate_(op);
    bool added = local_buffers_.insert(op->buffer_var.get()).second;
    Stmt s = IRMutator::mutate_(op);
    if (added) local_buffers_.erase(op->buffer_var.get());
    return s;
  }

  Stmt mutate_(const ForNode* op) override {
    if (op->for_kind == ForKind::kThreadBinding) return IRMutator::mutate_(op);
    Plan p = plan_loop(op);
    if (p.solved.empty() && p.versioned.empty()) return IRMutator::mutate_(op);

    // A vectorized loop checked on its own lanes runs serially whether it is split or not;
    // split, its dead iterations (a tile past the extent) cost nothing.
    const bool vectorized = op->for_kind == ForKind::kVectorized;
    const bool tile_loop = !vectorized && (op->for_kind == ForKind::kUnrolled ||
                                           indexes_buffers(op->body, op->loop_var, local_buffers_));
    const bool constant_extent = tile_loop && te::as_const_int(op->extent).has_value();
    // Where a loop of constant extent may be split.
    auto splits_at = [&](const Expr& point) { return !constant_extent || te::as_const_int(point).has_value(); };

    Stmt body = op->body;
    if (!p.versioned.empty() && !tile_loop && !vectorized) {
      Expr cond = p.version_conds[0];
      for (size_t i = 1; i < p.version_conds.size(); ++i) cond = cond && p.version_conds[i];
      Stmt steady = ConditionRewriter(p.versioned, {}).mutate(body);
      body = make_stmt<IfThenElseNode>(te::call(DataType::Bool(), te::intrin::kLikely, {cond}), steady, body);
    }
    if (!p.solved.empty()) {
      Expr begin = op->min, end = te::simplify(op->min + op->extent);
      Expr lo = begin, hi = end;
      for (const Expr& b : p.lo_bounds) lo = te::max(lo, b);
      for (const Expr& b : p.hi_bounds) hi = te::min(hi, b);
      lo = te::simplify(te::min(lo, end));
      hi = te::simplify(te::max(hi, lo));
      if (splits_at(lo) && splits_at(hi) && !te::is_zero(te::simplify(hi - lo))) {
        // [begin, dead_lo) dead, [dead_lo, lo) edge, [lo, hi) main, [hi, dead_hi) edge, [dead_hi, end) dead.
        Expr dead_lo = begin, dead_hi = end;
        if (p.dead_until.defined()) dead_lo = te::simplify(te::min(lo, te::max(begin, p.dead_until)));
        if (p.dead_from.defined()) dead_hi = te::simplify(te::max(hi, te::min(end, p.dead_from)));
        if (!splits_at(dead_lo)) dead_lo = begin;
        if (!splits_at(dead_hi)) dead_hi = end;
        std::vector<Stmt> parts;
        auto add = [&](const Expr& from, const Expr& to, const auto& make) {
          Expr extent = te::simplify(to - from);
          if (te::is_zero(extent)) return;
          Stmt part = make(from, extent);
          if (!is_no_op(part)) parts.push_back(std::move(part));
        };
        // What is left of a dead part (a local tile's allocation around nothing) goes too:
        // storage_rewrite would hoist an empty allocation to the function's entry.
        auto dead = [&](const ConditionRewriter::Nodes& failing) {
          return [&, failing](const Expr& from, const Expr& extent) {
            return remove_no_op(make_loop(op, from, extent, ConditionRewriter({}, failing).mutate(op->body)));
          };
        };
        auto edge = [&](const Expr& from, const Expr& extent) { return this->edge(op, from, extent); };
        add(begin, dead_lo, dead(p.suffix));
        add(dead_lo, lo, edge);
        add(lo, hi, [&](const Expr& from, const Expr& extent) {
          return make_loop(op, from, extent, mutate(ConditionRewriter(p.solved, {}).mutate(body)));
        });
        add(hi, dead_hi, edge);
        add(dead_hi, end, dead(p.prefix));
        return seq(std::move(parts));
      }
      auto n = te::as_const_int(op->extent);
      if (n && *n <= kMaxPeeled && op->for_kind == ForKind::kSerial && te::is_zero(te::simplify(hi - lo))) {
        // No iteration is free of checks (two tiles, each with an edge of the image): each
        // iteration becomes its body at a constant, where the checks fold.
        std::vector<Stmt> parts;
        for (int64_t i = 0; i < *n; ++i)
          parts.push_back(
              edge(op, te::simplify(op->min + te::make_const(op->min.dtype(), i)), te::make_const(op->extent.dtype(), 1)));
        return seq(std::move(parts));
      }
    }
    if (body.same_as(op->body)) return IRMutator::mutate_(op);
    return make_loop(op, op->min, op->extent, mutate(body));
  }

 private:
  /// An edge part of `op`: [min, min + extent) with the checks kept. A single iteration
  /// becomes the body at that value, so that the loops inside see constant bounds.
  Stmt edge(const ForNode* op, const Expr& min, const Expr& extent) {
    if (te::is_one(extent)) return mutate(simplify(substitute(op->body, {{op->loop_var.get(), min}})));
    return make_loop(op, min, extent, mutate(op->body));
  }

  std::unordered_set<const te::VarNode*> local_buffers_;  // local allocations in scope
};

}  // namespace

Stmt loop_partition(const Stmt& s) { return simplify(LoopPartitioner().mutate(s)); }

}  // namespace loom::lowering
