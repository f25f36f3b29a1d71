// `--input-shape` of import, compile and tune-model: a graph input's whole shape
// (x=2,3,4) or symbolic dims by name (batch=2,seq=3), an unknown name an error listing the
// graph's inputs and symbolic dims, and malformed values usage errors.
#include <gtest/gtest.h>

#include <fstream>

#include "common/cli_test_util.h"
#include "common/onnx_model_writer.h"

namespace loom {
namespace {

using test::CliTest;
using test::Result;

class OnnxInputShapeCli : public CliTest {
 protected:
  /// x [batch, seq, 4] -> Relu -> y, written to m.onnx.
  std::string model() {
    onnx_test::Model m;
    m.opset = 13;
    m.inputs = {onnx_test::value("x", {"batch", "seq", "4"})};
    m.nodes = {onnx_test::node("Relu", {"x"}, {"y"})};
    m.outputs = {onnx_test::value("y", {"batch", "seq", "4"})};
    std::ofstream(path("m.onnx"), std::ios::binary) << m.bytes();
    return path("m.onnx");
  }
};

TEST_F(OnnxInputShapeCli, SymbolicDimsByNameOrTheInputsWholeShape) {
  const std::string m = model();
  Result r = loom("import " + m + " --print --input-shape batch=2,seq=3");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "float32[2,3,4]");
  r = loom("import " + m + " --print --input-shape batch=5 --input-shape seq=1");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "float32[5,1,4]");
  r = loom("import " + m + " --print --input-shape x=1,7,4");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "float32[1,7,4]");
  r = loom("compile " + m + " -o " + path("m.so") + " --input-shape batch=2,seq=3");
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST_F(OnnxInputShapeCli, AnUnknownNameListsTheInputsAndSymbolicDims) {
  const std::string m = model();
  Result r = loom("import " + m + " --input-shape batch=1,height=48");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_HAS(r.err, "'height', which is neither a graph input nor a symbolic dim (graph inputs: x; symbolic dims: batch, seq)");
  r = loom("import " + m + " --input-shape batch=1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "dim 1 is dynamic ('seq')");
  EXPECT_HAS(r.err, "--input-shape seq=N");
}

TEST_F(OnnxInputShapeCli, MalformedValuesAreUsageErrors) {
  const std::string m = model();
  for (const char* bad : {"1,2", "=3", "batch=", "batch=1,", "batch=0", "batch=x"}) {
    SCOPED_TRACE(bad);
    Result r = loom("import " + m + " --input-shape '" + std::string(bad) + "'");
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_HAS(r.err, "--input-shape");
  }
  Result r = loom("import " + m + " --input-shape batch=1,batch=2");
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "--input-shape: 'batch' is given twice");
}

TEST_F(OnnxInputShapeCli, HelpShowsBothForms) {
  for (const char* cmd : {"import", "compile", "tune-model"}) {
    SCOPED_TRACE(cmd);
    Result r = loom(std::string(cmd) + " --help");
    EXPECT_EQ(r.rc, 0);
    EXPECT_HAS(r.out + r.err, "data=1,3,224,224");
    EXPECT_HAS(r.out + r.err, "batch=1,height=48");
  }
}

}  // namespace
}  // namespace loom
