// The graph IR and builder: type inference, the text dump, the verifier, reference execution.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/reference.h"
#include "loom/te/evaluate.h"
#include "loom/te/ops.h"

namespace loom::graph_opt {
namespace {

using test::random_array;
using runtime::NDArray;

/// x -> conv2d(3x3, pad 1) -> relu -> add(x') where x' = conv2d 1x1 of x.
Graph small_graph() {
  GraphBuilder b("small");
  Value x = b.input("x", {{1, 4, 6, 6}, DataType::Float(32), "NCHW"});
  Value w1 = b.constant("w1", random_array({8, 4, 3, 3}, 1));
  Value w2 = b.constant("w2", random_array({8, 4, 1, 1}, 2));
  Conv2dAttrs a;
  a.padding = {1, 1};
  Value y = b.relu(b.conv2d(x, w1, a, "conv_a"), "relu");
  Value z = b.conv2d(x, w2, {}, "conv_b");
  b.output(b.add(y, z, "sum"));
  return b.build();
}

TEST(GraphBuilder, InfersTypesThroughTheRegistry) {
  Graph g = small_graph();
  EXPECT_EQ(g.num_ops(), 4u);
  EXPECT_EQ(g.input_nodes(), std::vector<int>{0});
  const Node& conv = g.nodes[size_t(g.at("conv_a"))];
  EXPECT_EQ(conv.outputs[0].shape, (std::vector<int64_t>{1, 8, 6, 6}));
  EXPECT_EQ(conv.outputs[0].layout, "NCHW");
  EXPECT_EQ(te::ops::attr_ints(conv.attrs, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(te::ops::attr_int(conv.attrs, "groups"), 1);  // normalized: defaults filled in
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{1, 8, 6, 6}));
  EXPECT_NO_THROW(verify(g));
}

TEST(GraphBuilder, TextDumpListsEveryNode) {
  std::string t = to_text(small_graph());
  EXPECT_NE(t.find("graph small(%x: float32[1,4,6,6]@NCHW) {"), std::string::npos) << t;
  EXPECT_NE(t.find("%w1 = constant float32[8,4,3,3]"), std::string::npos) << t;
  EXPECT_NE(t.find("%conv_a = conv2d(%x, %w1) {dilation=[1,1], groups=1, layout=\"NCHW\", padding=[1,1], "
                   "strides=[1,1]} : float32[1,8,6,6]@NCHW"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("%sum = add(%relu, %conv_b)"), std::string::npos) << t;
  EXPECT_NE(t.find("return %sum"), std::string::npos) << t;
}

TEST(GraphBuilder, MistakesNameTheNode) {
  GraphBuilder b("g");
  Value x = b.input("x", {{1, 4, 6, 6}, DataType::Float(32), "NCHW"});
  Value w = b.constant("w", random_array({8, 3, 3, 3}, 1));  // 3 input channels, x has 4
  try {
    b.conv2d(x, w, {}, "bad_conv");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'bad_conv' (conv2d)"), std::string::npos) << e.what();
  }
  try {
    b.op("no_such_op", {x}, {}, "mystery");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'mystery'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown operator 'no_such_op'"), std::string::npos) << e.what();
  }
  try {
    b.op("relu", {x}, {{"alpha", 0.1}}, "leaky");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'leaky'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("alpha"), std::string::npos) << e.what();
  }
  b.relu(x, "r");
  EXPECT_THROW(b.relu(x, "r"), Error);  // a second node named "r"
}

TEST(GraphVerify, RejectsBrokenGraphs) {
  Graph g = small_graph();
  {
    Graph h = g;  // an input refers to a later node
    h.nodes[size_t(h.at("relu"))].inputs[0] = {h.at("sum"), 0};
    try {
      verify(h);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("node 'relu'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("topological"), std::string::npos) << e.what();
    }
  }
  {
    Graph h = g;  // a recorded type that inference does not give
    h.nodes[size_t(h.at("conv_b"))].outputs[0].shape = {1, 8, 5, 5};
    EXPECT_THROW(verify(h), Error);
  }
  {
    Graph h = g;  // a dangling output index
    h.nodes[size_t(h.at("sum"))].inputs[1] = {h.at("conv_b"), 3};
    try {
      verify(h);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("node 'sum'"), std::string::npos) << e.what();
    }
  }
  {
    Graph h = g;  // a constant whose data disagrees with its type
    h.nodes[size_t(h.at("w2"))].value = random_array({8, 4, 1, 2}, 3);
    EXPECT_THROW(verify(h), Error);
  }
  {
    Graph h = g;  // duplicate names
    h.nodes[size_t(h.at("conv_b"))].name = "relu";
    EXPECT_THROW(verify(h), Error);
  }
}

TEST(GraphReference, MatchesTheOperatorsComposedByHand) {
  Graph g = small_graph();
  NDArray x = random_array({1, 4, 6, 6}, 9);
  std::vector<NDArray> got = run_reference(g, {x});
  ASSERT_EQ(got.size(), 1u);

  te::Tensor tx = te::placeholder({1, 4, 6, 6}, DataType::Float(32), "x");
  te::Tensor t1 = te::placeholder({8, 4, 3, 3}, DataType::Float(32), "w1");
  te::Tensor t2 = te::placeholder({8, 4, 1, 1}, DataType::Float(32), "w2");
  te::Tensor out = te::ops::add(te::ops::relu(te::ops::conv2d_nchw(tx, t1, {1, 1}, {1, 1})),
                                te::ops::conv2d_nchw(tx, t2));
  std::vector<NDArray> want = te::evaluate(
      {out}, {{tx, x}, {t1, g.nodes[size_t(g.at("w1"))].value}, {t2, g.nodes[size_t(g.at("w2"))].value}});
  EXPECT_EQ(test::compare_outputs(got, want, 0), "");
  EXPECT_THROW(run_reference(g, {}), Error);                             // an input missing
  EXPECT_THROW(run_reference(g, {random_array({1, 4, 6, 5}, 1)}), Error);  // of another shape
}

TEST(GraphRewriter, CopiesAndReplaces) {
  Graph g = small_graph();
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].name == "relu") {
      rw.replace({int(i), 0}, rw.clip(rw.map_inputs(int(i))[0], 0, 6, "relu6"));
      continue;
    }
    rw.copy(int(i));
  }
  Graph h = rw.finish();
  EXPECT_EQ(test::count_ops(h, "clip"), 1);
  EXPECT_EQ(test::count_ops(h, "relu"), 0);
  EXPECT_EQ(h.nodes[size_t(h.at("sum"))].inputs[0], (ValueRef{h.at("relu6"), 0}));
}

TEST(GraphModels, BuildWithTorchvisionStructure) {
  Graph r = models::resnet18();
  EXPECT_EQ(test::count_ops(r, "conv2d"), 20);  // 1 + 16 + 3 downsample
  EXPECT_EQ(test::count_ops(r, "batch_norm"), 20);
  EXPECT_EQ(test::count_ops(r, "add"), 8);
  EXPECT_EQ(r.type(r.outputs[0]).shape, (std::vector<int64_t>{1, 1000}));
  int64_t params = 0;
  for (const Node& n : r.nodes)
    if (n.is_constant() && n.name.find("running") == std::string::npos) params += n.value.numel();
  EXPECT_EQ(params, 11689512);  // torchvision's resnet18 parameter count

  Graph m = models::mobilenet_v2();
  EXPECT_EQ(test::count_ops(m, "conv2d"), 52);
  EXPECT_EQ(test::count_ops(m, "add"), 10);
  EXPECT_EQ(m.type(m.outputs[0]).shape, (std::vector<int64_t>{1, 1000}));
  params = 0;
  for (const Node& n : m.nodes)
    if (n.is_constant() && n.name.find("running") == std::string::npos) params += n.value.numel();
  EXPECT_EQ(params, 3504872);  // torchvision's mobilenet_v2 parameter count
}

}  // namespace
}  // namespace loom::graph_opt
