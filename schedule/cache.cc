// cache_read and cache_write: stages that copy a tensor into (or compute it in) another
// storage scope, with the dataflow of the schedule rewired through them.
#include <algorithm>
#include <unordered_set>

#include "schedule_util.h"

namespace loom::schedule {

using te::Range;
using te::Var;

namespace {

/// Renames the iteration variables of a compute body: plain variables through `vars`, and
/// the reduce axes of a Reduce through `ivars`.
class AxisRenamer : public te::ExprMutator {
 public:
  AxisRenamer(const te::VarMap& vars, const std::unordered_map<const te::IterVarNode*, IterVar>& ivars)
      : vars_(vars), ivars_(ivars) {}

 protected:
  Expr mutate_(const te::VarNode* op) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? te::to_expr(op) : it->second;
  }
  Expr mutate_(const te::ReduceNode* op) override {
    Expr e = te::ExprMutator::mutate_(op);
    const auto* r = e.as<te::ReduceNode>();
    std::vector<IterVar> axis;
    for (const IterVar& iv : r->axis) {
      auto it = ivars_.find(iv.get());
      axis.push_back(it == ivars_.end() ? iv : it->second);
    }
    return te::make<te::ReduceNode>(r->dtype, r->combiner, r->source, std::move(axis), r->condition, r->value_index,
                                    r->init);
  }

 private:
  const te::VarMap& vars_;
  const std::unordered_map<const te::IterVarNode*, IterVar>& ivars_;
};

void insert_stage(ScheduleNode* sch, const Stage& s, const Stage& anchor, bool after) {
  auto it = std::find(sch->stages.begin(), sch->stages.end(), anchor);
  LOOM_ICHECK(it != sch->stages.end());
  sch->stages.insert(after ? it + 1 : it, s);
  sch->stage_map[s->op.get()] = s;
}

}  // namespace

// ---------------------------------------------------------------- cache_read
Tensor Schedule::cache_read(const Tensor& t, const std::string& scope, const std::vector<Operation>& readers) {
  LOOM_CHECK(defined(), "cache_read: the schedule is undefined");
  ScheduleNode* sch = node_.get();
  Stage ts = detail::stage_of_tensor(sch, t, "cache_read");
  const std::string where = fmt::format("cache_read of '{}'", ts->name());
  detail::check_scope(where, scope);
  LOOM_CHECK(!readers.empty(), "{}: no readers given", where);

  Tensor src = te::output(ts->op, t.value_index());
  std::vector<IterVar> axis;
  std::vector<Expr> idx;
  for (size_t d = 0; d < src.ndim(); ++d) {
    const Expr& ext = src.shape()[d];
    IterVar iv(Range(te::make_zero(ext.dtype()), ext), Var(fmt::format("ax{}", d), ext.dtype()),
               te::IterVarType::kDataPar);
    axis.push_back(iv);
    idx.push_back(iv.var());
  }
  Operation cache_op = detail::make_compute_op(detail::unique_stage_name(sch, ts->name() + "." + scope), "", {}, axis,
                                               {}, {src(idx)});
  Tensor cache = te::output(cache_op, 0);

  detail::LoadMap map{{detail::LoadKey{ts.get(), t.value_index()}, cache}};
  std::vector<std::pair<Stage, std::vector<Expr>>> rewrites;
  std::unordered_set<const StageNode*> seen;
  detail::StepRecorder rec(ts.get(), StepKind::kCacheRead);
  rec.num("output", int64_t(t.value_index())).str("scope", scope);
  for (size_t i = 0; i < readers.size(); ++i) {
    LOOM_CHECK(readers[i] != nullptr, "{}: reader {} is undefined", where, i);
    Stage rs = sch->stage_of(readers[i]);
    LOOM_CHECK(rs != ts, "{}: '{}' cannot read its own cache", where, rs->name());
    LOOM_CHECK(rs->op->kind == te::OpKind::kCompute, "{}: reader '{}' is {}", where, rs->name(),
               rs->op->kind == te::OpKind::kExtern ? "an extern operation (it reads its inputs as they are)"
                                                   : "a placeholder");
    if (!seen.insert(rs.get()).second) continue;
    bool changed = false;
    auto body = detail::redirect_loads(sch, rs->op->body, map, &changed);
    LOOM_CHECK(changed, "{}: '{}' does not read '{}'", where, rs->name(), ts->name());
    rec.reader(rs.get());
    rewrites.emplace_back(rs, std::move(body));
  }

  Stage cs = detail::make_stage(cache_op);
  cs->scope = scope;
  cs->schedule = node_;
  insert_stage(sch, cs, ts, /*after=*/true);
  for (auto& [rs, body] : rewrites) {
    const Operation& op = rs->op;
    detail::set_stage_op(sch, rs,
                         detail::make_compute_op(op->name, op->tag, op->attrs, op->axis, op->reduce_axis, body));
  }
  detail::refresh_dataflow(sch);
  sch->sort_stages();
  rec.commit();
  return cache;
}

Tensor Schedule::cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers) {
  std::vector<Operation> ops;
  for (size_t i = 0; i < readers.size(); ++i) {
    LOOM_CHECK(readers[i].defined(), "cache_read: reader {} is undefined", i);
    ops.push_back(readers[i].op());
  }
  return cache_read(t, scope, ops);
}

// ---------------------------------------------------------------- cache_write
Tensor Schedule::cache_write(const Tensor& t, const std::string& scope) {
  LOOM_CHECK(defined(), "cache_write: the schedule is undefined");
  ScheduleNode* sch = node_.get();
  Stage s = detail::stage_of_tensor(sch, t, "cache_write");
  const Operation op = s->op;
  const std::string where = fmt::format("stage '{}': cache_write", op->name);
  LOOM_CHECK(op->kind == te::OpKind::kCompute, "{}: '{}' is {}; only computed tensors can be cached", where,
             op->name, op->kind == te::OpKind::kExtern ? "an extern operation" : "a placeholder");
  detail::check_scope(where, scope);
  LOOM_CHECK(s->attach_type != AttachType::kInline, "{}: the stage is inlined", where);
  LOOM_CHECK(s->relations.empty() && s->iter_var_attrs.empty() && s->leaf_iter_vars == s->all_iter_vars,
             "{}: must come before the stage's loops are scheduled (its axes were already split, fused, reordered "
             "or annotated)",
             where);

  // Stages attached to one of the spatial loops move to the same loop of the copy.
  std::vector<std::pair<Stage, size_t>> reattach;
  for (const Stage& o : sch->stages) {
    if (o->attach_type != AttachType::kScope || o->attach_stage != s) continue;
    auto it = std::find(op->axis.begin(), op->axis.end(), o->attach_ivar);
    LOOM_CHECK(it != op->axis.end(),
               "{}: stage '{}' is computed at reduction axis '{}', which the copy stage does not have", where,
               o->name(), o->attach_ivar.name());
    reattach.emplace_back(o, size_t(it - op->axis.begin()));
  }

  detail::StepRecorder rec(s.get(), StepKind::kCacheWrite);
  rec.num("output", int64_t(t.value_index())).str("scope", scope);
  te::VarMap vars;
  std::unordered_map<const te::IterVarNode*, IterVar> ivars;
  auto rename = [&](const IterVar& iv) {
    Range dom = iv->dom;
    if (dom.min.defined()) dom = Range(te::substitute(dom.min, vars), te::substitute(dom.extent, vars));
    IterVar n(dom, Var(iv.name() + ".c", iv.var().dtype()), iv.type(), iv->thread_tag);
    vars[iv.var().get()] = n.var();
    ivars[iv.get()] = n;
    return n;
  };
  std::vector<IterVar> cache_axis, cache_reduce;
  for (const IterVar& iv : op->axis) cache_axis.push_back(rename(iv));
  for (const IterVar& iv : op->reduce_axis) cache_reduce.push_back(rename(iv));
  AxisRenamer renamer(vars, ivars);
  std::vector<Expr> cache_body;
  for (const Expr& b : op->body) cache_body.push_back(renamer.mutate(b));
  Operation cache_op = detail::make_compute_op(detail::unique_stage_name(sch, op->name + "." + scope), op->tag,
                                               op->attrs, cache_axis, cache_reduce, cache_body);

  std::vector<IterVar> copy_axis;
  std::vector<Expr> idx;
  for (const IterVar& iv : op->axis) {
    copy_axis.emplace_back(iv->dom, Var(iv.name(), iv.var().dtype()), te::IterVarType::kDataPar);
    idx.push_back(copy_axis.back().var());
  }
  std::vector<Expr> copy_body;
  for (int i = 0; i < cache_op->num_outputs(); ++i) copy_body.push_back(te::output(cache_op, i)(idx));
  Operation copy_op = detail::make_compute_op(op->name, "", {}, copy_axis, {}, copy_body);

  Stage cs = detail::make_stage(cache_op);
  cs->scope = scope;
  cs->schedule = node_;
  insert_stage(sch, cs, s, /*after=*/false);
  detail::set_stage_op(sch, s, copy_op);
  s->all_iter_vars = copy_axis;
  s->leaf_iter_vars = copy_axis;
  for (auto& [o, dim] : reattach) o->attach_ivar = copy_axis[dim];
  detail::refresh_dataflow(sch);
  sch->sort_stages();
  rec.commit();
  return te::output(cache_op, t.value_index());
}

}  // namespace loom::schedule
