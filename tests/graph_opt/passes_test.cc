// Every graph pass preserves what the graph computes: small ResNet-18 and MobileNetV2
// variants run through the pipeline pass by pass, each intermediate graph evaluated with the
// reference and compared with the unoptimized graph. Then each pass's own effect, on the
// models and on graphs made for it.
#include <gtest/gtest.h>

#include <sstream>

#include "graph_test_util.h"
#include "loom/graph_opt/passes.h"
#include "loom/tuner/task.h"

namespace loom::graph_opt {
namespace {

using test::random_array;
using runtime::NDArray;
using test::compare_outputs;
using test::count_ops;

/// Runs the passes of the O3 pipeline one at a time on `g`, comparing each result (and the
/// fused graph, group by group) with the unoptimized graph's reference outputs.
void check_pipeline(const Graph& g, const PassOptions& opt = {}) {
  std::vector<NDArray> in = test::graph_inputs(g);
  std::vector<NDArray> want = run_reference(g, in);
  Graph cur = g;
  PassManager pm(opt);
  for (const PassInfo& p : pm.passes()) {
    if (p.opt_level > opt.opt_level) continue;
    cur = p.run(cur);
    ASSERT_NO_THROW(verify(cur)) << p.name;
    EXPECT_EQ(compare_outputs(run_reference(cur, in), want), "") << "after " << p.name;
  }
  ASSERT_FALSE(cur.groups.empty());
  EXPECT_EQ(compare_outputs(run_reference_fused(cur, in), want), "") << "fused, group by group";
}

TEST(GraphPasses, ResNet18PreservesResults) { check_pipeline(models::resnet18(test::small_model())); }

TEST(GraphPasses, ResNet18WithWinogradPreservesResults) {
  // The small variant's 3x3 stride-1 convolutions have 16 to 128 channels: from 32 up they
  // take Winograd F(4).
  PassOptions opt;
  opt.layout.winograd_tile = 4;
  opt.layout.winograd_min_channels = 32;
  const Graph g = models::resnet18(test::small_model());
  Graph o = optimize(g, opt);
  // Layers 2-4: each block's stride-1 3x3 convolutions but the first block's strided one.
  EXPECT_EQ(count_ops(o, "conv2d_nchwc_winograd"), 9) << o;
  EXPECT_EQ(count_ops(o, "winograd_weight_transform"), 0);
  check_pipeline(g, opt);
}

TEST(GraphPasses, MobileNetV2PreservesResults) {
  PassOptions opt;
  opt.layout.blocks = {8};  // its small variant has 8, 16, 24, 40, 80 channels
  check_pipeline(models::mobilenet_v2(test::small_model()), opt);
}

TEST(GraphPasses, LowerLevelsPreserveResults) {
  Graph g = models::resnet18(test::small_model());
  for (int level : {0, 1, 2}) {
    PassOptions opt;
    opt.opt_level = level;
    check_pipeline(g, opt);
  }
}

TEST(GraphPasses, OptimizedResNet18HasItsExpectedShape) {
  Graph g = optimize(models::resnet18(test::small_model()));
  EXPECT_EQ(count_ops(g, "batch_norm"), 0);
  EXPECT_EQ(count_ops(g, "conv2d"), 0);
  EXPECT_EQ(count_ops(g, "conv2d_nchwc"), 20);
  EXPECT_EQ(count_ops(g, "multiply"), 0);  // every batch-norm scale folded into a conv
  EXPECT_EQ(count_ops(g, "dense_pack"), 1);
  // conv1 takes NCHW data (3 channels) and gives NCHW16c; the network stays blocked up to
  // the global pool, and one transform leads back to NCHW for flatten.
  EXPECT_EQ(count_ops(g, "layout_transform"), 1);
  for (const Node& n : g.nodes) {
    bool all_constant = !n.inputs.empty();
    for (const ValueRef& v : n.inputs) all_constant = all_constant && g.node(v).is_constant();
    EXPECT_FALSE(all_constant) << n.name << " reads only constants but was not folded";
  }
}

TEST(GraphPasses, AlterLayoutPacksMatmulByAConstantWeight) {
  // ONNX's MatMul by a weight: B [K,N] (and B^T [N,K] with transpose_b) constant, N = 20 not a
  // multiple of the block; a matmul of two inputs keeps its layout.
  GraphBuilder b("matmuls");
  Value x = b.input("x", {{6, 12}, DataType::Float(32), ""});
  Value y = b.input("y", {{20, 7}, DataType::Float(32), ""});
  Value m1 = b.op("matmul", {x, b.constant("w_kn", random_array({12, 20}, 1))}, {}, "m1");
  Value m2 = b.op("matmul", {x, b.constant("w_nk", random_array({20, 12}, 2))}, {{"transpose_b", int64_t(1)}}, "m2");
  Value m3 = b.op("matmul", {b.add(m1, m2, "sum"), y}, {}, "m3");
  b.output(m3);
  Graph g = b.build();
  Graph l = eliminate_dead_code(fold_constants(alter_layout(g)));
  EXPECT_EQ(count_ops(l, "dense_pack"), 2) << l;
  EXPECT_EQ(count_ops(l, "matmul"), 1) << l;
  EXPECT_EQ(count_ops(l, "layout_transform"), 0) << l;  // the weights' transforms folded
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(l, in), run_reference(g, in)), "");
}

TEST(GraphPasses, SimplifyInferenceRewritesBatchNorm) {
  Graph g = models::resnet18(test::small_model());
  Graph s = simplify_inference(g);
  EXPECT_EQ(count_ops(s, "batch_norm"), 0);
  EXPECT_EQ(count_ops(s, "multiply"), count_ops(g, "batch_norm") * 2);  // x * scale and mean * scale
  Graph f = eliminate_dead_code(fold_constants(s));
  EXPECT_EQ(count_ops(f, "multiply"), count_ops(g, "batch_norm"));  // only x * scale is left
  EXPECT_EQ(count_ops(f, "sqrt"), 0);
}

TEST(GraphPasses, SimplifyInferenceWithParametersGivenAtRunTime) {
  GraphBuilder b("bn_inputs");
  Value x = b.input("x", {{2, 3, 4, 4}, DataType::Float(32), "NCHW"});
  Value mean = b.input("mean", {{3}, DataType::Float(32), ""});
  Value var = b.constant("var", random_array({3}, 1, 0.5, 1.5));
  Value gamma = b.constant("gamma", random_array({3}, 2));
  Value beta = b.constant("beta", random_array({3}, 3));
  b.output(b.batch_norm(x, gamma, beta, mean, var, 1e-3, "bn"));
  Graph g = b.build();
  Graph s = optimize(g);
  EXPECT_EQ(count_ops(s, "batch_norm"), 0);
  EXPECT_EQ(count_ops(s, "sqrt"), 0);  // gamma / sqrt(var + eps) folded, mean * scale not
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(s, in), run_reference(g, in)), "");
}

/// 3x3 convolutions: 64 -> 64 channels stride 1 (Winograd can take it; bias and relu after),
/// then 64 -> 64 stride 2 and 64 -> 32 stride 1 (it cannot: stride, and too few channels).
Graph winograd_candidates() {
  GraphBuilder b("winograd");
  Value x = b.input("x", {{1, 64, 9, 10}, DataType::Float(32), "NCHW"});
  Conv2dAttrs pad1;
  pad1.padding = {1, 1};
  Value c1 = b.relu(b.conv2d(x, b.constant("w1", random_array({64, 64, 3, 3}, 1, -0.1, 0.1)),
                             b.constant("b1", random_array({64}, 2)), pad1, "c1"),
                    "r1");
  Conv2dAttrs s2 = pad1;
  s2.strides = {2, 2};
  Value c2 = b.conv2d(c1, b.constant("w2", random_array({64, 64, 3, 3}, 3, -0.1, 0.1)), s2, "c2");
  b.output(b.conv2d(c2, b.constant("w3", random_array({32, 64, 3, 3}, 4, -0.1, 0.1)), pad1, "c3"));
  return b.build();
}

TEST(GraphPasses, AlterLayoutTakesWinogradOnlyWhenAskedAndWhereItApplies) {
  const Graph g = winograd_candidates();
  Graph d = optimize(g);
  EXPECT_EQ(count_ops(d, "conv2d_nchwc_winograd"), 0) << "the default stays direct";
  EXPECT_EQ(count_ops(d, "conv2d_nchwc"), 3);

  PassOptions opt;
  opt.layout.winograd_tile = 4;
  Graph w = optimize(g, opt);
  EXPECT_EQ(count_ops(w, "conv2d_nchwc_winograd"), 1) << w;
  EXPECT_EQ(count_ops(w, "conv2d_nchwc"), 2);
  EXPECT_EQ(count_ops(w, "winograd_weight_transform"), 0) << "folded with the constant weight\n" << w;
  const Node& c1 = w.nodes[size_t(w.at("c1"))];
  EXPECT_EQ(c1.op, "conv2d_nchwc_winograd");
  EXPECT_TRUE(w.node(c1.inputs[1]).is_constant());
  EXPECT_EQ(w.type(c1.inputs[1]).shape, (std::vector<int64_t>{6, 6, 4, 4, 16, 16}));
  EXPECT_EQ(c1.outputs[0].layout, "NCHW16c");
  // Its bias and relu fuse with it, as with the direct convolution.
  bool fused = false;
  for (const auto& grp : test::group_members(w))
    fused |= grp == std::vector<std::string>{"c1", "r1"};
  EXPECT_TRUE(fused) << w;
  check_pipeline(g, opt);

  // choose_winograd decides per node (here: F(2) for c1); it is asked only where Winograd applies.
  std::vector<std::string> asked;
  opt.layout.choose_winograd = [&](const Graph& src, int node, int64_t ib, int64_t ob) -> int64_t {
    asked.push_back(fmt::format("{} {} {}", src.nodes[size_t(node)].name, ib, ob));
    return 2;
  };
  Graph w2 = optimize(g, opt);
  EXPECT_EQ(asked, std::vector<std::string>{"c1 16 16"});
  EXPECT_EQ(w2.type(w2.nodes[size_t(w2.at("c1"))].inputs[1]).shape, (std::vector<int64_t>{4, 4, 4, 4, 16, 16}));
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(w2, in), run_reference(g, in)), "");
  opt.layout.choose_winograd = [](const Graph&, int, int64_t, int64_t) -> int64_t { return 7; };
  try {
    optimize(g, opt);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Winograd tile 7 for conv2d 'c1' is not in 2..6"), std::string::npos)
        << e.what();
  }
}

TEST(GraphPasses, WinogradIfFasterComparesTheTunedRecords) {
  const Graph g = winograd_candidates();
  const Target llvm("llvm");
  auto record = [&](const std::string& op, std::map<std::string, std::string> attrs, double cost) {
    tuner::Task t = tuner::Task::create(op, {1, 64, 9, 10, 64, 3, 3}, llvm, "float32", std::move(attrs));
    records::Record r;
    r.workload = t.workload();
    r.target = t.target().str();
    r.config = t.space().get(t.default_index()).to_record();
    r.result.costs = {cost};
    return r;
  };
  const records::Record direct = record("conv2d_nchwc", {{"stride", "1"}, {"pad", "1"}}, 1e-3);
  const records::Record f4 = record("conv2d_nchwc_winograd", {{"pad", "1"}}, 4e-4);  // tile_size 4: the default
  const records::Record f2 = record("conv2d_nchwc_winograd", {{"pad", "1"}, {"tile_size", "2"}}, 6e-4);
  auto pick = [&](const std::vector<records::Record>& rs) {
    auto best = std::make_shared<records::ApplyHistoryBest>();
    for (const auto& r : rs) best->add(r);
    PassOptions opt;
    opt.layout.choose_winograd = winograd_if_faster(best, llvm);
    Graph w = optimize(g, opt);
    const Node& c1 = w.nodes[size_t(w.at("c1"))];
    return c1.op == "conv2d_nchwc" ? int64_t(0) : w.type(c1.inputs[1]).shape[0] - 2;
  };
  EXPECT_EQ(pick({direct, f4, f2}), 4);
  EXPECT_EQ(pick({direct, f2}), 2);
  EXPECT_EQ(pick({record("conv2d_nchwc", {{"stride", "1"}, {"pad", "1"}}, 1e-4), f4, f2}), 0);
  EXPECT_EQ(pick({f4, f2}), 0) << "without a record of the direct workload it stays direct";
  EXPECT_EQ(pick({direct}), 0);
}

TEST(GraphPasses, AlterLayoutEntersChangesBlocksAndLeavesRegions) {
  // NCHW input with 32 channels (transformed in), a 24-channel conv (block 8), a conv back to
  // 32 (NCHW8c in, NCHW16c out), a depthwise conv, pooling, an intermediate graph output (it
  // leaves the region), and dense.
  GraphBuilder b("regions");
  Value x = b.input("x", {{1, 32, 6, 6}, DataType::Float(32), "NCHW"});
  Conv2dAttrs pad1;
  pad1.padding = {1, 1};
  Value c1 = b.relu(b.conv2d(x, b.constant("w1", random_array({16, 32, 3, 3}, 1, -0.2, 0.2)), pad1, "c1"), "r1");
  Value c2 = b.conv2d(c1, b.constant("w2", random_array({24, 16, 1, 1}, 2)), {}, "c2");
  c2 = b.add(c2, b.constant("t2", random_array({24, 1, 1}, 3)), "c2_shift");
  Value c3 = b.conv2d(c2, b.constant("w3", random_array({32, 24, 1, 1}, 4, -0.3, 0.3)), {}, "c3");
  c3 = b.clip(c3, 0, 6, "c3_relu6");
  Conv2dAttrs dw = pad1;
  dw.groups = 32;
  Value d = b.conv2d(c3, b.constant("wd", random_array({32, 1, 3, 3}, 5)), dw, "dw");
  Pool2dAttrs p;
  p.pool_size = {2, 2};
  p.strides = {2, 2};
  Value pool = b.max_pool2d(d, p, "pool");
  Value gp = b.global_avg_pool2d(pool, "gap");
  Value fc = b.dense(b.flatten(gp, "flatten"), b.constant("wf", random_array({5, 32}, 6)), "fc");
  b.output(c1);
  b.output(fc);
  Graph g = b.build();

  Graph l = eliminate_dead_code(fold_constants(cancel_layout_transforms(alter_layout(g))));
  EXPECT_EQ(count_ops(l, "conv2d"), 0) << l;
  EXPECT_EQ(count_ops(l, "conv2d_nchwc"), 3);
  EXPECT_EQ(count_ops(l, "depthwise_conv2d_nchwc"), 1);
  EXPECT_EQ(count_ops(l, "dense_pack"), 1);
  EXPECT_EQ(l.nodes[size_t(l.at("c2"))].outputs[0].layout, "NCHW8c");
  EXPECT_EQ(l.nodes[size_t(l.at("c3"))].outputs[0].layout, "NCHW16c");
  EXPECT_EQ(te::ops::attr_str(l.nodes[size_t(l.at("c3"))].attrs, "layout"), "NCHW8c");
  EXPECT_EQ(l.nodes[size_t(l.at("pool"))].outputs[0].layout, "NCHW16c");
  // In: x to NCHW16c; out: r1 (a graph output) and gap (for flatten) back to NCHW.
  std::vector<std::string> transforms;
  for (const Node& n : l.nodes)
    if (n.is_op() && n.op == "layout_transform") transforms.push_back(n.name);
  EXPECT_EQ(transforms, (std::vector<std::string>{"x.NCHW16c", "gap.NCHW", "r1.NCHW"})) << l;
  EXPECT_EQ(l.type(l.outputs[0]).layout, "NCHW");
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(l, in), run_reference(g, in)), "");
}

/// A C2f block as YOLOv8 writes it: a conv's channels split in two, a conv on the second half,
/// the halves and its output joined, a conv on the join; plus slices and a join that do not
/// take whole 16-channel blocks (`aligned` false: channels 8..24, a step of 2), which must
/// stay NCHW.
Graph channel_split_concat(bool aligned) {
  GraphBuilder b(aligned ? "c2f" : "c2f_unaligned");
  Value x = b.input("x", {{1, 16, 7, 6}, DataType::Float(32), "NCHW"});
  Conv2dAttrs pad1;
  pad1.padding = {1, 1};
  Value c1 = b.conv2d(x, b.constant("w1", random_array({32, 16, 1, 1}, 1, -0.3, 0.3)), {}, "c1");
  auto slice = [&](int64_t from, int64_t to, int64_t step, const std::string& name) {
    return b.op("strided_slice", {c1},
                {{"begin", std::vector<int64_t>{0, from, 0, 0}}, {"end", std::vector<int64_t>{1, to, 7, 6}},
                 {"strides", std::vector<int64_t>{1, step, 1, 1}}},
                name);
  };
  Value s0 = aligned ? slice(0, 16, 1, "s0") : slice(8, 24, 1, "s0");
  Value s1 = aligned ? slice(16, 32, 1, "s1") : slice(0, 32, 2, "s1");
  Value m = b.conv2d(s1, b.constant("w2", random_array({aligned ? 16 : 24, 16, 3, 3}, 2, -0.2, 0.2)), pad1, "m");
  Value cat = b.op("concat", {s0, s1, m}, {{"axis", int64_t(1)}}, "cat");
  const int64_t joined = aligned ? 48 : 56;
  b.output(b.conv2d(cat, b.constant("w3", random_array({16, joined, 1, 1}, 3, -0.2, 0.2)), {}, "c3"));
  return b.build();
}

TEST(GraphPasses, AlterLayoutKeepsChannelSplitsAndConcatsBlocked) {
  Graph g = channel_split_concat(true);
  Graph l = eliminate_dead_code(fold_constants(cancel_layout_transforms(alter_layout(g))));
  for (const char* name : {"s0", "s1", "cat"})
    EXPECT_EQ(l.nodes[size_t(l.at(name))].outputs[0].layout, "NCHW16c") << name << "\n" << l;
  EXPECT_EQ(te::ops::attr_ints(l.nodes[size_t(l.at("s1"))].attrs, "begin"), (std::vector<int64_t>{0, 1, 0, 0, 0}));
  std::vector<std::string> transforms;
  for (const Node& n : l.nodes)
    if (n.is_op() && n.op == "layout_transform") transforms.push_back(n.name);
  EXPECT_EQ(transforms, (std::vector<std::string>{"x.NCHW16c", "c3.NCHW"})) << l;
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(l, in), run_reference(g, in)), "");
  check_pipeline(g);

  Graph u = channel_split_concat(false);
  Graph lu = eliminate_dead_code(fold_constants(cancel_layout_transforms(alter_layout(u))));
  for (const char* name : {"s0", "s1"})
    EXPECT_EQ(lu.nodes[size_t(lu.at(name))].outputs[0].layout, "") << name << "\n" << lu;
  in = test::graph_inputs(u);
  EXPECT_EQ(compare_outputs(run_reference(lu, in), run_reference(u, in)), "");
  check_pipeline(u);
}

TEST(GraphPasses, FoldScaleAxisIntoConvAndDense) {
  GraphBuilder b("scaled");
  Value x = b.input("x", {{2, 5}, DataType::Float(32), ""});
  Value d = b.dense(x, b.constant("w", random_array({4, 5}, 1)), b.constant("b", random_array({4}, 2)), "fc");
  Value y = b.multiply(d, b.constant("s", random_array({4}, 3, 0.5, 2)), "scale");
  y = b.add(y, b.constant("t", random_array({1}, 4)), "shift");
  y = b.op("divide", {y, b.constant("u", random_array({1, 4}, 5, 1, 2))}, {}, "div");
  b.output(b.relu(y, "relu"));
  Graph g = b.build();

  Graph f = eliminate_dead_code(fold_constants(fold_scale_axis(g)));
  EXPECT_EQ(f.num_ops(), 2u) << f;  // dense and relu
  EXPECT_EQ(f.nodes[size_t(f.at("fc"))].op, "dense");
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(f, in), run_reference(g, in)), "");

  // A scale that varies along another axis, or a second consumer, blocks folding.
  GraphBuilder c("blocked");
  x = c.input("x", {{1, 3, 4, 4}, DataType::Float(32), "NCHW"});
  Value conv = c.conv2d(x, c.constant("w", random_array({2, 3, 1, 1}, 1)), {}, "conv");
  Value by_row = c.multiply(conv, c.constant("rows", random_array({4, 1}, 2)), "by_row");
  Value conv2 = c.conv2d(x, c.constant("w2", random_array({2, 3, 1, 1}, 3)), {}, "conv2");
  Value scaled2 = c.multiply(conv2, c.constant("s2", random_array({2, 1, 1}, 4)), "scaled2");
  c.output(by_row);
  c.output(c.add(scaled2, conv2, "uses_conv2_twice"));
  Graph h = c.build();
  Graph hf = fold_scale_axis(h);
  EXPECT_EQ(count_ops(hf, "multiply"), 2) << hf;
}

TEST(GraphPasses, ConstantFoldingEvaluatesConstantSubgraphs) {
  GraphBuilder b("consts");
  Value x = b.input("x", {{4}, DataType::Float(32), ""});
  Value c1 = b.constant("c1", random_array({4}, 1));
  Value c2 = b.constant("c2", random_array({4}, 2));
  Value k = b.op("exp", {b.add(c1, c2, "sum")}, {}, "e");  // constant: folds
  b.output(b.multiply(x, k, "out"));
  Graph g = b.build();
  Graph f = eliminate_dead_code(fold_constants(g));
  EXPECT_EQ(f.num_ops(), 1u) << f;
  EXPECT_TRUE(f.nodes[size_t(f.at("e"))].is_constant());
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(float(f.nodes[size_t(f.at("e"))].value.get(i)),
                    float(std::exp(float(g.nodes[1].value.get(i) + g.nodes[2].value.get(i)))));
}

TEST(GraphPasses, CommonSubexpressionsMerge) {
  GraphBuilder b("cse");
  Value x = b.input("x", {{1, 4, 3, 3}, DataType::Float(32), "NCHW"});
  NDArray w = random_array({4, 4, 1, 1}, 1);
  Value w1 = b.constant("w1", w);
  Value w2 = b.constant("w2", w.copy());  // equal contents, another array
  Value a = b.relu(b.conv2d(x, w1, {}, "conv_a"), "relu_a");
  Value c = b.relu(b.conv2d(x, w2, {}, "conv_b"), "relu_b");
  b.output(b.add(a, c, "sum"));
  Graph g = b.build();
  Graph e = eliminate_dead_code(eliminate_common_subexpr(g));
  EXPECT_EQ(e.num_ops(), 3u) << e;
  EXPECT_EQ(e.nodes[size_t(e.at("sum"))].inputs[0], e.nodes[size_t(e.at("sum"))].inputs[1]);
  std::vector<NDArray> in = test::graph_inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(e, in), run_reference(g, in)), "");
}

TEST(GraphPasses, DeadCodeGoesInputsStay) {
  GraphBuilder b("dce");
  Value x = b.input("x", {{4}, DataType::Float(32), ""});
  Value unused = b.input("unused", {{2}, DataType::Float(32), ""});
  b.relu(unused, "dead_relu");
  b.constant("dead_const", random_array({3}, 1));
  b.output(b.relu(x, "live"));
  Graph e = eliminate_dead_code(b.build());
  EXPECT_EQ(e.num_ops(), 1u);
  EXPECT_EQ(e.input_nodes().size(), 2u);
  EXPECT_EQ(e.find("dead_const"), -1);
}

TEST(GraphPasses, LayoutTransformsCancelInPairs) {
  GraphBuilder b("pairs");
  Value x = b.input("x", {{1, 32, 2, 2}, DataType::Float(32), "NCHW"});
  Value blocked = b.layout_transform(x, "NCHW", "NCHW16c", "to_blocked");
  Value back = b.layout_transform(blocked, "NCHW16c", "NCHW", "to_plain");
  Value y = b.relu(back, "relu");
  Value same = b.layout_transform(y, "NCHW", "NCHW", "identity");
  b.output(same);
  // A pair that pads (24 channels into blocks of 16) does not cancel.
  Value x2 = b.input("x2", {{1, 24, 2, 2}, DataType::Float(32), "NCHW"});
  Value p = b.layout_transform(b.layout_transform(x2, "NCHW", "NCHW16c", "pad_up"), "NCHW16c", "NCHW", "pad_back");
  b.output(p);
  Graph g = b.build();
  Graph c = eliminate_dead_code(cancel_layout_transforms(g));
  EXPECT_EQ(count_ops(c, "layout_transform"), 2) << c;
  EXPECT_EQ(c.nodes[size_t(c.at("relu"))].inputs[0], (ValueRef{c.at("x"), 0}));
}

TEST(GraphPasses, PassManagerDisablesAndPrints) {
  Graph g = models::resnet18(test::small_model());
  PassOptions opt;
  opt.disabled = {"alter_layout"};
  std::ostringstream os;
  opt.print_to = &os;
  opt.print_after = {"fold_scale_axis"};
  Graph o = optimize(g, opt);
  EXPECT_EQ(count_ops(o, "conv2d"), 20);
  EXPECT_EQ(count_ops(o, "conv2d_nchwc"), 0);
  EXPECT_NE(os.str().find("// after fold_scale_axis\ngraph resnet18("), std::string::npos);
  EXPECT_EQ(os.str().find("// after fuse_ops"), std::string::npos);
  opt.disabled = {"no_such_pass"};
  EXPECT_THROW(PassManager{opt}, Error);
}

}  // namespace
}  // namespace loom::graph_opt
