// Structure of schedules after each primitive: stages, leaf order, relations, attributes,
// and the rewritten dataflow of cache_read, cache_write and rfactor (checked with the
// reference evaluator).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/schedule/schedule.h"
#include "loom/te/evaluate.h"

namespace loom::schedule {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

struct Matmul {
  Tensor A = te::placeholder({16, 12}, DataType::Float(32), "A");
  Tensor B = te::placeholder({12, 8}, DataType::Float(32), "B");
  IterVar k = te::reduce_axis({0, 12}, "k");
  Tensor C = te::compute({16, 8}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
};

std::vector<std::string> names(const std::vector<IterVar>& ivs) {
  std::vector<std::string> r;
  for (auto& iv : ivs) r.push_back(iv.name());
  return r;
}

std::vector<std::string> stage_names(const Schedule& s) {
  std::vector<std::string> r;
  for (auto& st : s.stages()) r.push_back(st->name());
  return r;
}

/// True if the operation reads the tensor produced by `producer` (by identity).
bool reads(const te::Operation& op, const te::Operation& producer) {
  for (const Tensor& t : op->input_tensors())
    if (t.op() == producer) return true;
  return false;
}

/// Evaluates `op`'s first output with the given inputs and compares it with `want`.
void expect_same_values(const te::Operation& op, const Tensor& want, const std::vector<Tensor>& inputs) {
  auto in = test::random_inputs(inputs, 7);
  auto got = te::evaluate({te::output(op, 0)}, in);
  auto ref = te::evaluate({want}, in);
  EXPECT_EQ(test::compare_arrays(got[0], ref[0], test::tolerance_for(want.dtype()), op->name), "");
}

TEST(CreateSchedule, OneStagePerOperationInputsFirst) {
  Matmul m;
  Tensor D = te::compute({16, 8}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
  Schedule s = create_schedule({D});
  EXPECT_EQ(stage_names(s), (std::vector<std::string>{"A", "B", "C", "D"}));
  EXPECT_TRUE(s[D]->is_output);
  EXPECT_FALSE(s[m.C]->is_output);
  EXPECT_FALSE(s[m.A]->is_output);
  EXPECT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s[m.C]->op, m.C.op());
  EXPECT_EQ(s[m.C].get(), s[m.C.op()].get());
  EXPECT_EQ(names(s[m.C].leaf_iter_vars()), (std::vector<std::string>{"i", "j", "k"}));
  EXPECT_EQ(names(s[m.C]->all_iter_vars), (std::vector<std::string>{"i", "j", "k"}));
  EXPECT_EQ(names(s[m.C]->root_iter_vars()), (std::vector<std::string>{"i", "j", "k"}));
  EXPECT_TRUE(s[m.A]->leaf_iter_vars.empty());
  EXPECT_EQ(s[m.C].reduce_axis(0), m.k);
  EXPECT_EQ(s[m.C].axis(1), m.C.op()->axis[1]);
  EXPECT_EQ(s[m.C]->attach_type, AttachType::kRoot);
}

TEST(Split, ReplacesParentByOuterAndInner) {
  Matmul m;
  Schedule s = create_schedule({m.C});
  Stage c = s[m.C];
  auto [io, ii] = c.split(c.axis(0), 4);
  EXPECT_EQ(io.name(), "i.outer");
  EXPECT_EQ(ii.name(), "i.inner");
  EXPECT_FALSE(io->dom.extent.defined());
  EXPECT_EQ(io.type(), te::IterVarType::kDataPar);
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i.outer", "i.inner", "j", "k"}));
  ASSERT_EQ(c->relations.size(), 1u);
  const IterVarRelation& r = c->relations[0];
  EXPECT_EQ(r.kind, RelationKind::kSplit);
  EXPECT_EQ(r.split.parent, c.axis(0));
  EXPECT_EQ(r.split.outer, io);
  EXPECT_EQ(r.split.inner, ii);
  EXPECT_TRUE(te::is_const_int(r.split.factor, 4));
  EXPECT_FALSE(r.split.nparts.defined());
  EXPECT_EQ(c->all_iter_vars.size(), 5u);

  auto [ko, ki] = c.split(m.k, 5);
  EXPECT_EQ(ko.type(), te::IterVarType::kCommReduce);
  EXPECT_EQ(ki.type(), te::IterVarType::kCommReduce);
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i.outer", "i.inner", "j", "k.outer", "k.inner"}));

  auto [iio, iii] = c.split_nparts(ii, 2);
  EXPECT_EQ(iio.name(), "i.inner.outer");
  EXPECT_FALSE(c->relations.back().split.factor.defined());
  EXPECT_TRUE(te::is_const_int(c->relations.back().split.nparts, 2));
  EXPECT_EQ(c.leaf_iter_vars().size(), 6u);
}

TEST(Fuse, AdjacentAxesBecomeOne) {
  Matmul m;
  Schedule s = create_schedule({m.C});
  Stage c = s[m.C];
  IterVar f = c.fuse(c.axis(0), c.axis(1));
  EXPECT_EQ(f.name(), "i.j.fused");
  EXPECT_EQ(f.type(), te::IterVarType::kDataPar);
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i.j.fused", "k"}));
  ASSERT_EQ(c->relations.size(), 1u);
  EXPECT_EQ(c->relations[0].kind, RelationKind::kFuse);
  EXPECT_EQ(c->relations[0].fuse.outer, c.axis(0));
  EXPECT_EQ(c->relations[0].fuse.inner, c.axis(1));
  EXPECT_EQ(c->relations[0].fuse.fused, f);
}

TEST(Fuse, SeveralAxes) {
  Tensor A = te::placeholder({2, 3, 4, 5}, DataType::Float(32), "A");
  Tensor B = te::compute({2, 3, 4, 5}, [&](Var a, Var b, Var c, Var d) { return A(a, b, c, d) * 2.0f; }, "B");
  Schedule s = create_schedule({B});
  Stage st = s[B];
  IterVar f = st.fuse({st.axis(1), st.axis(2), st.axis(3)});
  EXPECT_EQ(f.name(), "j.k.l.fused");
  EXPECT_EQ(st.leaf_iter_vars().size(), 2u);
  EXPECT_EQ(st.leaf_iter_vars()[1], f);
  EXPECT_EQ(st->relations.size(), 2u);
  EXPECT_EQ(st.fuse({st.axis(0)}), st.axis(0));
}

TEST(Reorder, GivenAxesTakeTheirPositionsInOrder) {
  Matmul m;
  Schedule s = create_schedule({m.C});
  Stage c = s[m.C];
  auto [io, ii] = c.split(c.axis(0), 4);
  // leaves: i.outer i.inner j k
  c.reorder({m.k, ii});
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i.outer", "k", "j", "i.inner"}));
  c.reorder({c.axis(1), io, m.k, ii});
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"j", "i.outer", "k", "i.inner"}));
  c.reorder({});
  EXPECT_EQ(c.leaf_iter_vars().size(), 4u);
}

TEST(Tile, SplitsBothAndOrdersOuterFirst) {
  Matmul m;
  Schedule s = create_schedule({m.C});
  Stage c = s[m.C];
  auto [xo, yo, xi, yi] = c.tile(c.axis(0), c.axis(1), 4, 2);
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i.outer", "j.outer", "i.inner", "j.inner", "k"}));
  EXPECT_EQ(xo.name(), "i.outer");
  EXPECT_EQ(yi.name(), "j.inner");
  EXPECT_EQ(c->relations.size(), 2u);
}

TEST(Annotate, RecordsAttributes) {
  Matmul m;
  Schedule s = create_schedule({m.C});
  Stage c = s[m.C];
  auto [jo, ji] = c.split(c.axis(1), 4);
  c.vectorize(ji);
  c.vectorize(ji);  // the same annotation again is fine
  c.parallel(c.axis(0));
  c.unroll(m.k);
  c.pragma(jo, "unroll_explicit", 0);
  EXPECT_EQ(c->iter_var_attrs.at(ji.get()).annotation, IterAnnotation::kVectorize);
  EXPECT_EQ(c->iter_var_attrs.at(c.axis(0).get()).annotation, IterAnnotation::kParallel);
  EXPECT_EQ(c->iter_var_attrs.at(m.k.get()).annotation, IterAnnotation::kUnroll);
  EXPECT_EQ(c->iter_var_attrs.at(jo.get()).annotation, IterAnnotation::kNone);
  EXPECT_TRUE(te::is_zero(c->iter_var_attrs.at(jo.get()).pragmas.at("unroll_explicit")));
}

TEST(Annotate, BindToThreads) {
  Matmul m;
  Schedule s = create_schedule({m.C});
  Stage c = s[m.C];
  IterVar bx = te::thread_axis("blockIdx.x"), tx = te::thread_axis("threadIdx.x");
  auto [io, ii] = c.split(c.axis(0), 4);
  c.bind(io, bx);
  c.bind(ii, tx);
  c.bind(ii, tx);
  EXPECT_EQ(c->iter_var_attrs.at(io.get()).annotation, IterAnnotation::kThreadBind);
  EXPECT_EQ(c->iter_var_attrs.at(io.get()).bind_thread, bx);
  EXPECT_EQ(c->iter_var_attrs.at(ii.get()).bind_thread, tx);
}

TEST(Placement, ComputeAtInlineRoot) {
  Matmul m;
  Tensor D = te::compute({16, 8}, [&](Var i, Var j) { return m.C(i, j) * 2.0f; }, "D");
  Tensor E = te::compute({16, 8}, [&](Var i, Var j) { return D(i, j) + 1.0f; }, "E");
  Schedule s = create_schedule({E});
  auto [eo, ei] = s[E].split(s[E].axis(0), 4);
  s[m.C].compute_at(s[E], eo);  // E reads C through D
  EXPECT_EQ(s[m.C]->attach_type, AttachType::kScope);
  EXPECT_EQ(s[m.C]->attach_stage, s[E]);
  EXPECT_EQ(s[m.C]->attach_ivar, eo);
  s[D].compute_inline();
  EXPECT_EQ(s[D]->attach_type, AttachType::kInline);
  s[m.C].compute_root();
  EXPECT_EQ(s[m.C]->attach_type, AttachType::kRoot);
  EXPECT_FALSE(s[m.C]->attach_stage.defined());
  EXPECT_FALSE(s[m.C]->attach_ivar.defined());
}

TEST(Storage, ScopeAlignDoubleBuffer) {
  Matmul m;
  Tensor D = te::compute({16, 8}, [&](Var i, Var j) { return m.C(i, j) * 2.0f; }, "D");
  Schedule s = create_schedule({D});
  s[m.C].set_scope("shared");
  s[m.C].storage_align(s[m.C].axis(0), 8, 1);
  s[m.C].double_buffer();
  EXPECT_EQ(s[m.C]->scope, "shared");
  EXPECT_EQ(s[m.C]->storage_align.at(0), (std::pair<int, int>{8, 1}));
  EXPECT_TRUE(s[m.C]->double_buffer);
  s[D].set_scope("global");
}

TEST(CacheWrite, CacheStageComputesAndOriginalCopies) {
  Matmul m;
  Tensor D = te::compute({16, 8}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
  Schedule s = create_schedule({D});
  Stage c = s[m.C];
  Tensor CL = s.cache_write(m.C, "local");
  EXPECT_EQ(CL.name(), "C.local");
  EXPECT_EQ(stage_names(s), (std::vector<std::string>{"A", "B", "C.local", "C", "D"}));
  Stage cl = s[CL];
  EXPECT_EQ(cl->scope, "local");
  EXPECT_TRUE(c == s[m.C]);  // the user's handle still names the (now copying) stage
  EXPECT_NE(c->op, m.C.op());
  EXPECT_EQ(c->origin_op, m.C.op());
  EXPECT_TRUE(s[c->op] == c);
  EXPECT_TRUE(c->op->reduce_axis.empty());
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i", "j"}));
  EXPECT_NE(c.axis(0), m.C.op()->axis[0]);
  EXPECT_TRUE(reads(c->op, CL.op()));
  ASSERT_EQ(CL.op()->reduce_axis.size(), 1u);
  EXPECT_NE(CL.op()->reduce_axis[0], m.k);
  EXPECT_EQ(names(cl.leaf_iter_vars()), (std::vector<std::string>{"i.c", "j.c", "k.c"}));
  EXPECT_TRUE(reads(s[D]->op, c->op));
  EXPECT_FALSE(reads(s[D]->op, m.C.op()));
  EXPECT_TRUE(s[D]->is_output);
  ASSERT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s.outputs()[0], s[D]->op);  // outputs follow the current operations
  EXPECT_TRUE(s[D] == s[D.op()]);
  // The cache stage can be scheduled like any other.
  cl.split(cl.reduce_axis(0), 4);
  cl.compute_at(c, c.axis(0));
  expect_same_values(s[D]->op, D, {m.A, m.B});
  expect_same_values(c->op, m.C, {m.A, m.B});
}

TEST(CacheRead, ReadersReadTheCopyAndKeepTheirLoops) {
  Matmul m;
  Schedule s = create_schedule({m.C});
  Stage c = s[m.C];
  auto [io, ii] = c.split(c.axis(0), 4);
  Tensor AS = s.cache_read(m.A, "shared", {m.C});
  EXPECT_EQ(AS.name(), "A.shared");
  EXPECT_EQ(stage_names(s), (std::vector<std::string>{"A", "A.shared", "B", "C"}));
  EXPECT_EQ(s[AS]->scope, "shared");
  EXPECT_TRUE(reads(c->op, AS.op()));
  EXPECT_FALSE(reads(c->op, m.A.op()));
  EXPECT_TRUE(reads(AS.op(), m.A.op()));
  EXPECT_EQ(c->op->reduce_axis[0], m.k);
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i.outer", "i.inner", "j", "k"}));
  Tensor BL = s.cache_read(m.B, "local", std::vector<Tensor>{m.C});
  EXPECT_TRUE(reads(c->op, BL.op()));
  EXPECT_TRUE(reads(c->op, AS.op()));
  s[AS].compute_at(c, io);
  expect_same_values(c->op, m.C, {m.A, m.B});
}

TEST(CacheRead, OnlyTheGivenReadersChange) {
  Tensor A = te::placeholder({8}, DataType::Float(32), "A");
  Tensor B = te::compute({8}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Tensor C = te::compute({8}, [&](Var i) { return A(i) * B(i); }, "C");
  Schedule s = create_schedule({C});
  Tensor AL = s.cache_read(A, "local", {B});
  EXPECT_TRUE(reads(s[B]->op, AL.op()));
  EXPECT_TRUE(reads(s[C]->op, A.op()));
  EXPECT_FALSE(reads(s[C]->op, AL.op()));
  EXPECT_TRUE(reads(s[C]->op, s[B]->op));  // C follows B's replaced operation
  expect_same_values(s[C]->op, C, {A});
}

TEST(Rfactor, SplitReduceAxisBecomesSpatial) {
  Tensor A = te::placeholder({6, 10}, DataType::Float(32), "A");
  IterVar k = te::reduce_axis({0, 10}, "k");
  Tensor C = te::compute({6}, [&](Var i) { return te::sum(A(i, k), {k}); }, "C");
  Schedule s = create_schedule({C});
  Stage c = s[C];
  auto [ko, ki] = c.split(k, 4);  // 10 = 3 * 4 - 2: uneven
  Tensor CF = s.rfactor(C, ki, 0);
  EXPECT_EQ(CF.name(), "C.rf");
  EXPECT_EQ(stage_names(s), (std::vector<std::string>{"A", "C.rf", "C"}));
  ASSERT_EQ(CF.ndim(), 2u);
  EXPECT_TRUE(te::is_const_int(CF.shape()[0], 4));
  EXPECT_TRUE(te::is_const_int(CF.shape()[1], 6));
  ASSERT_EQ(CF.op()->reduce_axis.size(), 1u);
  EXPECT_TRUE(te::is_const_int(CF.op()->reduce_axis[0]->dom.extent, 3));
  ASSERT_EQ(c->op->reduce_axis.size(), 1u);
  EXPECT_EQ(c->op->reduce_axis[0].name(), "k.inner.v");
  EXPECT_TRUE(te::is_const_int(c->op->reduce_axis[0]->dom.extent, 4));
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i", "k.inner.v"}));
  EXPECT_TRUE(c->relations.empty());
  EXPECT_TRUE(reads(c->op, CF.op()));
  expect_same_values(c->op, C, {A});
}

TEST(Rfactor, KeepsSpatialScheduleAndFactorAxisPosition) {
  Tensor A = te::placeholder({6, 8}, DataType::Float(32), "A");
  IterVar k = te::reduce_axis({0, 8}, "k");
  Tensor C = te::compute({6}, [&](Var i) { return te::max_reduce(A(i, k), {k}); }, "C");
  Schedule s = create_schedule({C});
  Stage c = s[C];
  auto [io, ii] = c.split(c.axis(0), 2);
  auto [ko, ki] = c.split(k, 4);
  Tensor CF = s.rfactor(C, ko, 1);
  EXPECT_TRUE(te::is_const_int(CF.shape()[0], 6));
  EXPECT_TRUE(te::is_const_int(CF.shape()[1], 2));
  EXPECT_EQ(names(c.leaf_iter_vars()), (std::vector<std::string>{"i.outer", "i.inner", "k.outer.v"}));
  EXPECT_EQ(c->relations.size(), 1u);
  expect_same_values(c->op, C, {A});
}

TEST(Rfactor, RootReduceAxisWithoutSplit) {
  Tensor A = te::placeholder({5, 7}, DataType::Float(32), "A");
  IterVar k = te::reduce_axis({0, 7}, "k");
  Tensor C = te::compute({5}, [&](Var i) { return te::sum(A(i, k), {k}); }, "C");
  Schedule s = create_schedule({C});
  Tensor CF = s.rfactor(C, k, 0);
  EXPECT_TRUE(CF.op()->reduce_axis.empty());
  expect_same_values(s[C]->op, C, {A});
}

TEST(Rfactor, SeveralReduceAxesWithNpartsAndFuse) {
  Tensor A = te::placeholder({3, 6, 5}, DataType::Float(32), "A");
  IterVar k = te::reduce_axis({0, 6}, "k"), l = te::reduce_axis({0, 5}, "l");
  Tensor C = te::compute({3}, [&](Var i) { return te::sum(A(i, k, l), {k, l}); }, "C");
  {
    Schedule s = create_schedule({C});
    auto [lo, li] = s[C].split_nparts(l, 2);  // 2 parts of 3: one past the end
    Tensor CF = s.rfactor(C, lo, 1);
    EXPECT_TRUE(te::is_const_int(CF.shape()[1], 2));
    EXPECT_EQ(names(CF.op()->reduce_axis), (std::vector<std::string>{"k", "l.inner"}));
    expect_same_values(s[C]->op, C, {A});
  }
  {
    Schedule s = create_schedule({C});
    IterVar kl = s[C].fuse(k, l);
    auto [o, in] = s[C].split(kl, 7);  // 30 = 5 * 7 - 5
    Tensor CF = s.rfactor(C, in, 0);
    EXPECT_TRUE(te::is_const_int(CF.shape()[0], 7));
    ASSERT_EQ(CF.op()->reduce_axis.size(), 1u);
    EXPECT_TRUE(te::is_const_int(CF.op()->reduce_axis[0]->dom.extent, 5));
    expect_same_values(s[C]->op, C, {A});
  }
}

TEST(TupleReduction, CacheWriteAndRfactorKeepAllOutputs) {
  Tensor A = te::placeholder({4, 10}, DataType::Float(32), "A");
  IterVar k = te::reduce_axis({0, 10}, "k");
  auto argmax = te::comm_reducer(
      [](const std::vector<Var>& x, const std::vector<Var>& y) {
        te::Expr keep = x[1] >= y[1];
        return std::vector<te::Expr>{te::select(keep, x[0], y[0]), te::select(keep, x[1], y[1])};
      },
      [](const std::vector<DataType>& t) {
        return std::vector<te::Expr>{te::make_const(t[0], -1), te::min_value(t[1])};
      },
      {DataType::Int(32), DataType::Float(32)});
  auto outs = te::compute_multi(
      {4}, [&](const std::vector<Var>& v) { return te::reduce(argmax, {te::Expr(k), A(v[0], k)}, {k}); }, "amax");
  {
    Schedule s = create_schedule({outs[0]});
    Tensor cache = s.cache_write(outs[1], "local");
    EXPECT_EQ(cache.value_index(), 1);
    EXPECT_EQ(s[outs[0]]->op->num_outputs(), 2);
    expect_same_values(s[outs[0]]->op, outs[0], {A});
  }
  {
    Schedule s = create_schedule({outs[0]});
    auto [ko, ki] = s[outs[0]].split(k, 3);
    Tensor rf = s.rfactor(outs[0], ki);
    EXPECT_EQ(rf.op()->num_outputs(), 2);
    expect_same_values(s[outs[0]]->op, outs[0], {A});
  }
}

TEST(Copy, IsIndependentOfTheOriginal) {
  Matmul m;
  Tensor D = te::compute({16, 8}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
  Schedule s = create_schedule({D});
  s[m.C].compute_at(s[D], s[D].axis(0));
  Schedule t = s.copy();
  EXPECT_FALSE(t[m.C] == s[m.C]);
  EXPECT_TRUE(t[m.C]->attach_stage == t[D]);
  t[D].split(t[D].axis(1), 2);
  t[m.C].vectorize(t[m.C].axis(1));
  t.cache_read(m.A, "shared", {m.C});
  EXPECT_EQ(s[D].leaf_iter_vars().size(), 2u);
  EXPECT_TRUE(s[m.C]->iter_var_attrs.empty());
  EXPECT_EQ(s.stages().size(), 4u);
  EXPECT_EQ(t.stages().size(), 5u);
  EXPECT_EQ(s[m.C]->op, m.C.op());
  EXPECT_NE(t[m.C]->op, m.C.op());
}

// Two chained reductions, each rfactor'd (softmax's max and exp-sum): the first rfactor
// refreshes the second stage's operation and its consumer's reads of it; the second must
// then redirect that consumer from the refreshed (intermediate) operation to its own.
TEST(Rfactor, AfterAnEarlierPrimitiveRefreshedTheStage) {
  Tensor A = te::placeholder({4, 32}, DataType::Float(32), "A");
  IterVar k1 = te::reduce_axis({0, 32}, "k1"), k2 = te::reduce_axis({0, 32}, "k2");
  Tensor M = te::compute({4}, [&](Var i) { return te::max_reduce(A(i, k1), {k1}); }, "M");
  Tensor S = te::compute({4}, [&](Var i) { return te::sum(A(i, k2) - M(i), {k2}); }, "S");
  Tensor O = te::compute({4, 32}, [&](Var i, Var j) { return A(i, j) / S(i); }, "O");
  Schedule s = create_schedule({O});
  auto [ko1, ki1] = s[M].split(k1, 8);
  s.rfactor(M, ki1, 1);
  auto [ko2, ki2] = s[S].split(k2, 8);
  Tensor SF = s.rfactor(S, ki2, 1);
  EXPECT_TRUE(reads(s[O]->op, s[S]->op)) << "O still reads a replaced operation of S";
  EXPECT_TRUE(reads(s[S]->op, s[SF]->op));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, O}));
  EXPECT_MATCHES_REFERENCE(s.copy(), (std::vector<Tensor>{A, O}));
}

}  // namespace
}  // namespace loom::schedule
