// The operator registry: every entry's compute against naive C++ loops (through te::evaluate),
// attribute-schema and type-inference errors, layouts and the per-target strategies.
#include "loom/te/op_registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::DataType;
using loom::te::Tensor;
using loom::te::ops::Attrs;
using loom::te::ops::TensorType;
namespace te = loom::te;
namespace ops = loom::te::ops;

/// The registry's compute of `op` (attributes normalized) on `inputs`; its only output.
TensorType tt(Shape s, std::string layout = "", DataType t = DataType::Float(32)) {
  return TensorType{std::move(s), t, std::move(layout)};
}

// ---------------------------------------------------------------- blocked-layout helpers

/// [N, C/b, H, W, b] -> [N, C, H, W] (C = blocks * b).
Ref unblock_nchwc(const Ref& x) {
  int64_t N = x.shape[0], CB = x.shape[1], H = x.shape[2], W = x.shape[3], b = x.shape[4];
  Ref out({N, CB * b, H, W});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < CB * b; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) out({n, c, h, w}) = x({n, c / b, h, w, c % b});
  return out;
}

/// [K/ob, C/ib, R, S, ib, ob] -> [K, C, R, S].
Ref unblock_oihw(const Ref& k) {
  int64_t KB = k.shape[0], CB = k.shape[1], R = k.shape[2], S = k.shape[3], ib = k.shape[4], ob = k.shape[5];
  Ref out({KB * ob, CB * ib, R, S});
  for (int64_t o = 0; o < KB * ob; ++o)
    for (int64_t i = 0; i < CB * ib; ++i)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s) out({o, i, r, s}) = k({o / ob, i / ib, r, s, i % ib, o % ob});
  return out;
}

Ref ref_of(const loom::runtime::NDArray& a) {
  Ref r(a.shape());
  for (int64_t i = 0; i < a.numel(); ++i) r.v[size_t(i)] = a.get(i);
  return r;
}

Ref add_bias(Ref x, const Ref& bias, int axis) {
  for (int64_t f = 0; f < numel(x.shape); ++f) x.v[size_t(f)] += bias.v[size_t(x.unravel(f)[size_t(axis)])];
  return x;
}

/// x padded with zeros on dims 2 and 3 (top, left, bottom, right).
Ref pad_hw(const Ref& x, int64_t t, int64_t l, int64_t b, int64_t r) {
  Ref out({x.shape[0], x.shape[1], x.shape[2] + t + b, x.shape[3] + l + r});
  for (int64_t f = 0; f < numel(x.shape); ++f) {
    Shape i = x.unravel(f);
    out({i[0], i[1], i[2] + t, i[3] + l}) = x.v[size_t(f)];
  }
  return out;
}

// ---------------------------------------------------------------- the registry itself

TEST(OpRegistry, HasEveryOperatorOfTheGraphAndOnnxIssues) {
  std::set<std::string> names;
  for (const auto& n : ops::op_names()) names.insert(n);
  for (const char* n :
       {"conv2d", "conv2d_nchwc", "depthwise_conv2d_nchwc", "dense", "dense_pack", "matmul", "batch_matmul",
        "batch_norm", "relu", "clip", "sigmoid", "tanh", "exp", "sqrt", "erf", "gelu", "pow", "add", "subtract",
        "multiply", "divide", "maximum", "minimum", "bias_add", "max_pool2d", "avg_pool2d", "global_avg_pool2d",
        "softmax", "layer_norm", "reduce_sum", "reduce_mean", "reduce_max", "flatten", "reshape", "squeeze",
        "unsqueeze", "transpose", "concat", "pad", "take", "cast", "layout_transform"})
    EXPECT_TRUE(names.count(n)) << "no operator " << n;
  for (const auto& n : names) {
    const ops::OpDef& d = ops::get_op(n);
    EXPECT_FALSE(d.doc.empty()) << n;
    EXPECT_FALSE(d.inputs.empty()) << n;
    EXPECT_TRUE(static_cast<bool>(d.compute)) << n;
  }
  EXPECT_EQ(ops::get_op("conv2d").pattern, ops::OpPattern::kOutEWiseFusable);
  EXPECT_EQ(ops::get_op("relu").pattern, ops::OpPattern::kElemwise);
  EXPECT_EQ(ops::get_op("add").pattern, ops::OpPattern::kBroadcast);
  EXPECT_EQ(ops::get_op("transpose").pattern, ops::OpPattern::kInjective);
  EXPECT_EQ(ops::get_op("reduce_sum").pattern, ops::OpPattern::kCommReduce);
  EXPECT_EQ(ops::get_op("softmax").pattern, ops::OpPattern::kOpaque);
  EXPECT_STREQ(ops::to_string(ops::OpPattern::kOutEWiseFusable), "out_elemwise_fusable");
  EXPECT_EQ(ops::find_op("no_such_op"), nullptr);
  expect_error([] { ops::get_op("conv4d"); }, {"no operator 'conv4d'", "conv2d"});
}

TEST(OpRegistry, RegisterOpAddsAndReplaces) {
  ops::OpDef d;
  d.name = "test_double";
  d.doc = "2x";
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.pattern = ops::OpPattern::kElemwise;
  d.compute = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
    return {ops::multiply(in[0], in[0])};
  };
  ops::register_op(d);
  d.compute = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> { return {ops::add(in[0], in[0])}; };
  ops::register_op(d);
  Tensor X = ph({3}, "x");
  Inputs in;
  Ref x = in.add(X);
  expect_close(in.eval(reg("test_double", {X})), naive_unary(x, [](double v) { return 2 * v; }));
  expect_error([] { ops::register_op(ops::OpDef{}); }, {"needs a name"});
  ops::OpDef bad = d;
  bad.attrs = {ops::AttrSpec{"axis", ops::AttrKind::kInt, std::string("one"), ""}};
  expect_error([&] { ops::register_op(bad); }, {"test_double", "axis", "must be int"});
}

TEST(OpRegistry, AttributeSchemaErrors) {
  const ops::OpDef& conv = ops::get_op("conv2d");
  expect_error([&] { ops::normalize_attrs(conv, {{"stride", std::vector<int64_t>{2, 2}}}, "node 'c1'"); },
               {"node 'c1'", "operator 'conv2d'", "no attribute 'stride'", "strides"});
  expect_error([&] { ops::normalize_attrs(conv, {{"groups", std::string("2")}}); },
               {"operator 'conv2d'", "'groups'", "must be int", "string"});
  expect_error([&] { ops::normalize_attrs(conv, {{"layout", int64_t(1)}}); }, {"'layout'", "must be string"});
  expect_error([] { ops::normalize_attrs(ops::get_op("clip"), {{"min", 0.0}}); },
               {"operator 'clip'", "required attribute 'max'", "missing"});
  expect_error([] { ops::normalize_attrs(ops::get_op("reshape"), {}); }, {"reshape", "newshape"});
  // Defaults fill in; ints convert to floats, and an integral float to an int.
  Attrs a = ops::normalize_attrs(conv, {{"groups", 2.0}});
  EXPECT_EQ(ops::attr_int(a, "groups"), 2);
  EXPECT_EQ(ops::attr_ints(a, "strides"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ops::attr_str(a, "layout"), "NCHW");
  Attrs c = ops::normalize_attrs(ops::get_op("clip"), {{"min", int64_t(0)}, {"max", 6.0}});
  EXPECT_EQ(ops::attr_float(c, "min"), 0.0);
  expect_error([&] { ops::normalize_attrs(conv, {{"groups", 1.5}}); }, {"'groups'", "must be int"});
  expect_error([&] { ops::attr_str(a, "groups"); }, {"'groups'", "must be string"});
  expect_error([&] { ops::attr_int(a, "nope"); }, {"'nope'", "missing"});
  EXPECT_EQ(ops::to_string(ops::AttrValue(std::vector<int64_t>{1, 2})), "[1,2]");
  EXPECT_EQ(ops::to_string(ops::AttrValue(std::string("NCHW"))), "\"NCHW\"");
  // Values that pass the schema but not the operator name it.
  expect_error([] { ops::infer_type("conv2d", {tt({1, 3, 8, 8}), tt({4, 3, 3, 3})}, {{"strides", std::vector<int64_t>{1}}}); },
               {"operator 'conv2d'", "strides", "2 values"});
  expect_error([] { ops::infer_type("conv2d", {tt({1, 3, 8, 8}), tt({4, 3, 3, 3})}, {{"layout", std::string("NCWH")}}); },
               {"operator 'conv2d'", "NCWH"});
}

TEST(OpRegistry, TypeInference) {
  auto t = ops::infer_type("conv2d", {tt({1, 3, 224, 224}), tt({64, 3, 7, 7})},
                           {{"strides", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{3, 3}}});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].shape, (Shape{1, 64, 112, 112}));
  EXPECT_EQ(t[0].layout, "NCHW");
  EXPECT_EQ(ops::to_string(t[0]), "float32[1,64,112,112]@NCHW");
  // Asymmetric padding: 1 on top and left, 2 on bottom and right.
  t = ops::infer_type("conv2d", {tt({1, 3, 8, 8}), tt({4, 3, 3, 3})}, {{"padding", std::vector<int64_t>{1, 1, 2, 2}}});
  EXPECT_EQ(t[0].shape, (Shape{1, 4, 9, 9}));
  t = ops::infer_type("conv2d_nchwc", {tt({1, 4, 56, 56, 16}), tt({2, 4, 3, 3, 16, 32})},
                      {{"padding", std::vector<int64_t>{1, 1}}});
  EXPECT_EQ(t[0].shape, (Shape{1, 2, 56, 56, 32}));
  EXPECT_EQ(t[0].layout, "NCHW32c");
  // Elementwise and broadcast operators keep the layout of their same-shaped input.
  t = ops::infer_type("add", {tt({1, 4, 5, 5, 16}, "NCHW16c"), tt({1, 4, 1, 1, 16})}, {});
  EXPECT_EQ(t[0].layout, "NCHW16c");
  t = ops::infer_type("relu", {tt({2, 3}, "NC")}, {});
  EXPECT_EQ(t[0].layout, "NC");
  t = ops::infer_type("layout_transform", {tt({1, 20, 5, 5}, "NCHW")},
                      {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW16c")}});
  EXPECT_EQ(t[0].shape, (Shape{1, 2, 5, 5, 16}));
  EXPECT_EQ(t[0].layout, "NCHW16c");
  t = ops::infer_type("concat", {tt({2, 3}), tt({2, 5}), tt({2, 1})}, {{"axis", int64_t(1)}});
  EXPECT_EQ(t[0].shape, (Shape{2, 9}));
  t = ops::infer_type("cast", {tt({4})}, {{"dtype", std::string("int32")}});
  EXPECT_EQ(t[0].dtype, DataType::Int(32));
  t = ops::infer_type("dense", {tt({8, 512}), tt({1000, 512}), tt({1000})}, {});
  EXPECT_EQ(t[0].shape, (Shape{8, 1000}));

  // Errors name the operator, the input types and what does not fit.
  expect_error([] { ops::infer_type("conv2d", {tt({1, 3, 8, 8}), tt({4, 2, 3, 3})}, {}); },
               {"operator 'conv2d'", "float32[1,3,8,8]", "input channels"});
  expect_error([] { ops::infer_type("dense", {tt({8, 512})}, {}); },
               {"operator 'dense'", "2 to 3", "data, weight, bias", "got 1"});
  expect_error([] { ops::infer_type("relu", {tt({2}), tt({2})}, {}); }, {"operator 'relu'", "1 input", "got 2"});
  expect_error([] { ops::infer_type("concat", {}, {}); }, {"operator 'concat'", "at least 1"});
  expect_error([] { ops::infer_type("add", {tt({2, 3}), tt({4})}, {}); }, {"operator 'add'", "broadcast"});
  expect_error([] { ops::infer_type("add", {tt({2}), tt({2}, "", DataType::Int(32))}, {}); },
               {"operator 'add'", "dtypes must match"});
  expect_error([] { ops::infer_type("conv2d_nchwc", {tt({1, 4, 8, 8, 16}, "NCHW8c"), tt({2, 4, 3, 3, 16, 16})}, {}); },
               {"operator 'conv2d_nchwc'", "NCHW8c", "NCHW16c"});
  expect_error([] { ops::infer_type("max_pool2d", {tt({1, 4, 8, 8})}, {}); }, {"max_pool2d", "pool_size", "missing"});
  expect_error([] { ops::infer_type("reshape", {tt({2, 6})}, {{"newshape", std::vector<int64_t>{5, -1}}}); },
               {"operator 'reshape'", "12 elements"});
  expect_error([] { ops::infer_type("relu", {tt({2, 0})}, {}); }, {"operator 'relu'", "extent 0"});
}

TEST(OpRegistry, ApplyOpAndSelectTemplate) {
  Tensor X = ph({1, 3, 8, 8}, "x"), W = ph({4, 3, 3, 3}, "w");
  std::vector<Tensor> out = ops::apply_op("conv2d", {X, W}, {{"padding", std::vector<int64_t>{1, 1}}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(shape_of(out[0]), (Shape{1, 4, 8, 8}));
  expect_error([&] { ops::apply_op("conv2d", {X}, {}); }, {"operator 'conv2d'", "got 1"});
  expect_error([&] { ops::apply_op("conv2d", {X, ph({4, 2, 3, 3}, "w2")}, {}); }, {"operator 'conv2d'", "input channels"});
  expect_error([&] { ops::apply_op("conv2d", {X, W}, {{"pad", int64_t(1)}}); }, {"operator 'conv2d'", "no attribute 'pad'"});
  auto c = ops::select_template("conv2d", "llvm", {tt({1, 3, 8, 8}), tt({4, 3, 3, 3})}, {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "conv2d_nchw");
  EXPECT_EQ(c->attrs, (std::map<std::string, std::string>{{"pad", "0"}, {"stride", "1"}}));
  EXPECT_FALSE(ops::select_template("relu", "llvm", {tt({4})}, {}));
  EXPECT_FALSE(ops::select_template("relu", "cuda", {tt({4})}, {}));
  // dense has a GPU template (tuner/templates/cuda_gemm.cc): N, M, K.
  auto d = ops::select_template("dense", "cuda", {tt({4, 8}), tt({2, 8})}, {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->name, "dense");
  EXPECT_EQ(d->shape, (std::vector<int64_t>{4, 2, 8}));
}

// ---------------------------------------------------------------- convolutions

TEST(OpRegistry, Conv2d) {
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, padding, dilation;
    int64_t groups;
    bool bias;
  };
  for (const auto& c : {Case{{1, 3, 13, 13}, {8, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
                        Case{{2, 3, 17, 13}, {5, 3, 3, 2}, {2, 1}, {1, 2}, {2, 1}, 1, false},
                        Case{{1, 4, 9, 9}, {6, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 2, true},
                        Case{{1, 6, 7, 8}, {6, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 6, true},   // depthwise
                        Case{{1, 3, 9, 10}, {4, 3, 3, 3}, {2, 2}, {0, 1, 2, 1}, {1, 1}, 1, false}}) {
    SCOPED_TRACE(testing::Message() << "groups=" << c.groups << " padding=" << c.padding.size());
    Tensor X = ph(c.x, "data"), W = ph(c.w, "weight"), B = ph({c.w[0]}, "bias");
    std::vector<Tensor> args{X, W};
    if (c.bias) args.push_back(B);
    Tensor Y = reg("conv2d", args,
                   {{"strides", c.strides}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}});
    Inputs in;
    Ref x = in.add(X), w = in.add(W), b = in.add(B);
    Ref want;
    if (c.padding.size() == 4) {
      want = naive_conv2d_nchw(pad_hw(x, c.padding[0], c.padding[1], c.padding[2], c.padding[3]), w,
                               {c.strides[0], c.strides[1]}, {0, 0}, {c.dilation[0], c.dilation[1]}, c.groups);
    } else {
      want = naive_conv2d_nchw(x, w, {c.strides[0], c.strides[1]}, {c.padding[0], c.padding[1]},
                               {c.dilation[0], c.dilation[1]}, c.groups);
    }
    if (c.bias) want = add_bias(want, b, 1);
    expect_close(in.eval(Y), want);
  }
  // NHWC with an HWIO weight.
  Tensor X = ph({1, 9, 9, 4}, "data"), W = ph({3, 3, 4, 5}, "weight");
  Tensor Y = reg("conv2d", {X, W}, {{"layout", std::string("NHWC")}, {"padding", std::vector<int64_t>{1, 1}}});
  Inputs in;
  Ref x = in.add(X), w = in.add(W);
  Ref want = naive_transpose(
      naive_conv2d_nchw(naive_transpose(x, {0, 3, 1, 2}), naive_transpose(w, {3, 2, 0, 1}), {1, 1}, {1, 1}, {1, 1}, 1),
      {0, 2, 3, 1});
  expect_close(in.eval(Y), want);
}

TEST(OpRegistry, Conv2dNchwc) {
  struct Case {
    Shape x, w;  // blocked
    int64_t stride, pad, dil;
  };
  for (const auto& c : {Case{{1, 2, 9, 9, 4}, {3, 2, 3, 3, 4, 2}, 1, 1, 1}, Case{{2, 1, 11, 10, 3}, {1, 1, 3, 3, 3, 8}, 2, 1, 1},
                        Case{{1, 3, 9, 9, 2}, {2, 3, 3, 3, 2, 4}, 1, 2, 2}}) {
    SCOPED_TRACE(testing::Message() << "ib=" << c.x[4] << " ob=" << c.w[5]);
    Tensor X = ph(c.x, "data"), W = ph(c.w, "weight"), B = ph({c.w[0] * c.w[5]}, "bias");
    Tensor Y = reg("conv2d_nchwc", {X, W, B},
                   {{"layout", "NCHW" + std::to_string(c.x[4]) + "c"},
                    {"strides", std::vector<int64_t>{c.stride, c.stride}},
                    {"padding", std::vector<int64_t>{c.pad, c.pad}},
                    {"dilation", std::vector<int64_t>{c.dil, c.dil}}});
    Inputs in;
    Ref x = in.add(X), w = in.add(W), b = in.add(B);
    Ref want = add_bias(naive_conv2d_nchw(unblock_nchwc(x), unblock_oihw(w), {c.stride, c.stride}, {c.pad, c.pad},
                                          {c.dil, c.dil}, 1),
                        b, 1);
    Ref got = unblock_nchwc(ref_of(in.eval(Y)));
    ASSERT_EQ(got.shape, want.shape);
    for (size_t i = 0; i < got.v.size(); ++i) ASSERT_NEAR(got.v[i], want.v[i], 1e-4 * (1 + std::abs(want.v[i]))) << i;
  }
  // Unblocked data with an OIHW{ob}o weight (the conv2d_nchw template's blocked compute).
  Tensor X = ph({1, 3, 8, 8}, "data"), W = ph({2, 3, 3, 3, 4}, "weight");
  Tensor Y = reg("conv2d_nchwc", {X, W}, {{"layout", std::string("NCHW")}, {"padding", std::vector<int64_t>{1, 1}}});
  Inputs in;
  Ref x = in.add(X), w = in.add(W);
  Ref wk({8, 3, 3, 3});
  for (int64_t o = 0; o < 8; ++o)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t s = 0; s < 3; ++s) wk({o, i, r, s}) = w({o / 4, i, r, s, o % 4});
  Ref got = unblock_nchwc(ref_of(in.eval(Y))), want = naive_conv2d_nchw(x, wk, {1, 1}, {1, 1}, {1, 1}, 1);
  for (size_t i = 0; i < got.v.size(); ++i) ASSERT_NEAR(got.v[i], want.v[i], 1e-4 * (1 + std::abs(want.v[i]))) << i;
}

TEST(OpRegistry, DepthwiseConv2dNchwc) {
  for (int64_t stride : {1, 2}) {
    Tensor X = ph({1, 2, 11, 9, 4}, "data"), W = ph({2, 1, 3, 3, 1, 4}, "weight");
    Tensor Y = reg("depthwise_conv2d_nchwc", {X, W},
                   {{"layout", std::string("NCHW4c")}, {"strides", std::vector<int64_t>{stride, stride}},
                    {"padding", std::vector<int64_t>{1, 1}}});
    Inputs in;
    Ref x = in.add(X), w = in.add(W);
    Ref wk({8, 1, 3, 3});
    for (int64_t c = 0; c < 8; ++c)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t s = 0; s < 3; ++s) wk({c, 0, r, s}) = w({c / 4, 0, r, s, 0, c % 4});
    Ref got = unblock_nchwc(ref_of(in.eval(Y)));
    Ref want = naive_depthwise(unblock_nchwc(x), wk, {stride, stride}, {1, 1}, {1, 1});
    ASSERT_EQ(got.shape, want.shape);
    for (size_t i = 0; i < got.v.size(); ++i) ASSERT_NEAR(got.v[i], want.v[i], 1e-4 * (1 + std::abs(want.v[i]))) << i;
  }
  expect_error([] { ops::infer_type("depthwise_conv2d_nchwc", {tt({1, 2, 8, 8, 4}), tt({2, 1, 3, 3, 1, 8})}, {{"layout", std::string("NCHW4c")}}); },
               {"depthwise_conv2d_nchwc", "one filter per channel"});
}

// ---------------------------------------------------------------- dense and matmul

TEST(OpRegistry, DenseDensePackMatmulBatchMatmul) {
  Tensor X = ph({5, 17}, "data"), W = ph({13, 17}, "weight"), B = ph({13}, "bias");
  Inputs in;
  Ref x = in.add(X), w = in.add(W), b = in.add(B);
  expect_close(in.eval(reg("dense", {X, W, B})), add_bias(naive_matmul(x, w, false, true), b, 1));
  expect_close(in.eval(reg("dense", {X, W})), naive_matmul(x, w, false, true));

  // dense_pack reads the weight packed by layout_transform "OI" -> "OI16o" (13 units: one
  // zero-padded block).
  Tensor P = reg("layout_transform", {W}, {{"src_layout", std::string("OI")}, {"dst_layout", std::string("OI16o")}});
  EXPECT_EQ(shape_of(P), (Shape{1, 17, 16}));
  Tensor D = reg("dense_pack", {X, P, B}, {{"units", int64_t(13)}});
  expect_close(in.eval(D), add_bias(naive_matmul(x, w, false, true), b, 1));
  expect_error([&] { reg("dense_pack", {X, P}, {{"units", int64_t(17)}}); }, {"dense_pack", "17 units"});

  Tensor A = ph({13, 17}, "a"), Bm = ph({17, 30}, "b"), Bt = ph({30, 17}, "bt");
  Ref a = in.add(A), bm = in.add(Bm), bt = in.add(Bt);
  expect_close(in.eval(reg("matmul", {A, Bm})), naive_matmul(a, bm, false, false));
  expect_close(in.eval(reg("matmul", {A, Bt}, {{"transpose_b", int64_t(1)}})), naive_matmul(a, bt, false, true));

  Tensor BA = ph({3, 5, 7}, "ba"), BB = ph({3, 7, 4}, "bb");
  Ref ba = in.add(BA), bb = in.add(BB);
  Ref want({3, 5, 4});
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 7; ++k) want({n, i, j}) += ba({n, i, k}) * bb({n, k, j});
  expect_close(in.eval(reg("batch_matmul", {BA, BB})), want);
  // batch_matmul_pack over B packed by layout_transform "BKN" -> "BNK16n".
  Tensor PB = reg("layout_transform", {BB}, {{"src_layout", std::string("BKN")}, {"dst_layout", std::string("BNK16n")}});
  EXPECT_EQ(shape_of(PB), (Shape{3, 1, 7, 16}));
  expect_close(in.eval(ops::batch_matmul_pack(BA, PB, 4)), want);
}

// ---------------------------------------------------------------- pooling and normalization

TEST(OpRegistry, PoolingPlainAndBlocked) {
  Tensor X = ph({1, 3, 13, 13}, "data");
  Inputs in;
  Ref x = in.add(X, -3.0, -1.0);
  Attrs win{{"pool_size", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
            {"padding", std::vector<int64_t>{1, 1}}};
  expect_close(in.eval(reg("max_pool2d", {X}, win)), naive_pool(x, {3, 3}, {2, 2}, {1, 1}, PoolKind::kMax));
  expect_close(in.eval(reg("avg_pool2d", {X}, win)), naive_pool(x, {3, 3}, {2, 2}, {1, 1}, PoolKind::kAvgExclude));
  Attrs inc = win;
  inc["count_include_pad"] = int64_t(1);
  expect_close(in.eval(reg("avg_pool2d", {X}, inc)), naive_pool(x, {3, 3}, {2, 2}, {1, 1}, PoolKind::kAvgInclude));
  expect_close(in.eval(reg("global_avg_pool2d", {X})), naive_pool(x, {13, 13}, {1, 1}, {0, 0}, PoolKind::kAvgInclude));

  // The same windows over NCHW4c data (8 channels).
  Tensor XB = ph({1, 2, 13, 13, 4}, "data_blocked");
  Ref xb = in.add(XB, -3.0, -1.0), xu = unblock_nchwc(xb);
  Attrs bl = win;
  bl["layout"] = std::string("NCHW4c");
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    SCOPED_TRACE(op);
    Tensor Y = reg(op, {XB}, bl);
    EXPECT_EQ(shape_of(Y), (Shape{1, 2, 7, 7, 4}));
    Ref got = unblock_nchwc(ref_of(in.eval(Y)));
    Ref want = naive_pool(xu, {3, 3}, {2, 2}, {1, 1}, std::string(op) == "max_pool2d" ? PoolKind::kMax : PoolKind::kAvgExclude);
    for (size_t i = 0; i < got.v.size(); ++i) ASSERT_NEAR(got.v[i], want.v[i], 1e-5) << i;
  }
  Tensor G = reg("global_avg_pool2d", {XB}, {{"layout", std::string("NCHW4c")}});
  Ref got = unblock_nchwc(ref_of(in.eval(G))), want = naive_pool(xu, {13, 13}, {1, 1}, {0, 0}, PoolKind::kAvgInclude);
  for (size_t i = 0; i < got.v.size(); ++i) ASSERT_NEAR(got.v[i], want.v[i], 1e-5) << i;
  expect_error([&] { reg("max_pool2d", {XB}, win); }, {"max_pool2d", "1x2x13x13x4", "NCHW"});
  expect_error([&] { reg("max_pool2d", {X}, {{"pool_size", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{0, 0, 1, 1}}}); },
               {"max_pool2d", "asymmetric"});
}

TEST(OpRegistry, SoftmaxLayerNormBatchNormBiasAdd) {
  Inputs in;
  Tensor X = ph({3, 5, 7}, "x");
  Ref x = in.add(X);
  expect_close(in.eval(reg("softmax", {X}, {{"axis", int64_t(1)}})), naive_softmax(x, 1));
  Tensor G = ph({7}, "gamma"), Be = ph({7}, "beta");
  Ref g = in.add(G), be = in.add(Be);
  expect_close(in.eval(reg("layer_norm", {X, G, Be}, {{"epsilon", 1e-3}})), naive_layer_norm(x, g, be, 2, 1e-3));

  // batch_norm and bias_add per channel, plain (axis 1) and blocked (NCHW4c, 8 channels).
  Tensor D = ph({2, 8, 3, 3}, "d"), DB = ph({2, 2, 3, 3, 4}, "db");
  std::vector<Tensor> p;
  std::vector<Ref> pr;
  for (const char* n : {"gamma", "beta", "mean", "var"}) {
    p.push_back(ph({8}, n));
    pr.push_back(in.add(p.back(), std::string(n) == "var" ? 0.5 : -1.0, 1.0));
  }
  Ref d = in.add(D), db = in.add(DB);
  auto bn = [&](const Ref& data) {
    Ref out = data;
    for (int64_t f = 0; f < numel(out.shape); ++f) {
      size_t c = size_t(out.unravel(f)[1]);
      out.v[size_t(f)] = (out.v[size_t(f)] - pr[2].v[c]) / std::sqrt(pr[3].v[c] + 1e-5) * pr[0].v[c] + pr[1].v[c];
    }
    return out;
  };
  expect_close(in.eval(reg("batch_norm", {D, p[0], p[1], p[2], p[3]})), bn(d));
  Tensor YB = reg("batch_norm", {DB, p[0], p[1], p[2], p[3]}, {{"layout", std::string("NCHW4c")}});
  Ref got = unblock_nchwc(ref_of(in.eval(YB))), want = bn(unblock_nchwc(db));
  for (size_t i = 0; i < got.v.size(); ++i) ASSERT_NEAR(got.v[i], want.v[i], 1e-4) << i;
  Tensor BB = reg("bias_add", {DB, p[1]}, {{"layout", std::string("NCHW4c")}});
  got = unblock_nchwc(ref_of(in.eval(BB)));
  want = add_bias(unblock_nchwc(db), pr[1], 1);
  for (size_t i = 0; i < got.v.size(); ++i) ASSERT_NEAR(got.v[i], want.v[i], 1e-5) << i;
  expect_close(in.eval(reg("bias_add", {X, G}, {{"axis", int64_t(-1)}})), add_bias(x, g, 2));
  expect_error([&] { reg("bias_add", {DB, G}, {{"layout", std::string("NCHW4c")}}); },
               {"bias_add", "8 channels", "bias is 7"});
}

// ---------------------------------------------------------------- elementwise

TEST(OpRegistry, UnaryAndBinary) {
  Inputs in;
  Tensor X = ph({4, 7}, "x"), P = ph({4, 7}, "p"), Y = ph({7}, "y");
  Ref x = in.add(X, -2.0, 2.0), pos = in.add(P, 0.1, 3.0), y = in.add(Y, 0.5, 1.5);
  struct U {
    const char* op;
    std::function<double(double)> f;
    bool positive;
  };
  for (const U& u : {U{"relu", [](double v) { return std::max(v, 0.0); }, false},
                     U{"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, false},
                     U{"tanh", [](double v) { return std::tanh(v); }, false},
                     U{"exp", [](double v) { return std::exp(v); }, false},
                     U{"erf", [](double v) { return std::erf(v); }, false},
                     U{"abs", [](double v) { return std::abs(v); }, false},
                     U{"negative", [](double v) { return -v; }, false},
                     U{"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, false},
                     U{"sqrt", [](double v) { return std::sqrt(v); }, true},
                     U{"log", [](double v) { return std::log(v); }, true}}) {
    SCOPED_TRACE(u.op);
    expect_close(in.eval(reg(u.op, {u.positive ? P : X})), naive_unary(u.positive ? pos : x, u.f));
  }
  expect_close(in.eval(reg("gelu", {X}, {{"approximate", std::string("tanh")}})), naive_unary(x, [](double v) {
                 return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
               }), 1e-4);
  expect_close(in.eval(reg("clip", {X}, {{"min", -0.5}, {"max", 1.0}})),
               naive_unary(x, [](double v) { return std::min(std::max(v, -0.5), 1.0); }));
  struct B {
    const char* op;
    std::function<double(double, double)> f;
  };
  for (const B& b : {B{"add", std::plus<double>()}, B{"subtract", std::minus<double>()},
                     B{"multiply", std::multiplies<double>()}, B{"divide", std::divides<double>()},
                     B{"maximum", [](double p, double q) { return std::max(p, q); }},
                     B{"minimum", [](double p, double q) { return std::min(p, q); }},
                     B{"pow", [](double p, double q) { return std::pow(p, q); }}}) {
    SCOPED_TRACE(b.op);
    expect_close(in.eval(reg(b.op, {P, Y})), naive_broadcast(pos, y, {4, 7}, b.f), 1e-4);
  }
  // cast truncates toward zero into int32.
  loom::runtime::NDArray c = in.eval(reg("cast", {X}, {{"dtype", std::string("int32")}}));
  EXPECT_EQ(c.dtype(), DataType::Int(32));
  for (int64_t i = 0; i < c.numel(); ++i) EXPECT_EQ(c.get(i), std::trunc(float(x.v[size_t(i)])));
  expect_error([&] { reg("gelu", {X}, {{"approximate", std::string("erf")}}); }, {"gelu", "approximate"});
  expect_error([&] { reg("cast", {X}, {{"dtype", std::string("float33")}}); }, {"float33"});
}

// ---------------------------------------------------------------- reductions

TEST(OpRegistry, Reductions) {
  Inputs in;
  Tensor X = ph({3, 4, 5}, "x");
  Ref x = in.add(X);
  struct R {
    const char* op;
    std::vector<int64_t> axes;
    bool keep;
  };
  for (const R& r : {R{"reduce_sum", {1}, false}, R{"reduce_mean", {-1}, true}, R{"reduce_max", {0, 2}, false},
                     R{"reduce_sum", {}, false}, R{"reduce_mean", {0, 1}, true}, R{"reduce_min", {2}, false}}) {
    SCOPED_TRACE(testing::Message() << r.op << " axes " << r.axes.size() << " keepdims " << r.keep);
    std::vector<bool> red(3, r.axes.empty());
    for (int64_t a : r.axes) red[size_t(a < 0 ? a + 3 : a)] = true;
    Shape os;
    for (size_t d = 0; d < 3; ++d)
      if (!red[d] || r.keep) os.push_back(red[d] ? 1 : x.shape[d]);
    if (os.empty()) os.push_back(1);
    std::string op = r.op;
    double init = op == "reduce_max" ? -INFINITY : op == "reduce_min" ? INFINITY : 0.0;
    Ref want(os);
    std::fill(want.v.begin(), want.v.end(), init);
    int64_t count = 1;
    for (size_t d = 0; d < 3; ++d)
      if (red[d]) count *= x.shape[d];
    for (int64_t f = 0; f < numel(x.shape); ++f) {
      Shape i = x.unravel(f), o;
      for (size_t d = 0; d < 3; ++d)
        if (!red[d] || r.keep) o.push_back(red[d] ? 0 : i[d]);
      if (o.empty()) o.push_back(0);
      double& w = want.v[size_t(want.ravel(o))];
      double v = x.v[size_t(f)];
      w = op == "reduce_max" ? std::max(w, v) : op == "reduce_min" ? std::min(w, v) : w + v;
    }
    if (op == "reduce_mean")
      for (double& w : want.v) w /= double(count);
    expect_close(in.eval(reg(op, {X}, {{"axes", r.axes}, {"keepdims", int64_t(r.keep)}})), want);
  }
  expect_error([&] { reg("reduce_sum", {X}, {{"axes", std::vector<int64_t>{3}}}); }, {"reduce", "axis 3"});
  expect_error([&] { reg("reduce_sum", {X}, {{"axes", std::vector<int64_t>{1, -2}}}); }, {"reduce", "twice"});
}

// ---------------------------------------------------------------- injective

TEST(OpRegistry, ReshapesTransposeConcatPad) {
  Inputs in;
  Tensor X = ph({2, 3, 4}, "x");
  Ref x = in.add(X);
  auto same_values = [&](const Tensor& t, Shape want_shape) {
    loom::runtime::NDArray got = in.eval(t);
    ASSERT_EQ(got.shape(), want_shape);
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.get(i), float(x.v[size_t(i)]));
  };
  same_values(reg("reshape", {X}, {{"newshape", std::vector<int64_t>{0, -1}}}), {2, 12});
  same_values(reg("flatten", {X}), {2, 12});
  same_values(reg("flatten", {X}, {{"axis", int64_t(2)}}), {6, 4});
  same_values(reg("unsqueeze", {X}, {{"axes", std::vector<int64_t>{0, 3}}}), {1, 2, 3, 1, 4});
  Tensor U = reg("unsqueeze", {X}, {{"axes", std::vector<int64_t>{1}}});
  Tensor S = reg("squeeze", {U});
  same_values(S, {2, 3, 4});
  expect_error([&] { reg("squeeze", {X}, {{"axes", std::vector<int64_t>{1}}}); }, {"squeeze", "extent 3, not 1"});
  expect_close(in.eval(reg("transpose", {X}, {{"axes", std::vector<int64_t>{2, 0, 1}}})), naive_transpose(x, {2, 0, 1}));

  Tensor Y = ph({2, 1, 4}, "y");
  Ref y = in.add(Y);
  Ref cat({2, 4, 4});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 4; ++k) cat({i, j, k}) = j < 3 ? x({i, j, k}) : y({i, 0, k});
  expect_close(in.eval(reg("concat", {X, Y}, {{"axis", int64_t(1)}})), cat);

  Ref padded({3, 3, 7});
  std::fill(padded.v.begin(), padded.v.end(), 0.5);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) padded({i + 1, j, k + 1}) = x({i, j, k});
  expect_close(in.eval(reg("pad", {X}, {{"pads", std::vector<int64_t>{1, 0, 1, 0, 0, 2}}, {"pad_value", 0.5}})), padded);
  expect_error([&] { reg("pad", {X}, {{"pads", std::vector<int64_t>{1, 1}}}); }, {"pad", "6 values"});
}

TEST(OpRegistry, TakeWithConstantIndices) {
  Inputs in;
  Tensor X = ph({4, 5}, "x");
  Ref x = in.add(X);
  Tensor I = ph({2, 3}, "indices", DataType::Int(32));
  Ref idx({2, 3});
  idx.v = {0, 4, -1, 2, 9, -7};  // -1 -> 4; 9 and -7 are clamped to 4 and 0
  in.set(I, idx);
  Ref want({4, 2, 3});
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t f = 0; f < 6; ++f) {
      int64_t i = int64_t(idx.v[size_t(f)]);
      i = i < 0 ? i + 5 : i;
      i = std::clamp<int64_t>(i, 0, 4);
      want.v[size_t(r * 6 + f)] = x({r, i});
    }
  expect_close(in.eval(reg("take", {X, I}, {{"axis", int64_t(1)}})), want);
  // A 0-D index drops the axis.
  Tensor I0 = te::placeholder({}, DataType::Int(64), "i0");
  Ref i0(Shape{});
  i0.v = {2};
  in.set(I0, i0);
  Ref row({5});
  for (int64_t j = 0; j < 5; ++j) row({j}) = x({2, j});
  expect_close(in.eval(reg("take", {X, I0})), row);
  expect_error([&] { reg("take", {X, X}); }, {"take", "indices must be integers"});
}

TEST(OpRegistry, LayoutTransform) {
  Inputs in;
  Tensor X = ph({1, 20, 3, 2}, "x");
  Ref x = in.add(X);
  Attrs to_blocked{{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW16c")}};
  Tensor B = reg("layout_transform", {X}, to_blocked);
  ASSERT_EQ(shape_of(B), (Shape{1, 2, 3, 2, 16}));
  Ref b = ref_of(in.eval(B));
  for (int64_t c = 0; c < 32; ++c)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 2; ++w)
        ASSERT_EQ(b({0, c / 16, h, w, c % 16}), c < 20 ? float(x({0, c, h, w})) : 0.0) << c;  // zero-padded
  // Back: 32 channels, padding included, unless dst_shape crops them.
  Tensor back = reg("layout_transform", {B}, {{"src_layout", std::string("NCHW16c")}, {"dst_layout", std::string("NCHW")}});
  EXPECT_EQ(shape_of(back), (Shape{1, 32, 3, 2}));
  Tensor cropped = reg("layout_transform", {B},
                       {{"src_layout", std::string("NCHW16c")}, {"dst_layout", std::string("NCHW")},
                        {"dst_shape", std::vector<int64_t>{1, 20, 3, 2}}});
  expect_close(in.eval(cropped), x, 0);
  // Re-blocking 16c -> 8c, and a kernel to OIHW4i8o.
  Tensor b8 = reg("layout_transform", {B}, {{"src_layout", std::string("NCHW16c")}, {"dst_layout", std::string("NCHW8c")}});
  Ref r8 = ref_of(in.eval(b8));
  for (int64_t c = 0; c < 32; ++c) ASSERT_EQ(r8({0, c / 8, 1, 1, c % 8}), b({0, c / 16, 1, 1, c % 16}));
  Tensor K = ph({16, 8, 3, 3}, "k");
  Ref k = in.add(K);
  Tensor KB = reg("layout_transform", {K}, {{"src_layout", std::string("OIHW")}, {"dst_layout", std::string("OIHW4i8o")}});
  ASSERT_EQ(shape_of(KB), (Shape{2, 2, 3, 3, 4, 8}));
  expect_close(in.eval(reg("layout_transform", {KB}, {{"src_layout", std::string("OIHW4i8o")}, {"dst_layout", std::string("OIHW")}})),
               k, 0);
}

TEST(OpRegistry, LayoutStrings) {
  ops::Layout l = ops::Layout::parse("NCHW16c");
  EXPECT_EQ(l.ndim(), 5u);
  EXPECT_EQ(l.block_of('C'), 16);
  EXPECT_EQ(l.block_of('H'), 0);
  EXPECT_EQ(l.index_of('c'), 4);
  EXPECT_EQ(l.str(), "NCHW16c");
  EXPECT_EQ(ops::Layout::parse("OIHW16i16o").str(), "OIHW16i16o");
  expect_error([] { ops::Layout::parse("NCHW16d"); }, {"NCHW16d", "no primal axis 'D'"});
  expect_error([] { ops::Layout::parse("NCHWc"); }, {"needs a factor"});
  expect_error([] { ops::Layout::parse("NCHC"); }, {"appears twice"});
  expect_error([] { ops::Layout::parse("NC-HW"); }, {"not an axis letter"});
  expect_error([] { ops::Layout::parse("NCHW16"); }, {"names no axis"});
  expect_error([] { ops::Layout::parse(""); }, {"empty"});
  expect_error([] { ops::infer_type("layout_transform", {tt({1, 4, 2, 2})}, {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCDW")}}); },
               {"layout_transform", "'D'"});
  expect_error([] { ops::infer_type("layout_transform", {tt({1, 4, 2})}, {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW4c")}}); },
               {"layout_transform", "4 axes"});
}

// ---------------------------------------------------------------- strategies

TEST(OpRegistry, StrategiesNameTheTemplatePerTarget) {
  auto call = [](const std::string& op, const std::string& target, const std::vector<TensorType>& in,
                 const Attrs& a) -> std::optional<ops::TemplateCall> {
    const ops::OpDef& d = ops::get_op(op);
    auto it = d.strategy.find(target);
    if (it == d.strategy.end()) return std::nullopt;
    return it->second(in, ops::normalize_attrs(d, a));
  };
  Attrs pad1{{"padding", std::vector<int64_t>{1, 1}}};
  auto c = call("conv2d", "llvm", {tt({1, 64, 56, 56}), tt({128, 64, 3, 3})}, pad1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "conv2d_nchw");
  EXPECT_EQ(c->shape, (Shape{1, 64, 56, 56, 128, 3, 3}));
  EXPECT_EQ(c->attrs, (std::map<std::string, std::string>{{"pad", "1"}, {"stride", "1"}}));
  c = call("conv2d", "cuda", {tt({1, 64, 56, 56}), tt({128, 64, 3, 3})}, pad1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "conv2d_nchw");
  Attrs dw = pad1;
  dw["groups"] = int64_t(32);
  c = call("conv2d", "llvm", {tt({1, 32, 28, 28}), tt({32, 1, 3, 3})}, dw);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "depthwise_conv2d_nchw");
  EXPECT_EQ(c->shape, (Shape{1, 32, 28, 28, 3, 3}));
  EXPECT_FALSE(call("conv2d", "llvm", {tt({1, 32, 28, 28}), tt({32, 1, 3, 3})}, {{"dilation", std::vector<int64_t>{2, 2}}}));
  EXPECT_FALSE(call("conv2d", "llvm", {tt({1, 32, 28, 28}), tt({32, 1, 3, 3})}, {{"padding", std::vector<int64_t>{0, 0, 1, 1}}}));
  EXPECT_FALSE(call("conv2d", "llvm", {tt({1, 4, 8, 8}), tt({8, 2, 3, 3})}, {{"groups", int64_t(2)}}));
  c = call("conv2d_nchwc", "llvm", {tt({1, 4, 56, 56, 16}), tt({8, 4, 3, 3, 16, 16})}, pad1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "conv2d_nchwc");
  EXPECT_EQ(c->shape, (Shape{1, 64, 56, 56, 128, 3, 3}));
  EXPECT_EQ(c->attrs.size(), 2u);
  c = call("conv2d_nchwc", "llvm", {tt({1, 1, 224, 224, 3}), tt({4, 1, 7, 7, 3, 16})},
           {{"layout", std::string("NCHW3c")}, {"strides", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{3, 3}}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->attrs.at("ic_block"), "3");
  EXPECT_EQ(c->attrs.count("oc_block"), 0u);
  c = call("conv2d_nchwc", "llvm", {tt({1, 3, 224, 224}), tt({4, 3, 7, 7, 16})},
           {{"layout", std::string("NCHW")}, {"strides", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{3, 3}}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->shape, (Shape{1, 3, 224, 224, 64, 7, 7}));
  EXPECT_EQ(c->attrs.at("ic_block"), "0");
  c = call("depthwise_conv2d_nchwc", "llvm", {tt({1, 6, 28, 28, 16}), tt({6, 1, 3, 3, 1, 16})}, pad1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "depthwise_conv2d_nchwc");
  EXPECT_EQ(c->shape, (Shape{1, 96, 28, 28, 3, 3}));
  c = call("dense", "llvm", {tt({1, 512}), tt({1000, 512})}, {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "dense");
  EXPECT_EQ(c->shape, (Shape{1, 1000, 512}));
  c = call("dense_pack", "llvm", {tt({1, 512}), tt({63, 512, 16})}, {{"units", int64_t(1000)}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "dense_pack");
  c = call("matmul", "cuda", {tt({64, 32}), tt({32, 16})}, {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "matmul");
  EXPECT_EQ(c->shape, (Shape{64, 16, 32}));
  c = call("matmul", "llvm", {tt({64, 32}), tt({16, 32})}, {{"transpose_b", int64_t(1)}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "dense");
  EXPECT_EQ(c->shape, (Shape{64, 16, 32}));
  c = call("batch_matmul", "llvm", {tt({12, 128, 64}), tt({12, 64, 128})}, {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->shape, (Shape{12, 128, 128, 64}));
  c = call("batch_matmul", "llvm", {tt({12, 128, 64}), tt({12, 100, 64})}, {{"transpose_b", int64_t(1)}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->shape, (Shape{12, 128, 100, 64}));
  EXPECT_EQ(c->attrs.at("transpose_b"), "1");
  EXPECT_FALSE(call("batch_matmul", "llvm", {tt({12, 128, 64}), tt({1, 64, 128})}, {}));
  EXPECT_FALSE(call("max_pool2d", "llvm", {tt({1, 4, 8, 8})}, {{"pool_size", std::vector<int64_t>{2, 2}}}));
}

}  // namespace
