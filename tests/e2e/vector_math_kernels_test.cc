// Kernels whose vector code calls libmvec (softmax's exp, gelu's erf and tanh, sigmoid, tanh),
// scheduled as the graph level schedules them (tuner::schedule_by_pattern, the target's lanes),
// against te::evaluate at each vector width, on shapes that do and do not divide the lanes;
// and the vectorization report, which no longer lists them as computed lane by lane.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/check_target.h"
#include "loom/loom.h"
#include "loom/lower/vector_access.h"
#include "loom/te/ops.h"
#include "loom/tuner/schedule_by_pattern.h"

namespace loom {
namespace {

using lowering::VectorReportEntry;
using runtime::NDArray;
const DataType f32 = DataType::Float(32);

struct Op {
  std::string name;
  std::function<te::Tensor(const te::Tensor&)> make;
};
const std::vector<Op>& ops() {
  static const std::vector<Op> v = {
      {"softmax", [](const te::Tensor& x) { return te::ops::softmax(x, -1); }},
      {"softmax_axis0", [](const te::Tensor& x) { return te::ops::softmax(x, 0); }},
      {"gelu", [](const te::Tensor& x) { return te::ops::gelu(x, false); }},
      {"gelu_tanh", [](const te::Tensor& x) { return te::ops::gelu(x, true); }},
      {"sigmoid", [](const te::Tensor& x) { return te::ops::sigmoid(x); }},
      {"tanh", [](const te::Tensor& x) { return te::ops::tanh(x); }},
  };
  return v;
}

const char* const kTargets[] = {
    "llvm -mcpu=x86-64-v4",                   // 16 lanes
    "llvm -mattr=-avx512f",                   // the host without AVX-512: 8 lanes on this machine
    "llvm -mcpu=x86-64-v3",                   // 8
    "llvm -mcpu=x86-64",                      // 4
    "llvm -mcpu=x86-64-v3 -vector_math=none", // libm per lane, as before
};

/// Runs `out` (scheduled by pattern for `target`) on inputs spread over [-12, 12] and compares
/// it with te::evaluate: |got - want| <= 1e-6 + 1e-5·|want| (libmvec's few ulps, a softmax's
/// reassociated sum).
std::string check(const Op& op, const std::vector<int64_t>& shape, const Target& target) {
  te::Tensor x = te::placeholder(std::vector<te::Expr>(shape.begin(), shape.end()), f32, "x");
  te::Tensor out = op.make(x);
  std::string why;
  Schedule s = tuner::schedule_by_pattern({out}, target, &why);
  NDArray in = NDArray::empty(shape, f32);
  in.fill_random(7, -12.0, 12.0);
  NDArray want = te::evaluate({out}, {{x, in}})[0];
  runtime::Module m = build(s, {x, out}, target, "f");
  NDArray got = NDArray::empty(shape, f32);
  for (int64_t i = 0; i < got.numel(); ++i) got.set(i, 12345);
  m.get_function("f")(in, got);
  std::string err = test::compare_arrays(got, want, {1e-5, 1e-6}, op.name);
  return err.empty() ? "" : err + "\n" + why;
}

TEST(VectorMathKernels, MatchTheReferenceAtEveryWidth) {
  for (const char* t : kTargets) {
    const Target target(t);
    if (std::string why = codegen::host_incompatibility(target); !why.empty()) {
      std::cout << "skipping " << t << ": " << why << "\n";
      continue;
    }
    const int lanes = std::max(1, target.vector_bits() / 32);
    // Innermost extents: a multiple of the lanes, a prime that is not, one below the lanes.
    for (int64_t inner : {int64_t(4 * lanes), int64_t(37), int64_t(std::max(2, lanes - 1))})
      for (const Op& op : ops()) {
        SCOPED_TRACE(fmt::format("{} on {}, shape [3, {}]", op.name, t, inner));
        EXPECT_EQ(check(op, {3, inner}, target), "");
      }
  }
}

TEST(VectorMathKernels, ReportListsNoScalarizedTranscendentalWhereLibmvecComputesIt) {
  for (const char* t : {"llvm -mcpu=x86-64-v4", "llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64",
                        "llvm -mcpu=x86-64-v3 -vector_math=none", "llvm -mtriple=aarch64-linux-gnu"}) {
    const Target target(t);
    const bool vector = !lowering::vector_math_library(target).empty();
    for (const Op& op : ops()) {
      SCOPED_TRACE(fmt::format("{} on {}", op.name, t));
      te::Tensor x = te::placeholder({12, 128}, f32, "x");
      te::Tensor out = op.make(x);
      Schedule s = tuner::schedule_by_pattern({out}, target);
      lowering::VectorizationReport r;
      lowering::LowerOptions opts;
      opts.target = target;
      opts.vector_report = &r;
      lower(s, {x, out}, "f", opts);
      const auto scalarized = r.find(VectorReportEntry::Kind::kScalarized);
      if (vector) {
        EXPECT_TRUE(scalarized.empty()) << r.to_string();
      } else {
        ASSERT_FALSE(scalarized.empty()) << r.to_string();
        EXPECT_NE(scalarized[0].note.find("one libm call per lane"), std::string::npos) << scalarized[0].note;
      }
    }
  }
}

}  // namespace
}  // namespace loom
