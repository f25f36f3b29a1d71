// The ONNX converters of the signal operators (DFT, STFT, the windows, MelWeightMatrix), the
// integer convolutions (ConvInteger, QLinearConv), Det, BitCast, TensorScatter, SwiGLU,
// RoiAlign, DeformConv, CausalConvWithState and LinearAttention: values against plain loops
// where the converter does the arithmetic (the DFT's twiddle matrices, STFT's frames, the
// windows, TensorScatter's run), and the errors of malformed nodes. Models are written in
// protobuf's wire format (onnx.proto's field numbers); constant inputs are bound.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "common/protobuf_writer.h"

namespace loom::graph_opt {
namespace {

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

using loom::test::Pb;

enum : int64_t { kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kDouble = 11 };

/// A graph input: name, ONNX element type, dims ({} for rank 0).
struct In {
  std::string name;
  int64_t type;
  std::vector<int64_t> dims;
};

Pb value(const In& x) {
  Pb shape;
  for (int64_t d : x.dims) shape.m(1, Pb().i(1, d));
  Pb tensor_type;
  tensor_type.i(1, x.type).m(2, shape);
  return Pb().s(1, x.name).m(2, Pb().m(1, tensor_type));
}

Pb ints(const std::string& name, const std::vector<int64_t>& v) {
  Pb a;
  a.s(1, name);
  for (int64_t x : v) a.i(8, x);
  return a.i(20, 7);
}
Pb integer(const std::string& name, int64_t v) { return Pb().s(1, name).i(3, v).i(20, 2); }
Pb real(const std::string& name, float v) { return Pb().s(1, name).f32(2, v).i(20, 1); }
Pb str(const std::string& name, const std::string& v) { return Pb().s(1, name).s(4, v).i(20, 3); }

/// One node of `op` on graph inputs `ins` ("" names an absent optional input).
std::string model(const std::string& op, const std::vector<In>& ins, const std::vector<std::string>& outs,
                  const std::vector<Pb>& attrs, int64_t opset) {
  Pb n;
  for (const In& x : ins) n.s(1, x.name);
  for (const auto& x : outs) n.s(2, x);
  n.s(3, "n").s(4, op);
  for (const Pb& a : attrs) n.m(5, a);
  Pb g;
  g.m(1, n).s(2, "g");
  for (const In& x : ins)
    if (!x.name.empty()) g.m(11, value(x));
  for (const auto& x : outs) g.m(12, Pb().s(1, x));
  Pb mp;
  mp.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, opset));
  return mp.b;
}

runtime::NDArray scalar_i64(int64_t v) {
  runtime::NDArray a = runtime::NDArray::empty({}, DataType::Int(64));
  a.data<int64_t>()[0] = v;
  return a;
}

Graph import(const std::string& bytes, std::map<std::string, runtime::NDArray> bind = {}) {
  OnnxImportOptions opt;
  opt.bind_inputs = std::move(bind);
  opt.warn = nullptr;
  return import_onnx_bytes(bytes, "m.onnx", opt);
}

std::string import_error(const std::string& bytes, std::map<std::string, runtime::NDArray> bind = {}) {
  try {
    import(bytes, std::move(bind));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

runtime::NDArray ramp(std::vector<int64_t> shape, DataType t = DataType::Float(32)) {
  runtime::NDArray a = runtime::NDArray::empty(shape, t);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::sin(double(i) * 1.3) * double(1 + i % 5));
  return a;
}

#define EXPECT_HAS(s, part) EXPECT_NE(std::string(s).find(part), std::string::npos) << "'" << (s) << "' lacks '" << (part) << "'"

using cd = std::complex<double>;

TEST(MiscOpsImport, DftMatchesTheSumOfTwiddlesForwardInverseOneSided) {
  REQUIRE_FRONTEND();
  // x [2, 6, 3, 2]: complex, the transform along axis 1 (6 points), lengths 6 and 4 (cut).
  runtime::NDArray x = ramp({2, 6, 3, 2});
  auto in = [&](int64_t b, int64_t n, int64_t j) { return cd(x.get(((b * 6 + n) * 3 + j) * 2), x.get(((b * 6 + n) * 3 + j) * 2 + 1)); };
  for (int64_t len : {6, 4})
    for (int inverse : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << "length " << len << " inverse " << inverse);
      Graph g = import(model("DFT", {{"x", kFloat, {2, 6, 3, 2}}, {"len", kInt64, {}}, {"axis", kInt64, {}}}, {"y"},
                             {integer("inverse", inverse)}, 20),
                       {{"len", scalar_i64(len)}, {"axis", scalar_i64(1)}});
      runtime::NDArray y = run_reference(g, {x})[0];
      ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, len, 3, 2}));
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t k = 0; k < len; ++k)
          for (int64_t j = 0; j < 3; ++j) {
            cd want = 0;
            for (int64_t n = 0; n < len; ++n)
              want += in(b, n, j) * std::polar(1.0, (inverse ? 2 : -2) * std::numbers::pi * double(k * n) / double(len));
            if (inverse) want /= double(len);
            EXPECT_NEAR(y.get(((b * len + k) * 3 + j) * 2), want.real(), 1e-4);
            EXPECT_NEAR(y.get(((b * len + k) * 3 + j) * 2 + 1), want.imag(), 1e-4);
          }
    }
  // One-sided of a real signal along the last signal axis (opset 17's attribute): 8 points, 5 bins.
  runtime::NDArray r = ramp({3, 8, 1});
  Graph g = import(model("DFT", {{"x", kFloat, {3, 8, 1}}}, {"y"}, {integer("onesided", 1), integer("axis", 1)}, 17));
  runtime::NDArray y = run_reference(g, {r})[0];
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{3, 5, 2}));
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t k = 0; k < 5; ++k) {
      cd want = 0;
      for (int64_t n = 0; n < 8; ++n) want += r.get(b * 8 + n) * std::polar(1.0, -2 * std::numbers::pi * double(k * n) / 8.0);
      EXPECT_NEAR(y.get((b * 5 + k) * 2), want.real(), 1e-4);
      EXPECT_NEAR(y.get((b * 5 + k) * 2 + 1), want.imag(), 1e-4);
    }
  // The inverse of the one-sided spectrum is the signal again (irfft, opset 20).
  Graph gi = import(model("DFT", {{"s", kFloat, {3, 5, 2}}, {"len", kInt64, {}}}, {"y"},
                          {integer("onesided", 1), integer("inverse", 1)}, 20),
                    {{"len", scalar_i64(8)}});
  runtime::NDArray back = run_reference(gi, {y})[0];
  ASSERT_EQ(back.shape(), (std::vector<int64_t>{3, 8, 1}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_NEAR(back.get(i), r.get(i), 1e-4);
}

TEST(MiscOpsImport, DftKeepsADoubleSignalDouble) {
  REQUIRE_FRONTEND();
  runtime::NDArray x = ramp({5, 1}, DataType::Float(64));
  Graph g = import(model("DFT", {{"x", kDouble, {5, 1}}}, {"y"}, {integer("axis", 0)}, 17));
  runtime::NDArray y = run_reference(g, {x})[0];
  ASSERT_EQ(y.dtype(), DataType::Float(64));
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{5, 2}));
  for (int64_t k = 0; k < 5; ++k) {
    cd want = 0;
    for (int64_t n = 0; n < 5; ++n) want += x.get(n) * std::polar(1.0, -2 * std::numbers::pi * double(k * n) / 5.0);
    EXPECT_NEAR(y.get(2 * k), want.real(), 1e-12);
    EXPECT_NEAR(y.get(2 * k + 1), want.imag(), 1e-12);
  }
}

TEST(MiscOpsImport, StftFramesTheSignalAndWeightsByTheWindow) {
  REQUIRE_FRONTEND();
  runtime::NDArray x = ramp({1, 20, 1}), w = ramp({8});
  Graph g = import(model("STFT", {{"x", kFloat, {1, 20, 1}}, {"step", kInt64, {}}, {"w", kFloat, {8}}}, {"y"}, {}, 17),
                   {{"step", scalar_i64(4)}});
  runtime::NDArray y = run_reference(g, {x, w})[0];
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{1, 4, 5, 2}));  // 1 + (20 - 8) / 4 frames, 8 / 2 + 1 bins
  for (int64_t f = 0; f < 4; ++f)
    for (int64_t k = 0; k < 5; ++k) {
      cd want = 0;
      for (int64_t n = 0; n < 8; ++n)
        want += x.get(f * 4 + n) * w.get(n) * std::polar(1.0, -2 * std::numbers::pi * double(k * n) / 8.0);
      EXPECT_NEAR(y.get((f * 5 + k) * 2), want.real(), 1e-4);
      EXPECT_NEAR(y.get((f * 5 + k) * 2 + 1), want.imag(), 1e-4);
    }
}

TEST(MiscOpsImport, WindowsAreTheirCosineSums) {
  REQUIRE_FRONTEND();
  struct Case {
    const char* op;
    double a0, a1, a2;
  };
  for (const Case& c : {Case{"HannWindow", 0.5, 0.5, 0}, Case{"HammingWindow", 25.0 / 46, 21.0 / 46, 0},
                        Case{"BlackmanWindow", 0.42, 0.5, 0.08}})
    for (int periodic : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << c.op << " periodic " << periodic);
      Graph g = import(model(c.op, {{"n", kInt64, {}}}, {"y"}, {integer("periodic", periodic), integer("output_datatype", kDouble)}, 17),
                       {{"n", scalar_i64(7)}});
      runtime::NDArray y = run_reference(g, {})[0];
      ASSERT_EQ(y.shape(), (std::vector<int64_t>{7}));
      ASSERT_EQ(y.dtype(), DataType::Float(64));
      const double N = periodic ? 7 : 6;
      for (int64_t n = 0; n < 7; ++n) {
        const double x = 2 * std::numbers::pi * double(n) / N;
        EXPECT_NEAR(y.get(n), c.a0 - c.a1 * std::cos(x) + c.a2 * std::cos(2 * x), 1e-12);
      }
    }
}

TEST(MiscOpsImport, TensorScatterWritesEachRowsRunLinearlyOrCircularly) {
  REQUIRE_FRONTEND();
  runtime::NDArray cache = ramp({3, 5, 2}), update = ramp({3, 2, 2});
  for (int64_t i = 0; i < update.numel(); ++i) update.set(i, 100 + double(i));
  runtime::NDArray at = runtime::NDArray::empty({3}, DataType::Int(64));
  for (const char* mode : {"linear", "circular"}) {
    SCOPED_TRACE(mode);
    const bool circular = std::string(mode) == "circular";
    const int64_t starts[3] = {0, 3, circular ? 4 : 2};
    for (int b = 0; b < 3; ++b) at.data<int64_t>()[b] = starts[b];
    Graph g = import(model("TensorScatter", {{"c", kFloat, {3, 5, 2}}, {"u", kFloat, {3, 2, 2}}, {"w", kInt64, {3}}},
                           {"y"}, {str("mode", mode), integer("axis", 1)}, 24));
    runtime::NDArray y = run_reference(g, {cache, update, at})[0];
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t s = 0; s < 5; ++s)
        for (int64_t d = 0; d < 2; ++d) {
          double want = cache.get((b * 5 + s) * 2 + d);
          for (int64_t j = 0; j < 2; ++j)
            if ((starts[b] + j) % 5 == s) want = update.get((b * 2 + j) * 2 + d);
          EXPECT_EQ(y.get((b * 5 + s) * 2 + d), want) << b << "," << s << "," << d;
        }
  }
}

TEST(MiscOpsImport, IntegerConvolutionsCenterTheirOperands) {
  REQUIRE_FRONTEND();
  // ConvInteger of uint8 data with zero point 3 by a 1x1 kernel of 2 (zero point 1): (x - 3) * 1.
  Graph g = import(model("ConvInteger", {{"x", kUint8, {1, 1, 2, 2}}, {"w", kUint8, {1, 1, 1, 1}}, {"xz", kUint8, {}}, {"wz", kUint8, {}}},
                         {"y"}, {}, 10));
  ASSERT_EQ(g.type(g.outputs[0]).dtype, DataType::Int(32));
  runtime::NDArray x = runtime::NDArray::empty({1, 1, 2, 2}, DataType::UInt(8)), w = runtime::NDArray::empty({1, 1, 1, 1}, DataType::UInt(8));
  runtime::NDArray xz = runtime::NDArray::empty({1}, DataType::UInt(8)), wz = runtime::NDArray::empty({1}, DataType::UInt(8));  // rank 0 runs as [1]
  for (int i = 0; i < 4; ++i) x.set(i, 250 - 80 * i);
  w.set(0, 2);
  xz.set(0, 3);
  wz.set(0, 1);
  runtime::NDArray y = run_reference(g, {x, w, xz, wz})[0];
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.get(i), double(250 - 80 * i - 3));
}

TEST(MiscOpsImport, AConstantInputComputedFromAGraphInputNamesIt) {
  REQUIRE_FRONTEND();
  // HannWindow(Cast(n)): the size is computed from graph input n, which a caller may bind.
  Pb cast;
  cast.s(1, "n").s(2, "n32").s(3, "c").s(4, "Cast").m(5, integer("to", kInt32));
  Pb hann;
  hann.s(1, "n32").s(2, "y").s(3, "h").s(4, "HannWindow");
  Pb g;
  g.m(1, cast).m(1, hann).s(2, "g").m(11, value({"n", kInt64, {}})).m(12, Pb().s(1, "y"));
  Pb mp;
  mp.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, 17));
  try {
    import(mp.b);
    ADD_FAILURE() << "expected OnnxUnsupported";
  } catch (const OnnxUnsupported& e) {
    EXPECT_EQ(e.constant_input, "n");
    EXPECT_HAS(e.what(), "computed from graph input 'n'");
  }
  Graph bound = import(mp.b, {{"n", scalar_i64(4)}});
  EXPECT_EQ(bound.type(bound.outputs[0]).shape, (std::vector<int64_t>{4}));
}

/// One node of the ai.onnx.ml domain (opset `ml_opset`; the default domain not imported).
std::string ml_model(const std::string& op, const std::vector<In>& ins, const std::vector<Pb>& attrs, int64_t ml_opset,
                     bool import_ml = true) {
  Pb n;
  for (const In& x : ins) n.s(1, x.name);
  n.s(2, "y").s(3, "n").s(4, op).s(7, "ai.onnx.ml");
  for (const Pb& a : attrs) n.m(5, a);
  Pb g;
  g.m(1, n).s(2, "g");
  for (const In& x : ins) g.m(11, value(x));
  g.m(12, Pb().s(1, "y"));
  Pb mp;
  mp.i(1, 8).m(7, g).m(8, Pb().s(1, import_ml ? "ai.onnx.ml" : "").i(2, import_ml ? ml_opset : 17));
  return mp.b;
}

TEST(MiscOpsImport, MachineLearningDomainOperators) {
  REQUIRE_FRONTEND();
  Graph g = import(ml_model("Binarizer", {{"x", kFloat, {2, 3}}}, {real("threshold", 0.5f)}, 1));
  runtime::NDArray x = ramp({2, 3});
  runtime::NDArray y = run_reference(g, {x})[0];
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.get(i), x.get(i) > 0.5 ? 1.0 : 0.0) << i;
  Graph a = import(ml_model("ArrayFeatureExtractor", {{"x", kFloat, {5}}, {"i", kInt64, {2}}}, {}, 1));
  runtime::NDArray idx = runtime::NDArray::empty({2}, DataType::Int(64));
  idx.data<int64_t>()[0] = 4;
  idx.data<int64_t>()[1] = 1;
  runtime::NDArray v = ramp({5}), picked = run_reference(a, {v, idx})[0];
  ASSERT_EQ(picked.shape(), (std::vector<int64_t>{1, 2}));  // a vector is one row
  EXPECT_EQ(picked.get(0), v.get(4));
  EXPECT_EQ(picked.get(1), v.get(1));
  EXPECT_HAS(import_error(ml_model("Binarizer", {{"x", kFloat, {2}}}, {}, 1, false)), "does not import the domain 'ai.onnx.ml'");
  EXPECT_HAS(import_error(ml_model("LinearRegressor", {{"x", kFloat, {2}}}, {}, 1)), "LinearRegressor is not supported");
  EXPECT_HAS(import_error(ml_model("TreeEnsemble", {{"x", kFloat, {2, 2}}}, {}, 3)), "from ai.onnx.ml opset 5");
  // The converters' keys are not default-domain operators.
  EXPECT_HAS(import_error(model("ai.onnx.ml.Binarizer", {{"x", kFloat, {2}}}, {"y"}, {}, 17)),
             "operator ai.onnx.ml.Binarizer is not supported");
}

TEST(MiscOpsImport, Errors) {
  REQUIRE_FRONTEND();
  // DFT's axis must name a signal dim (not the trailing complex one).
  EXPECT_HAS(import_error(model("DFT", {{"x", kFloat, {2, 8, 1}}}, {"y"}, {integer("axis", 2)}, 17)), "axis 2");
  EXPECT_HAS(import_error(model("DFT", {{"x", kFloat, {2, 8, 3}}}, {"y"}, {}, 17)), "dim of 1 (real) or 2 (complex)");
  EXPECT_HAS(import_error(model("DFT", {{"x", kFloat, {2, 8, 2}}}, {"y"}, {integer("onesided", 1)}, 17)),
             "one-sided DFT takes a real input");
  EXPECT_HAS(import_error(model("STFT", {{"x", kFloat, {1, 20, 1}}, {"step", kInt64, {}}, {"w", kFloat, {8}}, {"len", kInt64, {}}},
                                {"y"}, {}, 17),
                          {{"step", scalar_i64(4)}, {"len", scalar_i64(6)}}),
             "frame_length 6 differs from the window's length 8");
  EXPECT_HAS(import_error(model("HannWindow", {{"n", kInt64, {}}}, {"y"}, {}, 17), {{"n", scalar_i64(0)}}), "size 0");
  EXPECT_HAS(import_error(model("ConvInteger", {{"x", kFloat, {1, 1, 2, 2}}, {"w", kUint8, {1, 1, 1, 1}}}, {"y"}, {}, 10)),
             "uint8 and int8 only");
  EXPECT_HAS(import_error(model("ConvInteger", {{"x", kUint8, {1, 2, 2, 2}}, {"w", kUint8, {3, 2, 1, 1}}, {"xz", kUint8, {}},
                                                {"wz", kUint8, {2}}},
                                {"y"}, {}, 10)),
             "zero point of 2 elements for weight [3,2,1,1] (one value, or one per output channel)");
  EXPECT_HAS(import_error(model("QLinearConv",
                                {{"x", kUint8, {1, 1, 3, 3}}, {"xs", kFloat, {}}, {"xz", kUint8, {}}, {"w", kUint8, {1, 1, 1, 1}},
                                 {"ws", kFloat, {}}, {"wz", kUint8, {}}, {"ys", kFloat, {2}}, {"yz", kUint8, {}}},
                                {"y"}, {}, 10)),
             "a scale of several values (input 6)");
  EXPECT_HAS(import_error(model("Det", {{"x", kFloat, {3, 2}}}, {"y"}, {}, 22)), "[..., M, M]");
  EXPECT_HAS(import_error(model("BitCast", {{"x", kFloat, {3}}}, {"y"}, {integer("to", kInt64)}, 26)), "differ in width");
  EXPECT_HAS(import_error(model("SwiGLU", {{"a", kFloat, {2, 4}}, {"b", kFloat, {2, 3}}}, {"y"}, {}, 26)), "one shape and type");
  EXPECT_HAS(import_error(model("TensorScatter", {{"c", kFloat, {2, 4, 3}}, {"u", kFloat, {2, 5, 3}}}, {"y"}, {}, 24)),
             "does not fit past_cache");
  EXPECT_HAS(import_error(model("TensorScatter", {{"c", kFloat, {2, 4, 3}}, {"u", kFloat, {2, 1, 3}}}, {"y"}, {str("mode", "ring")}, 24)),
             "mode 'ring'");
  const std::vector<In> roi{{"x", kFloat, {1, 1, 4, 4}}, {"r", kFloat, {2, 4}}, {"b", kInt64, {2}}};
  EXPECT_HAS(import_error(model("RoiAlign", roi, {"y"}, {}, 16)), "sampling_ratio 0");
  EXPECT_HAS(import_error(model("RoiAlign", roi, {"y"}, {integer("sampling_ratio", 2), str("mode", "median")}, 16)), "mode 'median'");
  EXPECT_HAS(import_error(model("DeformConv", {{"x", kFloat, {1, 2, 4, 4}}, {"w", kFloat, {1, 2, 2, 2}}, {"o", kFloat, {1, 4, 3, 3}}},
                                {"y"}, {}, 19)),
             "offset");
  EXPECT_HAS(import_error(model("CausalConvWithState", {{"x", kFloat, {1, 4, 6}}, {"w", kFloat, {4, 2, 3}}}, {"y", "s"}, {}, 27)),
             "[C, 1, k]");
  EXPECT_HAS(import_error(model("CausalConvWithState", {{"x", kFloat, {1, 4, 6}}, {"w", kFloat, {4, 1, 3}}}, {"y", "s"},
                                {str("activation", "relu")}, 27)),
             "activation 'relu'");
  const std::vector<In> qkv{{"q", kFloat, {1, 2, 8}}, {"k", kFloat, {1, 2, 8}}, {"v", kFloat, {1, 2, 8}}};
  EXPECT_HAS(import_error(model("LinearAttention", qkv, {"y"}, {integer("q_num_heads", 2), integer("kv_num_heads", 2)}, 27)),
             "needs the decay input");
  EXPECT_HAS(import_error(model("LinearAttention", qkv, {"y"}, {integer("q_num_heads", 3), integer("kv_num_heads", 2),
                                                                str("update_rule", "linear")}, 27)),
             "positive multiple");
}

}  // namespace
}  // namespace loom::graph_opt
