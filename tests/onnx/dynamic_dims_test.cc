// Models exported with symbolic dims (issue 32): OnnxImportOptions::input_shapes fixes a dim
// by name wherever it appears, the shape arithmetic exporters emit on it folds at import,
// and a declared output shape that disagrees with the graph's is a warning.
#include <gtest/gtest.h>

#include <sstream>

#include "common/cli_test_util.h"
#include "loom/graph_opt/onnx.h"
#include "common/onnx_model_writer.h"

namespace loom::onnx_test {
namespace {

using graph_opt::Graph;
using graph_opt::import_onnx_bytes;
using graph_opt::OnnxImportOptions;

#define REQUIRE_FRONTEND() \
  if (!graph_opt::onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend"

std::string import_error(const Model& m, const OnnxImportOptions& opt) {
  try {
    import_onnx_bytes(m.bytes(), "m.onnx", opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// x [batch, seq, 4] and mask [batch, seq] -> y = x * 2 and m = mask + 1.
Model two_inputs() {
  Model m;
  m.opset = 13;
  m.inputs = {value("x", {"batch", "seq", "4"}), value("mask", {"batch", "seq"})};
  m.inits = {floats("two", {}, {2}), floats("one", {}, {1})};
  m.nodes = {node("Mul", {"x", "two"}, {"y"}), node("Add", {"mask", "one"}, {"m"})};
  m.outputs = {value("y", {"batch", "seq", "4"}), value("m", {"batch", "seq"})};
  return m;
}

TEST(OnnxDynamicDims, ASymbolicDimIsFixedByNameWhereverItAppears) {
  REQUIRE_FRONTEND();
  OnnxImportOptions opt;
  opt.input_shapes = {{"batch", {2}}, {"seq", {5}}};
  Graph g = import_onnx_bytes(two_inputs().bytes(), "m.onnx", opt);
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{2, 5, 4}));
  EXPECT_EQ(g.type(g.outputs[1]).shape, (std::vector<int64_t>{2, 5}));
  // A graph input's whole shape and a dim name together: the input's shape stands for it.
  opt.input_shapes = {{"x", {3, 7, 4}}, {"batch", {3}}, {"seq", {7}}};
  g = import_onnx_bytes(two_inputs().bytes(), "m.onnx", opt);
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{3, 7, 4}));
  EXPECT_EQ(g.type(g.outputs[1]).shape, (std::vector<int64_t>{3, 7}));
}

TEST(OnnxDynamicDims, UnknownNamesMissingDimsAndBadExtentsAreErrors) {
  REQUIRE_FRONTEND();
  OnnxImportOptions opt;
  opt.input_shapes = {{"batch", {2}}, {"height", {48}}};
  std::string e = import_error(two_inputs(), opt);
  EXPECT_HAS(e, "an input shape is given for 'height', which is neither a graph input nor a symbolic dim");
  EXPECT_HAS(e, "graph inputs: mask, x; symbolic dims: batch, seq");
  opt.input_shapes = {{"batch", {2}}};
  e = import_error(two_inputs(), opt);
  EXPECT_HAS(e, "graph input 'x': dim 1 is dynamic ('seq')");
  EXPECT_HAS(e, "--input-shape seq=N");
  opt.input_shapes = {{"batch", {2, 3}}, {"seq", {1}}};
  EXPECT_HAS(import_error(two_inputs(), opt), "symbolic dim 'batch' takes one extent (e.g. batch=1), got [2,3]");
}

TEST(OnnxDynamicDims, TheShapeArithmeticOfExportersFoldsOnceTheDimsAreFixed) {
  REQUIRE_FRONTEND();
  // PyTorch's flatten of x [batch, seq, 4]: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))
  // then a mask of ones of the same shape: ConstantOfShape(Shape(flat)).
  Model m;
  m.opset = 13;
  m.inputs = {value("x", {"batch", "seq", "4"})};
  m.inits = {int64s("zero", {}, {0}), int64s("axes0", {1}, {0}), int64s("minus1", {1}, {-1})};
  m.nodes = {node("Shape", {"x"}, {"s"}),
             node("Gather", {"s", "zero"}, {"b"}, {attr_int("axis", 0)}),
             node("Unsqueeze", {"b", "axes0"}, {"b1"}),
             node("Concat", {"b1", "minus1"}, {"target"}, {attr_int("axis", 0)}),
             node("Reshape", {"x", "target"}, {"flat"}),
             node("Shape", {"flat"}, {"fs"}),
             node("ConstantOfShape", {"fs"}, {"ones"}, {attr_tensor("value", floats("v", {1}, {1}))}),
             node("Add", {"flat", "ones"}, {"y"})};
  m.outputs = {value("y", {"batch", "?"})};
  OnnxImportOptions opt;
  opt.input_shapes = {{"batch", {2}}, {"seq", {3}}};
  std::ostringstream warn;
  opt.warn = &warn;
  Graph g = import_onnx_bytes(m.bytes(), "m.onnx", opt);
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(g.num_ops(), 2u) << "only the reshape and the add run";
  EXPECT_EQ(warn.str(), "");
  std::vector<double> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i);
  for (const char* mode : {"reference", "compiled"}) {
    std::vector<double> y = values(run_graph(g, mode, {array({2, 3, 4}, x)})[0]);
    ASSERT_EQ(y.size(), 24u);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], x[i] + 1) << mode << " " << i;
  }
}

TEST(OnnxDynamicDims, ADeclaredOutputShapeThatDisagreesIsAWarningAndATypeMismatchAnError) {
  REQUIRE_FRONTEND();
  // PyTorch declares [1, seqlen] for an output of shape [20, 1, 8]-like rank 3.
  Model m;
  m.opset = 13;
  m.inputs = {value("x", {"20", "1", "8"})};
  m.nodes = {node("Relu", {"x"}, {"y"})};
  m.outputs = {value("y", {"1", "seqlen"})};
  OnnxImportOptions opt;
  std::ostringstream warn;
  opt.warn = &warn;
  Graph g = import_onnx_bytes(m.bytes(), "m.onnx", opt);
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{20, 1, 8}));
  EXPECT_EQ(warn.str(),
            "warning: onnx: m.onnx: graph output 'y' is declared with shape [1,seqlen] but the graph computes "
            "[20,1,8]; using [20,1,8]\n");
  // A fixed symbolic dim is compared as its extent.
  Model d = two_inputs();
  d.outputs[1] = value("m", {"seq", "batch"});
  opt.input_shapes = {{"batch", {2}}, {"seq", {5}}};
  warn.str("");
  import_onnx_bytes(d.bytes(), "m.onnx", opt);
  EXPECT_HAS(warn.str(), "graph output 'm' is declared with shape [seq,batch] but the graph computes [2,5]");
  // Null: no warning anywhere, the import goes on.
  opt.warn = nullptr;
  EXPECT_EQ(import_error(d, opt), "");
  opt.input_shapes.clear();
  m.outputs = {value("y", {"20", "1", "8"}, kInt64)};
  EXPECT_HAS(import_error(m, opt), "graph output 'y' is declared INT64 but computes float32");
}

}  // namespace
}  // namespace loom::onnx_test
