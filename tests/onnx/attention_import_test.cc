// ONNX's Attention and RotaryEmbedding: what the node suite does not probe. Malformed
// head counts and rotary dims are errors naming them; an imported attention compiles to one
// attention kernel and matches the reference execution. Models are
// written in protobuf's wire format (onnx.proto's field numbers), as malformed_onnx_test.cc does.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "common/protobuf_writer.h"

namespace loom::graph_opt {
namespace {

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

using loom::test::Pb;

/// ValueInfoProto of a float tensor of static shape `dims`.
Pb value(const std::string& name, const std::vector<int64_t>& dims) {
  Pb shape;
  for (int64_t d : dims) shape.m(1, Pb().i(1, d));
  return Pb().s(1, name).m(2, Pb().m(1, Pb().i(1, 1).m(2, shape)));
}

Pb attr_int(const std::string& name, int64_t v) { return Pb().s(1, name).i(3, v).i(20, 2); }

/// Graph inputs: name and static shape.
using Inputs = std::vector<std::pair<std::string, std::vector<int64_t>>>;

/// One node of `op` (opset 23) over float graph inputs `ins`, output "y".
std::string model(const std::string& op, const Inputs& ins, const std::vector<Pb>& attrs) {
  Pb n;
  for (const auto& [name, _] : ins) n.s(1, name);
  n.s(2, "y").s(3, "n").s(4, op);
  for (const Pb& a : attrs) n.m(5, a);
  Pb g;
  g.m(1, n).s(2, "g");
  for (const auto& [name, dims] : ins) g.m(11, value(name, dims));
  g.m(12, Pb().s(1, "y"));
  return Pb().i(1, 9).m(7, g).m(8, Pb().s(1, "").i(2, 23)).b;
}

std::string import_error(const std::string& bytes) {
  try {
    import_onnx_bytes(bytes, "m.onnx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AttentionImport, HeadCountsThatDoNotSplitAreErrors) {
  REQUIRE_FRONTEND();
  Inputs qkv = {{"q", {1, 4, 12}}, {"k", {1, 6, 8}}, {"v", {1, 6, 8}}};
  EXPECT_NE(import_error(model("Attention", qkv, {})).find("q_num_heads"), std::string::npos);
  std::string e = import_error(model("Attention", qkv, {attr_int("q_num_heads", 5), attr_int("kv_num_heads", 2)}));
  EXPECT_NE(e.find("does not split into 5 heads"), std::string::npos) << e;
  // 3 query heads of size 4 against 2 key heads of size 4: 3 is no multiple of 2.
  e = import_error(model("Attention", qkv, {attr_int("q_num_heads", 3), attr_int("kv_num_heads", 2)}));
  EXPECT_NE(e.find("do not fit together"), std::string::npos) << e;
  qkv[0].second = {1, 4, 16};  // 4 query heads of size 4, two per key head
  EXPECT_EQ(import_error(model("Attention", qkv, {attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2)})), "");
}

TEST(AttentionImport, RotaryDimsMustBeEvenAndWithinTheHead) {
  REQUIRE_FRONTEND();
  Inputs in = {{"x", {1, 2, 3, 8}}, {"cos", {1, 3, 2}}, {"sin", {1, 3, 2}}};
  std::string e = import_error(model("RotaryEmbedding", in, {attr_int("rotary_embedding_dim", 5)}));
  EXPECT_NE(e.find("rotary_embedding_dim 5"), std::string::npos) << e;
  e = import_error(model("RotaryEmbedding", in, {attr_int("rotary_embedding_dim", 10)}));
  EXPECT_NE(e.find("rotary_embedding_dim 10"), std::string::npos) << e;
  e = import_error(model("RotaryEmbedding", in, {}));  // the whole head: cos needs 4 per position
  EXPECT_NE(e.find("cos_cache"), std::string::npos) << e;
  EXPECT_EQ(import_error(model("RotaryEmbedding", in, {attr_int("rotary_embedding_dim", 4)})), "");
}

TEST(AttentionImport, A3DGroupedAttentionIsOneKernel) {
  REQUIRE_FRONTEND();
  Inputs qkv = {{"q", {2, 5, 16}}, {"k", {2, 7, 8}}, {"v", {2, 7, 8}}};
  Graph g = import_onnx_bytes(
      model("Attention", qkv, {attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2), attr_int("is_causal", 1)}),
      "m.onnx");
  std::vector<runtime::NDArray> inputs;
  for (int i : g.input_nodes()) {
    inputs.push_back(runtime::NDArray::empty(g.nodes[size_t(i)].outputs[0].shape, DataType::Float(32)));
    inputs.back().fill_random(uint64_t(i) + 1);
  }
  CompileReport report;
  runtime::Module m = compile(g, Target("llvm"), nullptr, {}, &report);
  std::vector<runtime::NDArray> outs{runtime::NDArray::empty({2, 5, 16}, DataType::Float(32))};
  std::vector<DLTensor*> args;
  for (const auto& a : inputs) args.push_back(a.dltensor());
  args.push_back(outs[0].dltensor());
  m.get_function("run").call(args);
  runtime::NDArray want = run_reference(g, inputs)[0];
  ASSERT_EQ(want.shape(), outs[0].shape());
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) worst = std::max(worst, std::abs(want.get(i) - outs[0].get(i)));
  EXPECT_LT(worst, 1e-5);
  // The attention operator reads the 3-D inputs as they are and writes the 3-D output: no
  // head split, no causal mask constant, one kernel scheduled by the attention template.
  ASSERT_EQ(report.kernels.size(), 1u);
  EXPECT_EQ(report.kernels[0].ops, "attention");
  EXPECT_EQ(report.kernels[0].task.op, "attention");
  EXPECT_EQ(report.kernels[0].task.attrs.at("causal"), "1");
}

}  // namespace
}  // namespace loom::graph_opt
