// The ONNX frontend's C++ entry points: load_model's choice between ONNX and JSON, errors for
// missing and malformed files, and the operator list. Models come from the node tests the
// onnx_node_tests ctest writes into the build tree (skipped when they are not there).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/serialize.h"
#include "common/test_util.h"

namespace loom::graph_opt {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path d = fs::path(LOOM_BINARY_DIR) / "tests" / "onnx_api_test";
  fs::create_directories(d);
  return d / name;
}

fs::path node_case(const std::string& name) {
  return fs::path(LOOM_BINARY_DIR) / "onnx_node_tests" / name / "model.onnx";
}

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

TEST(OnnxApi, SupportsTheIssuesOperators) {
  REQUIRE_FRONTEND();
  std::vector<std::string> ops = onnx_supported_ops();
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Relu", "Clip", "Sigmoid",
                         "Tanh", "Erf", "Gelu", "Sqrt", "Pow", "BatchNormalization", "MaxPool", "AveragePool",
                         "GlobalAveragePool", "Softmax", "LayerNormalization", "ReduceMean", "Reshape", "Flatten",
                         "Transpose", "Concat", "Pad", "Squeeze", "Unsqueeze", "Gather", "Cast", "Shape", "Constant"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
}

TEST(OnnxApi, LoadModelReadsJsonAndOnnx) {
  GraphBuilder b("tiny");
  Value x = b.input("x", {{2, 3}, DataType::Float(32), ""});
  b.output(b.relu(x));
  fs::path json = scratch("tiny.json");
  save_graph(b.build(), json.string());
  EXPECT_EQ(load_model(json.string()).num_ops(), 1u);

  REQUIRE_FRONTEND();
  fs::path relu = node_case("test_relu");
  if (!fs::exists(relu)) GTEST_SKIP() << relu << " is missing (the onnx_node_tests ctest writes it)";
  Graph g = load_model(relu.string());
  ASSERT_EQ(g.num_ops(), 1u);
  EXPECT_EQ(g.nodes.back().op, "relu");
  // Recognized by content too, whatever its name.
  fs::path renamed = scratch("relu.model");
  fs::copy_file(relu, renamed, fs::copy_options::overwrite_existing);
  EXPECT_EQ(load_model(renamed.string()).nodes.back().op, "relu");
}

TEST(OnnxApi, MissingAndMalformedFilesAreErrors) {
  REQUIRE_FRONTEND();
  EXPECT_THROW(
      {
        try {
          import_onnx(scratch("nope.onnx").string());
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  EXPECT_THROW(import_onnx(scratch("").string()), Error);  // a directory
  fs::path junk = scratch("junk.onnx");
  std::ofstream(junk) << "\x08\x07 not really a model \xff\xff";
  EXPECT_THROW(import_onnx(junk.string()), Error);
  EXPECT_THROW(read_onnx_tensor(junk.string()), Error);
  std::string bytes = "\x3a\x02\x0a";  // a graph field whose length runs past the end
  EXPECT_THROW(import_onnx_bytes(bytes, "cut"), Error);
}

TEST(OnnxApi, ReadsTensorsOfTheTestLayout) {
  REQUIRE_FRONTEND();
  fs::path in = fs::path(LOOM_BINARY_DIR) / "onnx_node_tests" / "test_relu" / "test_data_set_0" / "input_0.pb";
  if (!fs::exists(in)) GTEST_SKIP() << in << " is missing (the onnx_node_tests ctest writes it)";
  runtime::NDArray a = read_onnx_tensor(in.string());
  EXPECT_EQ(a.dtype(), DataType::Float(32));
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{3, 4, 5}));
}

}  // namespace
}  // namespace loom::graph_opt
