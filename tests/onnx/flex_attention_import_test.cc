// ai.onnx.preview's FlexAttention through the importer: the attention of rank-4 Q, K and V
// (grouped-query too) with its score_mod and prob_mod subgraphs imported inline, against a
// naive loop computing ONNX's definition, in the reference execution and compiled; subgraph
// names stay local (two nodes may share a modifier's names); malformed nodes, modifiers and
// preview opsets are clean errors naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>

#include "import_test_util.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

constexpr const char* kPreview = "ai.onnx.preview";

/// score_mod: scores + bias (an initializer of the subgraph named "bias").
GraphPb add_bias(float bias) {
  GraphPb g;
  g.inputs = {Pb().s(1, "scores").m(2, Pb().m(1, Pb().i(1, kFloat)))};  // no shape, as the symbolic dims are left out
  g.inits = {floats_tensor("bias", {}, {bias})};
  g.nodes = {node("Add", {"scores", "bias"}, {"scores_out"}, "add")};
  g.outputs = {Pb().s(1, "scores_out")};
  return g;
}

/// prob_mod: probs * scale.
GraphPb scale_probs(float scale) {
  GraphPb g;
  g.inputs = {Pb().s(1, "probs").m(2, Pb().m(1, Pb().i(1, kFloat)))};
  g.inits = {floats_tensor("scale", {}, {scale})};
  g.nodes = {node("Mul", {"probs", "scale"}, {"probs_out"}, "mul")};
  g.outputs = {Pb().s(1, "probs_out")};
  return g;
}

/// y = FlexAttention(q, k, v) (twice, chained through a second node on y, when `two`).
ModelPb flex_model(std::vector<int64_t> qs, std::vector<int64_t> ks, std::vector<int64_t> vs, std::vector<Pb> attrs,
                   bool two = false) {
  ModelPb m;
  m.opset = 26;
  m.domains = {{kPreview, 1}};
  m.inputs = {value("q", qs), value("k", ks), value("v", vs)};
  m.nodes = {in_domain(node("FlexAttention", {"q", "k", "v"}, {two ? "y1" : "y"}, "flex", attrs), kPreview)};
  if (two) m.nodes.push_back(in_domain(node("FlexAttention", {"y1", "k", "v"}, {"y"}, "flex2", attrs), kPreview));
  m.outputs = {Pb().s(1, "y")};
  return m;
}

NDArray random(std::vector<int64_t> shape, uint64_t seed) {
  NDArray a = NDArray::empty(std::move(shape), DataType::Float(32));
  a.fill_random(seed, 0.0, 1.0);
  return a;
}

/// ONNX's FlexAttention in double: softmax(score_mod(scale · Q·Kᵀ)) then prob_mod, times V;
/// query head h reads key head h / (Hq / Hkv).
std::vector<double> naive_flex(const NDArray& q, const NDArray& k, const NDArray& v, double scale, double bias,
                               double prob_scale) {
  const auto qs = q.shape(), ks = k.shape(), vs = v.shape();
  const int64_t B = qs[0], Hq = qs[1], L = qs[2], E = qs[3], Hk = ks[1], S = ks[2], Ev = vs[3];
  std::vector<double> y(static_cast<size_t>(B * Hq * L * Ev), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hk);
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(static_cast<size_t>(S));
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (int64_t e = 0; e < E; ++e)
            d += q.get(((b * Hq + h) * L + i) * E + e) * k.get(((b * Hk + hk) * S + j) * E + e);
          s[size_t(j)] = d * scale + bias;
          mx = std::max(mx, s[size_t(j)]);
        }
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < S; ++j)
          for (int64_t e = 0; e < Ev; ++e)
            y[size_t(((b * Hq + h) * L + i) * Ev + e)] +=
                s[size_t(j)] / sum * prob_scale * v.get(((b * Hk + hk) * S + j) * Ev + e);
      }
    }
  return y;
}

void expect_both_modes(const Graph& g, const std::vector<NDArray>& args, const std::vector<double>& want) {
  expect_values(graph_opt::run_reference(g, args).at(0), want, 1e-5, "reference");
  expect_values(run_compiled(g, args).at(0), want, 1e-5, "compiled");
}

TEST(FlexAttentionImport, MatchesTheNaiveAttentionWithGroupedHeadsAndScale) {
  REQUIRE_FRONTEND();
  NDArray q = random({2, 4, 5, 8}, 1), k = random({2, 2, 7, 8}, 2), v = random({2, 2, 7, 6}, 3);
  Graph g = graph_opt::import_onnx_bytes(flex_model(q.shape(), k.shape(), v.shape(), {}).bytes(), "m.onnx");
  expect_both_modes(g, {q, k, v}, naive_flex(q, k, v, 1 / std::sqrt(8.0), 0, 1));
  Graph scaled = graph_opt::import_onnx_bytes(
      flex_model(q.shape(), k.shape(), v.shape(), {attr_float("scale", 0.25f)}).bytes(), "m.onnx");
  expect_both_modes(scaled, {q, k, v}, naive_flex(q, k, v, 0.25, 0, 1));
}

TEST(FlexAttentionImport, ScoreModAndProbModSubgraphsApplyInline) {
  REQUIRE_FRONTEND();
  NDArray q = random({1, 2, 3, 4}, 4), k = random({1, 2, 5, 4}, 5), v = random({1, 2, 5, 4}, 6);
  Graph g = graph_opt::import_onnx_bytes(
      flex_model(q.shape(), k.shape(), v.shape(),
                 {attr_graph("score_mod", add_bias(3.0f)), attr_graph("prob_mod", scale_probs(0.5f))})
          .bytes(),
      "m.onnx");
  // A constant added to every score leaves the softmax unchanged; the probabilities are halved.
  expect_both_modes(g, {q, k, v}, naive_flex(q, k, v, 0.5, 3, 0.5));
}

TEST(FlexAttentionImport, TwoNodesMayShareTheirModifiersNames) {
  REQUIRE_FRONTEND();
  NDArray q = random({1, 2, 5, 4}, 7), k = random({1, 2, 5, 4}, 8), v = random({1, 2, 5, 4}, 9);
  Graph g = graph_opt::import_onnx_bytes(
      flex_model(q.shape(), k.shape(), v.shape(), {attr_graph("prob_mod", scale_probs(2.0f))}, true).bytes(), "m.onnx");
  NDArray y1 = NDArray::from_vector(naive_flex(q, k, v, 0.5, 0, 2), {1, 2, 5, 4}, DataType::Float(32));
  expect_both_modes(g, {q, k, v}, naive_flex(y1, k, v, 0.5, 0, 2));
}

TEST(FlexAttentionImport, MalformedNodesAndModifiersAreErrors) {
  REQUIRE_FRONTEND();
  auto err = [](const ModelPb& m) { return import_error(m.bytes()); };
  std::string e = err(flex_model({2, 5, 8}, {2, 7, 8}, {2, 7, 6}, {}));
  EXPECT_NE(e.find("must all be rank 4"), std::string::npos) << e;
  e = err(flex_model({1, 3, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {}));
  EXPECT_NE(e.find("do not fit together"), std::string::npos) << e;
  e = err(flex_model({1, 2, 5, 8}, {1, 2, 7, 4}, {1, 2, 7, 6}, {}));
  EXPECT_NE(e.find("do not fit together"), std::string::npos) << e;
  e = err(flex_model({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {attr_int("softmax_precision", kInt32)}));
  EXPECT_NE(e.find("softmax_precision is int32"), std::string::npos) << e;
  e = err(flex_model({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {attr_int("score_mod", 1)}));
  EXPECT_NE(e.find("attribute 'score_mod' has type INT, expected GRAPH"), std::string::npos) << e;
  // A modifier that changes the shape (a reduction), takes two inputs, or reads a name it lacks.
  GraphPb reduce = add_bias(1);
  reduce.nodes.push_back(node("ReduceSum", {"scores_out"}, {"summed"}, "sum", {attr_int("keepdims", 0)}));
  reduce.outputs = {Pb().s(1, "summed")};
  e = err(flex_model({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {attr_graph("score_mod", reduce)}));
  EXPECT_NE(e.find("score_mod turns float32[1,2,5,7] into"), std::string::npos) << e;
  GraphPb two_in = add_bias(1);
  two_in.inputs.push_back(value("extra", {1}));
  e = err(flex_model({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {attr_graph("prob_mod", two_in)}));
  EXPECT_NE(e.find("subgraph prob_mod has 2 inputs; it takes 1"), std::string::npos) << e;
  GraphPb dangling = scale_probs(1);
  dangling.nodes = {node("Mul", {"probs", "no_such"}, {"probs_out"}, "mul")};
  e = err(flex_model({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {attr_graph("prob_mod", dangling)}));
  EXPECT_NE(e.find("the value its subgraph reads 'no_such' is not a graph input"), std::string::npos) << e;
  GraphPb wrong_type = scale_probs(1);
  wrong_type.inputs = {value("probs", {}, kDouble)};
  e = err(flex_model({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {attr_graph("prob_mod", wrong_type)}));
  EXPECT_NE(e.find("input 'probs' is declared DOUBLE but takes float32"), std::string::npos) << e;
  // The preview domain must be imported, and in a version loom knows.
  ModelPb m = flex_model({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 6}, {});
  m.domains = {};
  e = err(m);
  EXPECT_NE(e.find("does not import the domain 'ai.onnx.preview'"), std::string::npos) << e;
  m.domains = {{kPreview, 2}};
  e = err(m);
  EXPECT_NE(e.find("ai.onnx.preview opset 2 is newer than 1"), std::string::npos) << e;
}

}  // namespace
}  // namespace loom::test::onnx_writer
