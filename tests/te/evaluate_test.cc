// The reference evaluator against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/runtime/float16.h"
#include "loom/runtime/ndarray.h"
#include "loom/te/evaluate.h"

namespace loom::te {
namespace {

using runtime::NDArray;

NDArray array(const std::vector<double>& v, std::vector<int64_t> shape, DataType t = DataType::Float(32)) {
  return NDArray::from_vector(v, std::move(shape), t);
}

std::vector<double> values(const NDArray& a) {
  std::vector<double> r;
  for (int64_t i = 0; i < a.numel(); ++i) r.push_back(a.get(i));
  return r;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(EvaluateTest, SmallMatmul) {
  Tensor A = placeholder({2, 3}, DataType::Float(32), "A");
  Tensor B = placeholder({3, 2}, DataType::Float(32), "B");
  IterVar k = reduce_axis({0, 3}, "k");
  Tensor C = compute({2, 2}, [&](Var i, Var j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  auto out = evaluate({C}, {{A, array({1, 2, 3, 4, 5, 6}, {2, 3})}, {B, array({7, 8, 9, 10, 11, 12}, {3, 2})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out[0].dtype(), DataType::Float(32));
  EXPECT_EQ(values(out[0]), (std::vector<double>{58, 64, 139, 154}));
}

TEST(EvaluateTest, LargerMatmulMatchesLoops) {
  const int n = 64;
  Tensor A = placeholder({n, n}, DataType::Float(32), "A");
  Tensor B = placeholder({n, n}, DataType::Float(32), "B");
  IterVar k = reduce_axis({0, n}, "k");
  Tensor C = compute({n, n}, [&](Var i, Var j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  NDArray a = NDArray::empty({n, n}, DataType::Float(32)), b = NDArray::empty({n, n}, DataType::Float(32));
  a.fill_random(1);
  b.fill_random(2);
  NDArray c = evaluate({C}, {{A, a}, {B, b}})[0];
  for (int i = 0; i < n; i += 7) {
    for (int j = 0; j < n; j += 5) {
      double s = 0;
      for (int x = 0; x < n; ++x) s += a.get(i * n + x) * b.get(x * n + j);
      EXPECT_NEAR(c.get(i * n + j), s, 1e-5) << i << "," << j;
    }
  }
}

TEST(EvaluateTest, ChainedComputesReadStoredIntermediates) {
  Tensor A = placeholder({4}, DataType::Float(32), "A");
  Tensor B = compute({4}, [&](Var i) { return A(i) * 2.0f + 1.0f; }, "B");
  Tensor C = compute({2}, [&](Var i) { return B(i * 2) + B(i * 2 + 1); }, "C");
  auto out = evaluate({C, B}, {{A, array({0, 1, 2, 3}, {4})}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{4, 12}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, 3, 5, 7}));
}

TEST(EvaluateTest, ReductionsWithConditionAndOtherCombiners) {
  Tensor A = placeholder({2, 4}, DataType::Int(32), "A");
  IterVar k = reduce_axis({0, 4}, "k");
  NDArray a = array({3, -1, 4, 1, -5, 9, 2, -6}, {2, 4}, DataType::Int(32));
  Tensor S = compute({2}, [&](Var i) { return sum(A(i, k), {k}, k % 2 == 0); }, "S");
  Tensor M = compute({2}, [&](Var i) { return max_reduce(A(i, k), {k}); }, "M");
  Tensor N = compute({2}, [&](Var i) { return min_reduce(A(i, k), {k}); }, "N");
  Tensor P = compute({2}, [&](Var i) { return prod(A(i, k), {k}); }, "P");
  auto out = evaluate({S, M, N, P}, {{A, a}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{7, -3}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{4, 9}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{-1, -6}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{-12, 540}));
}

TEST(EvaluateTest, UserReducerAndNarrowIntegerSums) {
  // A single-value user reducer goes through the general path: sum of absolute values.
  auto abs_sum = comm_reducer(
      [](const std::vector<Var>& x, const std::vector<Var>& y) {
        return std::vector<Expr>{x[0] + select(y[0] < 0, -y[0], y[0])};
      },
      [](const std::vector<DataType>& t) { return std::vector<Expr>{make_zero(t[0])}; }, {DataType::Int(32)});
  Tensor A = placeholder({2, 4}, DataType::Int(32), "A");
  IterVar k = reduce_axis({0, 4}, "k");
  Tensor S = compute({2}, [&](Var i) { return reduce(abs_sum, {A(i, k)}, {k})[0]; }, "S");
  // int8 accumulation wraps like a compiled kernel: 4 * 100 = 400 -> -112.
  Tensor B = placeholder({4}, DataType::Int(8), "B");
  Tensor W = compute({1}, [&](Var) { return sum(B(k), {k}); }, "W");
  // A let binding inside a body.
  Var t("t");
  Tensor L = compute({2}, [&](Var i) { return make<LetNode>(t, A(i, 0) * 2, t + t * 10); }, "L");
  auto out = evaluate({S, W, L}, {{A, array({3, -1, 4, 1, -5, 9, 2, -6}, {2, 4}, DataType::Int(32))},
                                  {B, array({100, 100, 100, 100}, {4}, DataType::Int(8))}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{9, 22}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{-112}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{66, -110}));
}

TEST(EvaluateTest, TwoReduceAxes) {
  Tensor A = placeholder({2, 2, 3}, DataType::Float(32), "A");
  IterVar r1 = reduce_axis({0, 2}, "r1");
  IterVar r2 = reduce_axis({0, 3}, "r2");
  Tensor S = compute({2}, [&](Var i) { return sum(A(i, r1, r2), {r1, r2}); }, "S");
  auto out = evaluate({S}, {{A, array({1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}, {2, 2, 3})}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{21, 210}));
}

TEST(EvaluateTest, ArgmaxTupleReducer) {
  auto argmax = comm_reducer(
      [](const std::vector<Var>& x, const std::vector<Var>& y) {
        Expr keep = x[1] >= y[1];
        return std::vector<Expr>{select(keep, x[0], y[0]), select(keep, x[1], y[1])};
      },
      [](const std::vector<DataType>& t) { return std::vector<Expr>{make_const(t[0], -1), min_value(t[1])}; },
      {DataType::Int(32), DataType::Float(32)});
  Tensor X = placeholder({3, 5}, DataType::Float(32), "X");
  IterVar r = reduce_axis({0, 5}, "r");
  auto outs = compute_multi({3}, [&](const std::vector<Var>& v) {
    return reduce(argmax, {Expr(r), X(v[0], r)}, {r});
  }, "argmax");
  NDArray x = array({1, 7, 2, 5, 0, -1, -2, -3, -4, -0.5, 3, 2, 1, 0, 9}, {3, 5});
  auto out = evaluate(outs, {{X, x}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 4, 4}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{7, -0.5, 9}));
  // Only the index output: still computed through the tuple reduction.
  EXPECT_EQ(values(evaluate({outs[0]}, {{X, x}})[0]), (std::vector<double>{1, 4, 4}));
}

TEST(EvaluateTest, SelectEvaluatesOnlyTheChosenBranch) {
  // Zero padding: the out-of-range read sits in the branch that is not taken.
  Tensor A = placeholder({3}, DataType::Float(32), "A");
  Tensor P = compute({5}, [&](Var i) { return select(i >= 1 && i < 4, A(i - 1), 0.0f); }, "P");
  auto out = evaluate({P}, {{A, array({5, 6, 7}, {3})}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 5, 6, 7, 0}));
}

TEST(EvaluateTest, OutOfBoundsReadIsAnError) {
  Tensor A = placeholder({3}, DataType::Float(32), "A");
  Tensor P = compute({4}, [&](Var i) { return A(i); }, "P");
  std::string msg = error_of([&] { evaluate({P}, {{A, array({1, 2, 3}, {3})}}); });
  EXPECT_NE(msg.find("'P'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("A[3]"), std::string::npos) << msg;
}

TEST(EvaluateTest, CastsRoundAndWrapLikeC) {
  Tensor A = placeholder({4}, DataType::Float(32), "A");
  Tensor I = compute({4}, [&](Var i) { return cast(DataType::Int(32), A(i)); }, "I");
  Tensor W = compute({4}, [&](Var i) { return cast(DataType::Int(8), i * 100); }, "W");
  Tensor U = compute({4}, [&](Var i) { return cast(DataType::UInt(8), i * 100); }, "U");
  Tensor B = compute({4}, [&](Var i) { return cast(DataType::Bool(), A(i)); }, "B");
  Tensor F = compute({4}, [&](Var i) { return i / 2 + floordiv(i - 2, 3) * 10 + floormod(i - 2, 3) * 100; }, "F");
  auto out = evaluate({I, W, U, B, F}, {{A, array({2.7, -2.7, 0, 0.25}, {4})}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{2, -2, 0, 0}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{0, 100, -56, 44}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{0, 100, 200, 44}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{1, 1, 0, 1}));
  // i/2 truncates; floordiv/floormod of (i-2) by 3 floor: (-1,1) (-1,2) (0,0) (0,1)
  EXPECT_EQ(values(out[4]), (std::vector<double>{-10 + 100, -10 + 200 + 0, 1 + 0 + 0, 1 + 0 + 100}));
}

TEST(EvaluateTest, Float16StoresRoundThroughHalf) {
  Tensor A = placeholder({3}, DataType::Float(32), "A");
  Tensor H = compute({3}, [&](Var i) { return cast(DataType::Float(16), A(i)); }, "H");
  auto out = evaluate({H}, {{A, array({1.0 / 3, 1000.7, 65519.0}, {3})}});
  ASSERT_EQ(out[0].dtype(), DataType::Float(16));
  const uint16_t* h = static_cast<const uint16_t*>(out[0].raw_data());
  EXPECT_EQ(runtime::half_to_float(h[0]), runtime::half_to_float(runtime::float_to_half(1.0f / 3)));
  EXPECT_NEAR(runtime::half_to_float(h[0]), 0.333251953125, 1e-12);
  EXPECT_EQ(runtime::half_to_float(h[1]), 1000.5f);
  EXPECT_EQ(runtime::half_to_float(h[2]), 65504.0f);
}

TEST(EvaluateTest, Intrinsics) {
  Tensor A = placeholder({3}, DataType::Float(64), "A");
  Tensor E = compute({3}, [&](Var i) { return exp(A(i)) + sqrt(abs(A(i))) + sigmoid(A(i)); }, "E");
  Tensor R = compute({3}, [&](Var i) { return floor(A(i)) * 100 + ceil(A(i)) * 10 + round(A(i)); }, "R");
  Tensor P = compute({3}, [&](Var i) { return pow(A(i), 2.0) + tanh(A(i)) + erf(A(i)); }, "P");
  std::vector<double> x = {0.5, -2.25, 4.0};
  auto out = evaluate({E, R, P}, {{A, array(x, {3}, DataType::Float(64))}});
  for (int i = 0; i < 3; ++i) {
    double v = x[i];
    EXPECT_NEAR(out[0].get(i), std::exp(v) + std::sqrt(std::fabs(v)) + 1 / (1 + std::exp(-v)), 1e-12);
    EXPECT_NEAR(out[1].get(i), std::floor(v) * 100 + std::ceil(v) * 10 + std::nearbyint(v), 1e-12);
    EXPECT_NEAR(out[2].get(i), v * v + std::tanh(v) + std::erf(v), 1e-12);
  }
}

TEST(EvaluateTest, SmallConv2dMatchesLoops) {
  const int N = 1, C = 2, H = 5, W = 5, K = 3, R = 3, pad = 1;
  Tensor X = placeholder({N, C, H, W}, DataType::Float(32), "X");
  Tensor Wt = placeholder({K, C, R, R}, DataType::Float(32), "W");
  Tensor Xp = compute({N, C, H + 2 * pad, W + 2 * pad}, [&](Var n, Var c, Var y, Var x) {
    return select(y >= pad && y < H + pad && x >= pad && x < W + pad, X(n, c, y - pad, x - pad), 0.0f);
  }, "pad");
  IterVar rc = reduce_axis({0, C}, "rc"), ry = reduce_axis({0, R}, "ry"), rx = reduce_axis({0, R}, "rx");
  Tensor Y = compute({N, K, H, W}, [&](Var n, Var k, Var y, Var x) {
    return sum(Xp(n, rc, y + ry, x + rx) * Wt(k, rc, ry, rx), {rc, ry, rx});
  }, "conv");
  NDArray xa = NDArray::empty({N, C, H, W}, DataType::Float(32)), wa = NDArray::empty({K, C, R, R}, DataType::Float(32));
  xa.fill_random(3);
  wa.fill_random(4);
  NDArray y = evaluate({Y}, {{X, xa}, {Wt, wa}})[0];
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < W; ++j) {
        double s = 0;
        for (int c = 0; c < C; ++c)
          for (int u = 0; u < R; ++u)
            for (int v = 0; v < R; ++v) {
              int yy = i + u - pad, xx = j + v - pad;
              if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
              s += xa.get(((c * H) + yy) * W + xx) * wa.get(((k * C + c) * R + u) * R + v);
            }
        EXPECT_NEAR(y.get((k * H + i) * W + j), s, 1e-5);
      }
}

TEST(EvaluateTest, InputsAreChecked) {
  Tensor A = placeholder({2, 3}, DataType::Float(32), "A");
  Tensor B = compute({2, 3}, [&](Var i, Var j) { return A(i, j) + 1.0f; }, "B");
  std::string missing = error_of([&] { evaluate({B}, {}); });
  EXPECT_NE(missing.find("placeholder 'A'"), std::string::npos) << missing;
  std::string shape = error_of([&] { evaluate({B}, {{A, array({1, 2, 3}, {3})}}); });
  EXPECT_NE(shape.find("'A'"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[2, 3]"), std::string::npos) << shape;
  std::string dtype = error_of([&] { evaluate({B}, {{A, array({1, 2, 3, 4, 5, 6}, {2, 3}, DataType::Int(32))}}); });
  EXPECT_NE(dtype.find("'A'"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("float32"), std::string::npos) << dtype;
}

TEST(EvaluateTest, SymbolicShapeIsAnError) {
  Var n("n");
  Tensor A = placeholder({n}, DataType::Float(32), "A");
  Tensor B = compute({n}, [&](Var i) { return A(i); }, "B");
  EXPECT_THROW(evaluate({B}, {{A, array({1}, {1})}}), Error);
}

TEST(EvaluateTest, PlaceholderOutputIsItsInput) {
  Tensor A = placeholder({2}, DataType::Float(32), "A");
  NDArray a = array({1, 2}, {2});
  auto out = evaluate({A}, {{A, a}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 2}));
}

}  // namespace
}  // namespace loom::te
