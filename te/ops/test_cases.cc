// Small instances of every op for tests and schedule fuzzers. Extents such as 13, 17 and 30
// are chosen so that common split factors (2, 4, 8, 16) do not divide them.
#include "loom/te/ops.h"

namespace loom::te::ops {

namespace {

Tensor ph(std::vector<Expr> shape, std::string name) { return placeholder(std::move(shape), DataType::Float(32), std::move(name)); }

}  // namespace

std::vector<OpCase> test_cases() {
  std::vector<OpCase> c;
  auto add_case = [&](std::string name, std::function<std::vector<Tensor>()> make) {
    c.push_back({std::move(name), std::move(make)});
  };

  // matmul family
  add_case("matmul", [] { auto A = ph({13, 17}, "A"), B = ph({17, 30}, "B"); return std::vector{A, B, matmul(A, B)}; });
  add_case("matmul_ta", [] { auto A = ph({17, 13}, "A"), B = ph({17, 30}, "B"); return std::vector{A, B, matmul(A, B, true)}; });
  add_case("matmul_tb", [] { auto A = ph({13, 17}, "A"), B = ph({30, 17}, "B"); return std::vector{A, B, matmul(A, B, false, true)}; });
  add_case("matmul_ta_tb", [] { auto A = ph({17, 13}, "A"), B = ph({30, 17}, "B"); return std::vector{A, B, matmul(A, B, true, true)}; });
  add_case("batch_matmul", [] { auto A = ph({3, 13, 17}, "A"), B = ph({3, 17, 5}, "B"); return std::vector{A, B, batch_matmul(A, B)}; });
  add_case("batch_matmul_tb", [] { auto A = ph({2, 13, 17}, "A"), B = ph({2, 6, 17}, "B"); return std::vector{A, B, batch_matmul(A, B, false, true)}; });
  add_case("batch_matmul_bcast", [] { auto A = ph({3, 5, 17}, "A"), B = ph({1, 17, 13}, "B"); return std::vector{A, B, batch_matmul(A, B)}; });
  add_case("dense", [] { auto X = ph({5, 17}, "data"), W = ph({13, 17}, "weight"); return std::vector{X, W, dense(X, W)}; });
  add_case("dense_pack", [] {
    auto X = ph({5, 17}, "data"), W = ph({2, 17, 8}, "packed_weight");
    return std::vector{X, W, dense_pack(X, W, 13)};
  });
  add_case("dense_bias", [] {
    auto X = ph({5, 17}, "data"), W = ph({13, 17}, "weight"), b = ph({13}, "bias");
    return std::vector{X, W, b, dense(X, W, b)};
  });

  // convolution
  add_case("conv2d_nchw", [] {
    auto D = ph({1, 3, 13, 13}, "data"), K = ph({8, 3, 3, 3}, "kernel");
    return std::vector{D, K, conv2d_nchw(D, K, {1, 1}, {1, 1})};
  });
  add_case("conv2d_nchw_stride_dilate", [] {
    auto D = ph({2, 3, 17, 13}, "data"), K = ph({5, 3, 3, 2}, "kernel");
    return std::vector{D, K, conv2d_nchw(D, K, {2, 1}, {1, 2}, {2, 1})};
  });
  add_case("conv2d_nchw_groups", [] {
    auto D = ph({1, 4, 9, 9}, "data"), K = ph({6, 2, 3, 3}, "kernel");
    return std::vector{D, K, conv2d_nchw(D, K, {1, 1}, {0, 0}, {1, 1}, 2)};
  });
  add_case("conv2d_nhwc", [] {
    auto D = ph({1, 13, 13, 3}, "data"), K = ph({3, 3, 3, 8}, "kernel");
    return std::vector{D, K, conv2d_nhwc(D, K, {1, 1}, {1, 1})};
  });
  add_case("conv2d_nhwc_stride_groups", [] {
    auto D = ph({1, 11, 13, 4}, "data"), K = ph({3, 2, 2, 6}, "kernel");
    return std::vector{D, K, conv2d_nhwc(D, K, {2, 2}, {1, 0}, {1, 2}, 2)};
  });
  add_case("depthwise_conv2d_nchw", [] {
    auto D = ph({1, 4, 13, 13}, "data"), K = ph({4, 1, 3, 3}, "kernel");
    return std::vector{D, K, depthwise_conv2d_nchw(D, K, {1, 1}, {1, 1})};
  });
  add_case("depthwise_conv2d_nchw_mult", [] {
    auto D = ph({2, 3, 17, 11}, "data"), K = ph({3, 2, 3, 3}, "kernel");
    return std::vector{D, K, depthwise_conv2d_nchw(D, K, {2, 2}, {1, 1}, {1, 2})};
  });

  add_case("conv2d_nchwc", [] {
    auto D = ph({1, 2, 13, 13, 4}, "data"), K = ph({3, 2, 3, 3, 4, 8}, "kernel");
    return std::vector{D, K, conv2d_nchwc(D, K, {1, 1}, {1, 1})};
  });
  add_case("conv2d_nchwc_unblocked_data", [] {
    auto D = ph({1, 3, 17, 11}, "data"), K = ph({2, 3, 3, 3, 8}, "kernel");
    return std::vector{D, K, conv2d_nchwc(D, K, {2, 2}, {1, 1})};
  });
  add_case("depthwise_conv2d_nchwc", [] {
    auto D = ph({1, 3, 13, 13, 4}, "data"), K = ph({3, 1, 3, 3, 1, 4}, "kernel");
    return std::vector{D, K, depthwise_conv2d_nchwc(D, K, {1, 1}, {1, 1})};
  });

  // pooling
  add_case("max_pool2d", [] { auto D = ph({1, 3, 13, 13}, "data"); return std::vector{D, max_pool2d(D, {3, 3}, {2, 2}, {1, 1})}; });
  add_case("max_pool2d_nopad", [] { auto D = ph({2, 3, 17, 10}, "data"); return std::vector{D, max_pool2d(D, {2, 3}, {2, 1})}; });
  add_case("avg_pool2d", [] { auto D = ph({1, 3, 13, 13}, "data"); return std::vector{D, avg_pool2d(D, {3, 3}, {2, 2}, {1, 1})}; });
  add_case("avg_pool2d_exclude_pad", [] {
    auto D = ph({1, 3, 13, 11}, "data");
    return std::vector{D, avg_pool2d(D, {3, 2}, {2, 1}, {1, 1}, false)};
  });
  add_case("global_avg_pool2d", [] { auto D = ph({2, 3, 7, 5}, "data"); return std::vector{D, global_avg_pool2d(D)}; });

  // normalization
  add_case("softmax", [] { auto X = ph({5, 17}, "x"); return std::vector{X, softmax(X)}; });
  add_case("softmax_axis0", [] { auto X = ph({13, 3, 4}, "x"); return std::vector{X, softmax(X, 0)}; });
  add_case("softmax_1d", [] { auto X = ph({30}, "x"); return std::vector{X, softmax(X)}; });
  add_case("layer_norm", [] {
    auto X = ph({5, 17}, "x"), g = ph({17}, "gamma"), b = ph({17}, "beta");
    return std::vector{X, g, b, layer_norm(X, g, b)};
  });
  add_case("layer_norm_3d", [] {
    auto X = ph({2, 3, 30}, "x"), g = ph({30}, "gamma"), b = ph({30}, "beta");
    return std::vector{X, g, b, layer_norm(X, g, b)};
  });

  add_case("batch_norm_nchw4c", [] {
    auto X = ph({1, 2, 5, 7, 4}, "x"), g = ph({8}, "gamma"), b = ph({8}, "beta"), m = ph({8}, "mean"), v = ph({8}, "var");
    return std::vector{X, g, b, m, v, batch_norm(X, g, b, m, v, 1, 1e-5, "NCHW4c")};
  });
  add_case("reduce_sum_axis1", [] { auto X = ph({5, 17, 3}, "x"); return std::vector{X, reduce(X, ReduceKind::kSum, {1})}; });
  add_case("reduce_mean_last_keepdims", [] {
    auto X = ph({13, 17}, "x");
    return std::vector{X, reduce(X, ReduceKind::kMean, {-1}, true)};
  });
  add_case("reduce_max_all", [] { auto X = ph({3, 13}, "x"); return std::vector{X, reduce(X, ReduceKind::kMax)}; });

  // elementwise and broadcast
  add_case("add", [] { auto a = ph({13, 17}, "a"), b = ph({13, 17}, "b"); return std::vector{a, b, add(a, b)}; });
  add_case("add_broadcast", [] { auto a = ph({13, 1, 17}, "a"), b = ph({5, 17}, "b"); return std::vector{a, b, add(a, b)}; });
  add_case("subtract", [] { auto a = ph({30}, "a"), b = ph({13, 1}, "b"); return std::vector{a, b, subtract(a, b)}; });
  add_case("multiply", [] { auto a = ph({3, 13, 17}, "a"), b = ph({1}, "b"); return std::vector{a, b, multiply(a, b)}; });
  add_case("divide", [] { auto a = ph({13, 17}, "a"), b = ph({13, 17}, "b"); return std::vector{a, b, divide(a, b)}; });
  add_case("maximum", [] { auto a = ph({13, 17}, "a"), b = ph({17}, "b"); return std::vector{a, b, maximum(a, b)}; });
  add_case("minimum", [] { auto a = ph({13, 1}, "a"), b = ph({1, 17}, "b"); return std::vector{a, b, minimum(a, b)}; });
  add_case("bias_add", [] { auto d = ph({2, 13, 5, 5}, "data"), b = ph({13}, "bias"); return std::vector{d, b, bias_add(d, b)}; });
  add_case("bias_add_last", [] { auto d = ph({13, 17}, "data"), b = ph({17}, "bias"); return std::vector{d, b, bias_add(d, b, -1)}; });
  add_case("relu", [] { auto x = ph({13, 17}, "x"); return std::vector{x, relu(x)}; });
  add_case("clip", [] { auto x = ph({13, 17}, "x"); return std::vector{x, clip(x, -0.5, 0.25)}; });
  add_case("exp", [] { auto x = ph({13, 17}, "x"); return std::vector{x, exp(x)}; });
  add_case("tanh", [] { auto x = ph({30}, "x"); return std::vector{x, tanh(x)}; });
  add_case("sigmoid", [] { auto x = ph({3, 13}, "x"); return std::vector{x, sigmoid(x)}; });

  add_case("gelu", [] { auto x = ph({13, 17}, "x"); return std::vector{x, gelu(x)}; });
  add_case("power", [] { auto a = ph({13, 17}, "a"), b = ph({17}, "b"); return std::vector{a, b, power(a, b)}; });

  // transforms
  add_case("layout_transform_block", [] {
    auto x = ph({1, 20, 5, 3}, "x");
    return std::vector{x, layout_transform(x, "NCHW", "NCHW16c")};
  });
  add_case("layout_transform_unblock", [] {
    auto x = ph({1, 2, 5, 3, 8}, "x");
    return std::vector{x, layout_transform(x, "NCHW8c", "NCHW", {1, 13, 5, 3})};
  });
  add_case("flatten", [] { auto x = ph({3, 5, 17}, "x"); return std::vector{x, flatten(x)}; });
  add_case("transpose", [] { auto x = ph({3, 13, 17}, "x"); return std::vector{x, transpose(x, {2, 0, 1})}; });
  add_case("transpose_reverse", [] { auto x = ph({13, 30}, "x"); return std::vector{x, transpose(x)}; });
  add_case("reshape", [] { auto x = ph({13, 30}, "x"); return std::vector{x, reshape(x, {6, -1, 13})}; });
  add_case("reshape_flatten", [] { auto x = ph({3, 5, 17}, "x"); return std::vector{x, reshape(x, {3, 85})}; });
  add_case("pad", [] { auto x = ph({13, 17}, "x"); return std::vector{x, pad(x, {1, 2}, {3, 0}, 0.5)}; });
  add_case("concat", [] {
    auto a = ph({13, 5}, "a"), b = ph({13, 7}, "b"), d = ph({13, 1}, "d");
    return std::vector{a, b, d, concat({a, b, d}, 1)};
  });
  add_case("concat_axis0", [] { auto a = ph({3, 17}, "a"), b = ph({10, 17}, "b"); return std::vector{a, b, concat({a, b}, 0)}; });
  add_case("concat_copies", [] {
    auto a = ph({13, 3}, "a"), b = ph({13, 5}, "b");
    return std::vector{a, b, concat({a, a, b, a, a, a}, 1)};
  });

  // the negative log-likelihood loss per element: integer targets (clamped into the classes, one ignored)
  add_case("nll_loss", [] {
    auto x = ph({3, 7, 13}, "input"), w = ph({7}, "weight");
    auto t = placeholder({3, 13}, DataType::Int(64), "target");
    return std::vector{x, t, w, nll_loss(x, t, w, 0)};
  });
  add_case("nll_loss_weight", [] {
    auto t = placeholder({5, 17}, DataType::Int(32), "target");
    auto w = ph({7}, "weight");
    return std::vector{t, w, nll_loss_weight(t, w, 1, DataType::Float(32))};
  });
  return c;
}

}  // namespace loom::te::ops
