// Reshapes cost nothing: a reshape of an intermediate value is a view (no kernel, its source's
// storage, the source kept alive while the view is read); sink_reshapes moves reshapes out of
// an anchor's epilogue; a reshape of a graph input reads the caller's buffer, one into a graph
// output is a copy. Every compiled graph is compared with the reference execution, in process
// and exported.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/process_util.h"
#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/memory_plan.h"
#include "loom/graph_opt/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph_opt {
namespace {

using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

std::vector<NDArray> run(const Module& m, const Graph& g, const std::vector<NDArray>& inputs) {
  std::vector<NDArray> outs;
  std::vector<DLTensor*> args;
  for (const auto& a : inputs) args.push_back(a.dltensor());
  for (ValueRef v : g.outputs) {
    outs.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
    args.push_back(outs.back().dltensor());
  }
  m.get_function("run").call(args);
  return outs;
}

int view_groups(const Graph& g) {
  int n = 0;
  for (const FusedGroup& grp : g.groups) n += is_view_group(g, grp);
  return n;
}

/// Whether some kernel's operators are exactly `ops`.
bool has_kernel(const CompileReport& r, const std::string& ops) {
  for (const CompiledKernel& k : r.kernels)
    if (k.ops == ops) return true;
  return false;
}

/// Compiles `g`, runs it in process and through its exported library, and compares both
/// with the reference execution.
CompileReport compile_and_check(const Graph& g, const CompileOptions& opt = {}) {
  auto inputs = test::graph_inputs(g, 11);
  auto want = run_reference(g, inputs);
  CompileReport report;
  Module m = compile(g, Target("llvm"), nullptr, opt, &report);
  EXPECT_EQ(test::compare_outputs(run(m, g, inputs), want), "");
  std::string path = (test::scratch_dir("loom-reshape-view-test") / (g.name + ".so")).string();
  m.export_library(path);
  EXPECT_EQ(test::compare_outputs(run(Module::load(path), g, inputs), want), "") << "exported";
  return report;
}

/// dense -> reshape -> dense: the reshape sits between two anchors, so fusion cannot take it.
Graph dense_reshape_dense() {
  GraphBuilder b("dense_reshape_dense");
  Value x = b.input("x", {{4, 8}, f32, ""});
  Value h = b.dense(x, b.constant("w1", test::random_array({16, 8}, 1)), "dense1");
  Value r = b.reshape(h, {8, 8}, "split");
  b.output(b.dense(r, b.constant("w2", test::random_array({4, 8}, 2)), "dense2"));
  return b.build();
}

TEST(ReshapeView, AReshapeBetweenAnchorsRunsNoKernel) {
  CompileReport r = compile_and_check(dense_reshape_dense());
  EXPECT_EQ(view_groups(r.fused), 1);
  EXPECT_EQ(r.kernels.size(), 2u);
  EXPECT_FALSE(has_kernel(r, "reshape"));
  ASSERT_EQ(r.memory.views.size(), 1u);
  const ValueRef view = r.memory.views.begin()->first, source = r.memory.views.begin()->second;
  EXPECT_EQ(r.fused.node(view).name, "split");
  EXPECT_EQ(r.fused.node(source).name, "dense1");
  EXPECT_EQ(r.memory.find(view), r.memory.find(source));
}

TEST(ReshapeView, ViewsStayViewsWithoutFusion) {
  CompileOptions opt;
  opt.passes.opt_level = 0;
  CompileReport r = compile_and_check(dense_reshape_dense(), opt);
  EXPECT_EQ(r.kernels.size(), 2u);
}

// The source's storage must outlive every reader of its view: dense1's value is read only
// through the view, by the last kernel, while other values are computed in between (which
// the planner would place over dense1's bytes if its lifetime ended at the view).
TEST(ReshapeView, TheSourceLivesAsLongAsItsViewIsRead) {
  GraphBuilder b("view_outlives");
  Value x = b.input("x", {{4, 8}, f32, ""});
  Value h = b.dense(x, b.constant("w1", test::random_array({16, 8}, 3)), "dense1");
  Value r = b.reshape(h, {8, 8}, "split");
  Value y = x;
  for (int i = 0; i < 4; ++i)
    y = b.op("softmax", {b.dense(y, b.constant("wb" + std::to_string(i), test::random_array({8, 8}, 10 + i)))});
  Value z = b.dense(r, b.constant("w2", test::random_array({4, 8}, 4)), "dense2");  // [8, 4]
  b.output(b.add(z, b.reshape(b.dense(y, b.constant("w3", test::random_array({8, 8}, 5))), {8, 4})));
  Graph g = b.build();
  CompileReport rep = compile_and_check(g);
  EXPECT_GE(view_groups(rep.fused), 1);
  const StorageEntry* e = rep.memory.find(ValueRef{rep.fused.at("dense1"), 0});
  ASSERT_NE(e, nullptr);
  int dense2_group = rep.fused.group_of()[size_t(rep.fused.at("dense2"))];
  EXPECT_GE(e->last_step, dense2_group) << rep.memory.report(rep.fused);
}

TEST(ReshapeView, AReshapeOfAGraphInputIsAViewOneIntoAGraphOutputACopy) {
  GraphBuilder b("io_reshapes");
  Value x = b.input("x", {{2, 16}, f32, ""});
  Value flat = b.reshape(x, {4, 8}, "in_view");
  Value h = b.dense(flat, b.constant("w", test::random_array({6, 8}, 6)), "dense");
  b.output(b.reshape(h, {2, 12}, "out_copy"));
  b.output(h);
  b.output(x);
  Graph g = b.build();
  CompileReport r = compile_and_check(g);
  ASSERT_EQ(r.memory.views.size(), 1u);
  EXPECT_EQ(r.fused.node(r.memory.views.begin()->first).name, "in_view");
  EXPECT_EQ(r.fused.node(r.memory.views.begin()->second).name, "x");
  EXPECT_EQ(r.memory.find(r.memory.views.begin()->first), nullptr) << "the caller's buffer, not the arena";
  EXPECT_TRUE(has_kernel(r, "reshape")) << "out_copy writes the caller's output buffer";
  EXPECT_EQ(r.kernels.size(), 2u);
}

TEST(ReshapeView, AReshapeBeforeTheBiasAndActivationLeavesTheAnchorsKernel) {
  // BERT's dense: matmul on [S, K] rows, reshaped to [1, S, N], plus bias, GELU.
  GraphBuilder b("dense_bias_gelu");
  Value x = b.input("x", {{6, 8}, f32, ""});
  Value h = b.dense(x, b.constant("w", test::random_array({16, 8}, 7)), "dense");
  Value r = b.reshape(h, {1, 6, 16}, "unflatten");
  Value a = b.add(r, b.constant("b", test::random_array({16}, 8)), "bias");
  Value gl = b.op("gelu", {a}, {}, "gelu");
  Value back = b.reshape(gl, {6, 16}, "flatten");
  b.output(b.dense(back, b.constant("w2", test::random_array({4, 16}, 9)), "dense2"));
  Graph g = b.build();
  CompileReport rep = compile_and_check(g);
  ASSERT_EQ(rep.kernels.size(), 2u);
  EXPECT_EQ(rep.kernels[0].ops.rfind("dense", 0), 0u) << rep.kernels[0].ops;
  EXPECT_NE(rep.kernels[0].ops.find("+add+gelu"), std::string::npos) << rep.kernels[0].ops;
  for (const CompiledKernel& k : rep.kernels) EXPECT_EQ(k.ops.find("reshape"), std::string::npos) << k.ops;
}

TEST(ReshapeView, SinkReshapesKeepsOperandsThatDoNotLineUp) {
  // The bias varies along dim 1 of [2, 3, 4], which the reshape from [6, 4] splits: no sinking.
  GraphBuilder b("misaligned");
  Value x = b.input("x", {{6, 4}, f32, ""});
  Value r = b.reshape(b.op("relu", {x}), {2, 3, 4}, "split");
  b.output(b.add(r, b.constant("b", test::random_array({3, 1}, 12)), "bias"));
  Graph g = b.build();
  Graph s = sink_reshapes(g);
  EXPECT_EQ(s.nodes[size_t(s.at("bias"))].op, "add");
  auto inputs = test::graph_inputs(g);
  EXPECT_EQ(test::compare_outputs(run_reference(s, inputs), run_reference(g, inputs)), "");

  // A bias along the trailing dim does sink, and the reshape of a reshape merges.
  GraphBuilder c("aligned");
  Value y = c.input("y", {{6, 4}, f32, ""});
  Value t = c.reshape(c.reshape(c.op("relu", {y}), {24}), {2, 3, 4}, "split");
  Value u = c.add(t, c.constant("b", test::random_array({1, 1, 4}, 13)), "bias");
  c.output(c.op("softmax", {u}));
  Graph h = c.build();
  Graph sh = eliminate_dead_code(fold_constants(sink_reshapes(h)));
  EXPECT_EQ(sh.nodes[size_t(sh.at("bias"))].op, "reshape");
  EXPECT_EQ(sh.type(sh.nodes[size_t(sh.at("bias"))].inputs[0]).shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(test::count_ops(sh, "reshape"), 1);
  auto in2 = test::graph_inputs(h);
  EXPECT_EQ(test::compare_outputs(run_reference(sh, in2), run_reference(h, in2)), "");
}

TEST(ReshapeView, PlanValidationTracksViews) {
  Graph g = dense_reshape_dense();
  LoweredGraph lg = lower_graph(g, Target("llvm"));
  runtime::GraphPlan plan = lg.plan;
  int view = -1;
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].view_of >= 0) view = int(i);
  ASSERT_GE(view, 0);
  for (auto& k : plan.kernels) k.writes.assign(k.args.size(), false);
  for (auto& k : plan.kernels) k.writes.back() = true;  // dense writes its last argument
  plan.validate();
  runtime::GraphPlan moved = plan;
  moved.tensors[size_t(view)].arena_offset += 64;
  moved.arena_bytes += 64;
  EXPECT_THROW(moved.validate(), Error);
  runtime::GraphPlan written = plan;
  written.kernels[1].args.back() = view;
  EXPECT_THROW(written.validate(), Error);
}

}  // namespace
}  // namespace loom::graph_opt
