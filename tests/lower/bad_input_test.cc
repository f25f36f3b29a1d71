// Bad tensor programs that lower() rejects with a clear loom::Error, and the run-time access
// checks of LowerOptions::check_accesses for what cannot be judged before running.
#include <gtest/gtest.h>

#include "loom/loom.h"
#include "loom/runtime/c_runtime_api.h"

namespace loom {
namespace {

using runtime::NDArray;
const DataType f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);

/// The loom::Error message of `f`, or "" if it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << "no '" << (needle) << "' in:\n" << (text)

TEST(LowerBadInput, ConstantReadPastAnExtentIsRejected) {
  te::Tensor A = te::placeholder({8}, f32, "A");
  te::Tensor B = te::compute({16}, [&](te::Var i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule({B});
  std::string e = error_of([&] { lower(s, {A, B}, "overrun"); });
  EXPECT_HAS(e, "lower 'overrun': stage 'B' reads tensor 'A' out of bounds: index i of dimension 0 ranges over "
                "[0, 15], but the extent is 8");
  // The same through a reduction and a negative offset; a schedule does not hide it.
  te::Tensor W = te::placeholder({4, 6}, f32, "W");
  te::IterVar k = te::reduce_axis({0, 6}, "k");
  te::Tensor R = te::compute({4}, [&](te::Var i) { return te::sum(W(i, k - 1), {k}); }, "R");
  Schedule s2 = create_schedule({R});
  s2[R].split(s2[R].axis(0), 3);
  e = error_of([&] { lower(s2, {W, R}, "shifted"); });
  EXPECT_HAS(e, "stage 'R' reads tensor 'W' out of bounds");
  EXPECT_HAS(e, "of dimension 1 ranges over [-1, 4]");
}

TEST(LowerBadInput, GuardedReadsAndPaddingAreAccepted) {
  te::Tensor A = te::placeholder({8}, f32, "A");
  te::Tensor P = te::compute({10}, [&](te::Var i) { return te::select(i >= 1 && i < 9, A(i - 1), te::Expr(0.0f)); },
                             "P");
  Schedule s = create_schedule({P});
  EXPECT_EQ(error_of([&] { build(s, {A, P}, Target("llvm"), "pad"); }), "");
  te::Tensor X = te::placeholder({1, 3, 7, 7}, f32, "X");
  te::Tensor Wt = te::placeholder({4, 3, 3, 3}, f32, "Wt");
  te::Tensor C = te::ops::conv2d_nchw(X, Wt, {2, 2}, {1, 1});
  Schedule s2 = create_schedule({C});
  EXPECT_EQ(error_of([&] { lower(s2, {X, Wt, C}, "conv"); }), "");
}

TEST(LowerBadInput, MissingArgumentNamesTheTensorAndItsReader) {
  te::Tensor A = te::placeholder({8}, f32, "A");
  te::Tensor Bp = te::placeholder({8}, f32, "Bp");
  te::Tensor C = te::compute({8}, [&](te::Var i) { return A(i) * Bp(i); }, "C");
  Schedule s = create_schedule({C});
  std::string e = error_of([&] { build(s, {A, C}, Target("llvm"), "missing"); });
  EXPECT_HAS(e, "lower 'missing': stage 'C' reads placeholder 'Bp', which is not among the arguments");
  EXPECT_EQ(e.find("internal error"), std::string::npos) << e;
}

TEST(LowerBadInput, CheckAccessesReportsAnOutOfBoundsGatherAtRunTime) {
  te::Tensor A = te::placeholder({8}, f32, "A");
  te::Tensor I = te::placeholder({4}, i32, "I");
  te::Tensor G = te::compute({4}, [&](te::Var i) { return A(I(i)); }, "G");
  Schedule s = create_schedule({G});
  lowering::LowerOptions opts;
  opts.check_accesses = true;
  runtime::Module m = build(s, {A, I, G}, "gather", opts);
  NDArray a = NDArray::empty({8}, f32), idx = NDArray::empty({4}, i32), g = NDArray::empty({4}, f32);
  for (int j = 0; j < 8; ++j) a.data<float>()[j] = float(j) * 10;
  for (int j = 0; j < 4; ++j) idx.data<int32_t>()[j] = 7 - j;
  runtime::PackedFunc f = m.get_function("gather");
  ASSERT_EQ(f.call_status({a.dltensor(), idx.dltensor(), g.dltensor()}), 0) << loom_get_last_error();
  EXPECT_EQ(g.data<float>()[1], 60.0f);
  idx.data<int32_t>()[2] = 1000000;
  EXPECT_EQ(f.call_status({a.dltensor(), idx.dltensor(), g.dltensor()}), LOOM_ERR_ARGUMENT);
  std::string e = loom_get_last_error();
  EXPECT_HAS(e, "stage 'G' reads tensor 'A' out of bounds: index I[i] of dimension 0 is outside [0, 8)");
  idx.data<int32_t>()[2] = -1;
  EXPECT_NE(f.call_status({a.dltensor(), idx.dltensor(), g.dltensor()}), 0);
}

TEST(LowerBadInput, CheckAccessesGuardsIntegerDivisionByZero) {
  te::Tensor A = te::placeholder({6}, i32, "A");
  te::Tensor D = te::placeholder({6}, i32, "D");
  te::Tensor Q = te::compute({6}, [&](te::Var i) { return A(i) / D(i); }, "Q");
  Schedule s = create_schedule({Q});
  s[Q].vectorize(s[Q].axis(0));
  lowering::LowerOptions opts;
  opts.check_accesses = true;
  runtime::Module m = build(s, {A, D, Q}, "div", opts);
  NDArray a = NDArray::empty({6}, i32), d = NDArray::empty({6}, i32), q = NDArray::empty({6}, i32);
  for (int j = 0; j < 6; ++j) a.data<int32_t>()[j] = 60, d.data<int32_t>()[j] = j + 1;
  runtime::PackedFunc f = m.get_function("div");
  ASSERT_EQ(f.call_status({a.dltensor(), d.dltensor(), q.dltensor()}), 0) << loom_get_last_error();
  EXPECT_EQ(q.data<int32_t>()[2], 20);
  d.data<int32_t>()[4] = 0;
  EXPECT_EQ(f.call_status({a.dltensor(), d.dltensor(), q.dltensor()}), LOOM_ERR_ARGUMENT);
  EXPECT_HAS(std::string(loom_get_last_error()), "stage 'Q': integer / by zero: divisor D[i] is 0");
}

TEST(LowerBadInput, CheckAccessesUnderSplitsParallelAndComputeAt) {
  te::Tensor A = te::placeholder({37, 5}, f32, "A");
  te::Tensor P = te::compute({37, 5}, [&](te::Var i, te::Var j) { return A(i, j) * 2.0f; }, "P");
  te::Tensor C = te::compute({37, 5}, [&](te::Var i, te::Var j) { return P(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 8);
  s[C].parallel(io);
  s[P].compute_at(s[C], ii);
  lowering::LowerOptions opts;
  opts.check_accesses = true;
  runtime::Module m = build(s, {A, C}, "chain", opts);
  NDArray a = NDArray::empty({37, 5}, f32), c = NDArray::empty({37, 5}, f32);
  for (int j = 0; j < 37 * 5; ++j) a.data<float>()[j] = float(j);
  m.get_function("chain")(a, c);
  for (int j = 0; j < 37 * 5; ++j) ASSERT_EQ(c.data<float>()[j], float(j) * 2 + 1) << j;
}

}  // namespace
}  // namespace loom
