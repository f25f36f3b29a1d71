// tensorize: the loop nests under tensorized axes (Stage::tensorize) become the tensor
// intrinsic's implementation. Runs after storage_flatten, on flat loads and stores.
//
// schedule_ops marks the loop of a tensorized axis with an attr::kTensorize attribute (value
// 0 where the stage computes, 1 where it initializes a reduction). The nest under a marker
// must be, after simplification:
//   - the intrinsic's loops, in its order (spatial axes, then reduce axes), with the same
//     constant extents: for the computing part of a reduction either all of them around the
//     update, or the spatial ones around { init; reduce loops { update } } (the whole
//     reduction inside the intrinsic); for the initializing part the spatial ones;
//   - at the bottom one store, perhaps under the bounds guard of a split that does not
//     divide, whose value has the intrinsic's expression: the same operations, types and
//     constants, with each read of an intrinsic input (and of its output) a load of some
//     buffer at offset + Σ stride·axis over the intrinsic's axes. The offsets and strides,
//     expressions of the loops outside, are the BufferRegions the implementation receives.
// Anything else is a loom::Error naming the stage, the axis and the part that differs. An
// update that reads an input zero-padded inline, select(c, x, 0) with c invariant over the
// intrinsic's loops, matches with x and runs under if (c): taps on the padding are skipped.
//
// A guarded nest keeps its loops for the tiles the guard cuts short: the replacement is
//   if (likely(the guard holds for every point of the tile)) { intrinsic } else { the loops }
// and loop_partition later peels the partial tiles off, leaving the intrinsic alone in the
// main part.
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"
#include "loom/te/expr_functor.h"
#include "loom/te/intrinsics.h"

namespace loom::lowering {

namespace {

using te::BufferRegion;
using te::IterVar;
using te::TensorIntrin;

struct TensorizedAxis {
  std::string stage;
  IterVar axis;
  TensorIntrin intrin;
};

std::string loops_str(const std::vector<const ForNode*>& loops) {
  std::string s = "(";
  for (size_t i = 0; i < loops.size(); ++i)
    s += fmt::format("{}{}: {}", i ? ", " : "", loops[i]->loop_var.name(), te::to_string(loops[i]->extent));
  return s + ")";
}

std::string axes_str(const std::vector<IterVar>& axes) {
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i)
    s += fmt::format("{}{}: {}", i ? ", " : "", axes[i].name(), te::to_string(axes[i]->dom.extent));
  return s + ")";
}

/// The statements of `s` other than the assertions of LowerOptions::check_accesses (an
/// AssertStmt with an empty body), which the intrinsic does not make.
std::vector<Stmt> parts_without_checks(const Stmt& s) {
  std::vector<Stmt> parts;
  auto keep = [&](const Stmt& p) {
    const auto* a = p.as<AssertStmtNode>();
    if (!(a && is_no_op(a->body))) parts.push_back(p);
  };
  if (const auto* q = s.as<SeqStmtNode>()) {
    for (const Stmt& p : q->seq) keep(p);
  } else {
    keep(s);
  }
  return parts;
}

/// The loops at the top of `s`; `*rest` receives what they enclose.
std::vector<const ForNode*> peel_loops(Stmt s, Stmt* rest) {
  std::vector<const ForNode*> loops;
  while (const auto* f = s.as<ForNode>()) {
    loops.push_back(f);
    s = f->body;
  }
  *rest = s;
  return loops;
}

/// A store at the bottom of a nest, with its bounds guard.
struct GuardedStore {
  Expr guard;  // undefined: none
  const StoreNode* store = nullptr;
};

/// Binds decl tensors to buffer regions while matching the stage's expressions with the
/// intrinsic's declaration.
class Matcher {
 public:
  /// `axis_vars[i]` (an axis of the intrinsic) is the loop `loops[i]` of the stage.
  Matcher(const std::vector<IterVar>& axes, const std::vector<const ForNode*>& loops) {
    for (size_t i = 0; i < axes.size(); ++i) {
      axis_to_loop_[axes[i].var().get()] = loops[i];
      at_min_[loops[i]->loop_var.get()] = loops[i]->min;
    }
  }

  /// A binding of a decl tensor: buffer, offset and strides.
  struct Binding {
    Var data;
    Expr offset;
    std::vector<Expr> strides;
    std::string buffer_name;
  };

  /// What differs, when matching fails, and how deep in the expression.
  struct Mismatch {
    Expr stage, decl;
    std::string why;
    int depth = 0;
  };

  /// Matches a stage expression with a decl expression; nullopt on success.
  std::optional<Mismatch> match(const Expr& s, const Expr& d) {
    ++depth_;
    std::optional<Mismatch> m = match_(s, d);
    if (m && m->depth == 0) m->depth = depth_;
    --depth_;
    return m;
  }

 private:
  std::optional<Mismatch> match_(const Expr& s, const Expr& d) {
    if (const auto* load = d.as<te::ProducerLoadNode>()) {
      const auto* sl = s.as<te::LoadNode>();
      if (!sl) return Mismatch{s, d, "not a load"};
      if (sl->dtype != load->dtype)
        return Mismatch{s, d, fmt::format("it loads {}, the intrinsic {}", sl->dtype.str(), load->dtype.str())};
      if (sl->predicate.defined()) return Mismatch{s, d, "a predicated load"};
      return bind(te::Tensor(load->producer), sl->buffer_var, sl->index, load->indices, s, d);
    }
    if (const auto* v = d.as<te::VarNode>()) {
      auto it = axis_to_loop_.find(v);
      if (it != axis_to_loop_.end()) {
        if (s.same_as(it->second->loop_var)) return std::nullopt;
        return Mismatch{s, d, fmt::format("the intrinsic uses its axis '{}' (loop '{}' here)", v->name,
                                          it->second->loop_var.name())};
      }
      return s.same_as(d) ? std::nullopt : std::optional<Mismatch>(Mismatch{s, d, "a different variable"});
    }
    if (s.kind() != d.kind()) return Mismatch{s, d, "a different operation"};
    if (s.dtype() != d.dtype())
      return Mismatch{s, d, fmt::format("of type {}, the intrinsic's of type {}", s.dtype().str(), d.dtype().str())};
    switch (d.kind()) {
      case te::ExprKind::IntImm:
        return s.as<te::IntImmNode>()->value == d.as<te::IntImmNode>()->value ? std::nullopt
                                                                              : std::optional(Mismatch{s, d, "a different constant"});
      case te::ExprKind::FloatImm:
        return s.as<te::FloatImmNode>()->value == d.as<te::FloatImmNode>()->value
                   ? std::nullopt
                   : std::optional(Mismatch{s, d, "a different constant"});
      case te::ExprKind::StringImm:
        return s.as<te::StringImmNode>()->value == d.as<te::StringImmNode>()->value
                   ? std::nullopt
                   : std::optional(Mismatch{s, d, "a different string"});
#define LOOM_BINARY(K, N, COMMUTES) \
  case te::ExprKind::K:             \
    return binary(s.as<te::N>()->a, s.as<te::N>()->b, d.as<te::N>()->a, d.as<te::N>()->b, COMMUTES);
      LOOM_BINARY(Add, AddNode, true)
      LOOM_BINARY(Sub, SubNode, false)
      LOOM_BINARY(Mul, MulNode, true)
      LOOM_BINARY(Div, DivNode, false)
      LOOM_BINARY(Mod, ModNode, false)
      LOOM_BINARY(FloorDiv, FloorDivNode, false)
      LOOM_BINARY(FloorMod, FloorModNode, false)
      LOOM_BINARY(Min, MinNode, true)
      LOOM_BINARY(Max, MaxNode, true)
      LOOM_BINARY(EQ, EQNode, true)
      LOOM_BINARY(NE, NENode, true)
      LOOM_BINARY(LT, LTNode, false)
      LOOM_BINARY(LE, LENode, false)
      LOOM_BINARY(GT, GTNode, false)
      LOOM_BINARY(GE, GENode, false)
      LOOM_BINARY(And, AndNode, true)
      LOOM_BINARY(Or, OrNode, true)
#undef LOOM_BINARY
      case te::ExprKind::Not: return match(s.as<te::NotNode>()->a, d.as<te::NotNode>()->a);
      case te::ExprKind::Cast: return match(s.as<te::CastNode>()->value, d.as<te::CastNode>()->value);
      case te::ExprKind::Select: {
        const auto *x = s.as<te::SelectNode>(), *y = d.as<te::SelectNode>();
        if (auto m = match(x->cond, y->cond)) return m;
        if (auto m = match(x->true_value, y->true_value)) return m;
        return match(x->false_value, y->false_value);
      }
      case te::ExprKind::Call: {
        const auto *x = s.as<te::CallNode>(), *y = d.as<te::CallNode>();
        if (x->name != y->name || x->args.size() != y->args.size()) return Mismatch{s, d, "a different call"};
        for (size_t i = 0; i < x->args.size(); ++i)
          if (auto m = match(x->args[i], y->args[i])) return m;
        return std::nullopt;
      }
      case te::ExprKind::Broadcast: {
        const auto *x = s.as<te::BroadcastNode>(), *y = d.as<te::BroadcastNode>();
        return match(x->value, y->value);
      }
      default: return Mismatch{s, d, "an expression the matcher does not compare"};
    }
  }

 public:
  /// Binds the decl tensor `t`, read or written at decl indices `dims`, to `buf` at flat
  /// index `index`.
  std::optional<Mismatch> bind(const te::Tensor& t, const Var& buf, const Expr& index, const std::vector<Expr>& dims,
                               const Expr& s, const Expr& d) {
    te::VarMap at_min = at_min_;
    Expr offset = te::simplify(te::substitute(index, at_min));
    std::vector<Expr> strides;
    Expr rest = index - offset;
    for (const Expr& dim : dims) {
      const ForNode* loop = axis_to_loop_.at(dim.as<te::VarNode>());
      te::VarMap one = at_min;
      one[loop->loop_var.get()] = loop->min + 1;
      Expr stride = te::simplify(te::substitute(index, one) - offset);
      strides.push_back(stride);
      rest = rest - stride * (loop->loop_var - loop->min);
    }
    if (!te::is_zero(te::simplify(rest)))
      return Mismatch{s, d,
                      fmt::format("buffer '{}' is indexed by {}, not by an offset plus a multiple of each of the "
                                  "loops of the intrinsic's axes that index '{}'",
                                  buf.name(), te::to_string(index), t.name())};
    Binding b{buf, offset, strides, buf.name()};
    auto it = bindings_.find(t.get());
    if (it == bindings_.end()) {
      for (const auto& [other, ob] : bindings_) {
        if (ob.data.same_as(buf) && other != t.get())
          return Mismatch{s, d, fmt::format("buffer '{}' is bound to two different tensors of the intrinsic", buf.name())};
      }
      bindings_.emplace(t.get(), std::move(b));
      return std::nullopt;
    }
    const Binding& old = it->second;
    bool same = old.data.same_as(buf) && te::structural_equal(old.offset, offset);
    for (size_t i = 0; same && i < strides.size(); ++i) same = te::structural_equal(old.strides[i], strides[i]);
    if (!same)
      return Mismatch{s, d, fmt::format("'{}' of the intrinsic is read at two different places: buffer '{}' at {} and "
                                        "buffer '{}' at {}",
                                        t.name(), old.buffer_name, te::to_string(old.offset), buf.name(),
                                        te::to_string(offset))};
    return std::nullopt;
  }

  const Binding* binding(const te::Tensor& t) const {
    auto it = bindings_.find(t.get());
    return it == bindings_.end() ? nullptr : &it->second;
  }

 private:
  std::optional<Mismatch> binary(const Expr& sa, const Expr& sb, const Expr& da, const Expr& db, bool commutes) {
    auto saved = bindings_;
    std::optional<Mismatch> first = match(sa, da);
    if (!first) first = match(sb, db);
    if (!first || !commutes) return first;
    bindings_ = saved;
    std::optional<Mismatch> second = match(sa, db);
    if (!second) second = match(sb, da);
    if (!second) return std::nullopt;
    bindings_ = saved;
    return second->depth > first->depth ? second : first;  // the order that matched further
  }

  std::unordered_map<const te::VarNode*, const ForNode*> axis_to_loop_;
  te::VarMap at_min_;
  int depth_ = 0;
  std::unordered_map<const te::TensorNode*, Binding> bindings_;
};

/// The condition, on the loops outside, under which `guard` holds at every point of the
/// tile the loops `region` span; nullopt when it cannot be stated.
std::optional<Expr> holds_on_whole_tile(const Expr& guard, const te::IntSetMap& region) {
  Expr g = guard;
  if (const auto* c = g.as<te::CallNode>(); c && c->name == te::intrin::kLikely && c->args.size() == 1) g = c->args[0];
  if (const auto* a = g.as<te::AndNode>()) {
    auto x = holds_on_whole_tile(a->a, region), y = holds_on_whole_tile(a->b, region);
    if (!x || !y) return std::nullopt;
    return *x && *y;
  }
  auto uses_region = [&](const Expr& e) {
    return te::expr_uses_var(e, [&](const te::VarNode* v) { return region.count(v) > 0; });
  };
  if (!uses_region(g)) return g;
  auto bound = [&](const Expr& a, const Expr& b, bool upper) -> std::optional<te::IntSet> {
    te::IntSet s = te::eval_set(te::simplify(a - b), region);
    if (upper ? !s.max.defined() : !s.min.defined()) return std::nullopt;
    if (uses_region(upper ? s.max : s.min)) return std::nullopt;
    return s;
  };
  if (const auto* n = g.as<te::LTNode>()) {
    if (auto s = bound(n->a, n->b, true)) return s->max < te::make_zero(s->max.dtype());
  } else if (const auto* n = g.as<te::LENode>()) {
    if (auto s = bound(n->a, n->b, true)) return s->max <= te::make_zero(s->max.dtype());
  } else if (const auto* n = g.as<te::GTNode>()) {
    if (auto s = bound(n->a, n->b, false)) return s->min > te::make_zero(s->min.dtype());
  } else if (const auto* n = g.as<te::GENode>()) {
    if (auto s = bound(n->a, n->b, false)) return s->min >= te::make_zero(s->min.dtype());
  }
  return std::nullopt;
}

/// A stage whose input is zero-padded inline reads `select(c, x, 0)` in its update. Where `c`
/// uses none of the intrinsic's loops and the update with each such select at 0 stores the
/// accumulator unchanged (acc + 0·w), the selects are matched as their loads and the intrinsic
/// runs under `if (c)`: the products with the padding are skipped, not computed as zero. A
/// float update keeps its select: 0·w does not simplify to 0 (w may be infinite or NaN).
class ZeroPaddedReads : public te::ExprMutator {
 public:
  explicit ZeroPaddedReads(const std::vector<const ForNode*>& loops) : loops_(loops) {}

  /// The update value without its zero-padded selects, and their conditions (undefined:
  /// none, or the update does not leave the accumulator unchanged where they are 0).
  std::pair<Expr, Expr> strip(const StoreNode* store) {
    at_padding_ = false;
    Expr value = mutate(store->value);
    if (conds_.empty()) return {store->value, Expr()};
    at_padding_ = true;
    Expr at_zero = te::simplify(mutate(store->value));
    const auto* load = at_zero.as<te::LoadNode>();
    if (!load || !load->buffer_var.same_as(store->buffer_var) || !te::structural_equal(load->index, store->index) ||
        load->predicate.defined())
      return {store->value, Expr()};
    Expr cond;
    for (const Expr& c : conds_) cond = cond.defined() ? (cond && c) : c;
    return {value, cond};
  }

 protected:
  Expr mutate_(const te::SelectNode* op) override {
    if (!te::is_zero(op->false_value) || op->cond.dtype().is_vector() || uses_loops(op->cond) || has_load(op->cond))
      return te::ExprMutator::mutate_(op);
    if (at_padding_) return op->false_value;
    conds_.push_back(op->cond);
    return mutate(op->true_value);
  }

 private:
  bool uses_loops(const Expr& e) const {
    return te::expr_uses_var(e, [&](const te::VarNode* v) {
      return std::any_of(loops_.begin(), loops_.end(), [&](const ForNode* f) { return f->loop_var.get() == v; });
    });
  }
  static bool has_load(const Expr& e) {
    bool found = false;
    te::post_order_visit(e, [&](const Expr& x) { found |= x.as<te::LoadNode>() != nullptr; });
    return found;
  }

  const std::vector<const ForNode*>& loops_;
  std::vector<Expr> conds_;
  bool at_padding_ = false;
};

class Tensorizer : public IRMutator {
 public:
  explicit Tensorizer(const schedule::Schedule& s) {
    for (const schedule::Stage& st : s.stages()) {
      for (const auto& [node, attr] : st->iter_var_attrs) {
        if (attr.annotation != schedule::IterAnnotation::kTensorize) continue;
        IterVar axis;
        for (const IterVar& iv : st->all_iter_vars)
          if (iv.get() == node) axis = iv;
        LOOM_ICHECK(axis.defined());
        if (st->attach_type == schedule::AttachType::kInline)
          fail("tensorize: stage '{}' is inlined, so its axis '{}' has no loop to tensorize", st->op->name, axis.name());
        if (std::find(st->leaf_iter_vars.begin(), st->leaf_iter_vars.end(), axis) == st->leaf_iter_vars.end())
          fail("tensorize: stage '{}': axis '{}' was split or fused after it was tensorized; tensorize a leaf axis",
               st->op->name, axis.name());
        axes_[node] = TensorizedAxis{st->op->name, axis, attr.tensor_intrin};
      }
    }
  }

  /// Throws if a tensorized axis left no loop in the function.
  void check_all_replaced() const {
    for (const auto& [node, t] : axes_) {
      if (!replaced_.count(node))
        fail("tensorize: stage '{}': the loop of tensorized axis '{}' is not in the lowered function (is its extent "
             "1 or 0?)",
             t.stage, t.axis.name());
    }
  }

 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key != attr::kTensorize) return IRMutator::mutate_(op);
    auto it = axes_.find(op->iter_var.get());
    LOOM_ICHECK(it != axes_.end());
    replaced_.insert(op->iter_var.get());
    return replace(it->second, op->body, te::is_one(op->value));
  }

 private:
  [[noreturn]] void error(const TensorizedAxis& t, const std::string& what) const {
    fail("tensorize: stage '{}' at axis '{}' does not match intrinsic '{}': {}", t.stage, t.axis.name(),
         t.intrin->name, what);
  }

  /// The store at the bottom of a nest (under its guard, if any).
  GuardedStore bottom_store(const TensorizedAxis& t, const Stmt& s, const char* where) const {
    std::vector<Stmt> parts = parts_without_checks(s);
    GuardedStore g;
    if (parts.size() == 1) {
      if (const auto* ite = parts[0].as<IfThenElseNode>(); ite && !ite->else_case.defined()) {
        g.guard = ite->condition;
        parts = parts_without_checks(ite->then_case);
      }
    }
    if (parts.size() == 1) g.store = parts[0].as<StoreNode>();
    if (!g.store)
      error(t, fmt::format("{} the innermost loop should hold one store of the stage, but it holds:\n{}", where,
                           to_string(s)));
    if (g.store->predicate.defined()) error(t, fmt::format("{} the store is predicated", where));
    return g;
  }

  /// Checks the loops of the nest against the intrinsic's axes.
  void match_loops(const TensorizedAxis& t, const std::vector<const ForNode*>& loops, const std::vector<IterVar>& axes,
                   const std::vector<const ForNode*>& all_loops, const std::vector<IterVar>& all_axes) const {
    if (loops.size() != axes.size())
      error(t, fmt::format("the loops under the axis are {}, the intrinsic's axes {}", loops_str(all_loops),
                           axes_str(all_axes)));
    for (size_t i = 0; i < loops.size(); ++i) {
      auto ext = te::as_const_int(loops[i]->extent);
      int64_t want = *te::as_const_int(axes[i]->dom.extent);
      if (!ext || *ext != want)
        error(t, fmt::format("loop '{}' has extent {} where the intrinsic's axis '{}' has {} (loops {}, axes {})",
                             loops[i]->loop_var.name(), te::to_string(loops[i]->extent), axes[i].name(), want,
                             loops_str(all_loops), axes_str(all_axes)));
      if (loops[i]->for_kind == ForKind::kParallel || loops[i]->for_kind == ForKind::kThreadBinding)
        error(t, fmt::format("loop '{}' is {}", loops[i]->loop_var.name(), lowering::to_string(loops[i]->for_kind)));
    }
  }

  /// Matches a store against the intrinsic's output written with `value`.
  /// `stage_value` replaces the stored value when defined (the update without its
  /// zero-padded selects).
  void match_store(const TensorizedAxis& t, Matcher& m, const StoreNode* store, const Expr& value, const char* what,
                   Expr stage_value = Expr()) const {
    if (!stage_value.defined()) stage_value = store->value;
    const te::Tensor& out = t.intrin->output;
    std::vector<Expr> dims;
    for (const IterVar& iv : out.op()->axis) dims.push_back(iv.var());
    te::Expr decl_store = out(dims);
    Expr stage_store = te::make<te::LoadNode>(out.dtype(), store->buffer_var, store->index, Expr());
    if (store->value.dtype() != out.dtype())
      error(t, fmt::format("the {} stores {}, the intrinsic's output is {}", what, store->value.dtype().str(),
                           out.dtype().str()));
    if (auto mm = m.bind(out, store->buffer_var, store->index, dims, stage_store, decl_store))
      error(t, fmt::format("its output: {}", mm->why));
    if (auto mm = m.match(stage_value, value)) {
      error(t, fmt::format("in the {}, the stage computes\n  {}\nwhere the intrinsic computes\n  {}\nthey differ at "
                           "{} (stage) against {} (intrinsic): {}",
                           what, te::to_string(stage_value), te::to_string(value), te::to_string(mm->stage),
                           te::to_string(mm->decl), mm->why));
    }
  }

  BufferRegion region_of(const Matcher& m, const te::Tensor& decl) const {
    BufferRegion r;
    r.dtype = decl.dtype();
    for (const Expr& e : decl.shape()) r.shape.push_back(*te::as_const_int(e));
    if (const Matcher::Binding* b = m.binding(decl)) {
      r.data = b->data;
      r.elem_offset = b->offset;
      r.strides = b->strides;
      r.name = b->buffer_name;
    }
    return r;
  }

  /// The statement that runs `impl` on the matched regions.
  Stmt emit(const TensorizedAxis& t, const te::TensorIntrinImpl& impl, const Matcher& m, const char* which) const {
    std::vector<BufferRegion> inputs;
    for (const te::Tensor& in : t.intrin->inputs) inputs.push_back(region_of(m, in));
    BufferRegion out = region_of(m, t.intrin->output);
    Expr e;
    try {
      e = impl(inputs, out);
    } catch (const Error& err) {
      fail("tensorize: stage '{}' at axis '{}', intrinsic '{}' ({}): {}", t.stage, t.axis.name(), t.intrin->name, which,
           err.what());
    }
    LOOM_CHECK(e.defined(), "tensorize: intrinsic '{}': its {} implementation returned nothing", t.intrin->name, which);
    if (e.dtype().is_void()) return make_stmt<EvaluateNode>(e);
    int64_t size = 1;
    for (int64_t n : out.shape) size *= n;
    LOOM_CHECK(e.dtype().element_of() == out.dtype && e.dtype().lanes() == size,
               "tensorize: intrinsic '{}': its {} implementation returns {}, but the output region holds {} elements "
               "of {}",
               t.intrin->name, which, e.dtype().str(), size, out.dtype.str());
    if (!out.is_dense())
      fail("tensorize: stage '{}' at axis '{}', intrinsic '{}' stores its output as one vector, but buffer '{}' is not "
           "contiguous there: strides {} for shape [{}]",
           t.stage, t.axis.name(), t.intrin->name, out.name, out.strides_str(), fmt::join(out.shape, ", "));
    Expr index = size == 1 ? out.elem_offset
                           : te::make<te::RampNode>(out.elem_offset, te::make_const(out.elem_offset.dtype(), 1), int(size));
    return make_stmt<StoreNode>(out.data, e, index, Expr());
  }

  static Stmt guarded(const Expr& cond, Stmt s) {
    return cond.defined() ? make_stmt<IfThenElseNode>(cond, std::move(s), Stmt()) : s;
  }

  /// if (the guards hold on the whole tile) { tensorized } else { original }.
  Stmt versioned(const TensorizedAxis& t, const std::vector<Expr>& guards, const std::vector<const ForNode*>& loops,
                 Stmt tensorized, const Stmt& original) const {
    te::IntSetMap region;
    for (const ForNode* f : loops) region[f->loop_var.get()] = te::IntSet::from_range(Range(f->min, f->extent));
    Expr cond;
    for (const Expr& g : guards) {
      if (!g.defined()) continue;
      auto whole = holds_on_whole_tile(g, region);
      if (!whole)
        error(t, fmt::format("cannot tell which tiles its bounds guard {} covers whole (it is not a conjunction of "
                             "comparisons linear in the loops)",
                             te::to_string(g)));
      cond = cond.defined() ? (cond && *whole) : *whole;
    }
    if (!cond.defined()) return tensorized;
    cond = te::simplify(cond);
    if (te::is_one(cond)) return tensorized;
    return make_stmt<IfThenElseNode>(te::call(DataType::Bool(), te::intrin::kLikely, {cond}), tensorized, original);
  }

  Stmt replace(const TensorizedAxis& t, const Stmt& region, bool init) {
    const te::TensorIntrinNode& in = *t.intrin;
    const te::OperationNode& dop = *in.output.op();
    const std::vector<IterVar>& spatial = dop.axis;
    const std::vector<IterVar>& reduce = dop.reduce_axis;
    std::vector<IterVar> all_axes = spatial;
    all_axes.insert(all_axes.end(), reduce.begin(), reduce.end());
    const auto* red = dop.body[0].as<te::ReduceNode>();

    Stmt inside;
    std::vector<const ForNode*> loops = peel_loops(region, &inside);
    if (init) {
      // The initialization of a reduction, over the spatial axes.
      match_loops(t, loops, spatial, loops, spatial);
      GuardedStore g = bottom_store(t, inside, "in the initialization,");
      Matcher m(spatial, loops);
      match_store(t, m, g.store, red->combiner->identity[0], "initialization");
      return versioned(t, {g.guard}, loops, emit(t, in.reset, m, "reset"), region);
    }
    if (!red) {
      match_loops(t, loops, spatial, loops, spatial);
      GuardedStore g = bottom_store(t, inside, "");
      Matcher m(spatial, loops);
      match_store(t, m, g.store, dop.body[0], "computation");
      return versioned(t, {g.guard}, loops, emit(t, in.body, m, "body"), region);
    }
    // The update of a reduction: either every axis around it, or the spatial axes around the
    // initialization and the reduction loops.
    const te::Tensor& out = in.output;
    std::vector<Expr> out_idx;
    for (const IterVar& iv : spatial) out_idx.push_back(iv.var());
    te::VarMap combine{{red->combiner->lhs[0].get(), out(out_idx)}, {red->combiner->rhs[0].get(), red->source[0]}};
    Expr update_value = te::substitute(red->combiner->result[0], combine);

    std::vector<Stmt> parts = parts_without_checks(inside);
    if (parts.size() == 2 && loops.size() == spatial.size()) {
      Stmt reduce_body;
      std::vector<const ForNode*> rloops = peel_loops(parts[1], &reduce_body);
      std::vector<const ForNode*> all = loops;
      all.insert(all.end(), rloops.begin(), rloops.end());
      match_loops(t, all, all_axes, all, all_axes);
      Stmt init_body;
      if (!peel_loops(parts[0], &init_body).empty())
        error(t, "the initialization inside the tensorized loops has loops of its own");
      GuardedStore gi = bottom_store(t, parts[0], "in the initialization,");
      GuardedStore gu = bottom_store(t, reduce_body, "in the update,");
      Matcher mi(spatial, loops);
      match_store(t, mi, gi.store, red->combiner->identity[0], "initialization");
      Matcher mu(all_axes, all);
      auto [value, padded] = ZeroPaddedReads(all).strip(gu.store);
      match_store(t, mu, gu.store, update_value, "update", value);
      if (padded.defined() && in.body)
        error(t, fmt::format("it reads zero padding (under {}), which an intrinsic with one body for the reset and "
                             "the update cannot skip",
                             te::to_string(padded)));
      Stmt body = in.body ? emit(t, in.body, mu, "body")
                          : seq({emit(t, in.reset, mi, "reset"), guarded(padded, emit(t, in.update, mu, "update"))});
      return versioned(t, {gi.guard, gu.guard}, all, body, region);
    }
    match_loops(t, loops, all_axes, loops, all_axes);
    GuardedStore g = bottom_store(t, inside, "in the update,");
    Matcher m(all_axes, loops);
    auto [value, padded] = ZeroPaddedReads(loops).strip(g.store);
    match_store(t, m, g.store, update_value, "update", value);
    return versioned(t, {g.guard}, loops, guarded(padded, emit(t, in.update, m, "update")), region);
  }

  std::unordered_map<const te::IterVarNode*, TensorizedAxis> axes_;
  std::unordered_set<const te::IterVarNode*> replaced_;
};

}  // namespace

Stmt tensorize(const Stmt& s, const schedule::Schedule& sch) {
  Tensorizer t(sch);
  Stmt out = t.mutate(s);
  t.check_all_replaced();
  return out;
}

}  // namespace loom::lowering
