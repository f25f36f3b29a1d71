// Cross-thread reductions (a reduce axis bound to threadIdx, lower/schedule_ops.cc): the
// generated CUDA compiles with NVRTC and runs on the emulation (codegen::build_cuda_emulated)
// matching te::evaluate, on extents the threads do and do not divide; what it cannot lower
// is refused naming the stage and the axis.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/cuda.h"
#include "loom/lower/passes.h"
#include "loom/loom.h"

namespace loom {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

lowering::LoweredFunc lower_cuda(const Schedule& s, const std::vector<Tensor>& args) {
  lowering::LowerOptions opts;
  opts.target = Target("cuda");
  return lowering::lower(s, args, "f", opts);
}

/// Compiles with NVRTC where it is present (the emulation compiles the same source itself).
void expect_ptx(const lowering::LoweredFunc& f) {
  if (!codegen::nvrtc_available()) return;
  const std::string ptx = codegen::compile_to_ptx(codegen::cuda_source(f), "sm_80");
  EXPECT_NE(ptx.find(".entry"), std::string::npos);
}

struct RowReduce {
  Tensor A, B;
};
RowReduce row_reduce(int64_t m, int64_t n, bool max) {
  RowReduce r;
  r.A = te::placeholder({m, n}, DataType::Float(32), "A");
  IterVar k = te::reduce_axis({0, n}, "k");
  r.B = te::compute({m}, [&](Var i) { return max ? te::max_reduce(r.A(i, k), {k}) : te::sum(r.A(i, k), {k}); }, "B");
  return r;
}

TEST(CrossThreadReduction, RowsPerBlockThreadsAcrossTheRow) {
  // (rows, row length, threads): threads dividing the row, not dividing it, more threads than
  // the row has elements, and a thread count that is not a power of two.
  for (auto [m, n, t] : {std::tuple<int64_t, int64_t, int64_t>{8, 256, 64}, {5, 100, 32}, {3, 20, 32}, {4, 77, 24}})
    for (bool max : {false, true}) {
      RowReduce r = row_reduce(m, n, max);
      Schedule s = create_schedule({r.B});
      auto [ko, ki] = s[r.B].split(s[r.B].reduce_axis(0), te::Expr(t));
      (void)ko;
      s[r.B].bind(s[r.B].axis(0), te::thread_axis("blockIdx.x"));
      s[r.B].bind(ki, te::thread_axis("threadIdx.x"));
      lowering::LoweredFunc f = lower_cuda(s, {r.A, r.B});
      expect_ptx(f);
      EXPECT_EQ(test::compare_emulated_with_reference(f, {r.A, r.B}), "") << m << "x" << n << " threads " << t;
    }
}

TEST(CrossThreadReduction, SoftmaxWithBothReductionsInTheRowsBlock) {
  for (auto [m, n, t] : {std::tuple<int64_t, int64_t, int64_t>{4, 128, 64}, {3, 50, 32}}) {
    Tensor X = te::placeholder({m, n}, DataType::Float(32), "X");
    Tensor Y = te::ops::softmax(X, 1);
    Schedule s = create_schedule({Y});
    std::vector<Tensor> reductions;
    for (const te::Operation& op : te::post_dfs_order({Y})) {
      if (op->kind != te::OpKind::kCompute || op == Y.op()) continue;
      if (op->reduce_axis.empty()) s[op].compute_inline();
      else reductions.push_back(te::output(op, 0));
    }
    ASSERT_EQ(reductions.size(), 2u);
    auto y = s[Y];
    auto [jo, ji] = y.split(y.axis(1), te::Expr(t));
    y.bind(y.axis(0), te::thread_axis("blockIdx.x"));
    y.bind(ji, te::thread_axis("threadIdx.x"));
    for (const Tensor& r : reductions) {
      auto st = s[r];
      st.compute_at(y, y.axis(0));
      auto [ko, ki] = st.split(st.reduce_axis(0), te::Expr(t));
      (void)ko;
      st.bind(ki, te::thread_axis("threadIdx.x"));
    }
    lowering::LoweredFunc f = lower_cuda(s, {X, Y});
    ASSERT_EQ(f.device_funcs.size(), 1u);
    expect_ptx(f);
    EXPECT_EQ(test::compare_emulated_with_reference(f, {X, Y}), "") << m << "x" << n;
  }
}

TEST(CrossThreadReduction, RfactorPartialsComputedAtTheBoundAxis) {
  // TVM's reduction tutorial on the GPU: B's reduce axis over BF's factor bound to threadIdx.x,
  // BF computed at it.
  RowReduce r = row_reduce(64, 40, false);
  Schedule s = create_schedule({r.B});
  auto [ko, ki] = s[r.B].split(s[r.B].reduce_axis(0), 16);
  (void)ko;
  Tensor BF = s.rfactor(r.B, ki);
  auto [xo, xi] = s[r.B].split(s[r.B].axis(0), 32);
  s[r.B].bind(xo, te::thread_axis("blockIdx.x"));
  s[r.B].bind(xi, te::thread_axis("threadIdx.y"));
  IterVar tx = s[r.B].reduce_axis(0);
  s[r.B].bind(tx, te::thread_axis("threadIdx.x"));
  s[BF].compute_at(s[r.B], tx);
  lowering::LoweredFunc f = lower_cuda(s, {r.A, r.B});
  expect_ptx(f);
  EXPECT_EQ(test::compare_emulated_with_reference(f, {r.A, r.B}), "");
}

TEST(CrossThreadReduction, WhatItCannotLowerIsRefused) {
  RowReduce r = row_reduce(8, 64, false);
  {
    Schedule s = create_schedule({r.B});
    try {
      s[r.B].bind(s[r.B].reduce_axis(0), te::thread_axis("blockIdx.x"));
      ADD_FAILURE() << "a reduce axis bound to blockIdx was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("threadIdx only"), std::string::npos) << e.what();
    }
  }
  // A spatial loop inside the bound reduce loops.
  Schedule s = create_schedule({r.B});
  auto [ko, ki] = s[r.B].split(s[r.B].reduce_axis(0), 16);
  s[r.B].reorder({ko, ki, s[r.B].axis(0)});
  s[r.B].bind(ki, te::thread_axis("threadIdx.x"));
  try {
    lower_cuda(s, {r.A, r.B});
    ADD_FAILURE() << "a spatial loop inside a cross-thread reduction was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("stage 'B'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("every spatial loop outside"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace loom
