// schedule_ops: every stage's loop nest, producers placed where they are attached.
//
// Each stage becomes loops over its leaf iteration variables (For, or a thread extent for
// bound loops), with the operation's body inside, its root variables rewritten in terms
// of the leaves. Where a split does not divide, or a stage covers more than its operation's
// shape, the body is guarded by if (likely(...)); loop_partition later lifts the guard off
// the main part. Reductions get an init nest over the spatial loops that sit inside the
// first reduction loop (with fresh variables) and an update nest. A reduction with a reduce
// leaf bound to threadIdx is a cross-thread reduction (TVM's allreduce): each thread folds its
// share of the other reduce loops into a local accumulator, the block's threads store theirs
// into a shared array and combine it in a tree (thread_sync places the barriers between the
// steps), and every thread stores the result (the same value). A stage computed padded gets
// no guard; its reads of placeholders that may fall outside their shape become select(in
// shape, read, pad value), and it may read no other stage that is not padded. An extern stage
// is its hand-written body (ir_builder.h), built here with the schedule's parameters.
#include <algorithm>
#include <set>
#include <unordered_set>

#include "iter_relations.h"
#include "loom/lower/ir_builder.h"
#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"
#include "loom/te/intrinsics.h"
#include "loom/te/arith.h"
#include "loom/te/expr_functor.h"

namespace loom::lowering {

using schedule::AttachType;
using schedule::IterAnnotation;
using schedule::Stage;
using schedule::StageNode;
using te::IterVar;

namespace {

constexpr const char* kLoopScope = "loop_scope";

ForKind for_kind_of(IterAnnotation a) {
  switch (a) {
    case IterAnnotation::kVectorize: return ForKind::kVectorized;
    case IterAnnotation::kUnroll: return ForKind::kUnrolled;
    case IterAnnotation::kParallel: return ForKind::kParallel;
    default: return ForKind::kSerial;
  }
}

/// The reads of a stage computed padded: placeholders read outside their shape give the pad
/// value; other stages must be padded too.
class PadReads : public te::ExprMutator {
 public:
  PadReads(const StageNode& st, const std::unordered_set<const te::OperationNode*>& padded, te::Analyzer& analyzer)
      : st_(st), padded_(padded), analyzer_(analyzer) {}

 protected:
  Expr mutate_(const te::ProducerLoadNode* op) override {
    Expr e = te::ExprMutator::mutate_(op);
    const auto* ld = e.as<te::ProducerLoadNode>();
    Tensor t(ld->producer);
    if (t.op()->kind != te::OpKind::kPlaceholder) {
      LOOM_CHECK(padded_.count(t.op().get()),
                 "stage '{}' is computed padded but reads stage '{}', which is not: its values past its shape would "
                 "be undefined (compute_padded it too, or inline it)",
                 st_.name(), t.op()->name);
      return e;
    }
    Expr cond;
    for (size_t d = 0; d < ld->indices.size(); ++d) {
      const Expr& i = ld->indices[d];
      for (Expr c : {Expr(i >= te::make_zero(i.dtype())), Expr(i < te::cast(i.dtype(), t.shape()[d]))}) {
        if (analyzer_.can_prove(c)) continue;
        cond = cond.defined() ? (cond && c) : c;
      }
    }
    if (!cond.defined()) return e;
    return te::select(te::simplify(cond), e, te::cast(e.dtype(), st_.pad_value));
  }

 private:
  const StageNode& st_;
  const std::unordered_set<const te::OperationNode*>& padded_;
  te::Analyzer& analyzer_;
};

class NestBuilder {
 public:
  /// `analyzer` knows the range of every loop variable of every stage; `padded` holds the
  /// operations of the stages computed padded.
  NestBuilder(const StageNode& st, const BoundMap& bounds, te::Analyzer& analyzer,
              const std::unordered_set<const te::OperationNode*>& padded)
      : st_(st), bounds_(bounds), analyzer_(analyzer), padded_(padded) {
    IterValueMap leaf_values;
    for (const IterVar& leaf : st.leaf_iter_vars) leaf_values[leaf.get()] = leaf.var();
    values_ = pass_up_index(st, bounds, leaf_values);
    for (const IterVar& iv : st.root_iter_vars()) root_subst_[iv.var().get()] = values_.at(iv.get());
  }

  Stmt build() {
    const te::OperationNode& op = *st_.op;
    bool is_reduce = op.body[0].as<te::ReduceNode>() != nullptr;
    if (!is_reduce) {
      std::vector<Stmt> stores;
      for (size_t i = 0; i < op.body.size(); ++i) stores.push_back(store(int(i), rewrite(op.body[i])));
      Stmt body = guard(seq(stores), false);
      return wrap_loops(body, 0, st_.leaf_iter_vars.size(), true);
    }
    size_t begin = 0;
    while (begin < st_.leaf_iter_vars.size() && st_.leaf_iter_vars[begin]->type != te::IterVarType::kCommReduce) ++begin;
    if (const IterVar* bound = thread_bound_reduce_leaf(begin)) return cross_thread(begin, *bound);
    Stmt update = make_update();
    Stmt main_nest = wrap_loops(update, begin, st_.leaf_iter_vars.size(), true);
    Stmt init_nest = make_init(begin);
    return wrap_loops(seq({init_nest, main_nest}), 0, begin, true);
  }

 private:
  Expr rewrite(const Expr& e) {
    Expr r = te::substitute(e, root_subst_);
    return st_.pad_value.defined() ? PadReads(st_, padded_, analyzer_).mutate(r) : r;
  }

  std::vector<Expr> out_indices() {
    std::vector<Expr> idx;
    for (const IterVar& iv : st_.op->axis) idx.push_back(values_.at(iv.get()));
    return idx;
  }

  Stmt store(int i, const Expr& value) {
    return make_stmt<ProducerStoreNode>(te::output(st_.op, i), value, out_indices());
  }

  /// if (likely(...)) around `body`: every non-leaf iteration variable of the given kinds
  /// stays inside its inferred range (a split that does not divide overshoots it), and every
  /// root inside its operation's domain (a stage may cover more than its shape).
  /// A stage computed padded keeps only the first kind for spatial variables (they bound its
  /// own buffer): its reductions and roots run past the shape.
  Stmt guard(Stmt body, bool with_reduce) {
    const bool padded = st_.pad_value.defined();
    Expr cond;
    auto add = [&](const Expr& c) {
      if (analyzer_.can_prove(c)) return;
      cond = cond.defined() ? (cond && c) : c;
    };
    std::unordered_set<const te::IterVarNode*> leaves;
    for (const IterVar& leaf : st_.leaf_iter_vars) leaves.insert(leaf.get());
    for (const IterVar& iv : st_.all_iter_vars) {
      if (leaves.count(iv.get())) continue;
      if ((!with_reduce || padded) && iv->type == te::IterVarType::kCommReduce) continue;
      Expr v = values_.at(iv.get());
      const Range& r = bounds_.at(iv.get());
      add(v < r.min + r.extent);
    }
    for (const IterVar& iv : st_.root_iter_vars()) {
      if (padded) break;
      if (!with_reduce && iv->type == te::IterVarType::kCommReduce) continue;
      if (!iv->dom.extent.defined()) continue;
      Expr v = values_.at(iv.get());
      add(v >= iv->dom.min);
      add(v < iv->dom.min + iv->dom.extent);
    }
    if (!cond.defined()) return body;
    return make_stmt<IfThenElseNode>(te::call(DataType::Bool(), te::intrin::kLikely, {te::simplify(cond)}), body, Stmt());
  }

  Stmt make_update() {
    const te::OperationNode& op = *st_.op;
    const auto* red = op.body[0].as<te::ReduceNode>();
    const te::CommReducerNode& comb = *red->combiner;
    std::vector<Expr> idx = out_indices();
    te::VarMap bind;
    for (size_t i = 0; i < op.body.size(); ++i) {
      const auto* r = op.body[i].as<te::ReduceNode>();
      bind[comb.lhs[i].get()] = te::output(st_.op, int(i))(idx);
      bind[comb.rhs[i].get()] = rewrite(r->source[i]);
    }
    Stmt body;
    if (op.body.size() == 1) {
      body = store(0, te::substitute(comb.result[0], bind));
    } else {
      // Tuple reducer: compute every new value before storing any of them.
      std::vector<Var> tmps;
      std::vector<Stmt> stores;
      for (size_t i = 0; i < op.body.size(); ++i) {
        tmps.emplace_back(fmt::format("{}.v{}", st_.name(), i), op.body[i].dtype());
        stores.push_back(store(int(i), tmps.back()));
      }
      body = seq(stores);
      for (size_t i = op.body.size(); i-- > 0;) {
        body = make_stmt<LetStmtNode>(tmps[i], te::substitute(comb.result[i], bind), body);
      }
    }
    if (red->condition.defined() && !te::is_one(red->condition)) {
      body = make_stmt<IfThenElseNode>(rewrite(red->condition), body, Stmt());
    }
    return guard(body, true);
  }

  /// The reduce leaf bound to a thread index, or null; checks what a cross-thread reduction
  /// needs (one bound reduce leaf, to threadIdx, no spatial leaf among the reduce leaves).
  const IterVar* thread_bound_reduce_leaf(size_t begin) const {
    const IterVar* bound = nullptr;
    for (size_t p = begin; p < st_.leaf_iter_vars.size(); ++p) {
      const IterVar& leaf = st_.leaf_iter_vars[p];
      if (leaf->type != te::IterVarType::kCommReduce || annotation(leaf) != IterAnnotation::kThreadBind) continue;
      const std::string& tag = st_.iter_var_attrs.at(leaf.get()).bind_thread->thread_tag;
      LOOM_CHECK(!bound, "stage '{}': reduce axes '{}' and '{}' are both bound to threads; a cross-thread reduction "
                 "binds one (fuse them first)", st_.name(), (*bound).name(), leaf.name());
      LOOM_CHECK(tag.rfind("threadIdx", 0) == 0, "stage '{}': reduce axis '{}' is bound to '{}'; a reduction can only "
                 "be split across threadIdx", st_.name(), leaf.name(), tag);
      bound = &leaf;
    }
    if (!bound) return nullptr;
    for (size_t p = begin; p < st_.leaf_iter_vars.size(); ++p)
      LOOM_CHECK(st_.leaf_iter_vars[p]->type == te::IterVarType::kCommReduce,
                 "stage '{}': cross-thread reduction over '{}' needs every spatial loop outside the reduce loops, but "
                 "'{}' is inside them (reorder it out)", st_.name(), bound->name(), st_.leaf_iter_vars[p].name());
    LOOM_CHECK(st_.op->body.size() == 1, "stage '{}': a cross-thread reduction of a tuple reducer ({} values) is not "
               "supported", st_.name(), st_.op->body.size());
    return bound;
  }

  /// The reduction with reduce leaf `leaf` bound to a thread index (see the file comment).
  Stmt cross_thread(size_t begin, const IterVar& leaf) {
    const te::OperationNode& op = *st_.op;
    const auto* red = op.body[0].as<te::ReduceNode>();
    const te::CommReducerNode& comb = *red->combiner;
    const IterVar& thread = st_.iter_var_attrs.at(leaf.get()).bind_thread;
    const Range& r = bounds_.at(leaf.get());
    auto n = te::as_const_int(te::simplify(r.extent));
    LOOM_CHECK(n.has_value(), "stage '{}': cross-thread reduction over '{}' needs a constant extent", st_.name(),
               leaf.name());
    const DataType dt = op.body[0].dtype();
    const Expr zero = te::make_const(DataType::Int(32), 0);
    const Expr tx = thread.var();
    // Threads of other threadIdx dimensions around the reduction (this stage's spatial loops,
    // the loops of the stages it is computed in) reduce other rows: one slice of the shared
    // array each.
    Expr group = zero;
    int64_t groups = 1;
    for (const auto& [var, extent] : enclosing_threads(thread->thread_tag)) {
      group = group + var * te::make_const(DataType::Int(32), groups);
      groups *= extent;
    }
    te::Tensor acc = te::placeholder({Expr(1)}, dt, st_.name() + ".red_local");
    te::Tensor buf = te::placeholder({te::make_const(DataType::Int(32), *n * groups)}, dt, st_.name() + ".red_buf");
    const Expr base = te::simplify(group * te::make_const(DataType::Int(32), *n));
    auto combine = [&](Expr lhs, Expr rhs) {
      te::VarMap bind;
      bind[comb.lhs[0].get()] = std::move(lhs);
      bind[comb.rhs[0].get()] = std::move(rhs);
      return te::substitute(comb.result[0], bind);
    };
    auto put = [](const te::Tensor& t, Expr index, Expr value) {
      return make_stmt<ProducerStoreNode>(t, std::move(value), std::vector<Expr>{std::move(index)});
    };
    Stmt update = put(acc, zero, combine(acc(zero), rewrite(red->source[0])));
    if (red->condition.defined() && !te::is_one(red->condition))
      update = make_stmt<IfThenElseNode>(rewrite(red->condition), update, Stmt());
    std::vector<Stmt> body = {put(acc, zero, comb.identity[0]),
                              wrap_loops(guard(update, true), begin, st_.leaf_iter_vars.size(), true, leaf.get()),
                              put(buf, base + tx, acc(zero))};
    int64_t half = 1;
    while (half * 2 < *n) half *= 2;
    for (int64_t s = half; s >= 1; s /= 2) {
      Expr other = tx + te::make_const(DataType::Int(32), s);
      Expr cond = tx < te::make_const(DataType::Int(32), s);
      if (2 * s > *n) cond = cond && other < te::make_const(DataType::Int(32), *n);
      body.push_back(make_stmt<IfThenElseNode>(cond, put(buf, base + tx, combine(buf(base + tx), buf(base + other))),
                                               Stmt()));
    }
    Expr result = buf(base);
    if (!red->init.empty()) result = combine(rewrite(red->init[0]), result);
    body.push_back(guard(store(0, result), false));
    auto realize_one = [](const te::Tensor& t, const std::string& scope, Stmt in) {
      std::vector<Range> b = {Range(te::make_const(DataType::Int(32), 0), t.shape()[0])};
      auto node = std::make_shared<ProducerRealizeNode>(t, b, scope, std::move(in));
      node->align.assign(1, {0, 0});
      return Stmt(node);
    };
    Stmt nest = make_stmt<AttrStmtNode>(leaf, Var(), kLoopScope, Expr(0), realize_one(acc, "local", seq(body)));
    nest = make_stmt<LetStmtNode>(leaf.var(), tx + r.min, nest);
    nest = make_stmt<AttrStmtNode>(thread, Var(), attr::kThreadExtent, r.extent, nest);
    return wrap_loops(realize_one(buf, "shared", nest), 0, begin, true);
  }

  /// The thread indices of threadIdx dimensions other than `tag` bound around this stage's
  /// body: its own leaves and, up the compute_at chain, the leaves of the stages it is
  /// computed in, outside its attach loop; each dimension once, with its constant extent.
  std::vector<std::pair<Var, int64_t>> enclosing_threads(const std::string& tag) const {
    std::vector<std::pair<Var, int64_t>> out;
    std::set<std::string> seen{tag};
    auto visit = [&](const StageNode& s, const IterVar& until) {
      for (const IterVar& leaf : s.leaf_iter_vars) {
        auto it = s.iter_var_attrs.find(leaf.get());
        if (it != s.iter_var_attrs.end() && it->second.annotation == IterAnnotation::kThreadBind) {
          const IterVar& t = it->second.bind_thread;
          if (t->thread_tag.rfind("threadIdx", 0) == 0 && seen.insert(t->thread_tag).second) {
            auto e = te::as_const_int(te::simplify(bounds_.at(leaf.get()).extent));
            LOOM_CHECK(e.has_value(), "stage '{}': the extent of '{}' (bound to {}) around a cross-thread reduction is "
                       "not constant", s.op->name, leaf.name(), t->thread_tag);
            out.emplace_back(t.var(), *e);
          }
        }
        if (leaf == until) break;
      }
    };
    visit(st_, IterVar());
    const StageNode* cur = &st_;
    while (cur->attach_type == AttachType::kScope && cur->attach_stage.defined()) {
      visit(*cur->attach_stage.get(), cur->attach_ivar);
      cur = cur->attach_stage.get();
    }
    return out;
  }

  /// Initial values, over the spatial leaves at or after `begin`, with fresh loop variables.
  Stmt make_init(size_t begin) {
    const te::OperationNode& op = *st_.op;
    std::vector<Stmt> stores;
    for (size_t i = 0; i < op.body.size(); ++i) {
      const auto* r = op.body[i].as<te::ReduceNode>();
      Expr init = r->init.empty() ? r->combiner->identity[i] : rewrite(r->init[i]);
      stores.push_back(store(int(i), init));
    }
    Stmt body = guard(seq(stores), false);
    te::VarMap fresh;
    for (size_t p = st_.leaf_iter_vars.size(); p-- > begin;) {
      const IterVar& leaf = st_.leaf_iter_vars[p];
      if (leaf->type == te::IterVarType::kCommReduce) continue;
      Var v(leaf.var().name() + ".init", leaf.var().dtype());
      fresh[leaf.var().get()] = v;
      const Range& r = bounds_.at(leaf.get());
      body = make_stmt<ForNode>(v, r.min, r.extent, for_kind_of(annotation(leaf)), body);
      if (annotation(leaf) == IterAnnotation::kTensorize)
        body = make_stmt<AttrStmtNode>(leaf, Var(), attr::kTensorize, Expr(1), body);
    }
    return lowering::substitute(body, fresh);
  }

  IterAnnotation annotation(const IterVar& leaf) const {
    auto it = st_.iter_var_attrs.find(leaf.get());
    return it == st_.iter_var_attrs.end() ? IterAnnotation::kNone : it->second.annotation;
  }

  /// Loops for leaves [from, to) but `skip`, outermost first, each with a loop_scope marker
  /// inside.
  Stmt wrap_loops(Stmt body, size_t from, size_t to, bool markers, const te::IterVarNode* skip = nullptr) {
    for (size_t p = to; p-- > from;) {
      const IterVar& leaf = st_.leaf_iter_vars[p];
      if (leaf.get() == skip) continue;
      const Range& r = bounds_.at(leaf.get());
      if (markers) body = make_stmt<AttrStmtNode>(leaf, Var(), kLoopScope, Expr(0), body);
      auto it = st_.iter_var_attrs.find(leaf.get());
      if (it != st_.iter_var_attrs.end() && it->second.annotation == IterAnnotation::kThreadBind) {
        const IterVar& thread = it->second.bind_thread;
        body = make_stmt<LetStmtNode>(leaf.var(), thread.var() + r.min, body);
        body = make_stmt<AttrStmtNode>(thread, Var(), attr::kThreadExtent, r.extent, body);
        continue;
      }
      auto loop = std::make_shared<ForNode>(leaf.var(), r.min, r.extent, for_kind_of(annotation(leaf)), body);
      if (it != st_.iter_var_attrs.end()) {
        for (const auto& [k, v] : it->second.pragmas) loop->annotations[k] = v;
      }
      body = Stmt(loop);
      if (annotation(leaf) == IterAnnotation::kTensorize)
        body = make_stmt<AttrStmtNode>(leaf, Var(), attr::kTensorize, Expr(0), body);
    }
    return body;
  }

  const StageNode& st_;
  const BoundMap& bounds_;
  IterValueMap values_;
  te::VarMap root_subst_;
  te::Analyzer& analyzer_;
  const std::unordered_set<const te::OperationNode*>& padded_;
};

std::vector<Range> realize_bounds(const StageNode& st, const BoundMap& bounds) {
  std::vector<Range> r;
  if (st.op->kind == te::OpKind::kExtern) {  // the whole output (every output has its own shape)
    for (const Expr& e : st.op->output_shapes[0]) r.emplace_back(te::make_const(DataType::Int(32), 0), e);
    return r;
  }
  for (const IterVar& iv : st.op->axis) r.push_back(bounds.at(iv.get()));
  return r;
}

/// Wraps `body` in one ProducerRealize per output of the stage's operation.
Stmt realize(const StageNode& st, const BoundMap& bounds, Stmt body) {
  std::vector<Range> b = realize_bounds(st, bounds);
  std::string scope = st.scope.empty() ? "global" : st.scope;
  for (int i = st.op->num_outputs(); i-- > 0;) {
    if (st.op->kind == te::OpKind::kExtern) {
      b.clear();
      for (const Expr& e : st.op->output_shapes[size_t(i)]) b.emplace_back(te::make_const(DataType::Int(32), 0), e);
    }
    auto n = std::make_shared<ProducerRealizeNode>(te::output(st.op, i), b, scope, body);
    n->align.assign(b.size(), {0, 0});
    for (const auto& [dim, fo] : st.storage_align) {
      if (dim >= 0 && size_t(dim) < b.size()) n->align[dim] = fo;
    }
    n->order = st.storage_order;
    body = Stmt(n);
    if (st.double_buffer) {
      // storage_flatten moves the marker onto the buffer's Allocate.
      body = make_stmt<AttrStmtNode>(te::IterVar(), Var(n->tensor.name(), DataType::Handle()), attr::kDoubleBuffer,
                                     te::make_const(DataType::Int(32), 1), body);
    }
  }
  return body;
}

/// Puts a producer's realize + nest at the start of its attach loop's body.
class InjectAttach : public IRMutator {
 public:
  InjectAttach(const IterVar& at, std::function<Stmt(Stmt)> wrap) : at_(at), wrap_(std::move(wrap)) {}
  bool found = false;

 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    if (op->key == kLoopScope && op->iter_var == at_) {
      LOOM_ICHECK(!found);
      found = true;
      const auto* a = s.as<AttrStmtNode>();
      return make_stmt<AttrStmtNode>(a->iter_var, a->var, a->key, a->value, wrap_(a->body));
    }
    return s;
  }

 private:
  IterVar at_;
  std::function<Stmt(Stmt)> wrap_;
};

class RemoveLoopScope : public IRMutator {
 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key == kLoopScope) return mutate(op->body);
    return IRMutator::mutate_(op);
  }
};

}  // namespace

Stmt schedule_ops(const schedule::Schedule& s, const BoundMap& bounds) {
  Stmt body;
  const std::vector<Stage>& stages = s.stages();
  te::Analyzer analyzer;
  std::unordered_set<const te::OperationNode*> padded;
  for (const Stage& st : stages) {
    if (st->op->kind == te::OpKind::kPlaceholder || st->attach_type == AttachType::kInline) continue;
    for (const IterVar& leaf : st->leaf_iter_vars) analyzer.bind(leaf.var(), bounds.at(leaf.get()));
    if (st->pad_value.defined()) padded.insert(st->op.get());
  }
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const StageNode& st = *it->get();
    if (st.op->kind == te::OpKind::kPlaceholder || st.attach_type == AttachType::kInline) continue;
    Stmt nest = st.op->kind == te::OpKind::kExtern ? build_extern_body(st.op, st.extern_params)
                                                   : NestBuilder(st, bounds, analyzer, padded).build();
    if (st.attach_type == AttachType::kScope) {
      InjectAttach inject(st.attach_ivar, [&](Stmt inner) { return realize(st, bounds, seq({nest, inner})); });
      body = inject.mutate(body);
      LOOM_CHECK(inject.found,
                 "compute_at: stage '{}' is attached at axis '{}' of stage '{}', but that loop was not generated "
                 "(is '{}' inlined, or the axis not a leaf of it?)",
                 st.name(), st.attach_ivar.name(), st.attach_stage->name(), st.attach_stage->name());
    } else if (st.is_output) {
      body = seq({nest, body});
    } else {
      body = realize(st, bounds, seq({nest, body}));
    }
  }
  LOOM_CHECK(body.defined(), "schedule has nothing to compute");
  return RemoveLoopScope().mutate(body);
}

}  // namespace loom::lowering
