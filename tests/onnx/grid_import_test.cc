// ONNX GridSample and AffineGrid through the importer: opset 16's mode names, a grid of
// another float type, AffineGrid's base grid (against its definition) feeding GridSample, and
// the errors for shapes that do not fit.
#include <gtest/gtest.h>

#include "common/cli_test_util.h"
#include "import_test_util.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

TEST(GridImport, AffineGridOfTheIdentityThenGridSampleGivesTheInputBack) {
  REQUIRE_FRONTEND();
  // theta = identity: AffineGrid's points are the pixel centres (align_corners 0), which
  // bilinear GridSample (opset 16 calls it "bilinear") reads exactly.
  ModelPb m;
  m.opset = 20;
  m.inputs = {value("x", {2, 3, 5, 7})};
  m.inits = {floats_tensor("theta", {2, 2, 3}, {1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}),
             ints_tensor("size", {4}, {2, 3, 5, 7})};
  m.nodes = {node("AffineGrid", {"theta", "size"}, {"grid"}, "affine"),
             node("GridSample", {"x", "grid"}, {"y"}, "sample", {attr_str("mode", "linear")})};
  m.outputs = {Pb().s(1, "y")};
  Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(count_ops(g, "grid_sample"), 1);
  NDArray x = NDArray::empty({2, 3, 5, 7}, DataType::Float(32));
  x.fill_random(5, -1, 1);
  std::vector<double> want;
  for (int64_t k = 0; k < x.numel(); ++k) want.push_back(x.get(k));
  expect_values(graph_opt::run_reference(g, {x}).at(0), want, 1e-5, "reference");
  expect_values(run_compiled(g, {x}).at(0), want, 1e-5, "compiled");
}

TEST(GridImport, Opset16ModeNamesAndErrors) {
  REQUIRE_FRONTEND();
  auto model = [](const std::string& mode, std::vector<int64_t> grid_shape) {
    ModelPb m;
    m.opset = 16;
    m.inputs = {value("x", {1, 1, 3, 4}), value("grid", grid_shape)};
    m.nodes = {node("GridSample", {"x", "grid"}, {"y"}, "gs", {attr_str("mode", mode)})};
    m.outputs = {Pb().s(1, "y")};
    return m;
  };
  for (const char* mode : {"bilinear", "bicubic", "nearest"}) {
    Graph g = graph_opt::import_onnx_bytes(model(mode, {1, 2, 5, 2}).bytes(), "m.onnx");
    EXPECT_EQ(g.type(g.outputs.at(0)).shape, (std::vector<int64_t>{1, 1, 2, 5})) << mode;
  }
  EXPECT_HAS(import_error(model("bilinear", {1, 2, 5, 3}).bytes()),
             "node #0 'gs' (GridSample): grid [1,2,5,3] does not fit X [1,1,3,4]");
  EXPECT_HAS(import_error(model("area", {1, 2, 5, 2}).bytes()), "mode 'area' is not one of nearest, linear, cubic");
  ModelPb a;
  a.opset = 20;
  a.inputs = {value("theta", {2, 2, 3})};
  a.inits = {ints_tensor("size", {4}, {3, 1, 4, 4})};
  a.nodes = {node("AffineGrid", {"theta", "size"}, {"grid"}, "affine")};
  a.outputs = {Pb().s(1, "grid")};
  EXPECT_HAS(import_error(a.bytes()), "theta [2,2,3] does not fit size [3,1,4,4]");
}

}  // namespace
}  // namespace loom::test::onnx_writer
