// rfactor: turns one (split part of a) reduce axis into a spatial axis of a new stage of
// partial results, which the original stage then reduces.
//
// With C(i) = sum_k f(i, k), k split into ko * F + ki, rfactor(C, ki, 0) makes
//   C.rf(ki, i) = sum_ko f(i, ko * F + ki)   (where ko * F + ki < extent(k))
//   C(i)        = sum_{ki.v} C.rf(ki.v, i)
#include <algorithm>
#include <unordered_set>

#include "schedule_util.h"

namespace loom::schedule {

using te::Range;
using te::Var;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Constant extents of every iteration variable descending from the root reduce axes, and
/// the offsets of the roots.
struct ReduceFamily {
  std::unordered_map<const te::IterVarNode*, int64_t> extent, min, step;  // step: split factor
  std::unordered_set<const te::IterVarNode*> members;
};

ReduceFamily reduce_family(const StageNode* s, const std::string& where) {
  ReduceFamily f;
  for (const IterVar& iv : s->op->reduce_axis) {
    auto mn = te::as_const_int(iv->dom.min), ext = te::as_const_int(iv->dom.extent);
    LOOM_CHECK(mn && ext, "{}: reduce axis '{}' must have a constant range", where, iv.name());
    f.members.insert(iv.get());
    f.min[iv.get()] = *mn;
    f.extent[iv.get()] = *ext;
  }
  for (const IterVarRelation& r : s->relations) {
    if (r.kind == RelationKind::kSplit) {
      const SplitRelation& sp = r.split;
      if (!f.members.count(sp.parent.get())) continue;
      int64_t e = f.extent.at(sp.parent.get());
      int64_t step, outer, inner;
      if (sp.factor.defined()) {
        auto c = te::as_const_int(sp.factor);
        LOOM_CHECK(c, "{}: '{}' was split by a non-constant factor", where, sp.parent.name());
        step = *c;
        inner = std::min(step, e);
        outer = ceil_div(e, step);
      } else {
        auto c = te::as_const_int(sp.nparts);
        LOOM_CHECK(c, "{}: '{}' was split into a non-constant number of parts", where, sp.parent.name());
        outer = *c;
        step = inner = ceil_div(e, *c);
      }
      f.step[sp.parent.get()] = step;
      for (auto [iv, ext] : {std::pair{sp.outer.get(), outer}, std::pair{sp.inner.get(), inner}}) {
        f.members.insert(iv);
        f.extent[iv] = ext;
        f.min[iv] = 0;
      }
    } else if (r.kind == RelationKind::kFuse) {
      const FuseRelation& fu = r.fuse;
      if (!f.members.count(fu.outer.get())) continue;
      LOOM_ICHECK(f.members.count(fu.inner.get()));
      f.members.insert(fu.fused.get());
      f.extent[fu.fused.get()] = f.extent.at(fu.outer.get()) * f.extent.at(fu.inner.get());
      f.min[fu.fused.get()] = 0;
    } else {
      const RebaseRelation& rb = r.rebase;
      if (!f.members.count(rb.parent.get())) continue;
      f.members.insert(rb.rebased.get());
      f.extent[rb.rebased.get()] = f.extent.at(rb.parent.get());
      f.min[rb.rebased.get()] = 0;
    }
  }
  return f;
}

Expr int_const(const Var& like, int64_t v) { return te::make_const(like.dtype(), v); }

}  // namespace

Tensor Schedule::rfactor(const Tensor& t, const IterVar& axis, int factor_axis) {
  LOOM_CHECK(defined(), "rfactor: the schedule is undefined");
  ScheduleNode* sch = node_.get();
  Stage s = detail::stage_of_tensor(sch, t, "rfactor");
  const Operation op = s->op;
  const std::string where = fmt::format("stage '{}': rfactor", op->name);
  LOOM_CHECK(detail::is_reduction(op), "{}: the operation is not a reduction", where);
  LOOM_CHECK(axis.defined(), "{}: the axis is undefined (a default-constructed IterVar)", where);
  LOOM_CHECK(std::find(s->leaf_iter_vars.begin(), s->leaf_iter_vars.end(), axis) != s->leaf_iter_vars.end(),
             "{}: '{}' is not a leaf axis of this stage", where, axis.name());
  LOOM_CHECK(axis.type() == te::IterVarType::kCommReduce, "{}: '{}' is not a reduction axis", where, axis.name());
  LOOM_CHECK(factor_axis >= 0 && size_t(factor_axis) <= op->axis.size(),
             "{}: factor_axis {} is out of range: it must lie in [0, {}]", where, factor_axis, op->axis.size());
  ReduceFamily fam = reduce_family(s.get(), where);
  LOOM_ICHECK(fam.members.count(axis.get()));
  for (const Stage& o : sch->stages) {
    LOOM_CHECK(!(o->attach_type == AttachType::kScope && o->attach_stage == s && fam.members.count(o->attach_ivar.get())),
               "{}: stage '{}' is computed at reduction axis '{}', which rfactor removes", where, o->name(),
               o->attach_ivar.name());
  }
  const auto* reduce0 = op->body[0].as<te::ReduceNode>();
  for (const Expr& b : op->body) LOOM_ICHECK(b.as<te::ReduceNode>() != nullptr);
  detail::StepRecorder rec(s.get(), StepKind::kRfactor);
  rec.axis(axis).num("output", int64_t(t.value_index())).num("factor_axis", int64_t(factor_axis));

  // Axes of the partial-result op: the spatial axes with `axis` inserted at factor_axis,
  // reducing over every other reduce leaf.
  te::VarMap vmap;
  std::vector<IterVar> rf_axis;
  for (const IterVar& iv : op->axis) {
    rf_axis.emplace_back(iv->dom, Var(iv.name(), iv.var().dtype()), te::IterVarType::kDataPar);
    vmap[iv.var().get()] = rf_axis.back().var();
  }
  const Var& av = axis.var();
  IterVar rf_new(Range(int_const(av, 0), int_const(av, fam.extent.at(axis.get()))), Var(axis.name(), av.dtype()),
                 te::IterVarType::kDataPar);
  rf_axis.insert(rf_axis.begin() + factor_axis, rf_new);

  std::unordered_map<const te::IterVarNode*, Expr> value;
  std::vector<IterVar> rf_reduce;
  value[axis.get()] = rf_new.var();
  for (const IterVar& leaf : s->leaf_iter_vars) {
    if (leaf == axis || !fam.members.count(leaf.get())) continue;
    const Var& v = leaf.var();
    IterVar copy(Range(int_const(v, fam.min.at(leaf.get())), int_const(v, fam.extent.at(leaf.get()))),
                 Var(leaf.name(), v.dtype()), te::IterVarType::kCommReduce);
    rf_reduce.push_back(copy);
    value[leaf.get()] = copy.var();
  }

  // Express the root reduce variables through the leaves, guarding uneven splits.
  Expr cond;
  for (auto it = s->relations.rbegin(); it != s->relations.rend(); ++it) {
    if (it->kind == RelationKind::kSplit) {
      const SplitRelation& sp = it->split;
      if (!fam.members.count(sp.parent.get())) continue;
      const Var& pv = sp.parent.var();
      int64_t step = fam.step.at(sp.parent.get()), e = fam.extent.at(sp.parent.get());
      Expr offset = value.at(sp.outer.get()) * int_const(pv, step) + value.at(sp.inner.get());
      if ((fam.extent.at(sp.outer.get()) - 1) * step + fam.extent.at(sp.inner.get()) > e) {
        Expr guard = offset < int_const(pv, e);
        cond = cond.defined() ? (cond && guard) : guard;
      }
      int64_t mn = fam.min.at(sp.parent.get());
      value[sp.parent.get()] = mn == 0 ? offset : offset + int_const(pv, mn);
    } else if (it->kind == RelationKind::kFuse) {
      const FuseRelation& fu = it->fuse;
      if (!fam.members.count(fu.fused.get())) continue;
      Expr ie = int_const(fu.inner.var(), fam.extent.at(fu.inner.get()));
      value[fu.outer.get()] = te::floordiv(value.at(fu.fused.get()), ie);
      value[fu.inner.get()] = te::floormod(value.at(fu.fused.get()), ie);
    } else {
      const RebaseRelation& rb = it->rebase;
      if (!fam.members.count(rb.rebased.get())) continue;
      int64_t mn = fam.min.at(rb.parent.get());
      value[rb.parent.get()] = mn == 0 ? value.at(rb.rebased.get()) : value.at(rb.rebased.get()) + int_const(rb.parent.var(), mn);
    }
  }
  for (const IterVar& root : op->reduce_axis) vmap[root.var().get()] = value.at(root.get());
  if (reduce0->condition.defined() && !te::is_one(reduce0->condition)) {
    Expr c = te::substitute(reduce0->condition, vmap);
    cond = cond.defined() ? (c && cond) : c;
  }
  const Expr always = te::make_const(DataType::Bool(), int64_t(1));

  std::vector<Expr> sources;
  for (const Expr& src : reduce0->source) sources.push_back(te::substitute(src, vmap));
  std::vector<Expr> rf_body;
  for (const Expr& b : op->body) {
    const auto* r = b.as<te::ReduceNode>();
    if (rf_reduce.empty()) {
      const Expr& x = sources[size_t(r->value_index)];
      rf_body.push_back(cond.defined() ? te::select(cond, x, reduce0->combiner->identity[size_t(r->value_index)]) : x);
    } else {
      rf_body.push_back(
          te::make<te::ReduceNode>(r->dtype, r->combiner, sources, rf_reduce, cond.defined() ? cond : always,
                                   r->value_index, std::vector<Expr>{}));
    }
  }
  Operation rf_op = detail::make_compute_op(detail::unique_stage_name(sch, op->name + ".rf"), op->tag, op->attrs,
                                            rf_axis, rf_reduce, rf_body);

  // The original stage now reduces the partial results over a new axis.
  IterVar k_new(rf_new->dom, Var(axis.name() + ".v", av.dtype()), te::IterVarType::kCommReduce);
  std::vector<Expr> idx;
  for (const IterVar& iv : op->axis) idx.push_back(iv.var());
  idx.insert(idx.begin() + factor_axis, k_new.var());
  std::vector<Expr> partial;
  for (int i = 0; i < rf_op->num_outputs(); ++i) partial.push_back(te::output(rf_op, i)(idx));
  std::vector<Expr> body;
  for (const Expr& b : op->body) {
    const auto* r = b.as<te::ReduceNode>();
    body.push_back(te::make<te::ReduceNode>(r->dtype, r->combiner, partial, std::vector<IterVar>{k_new}, always,
                                            r->value_index, r->init));
  }
  Operation new_op = detail::make_compute_op(op->name, op->tag, op->attrs, op->axis, {k_new}, body);

  Stage rs = detail::make_stage(rf_op);
  rs->schedule = node_;
  auto pos = std::find(sch->stages.begin(), sch->stages.end(), s);
  sch->stages.insert(pos, rs);
  sch->stage_map[rf_op.get()] = rs;

  detail::set_stage_op(sch, s, new_op);
  auto drop = [&](const IterVar& iv) { return fam.members.count(iv.get()) > 0; };
  std::erase_if(s->all_iter_vars, drop);
  std::erase_if(s->leaf_iter_vars, drop);
  std::erase_if(s->relations, [&](const IterVarRelation& r) {
    switch (r.kind) {
      case RelationKind::kSplit: return drop(r.split.parent);
      case RelationKind::kFuse: return drop(r.fuse.outer);
      case RelationKind::kRebase: return drop(r.rebase.parent);
    }
    return false;
  });
  std::erase_if(s->iter_var_attrs, [&](const auto& kv) { return fam.members.count(kv.first) > 0; });
  s->all_iter_vars.push_back(k_new);
  s->leaf_iter_vars.push_back(k_new);
  detail::refresh_dataflow(sch);
  sch->sort_stages();
  rec.commit();
  return te::output(rf_op, t.value_index());
}

}  // namespace loom::schedule
