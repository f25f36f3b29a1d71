// The ONNX converters of convert_reduce.cc and convert_logic.cc: what the node suite does not
// pin down (axes as an attribute or an input by opset, noop_with_empty_axes, integer means,
// ReduceLogSumExp's stability, TopK's ties and both outputs, variadic broadcasting) and the
// errors for malformed nodes. Models are written here in protobuf's wire format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "common/protobuf_writer.h"

namespace loom::graph_opt {
namespace {

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

using loom::test::Pb;

enum : int64_t { kFloat = 1, kInt32 = 6, kInt64 = 7, kBool = 9 };

Pb value(const std::string& name, const std::vector<int64_t>& dims, int64_t type = kFloat) {
  Pb shape;
  for (int64_t d : dims) shape.m(1, Pb().i(1, d));
  return Pb().s(1, name).m(2, Pb().m(1, Pb().i(1, type).m(2, shape)));
}

Pb int64_init(const std::string& name, const std::vector<int64_t>& v) {
  Pb t;
  t.i(1, int64_t(v.size())).i(2, kInt64).s(8, name);
  return t.s(9, std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
}

Pb a_int(const std::string& n, int64_t v) { return Pb().s(1, n).i(3, v).i(20, 2); }
Pb a_ints(const std::string& n, const std::vector<int64_t>& v) {
  Pb a;
  a.s(1, n);
  for (int64_t x : v) a.i(8, x);
  return a.i(20, 7);
}
Pb a_str(const std::string& n, const std::string& v) { return Pb().s(1, n).s(4, v).i(20, 3); }

struct Model {
  int64_t opset = 18;
  std::string op;
  std::vector<std::string> node_inputs, node_outputs = {"y"};
  std::vector<Pb> attrs, inits, inputs;
  std::string bytes() const {
    Pb n;
    for (const auto& x : node_inputs) n.s(1, x);
    for (const auto& x : node_outputs) n.s(2, x);
    n.s(3, "n").s(4, op);
    for (const Pb& a : attrs) n.m(5, a);
    Pb g;
    g.m(1, n).s(2, "g");
    for (const Pb& t : inits) g.m(5, t);
    for (const Pb& v : inputs) g.m(11, v);
    for (const auto& x : node_outputs)
      if (!x.empty()) g.m(12, Pb().s(1, x));
    Pb model;
    model.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, opset));
    return model.b;
  }
};

runtime::NDArray array(std::vector<int64_t> shape, DataType t, const std::vector<double>& v) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), t);
  for (size_t i = 0; i < v.size(); ++i) a.set(int64_t(i), v[i]);
  return a;
}

std::vector<double> values(const runtime::NDArray& a) {
  std::vector<double> v;
  for (int64_t i = 0; i < a.numel(); ++i) v.push_back(a.get(i));
  return v;
}

/// The outputs of the model run by the reference executor on `inputs`.
std::vector<runtime::NDArray> run(const Model& m, const std::vector<runtime::NDArray>& inputs) {
  return run_reference(import_onnx_bytes(m.bytes(), "m.onnx"), inputs);
}

std::string import_error(const Model& m) {
  try {
    import_onnx_bytes(m.bytes(), "m.onnx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected to contain: " << part;
}

const runtime::NDArray x234 = array({2, 3, 4}, DataType::Float(32), [] {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i) v.push_back(i * 0.5 - 3);
  return v;
}());

/// The mean over dim 1 of x234, [2,4].
std::vector<double> mean_dim1() {
  std::vector<double> v;
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c)
      v.push_back((x234.get(a * 12 + c) + x234.get(a * 12 + 4 + c) + x234.get(a * 12 + 8 + c)) / 3);
  return v;
}

/// Float32 results within float32 rounding of the exact means.
void expect_means(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * std::abs(want[i]) + 1e-7) << i;
}

TEST(ReduceImport, AxesAreAnAttributeBefore18AndAnInputFrom18) {
  REQUIRE_FRONTEND();
  Model m{17, "ReduceMean", {"x"}};
  m.inputs = {value("x", {2, 3, 4})};
  m.attrs = {a_ints("axes", {1}), a_int("keepdims", 0)};
  std::vector<runtime::NDArray> y = run(m, {x234});
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2, 4}));
  expect_means(values(y[0]), mean_dim1());

  Model m18{18, "ReduceMean", {"x", "axes"}};
  m18.inputs = {value("x", {2, 3, 4})};
  m18.inits = {int64_init("axes", {-2})};
  m18.attrs = {a_int("keepdims", 0)};
  expect_means(values(run(m18, {x234})[0]), mean_dim1());

  Model attr18{18, "ReduceMax", {"x"}};
  attr18.inputs = {value("x", {2, 3, 4})};
  attr18.attrs = {a_ints("axes", {1})};
  expect_contains(import_error(attr18), "axes is an input from opset 18 (the model's is 18), not an attribute");
  Model sum13{13, "ReduceSum", {"x"}};
  sum13.inputs = {value("x", {2, 3, 4})};
  sum13.attrs = {a_ints("axes", {1})};
  expect_contains(import_error(sum13), "axes is an input from opset 13");
  Model twice{18, "ReduceSum", {"x", "axes"}};
  twice.inputs = {value("x", {2, 3, 4})};
  twice.inits = {int64_init("axes", {1, -2})};
  expect_contains(import_error(twice), "axis 1 is given twice");
}

TEST(ReduceImport, EmptyAxesReduceAllOrNothing) {
  REQUIRE_FRONTEND();
  Model all{13, "ReduceSum", {"x"}};
  all.inputs = {value("x", {2, 3, 4})};
  std::vector<runtime::NDArray> y = run(all, {x234});
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{1, 1, 1}));
  double sum = 0;
  for (double v : values(x234)) sum += v;
  EXPECT_DOUBLE_EQ(y[0].get(0), sum);

  Model noop = all;
  noop.attrs = {a_int("noop_with_empty_axes", 1)};
  EXPECT_EQ(values(run(noop, {x234})[0]), values(x234));
  // The elementwise steps still apply (ONNX's reference): ReduceSumSquare squares.
  Model square{18, "ReduceSumSquare", {"x"}};
  square.inputs = {value("x", {2, 3, 4})};
  square.attrs = {a_int("noop_with_empty_axes", 1)};
  std::vector<double> sq = values(run(square, {x234})[0]);
  for (int64_t i = 0; i < 24; ++i) EXPECT_DOUBLE_EQ(sq[size_t(i)], x234.get(i) * x234.get(i));
}

TEST(ReduceImport, LogSumExpIsStableAndIntegerMeansTruncate) {
  REQUIRE_FRONTEND();
  const double inf = std::numeric_limits<double>::infinity();
  Model lse{18, "ReduceLogSumExp", {"x", "axes"}};
  lse.inputs = {value("x", {3, 2})};
  lse.inits = {int64_init("axes", {1})};
  std::vector<double> y = values(run(lse, {array({3, 2}, DataType::Float(32), {1000, 1000, -1000, 0, inf, 5})})[0]);
  EXPECT_NEAR(y[0], 1000 + std::log(2.0), 1e-3);
  EXPECT_NEAR(y[1], 0, 1e-6);
  EXPECT_EQ(y[2], inf);

  Model mean{18, "ReduceMean", {"x"}};
  mean.inputs = {value("x", {4}, kInt32)};
  mean.attrs = {a_int("keepdims", 0)};
  runtime::NDArray r = run(mean, {array({4}, DataType::Int(32), {-1, -2, -3, -1})})[0];
  EXPECT_EQ(r.dtype(), DataType::Int(32));
  EXPECT_EQ(r.get(0), -1);  // -1.75 truncated, as ONNX's reference casts back
}

TEST(ReduceImport, ArgMaxAndTopK) {
  REQUIRE_FRONTEND();
  Model am{13, "ArgMax", {"x"}};
  am.inputs = {value("x", {6})};
  am.attrs = {a_int("keepdims", 0), a_int("select_last_index", 1)};
  runtime::NDArray x = array({6}, DataType::Float(32), {3, 7, 1, 7, 7, 0});
  runtime::NDArray r = run(am, {x})[0];
  EXPECT_EQ(r.dtype(), DataType::Int(64));
  EXPECT_EQ(values(r), std::vector<double>{4});
  am.attrs = {a_int("keepdims", 0)};
  EXPECT_EQ(values(run(am, {x})[0]), std::vector<double>{1});

  Model tk{13, "TopK", {"x", "k"}, {"v", "i"}};
  tk.inputs = {value("x", {6})};
  tk.inits = {int64_init("k", {4})};
  std::vector<runtime::NDArray> out = run(tk, {x});
  EXPECT_EQ(values(out[0]), (std::vector<double>{7, 7, 7, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, 3, 4, 0}));  // of equal values the lower index first
  tk.attrs = {a_int("largest", 0), a_int("sorted", 0)};
  out = run(tk, {x});
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 1, 3, 7}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{5, 2, 0, 1}));
  Model only_indices = tk;
  only_indices.node_outputs = {"", "i"};
  EXPECT_EQ(values(run(only_indices, {x})[0]), (std::vector<double>{5, 2, 0, 1}));
  tk.inits = {int64_init("k", {7})};
  expect_contains(import_error(tk), "k = 7 for an axis of extent 6");
}

TEST(LogicImport, VariadicOperatorsBroadcastEveryInput) {
  REQUIRE_FRONTEND();
  Model mx{13, "Max", {"a", "b", "c"}};
  mx.inputs = {value("a", {2, 1}), value("b", {3}), value("c", {1})};
  runtime::NDArray a = array({2, 1}, DataType::Float(32), {0, 5}), b = array({3}, DataType::Float(32), {-1, 2, 6}),
                   c = array({1}, DataType::Float(32), {1});
  std::vector<runtime::NDArray> y = run(mx, {a, b, c});
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(y[0]), (std::vector<double>{1, 2, 6, 5, 5, 6}));
  Model mean = mx;
  mean.op = "Mean";
  const std::vector<double> want = {0, 1, 7.0 / 3, 5.0 / 3, 8.0 / 3, 4}, got = values(run(mean, {a, b, c})[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  Model one{13, "Sum", {"a"}};
  one.inputs = {value("a", {2, 1})};
  EXPECT_EQ(values(run(one, {a})[0]), values(a));
}

TEST(LogicImport, MalformedNodesAreErrors) {
  REQUIRE_FRONTEND();
  Model where{16, "Where", {"c", "a", "b"}};
  where.inputs = {value("c", {3}), value("a", {3}), value("b", {3})};
  expect_contains(import_error(where), "condition type float32 (it must be bool)");
  Model mod{13, "Mod", {"a", "b"}};
  mod.inputs = {value("a", {3}, kInt32), value("b", {3}, kInt32)};
  mod.attrs = {a_int("fmod", 2)};
  expect_contains(import_error(mod), "fmod must be 0 or 1, got 2");
  Model shift{13, "BitShift", {"a", "b"}};
  shift.inputs = {value("a", {3}, kInt32), value("b", {3}, kInt32)};
  shift.attrs = {a_str("direction", "UP")};
  expect_contains(import_error(shift), "direction must be \"LEFT\" or \"RIGHT\", got \"UP\"");
  Model prelu{16, "PRelu", {"x", "s"}};
  prelu.inputs = {value("x", {3, 4}), value("s", {3})};
  expect_contains(import_error(prelu), "slope of shape [3] does not broadcast to X's shape [3,4]");
  Model eq{13, "Equal", {"a", "b"}};
  eq.inputs = {value("a", {3}, kInt32), value("b", {3})};
  expect_contains(import_error(eq), "inputs have different types int32 (input 0) and float32 (input 1)");
  Model andf{13, "And", {"a", "b"}};
  andf.inputs = {value("a", {3}), value("b", {3})};
  expect_contains(import_error(andf), "input type float32 (the operator takes bool)");
  Model isnan_int{13, "IsNaN", {"a"}};
  isnan_int.inputs = {value("a", {3}, kInt32)};
  expect_contains(import_error(isnan_int), "input type int32 (loom takes floating point)");
}

}  // namespace
}  // namespace loom::graph_opt
