// compute_at of a stage with several consumers: every consumer runs inside the attach loop
// (it is the attach stage, or is itself computed there or deeper), and the stage covers the
// union of what they read. Compared with te::evaluate on shapes that do and do not divide
// the split factors; a consumer outside the loop is an error naming it.
#include <sstream>

#include "common/test_util.h"
#include "loom/lower/passes.h"

namespace loom {
namespace {

using schedule::Stage;
using te::IterVar;
using te::Tensor;
using te::Var;

struct Shape2 {
  int n, m;
};
// The first divides every factor used below (2, 4, 8); the others do not.
const Shape2 kShapes[] = {{8, 16}, {5, 13}, {3, 7}};

// TOPI's softmax as written: max, exp and the row sum are separate stages.
struct Softmax {
  Tensor x, M, E, S, Y;
};
Softmax make_softmax(Shape2 sh) {
  Softmax p;
  p.x = te::placeholder({sh.n, sh.m}, DataType::Float(32), "x");
  Tensor x = p.x;
  IterVar k = te::reduce_axis({0, sh.m}, "k");
  p.M = te::compute({sh.n}, [&](Var i) { return te::max_reduce(x(i, k), {k}); }, "M");
  Tensor M = p.M;
  p.E = te::compute({sh.n, sh.m}, [&](Var i, Var j) { return te::exp(x(i, j) - M(i)); }, "E");
  Tensor E = p.E;
  IterVar k2 = te::reduce_axis({0, sh.m}, "k2");
  p.S = te::compute({sh.n}, [&](Var i) { return te::sum(E(i, k2), {k2}); }, "S");
  Tensor S = p.S;
  p.Y = te::compute({sh.n, sh.m}, [&](Var i, Var j) { return E(i, j) / S(i); }, "Y");
  return p;
}

/// The first realize (allocation) of `name` after schedule_ops: "realize E([min, extent], …) "scope"".
std::string realize_line(const Schedule& s, const std::vector<Tensor>& args, const std::string& name,
                         const Target& target = Target("llvm")) {
  std::ostringstream ir;
  lowering::LowerOptions opts;
  opts.target = target;
  opts.print_after_all = &ir;
  lowering::lower(s, args, "f", opts);
  std::string all = ir.str();
  size_t at = all.find("realize " + name + "(");
  if (at == std::string::npos) return all;
  return all.substr(at, all.find('\n', at) - at);
}

class MultiConsumer : public ::testing::TestWithParam<Shape2> {};

TEST_P(MultiConsumer, SoftmaxAtRowLoop) {
  Softmax p = make_softmax(GetParam());
  Schedule s = create_schedule({p.Y});
  IterVar row = s[p.Y].axis(0);
  s[p.M].compute_at(s[p.Y], row);
  s[p.E].compute_at(s[p.Y], row);
  s[p.S].compute_at(s[p.Y], row);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.x, p.Y}));
  // E covers one row: what S and Y read of it per iteration of the row loop.
  std::string line = realize_line(s, {p.x, p.Y}, "E");
  EXPECT_NE(line.find(fmt::format(", 1], [0, {}])", GetParam().m)), std::string::npos) << line;
}

TEST_P(MultiConsumer, SoftmaxAtRowLoopWithConsumersSplitAndVectorized) {
  for (int variant = 0; variant < 3; ++variant) {
    Softmax p = make_softmax(GetParam());
    Schedule s = create_schedule({p.Y});
    Stage y = s[p.Y];
    IterVar row = y.axis(0);
    auto [yjo, yji] = y.split(y.axis(1), 8);
    y.vectorize(yji);
    y.parallel(row);
    s[p.M].compute_at(y, row);
    s[p.E].compute_at(y, row);
    s[p.S].compute_at(y, row);
    auto [ejo, eji] = s[p.E].split(s[p.E].axis(1), 4);
    (void)ejo;
    s[p.E].vectorize(eji);
    if (variant >= 1) {
      auto [ko, ki] = s[p.S].split(s[p.S].reduce_axis(0), 4);
      (void)ko, (void)ki;
    }
    // The sum below the row loop, once per column block: still inside E's loop, which
    // then covers the whole row for it.
    if (variant == 2) s[p.S].compute_at(y, yjo);
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.x, p.Y})) << "variant " << variant;
  }
}

// TOPI x86's layout of a 3-d softmax: the outer axes fused and parallel, every stage at the
// fused loop.
TEST_P(MultiConsumer, SoftmaxAtFusedOuterAxes) {
  Shape2 sh = GetParam();
  Tensor x = te::placeholder({2, sh.n, sh.m}, DataType::Float(32), "x");
  IterVar k = te::reduce_axis({0, sh.m}, "k");
  Tensor M = te::compute({2, sh.n}, [&](Var b, Var i) { return te::max_reduce(x(b, i, k), {k}); }, "M");
  Tensor E = te::compute(x.shape(), [&](Var b, Var i, Var j) { return te::exp(x(b, i, j) - M(b, i)); }, "E");
  IterVar k2 = te::reduce_axis({0, sh.m}, "k2");
  Tensor S = te::compute({2, sh.n}, [&](Var b, Var i) { return te::sum(E(b, i, k2), {k2}); }, "S");
  Tensor Y = te::compute(x.shape(), [&](Var b, Var i, Var j) { return E(b, i, j) / S(b, i); }, "Y");
  Schedule s = create_schedule({Y});
  Stage y = s[Y];
  IterVar outer = y.fuse(y.axis(0), y.axis(1));
  y.parallel(outer);
  auto [jo, ji] = y.split(y.axis(2), 4);
  (void)jo;
  y.vectorize(ji);
  for (const Tensor& t : {M, E, S}) s[t].compute_at(y, outer);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{x, Y}));
}

// One producer read (through windows) by two consumers, both computed in a third.
struct Diamond {
  Tensor A, B, C1, C2, D;
};
Diamond make_diamond(Shape2 sh) {
  Diamond p;
  p.A = te::placeholder({sh.n + 1, sh.m + 1}, DataType::Float(32), "A");
  Tensor A = p.A;
  p.B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) * 2 + 1; }, "B");
  Tensor B = p.B;
  p.C1 = te::compute({sh.n, sh.m}, [&](Var i, Var j) { return B(i, j) + B(i, j + 1); }, "C1");
  p.C2 = te::compute({sh.n, sh.m}, [&](Var i, Var j) { return B(i + 1, j) * 3; }, "C2");
  Tensor C1 = p.C1, C2 = p.C2;
  p.D = te::compute({sh.n, sh.m}, [&](Var i, Var j) { return C1(i, j) - C2(i, j); }, "D");
  return p;
}

TEST_P(MultiConsumer, DiamondAllAtSameLoop) {
  for (int at_inner = 0; at_inner < 2; ++at_inner) {
    Diamond p = make_diamond(GetParam());
    Schedule s = create_schedule({p.D});
    Stage d = s[p.D];
    auto [io, jo, ii, ji] = d.tile(d.axis(0), d.axis(1), 2, 4);
    (void)ii;
    d.vectorize(ji);
    IterVar at = at_inner ? jo : io;
    for (const Tensor& t : {p.B, p.C1, p.C2}) s[t].compute_at(d, at);
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.D})) << "at " << at.name();
  }
}

// The consumers sit deeper than the producer: B at the row-tile loop, C1 and C2 at the
// column-tile loop inside it, so B covers every column tile's window.
TEST_P(MultiConsumer, DiamondConsumersDeeperThanProducer) {
  Diamond p = make_diamond(GetParam());
  Schedule s = create_schedule({p.D});
  Stage d = s[p.D];
  auto [io, jo, ii, ji] = d.tile(d.axis(0), d.axis(1), 2, 4);
  (void)ii, (void)ji;
  d.parallel(io);
  s[p.B].compute_at(d, io);
  s[p.C1].compute_at(d, jo);
  s[p.C2].compute_at(d, jo);
  auto [c1o, c1i] = s[p.C1].split(s[p.C1].axis(1), 2);
  (void)c1o;
  s[p.C1].vectorize(c1i);
  s[p.C2].split_nparts(s[p.C2].axis(0), 2);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.D}));
  // Per row tile of 2, B covers 3 rows (C2 reads one below) and every column tile's window
  // (C1 reads one to the right): 4 per tile, the last tile's overshoot included.
  std::string line = realize_line(s, {p.A, p.D}, "B");
  int cols = (GetParam().m + 3) / 4 * 4 + 1;
  EXPECT_NE(line.find(fmt::format(", 3], [0, {}])", cols)), std::string::npos) << line;
}

// A consumer computed inside another consumer (C inside E inside Y): B's region climbs the
// whole chain, relaxing C's loops, then E's, then Y's loops inside B's attach point.
TEST_P(MultiConsumer, ConsumerNestedTwoLevelsDeep) {
  Shape2 sh = GetParam();
  Tensor A = te::placeholder({sh.n + 2, sh.m + 2}, DataType::Float(32), "A");
  Tensor B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) + 1; }, "B");
  Tensor C = te::compute({sh.n + 1, sh.m + 1}, [&](Var i, Var j) { return B(i + 1, j) * B(i, j + 1); }, "C");
  Tensor E = te::compute({sh.n + 1, sh.m + 1}, [&](Var i, Var j) { return C(i, j) + B(i, j); }, "E");
  Tensor Y = te::compute({sh.n, sh.m}, [&](Var i, Var j) { return E(i, j) + E(i + 1, j + 1); }, "Y");
  Schedule s = create_schedule({Y});
  Stage y = s[Y];
  auto [io, ii] = y.split(y.axis(0), 2);
  s[B].compute_at(y, io);
  s[E].compute_at(y, ii);
  auto [ejo, eji] = s[E].split(s[E].axis(1), 4);
  (void)eji;
  s[C].compute_at(s[E], ejo);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, Y}));
}

// A block per row on a GPU: max, exp and sum at the row loop bound to blockIdx.x (so in
// shared memory), exp's and the output's columns bound to threadIdx.x. Lowered only (no GPU
// needed): one kernel, E in shared memory for one row.
TEST_P(MultiConsumer, SoftmaxBlockPerRowLowersForCuda) {
  Softmax p = make_softmax(GetParam());
  Schedule s = create_schedule({p.Y});
  Stage y = s[p.Y];
  IterVar row = y.axis(0);
  y.bind(row, te::thread_axis("blockIdx.x"));
  auto [yjo, yji] = y.split(y.axis(1), 4);
  (void)yjo;
  y.bind(yji, te::thread_axis("threadIdx.x"));
  for (const Tensor& t : {p.M, p.E, p.S}) s[t].compute_at(y, row);
  auto [ejo, eji] = s[p.E].split(s[p.E].axis(1), 4);
  (void)ejo;
  s[p.E].bind(eji, te::thread_axis("threadIdx.x"));
  lowering::LowerOptions opts;
  opts.target = Target("cuda");
  EXPECT_EQ(lowering::lower(s, {p.x, p.Y}, "f", opts).device_funcs.size(), 1u);
  std::string line = realize_line(s, {p.x, p.Y}, "E", Target("cuda"));
  // The threads of the last column block overshoot the row (guarded), and E covers them.
  int covered = (GetParam().m + 3) / 4 * 4;
  EXPECT_NE(line.find(fmt::format(", 1], [0, {}]) \"shared\"", covered)), std::string::npos) << line;
}

INSTANTIATE_TEST_SUITE_P(Shapes, MultiConsumer, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return fmt::format("n{}_m{}", info.param.n, info.param.m); });

std::string lower_error(const Schedule& s, const std::vector<Tensor>& args) {
  try {
    lower(s, args, "f");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// B is read by C and D; D computes B inside its loop. C must run inside that loop too.
TEST(MultiConsumerErrors, ConsumerOutsideTheAttachLoop) {
  Tensor A = te::placeholder({10, 9}, DataType::Float(32), "A");
  Tensor B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) * 2; }, "B");
  Tensor C = te::compute(A.shape(), [&](Var i, Var j) { return B(i, j) + 1; }, "C");
  Tensor D = te::compute(A.shape(), [&](Var i, Var j) { return B(i, j) * C(i, j); }, "D");
  for (int variant = 0; variant < 3; ++variant) {
    Schedule s = create_schedule({D});
    Stage d = s[D];
    auto [io, ii] = d.split(d.axis(0), 4);
    if (variant == 0) {
      s[B].compute_at(d, io);  // C stays at the root
    } else if (variant == 1) {
      s[B].compute_at(d, ii);  // C runs once per io, before B exists in that iteration
      s[C].compute_at(d, io);
    } else {
      s[B].compute_at(s[C], s[C].axis(0));  // D reads B too but is not inside C
      s[C].compute_at(d, ii);
    }
    std::string msg = lower_error(s, {A, D});
    const char* consumer = variant == 2 ? "'D'" : "'C'";
    const char* at = variant == 2 ? "'C'" : "'D'";
    EXPECT_NE(msg.find("stage 'B'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("of stage ") + at), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("consumer ") + consumer), std::string::npos) << msg;
    EXPECT_NE(msg.find("outside"), std::string::npos) << msg;
  }
  // The valid ordering of variant 1: C inside B's loop.
  Schedule s = create_schedule({D});
  Stage d = s[D];
  auto [io, ii] = d.split(d.axis(0), 4);
  s[B].compute_at(d, io);
  s[C].compute_at(d, ii);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, D}));
}

}  // namespace
}  // namespace loom
