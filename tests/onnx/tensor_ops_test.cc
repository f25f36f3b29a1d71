// Identity, Dropout, Size, ConstantOfShape, CastLike, LogSoftmax and Hardmax through the ONNX
// frontend, at the opsets where their meaning differs, against values computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/cli_test_util.h"
#include "loom/graph_opt/onnx.h"
#include "common/onnx_model_writer.h"

namespace loom::onnx_test {
namespace {

using graph_opt::Graph;
using graph_opt::import_onnx_bytes;
using graph_opt::OnnxUnsupported;

#define REQUIRE_FRONTEND() \
  if (!graph_opt::onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend"

std::string import_error(const Model& m) {
  try {
    import_onnx_bytes(m.bytes(), "m.onnx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Every output of `m` for `args`, reference and compiled (which must agree).
std::vector<runtime::NDArray> run_all(const Model& m, const std::vector<runtime::NDArray>& args) {
  Graph g = import_onnx_bytes(m.bytes(), "m.onnx");
  std::vector<runtime::NDArray> ref = run_graph(g, "reference", args), compiled = run_graph(g, "compiled", args);
  EXPECT_EQ(ref.size(), compiled.size());
  for (size_t k = 0; k < ref.size() && k < compiled.size(); ++k) {
    EXPECT_EQ(ref[k].dtype(), compiled[k].dtype());
    std::vector<double> r = values(ref[k]), c = values(compiled[k]);
    EXPECT_EQ(r.size(), c.size());
    for (size_t i = 0; i < r.size() && i < c.size(); ++i) EXPECT_NEAR(r[i], c[i], 1e-5 * std::max(1.0, std::abs(r[i]))) << k << " " << i;
  }
  return ref;
}

TEST(OnnxTensorOps, IdentityPassesItsInputOn) {
  REQUIRE_FRONTEND();
  for (int64_t opset : {7, 13, 25}) {
    Model m;
    m.opset = opset;
    m.inputs = {value("x", {"2", "2"})};
    m.nodes = {node("Identity", {"x"}, {"i"}), node("Neg", {"i"}, {"y"})};
    m.outputs = {value("y", {"2", "2"})};
    EXPECT_EQ(values(run_all(m, {array({2, 2}, {1, -2, 3, 0.5})})[0]), (std::vector<double>{-1, 2, -3, -0.5}));
  }
  // A rank-0 input stays rank 0.
  Model s;
  s.inputs = {value("x", {})};
  s.nodes = {node("Identity", {"x"}, {"y"})};
  s.outputs = {value("y", {})};
  EXPECT_EQ(import_error(s), "");
}

/// Dropout of x [2,3] with output 1 (the mask) when `mask`.
Model dropout(int64_t opset, bool mask, const std::vector<std::string>& extra_inputs = {}, const std::vector<Pb>& attrs = {}) {
  Model m;
  m.opset = opset;
  m.inputs = {value("x", {"2", "3"})};
  std::vector<std::string> ins{"x"};
  ins.insert(ins.end(), extra_inputs.begin(), extra_inputs.end());
  std::vector<std::string> outs{"y"};
  if (mask) outs.push_back("mask");
  m.nodes = {node("Dropout", ins, outs, attrs)};
  m.outputs = {untyped("y")};
  if (mask) m.outputs.push_back(untyped("mask"));
  return m;
}

TEST(OnnxTensorOps, DropoutAtInferenceIsTheIdentityAndItsMaskKeepsEverything) {
  REQUIRE_FRONTEND();
  const std::vector<double> x{1, 2, 3, 4, 5, 6};
  // Opset 7: ratio an attribute, the mask of the input's type.
  std::vector<runtime::NDArray> out = run_all(dropout(7, true, {}, {attr_float("ratio", 0.3f)}), {array({2, 3}, x)});
  EXPECT_EQ(values(out[0]), x);
  EXPECT_EQ(out[1].dtype(), DataType::Float(32));
  EXPECT_EQ(values(out[1]), std::vector<double>(6, 1.0));
  // Opset 10: a bool mask.
  out = run_all(dropout(10, true), {array({2, 3}, x)});
  EXPECT_EQ(out[1].dtype(), DataType::Bool());
  EXPECT_EQ(values(out[1]), std::vector<double>(6, 1.0));
  // Opset 12: ratio and training_mode inputs; a ratio given at run time changes nothing.
  Model m = dropout(12, false, {"r", "t"}, {attr_int("seed", 3)});
  m.inputs.push_back(value("r", {}));
  m.inits = {tensor("t", kBool, {}, std::string(1, '\0'))};
  out = run_all(m, {array({2, 3}, x), array({1}, {0.9})});
  EXPECT_EQ(values(out[0]), x);
  m.inits = {tensor("t", kBool, {}, std::string(1, '\1'))};
  EXPECT_HAS(import_error(m), "ratio (input 1 'r') is computed at run time");
  m.inputs.pop_back();
  m.inits.push_back(floats("r", {}, {0.25f}));
  EXPECT_HAS(import_error(m), "training_mode=true with ratio 0.25 drops at random (loom imports inference graphs)");
  // Training mode with ratio 0 drops nothing.
  m.inits[1] = floats("r", {}, {0});
  EXPECT_EQ(values(run_all(m, {array({2, 3}, x)})[0]), x);
  m.inits.pop_back();
  m.inputs.push_back(value("r", {}));
  m.inits.clear();
  m.inputs.push_back(value("t", {}, kBool));
  EXPECT_HAS(import_error(m), "training_mode (input 2 't') is computed at run time");
  // The attributes of one version are not another's.
  EXPECT_HAS(import_error(dropout(12, false, {}, {attr_float("ratio", 0.5f)})), "attribute 'ratio' is not supported");
  EXPECT_HAS(import_error(dropout(11, false, {}, {attr_int("seed", 1)})), "attribute 'seed' is not supported");
}

TEST(OnnxTensorOps, SizeAndConstantOfShapeFoldAtImport) {
  REQUIRE_FRONTEND();
  // ConstantOfShape(Concat(Unsqueeze(Size(x)), Shape(x)[1])) + 1: a constant [24, 3] of 7s plus one.
  Model m;
  m.opset = 13;
  m.inputs = {value("x", {"2", "3", "4"}), value("z", {"24", "3"}, kInt64)};
  m.inits = {int64s("one_idx", {}, {1}), int64s("axes0", {1}, {0})};
  m.nodes = {node("Size", {"x"}, {"n"}),
             node("Unsqueeze", {"n", "axes0"}, {"n1"}),
             node("Shape", {"x"}, {"s"}),
             node("Gather", {"s", "one_idx"}, {"c"}),
             node("Unsqueeze", {"c", "axes0"}, {"c1"}),
             node("Concat", {"n1", "c1"}, {"shape"}, {attr_int("axis", 0)}),
             node("ConstantOfShape", {"shape"}, {"k"}, {attr_tensor("value", int64s("v", {1}, {7}))}),
             node("Add", {"k", "z"}, {"y"})};
  m.outputs = {value("y", {"24", "3"}, kInt64)};
  Graph g = import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(g.num_ops(), 1u) << "the shape arithmetic folds; only the add runs";
  std::vector<double> z(72);
  for (size_t i = 0; i < z.size(); ++i) z[i] = double(i);
  std::vector<double> want(72);
  for (size_t i = 0; i < want.size(); ++i) want[i] = 7.0 + double(i);
  EXPECT_EQ(values(run_all(m, {array({2, 3, 4}, std::vector<double>(24, 0)), array({24, 3}, z, DataType::Int(64))})[0]),
            want);

  // Size is a rank-0 int64; ConstantOfShape's value defaults to float 0; an empty shape gives a scalar.
  Model s;
  s.opset = 9;
  s.inputs = {value("x", {"2", "5"})};
  s.inits = {int64s("dims", {2}, {2, 2})};
  s.nodes = {node("ConstantOfShape", {"dims"}, {"y"})};
  s.outputs = {value("y", {"2", "2"})};
  g = import_onnx_bytes(s.bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs[0]).dtype, DataType::Float(32));
  EXPECT_EQ(values(run_graph(g, "reference", {array({2, 5}, std::vector<double>(10, 1))})[0]), std::vector<double>(4, 0.0));
  Model size;
  size.inputs = {value("x", {"2", "5"})};
  size.nodes = {node("Size", {"x"}, {"y"})};
  size.outputs = {value("y", {}, kInt64)};
  g = import_onnx_bytes(size.bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs[0]).dtype, DataType::Int(64));
  EXPECT_EQ(values(run_graph(g, "reference", {array({2, 5}, std::vector<double>(10, 1))})[0]), std::vector<double>{10});

  // ConstantOfShape is younger than opset 9; its shape must be known at import.
  s.opset = 8;
  EXPECT_HAS(import_error(s), "operator ConstantOfShape exists from opset 9");
  Model dyn;
  dyn.opset = 13;
  dyn.inputs = {value("dims", {"2"}, kInt64)};
  dyn.nodes = {node("ConstantOfShape", {"dims"}, {"y"})};
  dyn.outputs = {untyped("y")};
  EXPECT_HAS(import_error(dyn), "shape (input 0 'dims') is computed at run time");
  dyn.inputs.clear();
  dyn.inits = {int64s("dims", {2}, {2, -1})};
  EXPECT_HAS(import_error(dyn), "shape [2,-1] has a negative dim");
  dyn.inits = {int64s("dims", {1}, {4})};
  dyn.nodes = {node("ConstantOfShape", {"dims"}, {"y"}, {attr_tensor("value", floats("v", {2}, {1, 2}))})};
  EXPECT_HAS(import_error(dyn), "value must hold one element, got shape [2]");
}

TEST(OnnxTensorOps, CastLikeCastsToTheTargetsType) {
  REQUIRE_FRONTEND();
  Model m;
  m.opset = 15;
  m.inputs = {value("x", {"3"}), value("like", {"1"}, kInt32)};
  m.nodes = {node("CastLike", {"x", "like"}, {"y"})};
  m.outputs = {untyped("y")};
  Graph g = import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs[0]).dtype, DataType::Int(32));
  std::vector<runtime::NDArray> out =
      run_all(m, {array({3}, {1.5, -2.75, 8}), array({1}, {0}, DataType::Int(32))});
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, -2, 8}));
  m.opset = 14;
  EXPECT_HAS(import_error(m), "operator CastLike exists from opset 15");
  m.opset = 15;
  m.nodes = {node("CastLike", {"x", "like"}, {"y"}, {attr_int("saturate", 1)})};
  EXPECT_HAS(import_error(m), "attribute 'saturate' is not supported");
  m.opset = 19;
  EXPECT_EQ(import_error(m), "");
  // Only the target's type matters: it may have no elements.
  m.inputs[1] = value("like", {"0"}, kDouble);
  g = import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs[0]).dtype, DataType::Float(64));
}

TEST(OnnxTensorOps, LogSoftmaxAndHardmaxCompileAlongAnyAxis) {
  REQUIRE_FRONTEND();
  std::vector<double> x(4 * 5 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(double(i) * 0.7) * 3;
  for (int64_t axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    Model m;
    m.opset = 13;
    m.inputs = {value("x", {"4", "5", "6"})};
    m.nodes = {node("LogSoftmax", {"x"}, {"l"}, {attr_int("axis", axis)}),
               node("Hardmax", {"x"}, {"h"}, {attr_int("axis", axis)})};
    m.outputs = {untyped("l"), untyped("h")};
    std::vector<runtime::NDArray> out = run_all(m, {array({4, 5, 6}, x)});
    std::vector<double> l = values(out[0]), h = values(out[1]);
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const int64_t dims[3] = {4, 5, 6}, strides[3] = {30, 6, 1};
    for (int64_t i = 0; i < 120; ++i) {
      if ((i / strides[a]) % dims[a] != 0) continue;  // the first element of each line along the axis
      double mx = -INFINITY, sum = 0;
      int64_t arg = 0;
      for (int64_t k = 0; k < dims[a]; ++k)
        if (x[size_t(i + k * strides[a])] > mx) mx = x[size_t(i + k * strides[a])], arg = k;
      for (int64_t k = 0; k < dims[a]; ++k) sum += std::exp(x[size_t(i + k * strides[a])] - mx);
      for (int64_t k = 0; k < dims[a]; ++k) {
        const size_t j = size_t(i + k * strides[a]);
        EXPECT_NEAR(l[j], x[j] - mx - std::log(sum), 1e-5) << j;
        EXPECT_EQ(h[j], k == arg ? 1.0 : 0.0) << j;
      }
    }
  }
}

}  // namespace
}  // namespace loom::onnx_test
