// Bound inference: the range of every iteration variable of every stage.
//
// Stages are visited consumers first. A root stage covers its operation's whole shape. A
// stage computed at (stage S, leaf L) covers the union of the regions its consumers read
// from it for one iteration of the loops of S down to L: those loops are fixed points; the
// loops of S inside L, and every loop of a consumer computed inside L (and of the stages
// between it and S), range over their extents, as do thread-bound loops that share the
// stage's memory. A consumer that runs outside L is an error.
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

size_t leaf_position(const StageNode& st, const te::IterVar& leaf) {
  auto it = std::find(st.leaf_iter_vars.begin(), st.leaf_iter_vars.end(), leaf);
  LOOM_ICHECK(it != st.leaf_iter_vars.end());
  return size_t(it - st.leaf_iter_vars.begin());
}

/// Whether `consumer` runs inside loop `leaf` of `at`: it is `at`, or it is computed (through
/// a chain of compute_at) at `leaf` of `at` or at a loop of `at` nested inside `leaf`.
bool inside_attach_scope(const StageNode& consumer, const StageNode& at, const te::IterVar& leaf) {
  if (&consumer == &at) return true;
  for (const StageNode* in = &consumer; in->attach_type == AttachType::kScope; in = in->attach_stage.get()) {
    if (in->attach_stage.get() == &at) return leaf_position(at, in->attach_ivar) >= leaf_position(at, leaf);
  }
  return false;
}

/// [min, max] of `u` when the variables of `relax` range over their sets.
te::IntSet relax_set(const te::IntSet& u, const te::IntSetMap& relax) {
  if (relax.empty() || !u.is_bounded()) return u;
  return {te::eval_set(u.min, relax).min, te::eval_set(u.max, relax).max};
}

/// The region of `producer` that `consumer` reads per iteration of the loops of the attach
/// stage `at` down to `attach`. `consumer` is `at` itself or runs inside that loop: then all
/// of its own loops, and those of the stages between it and `at`, range over their extents.
std::vector<te::IntSet> required_region(const StageNode& producer, const StageNode& consumer, const StageNode& at,
                                        const te::IterVar& attach, const BoundMap& bounds) {
  const std::string& scope = producer.scope;
  te::IntSetMap leaf_sets;
  IterValueMap leaf_values;
  bool above = &consumer == &at;
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
  std::vector<te::IntSet> region(ndim);
  for (size_t d = 0; d < ndim; ++d) {
    if (!per_dim[d].empty()) region[d] = te::union_sets(per_dim[d]);
  }
  // Climb the compute_at chain from the consumer, one enclosing stage at a time (the ranges
  // of a stage's loops are expressions of the loops of the stage it is computed in). The
  // loops of a stage between the consumer and `at` range fully, as do those of `at` inside
  // `attach`; thread-bound loops of every enclosing stage are relaxed too: shared memory
  // covers what all threads of the block read.
  bool inside = &consumer != &at;
  for (const StageNode* in = &consumer; in->attach_type == AttachType::kScope; in = in->attach_stage.get()) {
    const StageNode& outer = *in->attach_stage.get();
    bool is_at = &outer == &at;
    size_t attach_pos = is_at ? leaf_position(at, attach) : 0;
    te::IntSetMap relax;
    for (size_t p = 0; p < outer.leaf_iter_vars.size(); ++p) {
      const te::IterVar& leaf = outer.leaf_iter_vars[p];
      bool ranges = (inside && (!is_at || p > attach_pos)) || needs_relax(outer, leaf, scope);
      if (ranges) relax[leaf.var().get()] = te::IntSet::from_range(bounds.at(leaf.get()));
      if (leaf == in->attach_ivar) break;
    }
    for (te::IntSet& u : region) u = relax_set(u, relax);
    if (is_at) inside = false;
  }
  return region;
}

/// The consumers of `producer` (stages that read it, inlined ones already substituted).
std::vector<const StageNode*> consumers_of(const StageNode& producer, const std::vector<Stage>& stages) {
  std::vector<const StageNode*> out;
  for (const Stage& s : stages) {
    if (s.get() == &producer || s->op->kind == te::OpKind::kPlaceholder || s->attach_type == AttachType::kInline) {
      continue;
    }
    if (!reads_of(producer.op, s->op->body).empty()) out.push_back(s.get());
  }
  return out;
}

/// The region a stage computed at (attach_stage, attach_ivar) must cover: the union of what
/// its consumers read, every one of which must run inside that loop.
std::vector<Range> attached_region(const StageNode& producer, const std::vector<Stage>& stages,
                                   const BoundMap& bounds) {
  const StageNode& at = *producer.attach_stage.get();
  size_t ndim = producer.op->axis.size();
  std::vector<std::vector<te::IntSet>> per_dim(ndim);
  std::vector<bool> whole(ndim, false);
  for (const StageNode* consumer : consumers_of(producer, stages)) {
    if (!inside_attach_scope(*consumer, at, producer.attach_ivar)) {
      fail("compute_at: stage '{}' is computed at axis '{}' of stage '{}', but its consumer '{}' runs outside that "
           "loop; every consumer of '{}' must be '{}' or be computed at '{}' or a loop inside it",
           producer.name(), producer.attach_ivar.name(), at.name(), consumer->name(), producer.name(), at.name(),
           producer.attach_ivar.name());
    }
    std::vector<te::IntSet> r = required_region(producer, *consumer, at, producer.attach_ivar, bounds);
    for (size_t d = 0; d < ndim; ++d) {
      if (r[d].is_bounded()) per_dim[d].push_back(r[d]);
      else whole[d] = true;
    }
  }
  std::vector<Range> region;
  for (size_t d = 0; d < ndim; ++d) {
    te::IntSet u = per_dim[d].empty() || whole[d] ? te::IntSet::everything() : te::union_sets(per_dim[d]);
    region.push_back(u.is_bounded() ? u.to_range() : producer.op->axis[d]->dom);
  }
  return region;
}

}  // namespace

BoundMap infer_bound(const schedule::Schedule& s) {
  BoundMap bounds;
  const std::vector<Stage>& stages = s.stages();
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const StageNode& st = *it->get();
    if (st.op->kind == te::OpKind::kPlaceholder || st.attach_type == AttachType::kInline) continue;
    if (st.attach_type == AttachType::kScope) {
      std::vector<Range> region = attached_region(st, stages, bounds);
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
