// TVM's schedule vocabulary as a TVM user writes it, ported to loom's C++ API: the
// "Schedule Primitives in TVM" tutorial, the "Reduction" tutorial (rfactor), an argmax
// over a tuple comm_reducer, and bound inference under splits that do not divide. Each
// schedule is compiled and compared with te::evaluate on shapes that do and do not divide
// the factors. (TVM's Python spelling is quoted beside each step.)
#include <sstream>

#include "common/test_util.h"
#include "loom/lower/passes.h"
#include "loom/runtime/cuda.h"

namespace loom {
namespace {

using schedule::Stage;
using te::Expr;
using te::IterVar;
using te::Tensor;
using te::Var;

// ------------------------------------------------ "Schedule Primitives in TVM"
// The tutorial's m and n are symbolic; loom's shapes are constants, so each test runs on a
// shape the factors divide and on ones they do not.
struct Shape2 {
  int m, n;
};
const Shape2 kShapes[] = {{64, 40}, {37, 23}, {5, 3}};

class SchedulePrimitives : public ::testing::TestWithParam<Shape2> {};

// A = te.placeholder((m,)); B = te.compute((m,), lambda i: A[i] * 2)
struct Vec {
  Tensor A, B;
};
Vec make_vec(int m) {
  Vec v;
  v.A = te::placeholder({m}, DataType::Float(32), "A");
  Tensor A = v.A;
  v.B = te::compute({m}, [&](Var i) { return A(i) * 2; }, "B");
  return v;
}

// A = te.placeholder((m, n)); B = te.compute((m, n), lambda i, j: A[i, j])
struct Mat {
  Tensor A, B;
};
Mat make_mat(Shape2 sh) {
  Mat p;
  p.A = te::placeholder({sh.m, sh.n}, DataType::Float(32), "A");
  Tensor A = p.A;
  p.B = te::compute({sh.m, sh.n}, [&](Var i, Var j) { return A(i, j) + 0.5f; }, "B");
  return p;
}

TEST_P(SchedulePrimitives, SplitByFactor) {
  Vec v = make_vec(GetParam().m);
  Schedule s = create_schedule({v.B});
  auto [xo, xi] = s[v.B].split(s[v.B].axis(0), 32);  // xo, xi = s[B].split(B.op.axis[0], factor=32)
  EXPECT_EQ(s[v.B].leaf_iter_vars(), (std::vector<IterVar>{xo, xi}));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{v.A, v.B}));
}

TEST_P(SchedulePrimitives, SplitByNparts) {
  Vec v = make_vec(GetParam().m);
  Schedule s = create_schedule({v.B});
  auto [bx, tx] = s[v.B].split_nparts(s[v.B].axis(0), 32);  // s[B].split(B.op.axis[0], nparts=32)
  (void)bx, (void)tx;
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{v.A, v.B}));
}

TEST_P(SchedulePrimitives, Tile) {
  Mat p = make_mat(GetParam());
  Schedule s = create_schedule({p.B});
  // xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
  auto [xo, yo, xi, yi] = s[p.B].tile(s[p.B].axis(0), s[p.B].axis(1), 10, 5);
  EXPECT_EQ(s[p.B].leaf_iter_vars(), (std::vector<IterVar>{xo, yo, xi, yi}));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.B}));
}

TEST_P(SchedulePrimitives, Fuse) {
  Mat p = make_mat(GetParam());
  Schedule s = create_schedule({p.B});
  auto [xo, yo, xi, yi] = s[p.B].tile(s[p.B].axis(0), s[p.B].axis(1), 10, 5);
  IterVar fused = s[p.B].fuse(xi, yi);  // fused = s[B].fuse(xi, yi)
  EXPECT_EQ(s[p.B].leaf_iter_vars(), (std::vector<IterVar>{xo, yo, fused}));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.B}));
}

TEST_P(SchedulePrimitives, Reorder) {
  Mat p = make_mat(GetParam());
  Schedule s = create_schedule({p.B});
  auto [xo, xi] = s[p.B].split(s[p.B].axis(0), 32);
  auto [yo, yi] = s[p.B].split(s[p.B].axis(1), 32);
  s[p.B].reorder({xi, yo, xo, yi});  // s[B].reorder(xi, yo, xo, yi)
  EXPECT_EQ(s[p.B].leaf_iter_vars(), (std::vector<IterVar>{xi, yo, xo, yi}));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.B}));
}

// bx, tx = s[B].split(B.op.axis[0], factor=64); s[B].bind(bx, te.thread_axis("blockIdx.x"));
// s[B].bind(tx, te.thread_axis("threadIdx.x")). Lowered for CUDA (no GPU needed); run and
// compared where a GPU is present.
TEST_P(SchedulePrimitives, BindForGpu) {
  int m = GetParam().m;
  Vec v = make_vec(m);
  Schedule s = create_schedule({v.B});
  auto [bx, tx] = s[v.B].split(s[v.B].axis(0), 64);
  s[v.B].bind(bx, te::thread_axis("blockIdx.x"));
  s[v.B].bind(tx, te::thread_axis("threadIdx.x"));
  lowering::LowerOptions opts;
  opts.target = Target("cuda");
  lowering::LoweredFunc f = lowering::lower(s, {v.A, v.B}, "f", opts);
  ASSERT_EQ(f.device_funcs.size(), 1u);
  std::map<std::string, int64_t> extents;
  for (const auto& [tag, e] : f.device_funcs[0].thread_extents) extents[tag] = te::as_const_int(e).value_or(-1);
  EXPECT_EQ(extents["blockIdx.x"], (m + 63) / 64);
  EXPECT_EQ(extents["threadIdx.x"], 64);
  if (!runtime::cuda_available()) return;
  EXPECT_EQ(test::compare_with_reference(s, {v.A, v.B}, 1, Target("cuda")), "");
}

// A = te.placeholder((m,)); B = te.compute((m,), lambda i: A[i] + 1); C = te.compute((m,), lambda i: B[i] * 2)
struct Chain {
  Tensor A, B, C;
};
Chain make_chain(Shape2 sh) {
  Chain p;
  p.A = te::placeholder({sh.m, sh.n}, DataType::Float(32), "A");
  Tensor A = p.A;
  p.B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) + 1; }, "B");
  Tensor B = p.B;
  p.C = te::compute(A.shape(), [&](Var i, Var j) { return B(i, j) * 2; }, "C");
  return p;
}

TEST_P(SchedulePrimitives, ComputeAt) {
  for (int axis = 0; axis < 2; ++axis) {
    Chain p = make_chain(GetParam());
    Schedule s = create_schedule({p.C});
    s[p.B].compute_at(s[p.C], s[p.C].axis(axis));  // s[B].compute_at(s[C], C.op.axis[0])
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.C})) << "axis " << axis;
  }
}

TEST_P(SchedulePrimitives, ComputeInline) {
  Chain p = make_chain(GetParam());
  Schedule s = create_schedule({p.C});
  s[p.B].compute_inline();  // s[B].compute_inline()
  std::ostringstream ir;
  ir << lower(s, {p.A, p.C}, "f");
  EXPECT_EQ(ir.str().find("B["), std::string::npos) << ir.str();
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.C}));
}

TEST_P(SchedulePrimitives, ComputeRootUndoesComputeAt) {
  Chain p = make_chain(GetParam());
  Schedule s = create_schedule({p.C});
  s[p.B].compute_at(s[p.C], s[p.C].axis(0));
  s[p.B].compute_root();  // s[B].compute_root()
  EXPECT_EQ(s[p.B]->attach_type, schedule::AttachType::kRoot);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.C}));
}

// TVM's tutorial lists the primitives one at a time; a user combines them.
TEST_P(SchedulePrimitives, AllTogether) {
  Chain p = make_chain(GetParam());
  Schedule s = create_schedule({p.C});
  Stage c = s[p.C];
  auto [xo, yo, xi, yi] = c.tile(c.axis(0), c.axis(1), 8, 8);
  IterVar outer = c.fuse(xo, yo);
  c.parallel(outer);
  c.reorder({outer, yi, xi});
  c.unroll(xi);
  s[p.B].compute_at(c, outer);
  auto [bo, bi] = s[p.B].split(s[p.B].axis(1), 4);
  (void)bo;
  s[p.B].vectorize(bi);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.C}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SchedulePrimitives, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return fmt::format("m{}_n{}", info.param.m, info.param.n); });

// ------------------------------------------------ "Reduction" tutorial
// n, m; A = te.placeholder((n, m)); k = te.reduce_axis((0, m), "k");
// B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k))
struct RowSum {
  Tensor A, B;
  IterVar k;
};
RowSum make_row_sum(Shape2 sh) {
  RowSum p;
  p.A = te::placeholder({sh.m, sh.n}, DataType::Float(32), "A");
  p.k = te::reduce_axis({0, sh.n}, "k");
  Tensor A = p.A;
  IterVar k = p.k;
  p.B = te::compute({sh.m}, [&](Var i) { return te::sum(A(i, k), {k}); }, "B");
  return p;
}

class Reduction : public ::testing::TestWithParam<Shape2> {};

TEST_P(Reduction, SplitReduceAndSpatialAxes) {
  RowSum p = make_row_sum(GetParam());
  Schedule s = create_schedule({p.B});
  auto [ko, ki] = s[p.B].split(s[p.B].reduce_axis(0), 16);  // s[B].split(B.op.reduce_axis[0], factor=16)
  auto [xo, xi] = s[p.B].split(s[p.B].axis(0), 32);         // s[B].split(B.op.axis[0], factor=32)
  EXPECT_EQ(s[p.B].leaf_iter_vars(), (std::vector<IterVar>{xo, xi, ko, ki}));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.B}));
}

TEST_P(Reduction, Rfactor) {
  RowSum p = make_row_sum(GetParam());
  Schedule s = create_schedule({p.B});
  auto [ko, ki] = s[p.B].split(s[p.B].reduce_axis(0), 16);
  (void)ko;
  Tensor BF = s.rfactor(p.B, ki);  // BF = s.rfactor(B, ki)
  // BF's shape is (16, n) (factor_axis 0); B now reduces over BF's first axis.
  ASSERT_EQ(BF.ndim(), 2u);
  const int64_t kf = std::min(16, GetParam().n);  // a factor larger than the axis shrinks to it
  EXPECT_EQ(te::as_const_int(BF.shape()[0]), kf);
  EXPECT_EQ(te::as_const_int(BF.shape()[1]), GetParam().m);
  ASSERT_EQ(s[p.B]->op->reduce_axis.size(), 1u);
  EXPECT_EQ(te::as_const_int(s[p.B].reduce_axis(0)->dom.extent), kf);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.B}));
}

TEST_P(Reduction, RfactorWithFactorAxisLast) {
  RowSum p = make_row_sum(GetParam());
  Schedule s = create_schedule({p.B});
  auto [ko, ki] = s[p.B].split(s[p.B].reduce_axis(0), 8);
  (void)ki;
  Tensor BF = s.rfactor(p.B, ko, 1);  // s.rfactor(B, ko, factor_axis=1)
  EXPECT_EQ(te::as_const_int(BF.shape()[0]), GetParam().m);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.B}));
}

// The CPU form of the tutorial's cross-thread reduction: the partial sums of a 16-wide
// slice of k vectorized across the slice, the final sum over it per row, rows in parallel.
TEST_P(Reduction, RfactorParallelAndVectorized) {
  RowSum p = make_row_sum(GetParam());
  Schedule s = create_schedule({p.B});
  auto [ko, ki] = s[p.B].split(s[p.B].reduce_axis(0), 16);
  (void)ko;
  Tensor BF = s.rfactor(p.B, ki);
  Stage bf = s[BF];
  bf.reorder({bf.axis(1), bf.reduce_axis(0), bf.axis(0)});
  bf.vectorize(bf.axis(0));
  auto [xo, xi] = s[p.B].split(s[p.B].axis(0), 4);
  s[p.B].parallel(xo);
  bf.compute_at(s[p.B], xi);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.B}));
}

// The tutorial's GPU form binds B's remaining reduce axis (over BF's factor axis) to
// threadIdx.x and computes BF at it: a cross-thread reduction, run on the CUDA emulation.
TEST(ReductionTutorialGpu, CrossThreadReductionMatchesTheReference) {
  RowSum p = make_row_sum({64, 40});
  Schedule s = create_schedule({p.B});
  auto [ko, ki] = s[p.B].split(s[p.B].reduce_axis(0), 16);
  (void)ko;
  Tensor BF = s.rfactor(p.B, ki);
  auto [xo, xi] = s[p.B].split(s[p.B].axis(0), 32);
  s[p.B].bind(xo, te::thread_axis("blockIdx.x"));
  s[p.B].bind(xi, te::thread_axis("threadIdx.y"));
  IterVar k = s[p.B].reduce_axis(0);
  s[p.B].bind(k, te::thread_axis("threadIdx.x"));
  s[BF].compute_at(s[p.B], k);
  EXPECT_EQ(test::compare_emulated_with_reference(s, {p.A, p.B}), "");
}

INSTANTIATE_TEST_SUITE_P(Shapes, Reduction, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return fmt::format("m{}_n{}", info.param.m, info.param.n); });

// ------------------------------------------------ argmax over a tuple comm_reducer
// def fcombine(x, y):
//     lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0]); rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
//     return lhs, rhs
// def fidentity(t0, t1): return tvm.tir.const(-1, t0), tvm.te.min_value(t1)
// argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
// T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k))
struct Argmax {
  Tensor idx, val, T0, T1;
};
Argmax make_argmax(Shape2 sh) {
  te::CommReducer argmax = te::comm_reducer(
      [](const std::vector<Var>& x, const std::vector<Var>& y) -> std::vector<Expr> {
        Expr keep = x[1] >= y[1];
        return {te::select(keep, x[0], y[0]), te::select(keep, x[1], y[1])};
      },
      [](const std::vector<DataType>& t) -> std::vector<Expr> {
        return {te::make_const(t[0], -1), te::min_value(t[1])};
      },
      {DataType::Int(32), DataType::Float(32)});
  Argmax p;
  p.idx = te::placeholder({sh.m, sh.n}, DataType::Int(32), "idx");
  p.val = te::placeholder({sh.m, sh.n}, DataType::Float(32), "val");
  Tensor idx = p.idx, val = p.val;
  IterVar k = te::reduce_axis({0, sh.n}, "k");
  auto outs = te::compute_multi({sh.m}, [&](const std::vector<Var>& i) {
    return te::reduce(argmax, {idx(i[0], k), val(i[0], k)}, {k});
  }, "T");
  p.T0 = outs[0];
  p.T1 = outs[1];
  return p;
}

class TupleReduction : public ::testing::TestWithParam<Shape2> {};

TEST_P(TupleReduction, ArgmaxDefault) {
  Argmax p = make_argmax(GetParam());
  Schedule s = create_schedule({p.T0, p.T1});
  EXPECT_EQ(s[p.T0], s[p.T1]);  // one stage computes both outputs
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.idx, p.val, p.T0, p.T1}));
}

TEST_P(TupleReduction, ArgmaxSplitParallel) {
  Argmax p = make_argmax(GetParam());
  Schedule s = create_schedule({p.T0, p.T1});
  Stage t = s[p.T0];
  auto [ko, ki] = t.split(t.reduce_axis(0), 8);
  auto [xo, xi] = t.split(t.axis(0), 4);
  t.reorder({xo, ko, xi, ki});
  t.parallel(xo);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.idx, p.val, p.T0, p.T1}));
}

TEST_P(TupleReduction, ArgmaxRfactor) {
  Argmax p = make_argmax(GetParam());
  Schedule s = create_schedule({p.T0, p.T1});
  auto [ko, ki] = s[p.T0].split(s[p.T0].reduce_axis(0), 4);
  (void)ko;
  Tensor TF = s.rfactor(p.T0, ki);
  EXPECT_EQ(TF.op()->num_outputs(), 2);
  s[TF].compute_at(s[p.T0], s[p.T0].axis(0));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.idx, p.val, p.T0, p.T1}));
}

// Both outputs read by one consumer that computes the argmax stage inside its loop.
TEST_P(TupleReduction, ArgmaxComputedAtItsConsumer) {
  Argmax p = make_argmax(GetParam());
  Tensor T0 = p.T0, T1 = p.T1;
  Tensor Z = te::compute({GetParam().m}, [&](Var i) { return te::cast(DataType::Float(32), T0(i)) + T1(i); }, "Z");
  Schedule s = create_schedule({Z});
  auto [zo, zi] = s[Z].split(s[Z].axis(0), 4);
  (void)zo;
  s[p.T0].compute_at(s[Z], zi);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.idx, p.val, Z}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, TupleReduction, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return fmt::format("m{}_n{}", info.param.m, info.param.n); });

// ------------------------------------------------ bound inference under uneven splits
// A 3-stage pipeline B -> C -> D, each stage reading a window of the previous one, with C
// computed under D's split of 7 over an extent of 30 (7 does not divide 30: the last
// iteration covers 2 of 7) and B under C's loops or D's.
struct Pipeline {
  Tensor A, B, C, D;
};
Pipeline make_pipeline(int n) {
  Pipeline p;
  p.A = te::placeholder({n + 4}, DataType::Float(32), "A");
  Tensor A = p.A;
  p.B = te::compute({n + 4}, [&](Var i) { return A(i) * 2; }, "B");
  Tensor B = p.B;
  p.C = te::compute({n + 2}, [&](Var i) { return B(i) + B(i + 1) + B(i + 2); }, "C");
  Tensor C = p.C;
  p.D = te::compute({n}, [&](Var i) { return C(i) * C(i + 2); }, "D");
  return p;
}

/// The line of the first realize (allocation) of `name` in the lowered IR: "realize C([min, extent])".
std::string realize_line(const Schedule& s, const std::vector<Tensor>& args, const std::string& name) {
  std::ostringstream ir;
  lowering::LowerOptions opts;
  opts.print_after_all = &ir;
  lowering::lower(s, args, "f", opts);
  std::string all = ir.str();
  size_t at = all.find("realize " + name + "(");
  if (at == std::string::npos) return all;
  return all.substr(at, all.find('\n', at) - at);
}

TEST(BoundInference, WindowUnderSplitOfSevenOverThirty) {
  for (int n : {30, 28, 5}) {
    for (int variant = 0; variant < 3; ++variant) {
      Pipeline p = make_pipeline(n);
      Schedule s = create_schedule({p.D});
      auto [dout, din] = s[p.D].split(s[p.D].axis(0), 7);
      s[p.C].compute_at(s[p.D], dout);
      if (variant == 0) s[p.B].compute_at(s[p.D], dout);
      if (variant == 1) {
        auto [co, ci] = s[p.C].split(s[p.C].axis(0), 3);
        (void)ci;
        s[p.B].compute_at(s[p.C], co);
      }
      if (variant == 2) {
        s[p.D].vectorize(din);
        s[p.B].compute_at(s[p.C], s[p.C].axis(0));
      }
      EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.A, p.D})) << "n " << n << " variant " << variant;
    }
  }
  // Per iteration of D's outer loop C covers 7 + 2 elements and B 7 + 4 (TVM infers the
  // same): the window of the reads, not the whole array.
  Pipeline p = make_pipeline(30);
  Schedule s = create_schedule({p.D});
  auto [dout, din] = s[p.D].split(s[p.D].axis(0), 7);
  (void)din;
  s[p.C].compute_at(s[p.D], dout);
  s[p.B].compute_at(s[p.D], dout);
  std::string c = realize_line(s, {p.A, p.D}, "C");
  std::string b = realize_line(s, {p.A, p.D}, "B");
  EXPECT_NE(c.find(", 9])"), std::string::npos) << c;
  EXPECT_NE(b.find(", 11])"), std::string::npos) << b;
}

// The same in two dimensions, under tile(7, 5) of 30 x 23.
TEST(BoundInference, TwoDimensionalWindowUnderUnevenTile) {
  Tensor A = te::placeholder({32, 25}, DataType::Float(32), "A");
  Tensor B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) - 1; }, "B");
  Tensor C = te::compute({30, 23}, [&](Var i, Var j) {
    return B(i, j) + B(i + 2, j + 1) + B(i + 1, j + 2); }, "C");
  Schedule s = create_schedule({C});
  auto [xo, yo, xi, yi] = s[C].tile(s[C].axis(0), s[C].axis(1), 7, 5);
  (void)xi, (void)yi;
  s[B].compute_at(s[C], yo);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, C}));
  s[B].compute_at(s[C], xo);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, C}));
}

}  // namespace
}  // namespace loom
