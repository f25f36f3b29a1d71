// The operator library against naive loops: each op is evaluated with te::evaluate on small
// random inputs and compared with a direct C++ implementation; plus argument errors.
#include "loom/te/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "loom/runtime/ndarray.h"
#include "loom/te/evaluate.h"

#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::DataType;
using loom::runtime::NDArray;
using loom::te::Tensor;
namespace te = loom::te;
namespace ops = loom::te::ops;

// ---------------------------------------------------------------- matmul family

TEST(Ops, MatmulAllTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      Tensor A = ph(ta ? Shape{17, 13} : Shape{13, 17}, "A"), B = ph(tb ? Shape{30, 17} : Shape{17, 30}, "B");
      Tensor C = ops::matmul(A, B, ta, tb);
      EXPECT_EQ(C->op->tag, "matmul");
      EXPECT_EQ(shape_of(C), (Shape{13, 30}));
      Inputs in;
      Ref a = in.add(A), b = in.add(B);
      expect_close(in.eval(C), naive_matmul(a, b, ta, tb));
    }
}

TEST(Ops, BatchMatmul) {
  struct Case { Shape a, b; bool ta, tb; };
  for (const auto& c : {Case{{3, 13, 17}, {3, 17, 5}, false, false}, Case{{2, 17, 13}, {2, 6, 17}, true, true},
                        Case{{3, 5, 17}, {1, 17, 13}, false, false}, Case{{1, 5, 7}, {4, 7, 3}, false, false}}) {
    Tensor A = ph(c.a, "A"), B = ph(c.b, "B");
    Tensor C = ops::batch_matmul(A, B, c.ta, c.tb);
    EXPECT_EQ(C->op->tag, "batch_matmul");
    Inputs in;
    Ref a = in.add(A), b = in.add(B);
    int64_t batch = std::max(c.a[0], c.b[0]);
    Shape as(c.a.begin() + 1, c.a.end()), bs(c.b.begin() + 1, c.b.end());
    Ref want;
    for (int64_t n = 0; n < batch; ++n) {
      Ref a1(as), b1(bs);
      int64_t na = c.a[0] == 1 ? 0 : n, nb = c.b[0] == 1 ? 0 : n;
      std::copy_n(a.v.begin() + na * numel(as), numel(as), a1.v.begin());
      std::copy_n(b.v.begin() + nb * numel(bs), numel(bs), b1.v.begin());
      Ref r = naive_matmul(a1, b1, c.ta, c.tb);
      if (n == 0) want.shape = {batch, r.shape[0], r.shape[1]};
      want.v.insert(want.v.end(), r.v.begin(), r.v.end());
    }
    expect_close(in.eval(C), want);
  }
}

TEST(Ops, DenseWithAndWithoutBias) {
  Tensor X = ph({5, 17}, "data"), W = ph({13, 17}, "weight"), b = ph({13}, "bias");
  Tensor plain = ops::dense(X, W);
  EXPECT_EQ(plain->op->tag, "dense");
  Tensor biased = ops::dense(X, W, b);
  EXPECT_EQ(biased->op->tag, "broadcast");
  EXPECT_EQ(biased->op->name, "bias_add");
  auto producers = biased->op->input_tensors();
  ASSERT_EQ(producers.size(), 2u);
  EXPECT_EQ(producers[0]->op->tag, "dense");

  Inputs in;
  Ref x = in.add(X), w = in.add(W), bias = in.add(b);
  Ref want = naive_matmul(x, w, false, true);
  expect_close(in.eval(plain), want);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 13; ++j) want({i, j}) += bias({j});
  expect_close(in.eval(biased), want);
}

TEST(Ops, MatmulErrors) {
  expect_error([] { ops::matmul(ph({1024, 512}, "A"), ph({256, 256}, "B")); },
               {"matmul", "1024x512", "256x256", "A's columns must equal B's rows"});
  expect_error([] { ops::matmul(ph({4, 5, 6}, "A"), ph({6, 2}, "B")); }, {"matmul", "A must be 2-D", "4x5x6"});
  expect_error([] { ops::matmul(ph({4, 5}, "A"), ph({5, 2}, "B", DataType::Float(64))); },
               {"matmul", "float32", "float64"});
  expect_error([] { ops::matmul(ph({4, 5}, "A"), ph({4, 5}, "B"), false, false); }, {"matmul", "4x5"});
  expect_error([] { ops::batch_matmul(ph({2, 4, 5}, "A"), ph({3, 5, 2}, "B")); }, {"batch_matmul", "batch sizes 2 and 3"});
  expect_error([] { ops::batch_matmul(ph({2, 4, 5}, "A"), ph({2, 4, 2}, "B")); }, {"batch_matmul", "2x4x5", "2x4x2"});
  expect_error([] { ops::dense(ph({4, 5}, "d"), ph({3, 6}, "w")); }, {"dense", "4x5", "3x6"});
  expect_error([] { ops::dense(ph({4, 5}, "d"), ph({3, 5}, "w"), ph({4}, "b")); }, {"dense", "bias", "3"});
  te::Var n("n");
  expect_error([&] { ops::matmul(te::placeholder({n, 4}, DataType::Float(32), "A"), ph({4, 4}, "B")); },
               {"matmul", "non-constant"});
}

// ---------------------------------------------------------------- convolution

TEST(Ops, Conv2dNchw) {
  struct Case { Shape x, w; ops::Pair st, pd, dl; int64_t groups; };
  for (const auto& c : {Case{{1, 3, 13, 13}, {8, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                        Case{{2, 3, 17, 13}, {5, 3, 3, 2}, {2, 1}, {1, 2}, {2, 1}, 1},
                        Case{{1, 4, 9, 9}, {6, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 2},
                        Case{{1, 6, 7, 8}, {6, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 6}}) {
    SCOPED_TRACE(testing::Message() << "groups=" << c.groups << " stride=" << c.st[0] << " pad=" << c.pd[0]);
    Tensor X = ph(c.x, "data"), W = ph(c.w, "kernel");
    Tensor Y = ops::conv2d_nchw(X, W, c.st, c.pd, c.dl, c.groups);
    EXPECT_EQ(Y->op->tag, "conv2d_nchw");
    EXPECT_EQ(Y->op->reduce_axis.size(), 3u);
    Inputs in;
    Ref x = in.add(X), w = in.add(W);
    expect_close(in.eval(Y), naive_conv2d_nchw(x, w, c.st, c.pd, c.dl, c.groups));
  }
}

TEST(Ops, Conv2dPadIsASeparateStage) {
  Tensor X = ph({1, 3, 8, 8}, "data"), W = ph({4, 3, 3, 3}, "kernel");
  Tensor padded = ops::conv2d_nchw(X, W, {1, 1}, {1, 1});
  auto in = padded->op->input_tensors();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0]->op->name, "pad");
  EXPECT_EQ(in[0]->op->tag, "injective");
  EXPECT_EQ(shape_of(in[0]), (Shape{1, 3, 10, 10}));
  EXPECT_EQ(in[0]->op->body[0].kind(), te::ExprKind::Select);
  Tensor unpadded = ops::conv2d_nchw(X, W);
  auto in2 = unpadded->op->input_tensors();
  ASSERT_EQ(in2.size(), 2u);
  EXPECT_TRUE(in2[0] == X);
  EXPECT_EQ(shape_of(unpadded), (Shape{1, 4, 6, 6}));
}

TEST(Ops, Conv2dNhwc) {
  struct Case { Shape x, w; ops::Pair st, pd, dl; int64_t groups; };
  for (const auto& c : {Case{{1, 13, 13, 3}, {3, 3, 3, 8}, {1, 1}, {1, 1}, {1, 1}, 1},
                        Case{{1, 11, 13, 4}, {3, 2, 2, 6}, {2, 2}, {1, 0}, {1, 2}, 2}}) {
    Tensor X = ph(c.x, "data"), W = ph(c.w, "kernel");
    Tensor Y = ops::conv2d_nhwc(X, W, c.st, c.pd, c.dl, c.groups);
    EXPECT_EQ(Y->op->tag, "conv2d_nhwc");
    Inputs in;
    Ref x = in.add(X), w = in.add(W);
    // NHWC -> NCHW, RSCK -> KCRS, compute, then NCHW -> NHWC
    Ref want = naive_transpose(
        naive_conv2d_nchw(naive_transpose(x, {0, 3, 1, 2}), naive_transpose(w, {3, 2, 0, 1}), c.st, c.pd, c.dl, c.groups),
        {0, 2, 3, 1});
    expect_close(in.eval(Y), want);
  }
}

TEST(Ops, DepthwiseConv2d) {
  struct Case { Shape x, w; ops::Pair st, pd, dl; };
  for (const auto& c : {Case{{1, 4, 13, 13}, {4, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}},
                        Case{{2, 3, 17, 11}, {3, 2, 3, 3}, {2, 2}, {1, 1}, {1, 2}}}) {
    Tensor X = ph(c.x, "data"), W = ph(c.w, "kernel");
    Tensor Y = ops::depthwise_conv2d_nchw(X, W, c.st, c.pd, c.dl);
    EXPECT_EQ(Y->op->tag, "depthwise_conv2d_nchw");
    Inputs in;
    Ref x = in.add(X), w = in.add(W);
    expect_close(in.eval(Y), naive_depthwise(x, w, c.st, c.pd, c.dl));
  }
}

TEST(Ops, ConvErrors) {
  expect_error([] { ops::conv2d_nchw(ph({1, 3, 8, 8}), ph({4, 2, 3, 3})); },
               {"conv2d_nchw", "1x3x8x8", "4x2x3x3", "input channels"});
  expect_error([] { ops::conv2d_nchw(ph({1, 3, 8}), ph({4, 3, 3, 3})); }, {"conv2d_nchw", "data must be 4-D"});
  expect_error([] { ops::conv2d_nchw(ph({1, 3, 8, 8}), ph({4, 1, 3, 3}), {1, 1}, {0, 0}, {1, 1}, 2); },
               {"conv2d_nchw", "not divisible by groups=2"});
  expect_error([] { ops::conv2d_nchw(ph({1, 3, 2, 8}), ph({4, 3, 3, 3})); }, {"conv2d_nchw", "height"});
  expect_error([] { ops::conv2d_nchw(ph({1, 3, 8, 8}), ph({4, 3, 3, 3}), {0, 1}); }, {"conv2d_nchw", "stride"});
  expect_error([] { ops::conv2d_nchw(ph({1, 3, 8, 8}), ph({4, 3, 3, 3}), {1, 1}, {-1, 0}); }, {"conv2d_nchw", "padding"});
  expect_error([] { ops::conv2d_nhwc(ph({1, 8, 8, 3}), ph({3, 3, 4, 8})); }, {"conv2d_nhwc", "input channels"});
  expect_error([] { ops::depthwise_conv2d_nchw(ph({1, 3, 8, 8}), ph({4, 1, 3, 3})); },
               {"depthwise_conv2d_nchw", "1x3x8x8", "4x1x3x3"});
}

// ---------------------------------------------------------------- pooling

TEST(Ops, MaxPool) {
  struct Case { Shape x; ops::Pair k, st, pd; };
  for (const auto& c : {Case{{1, 3, 13, 13}, {3, 3}, {2, 2}, {1, 1}}, Case{{2, 3, 17, 10}, {2, 3}, {2, 1}, {0, 0}}}) {
    Tensor X = ph(c.x, "data");
    Tensor Y = ops::max_pool2d(X, c.k, c.st, c.pd);
    EXPECT_EQ(Y->op->tag, "pool_max");
    Inputs in;
    // all-negative inputs: padding must not win the max
    Ref x = in.add(X, -3.0, -1.0);
    expect_close(in.eval(Y), naive_pool(x, c.k, c.st, c.pd, PoolKind::kMax));
  }
}

TEST(Ops, AvgPool) {
  struct Case { Shape x; ops::Pair k, st, pd; bool include; };
  for (const auto& c : {Case{{1, 3, 13, 13}, {3, 3}, {2, 2}, {1, 1}, true}, Case{{1, 3, 13, 11}, {3, 2}, {2, 1}, {1, 1}, false},
                        Case{{2, 2, 9, 9}, {2, 2}, {2, 2}, {0, 0}, false}}) {
    SCOPED_TRACE(testing::Message() << "count_include_pad=" << c.include);
    Tensor X = ph(c.x, "data");
    Tensor Y = ops::avg_pool2d(X, c.k, c.st, c.pd, c.include);
    EXPECT_EQ(Y->op->tag, "pool_avg");
    Inputs in;
    Ref x = in.add(X);
    expect_close(in.eval(Y), naive_pool(x, c.k, c.st, c.pd, c.include ? PoolKind::kAvgInclude : PoolKind::kAvgExclude));
  }
}

TEST(Ops, GlobalAvgPool) {
  Tensor X = ph({2, 3, 7, 5}, "data");
  Tensor Y = ops::global_avg_pool2d(X);
  EXPECT_EQ(Y->op->tag, "pool_avg");
  Inputs in;
  Ref x = in.add(X);
  Ref want = naive_pool(x, {7, 5}, {1, 1}, {0, 0}, PoolKind::kAvgInclude);
  expect_close(in.eval(Y), want);
}

TEST(Ops, PoolErrors) {
  expect_error([] { ops::max_pool2d(ph({1, 3, 8}), {2, 2}); }, {"max_pool2d", "4-D"});
  expect_error([] { ops::max_pool2d(ph({1, 3, 8, 8}), {2, 2}, {1, 1}, {2, 0}); }, {"max_pool2d", "padding", "kernel"});
  expect_error([] { ops::avg_pool2d(ph({1, 3, 2, 8}), {3, 3}); }, {"avg_pool2d", "height"});
  expect_error([] { ops::avg_pool2d(ph({1, 3, 8, 8}), {0, 3}); }, {"avg_pool2d", "kernel"});
}

// ---------------------------------------------------------------- normalization

TEST(Ops, Softmax) {
  struct Case { Shape x; int axis; };
  for (const auto& c : {Case{{5, 17}, -1}, Case{{13, 3, 4}, 0}, Case{{3, 13, 4}, 1}, Case{{30}, 0}}) {
    SCOPED_TRACE(testing::Message() << "axis=" << c.axis);
    Tensor X = ph(c.x, "x");
    Tensor Y = ops::softmax(X, c.axis);
    EXPECT_EQ(Y->op->tag, "softmax");
    Inputs in;
    Ref x = in.add(X, -4.0, 4.0);
    int ax = c.axis < 0 ? c.axis + int(c.x.size()) : c.axis;
    expect_close(in.eval(Y), naive_softmax(x, ax));
  }
  // several stages: a max-reduce and a sum-reduce
  Tensor Y = ops::softmax(ph({4, 6}));
  std::set<std::string> names;
  for (const auto& op : te::post_dfs_order({Y})) names.insert(op->name);
  for (const char* s : {"softmax_maxelem", "softmax_exp", "softmax_expsum", "softmax"}) EXPECT_TRUE(names.count(s)) << s;
}

TEST(Ops, LayerNorm) {
  for (const Shape& s : {Shape{5, 17}, Shape{2, 3, 30}}) {
    Tensor X = ph(s, "x"), G = ph({s.back()}, "gamma"), B = ph({s.back()}, "beta");
    Tensor Y = ops::layer_norm(X, G, B);
    EXPECT_EQ(Y->op->tag, "layer_norm");
    Inputs in;
    Ref x = in.add(X, -2.0, 3.0), g = in.add(G), b = in.add(B);
    expect_close(in.eval(Y), naive_layer_norm(x, g, b, int(s.size()) - 1, 1e-5), 2e-4);
  }
}

TEST(Ops, NormalizationErrors) {
  expect_error([] { ops::softmax(ph({4, 5}), 2); }, {"softmax", "axis 2"});
  expect_error([] { ops::softmax(ph({4, 5}, "x", DataType::Int(32))); }, {"softmax", "int32"});
  expect_error([] { ops::layer_norm(ph({4, 5}), ph({4}, "gamma"), ph({5}, "beta")); }, {"layer_norm", "gamma", "4x5"});
  expect_error([] { ops::layer_norm(ph({4, 5}), ph({5}, "gamma"), ph({5, 1}, "beta")); }, {"layer_norm", "beta", "5x1"});
}

// ---------------------------------------------------------------- elementwise and broadcast

TEST(Ops, BroadcastBinary) {
  using Op = Tensor (*)(const Tensor&, const Tensor&, const std::string&);
  struct Case { const char* name; Op op; std::function<double(double, double)> f; };
  std::vector<Case> cases = {
      {"add", ops::add, [](double a, double b) { return a + b; }},
      {"subtract", ops::subtract, [](double a, double b) { return a - b; }},
      {"multiply", ops::multiply, [](double a, double b) { return a * b; }},
      {"divide", ops::divide, [](double a, double b) { return a / b; }},
      {"maximum", ops::maximum, [](double a, double b) { return std::max(a, b); }},
      {"minimum", ops::minimum, [](double a, double b) { return std::min(a, b); }},
  };
  struct Shapes { Shape a, b, out; };
  for (const auto& c : cases)
    for (const auto& s : {Shapes{{13, 17}, {13, 17}, {13, 17}}, Shapes{{13, 1, 17}, {5, 17}, {13, 5, 17}},
                          Shapes{{30}, {13, 1}, {13, 30}}, Shapes{{3, 13, 17}, {1}, {3, 13, 17}}}) {
      SCOPED_TRACE(c.name);
      Tensor A = ph(s.a, "a"), B = ph(s.b, "b");
      Tensor C = c.op(A, B, c.name);
      EXPECT_EQ(C->op->tag, "broadcast");
      EXPECT_EQ(shape_of(C), s.out);
      Inputs in;
      Ref a = in.add(A), b = in.add(B, 0.5, 2.0);
      expect_close(in.eval(C), naive_broadcast(a, b, s.out, c.f));
    }
  expect_error([] { ops::add(ph({13, 17}), ph({13, 16})); }, {"add", "13x17", "13x16", "17 and 16"});
  expect_error([] { ops::multiply(ph({3}), ph({3}, "y", DataType::Int(32))); }, {"multiply", "float32", "int32"});
}

TEST(Ops, BiasAdd) {
  for (int axis : {1, -1}) {
    Tensor D = ph({2, 13, 5, 4}, "data");
    int64_t n = axis == 1 ? 13 : 4;
    Tensor b = ph({n}, "bias");
    Tensor Y = ops::bias_add(D, b, axis);
    EXPECT_EQ(Y->op->tag, "broadcast");
    Inputs in;
    Ref d = in.add(D), bias = in.add(b);
    Ref want = d;
    for (int64_t i = 0; i < numel(d.shape); ++i) want.v[size_t(i)] += bias.v[size_t(d.unravel(i)[axis == 1 ? 1 : 3])];
    expect_close(in.eval(Y), want);
  }
  expect_error([] { ops::bias_add(ph({2, 13, 5}), ph({5}, "bias")); }, {"bias_add", "2x13x5", "axis 1"});
  expect_error([] { ops::bias_add(ph({2, 13}), ph({13}, "bias"), 3); }, {"bias_add", "axis 3"});
}

TEST(Ops, Unary) {
  struct Case { std::string name; std::function<Tensor(const Tensor&)> op; std::function<double(double)> f; };
  std::vector<Case> cases = {
      {"relu", [](const Tensor& x) { return ops::relu(x); }, [](double v) { return std::max(v, 0.0); }},
      {"clip", [](const Tensor& x) { return ops::clip(x, -0.5, 0.25); },
       [](double v) { return std::min(std::max(v, -0.5), 0.25); }},
      {"exp", [](const Tensor& x) { return ops::exp(x); }, [](double v) { return std::exp(v); }},
      {"tanh", [](const Tensor& x) { return ops::tanh(x); }, [](double v) { return std::tanh(v); }},
      {"sigmoid", [](const Tensor& x) { return ops::sigmoid(x); }, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor X = ph({13, 17}, "x");
    Tensor Y = c.op(X);
    EXPECT_EQ(Y->op->tag, "elemwise");
    EXPECT_EQ(Y->op->name, c.name);
    Inputs in;
    Ref x = in.add(X, -2.0, 2.0);
    expect_close(in.eval(Y), naive_unary(x, c.f));
  }
  expect_error([] { ops::clip(ph({3}), 1.0, 0.0); }, {"clip", "greater"});
}

// ---------------------------------------------------------------- transforms

TEST(Ops, Transpose) {
  Tensor X = ph({3, 13, 17}, "x");
  Tensor Y = ops::transpose(X, {2, 0, 1});
  EXPECT_EQ(Y->op->tag, "injective");
  EXPECT_EQ(shape_of(Y), (Shape{17, 3, 13}));
  Tensor Z = ops::transpose(X);
  EXPECT_EQ(shape_of(Z), (Shape{17, 13, 3}));
  Inputs in;
  Ref x = in.add(X);
  Ref want = x;
  want.shape = {17, 3, 13};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 13; ++j)
      for (int64_t k = 0; k < 17; ++k) want({k, i, j}) = x({i, j, k});
  expect_close(in.eval(Y), want);
  expect_close(in.eval(Z), naive_transpose(x, {2, 1, 0}));
  expect_error([&] { ops::transpose(X, {0, 0, 1}); }, {"transpose", "twice"});
  expect_error([&] { ops::transpose(X, {0, 1}); }, {"transpose", "3-D", "2 axes"});
  expect_error([&] { ops::transpose(X, {0, 1, 3}); }, {"transpose", "axis 3"});
}

TEST(Ops, Reshape) {
  struct Case { Shape in, newshape, out; };
  for (const auto& c : {Case{{13, 30}, {6, -1, 13}, {6, 5, 13}}, Case{{3, 5, 17}, {3, 85}, {3, 85}},
                        Case{{2, 3, 4}, {24}, {24}}, Case{{30}, {5, 1, 6}, {5, 1, 6}}}) {
    Tensor X = ph(c.in, "x");
    Tensor Y = ops::reshape(X, c.newshape);
    EXPECT_EQ(Y->op->tag, "injective");
    EXPECT_EQ(shape_of(Y), c.out);
    Inputs in;
    Ref x = in.add(X);
    Ref want = x;
    want.shape = c.out;
    expect_close(in.eval(Y), want);
  }
  expect_error([] { ops::reshape(ph({13, 30}), {13, 31}); }, {"reshape", "13x30", "390", "403"});
  expect_error([] { ops::reshape(ph({13, 30}), {-1, 7}); }, {"reshape", "390", "7"});
  expect_error([] { ops::reshape(ph({13, 30}), {-1, -1}); }, {"reshape", "more than one -1"});
}

TEST(Ops, Pad) {
  Tensor X = ph({13, 17}, "x");
  Tensor Y = ops::pad(X, {1, 2}, {3, 0}, 0.5);
  EXPECT_EQ(Y->op->tag, "injective");
  EXPECT_EQ(Y->op->name, "pad");
  EXPECT_EQ(shape_of(Y), (Shape{17, 19}));
  Inputs in;
  Ref x = in.add(X);
  Ref want({17, 19});
  for (int64_t i = 0; i < 17; ++i)
    for (int64_t j = 0; j < 19; ++j) {
      bool inside = i >= 1 && i < 14 && j >= 2;
      want({i, j}) = inside ? x({i - 1, j - 2}) : 0.5;
    }
  expect_close(in.eval(Y), want);

  Tensor Z = ops::pad(X, {0, 1});  // after defaults to before, value to zero
  EXPECT_EQ(shape_of(Z), (Shape{13, 19}));
  Ref want2({13, 19});
  for (int64_t i = 0; i < 13; ++i)
    for (int64_t j = 1; j < 18; ++j) want2({i, j}) = x({i, j - 1});
  expect_close(in.eval(Z), want2);

  expect_error([&] { ops::pad(X, {1}); }, {"pad", "2-D", "1 'before'"});
  expect_error([&] { ops::pad(X, {1, -1}); }, {"pad", "non-negative"});
}

TEST(Ops, Concat) {
  Tensor a = ph({13, 5}, "a"), b = ph({13, 7}, "b"), d = ph({13, 1}, "d");
  Tensor Y = ops::concat({a, b, d}, 1);
  EXPECT_EQ(Y->op->tag, "injective");
  EXPECT_EQ(shape_of(Y), (Shape{13, 13}));
  Inputs in;
  Ref ra = in.add(a), rb = in.add(b), rd = in.add(d);
  Ref want({13, 13});
  for (int64_t i = 0; i < 13; ++i)
    for (int64_t j = 0; j < 13; ++j) want({i, j}) = j < 5 ? ra({i, j}) : j < 12 ? rb({i, j - 5}) : rd({i, 0});
  expect_close(in.eval(Y), want);

  Tensor p = ph({3, 17}, "p"), q = ph({10, 17}, "q");
  Tensor Z = ops::concat({p, q}, -2);
  Ref rp = in.add(p), rq = in.add(q);
  Ref want2({13, 17});
  std::copy(rp.v.begin(), rp.v.end(), want2.v.begin());
  std::copy(rq.v.begin(), rq.v.end(), want2.v.begin() + 3 * 17);
  expect_close(in.eval(Z), want2);

  expect_error([&] { ops::concat({a, p}, 1); }, {"concat", "13x5", "3x17", "concat axis 1"});
  expect_error([] { ops::concat({}, 0); }, {"concat", "no input"});
  expect_error([&] { ops::concat({a, b}, 2); }, {"concat", "axis 2"});
}

// ---------------------------------------------------------------- the registry

TEST(Ops, TestCasesCoverEveryOpAndEvaluate) {
  auto cases = ops::test_cases();
  std::set<std::string> tags, names;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name";
    std::vector<Tensor> ts = c.make();
    ASSERT_GE(ts.size(), 2u);
    // placeholders first, then the outputs
    size_t first_out = 0;
    while (first_out < ts.size() && ts[first_out]->op->kind == te::OpKind::kPlaceholder) ++first_out;
    ASSERT_GT(first_out, 0u);
    ASSERT_LT(first_out, ts.size());
    for (size_t i = first_out; i < ts.size(); ++i) EXPECT_EQ(ts[i]->op->kind, te::OpKind::kCompute);
    std::vector<Tensor> outs(ts.begin() + first_out, ts.end());
    for (const auto& op : te::post_dfs_order(outs)) {
      tags.insert(op->tag);
      if (op->kind == te::OpKind::kPlaceholder) {
        EXPECT_TRUE(std::find(ts.begin(), ts.begin() + first_out, te::output(op)) != ts.begin() + first_out)
            << "placeholder " << op->name << " is not listed as an input";
      }
    }
    Inputs in;
    for (size_t i = 0; i < first_out; ++i) in.add(ts[i], 0.5, 1.5);
    for (const auto& out : outs) {
      NDArray r = in.eval(out);
      EXPECT_EQ(r.shape(), shape_of(out));
      for (int64_t i = 0; i < r.numel(); ++i) ASSERT_TRUE(std::isfinite(r.get(i))) << "element " << i;
    }
  }
  for (const char* t : {"matmul", "batch_matmul", "dense", "conv2d_nchw", "conv2d_nhwc", "depthwise_conv2d_nchw",
                        "pool_max", "pool_avg", "pool_sum", "softmax", "layer_norm", "elemwise", "broadcast", "injective",
                        "conv2d_nchwc", "depthwise_conv2d_nchwc", "reduce"})
    EXPECT_TRUE(tags.count(t)) << "no test case has a stage tagged " << t;
  // shapes that common split factors do not divide
  bool odd = false;
  for (const auto& c : cases)
    for (const auto& t : c.make())
      for (int64_t e : shape_of(t)) odd |= e == 13 || e == 17;
  EXPECT_TRUE(odd);
}

}  // namespace
