// Attention as exporters write it in ONNX, imported and compiled: the chain becomes one
// attention kernel (graph_opt/passes/fuse_attention.cc) and computes what the imported graph's
// reference execution does. tf2onnx's Keras MultiHeadAttention (Einsum 'aecd,abcd->acbe' with
// the key first, the query scaled), an Einsum 'bhid,bhjd->bhij' attention, and PyTorch's
// MatMul form with a boolean-free additive mask.
#include <gtest/gtest.h>

#include <cmath>

#include "import_test_util.h"
#include "loom/graph_opt/compile.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using runtime::NDArray;

constexpr int64_t B = 2, S = 10, H = 3, D = 8;

/// Compiles `m`, expects `fused` attention kernels, and compares with the reference execution.
void check(const ModelPb& m, int fused) {
  graph_opt::Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  std::vector<NDArray> args;
  uint64_t seed = 3;
  for (int i : g.input_nodes()) {
    const graph_opt::TensorType& t = g.nodes[size_t(i)].outputs[0];
    args.push_back(NDArray::empty(t.shape, t.dtype));
    args.back().fill_random(seed++, -1.0, 1.0);
  }
  graph_opt::CompileReport report;
  graph_opt::compile(g, Target("llvm"), nullptr, {}, &report);
  int attention = 0;
  for (const graph_opt::CompiledKernel& k : report.kernels) attention += k.ops == "attention";
  EXPECT_EQ(attention, fused);
  const NDArray want = graph_opt::run_reference(g, args).at(0);
  std::vector<double> w(size_t(want.numel()));
  for (int64_t i = 0; i < want.numel(); ++i) w[size_t(i)] = want.get(i);
  expect_values(run_compiled(g, args).at(0), w, 1e-4, "compiled");
}

Pb scalar(const std::string& name, float v) { return floats_tensor(name, {}, {v}); }

TEST(AttentionChainsImport, KerasMultiHeadAttentionFromTf2onnx) {
  REQUIRE_FRONTEND();
  ModelPb m;
  m.opset = 13;
  for (const char* n : {"q", "k", "v"}) m.inputs.push_back(value(n, {B, S, H, D}));
  m.inputs.push_back(value("mask", {B, 1, 1, S}));
  m.inits = {scalar("scale", float(1 / std::sqrt(double(D))))};
  m.nodes = {node("Mul", {"q", "scale"}, {"q_scaled"}, "mul"),
             node("Einsum", {"k", "q_scaled"}, {"scores"}, "qk", {attr_str("equation", "aecd,abcd->acbe")}),
             node("Add", {"scores", "mask"}, {"masked"}, "add"),
             node("Softmax", {"masked"}, {"probs"}, "softmax", {attr_int("axis", -1)}),
             node("Einsum", {"probs", "v"}, {"y"}, "pv", {attr_str("equation", "acbe,aecd->abcd")})};
  m.outputs = {value("y", {B, S, H, D})};
  check(m, 1);
}

TEST(AttentionChainsImport, EinsumOverHeads) {
  REQUIRE_FRONTEND();
  ModelPb m;
  m.opset = 13;
  for (const char* n : {"q", "k", "v"}) m.inputs.push_back(value(n, {B, H, S, D}));
  m.inits = {scalar("sqrt_d", float(std::sqrt(double(D))))};
  m.nodes = {node("Einsum", {"q", "k"}, {"scores"}, "qk", {attr_str("equation", "bhid,bhjd->bhij")}),
             node("Div", {"scores", "sqrt_d"}, {"scaled"}, "div"),
             node("Softmax", {"scaled"}, {"probs"}, "softmax", {attr_int("axis", 3)}),
             node("Einsum", {"probs", "v"}, {"y"}, "pv", {attr_str("equation", "bhij,bhjd->bhid")})};
  m.outputs = {value("y", {B, H, S, D})};
  check(m, 1);
}

TEST(AttentionChainsImport, TorchMatMulWithKeyTransposedAndOldSoftmax) {
  REQUIRE_FRONTEND();
  // Opset 11: Softmax coerces to 2-D at axis 3.
  ModelPb m;
  m.opset = 11;
  for (const char* n : {"q", "k", "v"}) m.inputs.push_back(value(n, {B, H, S, D}));
  m.inputs.push_back(value("mask", {B, 1, S, S}));
  m.inits = {scalar("sqrt_d", float(std::sqrt(double(D))))};
  m.nodes = {node("Transpose", {"k"}, {"kt"}, "kt", {attr_ints("perm", {0, 1, 3, 2})}),
             node("MatMul", {"q", "kt"}, {"scores"}, "qk"),
             node("Div", {"scores", "sqrt_d"}, {"scaled"}, "div"),
             node("Add", {"scaled", "mask"}, {"masked"}, "add"),
             node("Softmax", {"masked"}, {"probs"}, "softmax", {attr_int("axis", 3)}),
             node("MatMul", {"probs", "v"}, {"y"}, "pv")};
  m.outputs = {value("y", {B, H, S, D})};
  check(m, 1);
}

}  // namespace
}  // namespace loom::test::onnx_writer
