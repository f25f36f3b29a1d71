// det and bitcast: the registry entries through te::evaluate against naive loops (a cofactor
// expansion; memcpy of the bits), and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "loom/te/op_registry.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::te::ops::Attrs;

/// The determinant of the n×n row-major matrix at `m` by cofactor expansion along row 0.
double cofactor_det(const std::vector<double>& m, int64_t n) {
  if (n == 1) return m[0];
  double d = 0;
  for (int64_t c = 0; c < n; ++c) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t k = 0; k < n; ++k)
        if (k != c) minor.push_back(m[size_t(r * n + k)]);
    d += (c % 2 ? -1.0 : 1.0) * m[size_t(c)] * cofactor_det(minor, n - 1);
  }
  return d;
}

Ref naive_det(const Ref& x) {
  const int64_t n = x.shape.back();
  Shape batch(x.shape.begin(), x.shape.end() - 2);
  Ref out(batch.empty() ? Shape{1} : batch);
  for (int64_t b = 0; b < numel(batch); ++b) {
    std::vector<double> m(x.v.begin() + b * n * n, x.v.begin() + (b + 1) * n * n);
    out.v[size_t(b)] = cofactor_det(m, n);
  }
  return out;
}

TEST(LinalgOps, DetMatchesCofactorExpansion) {
  for (Shape s : {Shape{1, 1}, Shape{2, 2}, Shape{3, 3, 3}, Shape{2, 2, 4, 4}, Shape{5, 5}}) {
    SCOPED_TRACE(::testing::Message() << s.size() << "-D of " << s.back() << "x" << s.back());
    Inputs in;
    Tensor X = ph(s, "x");
    Ref x = in.add(X, -2.0, 2.0);
    expect_close(in.eval(reg("det", {X})), naive_det(x), 1e-4);
  }
}

TEST(LinalgOps, DetPivotsPastZerosAndGivesZeroForSingularMatrices) {
  Inputs in;
  Tensor X = ph({3, 3, 3}, "x");
  Ref x({3, 3, 3});
  // A zero leading entry (needs a row swap), a singular matrix, and a permutation matrix.
  x.v = {0, 1, 2, 3, 4, 5, 6, 7, 9,  //
         1, 2, 3, 2, 4, 6, 1, 0, 1,  //
         0, 0, 1, 1, 0, 0, 0, 1, 0};
  in.set(X, x);
  Ref want({3});
  want.v = {-3, 0, 1};
  expect_close(in.eval(reg("det", {X})), want, 1e-6);
}

TEST(LinalgOps, BitcastReinterpretsTheBits) {
  Inputs in;
  Tensor X = ph({4}, "x");
  Ref x({4});
  x.v = {1.0, -2.5, 0.0, 3.0e38};
  in.set(X, x);
  loom::runtime::NDArray got = in.eval(reg("bitcast", {X}, {{"dtype", std::string("int32")}}));
  ASSERT_EQ(got.dtype(), DataType::Int(32));
  for (int i = 0; i < 4; ++i) {
    const float f = float(x.v[size_t(i)]);
    int32_t bits;
    std::memcpy(&bits, &f, 4);
    EXPECT_EQ(got.data<int32_t>()[i], bits) << i;
  }
  // And back: int64 -> float64.
  Tensor I = ph({2}, "i", DataType::Int(64));
  Ref iv({2});
  iv.v = {4607182418800017408.0, -4611686018427387904.0};  // 1.0 and -2.0 as doubles
  in.set(I, iv);
  loom::runtime::NDArray d = in.eval(reg("bitcast", {I}, {{"dtype", std::string("float64")}}));
  EXPECT_EQ(d.data<double>()[0], 1.0);
  EXPECT_EQ(d.data<double>()[1], -2.0);
  // int8 -> uint8 keeps the bits: -1 is 255.
  Tensor S = ph({1}, "s", DataType::Int(8));
  Ref sv({1});
  sv.v = {-1};
  in.set(S, sv);
  EXPECT_EQ(in.eval(reg("bitcast", {S}, {{"dtype", std::string("uint8")}})).get(0), 255.0);
}

TEST(LinalgOps, Errors) {
  expect_error([] { reg("det", {ph({2, 3}, "x")}); }, {"det", "[..., M, M]"});
  expect_error([] { reg("det", {ph({2, 2}, "x", DataType::Int(32))}); }, {"det", "floating point"});
  expect_error([] { reg("bitcast", {ph({2}, "x")}, {{"dtype", std::string("int64")}}); }, {"bitcast", "element width"});
}

}  // namespace
