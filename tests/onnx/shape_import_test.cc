// The ONNX converters of convert_shape.cc: per-opset forms (attributes that became inputs),
// values through the reference runner, and the errors that name the node. Models are written
// in protobuf's wire format (onnx.proto's field numbers).
#include <gtest/gtest.h>

#include <cstring>

#include "common/cli_test_util.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "common/protobuf_writer.h"

namespace loom::graph_opt {
namespace {

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

using loom::test::Pb;

enum : int64_t { kFloat = 1, kInt64 = 7 };

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

Pb ints_tensor(const std::string& name, const std::vector<int64_t>& v, std::vector<int64_t> dims = {}) {
  Pb t;
  if (dims.empty()) dims = {int64_t(v.size())};
  for (int64_t d : dims) t.i(1, d);
  return t.i(2, kInt64).s(8, name).s(9, bytes_of(v));
}

Pb value(const std::string& name, const std::vector<int64_t>& dims, int64_t type = kFloat) {
  Pb shape;
  for (int64_t d : dims) shape.m(1, Pb().i(1, d));
  return Pb().s(1, name).m(2, Pb().m(1, Pb().i(1, type).m(2, shape)));
}

Pb attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Pb a;
  a.s(1, name);
  for (int64_t x : v) a.i(8, x);
  return a.i(20, 7);
}
Pb attr_int(const std::string& name, int64_t v) { return Pb().s(1, name).i(3, v).i(20, 2); }
Pb attr_float(const std::string& name, float v) { return Pb().s(1, name).f32(2, v).i(20, 1); }
Pb attr_str(const std::string& name, const std::string& v) { return Pb().s(1, name).s(4, v).i(20, 3); }

/// One node `op` named "n" on graph input x (float, `dims`) and int64 initializers, outputs
/// y0, y1, …
struct Model {
  std::string op;
  std::vector<int64_t> dims;
  int64_t opset = 18;
  std::vector<std::string> inputs{"x"};
  std::vector<Pb> inits, attrs, extra_inputs;
  int outputs = 1;
  std::string bytes() const {
    Pb n;
    for (const auto& x : inputs) n.s(1, x);
    for (int k = 0; k < outputs; ++k) n.s(2, "y" + std::to_string(k));
    n.s(3, "n").s(4, op);
    for (const Pb& a : attrs) n.m(5, a);
    Pb g;
    g.m(1, n).s(2, "g");
    for (const Pb& t : inits) g.m(5, t);
    g.m(11, value("x", dims));
    for (const Pb& v : extra_inputs) g.m(11, v);
    for (int k = 0; k < outputs; ++k) g.m(12, Pb().s(1, "y" + std::to_string(k)));
    Pb model;
    model.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, opset));
    return model.b;
  }
};

std::string import_error(const Model& m, const OnnxImportOptions& opt = {}) {
  try {
    import_onnx_bytes(m.bytes(), "m.onnx", opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// x = 0, 1, 2, … of `dims`.
runtime::NDArray iota(const std::vector<int64_t>& dims) {
  runtime::NDArray a = runtime::NDArray::empty(dims, DataType::Float(32));
  for (int64_t k = 0; k < a.numel(); ++k) a.set(k, double(k));
  return a;
}

/// The model's outputs (run by the reference runner) on x = iota.
std::vector<runtime::NDArray> run(const Model& m) {
  Graph g = import_onnx_bytes(m.bytes(), "m.onnx");
  return run_reference(g, {iota(m.dims)});
}

/// Whether the importer takes models of `opset` (older ones were refused before issue 32).
bool imports_opset(int64_t opset) {
  Model m{.op = "Relu", .dims = {2}, .opset = opset};
  return import_error(m).find("the oldest loom imports") == std::string::npos;
}

#define REQUIRE_OPSET(v) \
  if (!imports_opset(v)) GTEST_SKIP() << "this importer refuses opset " << (v)

std::vector<double> values(const runtime::NDArray& a) {
  std::vector<double> v;
  for (int64_t k = 0; k < a.numel(); ++k) v.push_back(a.get(k));
  return v;
}

TEST(ShapeImport, SliceTakesInputsFromOpset10) {
  REQUIRE_FRONTEND();
  Model s{.op = "Slice", .dims = {4, 5}, .opset = 13};
  s.inputs = {"x", "starts", "ends", "axes", "steps"};
  s.inits = {ints_tensor("starts", {-1, 10}), ints_tensor("ends", {INT64_MIN, INT64_MIN}), ints_tensor("axes", {1, -2}),
             ints_tensor("steps", {-2, -3})};
  auto out = run(s);  // rows 3, 0; columns 4, 2, 0
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{19, 17, 15, 4, 2, 0}));
}

TEST(ShapeImport, SliceTakesAttributesBeforeOpset10) {
  REQUIRE_FRONTEND();
  REQUIRE_OPSET(9);
  Model m{.op = "Slice", .dims = {4, 5}, .opset = 9};
  m.attrs = {attr_ints("starts", {1, -1}), attr_ints("ends", {INT64_MAX, -100}), attr_ints("axes", {0, 1})};
  // opset 9 has no steps: [1:, -1:-100] of a positive step is empty on axis 1: a value without
  // elements, which loom's graphs cannot return.
  EXPECT_HAS(import_error(m), "graph output 'y0' has no elements");
  m.attrs = {attr_ints("starts", {1, 1}), attr_ints("ends", {INT64_MAX, 3})};
  auto out = run(m);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{6, 7, 11, 12, 16, 17}));
}

TEST(ShapeImport, SliceErrorsNameTheNode) {
  REQUIRE_FRONTEND();
  Model s{.op = "Slice", .dims = {4, 5}, .opset = 13};
  s.inputs = {"x", "starts", "ends", "axes", "steps"};
  s.inits = {ints_tensor("starts", {0}), ints_tensor("ends", {3}), ints_tensor("axes", {1}), ints_tensor("steps", {0})};
  std::string e = import_error(s);
  EXPECT_HAS(e, "node #0 'n' (Slice)");
  EXPECT_HAS(e, "steps [0] has a 0 (axis 1)");
  s.inits = {ints_tensor("starts", {0, 0}), ints_tensor("ends", {3, 3}), ints_tensor("axes", {1, -1}),
             ints_tensor("steps", {1, 1})};
  EXPECT_HAS(import_error(s), "axis 1 is given twice");
  // Run-time starts: loom needs them constant.
  s.inits = {ints_tensor("ends", {3}), ints_tensor("axes", {1}), ints_tensor("steps", {1})};
  s.extra_inputs = {value("starts", {1}, kInt64)};
  EXPECT_HAS(import_error(s), "starts (input 1 'starts') is computed at run time");
}

TEST(ShapeImport, SplitByAttributeBeforeOpset13) {
  REQUIRE_FRONTEND();
  REQUIRE_OPSET(11);
  Model a{.op = "Split", .dims = {2, 7}, .opset = 11};
  a.attrs = {attr_int("axis", 1), attr_ints("split", {2, 5})};
  a.outputs = 2;
  auto out = run(a);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{2, 3, 4, 5, 6, 9, 10, 11, 12, 13}));
}

TEST(ShapeImport, SplitByInputAndNumOutputs) {
  REQUIRE_FRONTEND();
  Model n{.op = "Split", .dims = {7}, .opset = 18};
  n.attrs = {attr_int("num_outputs", 3)};
  n.outputs = 3;
  auto out = run(n);  // ceil(7 / 3) = 3: 3, 3 and the rest, 1
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{6}));

  Model i{.op = "Split", .dims = {7}, .opset = 13};
  i.inputs = {"x", "split"};
  i.inits = {ints_tensor("split", {3, 3})};
  i.outputs = 2;
  EXPECT_HAS(import_error(i), "split [3,3] sums to 6 but axis 0 has extent 7");
  i.inits.clear();
  i.inputs = {"x"};
  EXPECT_HAS(import_error(i), "axis 0 of extent 7 does not split into 2 equal parts");
}

TEST(ShapeImport, PadTakesAttributesBeforeOpset11) {
  REQUIRE_FRONTEND();
  REQUIRE_OPSET(10);
  Model a{.op = "Pad", .dims = {4}, .opset = 10};
  a.attrs = {attr_ints("pads", {2, 3}), attr_str("mode", "reflect")};
  EXPECT_EQ(values(run(a)[0]), (std::vector<double>{2, 1, 0, 1, 2, 3, 2, 1, 0}));
  a.attrs = {attr_ints("pads", {1, -2}), attr_float("value", 7.5f)};
  EXPECT_EQ(values(run(a)[0]), (std::vector<double>{7.5, 0, 1}));
}

TEST(ShapeImport, PadModesAndInputs) {
  REQUIRE_FRONTEND();
  Model w{.op = "Pad", .dims = {2, 3}, .opset = 19};
  w.inputs = {"x", "pads", "", "axes"};
  w.inits = {ints_tensor("pads", {2, -1}), ints_tensor("axes", {-1})};
  w.attrs = {attr_str("mode", "wrap")};
  EXPECT_EQ(values(run(w)[0]), (std::vector<double>{1, 2, 0, 1, 4, 5, 3, 4}));
  w.attrs = {attr_str("mode", "edge")};
  EXPECT_EQ(values(run(w)[0]), (std::vector<double>{0, 0, 0, 1, 3, 3, 3, 4}));
  w.opset = 18;
  w.attrs = {attr_str("mode", "wrap")};
  EXPECT_HAS(import_error(w), "mode 'wrap' is not one of constant, edge, reflect");
  w.opset = 19;
  w.inits = {ints_tensor("pads", {-2, -1}), ints_tensor("axes", {-1})};
  EXPECT_HAS(import_error(w), "empty");
}

TEST(ShapeImport, RangeFoldsConstantsOnly) {
  REQUIRE_FRONTEND();
  Model r{.op = "Range", .dims = {1}, .opset = 13};
  r.inputs = {"start", "limit", "delta"};
  auto scalar = [](const char* name, int64_t v) {  // rank 0: no dims
    return Pb().i(2, kInt64).s(8, name).s(9, bytes_of(std::vector<int64_t>{v}));
  };
  r.inits = {scalar("start", 10), scalar("limit", -3), scalar("delta", -4)};
  Graph g = import_onnx_bytes(r.bytes(), "m.onnx");
  EXPECT_EQ(g.num_ops(), 0u);
  auto out = run_reference(g, {iota({1})});
  EXPECT_EQ(values(out.back()), (std::vector<double>{10, 6, 2, -2}));
  r.inits.pop_back();
  r.extra_inputs = {value("delta", {}, kInt64)};
  EXPECT_HAS(import_error(r), "loom folds Range at import");
}

TEST(ShapeImport, IndexInputsAreCheckedWhenConstant) {
  REQUIRE_FRONTEND();
  Model g{.op = "GatherElements", .dims = {3, 4}, .opset = 13};
  g.inputs = {"x", "idx"};
  g.inits = {ints_tensor("idx", {0, -1, 3, 4}, {1, 4})};
  g.attrs = {attr_int("axis", 0)};
  EXPECT_HAS(import_error(g), "index 3 (element 2 of input 1) is out of range for extent 3");
  g.inits = {ints_tensor("idx", {0, -1, 2, 1}, {1, 4})};
  EXPECT_EQ(values(run(g)[0]), (std::vector<double>{0, 9, 10, 7}));

}

TEST(ShapeImport, ScatterBeforeOpset11IsScatterElements) {
  REQUIRE_FRONTEND();
  REQUIRE_OPSET(10);
  Model s{.op = "Scatter", .dims = {3, 4}, .opset = 10};
  s.inputs = {"x", "idx", "upd"};
  s.inits = {ints_tensor("idx", {2, 0}, {1, 2})};
  s.extra_inputs = {value("upd", {1, 2})};
  s.attrs = {attr_int("axis", 1)};
  Graph gs = import_onnx_bytes(s.bytes(), "m.onnx");
  runtime::NDArray upd = runtime::NDArray::from_vector({-1, -2}, {1, 2}, DataType::Float(32));
  EXPECT_EQ(values(run_reference(gs, {iota({3, 4}), upd})[0]),
            (std::vector<double>{-2, 1, -1, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(ShapeImport, ScatterReductionsFollowTheOpset) {
  REQUIRE_FRONTEND();
  Model s{.op = "ScatterElements", .dims = {3, 4}, .opset = 16};
  s.inputs = {"x", "idx", "upd"};
  s.inits = {ints_tensor("idx", {2, 0}, {1, 2})};
  s.extra_inputs = {value("upd", {1, 2})};
  s.attrs = {attr_int("axis", 1), attr_str("reduction", "max")};
  EXPECT_HAS(import_error(s), "reduction 'max' is not one of none, add, mul");
  s.opset = 18;
  Graph g = import_onnx_bytes(s.bytes(), "m.onnx");
  runtime::NDArray upd = runtime::NDArray::from_vector({-1, 20}, {1, 2}, DataType::Float(32));
  EXPECT_EQ(values(run_reference(g, {iota({3, 4}), upd})[0]),
            (std::vector<double>{20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(ShapeImport, DepthToSpaceModesAndSpaceToDepthInvert) {
  REQUIRE_FRONTEND();
  Model d{.op = "DepthToSpace", .dims = {1, 8, 1, 2}, .opset = 13};
  d.attrs = {attr_int("blocksize", 2)};
  auto dcr = values(run(d)[0]);
  // DCR: output channel c at (2h + i, 2w + j) reads input channel (i * 2 + j) * 2 + c.
  EXPECT_EQ(std::vector<double>(dcr.begin(), dcr.begin() + 8), (std::vector<double>{0, 4, 1, 5, 8, 12, 9, 13}));
  d.attrs = {attr_int("blocksize", 2), attr_str("mode", "CRD")};
  auto crd = values(run(d)[0]);
  // CRD: it reads input channel c * 4 + i * 2 + j.
  EXPECT_EQ(std::vector<double>(crd.begin(), crd.begin() + 8), (std::vector<double>{0, 2, 1, 3, 4, 6, 5, 7}));
  d.attrs = {attr_int("blocksize", 3)};
  EXPECT_HAS(import_error(d), "channels 8 are not a multiple of blocksize² = 9");

  Model s{.op = "SpaceToDepth", .dims = {1, 2, 2, 4}, .opset = 13};
  s.attrs = {attr_int("blocksize", 2)};
  auto out = run(s);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 8, 1, 2}));
  EXPECT_EQ(values(out[0])[0], 0);
  EXPECT_EQ(values(out[0])[2], 8);  // channel 1 = (i 0, j 0, c 1)
}

TEST(ShapeImport, ExpandTileAndTrilu) {
  REQUIRE_FRONTEND();
  Model e{.op = "Expand", .dims = {3, 1}, .opset = 13};
  e.inputs = {"x", "shape"};
  e.inits = {ints_tensor("shape", {2, 1, 2})};
  auto out = run(e);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  e.inits = {ints_tensor("shape", {2, 2})};
  EXPECT_HAS(import_error(e), "input [3,1] cannot be expanded to [2,2]");

  Model t{.op = "Tile", .dims = {2}, .opset = 13};
  t.inputs = {"x", "repeats"};
  t.inits = {ints_tensor("repeats", {3})};
  EXPECT_EQ(values(run(t)[0]), (std::vector<double>{0, 1, 0, 1, 0, 1}));
  t.inits = {ints_tensor("repeats", {3, 1})};
  EXPECT_HAS(import_error(t), "repeats has 2 values for an input of rank 1");

  Model u{.op = "Trilu", .dims = {2, 3}, .opset = 14};
  u.inputs = {"x", "k"};
  u.inits = {Pb().i(2, kInt64).s(8, "k").s(9, bytes_of(std::vector<int64_t>{1}))};
  u.attrs = {attr_int("upper", 0)};
  EXPECT_EQ(values(run(u)[0]), (std::vector<double>{0, 1, 0, 3, 4, 5}));
}

TEST(ShapeImport, ConverterErrorsNameTheNodeAndTheProblem) {
  REQUIRE_FRONTEND();
  Model c{.op = "CumSum", .dims = {3, 4}, .opset = 14};
  c.inputs = {"x", "axis"};
  c.inits = {Pb().i(2, kInt64).s(8, "axis").s(9, bytes_of(std::vector<int64_t>{2}))};
  EXPECT_HAS(import_error(c), "node #0 'n' (CumSum): axis 2 is out of range for rank 2");

  Model o{.op = "OneHot", .dims = {3}, .opset = 13};
  o.inputs = {"idx", "depth", "values"};
  o.extra_inputs = {value("idx", {3}, kInt64), value("values", {3})};
  o.inits = {Pb().i(2, kInt64).s(8, "depth").s(9, bytes_of(std::vector<int64_t>{4}))};
  EXPECT_HAS(import_error(o), "values is [3]; it must hold 2 elements [off, on]");

  Model e{.op = "EyeLike", .dims = {2, 3, 4}, .opset = 9};
  if (imports_opset(9)) EXPECT_HAS(import_error(e), "the input is [2,3,4]; it must be 2-D");

  Model r{.op = "ReverseSequence", .dims = {4, 3}, .opset = 10};
  r.inputs = {"x", "lens"};
  r.inits = {ints_tensor("lens", {1, 2})};
  r.attrs = {attr_int("batch_axis", 0), attr_int("time_axis", 1)};
  if (imports_opset(10)) EXPECT_HAS(import_error(r), "sequence_lens is [2]; it must be 1-D of the batch extent 4");

  Model g{.op = "GatherND", .dims = {3, 4}, .opset = 13};
  g.inputs = {"x", "idx"};
  g.inits = {ints_tensor("idx", {0, 1, 2}, {1, 3})};
  EXPECT_HAS(import_error(g), "indices [1,3] address 3 dims but data [3,4] has 2 after 0 batch dims");
  g.inits = {ints_tensor("idx", {0, 4}, {1, 2})};
  EXPECT_HAS(import_error(g), "index 4 (element 1 of input 1) is out of range for extent 4");

  Model d{.op = "DepthToSpace", .dims = {1, 8, 2}, .opset = 13};
  d.attrs = {attr_int("blocksize", 2)};
  EXPECT_HAS(import_error(d), "the input is [1,8,2]; it must be 4-D [N, C, H, W]");

  Model cc{.op = "CenterCropPad", .dims = {5, 6}, .opset = 18};
  cc.inputs = {"x", "shape"};
  cc.inits = {ints_tensor("shape", {3})};
  EXPECT_HAS(import_error(cc), "shape [3] has 1 values for 2 axes");
  cc.attrs = {attr_ints("axes", {-1})};
  auto out = run(cc);  // columns 1..3 of 0..5 (the odd one cropped after)
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(values(out[0])[0], 1);
  EXPECT_EQ(values(out[0])[2], 3);
}

}  // namespace
}  // namespace loom::graph_opt
