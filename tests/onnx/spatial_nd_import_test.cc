// The ONNX converters of the windowed operators in 1-D, 2-D and 3-D (Conv, ConvTranspose, the
// pools and MaxPool's Indices) and of the normalizations (InstanceNormalization,
// GroupNormalization, LpNormalization, LRN, MeanVarianceNormalization, RMSNormalization):
// which loom operators they become, values against plain loops where the converter does
// the arithmetic (GroupNormalization's per-group scale, LRN's channel window), and the
// errors of malformed nodes. Models are written in protobuf's wire format (onnx.proto's
// field numbers).
#include <gtest/gtest.h>

#include <cmath>

#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "common/protobuf_writer.h"

namespace loom::graph_opt {
namespace {

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

using loom::test::Pb;

constexpr int64_t kFloat = 1;

Pb value(const std::string& name, const std::vector<int64_t>& dims) {
  Pb shape;
  for (int64_t d : dims) shape.m(1, Pb().i(1, d));
  Pb tensor_type;
  tensor_type.i(1, kFloat).m(2, shape);
  return Pb().s(1, name).m(2, Pb().m(1, tensor_type));
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

/// One node of `op` on float graph inputs `ins` (name, dims) with outputs `outs`.
std::string model(const std::string& op, const std::vector<std::pair<std::string, std::vector<int64_t>>>& ins,
                  const std::vector<std::string>& outs, const std::vector<Pb>& attrs, int64_t opset = 21) {
  Pb n;
  for (const auto& x : ins) n.s(1, x.first);
  for (const auto& x : outs) n.s(2, x);
  n.s(3, "n").s(4, op);
  for (const Pb& a : attrs) n.m(5, a);
  Pb g;
  g.m(1, n).s(2, "g");
  for (const auto& x : ins) g.m(11, value(x.first, x.second));
  for (const auto& x : outs) g.m(12, Pb().s(1, x));
  Pb mp;
  mp.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, opset));
  return mp.b;
}

Graph import(const std::string& bytes) { return import_onnx_bytes(bytes, "m.onnx"); }

std::string import_error(const std::string& bytes) {
  try {
    import(bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.is_op() && node.op == op;
  return n;
}

runtime::NDArray ramp(std::vector<int64_t> shape, double scale = 0.1) {
  runtime::NDArray a = runtime::NDArray::empty(shape, DataType::Float(32));
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::sin(double(i) * 1.3) * scale * double(1 + i % 7));
  return a;
}

#define EXPECT_HAS(s, part) EXPECT_NE(std::string(s).find(part), std::string::npos) << "'" << (s) << "' lacks '" << (part) << "'"

TEST(SpatialNdImport, ConvIn1dIsConv2dOnAUnitHeightAnd3dIsConv3d) {
  REQUIRE_FRONTEND();
  Graph g1 = import(model("Conv", {{"x", {1, 4, 13}}, {"w", {6, 2, 3}}}, {"y"},
                          {integer("group", 2), ints("pads", {1, 2}), ints("strides", {2}), ints("dilations", {2})}));
  EXPECT_EQ(count_ops(g1, "conv2d"), 1);
  EXPECT_EQ(g1.type(g1.outputs[0]).shape, (std::vector<int64_t>{1, 6, 6}));  // (13 + 3 - 5) / 2 + 1
  Graph g3 = import(model("Conv", {{"x", {1, 2, 5, 6, 7}}, {"w", {3, 2, 3, 3, 3}}}, {"y"}, {str("auto_pad", "SAME_UPPER")}));
  EXPECT_EQ(count_ops(g3, "conv3d"), 1);
  EXPECT_EQ(g3.type(g3.outputs[0]).shape, (std::vector<int64_t>{1, 3, 5, 6, 7}));
}

TEST(SpatialNdImport, ConvTransposeIn1dAnd3d) {
  REQUIRE_FRONTEND();
  Graph g1 = import(model("ConvTranspose", {{"x", {1, 2, 5}}, {"w", {2, 3, 3}}}, {"y"},
                          {ints("strides", {3}), ints("output_padding", {1})}));
  EXPECT_EQ(g1.type(g1.outputs[0]).shape, (std::vector<int64_t>{1, 3, 3 * 4 + 1 + 3}));
  Graph g3 = import(model("ConvTranspose", {{"x", {1, 4, 3, 4, 2}}, {"w", {4, 1, 2, 3, 2}}}, {"y"},
                          {integer("group", 2), ints("strides", {2, 1, 2}), ints("output_shape", {6, 6, 5})}));
  EXPECT_EQ(count_ops(g3, "conv3d"), 1);
  EXPECT_EQ(g3.type(g3.outputs[0]).shape, (std::vector<int64_t>{1, 2, 6, 6, 5}));
  // A 1-D transposed convolution by a [1,1,2] kernel of ones: each input lands on 2 outputs.
  runtime::NDArray x = ramp({1, 1, 4}), w = runtime::NDArray::empty({1, 1, 2}, DataType::Float(32));
  w.set(0, 1.0);
  w.set(1, 1.0);
  Graph g = import(model("ConvTranspose", {{"x", {1, 1, 4}}, {"w", {1, 1, 2}}}, {"y"}, {ints("strides", {2})}));
  runtime::NDArray y = run_reference(g, {x, w})[0];
  ASSERT_EQ(y.numel(), 8);
  for (int64_t i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(float(y.get(i)), float(x.get(i / 2)));
}

TEST(SpatialNdImport, PlainTwoDimPoolsKeepTheTwoDimOperators) {
  REQUIRE_FRONTEND();
  Graph plain = import(model("MaxPool", {{"x", {1, 2, 8, 8}}}, {"y"}, {ints("kernel_shape", {3, 3}), ints("pads", {1, 1, 1, 1})}));
  EXPECT_EQ(count_ops(plain, "max_pool2d"), 1);
  Graph dilated = import(model("MaxPool", {{"x", {1, 2, 8, 8}}}, {"y"},
                               {ints("kernel_shape", {2, 2}), ints("dilations", {2, 2})}));
  EXPECT_EQ(count_ops(dilated, "max_pool_nd"), 1);
  Graph ceil = import(model("AveragePool", {{"x", {1, 2, 7, 7}}}, {"y"},
                            {ints("kernel_shape", {2, 2}), ints("strides", {2, 2}), integer("ceil_mode", 1)}));
  EXPECT_EQ(count_ops(ceil, "avg_pool_nd"), 1);
  EXPECT_EQ(ceil.type(ceil.outputs[0]).shape, (std::vector<int64_t>{1, 2, 4, 4}));
  Graph lp = import(model("LpPool", {{"x", {1, 2, 9}}}, {"y"}, {ints("kernel_shape", {3}), integer("p", 3)}));
  EXPECT_EQ(count_ops(lp, "lp_pool_nd"), 1);
}

TEST(SpatialNdImport, MaxPoolIndicesOutput) {
  REQUIRE_FRONTEND();
  Graph g = import(model("MaxPool", {{"x", {1, 1, 2, 3}}}, {"y", "i"},
                         {ints("kernel_shape", {2, 2}), integer("storage_order", 1)}, 13));
  runtime::NDArray x = runtime::NDArray::empty({1, 1, 2, 3}, DataType::Float(32));
  const double v[] = {1, 9, 2, 3, 4, 10};  // window maxima 9 at (0,1) and 10 at (1,2)
  for (int i = 0; i < 6; ++i) x.set(i, v[i]);
  auto out = run_reference(g, {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].dtype(), DataType::Int(64));
  EXPECT_EQ(out[1].get(0), 0 + 1 * 2);  // column-major: h + w * H
  EXPECT_EQ(out[1].get(1), 1 + 2 * 2);
  EXPECT_HAS(import_error(model("MaxPool", {{"x", {1, 1, 4, 4}}}, {"y", "i"},
                                {ints("kernel_shape", {2, 2}), integer("storage_order", 2)})),
             "storage_order 2 is not 0 or 1");
}

TEST(SpatialNdImport, MaxPoolIndicesUnpoolBack) {
  REQUIRE_FRONTEND();
  // MaxPool's Indices drive MaxUnpool: each window's maximum returns to its place, the rest 0.
  Pb pool, unpool;
  pool.s(1, "x").s(2, "p").s(2, "i").s(3, "pool").s(4, "MaxPool").m(5, ints("kernel_shape", {2, 2})).m(5, ints("strides", {2, 2}));
  unpool.s(1, "p").s(1, "i").s(2, "y").s(3, "unpool").s(4, "MaxUnpool").m(5, ints("kernel_shape", {2, 2})).m(5, ints("strides", {2, 2}));
  Pb g;
  g.m(1, pool).m(1, unpool).s(2, "g").m(11, value("x", {1, 2, 4, 6})).m(12, Pb().s(1, "y"));
  Pb mp;
  mp.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, 13));
  Graph gr = import(mp.b);
  runtime::NDArray x = ramp({1, 2, 4, 6}, 1.0);
  runtime::NDArray y = run_reference(gr, {x})[0];
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{1, 2, 4, 6}));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 6; ++w) {
        double m = -1e300;
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t b = 0; b < 2; ++b) m = std::max(m, x.get(c * 24 + (h / 2 * 2 + a) * 6 + w / 2 * 2 + b));
        const double v = x.get(c * 24 + h * 6 + w);
        EXPECT_EQ(y.get(c * 24 + h * 6 + w), v == m ? v : 0.0) << c << " " << h << " " << w;
      }
}

TEST(SpatialNdImport, GroupNormalizationPerGroupAndPerChannelScale) {
  REQUIRE_FRONTEND();
  const std::vector<int64_t> xs{2, 4, 3};
  runtime::NDArray x = ramp(xs, 1.0);
  runtime::NDArray sg = runtime::NDArray::empty({2}, DataType::Float(32)), bg = sg.copy();
  sg.set(0, 2.0);
  sg.set(1, -1.0);
  bg.set(0, 0.5);
  bg.set(1, 3.0);
  // Version 18: scale and bias per group, the same as version 21's per channel, repeated.
  runtime::NDArray sc = runtime::NDArray::empty({4}, DataType::Float(32)), bc = sc.copy();
  for (int c = 0; c < 4; ++c) {
    sc.set(c, sg.get(c / 2));
    bc.set(c, bg.get(c / 2));
  }
  Graph g18 = import(model("GroupNormalization", {{"x", xs}, {"s", {2}}, {"b", {2}}}, {"y"},
                           {integer("num_groups", 2), real("epsilon", 1e-3f)}, 18));
  Graph g21 = import(model("GroupNormalization", {{"x", xs}, {"s", {4}}, {"b", {4}}}, {"y"},
                           {integer("num_groups", 2), real("epsilon", 1e-3f)}, 21));
  runtime::NDArray y18 = run_reference(g18, {x, sg, bg})[0], y21 = run_reference(g21, {x, sc, bc})[0];
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t grp = 0; grp < 2; ++grp) {
      double mean = 0, var = 0;
      const int64_t begin = n * 12 + grp * 6;
      for (int64_t i = 0; i < 6; ++i) mean += x.get(begin + i) / 6;
      for (int64_t i = 0; i < 6; ++i) var += std::pow(x.get(begin + i) - mean, 2) / 6;
      for (int64_t i = 0; i < 6; ++i) {
        const double want = (x.get(begin + i) - mean) / std::sqrt(var + 1e-3) * sg.get(grp) + bg.get(grp);
        EXPECT_NEAR(y18.get(begin + i), want, 1e-4);
        EXPECT_NEAR(y21.get(begin + i), want, 1e-4);
      }
    }
  EXPECT_HAS(import_error(model("GroupNormalization", {{"x", xs}, {"s", {3}}, {"b", {3}}}, {"y"}, {integer("num_groups", 3)})),
             "4 channels (input [2,4,3]) do not split into 3 groups");
  EXPECT_HAS(import_error(model("GroupNormalization", {{"x", xs}, {"s", {3}}, {"b", {4}}}, {"y"}, {integer("num_groups", 2)})),
             "scale [3] must be 1-D of the 4 channels or of the 2 groups");
}

TEST(SpatialNdImport, LrnSumsNeighbouringChannels) {
  REQUIRE_FRONTEND();
  const std::vector<int64_t> xs{1, 5, 2, 2};
  runtime::NDArray x = ramp(xs, 1.0);
  Graph g = import(model("LRN", {{"x", xs}}, {"y"},
                         {integer("size", 4), real("alpha", 0.5f), real("beta", 0.75f), real("bias", 2.0f)}));
  runtime::NDArray y = run_reference(g, {x})[0];
  for (int64_t c = 0; c < 5; ++c)
    for (int64_t p = 0; p < 4; ++p) {
      double sq = 0;
      for (int64_t k = std::max<int64_t>(0, c - 1); k <= std::min<int64_t>(4, c + 2); ++k) sq += std::pow(x.get(k * 4 + p), 2);
      const double want = x.get(c * 4 + p) / std::pow(2.0 + 0.5 / 4 * sq, 0.75);
      EXPECT_NEAR(y.get(c * 4 + p), want, 1e-5) << "channel " << c;
    }
}

TEST(SpatialNdImport, GlobalMaxAndLpPools) {
  REQUIRE_FRONTEND();
  const std::vector<int64_t> xs{2, 3, 4, 5};
  runtime::NDArray x = ramp(xs, 1.0);
  runtime::NDArray mx = run_reference(import(model("GlobalMaxPool", {{"x", xs}}, {"y"}, {})), {x})[0];
  runtime::NDArray l2 = run_reference(import(model("GlobalLpPool", {{"x", xs}}, {"y"}, {})), {x})[0];
  runtime::NDArray l3 = run_reference(import(model("GlobalLpPool", {{"x", xs}}, {"y"}, {integer("p", 3)})), {x})[0];
  ASSERT_EQ(mx.shape(), (std::vector<int64_t>{2, 3, 1, 1}));
  ASSERT_EQ(l3.shape(), (std::vector<int64_t>{2, 3, 1, 1}));
  for (int64_t nc = 0; nc < 6; ++nc) {
    double m = -1e300, s2 = 0, s3 = 0;
    for (int64_t i = 0; i < 20; ++i) {
      const double v = x.get(nc * 20 + i);
      m = std::max(m, v);
      s2 += v * v;
      s3 += std::pow(std::abs(v), 3);
    }
    EXPECT_FLOAT_EQ(float(mx.get(nc)), float(m));
    EXPECT_NEAR(l2.get(nc), std::sqrt(s2), 1e-4);
    EXPECT_NEAR(l3.get(nc), std::cbrt(s3), 1e-4);
  }
}

TEST(SpatialNdImport, Errors) {
  REQUIRE_FRONTEND();
  EXPECT_HAS(import_error(model("MaxPool", {{"x", {1, 2, 3, 4, 5, 6}}}, {"y"}, {ints("kernel_shape", {2, 2, 2, 2})})),
             "expected 3-D, 4-D or 5-D");
  EXPECT_HAS(import_error(model("AveragePool", {{"x", {1, 2, 8}}}, {"y"}, {ints("kernel_shape", {2, 2})})),
             "kernel_shape [2,2] does not fit the 1 spatial dims");
  EXPECT_HAS(import_error(model("MaxPool", {{"x", {1, 2, 8}}}, {"y"}, {ints("kernel_shape", {2}), ints("pads", {1})})),
             "pads [1] must have 2 values");
  EXPECT_HAS(import_error(model("MaxPool", {{"x", {1, 2, 3}}}, {"y"}, {ints("kernel_shape", {5})})), "window spans 5");
  EXPECT_HAS(import_error(model("Conv", {{"x", {1, 2, 8}}, {"w", {3, 2, 3, 3}}}, {"y"}, {})),
             "does not have the rank of the input");
  EXPECT_HAS(import_error(model("LpNormalization", {{"x", {2, 3}}}, {"y"}, {integer("p", 3)})), "p 3 is not 1 or 2");
  EXPECT_HAS(import_error(model("InstanceNormalization", {{"x", {2, 3}}, {"s", {3}}, {"b", {3}}}, {"y"}, {})),
             "has no spatial dims");
  EXPECT_HAS(import_error(model("RMSNormalization", {{"x", {2, 3, 4}}, {"s", {5}}}, {"y"}, {integer("axis", 1)}, 23)),
             "scale [5] does not broadcast to the normalized dims [3,4]");
  EXPECT_HAS(import_error(model("GlobalMaxPool", {{"x", {2, 3}}}, {"y"}, {})), "has no spatial dims");
  EXPECT_HAS(import_error(model("MaxUnpool", {{"x", {1, 2, 3, 3}}, {"i", {1, 2, 3, 3}}}, {"y"}, {ints("kernel_shape", {2, 2})})),
             "indices must be int64");
}

}  // namespace
}  // namespace loom::graph_opt
