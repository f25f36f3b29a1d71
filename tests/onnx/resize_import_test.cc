// ONNX Resize and Upsample through the importer: the extents and coordinates of each opset's
// definition, the resample nodes emitted (one per resized axis, weights only where needed),
// the results in modes reference and compiled, and the errors for what loom cannot import.
#include <gtest/gtest.h>

#include "common/cli_test_util.h"
#include "import_test_util.h"
#include "loom/graph_opt/passes.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

NDArray iota(const std::vector<int64_t>& shape, DataType t = DataType::Float(32)) {
  NDArray a = NDArray::empty(shape, t);
  for (int64_t k = 0; k < a.numel(); ++k) a.set(k, double(k));
  return a;
}

/// Imports `m`, runs it on `x` in both modes and checks the output against `want`.
Graph run_both(const ModelPb& m, const NDArray& x, const std::vector<double>& want) {
  Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  expect_values(graph_opt::run_reference(g, {x}).at(0), want, 1e-6, "reference");
  expect_values(run_compiled(g, {x}).at(0), want, 1e-5, "compiled");
  return g;
}

/// Skips a test of an opset the importer still refuses (the oldest it reads was 13).
#define REQUIRE_OPSET(m)                                                               \
  if (std::string e = import_error((m).bytes()); e.find("is older than") != std::string::npos) \
  GTEST_SKIP() << e

/// Resize of x [shape] (opset 19 unless set) with the given inputs after X and attributes.
ModelPb resize_model(const std::vector<int64_t>& shape, const std::vector<std::string>& ins, std::vector<Pb> inits,
                     std::vector<Pb> attrs, int64_t type = kFloat) {
  ModelPb m;
  m.inputs = {value("x", shape, type)};
  m.inits = std::move(inits);
  std::vector<std::string> all = {"x"};
  all.insert(all.end(), ins.begin(), ins.end());
  m.nodes = {node("Resize", all, {"y"}, "resize1", std::move(attrs))};
  m.outputs = {Pb().s(1, "y")};
  return m;
}

TEST(ResizeImport, NearestUpsampleByTwoRepeatsEachPixelWithoutWeights) {
  REQUIRE_FRONTEND();
  ModelPb m = resize_model({1, 2, 2, 3}, {"", "scales"}, {floats_tensor("scales", {4}, {1, 1, 2, 2})},
                           {attr_str("mode", "nearest")});
  std::vector<double> want;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t x = 0; x < 6; ++x) want.push_back(double(c * 6 + (y / 2) * 3 + x / 2));
  Graph g = run_both(m, iota({1, 2, 2, 3}), want);
  EXPECT_EQ(count_ops(g, "resample"), 2);
  for (const auto& n : g.nodes)
    if (n.is_op() && n.op == "resample") EXPECT_EQ(n.inputs.size(), 2u) << "nearest reads no weights";
  // The two axes' resamples are one kernel.
  EXPECT_EQ(graph_opt::fuse_ops(g).groups.size(), 1u);
}

TEST(ResizeImport, LinearHalfPixelBySizes) {
  REQUIRE_FRONTEND();
  // [1, 3] -> 4 on the last axis: sources -0.25 (the edge), 0.25, 0.75, 1.25 (the edge).
  ModelPb m = resize_model({1, 1, 1, 2}, {"", "", "sizes"}, {ints_tensor("sizes", {4}, {1, 1, 1, 4})},
                           {attr_str("mode", "linear")});
  NDArray x = NDArray::from_vector(std::vector<double>{1, 3}, {1, 1, 1, 2}, DataType::Float(32));
  Graph g = run_both(m, x, {1, 1.5, 2.5, 3});
  EXPECT_EQ(count_ops(g, "resample"), 1) << "the axes of extent 1 are left alone";
}

TEST(ResizeImport, EmptyRoiAndScalesFromConstantNodes) {
  REQUIRE_FRONTEND();
  // As paddle2onnx and torch.onnx write it: roi and scales are Constant nodes of no elements.
  ModelPb m;
  m.inputs = {value("x", {1, 1, 2, 2})};
  m.inits = {ints_tensor("sizes", {4}, {1, 1, 4, 4})};
  m.nodes = {node("Constant", {}, {"roi"}, "c1", {attr_tensor("value", floats_tensor("r", {0}, {}))}),
             node("Constant", {}, {"scales"}, "c2", {attr_tensor("value", floats_tensor("s", {0}, {}))}),
             node("Resize", {"x", "roi", "scales", "sizes"}, {"y"}, "resize1",
                  {attr_str("mode", "nearest"), attr_str("coordinate_transformation_mode", "asymmetric"),
                   attr_str("nearest_mode", "floor")})};
  m.outputs = {Pb().s(1, "y")};
  std::vector<double> want;
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 4; ++x) want.push_back(double((y / 2) * 2 + x / 2));
  run_both(m, iota({1, 1, 2, 2}), want);
}

TEST(ResizeImport, AxesAndKeepAspectRatio) {
  REQUIRE_FRONTEND();
  // sizes [7, 7] for axes [2, 3] of a 2x4 input, not_larger: scale min(7/2, 7/4) = 1.75 ->
  // [4, 7] (round half up of 3.5 and 7).
  ModelPb m = resize_model({1, 1, 2, 4}, {"", "", "sizes"}, {ints_tensor("sizes", {2}, {7, 7})},
                           {attr_str("mode", "nearest"), attr_ints("axes", {2, 3}),
                            attr_str("keep_aspect_ratio_policy", "not_larger")});
  Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs.at(0)).shape, (std::vector<int64_t>{1, 1, 4, 7}));
}

TEST(ResizeImport, TfCropAndResizeExtrapolates) {
  REQUIRE_FRONTEND();
  // One axis, roi [0.5, 1.5] of a 3-element row: sources 1, 2, 3 (outside).
  ModelPb m = resize_model({1, 3}, {"roi", "", "sizes"},
                           {floats_tensor("roi", {2}, {0.5f, 1.5f}), ints_tensor("sizes", {1}, {3})},
                           {attr_str("mode", "linear"), attr_str("coordinate_transformation_mode", "tf_crop_and_resize"),
                            attr_ints("axes", {1}), attr_float("extrapolation_value", -7)});
  NDArray x = NDArray::from_vector(std::vector<double>{10, 20, 30}, {1, 3}, DataType::Float(32));
  run_both(m, x, {20, 30, -7});
}

TEST(ResizeImport, NearestOfIntegersAndCubicOfDoubles) {
  REQUIRE_FRONTEND();
  ModelPb m = resize_model({2, 5}, {"", "scales"}, {floats_tensor("scales", {2}, {1, 0.4f})},
                           {attr_str("mode", "nearest"), attr_str("coordinate_transformation_mode", "asymmetric")},
                           kInt32);
  // 5 * 0.4 = 2 outputs at sources 0 and 2.5 (rounds half down: 2).
  run_both(m, iota({2, 5}, DataType::Int(32)), {0, 2, 5, 7});
  // Cubic on float64 data, an identity-sized axis skipped.
  ModelPb c = resize_model({1, 4}, {"", "", "sizes"}, {ints_tensor("sizes", {2}, {1, 4})},
                           {attr_str("mode", "cubic")}, kDouble);
  Graph g = graph_opt::import_onnx_bytes(c.bytes(), "m.onnx");
  EXPECT_EQ(count_ops(g, "resample"), 0) << "same sizes under half_pixel: nothing to do";
}

TEST(ResizeImport, IntegersInterpolateInFloatThenRoundAndSaturate) {
  REQUIRE_FRONTEND();
  // uint8 [0, 255] -> 4, linear half_pixel: 0, 63.75, 191.25, 255 -> 0, 64, 191, 255.
  ModelPb m = resize_model({1, 2}, {"", "", "sizes"}, {ints_tensor("sizes", {2}, {1, 4})},
                           {attr_str("mode", "linear")}, kUInt8);
  run_both(m, NDArray::from_vector(std::vector<double>{0, 255}, {1, 2}, DataType::UInt(8)), {0, 64, 191, 255});
  // Cubic overshoots past 255 and below 0 at a step; 2-D, rounded once after both axes.
  ModelPb c = resize_model({1, 1, 2, 4}, {"", "scales"}, {floats_tensor("scales", {4}, {1, 1, 1.5f, 2})},
                           {attr_str("mode", "cubic")}, kUInt8);
  Graph g = graph_opt::import_onnx_bytes(c.bytes(), "m.onnx");
  EXPECT_EQ(count_ops(g, "round"), 1);
  NDArray x = NDArray::from_vector(std::vector<double>{0, 0, 255, 255, 0, 0, 255, 255}, {1, 1, 2, 4}, DataType::UInt(8));
  NDArray y = graph_opt::run_reference(g, {x}).at(0);
  double lo = 1e9, hi = -1e9;
  for (int64_t k = 0; k < y.numel(); ++k) lo = std::min(lo, y.get(k)), hi = std::max(hi, y.get(k));
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 255);
  // The same in float: the overshoot the integers saturate.
  ModelPb f = resize_model({1, 1, 2, 4}, {"", "scales"}, {floats_tensor("scales", {4}, {1, 1, 1.5f, 2})},
                           {attr_str("mode", "cubic")});
  NDArray yf = graph_opt::run_reference(graph_opt::import_onnx_bytes(f.bytes(), "m.onnx"),
                                        {NDArray::from_vector(std::vector<double>{0, 0, 255, 255, 0, 0, 255, 255},
                                                              {1, 1, 2, 4}, DataType::Float(32))})
                   .at(0);
  std::vector<double> want;
  for (int64_t k = 0; k < yf.numel(); ++k) want.push_back(std::clamp(std::nearbyint(yf.get(k)), 0.0, 255.0));
  expect_values(y, want, 0, "uint8 cubic");
  expect_values(run_compiled(g, {x}).at(0), want, 0, "uint8 cubic compiled");
}

TEST(ResizeImport, Upsample) {
  REQUIRE_FRONTEND();
  // Upsample-9 (scales input) nearest: every pixel repeated.
  ModelPb m;
  m.opset = 9;
  m.inputs = {value("x", {1, 1, 2, 2})};
  m.inits = {floats_tensor("scales", {4}, {1, 1, 2, 3})};
  m.nodes = {node("Upsample", {"x", "scales"}, {"y"}, "up", {attr_str("mode", "nearest")})};
  m.outputs = {Pb().s(1, "y")};
  REQUIRE_OPSET(m);
  std::vector<double> want;
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 6; ++x) want.push_back(double((y / 2) * 2 + x / 3));
  run_both(m, iota({1, 1, 2, 2}), want);
  // Upsample-7 (scales attribute) linear: asymmetric sources 0, 0.5, 1, 1.5 (the edge).
  ModelPb l;
  l.opset = 7;
  l.inputs = {value("x", {1, 2})};
  l.nodes = {node("Upsample", {"x"}, {"y"}, "up", {attr_str("mode", "linear"), attr_floats("scales", {1, 2})})};
  l.outputs = {Pb().s(1, "y")};
  run_both(l, NDArray::from_vector(std::vector<double>{1, 3}, {1, 2}, DataType::Float(32)), {1, 2, 3, 3});
}

TEST(ResizeImport, Resize10RoundsNearestUpWhenShrinking) {
  REQUIRE_FRONTEND();
  // Resize-10 as onnxruntime reads it: asymmetric sources x / 0.6 = 0, 1.67, 3.33 -> 0, 2, 4.
  ModelPb m;
  m.opset = 10;
  m.inputs = {value("x", {1, 5})};
  m.inits = {floats_tensor("scales", {2}, {1, 0.6f})};
  m.nodes = {node("Resize", {"x", "scales"}, {"y"}, "r", {attr_str("mode", "nearest")})};
  m.outputs = {Pb().s(1, "y")};
  REQUIRE_OPSET(m);
  run_both(m, iota({1, 5}), {0, 2, 4});
}

TEST(ResizeImport, TfHalfPixelForNnOfOpset11) {
  REQUIRE_FRONTEND();
  // tf2onnx's nearest at opset 11: sources (x + 0.5) / 2 = 0.25, 0.75, 1.25, 1.75, rounded
  // (round_prefer_floor) to 0, 1, 1, 2 (the edge: 1).
  ModelPb m = resize_model({1, 2}, {"roi", "scales"}, {floats_tensor("roi", {0}, {}), floats_tensor("scales", {2}, {1, 2})},
                           {attr_str("mode", "nearest"), attr_str("coordinate_transformation_mode", "tf_half_pixel_for_nn")});
  m.opset = 11;
  REQUIRE_OPSET(m);
  run_both(m, NDArray::from_vector(std::vector<double>{5, 9}, {1, 2}, DataType::Float(32)), {5, 9, 9, 9});
  m.opset = 13;
  EXPECT_HAS(import_error(m.bytes()), "'tf_half_pixel_for_nn' was removed in opset 13");
}

TEST(ResizeImport, Errors) {
  REQUIRE_FRONTEND();
  // Both scales and sizes.
  ModelPb both = resize_model({1, 4}, {"", "scales", "sizes"},
                              {floats_tensor("scales", {2}, {1, 2}), ints_tensor("sizes", {2}, {1, 8})}, {});
  EXPECT_HAS(import_error(both.bytes()), "node #0 'resize1' (Resize): exactly one of scales and sizes");
  // sizes not fitting the rank.
  ModelPb rank = resize_model({1, 4}, {"", "", "sizes"}, {ints_tensor("sizes", {3}, {1, 8, 2})}, {});
  EXPECT_HAS(import_error(rank.bytes()), "sizes has 3 values for 2 resized axes");
  // Scales computed at run time.
  ModelPb dyn;
  dyn.inputs = {value("x", {1, 4}), value("scales", {2})};
  dyn.nodes = {node("Resize", {"x", "", "scales"}, {"y"}, "resize1", {})};
  dyn.outputs = {Pb().s(1, "y")};
  try {
    graph_opt::import_onnx_bytes(dyn.bytes(), "m.onnx");
    ADD_FAILURE() << "run-time scales imported";
  } catch (const graph_opt::OnnxUnsupported& e) {
    EXPECT_HAS(std::string(e.what()), "scales (input 2 'scales') is computed at run time");
    EXPECT_EQ(e.constant_input, "scales");
  }
  // An unknown mode, antialias with nearest, tf_crop_and_resize without roi.
  EXPECT_HAS(import_error(resize_model({1, 4}, {"", "scales"}, {floats_tensor("scales", {2}, {1, 2})},
                                       {attr_str("mode", "bicubic")}).bytes()),
             "mode 'bicubic' is not one of nearest, linear, cubic");
  EXPECT_HAS(import_error(resize_model({1, 4}, {"", "scales"}, {floats_tensor("scales", {2}, {1, 0.5f})},
                                       {attr_int("antialias", 1)}).bytes()),
             "antialias applies to modes linear and cubic");
  EXPECT_HAS(import_error(resize_model({1, 4}, {"", "scales"}, {floats_tensor("scales", {2}, {1, 2})},
                                       {attr_str("coordinate_transformation_mode", "tf_crop_and_resize")}).bytes()),
             "roi has 0 values; tf_crop_and_resize over 2 axes needs 4");
}

}  // namespace
}  // namespace loom::test::onnx_writer
