// Integer convolutions in a graph: conv2d_int8 → requantize chains whose channel counts fit
// the 16-channel block run as conv2d_nchwc_int8 kernels of the int8 template (alter_layout
// packs the weights, the requantization is the fused epilogue), the rest on the pattern
// schedule; compiled outputs equal the reference's exactly, and task extraction lists the
// template's int8 workloads.
#include <gtest/gtest.h>

#include <cstring>

#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/task_extraction.h"

namespace loom::graph_opt {
namespace {

using runtime::Module;
using runtime::NDArray;

NDArray ints(std::vector<int64_t> shape, DataType t, uint64_t seed, int64_t lo, int64_t hi) {
  NDArray a = NDArray::empty(std::move(shape), t);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 3;
  for (int64_t i = 0; i < a.numel(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    a.set(i, double(lo + int64_t(x % uint64_t(hi - lo + 1))));
  }
  return a;
}

/// conv2d_int8 (+ bias) of `x` by a random [K,C/groups,R,S] weight, requantized to uint8 with
/// one multiplier per output channel and zero point 128.
Value qconv(GraphBuilder& b, Value x, int64_t C, int64_t K, int64_t R, int64_t stride, int64_t pad, int64_t groups,
            uint64_t seed, const std::string& name) {
  Value w = b.constant(name + ".w", ints({K, C / groups, R, R}, DataType::Int(8), seed, -128, 127));
  Value bias = b.constant(name + ".b", ints({K}, DataType::Int(32), seed + 1, -20000, 20000));
  Attrs a{{"strides", std::vector<int64_t>{stride, stride}},
          {"padding", std::vector<int64_t>{pad, pad}},
          {"groups", groups}};
  Value acc = b.op("conv2d_int8", {x, w, bias}, a, name);
  NDArray m = NDArray::empty({1, K, 1, 1}, DataType::Float(32));
  // About 255 / (the accumulator's spread): most outputs land inside [0, 255], some saturate.
  const double spread = 128.0 * 128.0 * double(C / groups * R * R) / 2;
  for (int64_t k = 0; k < K; ++k) m.set(k, 255.0 / spread * (1 + 0.1 * double(k % 5)));
  Value zp = b.constant(name + ".zp", ints({1, 1, 1, 1}, DataType::UInt(8), 0, 128, 128));
  return b.op("requantize", {acc, b.constant(name + ".m", m), zp}, {{"dtype", std::string("uint8")}}, name + ".q");
}

/// x uint8 [1,32,14,14] → 3x3 conv to 48 → 1x1 stride-2 conv to 32 → 3x3 depthwise; and
/// a first layer of 3 channels.
Graph network() {
  GraphBuilder b("qnet");
  Value x = b.input("x", {{1, 32, 14, 14}, DataType::UInt(8), ""});
  Value a = qconv(b, x, 32, 48, 3, 1, 1, 1, 10, "conv_a");
  Value c = qconv(b, a, 48, 32, 1, 2, 0, 1, 20, "conv_b");
  b.output(qconv(b, c, 32, 32, 3, 1, 1, 32, 30, "dw"));
  Value img = b.input("img", {{1, 3, 11, 11}, DataType::UInt(8), ""});
  b.output(qconv(b, img, 3, 16, 3, 2, 1, 1, 40, "first"));
  return b.build();
}

std::vector<NDArray> run(const Module& m, const Graph& g, const std::vector<NDArray>& inputs) {
  std::vector<NDArray> outs;
  std::vector<DLTensor*> args;
  for (const NDArray& a : inputs) args.push_back(a.dltensor());
  for (ValueRef v : g.outputs) {
    outs.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
    std::memset(outs.back().raw_data(), 0x5a, outs.back().nbytes());
    args.push_back(outs.back().dltensor());
  }
  m.get_function("run").call(args);
  return outs;
}

TEST(QnnCompile, TemplateKernelsMatchTheReferenceExactly) {
  Graph g = network();
  std::vector<NDArray> inputs{ints({1, 32, 14, 14}, DataType::UInt(8), 1, 0, 255),
                              ints({1, 3, 11, 11}, DataType::UInt(8), 2, 0, 255)};
  CompileReport report;
  Module m = compile(g, Target("llvm"), nullptr, {}, &report);
  int templated = 0;
  for (const CompiledKernel& k : report.kernels) {
    if (k.task.op != "conv2d_nchwc_int8") {
      EXPECT_EQ(k.ops.find("conv2d_nchwc_int8"), std::string::npos) << k.ops << ": " << k.schedule;
      continue;
    }
    ++templated;
    EXPECT_EQ(k.task.dtype, "int8");
    EXPECT_NE(k.ops.find("requantize"), std::string::npos) << k.ops << ": the requantization is the epilogue";
  }
  EXPECT_EQ(templated, 2) << "conv_a and conv_b; the depthwise and 3-channel convs keep the pattern schedule";
  std::vector<NDArray> got = run(m, g, inputs), want = run_reference(g, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].dtype(), DataType::UInt(8));
    int64_t bad = 0, saturated = 0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      saturated += want[o].get(i) == 0 || want[o].get(i) == 255;
      if (got[o].get(i) != want[o].get(i) && bad++ < 5)
        ADD_FAILURE() << "output " << o << " element " << i << ": " << got[o].get(i) << ", expected " << want[o].get(i);
    }
    EXPECT_LT(saturated, want[o].numel() / 2) << "output " << o << " is mostly saturated: a weak test";
  }
}

TEST(QnnCompile, TaskExtractionListsTheInt8ConvTasks) {
  TaskExtraction x = extract_tasks(network(), Target("llvm"));
  std::vector<std::string> keys;
  for (const ExtractedTask& t : x.tasks) keys.push_back(t.task.key());
  for (const records::Workload& w :
       {records::Workload{"conv2d_nchwc_int8", {1, 32, 14, 14, 48, 3, 3}, "int8", {{"stride", "1"}, {"pad", "1"}}},
        records::Workload{"conv2d_nchwc_int8", {1, 48, 14, 14, 32, 1, 1}, "int8", {{"stride", "2"}, {"pad", "0"}}}})
    EXPECT_NE(std::find(keys.begin(), keys.end(), w.key()), keys.end())
        << w.key() << " not among " << fmt::format("{}", fmt::join(keys, " "));
}

}  // namespace
}  // namespace loom::graph_opt
