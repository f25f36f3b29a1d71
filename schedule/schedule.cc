// create_schedule, Schedule and ScheduleNode: the stages of a tensor program, looked up by
// operation, kept in topological order, and deep-copied for tuners.
#include <unordered_set>

#include "schedule_util.h"

namespace loom::schedule {

// ---------------------------------------------------------------- StageNode
std::string StageNode::name() const { return op ? op->name : std::string(); }

std::vector<IterVar> StageNode::root_iter_vars() const { return detail::root_iter_vars(op); }

// ---------------------------------------------------------------- Stage accessors
IterVar Stage::axis(size_t i) const {
  LOOM_CHECK(defined(), "Stage::axis: the stage is undefined");
  const auto& op = node_->op;
  LOOM_CHECK(op->kind == te::OpKind::kCompute, "stage '{}': axis({}): {} has no axes", op->name, i,
             op->kind == te::OpKind::kExtern ? "an extern operation" : "a placeholder");
  LOOM_CHECK(i < op->axis.size(), "stage '{}': axis({}) is out of range: the operation has {} spatial axes",
             op->name, i, op->axis.size());
  return op->axis[i];
}

IterVar Stage::reduce_axis(size_t i) const {
  LOOM_CHECK(defined(), "Stage::reduce_axis: the stage is undefined");
  const auto& op = node_->op;
  LOOM_CHECK(op->kind == te::OpKind::kCompute, "stage '{}': reduce_axis({}): {} has no axes", op->name, i,
             op->kind == te::OpKind::kExtern ? "an extern operation" : "a placeholder");
  LOOM_CHECK(i < op->reduce_axis.size(),
             "stage '{}': reduce_axis({}) is out of range: the operation has {} reduce axes", op->name, i,
             op->reduce_axis.size());
  return op->reduce_axis[i];
}

const std::vector<IterVar>& Stage::leaf_iter_vars() const {
  LOOM_CHECK(defined(), "Stage::leaf_iter_vars: the stage is undefined");
  return node_->leaf_iter_vars;
}

// ---------------------------------------------------------------- ScheduleNode
Stage ScheduleNode::stage_of(const Operation& op) const {
  LOOM_CHECK(op != nullptr, "schedule: the operation is undefined");
  auto it = stage_map.find(op.get());
  if (it == stage_map.end()) {
    std::string outs;
    for (auto& o : outputs) outs += fmt::format("{}'{}'", outs.empty() ? "" : ", ", o->name);
    fail("schedule: '{}' is not in this schedule (it is not computed on the way to the outputs {})", op->name,
         outs);
  }
  return it->second;
}

void ScheduleNode::sort_stages() {
  // Iterative depth-first walk (deep chains of elementwise stages must not overflow the
  // stack); a stage is emitted after every stage it reads, otherwise in its current order.
  std::vector<Stage> order;
  std::unordered_set<const StageNode*> visited;
  struct Frame {
    Stage stage;
    std::vector<Tensor> inputs;
    size_t next = 0;
  };
  auto inputs_of = [](const Stage& s) {
    return s->op->input_tensors();
  };
  for (const Stage& root : stages) {
    if (!visited.insert(root.get()).second) continue;
    std::vector<Frame> stack;
    stack.push_back({root, inputs_of(root)});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.inputs.size()) {
        auto it = stage_map.find(f.inputs[f.next++].op().get());
        if (it != stage_map.end() && visited.insert(it->second.get()).second) {
          Stage in = it->second;
          stack.push_back({in, inputs_of(in)});
        }
        continue;
      }
      order.push_back(f.stage);
      stack.pop_back();
    }
  }
  LOOM_ICHECK(order.size() == stages.size());
  stages = std::move(order);
}

// ---------------------------------------------------------------- Schedule
Stage Schedule::operator[](const Tensor& t) const {
  LOOM_CHECK(defined(), "schedule: the schedule is undefined");
  LOOM_CHECK(t.defined(), "schedule: the tensor is undefined (a default-constructed Tensor)");
  auto it = node_->stage_map.find(t.op().get());
  if (it == node_->stage_map.end()) {
    std::string outs;
    for (auto& o : node_->outputs) outs += fmt::format("{}'{}'", outs.empty() ? "" : ", ", o->name);
    fail("schedule: tensor '{}' is not in this schedule (it is not computed on the way to the outputs {})",
         t.op()->name, outs);
  }
  return it->second;
}

Stage Schedule::operator[](const Operation& op) const {
  LOOM_CHECK(defined(), "schedule: the schedule is undefined");
  return node_->stage_of(op);
}

const std::vector<Stage>& Schedule::stages() const {
  LOOM_CHECK(defined(), "schedule: the schedule is undefined");
  return node_->stages;
}

const std::vector<Operation>& Schedule::outputs() const {
  LOOM_CHECK(defined(), "schedule: the schedule is undefined");
  return node_->outputs;
}

Schedule Schedule::copy() const {
  LOOM_CHECK(defined(), "schedule: copy of an undefined schedule");
  auto n = std::make_shared<ScheduleNode>();
  n->outputs = node_->outputs;
  n->retired_ops = node_->retired_ops;
  n->trace = node_->trace;
  n->trace_threads = node_->trace_threads;
  std::unordered_map<const StageNode*, Stage> remap;
  for (const Stage& s : node_->stages) {
    Stage c(std::make_shared<StageNode>(*s.get()));
    c->schedule = n;
    remap[s.get()] = c;
    n->stages.push_back(c);
  }
  for (const Stage& c : n->stages) {
    if (c->attach_stage.defined()) {
      auto it = remap.find(c->attach_stage.get());
      LOOM_ICHECK(it != remap.end());
      c->attach_stage = it->second;
    }
  }
  for (const auto& [op, s] : node_->stage_map) {
    auto it = remap.find(s.get());
    LOOM_ICHECK(it != remap.end());
    n->stage_map[op] = it->second;
  }
  return Schedule(std::move(n));
}

// ---------------------------------------------------------------- create_schedule
Schedule create_schedule(const std::vector<Operation>& outputs) {
  LOOM_CHECK(!outputs.empty(), "create_schedule: no output operations given");
  std::vector<Tensor> roots;
  std::vector<Operation> outs;
  std::unordered_set<const te::OperationNode*> seen;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Operation& op = outputs[i];
    LOOM_CHECK(op != nullptr, "create_schedule: output {} is undefined", i);
    LOOM_CHECK(op->kind != te::OpKind::kPlaceholder,
               "create_schedule: output '{}' is a placeholder; an output must be computed", op->name);
    if (!seen.insert(op.get()).second) continue;
    outs.push_back(op);
    for (int v = 0; v < op->num_outputs(); ++v) roots.push_back(te::output(op, v));
  }
  auto n = std::make_shared<ScheduleNode>();
  n->outputs = outs;
  for (const Operation& op : te::post_dfs_order(roots)) {
    Stage s = detail::make_stage(op);
    s->is_output = seen.count(op.get()) > 0;
    s->schedule = n;
    n->stages.push_back(s);
    n->stage_map[op.get()] = s;
  }
  return Schedule(std::move(n));
}

Schedule create_schedule(const std::vector<Tensor>& outputs) {
  std::vector<Operation> ops;
  for (size_t i = 0; i < outputs.size(); ++i) {
    LOOM_CHECK(outputs[i].defined(), "create_schedule: output tensor {} is undefined", i);
    ops.push_back(outputs[i].op());
  }
  return create_schedule(ops);
}

}  // namespace loom::schedule
