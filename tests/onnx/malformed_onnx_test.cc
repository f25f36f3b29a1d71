// Malformed ONNX models (issue 31's probes): each is an error naming what is wrong, found
// before anything is allocated for it, in bounded time and memory. The models are written
// here field by field in protobuf's wire format (onnx.proto's field numbers), which also
// makes the malformed ones (an attribute given twice) easy to write.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/cli_test_util.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/passes.h"
#include "loom/runtime/error.h"
#include "common/protobuf_writer.h"

namespace loom::graph_opt {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

using loom::test::Pb;

enum : int64_t { kFloat = 1, kInt64 = 7 };

/// TensorProto: dims, data_type and raw bytes.
Pb tensor(const std::string& name, int64_t type, const std::vector<int64_t>& dims, const std::string& raw) {
  Pb t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, type).s(8, name).s(9, raw);
  return t;
}

std::string int64_bytes(const std::vector<int64_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
}

/// ValueInfoProto of a tensor (dims: its static shape; rank 0 for {}).
Pb value(const std::string& name, const std::vector<int64_t>& dims, int64_t type = kFloat) {
  Pb shape;
  for (int64_t d : dims) shape.m(1, Pb().i(1, d));
  Pb tensor_type;
  tensor_type.i(1, type).m(2, shape);
  return Pb().s(1, name).m(2, Pb().m(1, tensor_type));
}

Pb attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Pb a;
  a.s(1, name);
  for (int64_t x : v) a.i(8, x);
  return a.i(20, 7);  // INTS
}

Pb attr_int(const std::string& name, int64_t v) { return Pb().s(1, name).i(3, v).i(20, 2); }

Pb node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
        const std::string& name, const std::vector<Pb>& attrs = {}) {
  Pb n;
  for (const auto& x : ins) n.s(1, x);
  for (const auto& x : outs) n.s(2, x);
  n.s(3, name).s(4, op);
  for (const Pb& a : attrs) n.m(5, a);
  return n;
}

struct Model {
  std::vector<Pb> nodes, inits, inputs, outputs;
  int64_t opset = 17;
  std::vector<int64_t> more_opsets;  // further default-domain entries
  std::string bytes() const {
    Pb g;
    for (const Pb& n : nodes) g.m(1, n);
    g.s(2, "g");
    for (const Pb& t : inits) g.m(5, t);
    for (const Pb& v : inputs) g.m(11, v);
    for (const Pb& v : outputs) g.m(12, v);
    Pb model;
    model.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, opset));
    for (int64_t v : more_opsets) model.m(8, Pb().s(1, "ai.onnx").i(2, v));
    return model.b;
  }
};

/// The message of the loom::Error importing `m` throws ("" when it imports).
std::string import_error(const std::string& bytes, const std::string& base_dir = "") {
  try {
    import_onnx_bytes(bytes, "m.onnx", {}, base_dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// x [1,3,8,8] -> Conv(w [4,3,3,3]) -> y, with `attrs` on the Conv.
Model conv_model(const std::vector<Pb>& attrs, const std::vector<int64_t>& x_dims = {1, 3, 8, 8}) {
  Model m;
  m.inputs = {value("x", x_dims)};
  m.inits = {tensor("w", kFloat, {4, 3, 3, 3}, std::string(4 * 3 * 3 * 3 * 4, '\0'))};
  m.nodes = {node("Conv", {"x", "w"}, {"y"}, "conv1", attrs)};
  m.outputs = {Pb().s(1, "y")};  // no declared type
  return m;
}

TEST(MalformedOnnx, TheWellFormedConvImports) {
  REQUIRE_FRONTEND();
  EXPECT_EQ(import_error(conv_model({attr_ints("pads", {1, 1, 1, 1})}).bytes()), "");
}

TEST(MalformedOnnx, ModelFilesMustBeRegularFiles) {
  REQUIRE_FRONTEND();
  for (auto read :
       {+[](const std::string& p) { import_onnx(p); }, +[](const std::string& p) { read_onnx_tensor(p); }}) {
    try {
      read("/dev/zero");  // read to its end, it would never end
      ADD_FAILURE() << "/dev/zero was read";
    } catch (const Error& e) {
      EXPECT_HAS(std::string(e.what()), "onnx: /dev/zero is not a regular file");
    }
    try {
      read("/nonexistent/m.onnx");
      ADD_FAILURE() << "a missing file was read";
    } catch (const Error& e) {
      EXPECT_HAS(std::string(e.what()), "cannot open /nonexistent/m.onnx: no such file");
    }
  }
}

TEST(MalformedOnnx, AnAttributeGivenTwiceIsAnError) {
  REQUIRE_FRONTEND();
  std::string e = import_error(conv_model({attr_ints("pads", {1, 1, 1, 1}), attr_ints("pads", {0, 0, 0, 0})}).bytes());
  EXPECT_HAS(e, "node #0 'conv1' (Conv)");
  EXPECT_HAS(e, "attribute 'pads' is given more than once");
  // For any operator, also one whose converter does not read the attribute.
  Model m;
  m.inputs = {value("x", {2})};
  m.nodes = {node("Relu", {"x"}, {"y"}, "r", {attr_int("foo", 1), attr_int("foo", 2)})};
  m.outputs = {Pb().s(1, "y")};
  e = import_error(m.bytes());
  EXPECT_HAS(e, "node #0 'r' (Relu): attribute 'foo' is given more than once");
}

TEST(MalformedOnnx, AnOpsetNewerThanLoomKnowsIsRefused) {
  REQUIRE_FRONTEND();
  Model m = conv_model({});
  m.opset = 999;
  try {
    import_onnx_bytes(m.bytes(), "m.onnx");
    FAIL() << "opset 999 was imported";
  } catch (const OnnxUnsupported& e) {
    EXPECT_HAS(std::string(e.what()),
               fmt::format("opset 999 is newer than {}, the newest loom imports", kNewestOnnxOpset));
  }
  m.opset = kNewestOnnxOpset;
  EXPECT_EQ(import_error(m.bytes()), "");
  m.more_opsets = {kNewestOnnxOpset};  // the same twice is harmless
  EXPECT_EQ(import_error(m.bytes()), "");
  m.more_opsets = {13};
  EXPECT_HAS(import_error(m.bytes()),
             fmt::format("imports the default-domain opset twice (versions {} and 13)", kNewestOnnxOpset));
}

TEST(MalformedOnnx, InitializerDimsAreCheckedAgainstItsDataBeforeAllocating) {
  REQUIRE_FRONTEND();
  Model m = conv_model({});
  // [2^32] floats would be 16 GiB; the data holds 864 bytes.
  m.inits.push_back(tensor("big", kFloat, {int64_t(1) << 32}, std::string(864, '\0')));
  std::string e = import_error(m.bytes());
  EXPECT_HAS(e, "tensor 'big': 864 bytes of data for 4294967296 FLOAT elements (17179869184 bytes)");
  EXPECT_EQ(e.find("out of memory"), std::string::npos) << e;
  // The same with typed data (float_data, field 4).
  Pb typed;
  typed.i(1, int64_t(1) << 40).i(2, kFloat).s(8, "typed").s(4, std::string(12, '\0'));
  m.inits.back() = typed;
  e = import_error(m.bytes());
  EXPECT_HAS(e, "tensor 'typed': holds 3 values but its dims [1099511627776] say 1099511627776");
  // Dims whose product does not fit in 64 bits.
  m.inits.back() = tensor("huge", kFloat, {int64_t(1) << 62, 4}, "");
  e = import_error(m.bytes());
  EXPECT_HAS(e, "tensor 'huge': shape [4611686018427387904, 4] has more than 2^63-1 elements");
}

TEST(MalformedOnnx, InputDimsWhoseCountOverflowsAreNamed) {
  REQUIRE_FRONTEND();
  std::string e = import_error(conv_model({}, {1, 3, 16, int64_t(1) << 62}).bytes());
  EXPECT_HAS(e, "graph input 'x': shape [1, 3, 16, 4611686018427387904] has more than 2^63-1 elements");
  EXPECT_EQ(e.find("no elements"), std::string::npos) << e;
}

TEST(MalformedOnnx, ConvOfARankZeroInputSaysSo) {
  REQUIRE_FRONTEND();
  std::string e = import_error(conv_model({}, {}).bytes());
  EXPECT_HAS(e, "node #0 'conv1' (Conv): input X [] has rank 0; expected 3-D, 4-D or 5-D (N, C, spatial…)");
  e = import_error(conv_model({}, {3, 8}).bytes());
  EXPECT_HAS(e, "has rank 2; expected 3-D, 4-D or 5-D");
  // 3-D input (1-D convolution) needs a 3-D weight.
  EXPECT_HAS(import_error(conv_model({}, {1, 3, 8}).bytes()), "weight [4,3,3,3] does not have the rank of the input [1,3,8]");
}

TEST(MalformedOnnx, ConvWindowAttributesPast2To31AreErrors) {
  REQUIRE_FRONTEND();
  std::string e = import_error(conv_model({attr_ints("pads", {int64_t(1) << 62, 0, 0, 0})}).bytes());
  EXPECT_HAS(e, "must be below 2^31");
  e = import_error(conv_model({attr_ints("strides", {int64_t(1) << 40, 1})}).bytes());
  EXPECT_HAS(e, "must be below 2^31");
}

TEST(MalformedOnnx, ReshapeToAShapeWhoseCountWrapsIsAnError) {
  REQUIRE_FRONTEND();
  // [2^62+1, 4] has 2^64+4 elements: wrapped, it would look like the input's 4.
  Model m;
  m.inputs = {value("x", {4})};
  m.inits = {tensor("shape", kInt64, {2}, int64_bytes({(int64_t(1) << 62) + 1, 4}))};
  m.nodes = {node("Reshape", {"x", "shape"}, {"y"}, "r")};
  m.outputs = {Pb().s(1, "y")};
  EXPECT_HAS(import_error(m.bytes()), "has more than 2^63-1 elements");
}

// ---------------------------------------------------------------- external data

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom_malformed_onnx_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A model with initializer "w" [4] float in external data {location, offset?, length?}.
  std::string model(const std::string& location, std::optional<int64_t> offset, std::optional<int64_t> length) {
    Pb t;
    t.i(1, 4).i(2, kFloat).s(8, "w").i(14, 1);  // data_location EXTERNAL
    t.m(13, Pb().s(1, "location").s(2, location));
    if (offset) t.m(13, Pb().s(1, "offset").s(2, std::to_string(*offset)));
    if (length) t.m(13, Pb().s(1, "length").s(2, std::to_string(*length)));
    Model m;
    m.inputs = {value("x", {4})};
    m.inits = {t};
    m.nodes = {node("Add", {"x", "w"}, {"y"}, "add")};
    m.outputs = {Pb().s(1, "y")};
    return m.bytes();
  }
  std::string error(const std::string& bytes) { return import_error(bytes, (dir_ / "model").string()); }

  fs::path dir_;
};

TEST_F(ExternalData, TheWellFormedCaseImports) {
  REQUIRE_FRONTEND();
  std::ofstream(dir_ / "model" / "w.bin", std::ios::binary) << std::string(8, 'x') << std::string(16, '\0');
  EXPECT_EQ(error(model("w.bin", 8, 16)), "");
  EXPECT_EQ(error(model("w.bin", 8, std::nullopt)), "");
}

TEST_F(ExternalData, ALocationThatIsADirectoryIsRefusedBeforeAllocating) {
  REQUIRE_FRONTEND();
  fs::create_directories(dir_ / "model" / "sub");
  const int64_t three_gib = int64_t(3) << 30;
  auto t0 = std::chrono::steady_clock::now();
  std::string e = error(model("sub", std::nullopt, three_gib));
  EXPECT_HAS(e, "tensor 'w': external data location");
  EXPECT_HAS(e, "is not a regular file (a directory)");
  e = error(model("sub", std::nullopt, std::nullopt));
  EXPECT_HAS(e, "is not a regular file (a directory)");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST_F(ExternalData, SizesAreCheckedAgainstTheFileAndTheTensor) {
  REQUIRE_FRONTEND();
  std::ofstream(dir_ / "model" / "w.bin", std::ios::binary) << std::string(24, '\0');
  EXPECT_HAS(error(model("w.bin", 0, int64_t(3) << 30)), "external data");
  EXPECT_HAS(error(model("w.bin", 0, int64_t(3) << 30)), "offset 0 + length 3221225472 reach past it");
  EXPECT_HAS(error(model("w.bin", 100, std::nullopt)), "offset 100 is past the end");
  // 24 bytes for a tensor of 16.
  EXPECT_HAS(error(model("w.bin", std::nullopt, std::nullopt)), "external data of 24 bytes");
  EXPECT_HAS(error(model("w.bin", 0, 20)), "for a tensor of 16 bytes");
  EXPECT_HAS(error(model("missing.bin", 0, 16)), "does not exist");
  EXPECT_HAS(error(model("/etc/passwd", 0, 16)), "lies outside the model's folder");
  EXPECT_HAS(error(model("../w.bin", 0, 16)), "lies outside the model's folder");
}

TEST_F(ExternalData, ASymbolicLinkOutOfTheFolderIsRefused) {
  REQUIRE_FRONTEND();
  std::ofstream(dir_ / "outside.bin", std::ios::binary) << std::string(16, '\0');
  fs::create_symlink(dir_ / "outside.bin", dir_ / "model" / "link.bin");
  EXPECT_HAS(error(model("link.bin", 0, 16)), "outside the model's folder");
  fs::create_symlink("/dev/zero", dir_ / "model" / "zero.bin");
  EXPECT_HAS(error(model("zero.bin", 0, 16)), "is not a regular file (a device, socket or pipe)");
}

// ---------------------------------------------------------------- folding at import

/// A 1-element constant padded at import by `pad` on both sides of its one axis.
Model pad_model(int64_t pad) {
  Model m;
  m.inputs = {value("x", {1})};
  m.inits = {tensor("c", kFloat, {1}, std::string(4, '\0')), tensor("pads", kInt64, {2}, int64_bytes({pad, pad}))};
  m.nodes = {node("Pad", {"c", "pads"}, {"p"}, "pad"), node("ReduceMean", {"p"}, {"r"}, "mean"),
             node("Add", {"x", "r"}, {"y"}, "add")};
  m.outputs = {Pb().s(1, "y")};
  return m;
}

TEST(MalformedOnnx, AHugePadOfAConstantIsNotFoldedAtImport) {
  REQUIRE_FRONTEND();
  // Small: folded into a constant.
  Graph small = import_onnx_bytes(pad_model(4).bytes(), "m.onnx");
  for (const Node& n : small.nodes) EXPECT_NE(n.op, "pad") << "the small pad was not folded";
  // 2^29 on both sides: 4 GiB of float32; left to run time, imported at once.
  auto t0 = std::chrono::steady_clock::now();
  Graph big = import_onnx_bytes(pad_model(int64_t(1) << 29).bytes(), "m.onnx");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  bool has_pad = false;
  for (const Node& n : big.nodes) has_pad |= n.op == "pad";
  EXPECT_TRUE(has_pad) << to_text(big);
}

// Fuzz finding F5: a Pad of a 2-element int64 initializer by 2^30, read as a Reshape's shape.
TEST(MalformedOnnx, AValueTooBigToFoldIsNamedWhereAConstantIsNeeded) {
  REQUIRE_FRONTEND();
  Model m;
  m.inputs = {value("x", {2, 2})};
  m.inits = {tensor("s", kInt64, {2}, int64_bytes({4, 1})), tensor("pads", kInt64, {2}, int64_bytes({1 << 30, 0}))};
  m.nodes = {node("Pad", {"s", "pads"}, {"padded"}, "pad"), node("Reshape", {"x", "padded"}, {"y"}, "flat")};
  m.outputs = {Pb().s(1, "y")};
  auto t0 = std::chrono::steady_clock::now();
  std::string e = import_error(m.bytes());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_HAS(e, "node #1 'flat' (Reshape): shape (input 1 'padded') is computed at run time");
  EXPECT_HAS(e, "(it was not folded at import: its result of 8589934608 bytes is over the fold limit of 67108864 bytes)");
}

/// A constant of `n` floats concatenated with itself `times` times in a chain (2^times * n).
Model concat_chain(int times) {
  Model m;
  m.inputs = {value("x", {1})};
  m.inits = {tensor("c0", kFloat, {8}, std::string(32, '\0'))};
  for (int k = 0; k < times; ++k) {
    std::string in = "c" + std::to_string(k), out = "c" + std::to_string(k + 1);
    m.nodes.push_back(node("Concat", {in, in}, {out}, "cat" + std::to_string(k), {attr_int("axis", 0)}));
  }
  m.nodes.push_back(node("ReduceMean", {"c" + std::to_string(times)}, {"r"}, "mean", {attr_int("keepdims", 0)}));
  m.nodes.push_back(node("Add", {"x", "r"}, {"y"}, "add"));
  m.outputs = {Pb().s(1, "y")};
  return m;
}

// The models through `loom import` and `loom compile` with 2 GiB of address space: they
// finish in bounded time, exiting 0 or 1 with a message, never killed.
class FoldLimitsCli : public test::CliTest {
 protected:
  /// `loom ARGS` with RLIMIT_AS at 2 GiB (ulimit -v) and a 120 s timeout.
  test::Result run_limited(const std::string& args) {
    test::Result r;
    fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd =
        "ulimit -v 2097152; timeout 120 " + test::kLoom + " " + args + " >" + out.string() + " 2>" + err.string();
    int status = std::system(cmd.c_str());
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = test::slurp(out);
    r.err = test::slurp(err);
    return r;
  }
};

TEST_F(FoldLimitsCli, PadAndConcatChainsImportAndCompileInBoundedMemory) {
  REQUIRE_FRONTEND();
  struct Case {
    std::string name;
    std::string bytes;
  };
  // Pads by 2^29 (4 GiB, compiled for run time) and 2^30 (2^31+1 elements: refused), 30 doublings.
  for (const Case& c : {Case{"pad29.onnx", pad_model(int64_t(1) << 29).bytes()},
                        Case{"pad30.onnx", pad_model(int64_t(1) << 30).bytes()},
                        Case{"cat.onnx", concat_chain(30).bytes()}}) {
    std::ofstream(path(c.name), std::ios::binary) << c.bytes;
    EXPECT_LT(c.bytes.size(), 6000u);
    auto t0 = std::chrono::steady_clock::now();
    test::Result imp = run_limited("import " + path(c.name) + " -o " + path(c.name + ".json"));
    EXPECT_TRUE(imp.rc == 0 || imp.rc == 1) << c.name << " import: rc " << imp.rc << "\n" << imp.out << imp.err;
    if (imp.rc == 1) EXPECT_HAS(imp.err, "error");
    test::Result comp = run_limited("compile " + path(c.name) + " -o " + path(c.name + ".so"));
    EXPECT_TRUE(comp.rc == 0 || comp.rc == 1) << c.name << " compile: rc " << comp.rc << "\n" << comp.out << comp.err;
    if (comp.rc == 1) EXPECT_HAS(comp.err, "error");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 120.0) << c.name;
  }
}

}  // namespace
}  // namespace loom::graph_opt
