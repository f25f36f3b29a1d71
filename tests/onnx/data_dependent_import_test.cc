// The operators whose output shape follows from input values: Compress with a constant (or
// bound) condition takes its run-time data at the selected positions; NonZero, Unique and
// NonMaxSuppression of constants fold at import into the values their definitions give
// (written out here by hand); a deciding input computed at run time is OnnxUnsupported naming
// the graph input to bind; malformed nodes are errors naming what is wrong.
#include <gtest/gtest.h>

#include "import_test_util.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

Pb bools_tensor(const std::string& name, const std::vector<bool>& v) {
  std::string raw;
  for (bool b : v) raw += char(b);
  return tensor(name, kBool, {int64_t(v.size())}, raw);
}

std::vector<double> values(const NDArray& a) {
  std::vector<double> v(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) v[size_t(i)] = a.get(i);
  return v;
}

Graph import(const ModelPb& m, std::map<std::string, NDArray> bind = {}) {
  graph_opt::OnnxImportOptions opt;
  opt.bind_inputs = std::move(bind);
  return graph_opt::import_onnx_bytes(m.bytes(), "m.onnx", opt);
}

/// The OnnxUnsupported importing `m` throws (fails the test when it imports).
graph_opt::OnnxUnsupported unsupported_of(const ModelPb& m) {
  try {
    import(m);
  } catch (const graph_opt::OnnxUnsupported& e) {
    return e;
  }
  ADD_FAILURE() << "expected OnnxUnsupported";
  return graph_opt::OnnxUnsupported("");
}

/// y = Compress(x [3, 4], cond) on `axis` (flattened without one); cond an initializer or a graph input.
ModelPb compress_model(std::optional<int64_t> axis, const std::vector<bool>& cond, bool cond_input = false) {
  ModelPb m;
  m.opset = 11;
  m.inputs = {value("x", {3, 4})};
  if (cond_input) m.inputs.push_back(value("cond", {int64_t(cond.size())}, kBool));
  else m.inits = {bools_tensor("cond", cond)};
  std::vector<Pb> attrs;
  if (axis) attrs.push_back(attr_int("axis", *axis));
  m.nodes = {node("Compress", {"x", "cond"}, {"y"}, "compress", attrs)};
  m.outputs = {Pb().s(1, "y")};
  return m;
}

TEST(DataDependentImport, CompressTakesRunTimeDataAtTheConstantConditionsPositions) {
  REQUIRE_FRONTEND();
  NDArray x = NDArray::empty({3, 4}, DataType::Float(32));
  for (int64_t i = 0; i < 12; ++i) x.set(i, double(i));
  struct Case {
    std::optional<int64_t> axis;
    std::vector<bool> cond;
    std::vector<int64_t> shape;
    std::vector<double> want;
  };
  for (const Case& c : {Case{0, {false, true, true}, {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11}},
                        Case{-1, {true, false, false, true}, {3, 2}, {0, 3, 4, 7, 8, 11}},
                        Case{1, {false, true}, {3, 1}, {1, 5, 9}},  // shorter than the axis: the rest is false
                        Case{std::nullopt, {false, true, false, false, false, true, false, false, false, false, false, true},
                             {3}, {1, 5, 11}}}) {
    SCOPED_TRACE(c.axis ? std::to_string(*c.axis) : "no axis");
    Graph g = import(compress_model(c.axis, c.cond));
    ASSERT_EQ(g.input_nodes().size(), 1u);  // x stays a run-time input
    EXPECT_EQ(g.type(g.outputs[0]).shape, c.shape);
    expect_values(graph_opt::run_reference(g, {x}).at(0), c.want, 0, "reference");
    expect_values(run_compiled(g, {x}).at(0), c.want, 0, "compiled");
  }
  // A condition given as a graph input names it, and binding it imports.
  graph_opt::OnnxUnsupported e = unsupported_of(compress_model(0, {true, false, true}, true));
  EXPECT_EQ(e.constant_input, "cond");
  EXPECT_NE(std::string(e.what()).find("Compress's output shape depends on its values"), std::string::npos) << e.what();
  NDArray cond = NDArray::from_vector({1, 0, 1}, {3}, DataType::Bool());
  Graph g = import(compress_model(0, {true, false, true}, true), {{"cond", cond}});
  expect_values(graph_opt::run_reference(g, {x}).at(0), {0, 1, 2, 3, 8, 9, 10, 11}, 0, "bound");
  // Selecting nothing or beyond the axis.
  std::string msg = import_error(compress_model(0, {false, false, false}).bytes());
  EXPECT_NE(msg.find("graph output 'y' has no elements"), std::string::npos) << msg;
  msg = import_error(compress_model(0, {false, false, false, true}).bytes());
  EXPECT_NE(msg.find("condition selects position 3, beyond the 3 positions of input [3,4] along axis 0"),
            std::string::npos) << msg;
  msg = import_error(compress_model(2, {true}).bytes());
  EXPECT_NE(msg.find("axis"), std::string::npos) << msg;
}

/// One node of `op` on initializers `inits` (names in order), outputs `outs`.
ModelPb constant_model(const std::string& op, const std::vector<Pb>& inits, const std::vector<std::string>& ins,
                       const std::vector<std::string>& outs, const std::vector<Pb>& attrs, int64_t opset = 13) {
  ModelPb m;
  m.opset = opset;
  m.inits = inits;
  m.nodes = {node(op, ins, outs, "n", attrs)};
  for (const auto& o : outs) m.outputs.push_back(Pb().s(1, o));
  return m;
}

std::vector<std::vector<double>> run_all(const Graph& g) {
  std::vector<std::vector<double>> r;
  for (const NDArray& a : graph_opt::run_reference(g, {})) r.push_back(values(a));
  return r;
}

TEST(DataDependentImport, NonZeroOfAConstantFoldsToTheIndicesOfItsNonZeros) {
  REQUIRE_FRONTEND();
  Graph g = import(constant_model("NonZero", {floats_tensor("x", {2, 3}, {0, 2, 0, -1, 0, 0.5})}, {"x"}, {"y"}, {}));
  EXPECT_EQ(g.type(g.outputs[0]).shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g.type(g.outputs[0]).dtype, DataType::Int(64));
  EXPECT_EQ(run_all(g)[0], (std::vector<double>{0, 1, 1, 1, 0, 2}));
  // A run-time input names itself to be bound.
  ModelPb m = constant_model("NonZero", {}, {"x"}, {"y"}, {});
  m.inputs = {value("x", {4})};
  graph_opt::OnnxUnsupported e = unsupported_of(m);
  EXPECT_EQ(e.constant_input, "x");
  // No non-zero: an output without elements.
  std::string msg = import_error(constant_model("NonZero", {floats_tensor("x", {3}, {0, 0, 0})}, {"x"}, {"y"}, {}).bytes());
  EXPECT_NE(msg.find("has no elements"), std::string::npos) << msg;
}

TEST(DataDependentImport, UniqueSortedUnsortedAndAlongAnAxis) {
  REQUIRE_FRONTEND();
  const std::vector<std::string> outs = {"y", "indices", "inverse", "counts"};
  Pb x = floats_tensor("x", {6}, {2, 1, 1, 3, 4, 3});
  Graph g = import(constant_model("Unique", {x}, {"x"}, outs, {}, 11));
  auto r = run_all(g);
  EXPECT_EQ(r[0], (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(r[1], (std::vector<double>{1, 0, 3, 4}));
  EXPECT_EQ(r[2], (std::vector<double>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(r[3], (std::vector<double>{2, 1, 2, 1}));
  r = run_all(import(constant_model("Unique", {x}, {"x"}, outs, {attr_int("sorted", 0)}, 11)));
  EXPECT_EQ(r[0], (std::vector<double>{2, 1, 3, 4}));
  EXPECT_EQ(r[1], (std::vector<double>{0, 1, 3, 4}));
  EXPECT_EQ(r[2], (std::vector<double>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(r[3], (std::vector<double>{1, 2, 2, 1}));
  // Rows of [[1, 0, 0], [1, 0, 0], [2, 3, 4]] along axis 0; columns along axis 1 (sorted lexicographically).
  Pb m = ints_tensor("x", {3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  r = run_all(import(constant_model("Unique", {m}, {"x"}, outs, {attr_int("axis", 0)}, 11)));
  EXPECT_EQ(r[0], (std::vector<double>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(r[1], (std::vector<double>{0, 2}));
  EXPECT_EQ(r[2], (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(r[3], (std::vector<double>{2, 1}));
  r = run_all(import(constant_model("Unique", {m}, {"x"}, outs, {attr_int("axis", -1)}, 11)));
  EXPECT_EQ(r[0], (std::vector<double>{0, 0, 1, 0, 0, 1, 3, 4, 2}));  // columns (0,0,3), (0,0,4), (1,1,2)
  EXPECT_EQ(r[1], (std::vector<double>{1, 2, 0}));
  EXPECT_EQ(r[2], (std::vector<double>{2, 0, 1}));
  EXPECT_EQ(r[3], (std::vector<double>{1, 1, 1}));
  // 64-bit integers are compared exactly (2^53 and 2^53 + 1 differ, though not as doubles).
  const int64_t big = int64_t(1) << 53;
  r = run_all(import(constant_model("Unique", {ints_tensor("x", {3}, {big + 1, big, big + 1})}, {"x"}, {"y", "indices"}, {}, 11)));
  EXPECT_EQ(r[1], (std::vector<double>{1, 0}));
  std::string msg = import_error(constant_model("Unique", {x}, {"x"}, {"y"}, {attr_int("axis", 1)}, 11).bytes());
  EXPECT_NE(msg.find("axis 1 is out of range"), std::string::npos) << msg;
}

/// NonMaxSuppression on ONNX's example boxes (one batch, one class, corners y1, x1, y2, x2).
ModelPb nms_model(int64_t max_out, float iou, std::optional<float> score, int64_t center = 0) {
  const std::vector<float> boxes = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f,
                                    0, 100, 1, 101};
  std::vector<Pb> inits = {floats_tensor("boxes", {1, 6, 4}, boxes),
                           floats_tensor("scores", {1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}),
                           ints_tensor("max", {1}, {max_out}), floats_tensor("iou", {1}, {iou})};
  std::vector<std::string> ins = {"boxes", "scores", "max", "iou"};
  if (score) {
    inits.push_back(floats_tensor("score", {1}, {*score}));
    ins.push_back("score");
  }
  return constant_model("NonMaxSuppression", inits, ins, {"selected"}, {attr_int("center_point_box", center)}, 11);
}

TEST(DataDependentImport, NonMaxSuppressionSelectsByScoreAndOverlap) {
  REQUIRE_FRONTEND();
  // ONNX's suppress_by_IOU: boxes 3, 0 and 5 survive, best first.
  auto r = run_all(import(nms_model(3, 0.5f, 0.0f)));
  EXPECT_EQ(r[0], (std::vector<double>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // At most two per class; a score threshold of 0.4 drops box 5 (0.3).
  r = run_all(import(nms_model(2, 0.5f, 0.0f)));
  EXPECT_EQ(r[0], (std::vector<double>{0, 0, 3, 0, 0, 0}));
  r = run_all(import(nms_model(3, 0.5f, 0.4f)));
  EXPECT_EQ(r[0], (std::vector<double>{0, 0, 3, 0, 0, 0}));
  // An IoU threshold of 1 suppresses nothing: every box by score.
  r = run_all(import(nms_model(10, 1.0f, std::nullopt)));
  EXPECT_EQ(r[0], (std::vector<double>{0, 0, 3, 0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 4, 0, 0, 5}));
  std::string msg = import_error(nms_model(3, 0.5f, 0.0f, 2).bytes());
  EXPECT_NE(msg.find("center_point_box 2 is not 0 or 1"), std::string::npos) << msg;
  msg = import_error(constant_model("NonMaxSuppression", {floats_tensor("boxes", {1, 6, 3}, std::vector<float>(18)),
                                                          floats_tensor("scores", {1, 1, 6}, std::vector<float>(6))},
                                    {"boxes", "scores"}, {"selected"}, {}, 11)
                         .bytes());
  EXPECT_NE(msg.find("must be [batches, boxes, 4] and [batches, classes, boxes]"), std::string::npos) << msg;
  // Without max_output_boxes_per_class nothing is selected: an output without elements.
  msg = import_error(constant_model("NonMaxSuppression", {floats_tensor("boxes", {1, 1, 4}, {0, 0, 1, 1}),
                                                          floats_tensor("scores", {1, 1, 1}, {1})},
                                    {"boxes", "scores"}, {"selected"}, {}, 11)
                         .bytes());
  EXPECT_NE(msg.find("has no elements"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::test::onnx_writer
