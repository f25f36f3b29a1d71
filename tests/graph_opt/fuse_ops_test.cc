// Fusion by pattern (TVM's FuseOps rules) on graphs made for each rule.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "loom/graph_opt/passes.h"

namespace loom::graph_opt {
namespace {

using test::random_array;
using test::group_members;
using runtime::NDArray;

using Groups = std::vector<std::vector<std::string>>;

/// fuse_ops on `g`, checked: verified, and the fused graph computes what `g` computes.
Graph fused(const Graph& g, const FuseOptions& opt = {}) {
  Graph f = fuse_ops(g, opt);
  EXPECT_NO_THROW(verify(f));
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(test::compare_outputs(run_reference_fused(f, in), run_reference(g, in)), "");
  return f;
}

Value conv(GraphBuilder& b, Value x, int64_t k, const std::string& name, uint64_t seed) {
  int64_t c = b.type(x).shape[1];
  Conv2dAttrs a;
  a.padding = {1, 1};
  return b.conv2d(x, b.constant(name + ".w", random_array({k, c, 3, 3}, seed)), a, name);
}

TEST(FuseOps, AnchorTakesTheElementwiseDiamondUpToItsPostDominator) {
  GraphBuilder b("diamond");
  Value x = b.input("x", {{1, 2, 5, 5}, DataType::Float(32), "NCHW"});
  Value c = conv(b, x, 3, "conv", 1);
  Value r = b.relu(c, "relu");
  Value s = b.op("sigmoid", {r}, {}, "sigmoid");
  Value e = b.op("tanh", {r}, {}, "tanh");
  Value a = b.add(s, e, "add");
  b.output(b.multiply(a, b.constant("scale", random_array({3, 1, 1}, 2)), "scale_mul"));
  Graph f = fused(b.build());
  EXPECT_EQ(group_members(f), (Groups{{"conv", "relu", "sigmoid", "tanh", "add", "scale_mul"}}));
  EXPECT_EQ(f.groups[0].anchor, f.at("conv"));
  EXPECT_EQ(f.groups[0].pattern, OpPattern::kOutEWiseFusable);
  EXPECT_EQ(f.groups[0].name, "fused_conv2d_relu_sigmoid_tanh_add_multiply");
  EXPECT_EQ(f.groups[0].inputs.size(), 3u);  // x, conv.w, scale
}

TEST(FuseOps, AnchorsDoNotFuseWithEachOtherAndPoolsTakeTheReshapeAfterThem) {
  GraphBuilder b("anchors");
  Value x = b.input("x", {{1, 2, 6, 6}, DataType::Float(32), "NCHW"});
  Value c1 = conv(b, x, 4, "conv1", 1);
  Value r1 = b.relu(c1, "relu1");  // before a conv: stays with conv1, not conv2
  Value c2 = conv(b, r1, 4, "conv2", 2);
  Pool2dAttrs p;
  p.pool_size = {2, 2};
  p.strides = {2, 2};
  Value pool = b.max_pool2d(c2, p, "pool");  // conv2 -> pool: not an elementwise edge
  Value f = b.flatten(pool, "flatten");
  b.output(b.dense(f, b.constant("fc.w", random_array({3, 36}, 3)), "fc"));
  Graph g = fused(b.build());
  // The pool has no schedule template: its kernel also runs the flatten after it.
  EXPECT_EQ(group_members(g), (Groups{{"conv1", "relu1"}, {"conv2"}, {"pool", "flatten"}, {"fc"}}));
}

TEST(FuseOps, TwoPoolsFeedingOneConcatKeepOneAnchorPerGroup) {
  // Both pools may take injective consumers, but a group holds one anchor: the first pool joins
  // the concat, the second stays a kernel of its own.
  GraphBuilder b("two_pools");
  Value x = b.input("x", {{1, 2, 8, 8}, DataType::Float(32), "NCHW"});
  Pool2dAttrs p;
  p.pool_size = {2, 2};
  p.strides = {2, 2};
  Value a = b.max_pool2d(x, p, "pool_a");
  Value c = b.op("avg_pool2d", {x}, {{"pool_size", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}},
                 "pool_b");
  b.output(b.op("concat", {a, c}, {{"axis", int64_t(1)}}, "concat"));
  Graph g = fused(b.build());
  EXPECT_EQ(group_members(g), (Groups{{"pool_b"}, {"pool_a", "concat"}})) << g;
  for (const FusedGroup& grp : g.groups) EXPECT_GE(grp.anchor, 0) << grp.name;
}

TEST(FuseOps, AnchorsWithTemplatesTakeOnlyElementwiseEpilogues) {
  GraphBuilder b("reshape_after_conv");
  Value x = b.input("x", {{1, 2, 6, 6}, DataType::Float(32), "NCHW"});
  Value c = conv(b, x, 4, "conv", 1);
  Value f = b.flatten(b.relu(c, "relu"), "flatten");  // injective: the conv template's tile can't hold it
  b.output(b.dense(f, b.constant("fc.w", random_array({3, 144}, 3)), "fc"));
  Graph g = fused(b.build());
  EXPECT_EQ(group_members(g), (Groups{{"conv", "relu"}, {"flatten"}, {"fc"}}));
}

TEST(FuseOps, ResidualAddJoinsTheFirstConvOnly) {
  GraphBuilder b("residual");
  Value x = b.input("x", {{1, 4, 4, 4}, DataType::Float(32), "NCHW"});
  Value a = conv(b, x, 4, "conv_a", 1);
  Value c = conv(b, x, 4, "conv_b", 2);
  b.output(b.relu(b.add(a, c, "add"), "relu"));
  Graph g = fused(b.build());
  EXPECT_EQ(group_members(g), (Groups{{"conv_b"}, {"conv_a", "add", "relu"}}));
}

TEST(FuseOps, InjectiveChainsFuse) {
  GraphBuilder b("injective");
  Value x = b.input("x", {{2, 3, 4}, DataType::Float(32), ""});
  Value y = b.input("y", {{4, 6}, DataType::Float(32), ""});
  Value t = b.op("transpose", {x}, {{"axes", std::vector<int64_t>{2, 0, 1}}}, "transpose");
  Value r = b.reshape(t, {4, 6}, "reshape");
  Value s = b.add(r, y, "add");
  b.output(b.op("exp", {s}, {}, "exp"));
  Graph g = fused(b.build());
  EXPECT_EQ(group_members(g), (Groups{{"transpose", "reshape", "add", "exp"}}));
  EXPECT_EQ(g.groups[0].anchor, -1);
  EXPECT_EQ(g.groups[0].pattern, OpPattern::kInjective);
}

TEST(FuseOps, ElementwiseFusesIntoAReduction) {
  GraphBuilder b("reduce");
  Value x = b.input("x", {{3, 8}, DataType::Float(32), ""});
  Value e = b.op("exp", {x}, {}, "exp");
  b.output(b.op("reduce_sum", {e}, {{"axes", std::vector<int64_t>{1}}}, "sum"));
  Graph g = fused(b.build());
  EXPECT_EQ(group_members(g), (Groups{{"exp", "sum"}}));
  EXPECT_EQ(g.groups[0].pattern, OpPattern::kCommReduce);
}

TEST(FuseOps, GraphOutputsAndOpaqueOpsStopFusion) {
  GraphBuilder b("outputs");
  Value x = b.input("x", {{1, 2, 4, 4}, DataType::Float(32), "NCHW"});
  Value c = conv(b, x, 2, "conv", 1);
  b.output(c);  // conv's value is returned: it cannot be computed inside a fused kernel only
  Value r = b.relu(c, "relu");
  Value f = b.flatten(r, "flatten");
  Value s = b.op("softmax", {f}, {}, "softmax");  // opaque
  b.output(b.op("exp", {s}, {}, "exp"));
  Graph g = fused(b.build());
  EXPECT_EQ(group_members(g), (Groups{{"conv"}, {"relu", "flatten"}, {"softmax"}, {"exp"}}));
  EXPECT_EQ(g.groups[0].outputs, (std::vector<ValueRef>{{g.at("conv"), 0}}));
}

TEST(FuseOps, LevelZeroKeepsEveryOpAlone) {
  GraphBuilder b("level0");
  Value x = b.input("x", {{1, 2, 4, 4}, DataType::Float(32), "NCHW"});
  b.output(b.relu(conv(b, x, 2, "conv", 1), "relu"));
  FuseOptions opt;
  opt.level = 0;
  Graph g = fused(b.build(), opt);
  EXPECT_EQ(group_members(g), (Groups{{"conv"}, {"relu"}}));
}

}  // namespace
}  // namespace loom::graph_opt
