// Helpers shared by the schedule primitives.
#include "schedule_util.h"

#include <algorithm>

namespace loom::schedule::detail {

te::Operation make_compute_op(std::string name, std::string tag, std::map<std::string, std::string> attrs,
                              std::vector<IterVar> axis, std::vector<IterVar> reduce_axis, std::vector<Expr> body) {
  auto n = std::make_shared<te::OperationNode>();
  n->kind = te::OpKind::kCompute;
  n->name = std::move(name);
  n->tag = std::move(tag);
  n->attrs = std::move(attrs);
  n->axis = std::move(axis);
  n->reduce_axis = std::move(reduce_axis);
  n->body = std::move(body);
  LOOM_ICHECK(!n->body.empty());
  return n;
}

std::vector<IterVar> root_iter_vars(const te::Operation& op) {
  std::vector<IterVar> r;
  if (!op || op->kind != te::OpKind::kCompute) return r;
  r = op->axis;
  r.insert(r.end(), op->reduce_axis.begin(), op->reduce_axis.end());
  return r;
}

bool is_reduction(const te::Operation& op) {
  return op && op->kind == te::OpKind::kCompute && !op->body.empty() && op->body[0].as<te::ReduceNode>() != nullptr;
}

Stage make_stage(const te::Operation& op) {
  auto n = std::make_shared<StageNode>();
  n->op = op;
  n->origin_op = op;
  n->all_iter_vars = root_iter_vars(op);
  n->leaf_iter_vars = n->all_iter_vars;
  return Stage(std::move(n));
}

void set_stage_op(ScheduleNode* sch, const Stage& stage, const te::Operation& op) {
  // The replaced operation stays mapped to its stage: a consumer refreshed to read it (an
  // intermediate operation, after an earlier primitive) is redirected by the next refresh.
  if (stage->op && stage->op != stage->origin_op) sch->retired_ops.push_back(stage->op);
  std::replace(sch->outputs.begin(), sch->outputs.end(), stage->op, op);
  stage->op = op;
  sch->stage_map[op.get()] = stage;
}

StepRecorder::StepRecorder(const StageNode* stage, StepKind kind) : sch_(stage->schedule.lock()), stage_(stage) {
  step_.kind = kind;
  if (sch_) step_.stage = stage_ref(stage);
}

StepRef StepRecorder::stage_ref(const StageNode* s) const {
  StepRef r{-1, s->name()};
  for (size_t i = 0; i < sch_->stages.size(); ++i)
    if (sch_->stages[i].get() == s) r.index = int(i);
  return r;
}

namespace {
StepRef iter_var_ref(const StageNode* s, const IterVar& iv) {
  StepRef r{-1, iv.defined() ? iv.name() : ""};
  for (size_t i = 0; i < s->all_iter_vars.size(); ++i)
    if (s->all_iter_vars[i] == iv) r.index = int(i);
  return r;
}
}  // namespace

StepRecorder& StepRecorder::axis(const IterVar& iv) {
  if (sch_) step_.axes.push_back(iter_var_ref(stage_, iv));
  return *this;
}

StepRecorder& StepRecorder::at(const StageNode* parent, const IterVar& iv) {
  if (!sch_) return *this;
  step_.at = stage_ref(parent);
  step_.axes.push_back(iter_var_ref(parent, iv));
  return *this;
}

StepRecorder& StepRecorder::reader(const StageNode* reader) {
  if (sch_) step_.readers.push_back(stage_ref(reader));
  return *this;
}

StepRecorder& StepRecorder::thread(const IterVar& thread) {
  if (!sch_) return *this;
  auto& seen = sch_->trace_threads;
  auto it = std::find(seen.begin(), seen.end(), thread);
  step_.ints["thread_id"] = it - seen.begin();
  if (it == seen.end()) seen.push_back(thread);
  step_.strs["thread"] = thread->thread_tag;
  if (thread->dom.extent.defined()) num("extent", thread->dom.extent);
  return *this;
}

StepRecorder& StepRecorder::num(const std::string& key, const Expr& e) {
  if (!sch_) return *this;
  if (auto c = te::as_const_int(e)) {
    step_.ints[key] = *c;
  } else {
    step_.not_replayable = fmt::format("its {} is the expression {}, not a constant", key, te::to_string(e));
  }
  return *this;
}

StepRecorder& StepRecorder::num(const std::string& key, int64_t v) {
  if (sch_) step_.ints[key] = v;
  return *this;
}

StepRecorder& StepRecorder::str(const std::string& key, std::string v) {
  if (sch_) step_.strs[key] = std::move(v);
  return *this;
}

void StepRecorder::commit() {
  if (sch_) sch_->trace.push_back(std::move(step_));
}

Stage stage_of_tensor(const ScheduleNode* sch, const Tensor& t, const char* what) {
  LOOM_CHECK(t.defined(), "{}: the tensor is undefined (a default-constructed Tensor)", what);
  auto it = sch->stage_map.find(t.op().get());
  LOOM_CHECK(it != sch->stage_map.end(), "{}: tensor '{}' is not in this schedule", what, t.op()->name);
  return it->second;
}

namespace {

/// Redirects reads according to a LoadMap, and (if `refresh`) any read of a stale
/// operation to the current operation of its stage.
class LoadRedirector : public te::ExprMutator {
 public:
  LoadRedirector(const ScheduleNode* sch, const LoadMap* map, bool refresh) : sch_(sch), map_(map), refresh_(refresh) {}

 protected:
  Expr mutate_(const te::ProducerLoadNode* op) override {
    Expr e = te::ExprMutator::mutate_(op);
    const auto* load = e.as<te::ProducerLoadNode>();
    const te::OperationNode* producer = load->producer->op.get();
    auto it = sch_->stage_map.find(producer);
    if (it == sch_->stage_map.end()) return e;
    const Stage& s = it->second;
    if (map_) {
      auto m = map_->find(LoadKey{s.get(), load->producer->value_index});
      if (m != map_->end()) return m->second(load->indices);
    }
    if (refresh_ && s->op.get() != producer) {
      return te::make<te::ProducerLoadNode>(load->dtype, te::output(s->op, load->producer->value_index).node(),
                                            load->indices);
    }
    return e;
  }

 private:
  const ScheduleNode* sch_;
  const LoadMap* map_;
  bool refresh_;
};

std::vector<Expr> mutate_body(te::ExprMutator& m, const std::vector<Expr>& body, bool* changed) {
  std::vector<Expr> out;
  *changed = false;
  for (auto& b : body) {
    out.push_back(m.mutate(b));
    *changed |= !out.back().same_as(b);
  }
  return out;
}

}  // namespace

std::vector<Expr> redirect_loads(const ScheduleNode* sch, const std::vector<Expr>& body, const LoadMap& map,
                                 bool* changed) {
  LoadRedirector r(sch, &map, false);
  return mutate_body(r, body, changed);
}

void refresh_dataflow(ScheduleNode* sch) {
  LoadRedirector r(sch, nullptr, true);
  for (auto& s : sch->stages) {
    const te::Operation& op = s->op;
    if (op->kind == te::OpKind::kExtern) {
      // An extern operation reads whole tensors: each input follows its stage's operation.
      auto n = std::make_shared<te::OperationNode>(*op);
      bool changed = false;
      for (Tensor& in : n->inputs) {
        auto it = sch->stage_map.find(in.op().get());
        if (it == sch->stage_map.end() || it->second->op == in.op()) continue;
        in = te::output(it->second->op, in.value_index());
        changed = true;
      }
      if (changed) set_stage_op(sch, s, n);
      continue;
    }
    if (op->kind != te::OpKind::kCompute) continue;
    bool changed = false;
    auto body = mutate_body(r, op->body, &changed);
    if (!changed) continue;
    set_stage_op(sch, s, make_compute_op(op->name, op->tag, op->attrs, op->axis, op->reduce_axis, std::move(body)));
  }
}

std::string unique_stage_name(const ScheduleNode* sch, const std::string& base) {
  auto taken = [&](const std::string& n) {
    return std::any_of(sch->stages.begin(), sch->stages.end(), [&](const Stage& s) { return s->op->name == n; });
  };
  if (!taken(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = fmt::format("{}.{}", base, i);
    if (!taken(n)) return n;
  }
}

void check_scope(const std::string& where, const std::string& scope) {
  static const char* kKnown[] = {"global", "shared", "shared.dyn", "local", "warp"};
  bool ok = scope.rfind("wmma.", 0) == 0 || scope.rfind("mma.", 0) == 0 ||
            std::any_of(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return scope == k; });
  LOOM_CHECK(ok, "{}: unknown storage scope '{}' (expected global, shared, shared.dyn, local, warp, wmma.* or mma.*)",
             where, scope);
}

}  // namespace loom::schedule::detail
