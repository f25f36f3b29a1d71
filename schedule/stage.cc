// The Stage primitives: loop transformations (split, fuse, reorder, tile), loop annotations
// (unroll, vectorize, parallel, bind, pragma), placement (compute_at/inline/root) and
// storage (scope, alignment, double buffering). Each checks its arguments before changing
// anything, so a failed primitive leaves the stage as it was.
#include <algorithm>
#include <unordered_set>

#include "schedule_util.h"

namespace loom::schedule {

using te::Range;
using te::Var;

namespace {

StageNode* self_of(const Stage& s, const char* prim) {
  LOOM_CHECK(s.defined(), "{}: the stage is undefined (a default-constructed Stage)", prim);
  return s.get();
}

const std::string& name_of(const StageNode* s) { return s->op->name; }

bool contains(const std::vector<IterVar>& v, const IterVar& iv) { return std::find(v.begin(), v.end(), iv) != v.end(); }

size_t leaf_pos(const StageNode* s, const IterVar& iv) {
  auto it = std::find(s->leaf_iter_vars.begin(), s->leaf_iter_vars.end(), iv);
  LOOM_ICHECK(it != s->leaf_iter_vars.end());
  return size_t(it - s->leaf_iter_vars.begin());
}

void check_compute(const StageNode* s, const char* verb) {
  LOOM_CHECK(s->op->kind != te::OpKind::kExtern,
             "stage '{}': cannot {}: '{}' is an extern operation, whose body is written by hand; it runs at the root "
             "and takes only extern_param",
             name_of(s), verb, name_of(s));
  LOOM_CHECK(s->op->kind == te::OpKind::kCompute,
             "stage '{}': cannot {}: '{}' is a placeholder (an input); it has nothing to schedule", name_of(s), verb,
             name_of(s));
}

void check_leaf(const StageNode* s, const IterVar& iv, const char* verb) {
  check_compute(s, verb);
  LOOM_CHECK(iv.defined(), "stage '{}': cannot {}: the axis is undefined (a default-constructed IterVar)",
             name_of(s), verb);
  if (contains(s->leaf_iter_vars, iv)) return;
  if (contains(s->all_iter_vars, iv))
    fail("stage '{}': cannot {} '{}': it is not a leaf axis of this stage (it was already split or fused)",
         name_of(s), verb, iv.name());
  fail("stage '{}': cannot {} '{}': it is not an axis of this stage (it belongs to another operation)", name_of(s),
       verb, iv.name());
}

/// Checks a split factor or part count and returns it in the parent's index type.
Expr check_split_arg(const StageNode* s, const IterVar& parent, const Expr& e, const char* what) {
  LOOM_CHECK(e.defined(), "stage '{}': cannot split '{}': the {} is undefined", name_of(s), parent.name(), what);
  LOOM_CHECK(e.dtype().is_integer() && e.dtype().is_scalar(),
             "stage '{}': cannot split '{}': the {} must be an integer expression, got type {}", name_of(s),
             parent.name(), what, e.dtype().str());
  if (auto c = te::as_const_int(e)) {
    LOOM_CHECK(*c > 0, "stage '{}': cannot split '{}': the {} must be positive, got {}", name_of(s), parent.name(),
               what, *c);
    return te::make_const(parent.var().dtype(), *c);
  }
  return e;
}

std::pair<IterVar, IterVar> do_split(StageNode* s, const IterVar& parent, const Expr& factor, const Expr& nparts) {
  IterVar outer(Range(), Var(parent.name() + ".outer", parent.var().dtype()), parent.type());
  IterVar inner(Range(), Var(parent.name() + ".inner", parent.var().dtype()), parent.type());
  IterVarRelation r{};
  r.kind = RelationKind::kSplit;
  r.split = SplitRelation{parent, outer, inner, factor, nparts};
  s->relations.push_back(r);
  s->all_iter_vars.push_back(outer);
  s->all_iter_vars.push_back(inner);
  size_t pos = leaf_pos(s, parent);
  s->leaf_iter_vars[pos] = outer;
  s->leaf_iter_vars.insert(s->leaf_iter_vars.begin() + pos + 1, inner);
  return {outer, inner};
}

bool is_reduce(const IterVar& iv) { return iv.type() == te::IterVarType::kCommReduce; }

void check_fusable(const StageNode* s, const IterVar& outer, const IterVar& inner) {
  check_leaf(s, outer, "fuse");
  check_leaf(s, inner, "fuse");
  LOOM_CHECK(outer != inner, "stage '{}': cannot fuse '{}' with itself", name_of(s), outer.name());
  LOOM_CHECK(leaf_pos(s, outer) + 1 == leaf_pos(s, inner),
             "stage '{}': cannot fuse '{}' and '{}': the outer axis must come immediately before the inner one in "
             "the loop order",
             name_of(s), outer.name(), inner.name());
  LOOM_CHECK(is_reduce(outer) == is_reduce(inner),
             "stage '{}': cannot fuse '{}' and '{}': one is a reduction axis and the other is not", name_of(s),
             outer.name(), inner.name());
}

IterVar do_fuse(StageNode* s, const IterVar& outer, const IterVar& inner, const std::string& name) {
  auto type = std::max(outer.type(), inner.type());
  IterVar fused(Range(), Var(name, outer.var().dtype()), type);
  IterVarRelation r{};
  r.kind = RelationKind::kFuse;
  r.fuse = FuseRelation{outer, inner, fused};
  s->relations.push_back(r);
  s->all_iter_vars.push_back(fused);
  size_t pos = leaf_pos(s, outer);
  s->leaf_iter_vars.erase(s->leaf_iter_vars.begin() + pos, s->leaf_iter_vars.begin() + pos + 2);
  s->leaf_iter_vars.insert(s->leaf_iter_vars.begin() + pos, fused);
  return fused;
}

void check_reorder(const StageNode* s, const std::vector<IterVar>& order) {
  std::unordered_set<const te::IterVarNode*> seen;
  for (auto& iv : order) {
    check_leaf(s, iv, "reorder");
    LOOM_CHECK(seen.insert(iv.get()).second, "stage '{}': reorder: axis '{}' appears more than once", name_of(s),
               iv.name());
  }
}

void do_reorder(StageNode* s, const std::vector<IterVar>& order) {
  std::vector<size_t> pos;
  for (auto& iv : order) pos.push_back(leaf_pos(s, iv));
  std::sort(pos.begin(), pos.end());
  for (size_t i = 0; i < order.size(); ++i) s->leaf_iter_vars[pos[i]] = order[i];
}

std::string describe(const IterVarAttr& a) {
  switch (a.annotation) {
    case IterAnnotation::kVectorize: return "vectorized";
    case IterAnnotation::kUnroll: return "unrolled";
    case IterAnnotation::kParallel: return "parallel";
    case IterAnnotation::kThreadBind: return fmt::format("bound to '{}'", a.bind_thread->thread_tag);
    case IterAnnotation::kTensorize: return fmt::format("tensorized with '{}'", a.tensor_intrin->name);
    case IterAnnotation::kNone: break;
  }
  return "not annotated";
}

void annotate(StageNode* s, const IterVar& iv, IterAnnotation a, const IterVar& thread, const char* verb) {
  auto it = s->iter_var_attrs.find(iv.get());
  if (it != s->iter_var_attrs.end() && it->second.annotation != IterAnnotation::kNone) {
    const IterVarAttr& old = it->second;
    bool same = old.annotation == a && (a != IterAnnotation::kThreadBind || old.bind_thread == thread);
    LOOM_CHECK(same, "stage '{}': cannot {} '{}': it is already {}", name_of(s), verb, iv.name(), describe(old));
    return;
  }
  IterVarAttr& attr = s->iter_var_attrs[iv.get()];
  attr.annotation = a;
  attr.bind_thread = thread;
}

/// True if `producer` is read by `consumer`, directly or through other operations.
bool reads(const te::Operation& consumer, const StageNode* producer) {
  std::vector<Tensor> roots;
  for (int i = 0; i < consumer->num_outputs(); ++i) roots.push_back(te::output(consumer, i));
  for (const te::Operation& op : te::post_dfs_order(roots)) {
    if (op == consumer) continue;
    if (op == producer->op || op == producer->origin_op) return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------- loop transformations
std::pair<IterVar, IterVar> Stage::split(const IterVar& parent, Expr factor) {
  StageNode* s = self_of(*this, "split");
  check_leaf(s, parent, "split");
  Expr f = check_split_arg(s, parent, factor, "factor");
  detail::StepRecorder rec(s, StepKind::kSplit);
  rec.axis(parent).num("factor", f);
  auto parts = do_split(s, parent, f, Expr());
  rec.commit();
  return parts;
}

std::pair<IterVar, IterVar> Stage::split_nparts(const IterVar& parent, Expr nparts) {
  StageNode* s = self_of(*this, "split_nparts");
  check_leaf(s, parent, "split");
  Expr n = check_split_arg(s, parent, nparts, "number of parts");
  detail::StepRecorder rec(s, StepKind::kSplitNparts);
  rec.axis(parent).num("nparts", n);
  auto parts = do_split(s, parent, Expr(), n);
  rec.commit();
  return parts;
}

IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  StageNode* s = self_of(*this, "fuse");
  check_fusable(s, outer, inner);
  detail::StepRecorder rec(s, StepKind::kFuse);
  rec.axis(outer).axis(inner);
  IterVar fused = do_fuse(s, outer, inner, outer.name() + "." + inner.name() + ".fused");
  rec.commit();
  return fused;
}

IterVar Stage::fuse(const std::vector<IterVar>& axes) {
  StageNode* s = self_of(*this, "fuse");
  LOOM_CHECK(!axes.empty(), "stage '{}': fuse: no axes given", name_of(s));
  check_leaf(s, axes[0], "fuse");
  for (size_t i = 1; i < axes.size(); ++i) check_fusable(s, axes[i - 1], axes[i]);
  if (axes.size() == 1) return axes[0];
  detail::StepRecorder rec(s, StepKind::kFuse);
  for (const IterVar& iv : axes) rec.axis(iv);
  std::string name = axes[0].name();
  for (size_t i = 1; i < axes.size(); ++i) name += "." + axes[i].name();
  IterVar fused = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) {
    bool last = i + 1 == axes.size();
    fused = do_fuse(s, fused, axes[i], last ? name + ".fused" : fused.name() + "." + axes[i].name() + ".fused");
  }
  rec.commit();
  return fused;
}

void Stage::reorder(const std::vector<IterVar>& order) {
  StageNode* s = self_of(*this, "reorder");
  check_reorder(s, order);
  detail::StepRecorder rec(s, StepKind::kReorder);
  for (const IterVar& iv : order) rec.axis(iv);
  do_reorder(s, order);
  rec.commit();
}

std::tuple<IterVar, IterVar, IterVar, IterVar> Stage::tile(const IterVar& x, const IterVar& y, Expr x_factor,
                                                           Expr y_factor) {
  StageNode* s = self_of(*this, "tile");
  check_leaf(s, x, "tile");
  check_leaf(s, y, "tile");
  LOOM_CHECK(x != y, "stage '{}': cannot tile '{}' with itself", name_of(s), x.name());
  Expr xf = check_split_arg(s, x, x_factor, "factor");
  Expr yf = check_split_arg(s, y, y_factor, "factor");
  // Recorded as the primitives it is made of.
  detail::StepRecorder split_x(s, StepKind::kSplit);
  split_x.axis(x).num("factor", xf);
  auto [xo, xi] = do_split(s, x, xf, Expr());
  split_x.commit();
  detail::StepRecorder split_y(s, StepKind::kSplit);
  split_y.axis(y).num("factor", yf);
  auto [yo, yi] = do_split(s, y, yf, Expr());
  split_y.commit();
  detail::StepRecorder order(s, StepKind::kReorder);
  order.axis(xo).axis(yo).axis(xi).axis(yi);
  do_reorder(s, {xo, yo, xi, yi});
  order.commit();
  return {xo, yo, xi, yi};
}

// ---------------------------------------------------------------- annotations
void Stage::unroll(const IterVar& iv) {
  StageNode* s = self_of(*this, "unroll");
  check_leaf(s, iv, "unroll");
  detail::StepRecorder rec(s, StepKind::kUnroll);
  rec.axis(iv);
  annotate(s, iv, IterAnnotation::kUnroll, IterVar(), "unroll");
  rec.commit();
}

void Stage::vectorize(const IterVar& iv) {
  StageNode* s = self_of(*this, "vectorize");
  check_leaf(s, iv, "vectorize");
  LOOM_CHECK(!is_reduce(iv), "stage '{}': cannot vectorize reduction axis '{}'", name_of(s), iv.name());
  detail::StepRecorder rec(s, StepKind::kVectorize);
  rec.axis(iv);
  annotate(s, iv, IterAnnotation::kVectorize, IterVar(), "vectorize");
  rec.commit();
}

void Stage::parallel(const IterVar& iv) {
  StageNode* s = self_of(*this, "parallel");
  check_leaf(s, iv, "parallelize");
  LOOM_CHECK(!is_reduce(iv), "stage '{}': cannot parallelize reduction axis '{}'", name_of(s), iv.name());
  detail::StepRecorder rec(s, StepKind::kParallel);
  rec.axis(iv);
  annotate(s, iv, IterAnnotation::kParallel, IterVar(), "parallelize");
  rec.commit();
}

void Stage::bind(const IterVar& iv, const IterVar& thread) {
  StageNode* s = self_of(*this, "bind");
  check_leaf(s, iv, "bind");
  LOOM_CHECK(thread.defined(), "stage '{}': cannot bind '{}': the thread axis is undefined", name_of(s), iv.name());
  LOOM_CHECK(thread.type() == te::IterVarType::kThreadIndex && !thread->thread_tag.empty(),
             "stage '{}': cannot bind '{}' to '{}': that is not a thread axis (make one with "
             "te::thread_axis(\"threadIdx.x\"))",
             name_of(s), iv.name(), thread.name());
  LOOM_CHECK(!is_reduce(iv) || thread->thread_tag.rfind("threadIdx", 0) == 0,
             "stage '{}': cannot bind reduction axis '{}' to '{}': a reduction can be split across threadIdx only "
             "(a cross-thread reduction)",
             name_of(s), iv.name(), thread->thread_tag);
  for (const auto& [node, attr] : s->iter_var_attrs) {
    if (node == iv.get() || attr.annotation != IterAnnotation::kThreadBind) continue;
    bool same_thread = attr.bind_thread == thread ||
                       (attr.bind_thread->thread_tag == thread->thread_tag && thread->thread_tag != "vthread");
    bool is_leaf = std::any_of(s->leaf_iter_vars.begin(), s->leaf_iter_vars.end(),
                               [&, n = node](const IterVar& l) { return l.get() == n; });
    if (same_thread && is_leaf)
      fail("stage '{}': cannot bind '{}' to '{}': another axis of this stage is already bound to it", name_of(s),
           iv.name(), thread->thread_tag);
  }
  detail::StepRecorder rec(s, StepKind::kBind);
  rec.axis(iv).thread(thread);
  annotate(s, iv, IterAnnotation::kThreadBind, thread, "bind");
  rec.commit();
}

void Stage::pragma(const IterVar& iv, const std::string& key, Expr value) {
  StageNode* s = self_of(*this, "pragma");
  check_leaf(s, iv, "annotate with a pragma");
  LOOM_CHECK(!key.empty(), "stage '{}': pragma on '{}': the key is empty", name_of(s), iv.name());
  LOOM_CHECK(value.defined(), "stage '{}': pragma '{}' on '{}': the value is undefined", name_of(s), key, iv.name());
  detail::StepRecorder rec(s, StepKind::kPragma);
  rec.axis(iv).str("key", key).num("value", value);
  s->iter_var_attrs[iv.get()].pragmas[key] = value;
  rec.commit();
}

void Stage::tensorize(const IterVar& axis, const te::TensorIntrin& intrin) {
  StageNode* s = self_of(*this, "tensorize");
  check_leaf(s, axis, "tensorize");
  LOOM_CHECK(intrin != nullptr, "stage '{}': cannot tensorize '{}': the tensor intrinsic is undefined", name_of(s),
             axis.name());
  for (const auto& [node, attr] : s->iter_var_attrs) {
    if (attr.annotation == IterAnnotation::kTensorize && node != axis.get())
      fail("stage '{}': cannot tensorize '{}': axis '{}' is already tensorized with '{}' (one per stage)", name_of(s),
           axis.name(), node->var.name(), attr.tensor_intrin->name);
  }
  const size_t pos = leaf_pos(s, axis);
  for (size_t i = pos + 1; i < s->leaf_iter_vars.size(); ++i) {
    auto it = s->iter_var_attrs.find(s->leaf_iter_vars[i].get());
    if (it == s->iter_var_attrs.end()) continue;
    LOOM_CHECK(it->second.annotation != IterAnnotation::kParallel && it->second.annotation != IterAnnotation::kThreadBind,
               "stage '{}': cannot tensorize '{}': axis '{}' inside it is {}", name_of(s), axis.name(),
               s->leaf_iter_vars[i].name(), describe(it->second));
  }
  auto it = s->iter_var_attrs.find(axis.get());
  if (it != s->iter_var_attrs.end() && it->second.annotation == IterAnnotation::kTensorize &&
      it->second.tensor_intrin != intrin)
    fail("stage '{}': cannot tensorize '{}' with '{}': it is already tensorized with '{}'", name_of(s), axis.name(),
         intrin->name, it->second.tensor_intrin->name);
  if (it != s->iter_var_attrs.end() && it->second.annotation == IterAnnotation::kTensorize) return;
  detail::StepRecorder rec(s, StepKind::kTensorize);
  rec.axis(axis).str("intrin", intrin->name);
  annotate(s, axis, IterAnnotation::kTensorize, IterVar(), "tensorize");
  s->iter_var_attrs[axis.get()].tensor_intrin = intrin;
  rec.commit();
}

// ---------------------------------------------------------------- placement
void Stage::compute_at(const Stage& parent, const IterVar& scope) {
  StageNode* s = self_of(*this, "compute_at");
  check_compute(s, "compute_at");
  LOOM_CHECK(parent.defined(), "stage '{}': compute_at: the target stage is undefined", name_of(s));
  StageNode* p = parent.get();
  LOOM_CHECK(p != s, "stage '{}': cannot compute_at its own loop", name_of(s));
  LOOM_CHECK(!s->is_output, "stage '{}': cannot compute_at '{}': '{}' is an output, and outputs are computed at the root",
             name_of(s), name_of(p), name_of(s));
  LOOM_CHECK(p->op->kind == te::OpKind::kCompute, "stage '{}': cannot compute_at '{}': it is {}", name_of(s),
             name_of(p), p->op->kind == te::OpKind::kExtern ? "an extern operation (it has no loops)" : "a placeholder");
  LOOM_CHECK(p->attach_type != AttachType::kInline,
             "stage '{}': cannot compute_at '{}': that stage is inlined and has no loops", name_of(s), name_of(p));
  LOOM_CHECK(scope.defined(), "stage '{}': compute_at '{}': the scope axis is undefined", name_of(s), name_of(p));
  LOOM_CHECK(contains(p->leaf_iter_vars, scope),
             "stage '{}': cannot compute_at axis '{}' of stage '{}': it is not a leaf axis of '{}'", name_of(s),
             scope.name(), name_of(p), name_of(p));
  if (!reads(p->op, s)) {
    LOOM_CHECK(!reads(s->op, p),
               "stage '{}': compute_at cycle: '{}' is a producer of '{}', so '{}' cannot be computed inside it",
               name_of(s), name_of(p), name_of(s), name_of(s));
    fail("stage '{}': cannot compute_at '{}': '{}' does not read '{}' (directly or through other stages)", name_of(s),
         name_of(p), name_of(p), name_of(s));
  }
  detail::StepRecorder rec(s, StepKind::kComputeAt);
  rec.at(p, scope);
  s->attach_type = AttachType::kScope;
  s->attach_stage = parent;
  s->attach_ivar = scope;
  rec.commit();
}

void Stage::compute_inline() {
  StageNode* s = self_of(*this, "compute_inline");
  check_compute(s, "compute_inline");
  LOOM_CHECK(!s->is_output, "stage '{}': cannot compute_inline an output", name_of(s));
  LOOM_CHECK(!detail::is_reduction(s->op), "stage '{}': cannot compute_inline a reduction", name_of(s));
  s->attach_type = AttachType::kInline;
  s->attach_stage = Stage();
  s->attach_ivar = IterVar();
  detail::StepRecorder(s, StepKind::kComputeInline).commit();
}

void Stage::compute_root() {
  StageNode* s = self_of(*this, "compute_root");
  if (s->op->kind == te::OpKind::kExtern) return;  // where it always is
  check_compute(s, "compute_root");
  s->attach_type = AttachType::kRoot;
  s->attach_stage = Stage();
  s->attach_ivar = IterVar();
  detail::StepRecorder(s, StepKind::kComputeRoot).commit();
}

// ---------------------------------------------------------------- storage
void Stage::storage_align(const IterVar& axis, int factor, int offset) {
  StageNode* s = self_of(*this, "storage_align");
  check_compute(s, "storage_align");
  LOOM_CHECK(axis.defined(), "stage '{}': storage_align: the axis is undefined", name_of(s));
  const auto& root = s->op->axis;
  auto it = std::find(root.begin(), root.end(), axis);
  LOOM_CHECK(it != root.end(),
             "stage '{}': cannot storage_align '{}': it is not a spatial axis of the operation (a root axis, "
             "before any split)",
             name_of(s), axis.name());
  LOOM_CHECK(factor > 0, "stage '{}': storage_align of '{}': the factor must be positive, got {}", name_of(s),
             axis.name(), factor);
  LOOM_CHECK(offset >= 0 && offset < factor,
             "stage '{}': storage_align of '{}': the offset must lie in [0, {}), got {}", name_of(s), axis.name(),
             factor, offset);
  s->storage_align[int(it - root.begin())] = {factor, offset};
  detail::StepRecorder rec(s, StepKind::kStorageAlign);
  rec.axis(axis).num("factor", factor).num("offset", offset).commit();
}

void Stage::compute_padded(Expr pad_value) {
  StageNode* s = self_of(*this, "compute_padded");
  check_compute(s, "compute_padded");
  LOOM_CHECK(!s->is_output, "stage '{}': cannot compute_padded an output (it would write past its shape)", name_of(s));
  LOOM_CHECK(pad_value.defined(), "stage '{}': compute_padded: the pad value is undefined", name_of(s));
  LOOM_CHECK(pad_value.dtype().lanes() == 1 && !pad_value.dtype().is_handle(),
             "stage '{}': compute_padded: the pad value must be a scalar, got {}", name_of(s),
             pad_value.dtype().str());
  s->pad_value = pad_value;
  detail::StepRecorder rec(s, StepKind::kComputePadded);
  if (auto f = te::as_const_float(pad_value); f && pad_value.dtype().is_float()) {
    rec.str("value", fmt::format("{:.17g}", *f));
  } else if (auto i = te::as_const_int(pad_value)) {
    rec.str("value", std::to_string(*i));
  } else {
    rec.num("value", pad_value);  // not a constant: recorded, not replayable
  }
  rec.str("dtype", pad_value.dtype().str()).commit();
}

void Stage::storage_order(const std::vector<IterVar>& axes) {
  StageNode* s = self_of(*this, "storage_order");
  check_compute(s, "storage_order");
  const auto& root = s->op->axis;
  LOOM_CHECK(axes.size() == root.size(), "stage '{}': storage_order takes each of its {} spatial axes once, got {}",
             name_of(s), root.size(), axes.size());
  std::vector<int> order;
  for (const IterVar& a : axes) {
    LOOM_CHECK(a.defined(), "stage '{}': storage_order: an axis is undefined", name_of(s));
    auto it = std::find(root.begin(), root.end(), a);
    LOOM_CHECK(it != root.end(),
               "stage '{}': storage_order: '{}' is not a spatial axis of the operation (a root axis, before any split)",
               name_of(s), a.name());
    int d = int(it - root.begin());
    LOOM_CHECK(std::find(order.begin(), order.end(), d) == order.end(), "stage '{}': storage_order: '{}' appears twice",
               name_of(s), a.name());
    order.push_back(d);
  }
  bool natural = true;
  for (size_t i = 0; i < order.size(); ++i) natural &= order[i] == int(i);
  s->storage_order = natural ? std::vector<int>{} : order;
  detail::StepRecorder rec(s, StepKind::kStorageOrder);
  for (const IterVar& a : axes) rec.axis(a);
  rec.commit();
}

void Stage::set_scope(const std::string& scope) {
  StageNode* s = self_of(*this, "set_scope");
  check_compute(s, "set_scope");
  if (!scope.empty()) detail::check_scope(fmt::format("stage '{}': set_scope", name_of(s)), scope);
  LOOM_CHECK(!s->is_output || scope.empty() || scope == "global",
             "stage '{}': cannot set_scope '{}': an output lives in global memory", name_of(s), scope);
  s->scope = scope;
  detail::StepRecorder(s, StepKind::kSetScope).str("scope", scope).commit();
}

void Stage::double_buffer() {
  StageNode* s = self_of(*this, "double_buffer");
  check_compute(s, "double_buffer");
  LOOM_CHECK(!s->is_output, "stage '{}': cannot double_buffer an output", name_of(s));
  s->double_buffer = true;
  detail::StepRecorder(s, StepKind::kDoubleBuffer).commit();
}

void Stage::extern_param(const std::string& key, int64_t value) {
  StageNode* s = self_of(*this, "extern_param");
  LOOM_CHECK(s->op->kind == te::OpKind::kExtern,
             "stage '{}': extern_param '{}': '{}' is not an extern operation (only te::extern_op bodies take "
             "parameters)",
             name_of(s), key, name_of(s));
  if (!s->op->params.count(key)) {
    std::string known;
    for (const auto& [k, v] : s->op->params) known += (known.empty() ? "" : ", ") + k;
    fail("stage '{}': extern_param: the body has no parameter '{}' (it has: {})", name_of(s), key,
         known.empty() ? "none" : known);
  }
  s->extern_params[key] = value;
  detail::StepRecorder(s, StepKind::kExternParam).str("key", key).num("value", value).commit();
}

}  // namespace loom::schedule
