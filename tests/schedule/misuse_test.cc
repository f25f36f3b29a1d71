// Every misuse of a schedule primitive throws loom::Error naming the stage, the axis and
// what was expected, and leaves the schedule as it was.
#include <gtest/gtest.h>

#include "loom/schedule/schedule.h"

namespace loom::schedule {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

/// Runs `f`, expects a loom::Error whose message contains every string of `parts`.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-loom exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "no error thrown; expected one mentioning " << *parts.begin();
}

struct Program {
  Tensor A = te::placeholder({16, 12}, DataType::Float(32), "A");
  Tensor B = te::placeholder({12, 8}, DataType::Float(32), "B");
  IterVar k = te::reduce_axis({0, 12}, "k");
  Tensor C = te::compute({16, 8}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
  Tensor D = te::compute({16, 8}, [&](Var i, Var j) { return C(i, j) * 2.0f; }, "D");
  Tensor E = te::compute({16, 8}, [&](Var i, Var j) { return D(i, j) + 1.0f; }, "E");
  Schedule s = create_schedule({E});
};

TEST(Misuse, TensorNotInSchedule) {
  Program p;
  Tensor X = te::compute({4}, [&](Var i) { return i * 2; }, "X");
  expect_error([&] { p.s[X]; }, {"'X'", "not in this schedule"});
  expect_error([&] { p.s[Tensor()]; }, {"undefined"});
  expect_error([&] { p.s[te::Operation()]; }, {"undefined"});
  expect_error([&] { Schedule()[p.C]; }, {"undefined"});
  expect_error([&] { create_schedule(std::vector<Tensor>{}); }, {"no output"});
  expect_error([&] { create_schedule({Tensor()}); }, {"undefined"});
  expect_error([&] { create_schedule({p.A}); }, {"'A'", "placeholder"});
}

TEST(Misuse, UndefinedStage) {
  Stage st;
  expect_error([&] { st.split(IterVar(), 4); }, {"undefined"});
  expect_error([&] { st.compute_inline(); }, {"undefined"});
  expect_error([&] { st.axis(0); }, {"undefined"});
}

TEST(Misuse, SplitNonLeaf) {
  Program p;
  Stage c = p.s[p.C];
  auto [io, ii] = c.split(c.axis(0), 4);
  auto [ioo, ioi] = c.split(io, 2);
  expect_error([&] { c.split(io, 2); },
               {"stage 'C': cannot split 'i.outer': it is not a leaf axis of this stage (it was already split or fused)"});
  expect_error([&] { c.split(p.s[p.D].axis(0), 2); }, {"stage 'C'", "'i'", "not an axis of this stage"});
  expect_error([&] { c.split(IterVar(), 2); }, {"stage 'C'", "undefined"});
  expect_error([&] { p.s[p.A].split(p.s[p.C].axis(1), 2); }, {"stage 'A'", "placeholder"});
  EXPECT_EQ(c.leaf_iter_vars().size(), 5u);
}

TEST(Misuse, SplitFactor) {
  Program p;
  Stage c = p.s[p.C];
  expect_error([&] { c.split(c.axis(0), 0); }, {"stage 'C'", "'i'", "factor must be positive", "0"});
  expect_error([&] { c.split(c.axis(0), -3); }, {"factor must be positive"});
  expect_error([&] { c.split_nparts(c.axis(0), 0); }, {"number of parts must be positive"});
  expect_error([&] { c.split(c.axis(0), te::Expr()); }, {"'i'", "undefined"});
  expect_error([&] { c.split(c.axis(0), 2.5f); }, {"'i'", "integer"});
  EXPECT_TRUE(c->relations.empty());
  Var n("n");
  c.split(c.axis(0), n);  // a symbolic factor is allowed
}

TEST(Misuse, Fuse) {
  Program p;
  Stage c = p.s[p.C];
  IterVar i = c.axis(0), j = c.axis(1);
  expect_error([&] { c.fuse(j, i); }, {"stage 'C'", "'j'", "'i'", "immediately before"});
  expect_error([&] { c.fuse(i, p.k); }, {"stage 'C'", "'i'", "'k'"});
  expect_error([&] { c.fuse(j, p.k); }, {"stage 'C'", "'j'", "'k'", "reduction axis"});
  expect_error([&] { c.fuse(i, i); }, {"'i'", "itself"});
  expect_error([&] { c.fuse(std::vector<IterVar>{}); }, {"stage 'C'", "no axes"});
  expect_error([&] { c.fuse({i, p.k}); }, {"'i'", "'k'"});
  expect_error([&] { c.fuse(i, IterVar()); }, {"undefined"});
  IterVar f = c.fuse(i, j);
  expect_error([&] { c.fuse(i, j); }, {"cannot fuse 'i'", "not a leaf axis"});
  EXPECT_EQ(c.leaf_iter_vars().size(), 2u);
  (void)f;
}

TEST(Misuse, Reorder) {
  Program p;
  Stage c = p.s[p.C];
  IterVar i = c.axis(0), j = c.axis(1);
  expect_error([&] { c.reorder({j, i, j}); }, {"stage 'C'", "'j'", "more than once"});
  expect_error([&] { c.reorder({j, p.s[p.D].axis(0)}); }, {"stage 'C'", "cannot reorder 'i'", "not an axis"});
  c.split(i, 4);
  expect_error([&] { c.reorder({j, i}); }, {"cannot reorder 'i'", "not a leaf axis"});
  expect_error([&] { c.reorder({j, IterVar()}); }, {"undefined"});
  EXPECT_EQ(c.leaf_iter_vars()[2], j);
}

TEST(Misuse, Tile) {
  Program p;
  Stage c = p.s[p.C];
  expect_error([&] { c.tile(c.axis(0), c.axis(0), 2, 2); }, {"'i'", "itself"});
  expect_error([&] { c.tile(c.axis(0), c.axis(1), 2, 0); }, {"'j'", "positive"});
  EXPECT_TRUE(c->relations.empty());
}

TEST(Misuse, Annotations) {
  Program p;
  Stage c = p.s[p.C];
  expect_error([&] { c.vectorize(p.k); }, {"stage 'C'", "cannot vectorize reduction axis 'k'"});
  expect_error([&] { c.parallel(p.k); }, {"stage 'C'", "parallelize reduction axis 'k'"});
  auto [io, ii] = c.split(c.axis(0), 4);
  expect_error([&] { c.vectorize(c.axis(0)); }, {"stage 'C'", "'i'", "not a leaf axis"});
  expect_error([&] { c.unroll(IterVar()); }, {"stage 'C'", "undefined"});
  expect_error([&] { c.parallel(p.s[p.D].axis(0)); }, {"stage 'C'", "not an axis of this stage"});
  c.vectorize(ii);
  expect_error([&] { c.unroll(ii); }, {"stage 'C'", "cannot unroll 'i.inner'", "already vectorized"});
  expect_error([&] { c.parallel(ii); }, {"already vectorized"});
  expect_error([&] { c.pragma(ii, ""); }, {"key is empty"});
  expect_error([&] { c.pragma(ii, "x", te::Expr()); }, {"undefined"});
  expect_error([&] { p.s[p.A].unroll(c.axis(1)); }, {"stage 'A'", "placeholder"});
}

TEST(Misuse, Bind) {
  Program p;
  Stage c = p.s[p.C];
  IterVar tx = te::thread_axis("threadIdx.x"), bx = te::thread_axis("blockIdx.x");
  expect_error([&] { c.bind(c.axis(0), c.axis(1)); }, {"stage 'C'", "'i'", "'j'", "not a thread axis"});
  expect_error([&] { c.bind(c.axis(0), IterVar()); }, {"stage 'C'", "undefined"});
  expect_error([&] { c.bind(p.k, bx); }, {"stage 'C'", "reduction axis 'k'", "threadIdx only"});
  c.bind(c.axis(0), bx);
  expect_error([&] { c.bind(c.axis(0), tx); }, {"stage 'C'", "'i'", "already bound to 'blockIdx.x'"});
  expect_error([&] { c.bind(c.axis(1), bx); }, {"'j'", "already bound"});
  expect_error([&] { c.vectorize(c.axis(0)); }, {"already bound"});
}

TEST(Misuse, ComputeAt) {
  Program p;
  Stage c = p.s[p.C], d = p.s[p.D], e = p.s[p.E];
  auto [eo, ei] = e.split(e.axis(0), 4);
  expect_error([&] { d.compute_at(c, c.axis(0)); }, {"stage 'D'", "'C'", "cycle"});
  expect_error([&] { c.compute_at(e, e.axis(0)); }, {"stage 'C'", "'i'", "'E'", "not a leaf axis"});
  expect_error([&] { c.compute_at(e, d.axis(1)); }, {"stage 'C'", "'j'", "'E'", "not a leaf axis"});
  expect_error([&] { c.compute_at(e, IterVar()); }, {"stage 'C'", "undefined"});
  expect_error([&] { c.compute_at(Stage(), eo); }, {"stage 'C'", "undefined"});
  expect_error([&] { c.compute_at(c, c.axis(0)); }, {"stage 'C'", "its own"});
  expect_error([&] { e.compute_at(d, d.axis(0)); }, {"stage 'E'", "output"});
  expect_error([&] { p.s[p.A].compute_at(c, c.axis(0)); }, {"stage 'A'", "placeholder"});
  expect_error([&] { c.compute_at(p.s[p.A], c.axis(0)); }, {"stage 'C'", "'A'", "placeholder"});
  EXPECT_EQ(c->attach_type, AttachType::kRoot);

  // Unrelated: F reads neither C nor D.
  Tensor F = te::compute({4}, [&](Var i) { return p.A(i, 0) + 1.0f; }, "F");
  Tensor G = te::compute({4}, [&](Var i) { return p.E(i, 0) + F(i); }, "G");
  Schedule s = create_schedule({G});
  expect_error([&] { s[p.C].compute_at(s[F], s[F].axis(0)); }, {"stage 'C'", "'F' does not read 'C'"});
  d.compute_inline();
  expect_error([&] { c.compute_at(d, d.axis(0)); }, {"stage 'C'", "'D'", "inlined"});
}

TEST(Misuse, ComputeInlineAndRoot) {
  Program p;
  expect_error([&] { p.s[p.E].compute_inline(); }, {"stage 'E'", "output"});
  expect_error([&] { p.s[p.C].compute_inline(); }, {"stage 'C'", "reduction"});
  expect_error([&] { p.s[p.A].compute_inline(); }, {"stage 'A'", "placeholder"});
  expect_error([&] { p.s[p.A].compute_root(); }, {"stage 'A'", "placeholder"});
  EXPECT_EQ(p.s[p.C]->attach_type, AttachType::kRoot);
}

TEST(Misuse, Storage) {
  Program p;
  Stage c = p.s[p.C];
  auto [io, ii] = c.split(c.axis(0), 4);
  expect_error([&] { c.storage_align(io, 8, 0); }, {"stage 'C'", "'i.outer'", "spatial axis"});
  expect_error([&] { c.storage_align(p.k, 8, 0); }, {"stage 'C'", "'k'"});
  expect_error([&] { c.storage_align(IterVar(), 8, 0); }, {"stage 'C'", "undefined"});
  expect_error([&] { c.storage_align(c.axis(1), 0, 0); }, {"'j'", "factor must be positive"});
  expect_error([&] { c.storage_align(c.axis(1), 8, 8); }, {"'j'", "offset"});
  expect_error([&] { c.storage_order({c.axis(1)}); }, {"stage 'C'", "each of its 2 spatial axes once, got 1"});
  expect_error([&] { c.storage_order({c.axis(1), c.axis(1)}); }, {"stage 'C'", "'j' appears twice"});
  expect_error([&] { c.storage_order({c.axis(1), io}); }, {"stage 'C'", "'i.outer'", "spatial axis"});
  expect_error([&] { c.set_scope("sharde"); }, {"stage 'C'", "'sharde'"});
  expect_error([&] { p.s[p.E].set_scope("shared"); }, {"stage 'E'", "output"});
  expect_error([&] { p.s[p.E].double_buffer(); }, {"stage 'E'", "output"});
  expect_error([&] { p.s[p.A].set_scope("shared"); }, {"stage 'A'", "placeholder"});
  expect_error([&] { p.s[p.E].compute_padded(te::make_const(DataType::Float(32), 0)); }, {"stage 'E'", "output"});
  expect_error([&] { c.compute_padded(te::Expr()); }, {"stage 'C'", "pad value is undefined"});
  expect_error([&] { c.compute_padded(te::make_const(DataType::Float(32, 4), 0)); }, {"stage 'C'", "scalar"});
  expect_error([&] { p.s[p.A].compute_padded(te::make_const(DataType::Float(32), 0)); }, {"stage 'A'"});
  EXPECT_TRUE(c->storage_align.empty());
  EXPECT_TRUE(c->storage_order.empty());
  EXPECT_FALSE(c->pad_value.defined());
  EXPECT_EQ(c->scope, "");
}

TEST(Misuse, CacheRead) {
  Program p;
  Tensor X = te::placeholder({3}, DataType::Float(32), "X");
  expect_error([&] { p.s.cache_read(X, "shared", {p.C}); }, {"'X'", "not in this schedule"});
  expect_error([&] { p.s.cache_read(p.A, "shared", {p.D}); }, {"'D' does not read 'A'"});
  expect_error([&] { p.s.cache_read(p.A, "sharde", {p.C}); }, {"'A'", "'sharde'"});
  expect_error([&] { p.s.cache_read(p.A, "shared", std::vector<Tensor>{}); }, {"'A'", "no readers"});
  expect_error([&] { p.s.cache_read(p.C, "shared", {p.C}); }, {"'C'", "own cache"});
  expect_error([&] { p.s.cache_read(p.A, "shared", {p.A}); }, {"'A'"});
  expect_error([&] { p.s.cache_read(p.A, "shared", {Tensor()}); }, {"undefined"});
  expect_error([&] { p.s.cache_read(p.A, "shared", std::vector<te::Operation>{nullptr}); }, {"undefined"});
  expect_error([&] { p.s.cache_read(Tensor(), "shared", {p.C}); }, {"undefined"});
  expect_error([&] { p.s.cache_read(p.A, "shared", {X}); }, {"'X'", "not in this schedule"});
  EXPECT_EQ(p.s.stages().size(), 5u);
  EXPECT_EQ(p.s[p.C]->op, p.C.op());
}

TEST(Misuse, CacheWrite) {
  Program p;
  expect_error([&] { p.s.cache_write(p.A, "local"); }, {"'A'", "placeholder"});
  expect_error([&] { p.s.cache_write(p.C, "locl"); }, {"stage 'C'", "'locl'"});
  expect_error([&] { p.s.cache_write(Tensor(), "local"); }, {"undefined"});
  p.s[p.D].split(p.s[p.D].axis(0), 2);
  expect_error([&] { p.s.cache_write(p.D, "local"); }, {"stage 'D'", "already split"});
  p.s[p.D].compute_inline();
  expect_error([&] { p.s.cache_write(p.D, "local"); }, {"stage 'D'", "inlined"});
  p.s[p.C].compute_at(p.s[p.E], p.s[p.E].axis(0));
  EXPECT_EQ(p.s.stages().size(), 5u);
}

TEST(Misuse, Rfactor) {
  Program p;
  Stage c = p.s[p.C];
  expect_error([&] { p.s.rfactor(p.D, p.s[p.D].axis(0)); }, {"stage 'D'", "not a reduction"});
  expect_error([&] { p.s.rfactor(p.A, p.k); }, {"stage 'A'", "not a reduction"});
  expect_error([&] { p.s.rfactor(p.C, c.axis(0)); }, {"stage 'C'", "'i'", "not a reduction axis"});
  expect_error([&] { p.s.rfactor(p.C, IterVar()); }, {"stage 'C'", "undefined"});
  expect_error([&] { p.s.rfactor(p.C, p.k, 3); }, {"stage 'C'", "factor_axis 3"});
  expect_error([&] { p.s.rfactor(p.C, p.k, -1); }, {"factor_axis -1"});
  auto [ko, ki] = c.split(p.k, 4);
  expect_error([&] { p.s.rfactor(p.C, p.k); }, {"stage 'C'", "'k'", "not a leaf axis"});
  Var n("n");
  auto [kio, kii] = c.split(ki, n);
  expect_error([&] { p.s.rfactor(p.C, kii); }, {"stage 'C'", "non-constant"});
  EXPECT_EQ(p.s.stages().size(), 5u);
}

}  // namespace
}  // namespace loom::schedule
