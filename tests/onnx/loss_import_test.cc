// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss through the importer: every reduction
// with and without class weights and ignore_index, against loops written from ONNX's
// definitions, in the reference execution and compiled; SoftmaxCrossEntropyLoss's log_prob
// output; malformed nodes are errors naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "import_test_util.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

struct LossCase {
  std::string reduction;
  bool weighted = false;
  std::optional<int64_t> ignore;
};

/// One loss node on x [N, C, d...], target [N, d...] (int64) and, when weighted, weight [C].
ModelPb loss_model(const std::string& op, const std::vector<int64_t>& xs, const LossCase& c, bool log_prob = false,
                   int64_t opset = 13) {
  ModelPb m;
  m.opset = opset;
  std::vector<int64_t> ts = xs;
  ts.erase(ts.begin() + 1);
  m.inputs = {value("x", xs), value("t", ts, kInt64)};
  std::vector<std::string> ins = {"x", "t"};
  if (c.weighted) {
    m.inputs.push_back(value("w", {xs[1]}));
    ins.push_back("w");
  }
  std::vector<Pb> attrs = {attr_str("reduction", c.reduction)};
  if (c.ignore) attrs.push_back(attr_int("ignore_index", *c.ignore));
  std::vector<std::string> outs = {"loss"};
  if (log_prob) outs.push_back("log_prob");
  m.nodes = {node(op, ins, outs, "loss_node", attrs)};
  for (const auto& o : outs) m.outputs.push_back(Pb().s(1, o));
  return m;
}

/// ONNX's loss of log-probabilities lp [N, C, rest] (flat): per element −lp[n, t, d]·w[t]
/// (0 where t is ignored), then none, sum, or mean (sum / sum of the weights applied).
std::vector<double> naive_loss(const std::vector<double>& lp, const std::vector<int64_t>& xs, const NDArray& t,
                               const NDArray* w, const LossCase& c) {
  const int64_t n = xs[0], cls = xs[1], rest = t.numel() / n;
  std::vector<double> loss(static_cast<size_t>(t.numel()));
  double sum = 0, weights = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < rest; ++d) {
      const int64_t k = int64_t(t.get(i * rest + d));
      const bool ignored = c.ignore && k == *c.ignore;
      const double wk = ignored ? 0 : w ? w->get(k) : 1;
      const double l = ignored ? 0 : -lp[size_t((i * cls + k) * rest + d)] * wk;
      loss[size_t(i * rest + d)] = l;
      sum += l;
      weights += wk;
    }
  if (c.reduction == "none") return loss;
  return {c.reduction == "sum" ? sum : sum / weights};
}

std::vector<double> values(const NDArray& a) {
  std::vector<double> v(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) v[size_t(i)] = a.get(i);
  return v;
}

/// log_softmax of x [N, C, rest] along C.
std::vector<double> naive_log_softmax(const NDArray& x) {
  const int64_t n = x.shape()[0], c = x.shape()[1], rest = x.numel() / (n * c);
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < rest; ++d) {
      double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, x.get((i * c + k) * rest + d));
      for (int64_t k = 0; k < c; ++k) s += std::exp(x.get((i * c + k) * rest + d) - mx);
      for (int64_t k = 0; k < c; ++k) out[size_t((i * c + k) * rest + d)] = x.get((i * c + k) * rest + d) - mx - std::log(s);
    }
  return out;
}

/// Every reduction, with and without weights, without, with an in-range and with a negative ignore_index.
std::vector<LossCase> all_cases() {
  std::vector<LossCase> cases;
  for (const char* r : {"none", "sum", "mean"})
    for (bool weighted : {false, true})
      for (std::optional<int64_t> ignore : {std::optional<int64_t>(), std::optional<int64_t>(1), std::optional<int64_t>(-5)})
        cases.push_back({r, weighted, ignore});
  return cases;
}

void check(const Graph& g, const std::vector<NDArray>& args, const std::vector<std::vector<double>>& want) {
  const std::vector<NDArray> ref = graph_opt::run_reference(g, args), comp = run_compiled(g, args);
  ASSERT_EQ(ref.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    expect_values(ref[k], want[k], 1e-5, "reference output " + std::to_string(k));
    expect_values(comp[k], want[k], 1e-5, "compiled output " + std::to_string(k));
  }
}

TEST(LossImport, NegativeLogLikelihoodLossEveryReductionWeightAndIgnoreIndex) {
  REQUIRE_FRONTEND();
  const std::vector<int64_t> xs = {3, 4, 2, 3};
  NDArray x = NDArray::empty(xs, DataType::Float(32)), w = NDArray::empty({4}, DataType::Float(32));
  x.fill_random(1, -3.0, 0.0);
  w.fill_random(2, 0.5, 2.0);
  NDArray t = NDArray::from_vector({0, 1, 2, 3, 1, 1, 3, 2, -5, 0, 1, 2, 1, 1, 0, 3, 2, -5}, {3, 2, 3}, DataType::Int(64));
  for (const LossCase& c : all_cases()) {
    SCOPED_TRACE(::testing::Message() << c.reduction << (c.weighted ? ", weighted" : "") << ", ignore_index "
                                      << (c.ignore ? std::to_string(*c.ignore) : "none"));
    // Without ignore_index a target of -5 is out of range: it is clamped (class 0), which the loops do by hand.
    NDArray tc = t;
    if (!c.ignore || *c.ignore != -5) tc = NDArray::from_vector({0, 1, 2, 3, 1, 1, 3, 2, 0, 0, 1, 2, 1, 1, 0, 3, 2, 0}, {3, 2, 3}, DataType::Int(64));
    Graph g = graph_opt::import_onnx_bytes(loss_model("NegativeLogLikelihoodLoss", xs, c).bytes(), "m.onnx");
    std::vector<NDArray> args = {x, tc};
    if (c.weighted) args.push_back(w);
    check(g, args, {naive_loss(values(x), xs, tc, c.weighted ? &w : nullptr, c)});
  }
}

TEST(LossImport, SoftmaxCrossEntropyLossAndItsLogProb) {
  REQUIRE_FRONTEND();
  const std::vector<int64_t> xs = {4, 5};
  NDArray x = NDArray::empty(xs, DataType::Float(32)), w = NDArray::empty({5}, DataType::Float(32));
  x.fill_random(3, -2.0, 2.0);
  w.fill_random(4, 0.5, 2.0);
  NDArray t = NDArray::from_vector({4, 1, 0, 1}, {4}, DataType::Int(64));
  const std::vector<double> lp = naive_log_softmax(x);
  for (const LossCase& c : all_cases()) {
    if (c.ignore && *c.ignore < 0) continue;
    SCOPED_TRACE(::testing::Message() << c.reduction << (c.weighted ? ", weighted" : "") << ", ignore_index "
                                      << (c.ignore ? std::to_string(*c.ignore) : "none"));
    Graph g = graph_opt::import_onnx_bytes(loss_model("SoftmaxCrossEntropyLoss", xs, c, true).bytes(), "m.onnx");
    std::vector<NDArray> args = {x, t};
    if (c.weighted) args.push_back(w);
    check(g, args, {naive_loss(lp, xs, t, c.weighted ? &w : nullptr, c), lp});
  }
  // The default reduction is the mean; opset 12 reads the same.
  Graph g = graph_opt::import_onnx_bytes(loss_model("SoftmaxCrossEntropyLoss", xs, {"mean"}, false, 12).bytes(), "m.onnx");
  check(g, {x, t}, {naive_loss(lp, xs, t, nullptr, {"mean"})});
}

TEST(LossImport, MalformedLossNodesAreErrors) {
  REQUIRE_FRONTEND();
  auto err = [](const ModelPb& m) { return import_error(m.bytes()); };
  std::string e = err(loss_model("NegativeLogLikelihoodLoss", {3, 4}, {"average"}));
  EXPECT_NE(e.find("reduction 'average' is not none, sum or mean"), std::string::npos) << e;
  EXPECT_NE(e.find("(NegativeLogLikelihoodLoss)"), std::string::npos) << e;
  ModelPb m = loss_model("NegativeLogLikelihoodLoss", {3, 4, 2}, {"sum"});
  m.inputs[1] = value("t", {3, 3}, kInt64);
  e = err(m);
  EXPECT_NE(e.find("input [3,4,2] must be [N, C, d1, ...] and target [3,3] [N, d1, ...]"), std::string::npos) << e;
  m.inputs[1] = value("t", {3, 2}, kFloat);
  e = err(m);
  EXPECT_NE(e.find("target must be int32 or int64, got float32"), std::string::npos) << e;
  m = loss_model("SoftmaxCrossEntropyLoss", {3, 4}, {"sum", true});
  m.inputs[2] = value("w", {5});
  e = err(m);
  EXPECT_NE(e.find("weight float32 [5] must be float32 [C] = [4]"), std::string::npos) << e;
  m = loss_model("SoftmaxCrossEntropyLoss", {3, 4}, {"sum"});
  m.inputs[0] = value("x", {3, 4}, kInt32);
  e = err(m);
  EXPECT_NE(e.find("scores type int32"), std::string::npos) << e;
  m = loss_model("SoftmaxCrossEntropyLoss", {3, 4}, {"sum"});
  m.nodes[0] = node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss"}, "loss_node", {attr_float("ignore_index", 1.5f)});
  e = err(m);
  EXPECT_NE(e.find("attribute 'ignore_index' has type FLOAT, expected INT"), std::string::npos) << e;
  e = err(loss_model("SoftmaxCrossEntropyLoss", {3, 4}, {"sum"}, false, 11));
  EXPECT_NE(e.find("exists from opset 12"), std::string::npos) << e;
}

}  // namespace
}  // namespace loom::test::onnx_writer
