// Models at older opsets import with their operator versions' meaning (issue 32): the
// opset range loom reads, and for each converter whose operator changed between opsets 7
// and 28 a model at each side of the change, checked against values computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/cli_test_util.h"
#include "loom/graph_opt/onnx.h"
#include "common/onnx_model_writer.h"

namespace loom::onnx_test {
namespace {

using graph_opt::import_onnx_bytes;
using graph_opt::OnnxUnsupported;

#define REQUIRE_FRONTEND() \
  if (!graph_opt::onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend"

/// The message importing `m` throws ("" when it imports).
std::string import_error(const Model& m) {
  try {
    import_onnx_bytes(m.bytes(), "m.onnx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// The model's first output for `args`, run by the reference evaluator and compiled (which
/// must agree).
std::vector<double> run(const Model& m, const std::vector<runtime::NDArray>& args, int output = 0) {
  graph_opt::Graph g = import_onnx_bytes(m.bytes(), "m.onnx");
  std::vector<double> ref = values(run_graph(g, "reference", args).at(size_t(output)));
  std::vector<double> compiled = values(run_graph(g, "compiled", args).at(size_t(output)));
  EXPECT_EQ(ref.size(), compiled.size());
  for (size_t i = 0; i < ref.size() && i < compiled.size(); ++i)
    EXPECT_NEAR(ref[i], compiled[i], 1e-5 * std::max(1.0, std::abs(ref[i]))) << i;
  return ref;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

/// One unary node `op` on x of `shape`, at `opset`.
Model unary(const std::string& op, const std::vector<std::string>& shape, int64_t opset, const std::vector<Pb>& attrs = {}) {
  Model m;
  m.opset = opset;
  m.inputs = {value("x", shape)};
  m.nodes = {node(op, {"x"}, {"y"}, attrs)};
  m.outputs = {untyped("y")};
  return m;
}

TEST(OnnxOpsets, SevenToTheNewestImportOlderAndNewerAreRefused) {
  REQUIRE_FRONTEND();
  for (int opset : {7, 9, 11, 12, 13, 18, graph_opt::kNewestOnnxOpset})
    EXPECT_EQ(import_error(unary("Relu", {"2"}, opset)), "") << "opset " << opset;
  Model old = unary("Relu", {"2"}, 6);
  try {
    import_onnx_bytes(old.bytes(), "m.onnx");
    FAIL() << "opset 6 was imported";
  } catch (const OnnxUnsupported& e) {
    EXPECT_HAS(std::string(e.what()), "opset 6 is older than 7, the oldest loom imports (convert it with "
                                      "onnx.version_converter)");
  }
  Model young = unary("Relu", {"2"}, graph_opt::kNewestOnnxOpset + 1);
  EXPECT_HAS(import_error(young), fmt::format("opset {} is newer than {}, the newest loom imports",
                                              graph_opt::kNewestOnnxOpset + 1, graph_opt::kNewestOnnxOpset));
}

TEST(OnnxOpsets, AnOperatorYoungerThanTheModelsOpsetIsAnError) {
  REQUIRE_FRONTEND();
  EXPECT_HAS(import_error(unary("Gelu", {"2"}, 17)), "operator Gelu exists from opset 20; the model imports opset 17");
  EXPECT_HAS(import_error(unary("LayerNormalization", {"2", "3"}, 16)), "operator LayerNormalization exists from opset 17");
  EXPECT_EQ(import_error(unary("Gelu", {"2"}, 20)), "");
}

/// Softmax-like `kind` of x [2,2,3] (values 0..11, scaled) along the coerced 2-D rows
/// [rows, 12/rows] (`rows` 2) or along axis 1 of the 3-D tensor.
std::vector<double> naive(const std::string& op, const std::vector<double>& x, bool coerced) {
  std::vector<double> y(x.size());
  // Groups of indices normalized together.
  std::vector<std::vector<size_t>> groups;
  if (coerced) {
    for (size_t r = 0; r < 2; ++r) {
      groups.emplace_back();
      for (size_t c = 0; c < 6; ++c) groups.back().push_back(r * 6 + c);
    }
  } else {
    for (size_t n = 0; n < 2; ++n)
      for (size_t k = 0; k < 3; ++k) groups.push_back({n * 6 + k, n * 6 + 3 + k});
  }
  for (const auto& g : groups) {
    double mx = -INFINITY, sum = 0;
    size_t first = g[0];
    for (size_t i : g)
      if (x[i] > mx) mx = x[i], first = i;
    for (size_t i : g) sum += std::exp(x[i] - mx);
    for (size_t i : g) {
      if (op == "Softmax") y[i] = std::exp(x[i] - mx) / sum;
      if (op == "LogSoftmax") y[i] = x[i] - mx - std::log(sum);
      if (op == "Hardmax") y[i] = i == first ? 1.0 : 0.0;
    }
  }
  return y;
}

TEST(OnnxOpsets, SoftmaxFamilyBefore13CoercesTo2DAtAxis) {
  REQUIRE_FRONTEND();
  // Ties in the second row: Hardmax takes the first maximum.
  std::vector<double> x{0.5, -1, 2, 3, 0.25, 1, 4, 4, -2, 1, 0, 4};
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    SCOPED_TRACE(op);
    // Opset 11, axis 1: [2,2,3] as [2,6], each row normalized.
    expect_near(run(unary(op, {"2", "2", "3"}, 11, {attr_int("axis", 1)}), {array({2, 2, 3}, x)}), naive(op, x, true));
    // The default axis is 1 before 13 too.
    expect_near(run(unary(op, {"2", "2", "3"}, 9), {array({2, 2, 3}, x)}), naive(op, x, true));
    // Opset 13, axis 1: along the axis of extent 2 alone.
    expect_near(run(unary(op, {"2", "2", "3"}, 13, {attr_int("axis", 1)}), {array({2, 2, 3}, x)}), naive(op, x, false));
  }
}

TEST(OnnxOpsets, SqueezeAndUnsqueezeAxesAreAnAttributeBefore13AndAnInputFrom13) {
  REQUIRE_FRONTEND();
  std::vector<double> x{1, 2, 3};
  for (int64_t opset : {7, 11, 12}) {
    Model m = unary("Unsqueeze", {"3"}, opset, {attr_ints("axes", {0, 2})});
    graph_opt::Graph g = import_onnx_bytes(m.bytes(), "m.onnx");
    EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{1, 3, 1})) << opset;
    Model s = unary("Squeeze", {"1", "3", "1"}, opset, {attr_ints("axes", {2})});
    g = import_onnx_bytes(s.bytes(), "m.onnx");
    EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{1, 3})) << opset;
  }
  // From 13 the axes are an input; the attribute is not part of the operator.
  Model m = unary("Unsqueeze", {"3"}, 13);
  m.nodes = {node("Unsqueeze", {"x", "axes"}, {"y"})};
  m.inits = {int64s("axes", {1}, {1})};
  graph_opt::Graph g = import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{3, 1}));
  m.nodes = {node("Unsqueeze", {"x", "axes"}, {"y"}, {attr_ints("axes", {0})})};
  EXPECT_HAS(import_error(m), "attribute 'axes' is not supported");
  // Before 13 an axes input is not part of the operator.
  m.opset = 12;
  m.nodes = {node("Unsqueeze", {"x", "axes"}, {"y"})};
  EXPECT_HAS(import_error(m), "input 1 (axes) is from opset 13; the model imports opset 12, whose axes are an attribute");
  Model old = unary("Squeeze", {"1", "3"}, 11);
  EXPECT_EQ(import_error(old), "");  // no axes: every dim of extent 1
}

TEST(OnnxOpsets, ClipBoundsAreAttributesBefore11AndInputsFrom11) {
  REQUIRE_FRONTEND();
  std::vector<double> x{-3, -0.5, 0.5, 3};
  expect_near(run(unary("Clip", {"4"}, 10, {attr_float("min", -1), attr_float("max", 1)}), {array({4}, x)}),
              {-1, -0.5, 0.5, 1});
  // Clip-6's defaults are float's range: nothing clipped.
  expect_near(run(unary("Clip", {"4"}, 7, {attr_float("max", 0.0f)}), {array({4}, x)}), {-3, -0.5, 0, 0});
  Model m = unary("Clip", {"4"}, 11);
  m.nodes = {node("Clip", {"x", "lo", "hi"}, {"y"})};
  m.inits = {floats("lo", {}, {-2}), floats("hi", {}, {0.25})};
  expect_near(run(m, {array({4}, x)}), {-2, -0.5, 0.25, 0.25});
  EXPECT_HAS(import_error(unary("Clip", {"4"}, 11, {attr_float("min", -1)})), "attribute 'min' is not supported");
}

TEST(OnnxOpsets, ReduceMeanAxesAreAnAttributeBefore18AndAnInputFrom18) {
  REQUIRE_FRONTEND();
  std::vector<double> x{1, 2, 3, 4, 5, 6};
  expect_near(run(unary("ReduceMean", {"2", "3"}, 13, {attr_ints("axes", {1}), attr_int("keepdims", 0)}),
                  {array({2, 3}, x)}),
              {2, 5});
  Model m = unary("ReduceMean", {"2", "3"}, 18, {attr_int("keepdims", 0)});
  m.nodes = {node("ReduceMean", {"x", "axes"}, {"y"}, {attr_int("keepdims", 0)})};
  m.inits = {int64s("axes", {1}, {0})};
  expect_near(run(m, {array({2, 3}, x)}), {2.5, 3.5, 4.5});
  EXPECT_HAS(import_error(unary("ReduceMean", {"2", "3"}, 18, {attr_ints("axes", {1})})), "not an attribute");
  EXPECT_HAS(import_error(unary("ReduceMean", {"2", "3"}, 13, {attr_int("noop_with_empty_axes", 1)})),
             "attribute 'noop_with_empty_axes' is not supported");
}

/// BatchNormalization of x [2,2,1,2] (opset `opset`) with the parameters as initializers of `pshape`.
Model batch_norm(int64_t opset, const std::vector<int64_t>& pshape, const std::vector<std::vector<float>>& p,
                 const std::vector<Pb>& attrs) {
  Model m;
  m.opset = opset;
  m.inputs = {value("x", {"2", "2", "1", "2"})};
  const char* names[] = {"scale", "b", "mean", "var"};
  for (int k = 0; k < 4; ++k) m.inits.push_back(floats(names[k], pshape, p[size_t(k)]));
  m.nodes = {node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y"}, attrs)};
  m.outputs = {untyped("y")};
  return m;
}

TEST(OnnxOpsets, BatchNormalizationSpatialZeroBefore9NormalizesPerActivation) {
  REQUIRE_FRONTEND();
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8};
  // Per activation: the parameters have shape [C, H, W] = [2, 1, 2].
  std::vector<std::vector<float>> p{{1, 2, 3, 4}, {0, 1, 0, -1}, {1, 1, 2, 2}, {1, 4, 0, 9}};
  std::vector<double> want(8);
  for (size_t i = 0; i < 8; ++i) {
    size_t a = i % 4;
    want[i] = (x[i] - p[2][a]) / std::sqrt(p[3][a] + 1e-5) * p[0][a] + p[1][a];
  }
  expect_near(run(batch_norm(7, {2, 1, 2}, p, {attr_int("spatial", 0)}), {array({2, 2, 1, 2}, x)}), want, 1e-4);
  // spatial=1 (the default) and every opset from 9: per channel.
  std::vector<std::vector<float>> pc{{1, 2}, {0, 1}, {1, 2}, {1, 4}};
  std::vector<double> per_channel(8);
  for (size_t i = 0; i < 8; ++i) {
    size_t c = (i / 2) % 2;
    per_channel[i] = (x[i] - pc[2][c]) / std::sqrt(pc[3][c] + 1e-5) * pc[0][c] + pc[1][c];
  }
  expect_near(run(batch_norm(8, {2}, pc, {attr_int("spatial", 1)}), {array({2, 2, 1, 2}, x)}), per_channel, 1e-4);
  expect_near(run(batch_norm(9, {2}, pc, {}), {array({2, 2, 1, 2}, x)}), per_channel, 1e-4);
  EXPECT_HAS(import_error(batch_norm(9, {2}, pc, {attr_int("spatial", 1)})), "attribute 'spatial' is not supported");
  EXPECT_HAS(import_error(batch_norm(13, {2}, pc, {attr_int("training_mode", 0)})),
             "attribute 'training_mode' is not supported");
  EXPECT_EQ(import_error(batch_norm(14, {2}, pc, {attr_int("training_mode", 0)})), "");
}

TEST(OnnxOpsets, PoolingAttributesFollowTheirVersions) {
  REQUIRE_FRONTEND();
  std::vector<double> x(9);
  for (size_t i = 0; i < 9; ++i) x[i] = double(i);
  auto pool = [&](const char* op, int64_t opset, std::vector<Pb> attrs) {
    attrs.push_back(attr_ints("kernel_shape", {2, 2}));
    attrs.push_back(attr_ints("strides", {2, 2}));
    return unary(op, {"1", "1", "3", "3"}, opset, attrs);
  };
  // ceil_mode from opset 10: the last partial window counts.
  expect_near(run(pool("MaxPool", 10, {attr_int("ceil_mode", 1)}), {array({1, 1, 3, 3}, x)}), {4, 5, 7, 8});
  expect_near(run(pool("AveragePool", 10, {attr_int("ceil_mode", 1)}), {array({1, 1, 3, 3}, x)}), {2, 3.5, 6.5, 8});
  expect_near(run(pool("MaxPool", 7, {}), {array({1, 1, 3, 3}, x)}), {4});
  EXPECT_HAS(import_error(pool("MaxPool", 9, {attr_int("ceil_mode", 1)})), "attribute 'ceil_mode' is not supported");
  EXPECT_HAS(import_error(pool("MaxPool", 9, {attr_ints("dilations", {1, 1})})), "attribute 'dilations' is not supported");
  EXPECT_HAS(import_error(pool("MaxPool", 7, {attr_int("storage_order", 0)})), "attribute 'storage_order' is not supported");
  EXPECT_EQ(import_error(pool("MaxPool", 8, {attr_int("storage_order", 0)})), "");
  EXPECT_HAS(import_error(pool("AveragePool", 18, {attr_ints("dilations", {1, 1})})), "attribute 'dilations' is not supported");
  EXPECT_EQ(import_error(pool("AveragePool", 19, {attr_ints("dilations", {1, 1})})), "");
  // count_include_pad (AveragePool-7): the padding counts in the divisor.
  expect_near(run(pool("AveragePool", 7, {attr_ints("pads", {1, 1, 0, 0}), attr_int("count_include_pad", 1)}),
                  {array({1, 1, 3, 3}, x)}),
              {0, (1 + 2) / 4.0, (3 + 6) / 4.0, (4 + 5 + 7 + 8) / 4.0});
}

TEST(OnnxOpsets, CastReshapeShapeAndConstantAttributesFollowTheirVersions) {
  REQUIRE_FRONTEND();
  EXPECT_HAS(import_error(unary("Cast", {"2"}, 13, {attr_int("to", kInt32), attr_int("saturate", 1)})),
             "attribute 'saturate' is not supported");
  EXPECT_EQ(import_error(unary("Cast", {"2"}, 19, {attr_int("to", kInt32), attr_int("saturate", 1)})), "");
  EXPECT_HAS(import_error(unary("Cast", {"2"}, 23, {attr_int("to", kInt32), attr_str("round_mode", "up")})),
             "attribute 'round_mode' is not supported");
  expect_near(run(unary("Cast", {"3"}, 7, {attr_int("to", kInt32)}), {array({3}, {1.75, -2.5, 3})}), {1, -2, 3});

  Model r = unary("Reshape", {"2", "3"}, 13, {attr_int("allowzero", 0)});
  r.nodes = {node("Reshape", {"x", "s"}, {"y"}, {attr_int("allowzero", 0)})};
  r.inits = {int64s("s", {2}, {3, 2})};
  EXPECT_HAS(import_error(r), "attribute 'allowzero' is not supported");
  r.opset = 14;
  EXPECT_EQ(import_error(r), "");

  EXPECT_HAS(import_error(unary("Shape", {"2", "3"}, 13, {attr_int("start", 1)})), "attribute 'start' is not supported");
  Model s = unary("Shape", {"2", "3", "4"}, 15, {attr_int("start", 1)});
  graph_opt::Graph g = import_onnx_bytes(s.bytes(), "m.onnx");
  EXPECT_EQ(values(run_graph(g, "reference", {array({2, 3, 4}, std::vector<double>(24, 0))})[0]),
            (std::vector<double>{3, 4}));

  Model c;
  c.opset = 11;
  c.nodes = {node("Constant", {}, {"y"}, {attr_float("value_float", 2.5f)})};
  c.outputs = {untyped("y")};
  EXPECT_HAS(import_error(c), "attribute 'value_float' is from opset 12; the model imports opset 11");
  c.opset = 12;
  EXPECT_EQ(import_error(c), "");
}

TEST(OnnxOpsets, GemmBefore11NeedsC) {
  REQUIRE_FRONTEND();
  Model m;
  m.opset = 9;
  m.inputs = {value("a", {"2", "2"})};
  m.inits = {floats("b", {2, 2}, {1, 0, 0, 1})};
  m.nodes = {node("Gemm", {"a", "b"}, {"y"})};
  m.outputs = {untyped("y")};
  EXPECT_HAS(import_error(m), "input C is required before opset 11");
  m.opset = 11;
  expect_near(run(m, {array({2, 2}, {1, 2, 3, 4})}), {1, 2, 3, 4});
  // Opset 7's unidirectional broadcast of C.
  m.opset = 7;
  m.inits.push_back(floats("c", {2}, {10, 20}));
  m.nodes = {node("Gemm", {"a", "b", "c"}, {"y"}, {attr_float("beta", 2)})};
  expect_near(run(m, {array({2, 2}, {1, 2, 3, 4})}), {21, 42, 23, 44});
}

}  // namespace
}  // namespace loom::onnx_test
