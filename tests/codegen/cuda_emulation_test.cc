// codegen::build_cuda_emulated: generated CUDA C run on the CPU, compared with te::evaluate,
// and the faults it must find (a missing barrier, an access past a buffer's end).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/cuda.h"
#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/loom.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

using lowering::Stmt;
using te::IterVar;
using te::Tensor;
using te::Var;

lowering::LoweredFunc lower_cuda(const Schedule& s, const std::vector<Tensor>& args) {
  lowering::LowerOptions opts;
  opts.target = Target("cuda");
  return lowering::lower(s, args, "f", opts);
}

/// C = A·B with shared tiles fetched cooperatively (16-byte vectors), double-buffered,
/// register tiles and virtual threads: the structure of the GPU matmul templates.
struct Matmul {
  Tensor A, B, C;
  Schedule s;
};
Matmul make_matmul(int64_t M, int64_t N, int64_t K, bool double_buffer) {
  Matmul m;
  m.A = te::placeholder({M, K}, DataType::Float(32), "A");
  m.B = te::placeholder({K, N}, DataType::Float(32), "B");
  m.C = te::ops::matmul(m.A, m.B, false, false, "C");
  Schedule s = create_schedule({m.C});
  Tensor AS = s.cache_read(m.A, "shared", std::vector<Tensor>{m.C});
  Tensor BS = s.cache_read(m.B, "shared", std::vector<Tensor>{m.C});
  Tensor CL = s.cache_write(m.C, "local");
  auto sc = s[m.C];
  auto [bm, m1] = sc.split(sc.axis(0), 32);
  auto [vm, m2] = sc.split_nparts(m1, 2);
  auto [tm, im] = sc.split(m2, 2);
  auto [bn, n1] = sc.split(sc.axis(1), 32);
  auto [vn, n2] = sc.split_nparts(n1, 2);
  auto [tn, in] = sc.split(n2, 2);
  sc.reorder({bm, bn, vm, vn, tm, tn, im, in});
  sc.bind(bm, te::thread_axis("blockIdx.y"));
  sc.bind(bn, te::thread_axis("blockIdx.x"));
  sc.bind(vm, te::thread_axis("vthread"));
  sc.bind(vn, te::thread_axis("vthread"));
  sc.bind(tm, te::thread_axis("threadIdx.y"));
  sc.bind(tn, te::thread_axis("threadIdx.x"));
  auto cl = s[CL];
  cl.compute_at(sc, tn);
  auto [ko, ki] = cl.split(cl.reduce_axis(0), 4);
  cl.reorder({ko, ki, cl.axis(0), cl.axis(1)});
  for (Tensor t : {AS, BS}) {
    auto st = s[t];
    st.compute_at(cl, ko);
    IterVar f = st.fuse(st.axis(0), st.axis(1));
    auto [fo, v] = st.split(f, 4);
    st.vectorize(v);
    auto [fo2, tx] = st.split(fo, 8);
    auto [fo3, ty] = st.split(fo2, 8);
    st.bind(tx, te::thread_axis("threadIdx.x"));
    st.bind(ty, te::thread_axis("threadIdx.y"));
    if (double_buffer) st.double_buffer();
  }
  m.s = s;
  return m;
}

TEST(CudaEmulation, ElementwiseOnASizeNoBlockDivides) {
  Tensor A = te::placeholder({1000, 3}, DataType::Float(32), "A");
  Tensor B = te::compute({1000, 3}, [&](Var i, Var j) { return te::tanh(A(i, j)) * 3.0f + te::exp(A(i, j)); }, "B");
  Schedule s = create_schedule({B});
  IterVar f = s[B].fuse(s[B].axis(0), s[B].axis(1));
  auto [bo, bi] = s[B].split(f, 128);
  s[B].bind(bo, te::thread_axis("blockIdx.x"));
  s[B].bind(bi, te::thread_axis("threadIdx.x"));
  EXPECT_EQ(test::compare_emulated_with_reference(s, {A, B}), "");
}

TEST(CudaEmulation, SharedTilesAndDoubleBufferMatchTheReference) {
  for (bool db : {false, true})
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{64, 64, 32}, {50, 70, 23}}) {
      Matmul m = make_matmul(M, N, K, db);
      EXPECT_EQ(test::compare_emulated_with_reference(m.s, {m.A, m.B, m.C}), "")
          << M << "x" << N << "x" << K << (db ? " double-buffered" : "");
    }
}

/// Drops the `n`-th barrier of every kernel.
struct DropBarrier : lowering::IRMutator {
  explicit DropBarrier(int n) : n(n) {}
  int n, seen = 0;
  Stmt mutate_(const lowering::EvaluateNode* op) override {
    const auto* c = op->value.as<te::CallNode>();
    if (c && c->name == lowering::kSyncThreads && ++seen == n) return lowering::no_op();
    return lowering::IRMutator::mutate_(op);
  }
};

TEST(CudaEmulation, AMissingBarrierIsARace) {
  Matmul m = make_matmul(64, 64, 32, true);
  lowering::LoweredFunc f = lower_cuda(m.s, {m.A, m.B, m.C});
  ASSERT_EQ(test::compare_emulated_with_reference(f, {m.A, m.B, m.C}), "");
  // The barrier of each reduction step: without it, the fetch of step k + 2 overwrites the
  // half other threads still read at step k.
  lowering::LoweredFunc broken = f;
  broken.device_funcs[0].body = DropBarrier(2).mutate(f.device_funcs[0].body);
  std::string err = test::compare_emulated_with_reference(broken, {m.A, m.B, m.C});
  EXPECT_NE(err.find("a race"), std::string::npos) << err;
}

TEST(CudaEmulation, AnAccessPastTheEndIsReported) {
  Tensor A = te::placeholder({100}, DataType::Float(32), "A");
  Tensor B = te::compute({100}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule({B});
  auto [bo, bi] = s[B].split(s[B].axis(0), 32);
  s[B].bind(bo, te::thread_axis("blockIdx.x"));
  s[B].bind(bi, te::thread_axis("threadIdx.x"));
  lowering::LoweredFunc f = lower_cuda(s, {A, B});
  // Without the guard of the last, partial block, its threads read A past its end.
  struct DropGuards : lowering::IRMutator {
    Stmt mutate_(const lowering::IfThenElseNode* op) override { return mutate(op->then_case); }
  };
  lowering::LoweredFunc broken = f;
  broken.device_funcs[0].body = DropGuards().mutate(f.device_funcs[0].body);
  std::string err = test::compare_emulated_with_reference(broken, {A, B});
  EXPECT_NE(err.find("invalid memory access"), std::string::npos) << err;
  EXPECT_NE(err.find("past the end of argument"), std::string::npos) << err;
}

TEST(CudaEmulation, WhatItDoesNotModelIsRefused) {
  auto task = tuner::Task::create("matmul_tensorcore", {64, 64, 64}, Target("cuda"), "float16");
  tuner::Instance inst = task.instantiate_default();
  lowering::LoweredFunc f = lower_cuda(inst.schedule, inst.args);
  EXPECT_NE(codegen::cuda_emulation_unsupported({f}, Target("cuda")).find("WMMA"), std::string::npos);
  try {
    codegen::build_cuda_emulated({f}, Target("cuda"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
