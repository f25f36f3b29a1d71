// The vectorization report against the code the LLVM code generator emits (the report's
// kinds are the instructions found in the module), and the examples' schedules, which must
// vectorize densely.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/test_util.h"
#include "loom/codegen/check_target.h"
#include "loom/loom.h"

namespace loom {
namespace {

using lowering::VectorizationReport;
using lowering::VectorReportEntry;
using Kind = VectorReportEntry::Kind;
const DataType f32 = DataType::Float(32);

VectorizationReport report_of(const Schedule& s, const std::vector<te::Tensor>& args) {
  VectorizationReport r;
  lowering::LowerOptions opts;
  opts.vector_report = &r;
  lower(s, args, "f", opts);
  return r;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

/// Which kinds of vector memory access the module's LLVM IR has (after LLVM's optimizer,
/// which may unroll a loop and so repeat an access: only presence is compared). A strided
/// load is a shuffle of float vectors (splats of an index are shuffles of integers).
struct Emitted {
  bool gather, scatter, masked_load, masked_store, shuffle;
};
Emitted emitted(const Schedule& s, const std::vector<te::Tensor>& args) {
  runtime::Module m = build(s, args, Target("llvm"), "f");
  const std::string ll = m.source("ll");
  auto has = [&](const char* what) { return ll.find(what) != std::string::npos; };
  return {has("@llvm.masked.gather"), has("@llvm.masked.scatter"), has("@llvm.masked.load"),
          has("@llvm.masked.store"), has("shufflevector <8 x float>")};
}

TEST(VectorizationReportCodegen, GatherAndScatterAreWhatTheCodeGeneratorEmits) {
  // B[i, j] = A[j, i] + A[i, j] over i innermost, vectorized: A[i, j] is gathered (stride
  // 256), A[j, i] is dense, the store into B scatters.
  te::Tensor A = te::placeholder({256, 256}, f32, "A");
  te::Tensor B = te::compute({256, 256}, [&](te::Var i, te::Var j) { return A(j, i) + A(i, j); }, "B");
  Schedule s = create_schedule({B});
  s[B].reorder({s[B].axis(1), s[B].axis(0)});
  auto [o, in] = s[B].split(s[B].axis(0), 8);
  s[B].vectorize(in);
  VectorizationReport r = report_of(s, {A, B});
  EXPECT_EQ(r.find(Kind::kGather, "A", "B").size(), 1u) << r.to_string();
  EXPECT_EQ(r.find(Kind::kScatter, "B", "B").size(), 1u) << r.to_string();
  EXPECT_EQ(r.entries.size(), 2u) << r.to_string();
  const Emitted e = emitted(s, {A, B});
  EXPECT_TRUE(e.gather && e.scatter);
  EXPECT_FALSE(e.masked_load || e.masked_store || e.shuffle);
  EXPECT_MATCHES_REFERENCE(s, std::vector<te::Tensor>({A, B}));
}

TEST(VectorizationReportCodegen, StridedLoadsAreShufflesAndDenseCodeHasNoMaskedAccess) {
  te::Tensor A = te::placeholder({4096}, f32, "A");
  te::Tensor B = te::compute({2048}, [&](te::Var i) { return A(i * 2) + A(i * 2 + 1); }, "B");
  Schedule s = create_schedule({B});
  auto [o, in] = s[B].split(s[B].axis(0), 8);
  s[B].vectorize(in);
  VectorizationReport r = report_of(s, {A, B});
  EXPECT_EQ(r.find(Kind::kStrided, "A", "B").size(), 2u) << r.to_string();
  EXPECT_EQ(r.entries.size(), 2u) << r.to_string();
  const Emitted e = emitted(s, {A, B});
  EXPECT_TRUE(e.shuffle);
  EXPECT_FALSE(e.gather || e.scatter || e.masked_load || e.masked_store);
  EXPECT_MATCHES_REFERENCE(s, std::vector<te::Tensor>({A, B}));

  te::Tensor C = te::compute({2048}, [&](te::Var i) { return A(i + 64) * 2.0f; }, "C");
  Schedule sd = create_schedule({C});
  auto [od, ind] = sd[C].split(sd[C].axis(0), 8);
  sd[C].vectorize(ind);
  VectorizationReport rd = report_of(sd, {A, C});
  EXPECT_TRUE(rd.entries.empty()) << rd.to_string();
  const Emitted ed = emitted(sd, {A, C});
  EXPECT_FALSE(ed.gather || ed.scatter || ed.masked_load || ed.masked_store || ed.shuffle);
}

TEST(VectorizationReportCodegen, PredicatedLoadIsAMaskedLoad) {
  te::Tensor A = te::placeholder({64, 1020}, f32, "A");
  te::Tensor P = te::compute({64, 1024}, [&](te::Var i, te::Var j) {
    return te::select(j >= 2 && j < 1022, A(i, j - 2), te::make_const(f32, 0.0));
  }, "P");
  Schedule s = create_schedule({P});
  auto [jo, ji] = s[P].split(s[P].axis(1), 8);
  s[P].vectorize(ji);
  VectorizationReport r = report_of(s, {A, P});
  EXPECT_EQ(r.find(Kind::kPredicated, "A", "P").size(), 1u) << r.to_string();
  EXPECT_EQ(r.entries.size(), 1u) << r.to_string();
  const Emitted e = emitted(s, {A, P});
  EXPECT_TRUE(e.masked_load);
  EXPECT_FALSE(e.gather || e.scatter || e.masked_store);
  EXPECT_MATCHES_REFERENCE(s, std::vector<te::Tensor>({A, P}));
}

TEST(VectorizationReportCodegen, ScalarizedExpIsOneLibmCallPerLane) {
  te::Tensor A = te::placeholder({8}, f32, "A");
  te::Tensor E = te::compute({8}, [&](te::Var i) { return te::exp(A(i)); }, "E");
  Schedule s = create_schedule({E});
  s[E].vectorize(s[E].axis(0));
  const Target none("llvm -mcpu=x86-64-v3 -vector_math=none");
  VectorizationReport r;
  lowering::LowerOptions opts;
  opts.target = none;
  opts.vector_report = &r;
  lower(s, {A, E}, "f", opts);
  ASSERT_EQ(r.find(Kind::kScalarized, "", "E").size(), 1u) << r.to_string();
  runtime::Module m = build(s, {A, E}, none, "f");
  const std::string asm_text = m.source("asm");
  EXPECT_EQ(count(asm_text, "expf"), 8) << asm_text;  // the backend expands llvm.exp.v8f32 lane by lane
  EXPECT_EQ(test::compare_with_reference(s, {A, E}, 1, none), "");
}

TEST(VectorizationReportCodegen, VectorExpWithLibmvecIsOneCallPerVector) {
#if !(defined(__x86_64__) && defined(__linux__))
  GTEST_SKIP() << "libmvec is x86-64 GNU/Linux only";
#endif
  te::Tensor A = te::placeholder({8}, f32, "A");
  te::Tensor E = te::compute({8}, [&](te::Var i) { return te::exp(A(i)); }, "E");
  Schedule s = create_schedule({E});
  s[E].vectorize(s[E].axis(0));
  const Target avx2("llvm -mcpu=x86-64-v3");
  if (std::string why = codegen::host_incompatibility(avx2); !why.empty()) GTEST_SKIP() << why;
  VectorizationReport r;
  lowering::LowerOptions opts;
  opts.target = avx2;
  opts.vector_report = &r;
  lower(s, {A, E}, "f", opts);
  EXPECT_TRUE(r.entries.empty()) << r.to_string();
  runtime::Module m = build(s, {A, E}, avx2, "f");
  const std::string asm_text = m.source("asm");
  EXPECT_EQ(count(asm_text, "_ZGVdN8v_expf"), 1) << asm_text;
  EXPECT_EQ(count(asm_text, "expf"), 1) << asm_text;  // no scalar expf
  EXPECT_EQ(test::compare_with_reference(s, {A, E}, 1, avx2), "");
}

std::string read_source(const std::string& rel) {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The examples' schedules, re-stated: each test first checks that the example still
// contains the schedule lines it re-states.
TEST(ExamplesVectorize, MatmulExampleIsDense) {
  const std::string src = read_source("examples/matmul.cpp");
  for (const char* line : {"constexpr int M = 1024, K = 512, N = 256;", "s[C].split(s[C].axis(0), 32);",
                           "s[C].split(s[C].axis(1), 16);", "s[C].reorder({io, jo, k, ii, ji});", "s[C].vectorize(ji);",
                           "s[C].parallel(io);"})
    ASSERT_NE(src.find(line), std::string::npos) << "examples/matmul.cpp changed; re-state its schedule here: " << line;
  constexpr int M = 1024, K = 512, N = 256;
  te::Tensor A = te::placeholder({M, K}, f32, "A");
  te::Tensor B = te::placeholder({K, N}, f32, "B");
  te::IterVar k = te::reduce_axis({0, K}, "k");
  te::Tensor C = te::compute({M, N}, [&](te::Var i, te::Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 32);
  auto [jo, ji] = s[C].split(s[C].axis(1), 16);
  s[C].reorder({io, jo, k, ii, ji});
  s[C].vectorize(ji);
  s[C].parallel(io);
  VectorizationReport r = report_of(s, {A, B, C});
  EXPECT_GT(r.vector_accesses, 0);
  EXPECT_TRUE(r.entries.empty()) << r.to_string();
}

TEST(ExamplesVectorize, DeployCExampleIsDense) {
  const std::string src = read_source("examples/deploy_c/generate.cpp");
  for (const char* line : {"te::placeholder({64, 32}", "te::placeholder({32, 48}", "s[C].split(s[C].axis(0), 16);",
                           "s[C].split(s[C].axis(1), 8);", "s[C].reorder({io, jo, s[C].reduce_axis(0), ii, ji});",
                           "s[C].vectorize(ji);", "s2[O].parallel(s2[O].axis(1));"})
    ASSERT_NE(src.find(line), std::string::npos) << "deploy_c/generate.cpp changed; re-state its schedule here: " << line;
  te::Tensor A = te::placeholder({64, 32}, f32, "A");
  te::Tensor B = te::placeholder({32, 48}, f32, "B");
  te::Tensor C = te::ops::matmul(A, B, false, false, "C");
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 16);
  auto [jo, ji] = s[C].split(s[C].axis(1), 8);
  s[C].reorder({io, jo, s[C].reduce_axis(0), ii, ji});
  s[C].vectorize(ji);
  s[C].parallel(io);
  VectorizationReport r = report_of(s, {A, B, C});
  EXPECT_GT(r.vector_accesses, 0);
  EXPECT_TRUE(r.entries.empty()) << r.to_string();

  // The convolution is parallel, not vectorized: no vector access at all.
  te::Tensor D = te::placeholder({1, 3, 16, 16}, f32, "data");
  te::Tensor K = te::placeholder({4, 3, 3, 3}, f32, "kernel");
  te::Tensor O = te::ops::conv2d_nchw(D, K, {1, 1}, {1, 1}, {1, 1}, 1, "out");
  Schedule s2 = create_schedule({O});
  s2[O].parallel(s2[O].axis(1));
  VectorizationReport r2 = report_of(s2, {D, K, O});
  EXPECT_EQ(r2.vector_accesses, 0);
  EXPECT_TRUE(r2.entries.empty()) << r2.to_string();
}

}  // namespace
}  // namespace loom
