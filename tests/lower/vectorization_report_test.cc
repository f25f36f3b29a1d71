// The vectorization report on scheduled computations: which vector accesses are reported,
// with which kind, stage, buffer, lanes and stride, and which are not.
#include <gtest/gtest.h>

#include "loom/loom.h"
#include "loom/lower/vector_access.h"
#include "loom/lower/vectorization_report.h"

namespace loom::lowering {
namespace {

using Kind = VectorReportEntry::Kind;
const DataType f32 = DataType::Float(32);

VectorizationReport report_of(const Schedule& s, const std::vector<te::Tensor>& args, const std::string& name = "f",
                              const Target& target = Target("llvm")) {
  VectorizationReport r;
  LowerOptions opts;
  opts.target = target;
  opts.vector_report = &r;
  lower(s, args, name, opts);
  EXPECT_EQ(r.func, name);
  return r;
}

TEST(VectorizationReport, DenseVectorCodeHasNoEntries) {
  te::Tensor A = te::placeholder({16, 64}, f32, "A");
  te::Tensor B = te::compute({16, 64}, [&](te::Var i, te::Var j) { return A(i, j) * 2.0f + 1.0f; }, "B");
  Schedule s = create_schedule({B});
  auto [jo, ji] = s[B].split(s[B].axis(1), 8);
  s[B].vectorize(ji);
  VectorizationReport r = report_of(s, {A, B});
  EXPECT_EQ(r.vector_accesses, 2) << r.to_string();  // one load of A, one store of B
  EXPECT_TRUE(r.entries.empty()) << r.to_string();
  EXPECT_NE(r.to_string().find("all dense"), std::string::npos) << r.to_string();
}

TEST(VectorizationReport, ScalarCodeHasNoVectorAccess) {
  te::Tensor A = te::placeholder({16, 64}, f32, "A");
  te::Tensor B = te::compute({16, 64}, [&](te::Var i, te::Var j) { return A(j % 16, i); }, "B");
  VectorizationReport r = report_of(create_schedule({B}), {A, B});
  EXPECT_EQ(r.vector_accesses, 0);
  EXPECT_TRUE(r.entries.empty()) << r.to_string();
}

TEST(VectorizationReport, TransposedReadIsAGatherOfThatBufferInThatStage) {
  // Bt[i, j] = A[j, i]: vectorizing j walks A down a column, 48 elements apart.
  te::Tensor A = te::placeholder({64, 48}, f32, "A");
  te::Tensor Bt = te::compute({48, 64}, [&](te::Var i, te::Var j) { return A(j, i); }, "Bt");
  Schedule s = create_schedule({Bt});
  auto [jo, ji] = s[Bt].split(s[Bt].axis(1), 8);
  s[Bt].vectorize(ji);
  VectorizationReport r = report_of(s, {A, Bt}, "transpose");
  ASSERT_EQ(r.entries.size(), 1u) << r.to_string();
  const VectorReportEntry& e = r.entries[0];
  EXPECT_EQ(e.kind, Kind::kGather);
  EXPECT_EQ(e.stage, "Bt");
  EXPECT_EQ(e.buffer, "A");
  EXPECT_FALSE(e.is_store);
  EXPECT_EQ(e.lanes, 8);
  EXPECT_EQ(e.stride, 48);
  EXPECT_FALSE(e.predicated);
  EXPECT_NE(e.index.find("ramp("), std::string::npos) << e.index;
  EXPECT_NE(e.note.find("stride 48"), std::string::npos) << e.note;
  // The table docs/architecture.md shows.
  EXPECT_EQ(r.to_string(),
            "vectorization report of 'transpose': 2 vector load(s)/store(s), 1 gather\n"
            "  stage  buffer  kind    access  lanes  count  how                index / expression\n"
            "  Bt     A       gather  load    8      1      stride 48: gather  ramp((j.outer*384) + i, 48, 8)\n");
}

TEST(VectorizationReport, ShortStrideIsStridedAndLongStrideAGather) {
  for (int stride : {2, 4, 5}) {
    SCOPED_TRACE(stride);
    te::Tensor A = te::placeholder({64 * stride}, f32, "A");
    te::Tensor B = te::compute({64}, [&](te::Var i) { return A(i * stride); }, "B");
    Schedule s = create_schedule({B});
    auto [o, in] = s[B].split(s[B].axis(0), 8);
    s[B].vectorize(in);
    VectorizationReport r = report_of(s, {A, B});
    ASSERT_EQ(r.entries.size(), 1u) << r.to_string();
    const VectorReportEntry& e = r.entries[0];
    EXPECT_EQ(e.kind, stride <= kMaxDenseLoadStride ? Kind::kStrided : Kind::kGather) << r.to_string();
    EXPECT_EQ(e.stage, "B");
    EXPECT_EQ(e.buffer, "A");
    EXPECT_EQ(e.stride, stride);
    EXPECT_NE(e.note.find("stride " + std::to_string(stride)), std::string::npos) << e.note;
  }
}

TEST(VectorizationReport, VectorizingAColumnScattersTheStore) {
  // B[i, j] = A[i, j] with i innermost and vectorized: both sides step a row at a time.
  te::Tensor A = te::placeholder({8, 32}, f32, "A");
  te::Tensor B = te::compute({8, 32}, [&](te::Var i, te::Var j) { return A(i, j) + 1.0f; }, "B");
  Schedule s = create_schedule({B});
  s[B].reorder({s[B].axis(1), s[B].axis(0)});
  s[B].vectorize(s[B].axis(0));
  VectorizationReport r = report_of(s, {A, B});
  auto scatters = r.find(Kind::kScatter);
  ASSERT_EQ(scatters.size(), 1u) << r.to_string();
  EXPECT_EQ(scatters[0].stage, "B");
  EXPECT_EQ(scatters[0].buffer, "B");
  EXPECT_TRUE(scatters[0].is_store);
  EXPECT_EQ(scatters[0].stride, 32);
  auto gathers = r.find(Kind::kGather, "A", "B");
  ASSERT_EQ(gathers.size(), 1u) << r.to_string();
  EXPECT_EQ(gathers[0].stride, 32);
}

TEST(VectorizationReport, NonDividingSplitOfAVectorizedAxisHasADenseTail) {
  // 20 columns in vectors of 8: loom does not predicate the tail, specialize_partial_tiles
  // gives the last tile its own 4-lane vector loop, dense like the full ones.
  te::Tensor A = te::placeholder({4, 20}, f32, "A");
  te::Tensor B = te::compute({4, 20}, [&](te::Var i, te::Var j) { return A(i, j) * 3.0f; }, "B");
  Schedule s = create_schedule({B});
  auto [jo, ji] = s[B].split(s[B].axis(1), 8);
  s[B].vectorize(ji);
  VectorizationReport r = report_of(s, {A, B});
  EXPECT_EQ(r.vector_accesses, 4) << to_string(lower(s, {A, B}, "f"));  // 8 lanes and 4 lanes, load and store
  EXPECT_TRUE(r.entries.empty()) << r.to_string();
}

TEST(VectorizationReport, PaddedReadIsAPredicatedLoad) {
  // A zero-padded row (the border of a convolution): the load of A happens only where the
  // select takes it, so its lanes are masked.
  te::Tensor A = te::placeholder({4, 20}, f32, "A");
  te::Tensor P = te::compute({4, 24}, [&](te::Var i, te::Var j) {
    return te::select(j >= 2 && j < 22, A(i, j - 2), te::make_const(f32, 0.0));
  }, "P");
  Schedule s = create_schedule({P});
  auto [jo, ji] = s[P].split(s[P].axis(1), 8);
  s[P].vectorize(ji);
  VectorizationReport r = report_of(s, {A, P});
  ASSERT_EQ(r.entries.size(), 1u) << r.to_string();
  const VectorReportEntry& e = r.entries[0];
  EXPECT_EQ(e.kind, Kind::kPredicated);
  EXPECT_EQ(e.stage, "P");
  EXPECT_EQ(e.buffer, "A");
  EXPECT_TRUE(e.predicated);
  EXPECT_EQ(e.stride, 1);
  EXPECT_EQ(e.lanes, 8);
  EXPECT_EQ(e.note, "masked load");
}

TEST(VectorizationReport, VectorExpWithoutVectorMathAndDivisionByAVariableAreScalarized) {
  te::Tensor A = te::placeholder({64}, f32, "A");
  te::Tensor I = te::placeholder({64}, DataType::Int(32), "I");
  te::Tensor E = te::compute({64}, [&](te::Var i) { return te::exp(A(i)); }, "E");
  te::Tensor Q = te::compute({64}, [&](te::Var i) { return I(i) / te::max(I(63 - i), 1); }, "Q");
  Schedule s = create_schedule({E, Q});
  for (const te::Tensor& t : {E, Q}) {
    auto [o, in] = s[t].split(s[t].axis(0), 8);
    s[t].vectorize(in);
  }
  for (const char* target : {"llvm -mtriple=x86_64-linux-gnu -vector_math=none", "llvm -mtriple=aarch64-linux-gnu"}) {
    SCOPED_TRACE(target);
    VectorizationReport r = report_of(s, {A, I, E, Q}, "f", Target(target));
    auto exps = r.find(Kind::kScalarized, "", "E");
    ASSERT_EQ(exps.size(), 1u) << r.to_string();
    EXPECT_EQ(exps[0].lanes, 8);
    EXPECT_EQ(exps[0].note.substr(0, 4), "exp:") << exps[0].note;
    EXPECT_NE(exps[0].note.find("no vector math library"), std::string::npos) << exps[0].note;
    auto divs = r.find(Kind::kScalarized, "", "Q");
    ASSERT_EQ(divs.size(), 1u) << r.to_string();
    EXPECT_NE(divs[0].note.find("division"), std::string::npos) << divs[0].note;
  }
  // With libmvec (x86-64 GNU/Linux) the float32 exp is vector code; the division is not.
  VectorizationReport r = report_of(s, {A, I, E, Q}, "f", Target("llvm -mtriple=x86_64-linux-gnu"));
  EXPECT_TRUE(r.find(Kind::kScalarized, "", "E").empty()) << r.to_string();
  EXPECT_EQ(r.find(Kind::kScalarized, "", "Q").size(), 1u) << r.to_string();
}

TEST(VectorizationReport, Float64TranscendentalsStayScalarizedWithLibmvec) {
  const DataType f64 = DataType::Float(64);
  te::Tensor A = te::placeholder({64}, f64, "A");
  te::Tensor T = te::compute({64}, [&](te::Var i) { return te::tanh(A(i)) + te::sigmoid(A(i)); }, "T");
  Schedule s = create_schedule({T});
  auto [o, in] = s[T].split(s[T].axis(0), 4);
  s[T].vectorize(in);
  VectorizationReport r = report_of(s, {A, T}, "f", Target("llvm -mtriple=x86_64-linux-gnu"));
  auto ops = r.find(Kind::kScalarized, "", "T");
  ASSERT_EQ(ops.size(), 2u) << r.to_string();
  for (const VectorReportEntry& e : ops) {
    EXPECT_EQ(e.lanes, 4);
    EXPECT_NE(e.note.find("float32 only; this is float64"), std::string::npos) << e.note;
  }
}

TEST(VectorizationReport, DivisionByAConstantStaysVector) {
  te::Tensor I = te::placeholder({64}, DataType::Int(32), "I");
  te::Tensor Q = te::compute({64}, [&](te::Var i) { return te::floordiv(I(i), 7) + te::floormod(I(i), 32); }, "Q");
  Schedule s = create_schedule({Q});
  auto [o, in] = s[Q].split(s[Q].axis(0), 8);
  s[Q].vectorize(in);
  VectorizationReport r = report_of(s, {I, Q});
  EXPECT_TRUE(r.entries.empty()) << r.to_string();
}

TEST(VectorizationReport, TemporariesKeepTheirNamesWhereStorageRewriteMergesThem) {
  // T1 dies before T2 is written: storage_rewrite gives T2 the storage (and the buffer
  // variable) of T1. The report still names T2's reads and its stage as T2.
  te::Tensor A = te::placeholder({8, 64}, f32, "A");
  te::Tensor T1 = te::compute({8, 64}, [&](te::Var i, te::Var j) { return A(i, j) * 2.0f; }, "T1");
  te::Tensor U = te::compute({8, 64}, [&](te::Var i, te::Var j) { return T1(i, 63 - j); }, "U");
  te::Tensor T2 = te::compute({8, 64}, [&](te::Var i, te::Var j) { return U(i, j) + 1.0f; }, "T2");
  te::Tensor C = te::compute({8, 64}, [&](te::Var i, te::Var j) { return T2(i, te::floormod(j * 3, 64)); }, "C");
  Schedule s = create_schedule({C});
  for (const te::Tensor& t : {T1, U, T2, C}) {
    auto [o, in] = s[t].split(s[t].axis(1), 8);
    s[t].vectorize(in);
  }
  VectorizationReport r = report_of(s, {A, C});
  const std::string ir = to_string(lower(s, {A, C}, "f"));
  ASSERT_EQ(ir.find("allocate T2"), std::string::npos) << "T2 no longer shares T1's storage:\n" << ir;
  auto reversed = r.find(Kind::kGather, "T1");
  ASSERT_EQ(reversed.size(), 1u) << r.to_string();
  EXPECT_EQ(reversed[0].stage, "U");
  EXPECT_EQ(reversed[0].stride, -1);
  auto through_mod = r.find(std::nullopt, "T2");
  ASSERT_EQ(through_mod.size(), 1u) << r.to_string();
  EXPECT_EQ(through_mod[0].stage, "C");
  EXPECT_EQ(through_mod[0].kind, Kind::kGather);
  EXPECT_TRUE(r.find(std::nullopt, "", "T2").empty()) << r.to_string();  // T2 = U + 1 is dense
}

TEST(VectorizationReport, GpuTargetsAreRejected) {
  te::Tensor A = te::placeholder({64}, f32, "A");
  te::Tensor B = te::compute({64}, [&](te::Var i) { return A(i); }, "B");
  Schedule s = create_schedule({B});
  VectorizationReport r;
  LowerOptions opts;
  opts.target = Target("cuda");
  opts.vector_report = &r;
  try {
    lower(s, {A, B}, "gpu", opts);
    FAIL() << "expected a loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vectorization report"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::lowering
