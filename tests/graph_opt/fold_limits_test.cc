// Constant folding within FoldLimits: what a tiny model asks for (a pad of a constant by
// 2^30, a chain of concats of a constant with itself, a matmul of big constants) is not
// computed at compile time; it stays an operator. Decided before evaluating, so each case
// takes milliseconds.
#include <gtest/gtest.h>

#include <chrono>

#include "common/cli_test_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/serialize.h"

namespace loom::graph_opt {
namespace {

const DataType f32 = DataType::Float(32);

runtime::NDArray filled(std::vector<int64_t> shape, double v) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), f32);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, v);
  return a;
}

size_t count_ops(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node& x : g.nodes) n += x.is_op() && x.op == op;
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// x [1] + reduce_sum(pad(c = [2], by `pad` ones on both sides)).
Graph pad_graph(int64_t pad) {
  GraphBuilder b("pad");
  Value x = b.input("x", {{1}, f32, ""});
  Value c = b.constant("c", filled({1}, 2.0));
  Value p = b.op("pad", {c}, {{"pads", std::vector<int64_t>{pad, pad}}, {"pad_value", 1.0}});
  Value s = b.op("reduce_sum", {p}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(1)}});
  b.output(b.add(x, s));
  return b.build();
}

TEST(FoldLimits, SmallConstantWorkStillFolds) {
  Graph f = eliminate_dead_code(fold_constants(pad_graph(3)));
  EXPECT_EQ(count_ops(f, "pad"), 0u);
  EXPECT_EQ(count_ops(f, "reduce_sum"), 0u);
  for (const Node& n : f.nodes)
    if (n.is_constant()) EXPECT_EQ(n.value.get(0), 8.0);  // 2 and six ones
}

TEST(FoldLimits, APadBy2To30StaysARunTimeOperator) {
  auto t0 = std::chrono::steady_clock::now();
  Graph f = fold_constants(pad_graph(int64_t(1) << 29));  // 2^30 + 1 floats: 4 GiB
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(count_ops(f, "pad"), 1u);
  EXPECT_EQ(count_ops(f, "reduce_sum"), 1u);  // its input is not a constant
}

TEST(FoldLimits, AConcatChainFoldsUpToTheLimitOnly) {
  // (Four more doublings would be refused by the builder: 2^31 elements do not fit int32 indices.)
  GraphBuilder b("cat");
  Value x = b.input("x", {{1}, f32, ""});
  Value c = b.constant("c", filled({8}, 1.0));  // 32 bytes
  std::vector<Value> chain{c};
  for (int k = 0; k < 26; ++k) chain.push_back(b.op("concat", {chain.back(), chain.back()}, {{"axis", int64_t(0)}}));
  Value s = b.op("reduce_sum", {chain.back()}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(1)}});
  b.output(b.add(x, s));
  Graph g = b.build();
  auto t0 = std::chrono::steady_clock::now();
  Graph f = fold_constants(g);
  EXPECT_LT(seconds_since(t0), 30.0);
  // Results of 32 bytes * 2^k fold up to k = 19 (16 MiB): with those before, 32 MiB, the
  // total a folding run may produce. The 7 after (up to 2 GiB) stay.
  EXPECT_EQ(count_ops(f, "concat"), 7u);
  int64_t largest = 0;
  for (const Node& n : f.nodes)
    if (n.is_constant()) largest = std::max<int64_t>(largest, int64_t(n.value.nbytes()));
  EXPECT_EQ(largest, int64_t(16) << 20);
}

TEST(FoldLimits, ABigResultFoldsWhenNoLargerThanItsInput) {
  // A transpose of a constant over the byte limit (a big weight's layout change) folds.
  FoldLimits small;
  small.max_result_bytes = 1024;
  GraphBuilder b("t");
  Value x = b.input("x", {{64, 32}, f32, ""});
  Value w = b.constant("w", filled({32, 64}, 2.0));  // 8 KiB
  Value t = b.op("transpose", {w}, {{"axes", std::vector<int64_t>{1, 0}}});
  Value grown = b.op("concat", {w, w}, {{"axis", int64_t(0)}});  // 16 KiB: grows, stays
  b.output(b.add(x, t));
  b.output(grown);
  Graph f = fold_constants_within(b.build(), small);
  EXPECT_EQ(count_ops(f, "transpose"), 0u);
  EXPECT_EQ(count_ops(f, "concat"), 1u);
}

TEST(FoldLimits, WorkAndTotalBytesAreBounded) {
  // A matmul of two 1024x1024 constants: 4 MiB out, but 2^30 multiply-adds.
  GraphBuilder b("mm");
  Value x = b.input("x", {{1024, 1024}, f32, ""});
  Value a = b.constant("a", filled({1024, 1024}, 1.0));
  Value m = b.op("matmul", {a, a});
  b.output(b.add(x, m));
  auto t0 = std::chrono::steady_clock::now();
  Graph f = fold_constants(b.build());
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(count_ops(f, "matmul"), 1u);

  // Many 1 MiB results: past max_total_bytes only small ones fold.
  FoldLimits limits;
  limits.max_total_bytes = (7 << 20) / 2;  // 3.5 MiB
  GraphBuilder b2("many");
  Value y = b2.input("y", {{1}, f32, ""});
  Value c = b2.constant("c", filled({1}, 1.0));
  for (int k = 0; k < 5; ++k) {
    Value p = b2.op("pad", {c}, {{"pads", std::vector<int64_t>{0, (1 << 18) - 1 + k}}});  // ~1 MiB each
    b2.output(p);
  }
  Value tiny = b2.op("pad", {c}, {{"pads", std::vector<int64_t>{1, 1}}});
  b2.output(b2.add(y, b2.op("reduce_sum", {tiny}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(1)}})));
  Graph f2 = fold_constants_within(b2.build(), limits);
  EXPECT_EQ(count_ops(f2, "pad"), 2u);  // three of the five big ones fold; the tiny one too
}

// Each of the pipeline's three folding runs may spend max_total_bytes, or as much as the
// constants it starts with: twenty 16 MiB pads of a 4-byte constant fold to 128 MiB at most.
TEST(FoldLimits, ThePipelineFoldsABoundedTotal) {
  GraphBuilder b("pads");
  Value x = b.input("x", {{1}, f32, ""});
  Value c = b.constant("c", filled({1}, 1.0));
  const int64_t p = ((int64_t(1) << 22) - 2) / 2;  // 2^22 - 1 floats: just under 16 MiB
  for (int k = 0; k < 20; ++k)
    b.output(b.add(x, b.op("pad", {c}, {{"pads", std::vector<int64_t>{p, p}}, {"pad_value", double(k)}})));
  auto t0 = std::chrono::steady_clock::now();
  Graph f = optimize(b.build());
  EXPECT_LT(seconds_since(t0), 60.0);
  int64_t folded = 0;
  for (const Node& n : f.nodes)
    if (n.is_constant()) folded += int64_t(n.value.nbytes());
  EXPECT_LE(folded, (int64_t(128) << 20) + 64);
  EXPECT_GT(folded, int64_t(16) << 20);  // small models still fold
  EXPECT_GE(count_ops(f, "pad"), 12u) << "the pads past the budget stay run-time operators";
}

TEST(FoldLimits, TheBudgetSaysWhy) {
  Graph g = pad_graph(int64_t(1) << 29);
  FoldBudget budget;
  const Node* pad = nullptr;
  for (const Node& n : g.nodes)
    if (n.is_op() && n.op == "pad") pad = &n;
  ASSERT_NE(pad, nullptr);
  EXPECT_FALSE(budget.admit(*pad, {g.type(pad->inputs[0])}, "pad"));
  EXPECT_NE(budget.reason().find("over the fold limit of 67108864 bytes"), std::string::npos) << budget.reason();
}

// `loom compile` of the pad model as a JSON file, with 2 GiB of address space: it compiles
// (the 4 GiB pad runs at run time) in bounded time and memory.
class FoldLimitsCompile : public test::CliTest {};

TEST_F(FoldLimitsCompile, AJsonPadModelCompilesInBoundedMemory) {
  save_graph(pad_graph(int64_t(1) << 29), path("pad.json"));
  const std::string cmd = "ulimit -v 2097152; timeout 120 " + test::kLoom + " compile " + path("pad.json") + " -o " +
                          path("pad.so") + " >" + path("out.txt") + " 2>&1";
  auto t0 = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  const std::string out = test::slurp(path("out.txt"));
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_LT(seconds_since(t0), 120.0);
  EXPECT_TRUE(std::filesystem::exists(path("pad.so"))) << out;
}

// A graph needing more memory at run time than this machine has is refused by the compiler,
// before anything is lowered: 200 outputs of 2^31-1 float64 each (3.2 TiB).
TEST(FoldLimits, AGraphLargerThanMemoryIsRefusedAtCompileTime) {
  GraphBuilder b("huge");
  Value x = b.input("x", {{1}, DataType::Float(64), ""});
  const int64_t p = (int64_t(1) << 30) - 1;
  for (int k = 0; k < 200; ++k)
    b.output(b.op("pad", {x}, {{"pads", std::vector<int64_t>{p, p}}, {"pad_value", double(k)}}));
  auto t0 = std::chrono::steady_clock::now();
  try {
    lower_graph(b.build(), Target("llvm"));
    FAIL() << "compiled";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("compile: graph 'huge' needs 3200.0 GiB to run"), std::string::npos) << m;
    EXPECT_NE(m.find("more than this machine's"), std::string::npos) << m;
    EXPECT_NE(m.find("is 16.0 GiB"), std::string::npos) << m;
  }
  EXPECT_LT(seconds_since(t0), 60.0);
}

}  // namespace
}  // namespace loom::graph_opt
