// Bound inference: the range of every iteration variable of every stage.
//
// Stages are visited consumers first. A root stage covers its operation's whole shape. A
// stage computed at (consumer S, leaf L) covers exactly the region S reads from it for one
// iteration of the loops of S down to L: those loops are fixed points, the loops inside L
// range over their extents (as do thread-bound loops that share the stage's memory).
#include <algorithm>

#include "iter_relations.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"
#include "loom/te/expr_functor.h"

namespace loom::lowering {

using schedule::AttachType;
using schedule::IterAnnotation;
using schedule::Stage;
using schedule::StageNode;

namespace {

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

/// Whether a loop of `consumer` above the attach point still ranges over its extent from
/// the point of view of a producer stored in `scope`.
bool needs_relax(const StageNode& consumer, const te::IterVar& leaf, const std::string& scope) {
  auto it = consumer.iter_var_attrs.find(leaf.get());
  if (it == consumer.iter_var_attrs.end() || it->second.annotation != IterAnnotation::kThreadBind) return false;
  const std::string& tag = it->second.bind_thread->thread_tag;
  bool global = scope.empty() || scope == "global";
  if (starts_with(tag, "threadIdx") || starts_with(tag, "vthread")) return global || scope == "shared";
  if (starts_with(tag, "blockIdx")) return global;
  return false;
}

/// Every read of an output of `producer` in `body`.
std::vector<const te::ProducerLoadNode*> reads_of(const te::Operation& producer, const std::vector<Expr>& body) {
  std::vector<const te::ProducerLoadNode*> reads;
  for (const Expr& e : body) {
    te::post_order_visit(e, [&](const Expr& x) {
      if (auto* load = x.as<te::ProducerLoadNode>(); load && load->producer->op == producer) reads.push_back(load);
    });
  }
  return reads;
}

/// The region of `producer` that `consumer` reads per iteration of its loops down to `attach`.
std::vector<Range> required_region(const StageNode& producer, const StageNode& consumer, const te::IterVar& attach,
                                   const BoundMap& bounds) {
  std::string scope = producer.scope;
  te::IntSetMap leaf_sets;
  IterValueMap leaf_values;
  bool above = true;
  for (const te::IterVar& leaf : consumer.leaf_iter_vars) {
    const Range& r = bounds.at(leaf.get());
    if (above && !needs_relax(consumer, leaf, scope)) {
      leaf_sets[leaf.var().get()] = te::IntSet::single_point(leaf.var());
    } else {
      leaf_sets[leaf.var().get()] = te::IntSet::from_range(r);
    }
    leaf_values[leaf.get()] = leaf.var();
    if (leaf == attach) above = false;
  }
  IterValueMap values = pass_up_index(consumer, bounds, leaf_values);
  te::VarMap root_subst;
  for (const te::IterVar& iv : consumer.root_iter_vars()) root_subst[iv.var().get()] = values.at(iv.get());

  size_t ndim = producer.op->axis.size();
  std::vector<std::vector<te::IntSet>> per_dim(ndim);
  for (const auto* load : reads_of(producer.op, consumer.op->body)) {
    LOOM_ICHECK(load->indices.size() == ndim);
    for (size_t d = 0; d < ndim; ++d) {
      per_dim[d].push_back(te::eval_set(te::substitute(load->indices[d], root_subst), leaf_sets));
    }
  }
  // Thread-bound loops of the stages that enclose the consumer (it is computed inside them)
  // are relaxed too: shared memory covers what all threads of the block read.
  te::IntSetMap outer;
  for (const StageNode* in = &consumer; in->attach_type == AttachType::kScope; in = in->attach_stage.get()) {
    const StageNode& at = *in->attach_stage.get();
    for (const te::IterVar& leaf : at.leaf_iter_vars) {
      if (needs_relax(at, leaf, scope)) outer[leaf.var().get()] = te::IntSet::from_range(bounds.at(leaf.get()));
      if (leaf == in->attach_ivar) break;
    }
  }
  std::vector<Range> region;
  for (size_t d = 0; d < ndim; ++d) {
    const te::IterVar& axis = producer.op->axis[d];
    te::IntSet u = per_dim[d].empty() ? te::IntSet::everything() : te::union_sets(per_dim[d]);
    if (!outer.empty() && u.is_bounded()) u = {te::eval_set(u.min, outer).min, te::eval_set(u.max, outer).max};
    region.push_back(u.is_bounded() ? u.to_range() : axis->dom);
  }
  return region;
}

void check_consumers(const Stage& producer, const std::vector<Stage>& stages) {
  const StageNode& p = *producer.get();
  for (const Stage& s : stages) {
    if (s == producer || s->op->kind == te::OpKind::kPlaceholder || s->attach_type == AttachType::kInline) continue;
    if (s == p.attach_stage) continue;
    if (!reads_of(p.op, s->op->body).empty()) {
      fail("compute_at: stage '{}' is computed at stage '{}' but is also read by stage '{}'; a stage computed "
           "inside another must have that stage as its only consumer",
           p.name(), p.attach_stage->name(), s->name());
    }
  }
}

}  // namespace

BoundMap infer_bound(const schedule::Schedule& s) {
  BoundMap bounds;
  const std::vector<Stage>& stages = s.stages();
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const StageNode& st = *it->get();
    if (st.op->kind == te::OpKind::kPlaceholder || st.attach_type == AttachType::kInline) continue;
    if (st.attach_type == AttachType::kScope) {
      check_consumers(*it, stages);
      std::vector<Range> region = required_region(st, *st.attach_stage.get(), st.attach_ivar, bounds);
      for (size_t d = 0; d < region.size(); ++d) bounds[st.op->axis[d].get()] = region[d];
    } else {
      for (const te::IterVar& iv : st.op->axis) bounds[iv.get()] = iv->dom;
    }
    for (const te::IterVar& iv : st.op->reduce_axis) bounds[iv.get()] = iv->dom;
    pass_down_domain(st, &bounds);
  }
  return bounds;
}

}  // namespace loom::lowering
