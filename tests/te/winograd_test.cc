// Winograd F(m×m, 3×3): the transform matrices, and te::ops::conv2d_nchwc_winograd on a
// weight from winograd_weight_transform evaluated (te::evaluate) against the direct
// te::ops::conv2d_nchwc of the same data and kernel, for every tile size, with and without
// padding, on output sizes the tile does and does not divide; bad inputs and registry use.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_util.h"
#include "loom/te/op_registry.h"

namespace loom::te {
namespace {

/// The winograd stages round every intermediate to float32 (as the compiled kernel does) and
/// F(m) with m > 2 scales values by up to ~10 in its transforms, so the result differs from
/// the direct convolution by a few float32 ulps of its largest terms: 1e-4 absolute plus
/// 1e-4 relative on inputs in [-1, 1] with at most 32 input channels.
constexpr test::Tolerance kTol{1e-4, 1e-4};

std::vector<Expr> exprs(const std::vector<int64_t>& s) {
  std::vector<Expr> e;
  for (int64_t d : s) e.push_back(Expr(int(d)));
  return e;
}

std::string check_against_direct(std::vector<int64_t> data_shape, std::vector<int64_t> kernel_shape, int64_t pad,
                                 int64_t m, uint64_t seed) {
  Tensor x = placeholder(exprs(data_shape), DataType::Float(32), "x");
  Tensor g = placeholder(exprs(kernel_shape), DataType::Float(32), "g");
  Tensor direct = ops::conv2d_nchwc(x, g, {1, 1}, {pad, pad});
  Tensor u = ops::winograd_weight_transform(g, m);
  Tensor wino = ops::conv2d_nchwc_winograd(x, u, {pad, pad});
  auto in = test::random_inputs({x, g}, seed);
  auto want = evaluate({direct}, in);
  auto got = evaluate({wino}, in);
  if (got[0].shape() != want[0].shape()) return "shapes differ";
  return test::compare_arrays(got[0], want[0], kTol, fmt::format("F({}) pad {}", m, pad));
}

TEST(Winograd, MatricesGiveTheCorrelationOfOneTile) {
  // A^T[(G g G^T) ⊙ (B^T d B)]A in one dimension: y_i = sum_k d_{i+k} g_k.
  for (int64_t m = 1; m <= 6; ++m) {
    auto w = ops::winograd_matrices(m, 3);
    ASSERT_EQ(w.alpha, m + 2);
    std::vector<double> d(size_t(w.alpha)), g{0.3, -1.7, 0.9};
    for (size_t i = 0; i < d.size(); ++i) d[i] = std::sin(double(i) + 0.5);
    std::vector<double> u(size_t(w.alpha), 0), v(size_t(w.alpha), 0);
    for (int64_t e = 0; e < w.alpha; ++e) {
      for (int64_t k = 0; k < 3; ++k) u[size_t(e)] += w.G[size_t(e * 3 + k)] * g[size_t(k)];
      for (int64_t j = 0; j < w.alpha; ++j) v[size_t(e)] += w.BT[size_t(e * w.alpha + j)] * d[size_t(j)];
    }
    for (int64_t i = 0; i < m; ++i) {
      double y = 0, want = 0;
      for (int64_t e = 0; e < w.alpha; ++e) y += w.AT[size_t(i * w.alpha + e)] * u[size_t(e)] * v[size_t(e)];
      for (int64_t k = 0; k < 3; ++k) want += d[size_t(i + k)] * g[size_t(k)];
      EXPECT_NEAR(y, want, 1e-9) << "F(" << m << ", 3) output " << i;
    }
  }
  try {
    ops::winograd_matrices(7, 3);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("F(7x7, 3x3)"), std::string::npos) << e.what();
  }
}

TEST(Winograd, MatchesDirectConvolutionForEveryTileSize) {
  // 10x9 outputs with pad 1: F(2) leaves a row, F(4) a row and a column, F(3) divides 9.
  for (int64_t m = 2; m <= 6; ++m)
    EXPECT_EQ(check_against_direct({1, 2, 10, 9, 8}, {2, 2, 3, 3, 8, 4}, 1, m, uint64_t(m)), "") << "F(" << m << ")";
}

TEST(Winograd, DividingAndNonDividingShapesAndPaddings) {
  struct Case {
    std::vector<int64_t> x, g;
    int64_t pad, m;
  };
  for (const Case& c : {Case{{1, 1, 8, 8, 16}, {1, 1, 3, 3, 16, 16}, 1, 4},   // 8x8 in tiles of 4
                        Case{{1, 1, 8, 8, 16}, {1, 1, 3, 3, 16, 16}, 1, 2},   // and of 2
                        Case{{2, 2, 7, 11, 4}, {3, 2, 3, 3, 4, 8}, 1, 4},     // N=2, 7x11: neither divides
                        Case{{1, 3, 9, 6, 4}, {1, 3, 3, 3, 4, 4}, 0, 4},      // no padding, 7x4
                        Case{{1, 3, 9, 6, 4}, {1, 3, 3, 3, 4, 4}, 0, 2},      // no padding, 7x4
                        Case{{1, 1, 5, 5, 8}, {2, 1, 3, 3, 8, 8}, 2, 4},      // pad 2: 7x7
                        Case{{1, 1, 3, 3, 4}, {1, 1, 3, 3, 4, 4}, 0, 4}}) {   // one output, m=4
    EXPECT_EQ(check_against_direct(c.x, c.g, c.pad, c.m, 7), "")
        << "x " << fmt::format("{}", fmt::join(c.x, ",")) << " pad " << c.pad << " F(" << c.m << ")";
  }
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(Winograd, BadInputsNameWhatIsWrong) {
  Tensor x = placeholder({1, 2, 8, 8, 8}, DataType::Float(32), "x");
  Tensor g5 = placeholder({1, 2, 5, 5, 8, 8}, DataType::Float(32), "g5");
  expect_error([&] { ops::winograd_weight_transform(g5, 4); },
               {"winograd_weight_transform", "1x2x5x5x8x8", "3x3"});
  Tensor g = placeholder({1, 2, 3, 3, 8, 8}, DataType::Float(32), "g");
  expect_error([&] { ops::winograd_weight_transform(g, 7); }, {"tile_size", "[2, 6]", "7"});
  expect_error([&] { ops::winograd_weight_transform(g, 1); }, {"tile_size", "1"});
  Tensor u = ops::winograd_weight_transform(g, 4);
  // A direct kernel given where the transformed one belongs.
  expect_error([&] { ops::conv2d_nchwc_winograd(x, g, {1, 1}); }, {"conv2d_nchwc_winograd", "the weight is"});
  Tensor x4 = placeholder({1, 4, 8, 8, 4}, DataType::Float(32), "x4");
  expect_error([&] { ops::conv2d_nchwc_winograd(x4, u, {1, 1}); }, {"input channels", "1x4x8x8x4"});
  expect_error([&] { ops::conv2d_nchwc_winograd(x, u, {3, 1}); }, {"padding {3, 1}"});
  Tensor tiny = placeholder({1, 2, 2, 2, 8}, DataType::Float(32), "tiny");
  expect_error([&] { ops::conv2d_nchwc_winograd(tiny, u, {0, 0}); }, {"does not fit"});
}

TEST(Winograd, RegistryOpsComposeAndCheckAttributes) {
  Tensor x = placeholder({1, 2, 7, 9, 8}, DataType::Float(32), "x");
  Tensor g = placeholder({2, 2, 3, 3, 8, 8}, DataType::Float(32), "g");
  Tensor b = placeholder({16}, DataType::Float(32), "b");
  Tensor u = ops::apply_op("winograd_weight_transform", {g}, {{"tile_size", int64_t(2)}}).at(0);
  Tensor y = ops::apply_op("conv2d_nchwc_winograd", {x, u, b},
                           {{"layout", std::string("NCHW8c")}, {"padding", std::vector<int64_t>{1, 1}}})
                 .at(0);
  Tensor want = ops::bias_add(ops::conv2d_nchwc(x, g, {1, 1}, {1, 1}), b, 1, "NCHW8c");
  auto in = test::random_inputs({x, g, b}, 3);
  EXPECT_EQ(test::compare_arrays(evaluate({y}, in)[0], evaluate({want}, in)[0], kTol, "bias_add"), "");

  auto types = ops::infer_type("conv2d_nchwc_winograd", {ops::TensorType{{1, 2, 7, 9, 8}, DataType::Float(32), ""},
                                                          ops::TensorType{{4, 4, 2, 2, 8, 8}, DataType::Float(32), ""}},
                               {{"layout", std::string("NCHW8c")}});
  EXPECT_EQ(types[0].shape, (std::vector<int64_t>{1, 2, 7, 9, 8}));
  EXPECT_EQ(types[0].layout, "NCHW8c");
  expect_error([&] { ops::apply_op("conv2d_nchwc_winograd", {x, u}, {{"layout", std::string("NCHW16c")}}); },
               {"conv2d_nchwc_winograd", "NCHW16c"});
  expect_error([&] { ops::apply_op("conv2d_nchwc_winograd", {x, u},
                                   {{"layout", std::string("NCHW8c")}, {"out_layout", std::string("NCHW4c")}}); },
               {"out_layout", "NCHW4c", "NCHW8c"});
  auto call = ops::select_template("conv2d_nchwc_winograd", "llvm",
                                   {ops::TensorType{{1, 2, 7, 9, 8}, DataType::Float(32), ""},
                                    ops::TensorType{{4, 4, 2, 2, 8, 8}, DataType::Float(32), ""}},
                                   {{"layout", std::string("NCHW8c")}});
  ASSERT_TRUE(call);
  EXPECT_EQ(call->name, "conv2d_nchwc_winograd");
  EXPECT_EQ(call->shape, (std::vector<int64_t>{1, 16, 7, 9, 16, 3, 3}));
  EXPECT_EQ(call->attrs.at("tile_size"), "2");
  EXPECT_EQ(call->attrs.at("ic_block"), "8");
  EXPECT_EQ(call->attrs.at("oc_block"), "8");
  // tile_size 4, the template's default, is left out of the workload.
  call = ops::select_template("conv2d_nchwc_winograd", "llvm",
                              {ops::TensorType{{1, 1, 7, 9, 16}, DataType::Float(32), ""},
                               ops::TensorType{{6, 6, 1, 1, 16, 16}, DataType::Float(32), ""}},
                              {});
  ASSERT_TRUE(call);
  EXPECT_EQ(call->attrs, (std::map<std::string, std::string>{{"pad", "1"}}));
}

}  // namespace
}  // namespace loom::te
