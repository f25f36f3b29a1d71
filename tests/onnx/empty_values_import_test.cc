// Values without elements at import: a slice of nothing (a shape's empty prefix), a zero-size
// Split part, a graph input of no elements. loom's graphs hold none, but their one possible
// value is known, so the importer keeps them as such: Concat leaves them out, elementwise
// operators pass them on, a reduction of nothing is the reduction's identity (as ONNX defines
// it), and only a graph output without elements is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "import_test_util.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

std::vector<double> values(const NDArray& a) {
  std::vector<double> v(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) v[size_t(i)] = a.get(i);
  return v;
}

NDArray ramp(std::vector<int64_t> shape) {
  NDArray a = NDArray::empty(std::move(shape), DataType::Float(32));
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, double(i) - 3.5);
  return a;
}

TEST(EmptyValuesImport, AnEmptyShapePrefixConcatenatesToNothing) {
  REQUIRE_FRONTEND();
  // LayerNormalization's function body over every axis: Shape(x)[0:0] ++ [6] as Reshape's shape.
  ModelPb m;
  m.opset = 18;
  m.inputs = {value("x", {2, 3})};
  m.inits = {ints_tensor("zero", {1}, {0}), ints_tensor("six", {1}, {6})};
  m.nodes = {node("Shape", {"x"}, {"shape"}, "shape"), node("Slice", {"shape", "zero", "zero"}, {"prefix"}, "slice"),
             node("Concat", {"prefix", "six"}, {"new_shape"}, "concat", {attr_int("axis", 0)}),
             node("Reshape", {"x", "new_shape"}, {"y"}, "reshape")};
  m.outputs = {Pb().s(1, "y")};
  Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{6}));
  NDArray x = ramp({2, 3});
  EXPECT_EQ(values(graph_opt::run_reference(g, {x}).at(0)), values(x));
}

TEST(EmptyValuesImport, AZeroSizeSplitPartAddsNothingToAConcat) {
  REQUIRE_FRONTEND();
  // RotaryEmbedding's function body rotating every dim: x split into [4, 0], the empty part appended.
  ModelPb m;
  m.opset = 18;
  m.inputs = {value("x", {2, 4})};
  m.inits = {ints_tensor("parts", {2}, {4, 0})};
  m.nodes = {node("Split", {"x", "parts"}, {"a", "rest"}, "split", {attr_int("axis", 1)}),
             node("Neg", {"a"}, {"neg"}, "neg"), node("Neg", {"rest"}, {"neg_rest"}, "neg_rest"),
             node("Concat", {"neg", "neg_rest"}, {"y"}, "concat", {attr_int("axis", -1)})};
  m.outputs = {Pb().s(1, "y")};
  Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  NDArray x = ramp({2, 4});
  std::vector<double> want = values(x);
  for (double& v : want) v = -v;
  expect_values(graph_opt::run_reference(g, {x}).at(0), want, 0, "reference");
  expect_values(run_compiled(g, {x}).at(0), want, 0, "compiled");
  // Concatenating shapes that do not fit is an error naming them, empty or not.
  m.nodes.back() = node("Concat", {"neg", "neg_rest"}, {"y"}, "concat", {attr_int("axis", 0)});
  std::string e = import_error(m.bytes());
  EXPECT_NE(e.find("input 1 [2,0] does not fit the first input [2,4] but on axis 0"), std::string::npos) << e;
}

/// `op` over axis 1 of a graph input `data` [2, 0, 3] of element type `type`.
ModelPb reduce_nothing(const std::string& op, int64_t type = kFloat) {
  ModelPb m;
  m.opset = 18;
  m.inputs = {value("data", {2, 0, 3}, type)};
  m.inits = {ints_tensor("axes", {1}, {1})};
  m.nodes = {node(op, {"data", "axes"}, {"y"}, "reduce")};
  m.outputs = {Pb().s(1, "y")};
  return m;
}

TEST(EmptyValuesImport, AReductionOfNothingIsItsIdentity) {
  REQUIRE_FRONTEND();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* op;
    int64_t type;
    double want;
  };
  for (const Case& c : {Case{"ReduceSum", kFloat, 0}, Case{"ReduceL1", kFloat, 0}, Case{"ReduceL2", kFloat, 0},
                        Case{"ReduceSumSquare", kFloat, 0}, Case{"ReduceProd", kFloat, 1},
                        Case{"ReduceMax", kFloat, -inf}, Case{"ReduceMin", kFloat, inf},
                        Case{"ReduceLogSum", kFloat, -inf}, Case{"ReduceLogSumExp", kFloat, -inf},
                        Case{"ReduceMax", kBool, 0}, Case{"ReduceMin", kBool, 1},
                        Case{"ReduceMax", kInt32, double(std::numeric_limits<int32_t>::lowest())},
                        Case{"ReduceMin", kInt32, double(std::numeric_limits<int32_t>::max())},
                        Case{"ReduceSum", kInt64, 0}}) {
    SCOPED_TRACE(::testing::Message() << c.op << " of type " << c.type);
    Graph g = graph_opt::import_onnx_bytes(reduce_nothing(c.op, c.type).bytes(), "m.onnx");
    EXPECT_TRUE(g.input_nodes().empty()) << "data has no elements to pass";
    EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{2, 1, 3}));
    EXPECT_EQ(values(graph_opt::run_reference(g, {}).at(0)), std::vector<double>(6, c.want));
  }
  std::string e = import_error(reduce_nothing("ReduceLogSum", kInt32).bytes());
  EXPECT_NE(e.find("ReduceLogSum of no int32 elements"), std::string::npos) << e;
  // A graph output without elements is refused.
  ModelPb m = reduce_nothing("Abs");
  m.nodes = {node("Abs", {"data"}, {"y"}, "abs")};
  e = import_error(m.bytes());
  EXPECT_NE(e.find("graph output 'y' has no elements"), std::string::npos) << e;
}

}  // namespace
}  // namespace loom::test::onnx_writer
