// fuse_attention: the attention chains exporters write (as the ONNX importer turns them into
// registry operators) become one attention operator computing the same values, and the
// look-alikes that are not attention alone stay. Each graph runs through the reference before
// and after; one compiles end to end with the CPU template.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/passes.h"

namespace loom::graph_opt {
namespace {

using runtime::NDArray;
using test::compare_outputs;
using test::count_ops;

const DataType f32 = DataType::Float(32);
constexpr int64_t B = 2, H = 3, S = 10, D = 4;

/// How the chain is written.
struct Chain {
  bool mask = true;              // add a [B, 1, 1, S] mask
  bool k_inside = false;         // K as [B, H, S, D] with batch_matmul transpose_b (einsum) instead of Kᵀ
  bool scale_q_and_k = false;    // Q and K each scaled by D^-1/4 instead of the scores
  bool multiply = false;         // scores · (1/√D) instead of scores / √D
  bool add_before_scale = false;  // (scores + mask) / √D
  bool softmax_2d = false;       // opsets before 13: softmax of the [B·H·S, S] reshape
  bool merge_heads = true;       // the output transposed back to [B, S, H·D]
  bool three_d = false;          // [B·H, S, D] operands throughout (no 4-D split)
  bool key_first = false;        // scores = transpose(K·Qᵀ), as Keras's einsum 'aecd,abcd->acbe' imports
  // Look-alikes.
  int64_t softmax_axis = -1;
  bool where_mask = false;       // where(mask, scores, -1e4) instead of an add
  bool vector_scale = false;     // scores · a [S] vector
  bool return_scores = false;    // the scaled scores are a graph output too
  bool probs_twice = false;      // the probabilities read by something else too
};

Value scalar(GraphBuilder& b, const std::string& name, double v) {
  NDArray a = NDArray::empty({}, f32);
  a.set(0, v);
  return b.constant(name, a);
}

Graph chain(const Chain& c) {
  GraphBuilder b("attention_chain");
  const std::vector<int64_t> packed = {B, S, H * D};
  Value q_in = b.input("q", {c.three_d ? std::vector<int64_t>{B * H, S, D} : packed, f32, ""});
  Value k_in = b.input("k", {c.three_d ? std::vector<int64_t>{B * H, S, D} : packed, f32, ""});
  Value v_in = b.input("v", {c.three_d ? std::vector<int64_t>{B * H, S, D} : packed, f32, ""});
  Value mask = b.input("mask", {c.three_d ? std::vector<int64_t>{B * H, 1, S} : std::vector<int64_t>{B, 1, 1, S}, f32, ""});
  auto heads = [&](Value x, std::vector<int64_t> axes) {
    if (c.three_d) return x;
    return b.op("transpose", {b.reshape(x, {B, S, H, D})}, {{"axes", axes}});
  };
  Value q = heads(q_in, {0, 2, 1, 3});
  Value kt = c.k_inside ? heads(k_in, {0, 2, 1, 3}) : heads(k_in, {0, 2, 3, 1});
  Value v = heads(v_in, {0, 2, 1, 3});
  if (c.three_d && !c.k_inside) kt = b.op("transpose", {kt}, {{"axes", std::vector<int64_t>{0, 2, 1}}});
  if (c.scale_q_and_k) {
    q = b.multiply(q, scalar(b, "q_scale", std::pow(double(D), -0.25)));
    kt = b.multiply(kt, scalar(b, "k_scale", std::pow(double(D), -0.25)));
  }
  const std::vector<int64_t> frame = c.three_d ? std::vector<int64_t>{B * H, S, S} : std::vector<int64_t>{B, H, S, S};
  Value scores;
  if (c.key_first) {  // K rows times Q rows (transpose_b), then the scores transposed back
    Value k_rows = b.reshape(heads(k_in, {0, 2, 1, 3}), {B * H, S, D});
    scores = b.op("batch_matmul", {k_rows, b.reshape(q, {B * H, S, D})}, {{"transpose_b", int64_t(1)}}, "scores");
    scores = b.op("transpose", {b.reshape(scores, frame)}, {{"axes", std::vector<int64_t>{0, 1, 3, 2}}});
  } else {
    scores = b.op("batch_matmul",
                  {b.reshape(q, {B * H, S, D}), b.reshape(kt, c.k_inside ? std::vector<int64_t>{B * H, S, D}
                                                                         : std::vector<int64_t>{B * H, D, S})},
                  {{"transpose_b", int64_t(c.k_inside)}}, "scores");
    scores = b.reshape(scores, frame);
  }
  auto scale = [&](Value x) {
    if (c.scale_q_and_k) return x;
    if (c.vector_scale) return b.multiply(x, b.constant("vscale", test::random_array({S}, 9)));
    if (c.multiply) return b.multiply(x, scalar(b, "inv_sqrt_d", 1 / std::sqrt(double(D))), "scaled");
    return b.op("divide", {x, scalar(b, "sqrt_d", std::sqrt(double(D)))}, {}, "scaled");
  };
  auto add_mask = [&](Value x) {
    if (!c.mask) return x;
    if (c.where_mask) {
      Value cond = b.op("greater", {mask, scalar(b, "zero", 0.0)});
      return b.op("where", {cond, x, scalar(b, "masked", -1e4)});
    }
    return b.add(x, mask, "masked");
  };
  Value logits = c.add_before_scale ? scale(add_mask(scores)) : add_mask(scale(scores));
  if (c.return_scores) b.output(logits);
  Value probs;
  if (c.softmax_2d) {
    probs = b.reshape(b.op("softmax", {b.reshape(logits, {B * H * S, S})}, {{"axis", int64_t(1)}}, "softmax"), frame);
  } else {
    probs = b.op("softmax", {logits}, {{"axis", c.softmax_axis}}, "softmax");
  }
  if (c.probs_twice) b.output(b.op("exp", {probs}));
  Value ctx = b.op("batch_matmul", {b.reshape(probs, {B * H, S, S}), b.reshape(v, {B * H, S, D})}, {}, "context");
  if (c.three_d) {
    b.output(ctx);
  } else {
    ctx = b.reshape(ctx, {B, H, S, D});
    if (c.merge_heads) ctx = b.reshape(b.op("transpose", {ctx}, {{"axes", std::vector<int64_t>{0, 2, 1, 3}}}), packed);
    b.output(ctx);
  }
  return b.build();
}

/// The graph's inputs (the mask 0 or -10000, as BERT's).
std::vector<NDArray> inputs(const Graph& g) {
  std::vector<NDArray> in = test::graph_inputs(g);
  NDArray& mask = in.back();
  for (int64_t i = 0; i < mask.numel(); ++i) mask.set(i, i % 4 == 3 ? -10000.0 : 0.0);
  return in;
}

/// Rewrites `c`'s graph, expecting `fused` attention operators, and compares the results.
Graph rewrite(const Chain& c, int fused) {
  Graph g = chain(c);
  Graph f = fuse_attention(g);
  EXPECT_NO_THROW(verify(f));
  EXPECT_EQ(count_ops(f, "attention"), fused) << f;
  if (fused) EXPECT_EQ(count_ops(eliminate_dead_code(f), "softmax"), 0) << f;
  std::vector<NDArray> in = inputs(g);
  EXPECT_EQ(compare_outputs(run_reference(f, in), run_reference(g, in)), "") << f;
  return eliminate_dead_code(f);
}

const Node& attention_node(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.is_op() && n.op == "attention") return n;
  throw Error("no attention node");
}

TEST(FuseAttention, TorchExportReadsTheProjectionsDirectly) {
  Graph f = rewrite({}, 1);
  const Node& a = attention_node(f);
  EXPECT_EQ(te::ops::attr_int(a.attrs, "num_heads"), H);
  EXPECT_NEAR(te::ops::attr_float(a.attrs, "scale"), 0.5, 1e-12);
  EXPECT_EQ(count_ops(f, "transpose"), 0) << f;  // heads split and merged by the operator itself
  EXPECT_EQ(count_ops(f, "batch_matmul"), 0) << f;
}

TEST(FuseAttention, EinsumStyleKeyInsideTheProduct) { rewrite({.k_inside = true}, 1); }
TEST(FuseAttention, ScaleOnQueryAndKey) {
  Graph f = rewrite({.scale_q_and_k = true}, 1);
  EXPECT_NEAR(te::ops::attr_float(attention_node(f).attrs, "scale"), 0.5, 1e-6);
}
TEST(FuseAttention, MultipliedScale) { rewrite({.multiply = true}, 1); }
TEST(FuseAttention, MaskAddedBeforeTheScale) { rewrite({.add_before_scale = true}, 1); }
TEST(FuseAttention, TwoDimensionalSoftmax) { rewrite({.softmax_2d = true}, 1); }
TEST(FuseAttention, NoMask) { rewrite({.mask = false}, 1); }
TEST(FuseAttention, HeadsLeftSplitReadsFourDimensionalViews) {
  Graph f = rewrite({.merge_heads = false}, 1);
  EXPECT_EQ(te::ops::attr_int(attention_node(f).attrs, "num_heads"), 0);
}
TEST(FuseAttention, KeyFirstProductTransposedIntoTheScores) {
  Graph f = rewrite({.scale_q_and_k = true, .key_first = true}, 1);
  EXPECT_EQ(te::ops::attr_int(attention_node(f).attrs, "num_heads"), H);
  EXPECT_EQ(count_ops(f, "transpose"), 0) << f;
}
TEST(FuseAttention, FlattenedBatchAndHeads) { rewrite({.three_d = true}, 1); }
TEST(FuseAttention, FlattenedWithKeyTransposedInside) { rewrite({.k_inside = true, .three_d = true}, 1); }

TEST(FuseAttention, SoftmaxAlongAnotherAxisStays) { rewrite({.softmax_axis = 2}, 0); }
TEST(FuseAttention, MaskThatIsNotAddedStays) { rewrite({.where_mask = true}, 0); }
TEST(FuseAttention, ScaleThatIsNotAScalarStays) { rewrite({.vector_scale = true}, 0); }
TEST(FuseAttention, ScoresReadElsewhereStay) { rewrite({.return_scores = true}, 0); }
TEST(FuseAttention, ProbabilitiesReadElsewhereStay) { rewrite({.probs_twice = true}, 0); }

TEST(FuseAttention, InThePipelineAndCompiled) {
  Graph g = chain({});
  Graph opt = optimize(g);
  EXPECT_EQ(count_ops(opt, "attention"), 1) << opt;
  PassOptions off;
  off.disabled = {"fuse_attention"};
  EXPECT_EQ(count_ops(optimize(g, off), "attention"), 0);

  CompileReport report;
  runtime::Module m = compile(g, Target("llvm"), nullptr, {}, &report);
  bool templated = false;
  for (const CompiledKernel& k : report.kernels) templated |= k.ops == "attention" && k.task.op == "attention";
  EXPECT_TRUE(templated);
  std::vector<NDArray> in = inputs(g);
  NDArray out = NDArray::empty({B, S, H * D}, f32);
  std::vector<DLTensor*> args;
  for (const NDArray& a : in) args.push_back(a.dltensor());
  args.push_back(out.dltensor());
  m.get_function("run").call(args);
  EXPECT_EQ(compare_outputs({out}, run_reference(g, in)), "");
}

}  // namespace
}  // namespace loom::graph_opt
