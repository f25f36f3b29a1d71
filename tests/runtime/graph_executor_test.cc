// The graph executor (runtime/graph_executor.c) through GraphExecutor, with hand-written
// kernels: argument checks, arena binding and reuse, copies of outputs no kernel writes,
// concurrent runs, kernel errors, profiling, and the plan's validation.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_plan.h"

namespace loom::runtime {
namespace {

const DataType f32 = DataType::Float(32);
constexpr int64_t kN = 10;

float* data(DLTensor* t) { return static_cast<float*>(t->data); }

/// C = A + B over float32[kN].
int32_t k_add(DLTensor** a, int32_t n) {
  if (n != 3) return LOOM_ERR_ARGUMENT;
  for (int64_t i = 0; i < a[0]->shape[0]; ++i) data(a[2])[i] = data(a[0])[i] + data(a[1])[i];
  return 0;
}
/// B = 2 * A.
int32_t k_twice(DLTensor** a, int32_t n) {
  if (n != 2) return LOOM_ERR_ARGUMENT;
  for (int64_t i = 0; i < a[0]->shape[0]; ++i) data(a[1])[i] = 2 * data(a[0])[i];
  return 0;
}
int32_t k_fail(DLTensor**, int32_t) {
  loom_set_last_error("k_fail: something went wrong");
  return LOOM_ERR_RUNTIME;
}
/// Records the data pointers it was given.
std::atomic<void*> g_seen[3];
int32_t k_record(DLTensor** a, int32_t n) {
  for (int32_t i = 0; i < n && i < 3; ++i) g_seen[i] = a[i]->data;
  return k_add(a, n);
}

GraphTensor tensor(const std::string& name, GraphTensorKind kind, int64_t offset = 0) {
  GraphTensor t;
  t.name = name;
  t.kind = kind;
  t.dtype = f32;
  t.shape = {kN};
  t.arena_offset = offset;
  return t;
}

/// x (input), c (constant 1..kN) → t1 = x + c (arena 0) → t2 = 2 t1 (arena 64) → y = t2 + t1
/// (output 0) → t3 = 2 y (arena 0, t1's bytes: t1 is dead by then) → z = t3 + c (output 1);
/// outputs: y, z, x (copied), c (copied), y (copied).
GraphPlan chain_plan() {
  GraphPlan p;
  p.tensors = {tensor("x", GraphTensorKind::kInput),        tensor("c", GraphTensorKind::kConstant),
               tensor("t1", GraphTensorKind::kIntermediate, 0), tensor("t2", GraphTensorKind::kIntermediate, 64),
               tensor("y", GraphTensorKind::kOutput),       tensor("t3", GraphTensorKind::kIntermediate, 0),
               tensor("z", GraphTensorKind::kOutput)};
  p.tensors[1].value = NDArray::empty({kN}, f32);
  for (int64_t i = 0; i < kN; ++i) p.tensors[1].value.set(i, double(i + 1));
  p.kernels = {{"add_c", {0, 1, 2}, {false, false, true}, ""},
               {"twice", {2, 3}, {false, true}, ""},
               {"add_t", {3, 2, 4}, {false, false, true}, ""},
               {"twice_y", {4, 5}, {false, true}, ""},
               {"add_z", {5, 1, 6}, {false, false, true}, ""}};
  p.inputs = {0};
  p.outputs = {4, 6, 0, 1, 4};
  p.arena_bytes = 128;
  return p;
}

std::vector<loom_graph_kernel_fn> chain_entries() { return {k_add, k_twice, k_add, k_twice, k_add}; }

/// y = 3 (x + c), z = 6 (x + c) + c.
void expect_chain_results(const NDArray& x, const std::vector<NDArray>& outs) {
  for (int64_t i = 0; i < kN; ++i) {
    float xc = x.data<float>()[i] + float(i + 1);
    ASSERT_EQ(outs[0].data<float>()[i], 3 * xc) << i;
    ASSERT_EQ(outs[1].data<float>()[i], 6 * xc + float(i + 1)) << i;
    ASSERT_EQ(outs[2].data<float>()[i], x.data<float>()[i]) << i;
    ASSERT_EQ(outs[3].data<float>()[i], float(i + 1)) << i;
    ASSERT_EQ(outs[4].data<float>()[i], 3 * xc) << i;
  }
}

struct Call {
  NDArray x;
  std::vector<NDArray> outs;
  std::vector<DLTensor*> args;
  explicit Call(uint64_t seed, int n_outputs = 5) {
    x = NDArray::empty({kN}, f32);
    x.fill_random(seed);
    args.push_back(x.dltensor());
    for (int j = 0; j < n_outputs; ++j) {
      outs.push_back(NDArray::empty({kN}, f32));
      std::memset(outs.back().raw_data(), 0x5a, outs.back().nbytes());
      args.push_back(outs.back().dltensor());
    }
  }
  bool outputs_untouched() const {
    for (const auto& o : outs)
      for (int64_t i = 0; i < kN; ++i)
        if (reinterpret_cast<const uint32_t*>(o.raw_data())[i] != 0x5a5a5a5au) return false;
    return true;
  }
};

TEST(GraphExecutor, RunsTheChainWithCopiesAndReusesTheArena) {
  GraphExecutor e(chain_plan(), chain_entries());
  for (uint64_t seed : {1, 2, 3}) {
    Call c(seed);
    ASSERT_EQ(e.run(c.args.data(), int32_t(c.args.size())), 0) << loom_get_last_error();
    expect_chain_results(c.x, c.outs);
  }
  EXPECT_EQ(e.plan().unplanned_bytes(), 3 * kN * 4);
  EXPECT_FALSE(e.plan().tensors[1].value.defined()) << "packed into the constants blob";
  EXPECT_EQ(e.constants().blob.nbytes(), 64u);
}

TEST(GraphExecutor, ArenaIsAlignedAndIntermediatesLiveAtTheirOffsets) {
  GraphPlan p = chain_plan();
  std::vector<loom_graph_kernel_fn> entries = chain_entries();
  entries[2] = k_record;  // add_t reads t2 (offset 64) and t1 (offset 0)
  GraphExecutor e(std::move(p), entries);
  void* first = nullptr;
  for (uint64_t seed : {4, 5}) {
    Call c(seed);
    ASSERT_EQ(e.run(c.args.data(), int32_t(c.args.size())), 0) << loom_get_last_error();
    expect_chain_results(c.x, c.outs);
    auto* t2 = static_cast<char*>(g_seen[0].load());
    auto* t1 = static_cast<char*>(g_seen[1].load());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t1) % 64, 0u);
    EXPECT_EQ(t2 - t1, 64);
    EXPECT_EQ(g_seen[2].load(), c.outs[0].raw_data()) << "the output is written in the caller's buffer";
    if (!first) first = t1;
    EXPECT_EQ(t1, first) << "one arena, reused across runs";
  }
}

TEST(GraphExecutor, ConcurrentRunsOfOnePlan) {
  GraphExecutor e(chain_plan(), chain_entries());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        Call c(uint64_t(100 * t + i));
        if (e.run(c.args.data(), int32_t(c.args.size())) != 0) ++failures;
        for (int64_t k = 0; k < kN; ++k) {
          float xc = c.x.data<float>()[k] + float(k + 1);
          if (c.outs[1].data<float>()[k] != 6 * xc + float(k + 1)) {
            ++failures;
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(GraphExecutor, ProfileTimesEachKernel) {
  GraphExecutor e(chain_plan(), chain_entries());
  Call c(9);
  NDArray seconds = NDArray::empty({5}, DataType::Float(64));
  for (int i = 0; i < 5; ++i) seconds.set(i, -1);
  c.args.push_back(seconds.dltensor());
  ASSERT_EQ(e.profile(c.args.data(), int32_t(c.args.size())), 0) << loom_get_last_error();
  c.args.pop_back();
  expect_chain_results(c.x, c.outs);
  for (int i = 0; i < 5; ++i) EXPECT_GE(seconds.get(i), 0.0);

  NDArray wrong = NDArray::empty({4}, DataType::Float(64));
  c.args.push_back(wrong.dltensor());
  EXPECT_EQ(e.profile(c.args.data(), int32_t(c.args.size())), LOOM_ERR_ARGUMENT);
  EXPECT_NE(std::string(loom_get_last_error()).find("must be a float64[5] CPU tensor"), std::string::npos)
      << loom_get_last_error();
}

TEST(GraphExecutor, KernelErrorIsPrefixedWithItsName) {
  std::vector<loom_graph_kernel_fn> entries = chain_entries();
  entries[3] = k_fail;
  GraphExecutor e(chain_plan(), entries);
  Call c(1);
  EXPECT_EQ(e.run(c.args.data(), int32_t(c.args.size())), LOOM_ERR_RUNTIME);
  EXPECT_EQ(std::string(loom_get_last_error()), "run: kernel 3 of 5 ('twice_y') failed: k_fail: something went wrong");
}

/// Each argument check: the error names the input or output, and nothing is written.
class GraphExecutorChecks : public ::testing::Test {
 protected:
  GraphExecutorChecks() : e(chain_plan(), chain_entries()), c(7) {}
  void expect_error(const std::string& msg) {
    EXPECT_EQ(e.run(c.args.data(), int32_t(c.args.size())), LOOM_ERR_ARGUMENT);
    EXPECT_NE(std::string(loom_get_last_error()).find(msg), std::string::npos) << "got: " << loom_get_last_error();
    EXPECT_TRUE(c.outputs_untouched());
  }
  GraphExecutor e;
  Call c;
};

TEST_F(GraphExecutorChecks, Count) {
  c.args.pop_back();
  expect_error("run: expected 6 arguments (1 inputs, then 5 outputs), got 5");
}
TEST_F(GraphExecutorChecks, NullArray) {
  EXPECT_EQ(e.run(nullptr, 6), LOOM_ERR_ARGUMENT);
  EXPECT_EQ(std::string(loom_get_last_error()), "run: the argument array is null");
}
TEST_F(GraphExecutorChecks, NullTensor) {
  c.args[0] = nullptr;
  expect_error("run: input 0 ('x') is null");
}
TEST_F(GraphExecutorChecks, Device) {
  DLTensor t = *c.args[2];
  t.device.device_type = kDLCUDA;
  c.args[2] = &t;
  expect_error("run: output 1 ('z') is on device type 2: it must be on the CPU");
}
TEST_F(GraphExecutorChecks, Ndim) {
  DLTensor t = *c.args[0];
  t.ndim = 2;
  c.args[0] = &t;
  expect_error("run: input 0 ('x') has the wrong number of dimensions: must be 1, got 2");
}
TEST_F(GraphExecutorChecks, Dtype) {
  DLTensor t = *c.args[1];
  t.dtype.bits = 64;
  c.args[1] = &t;
  expect_error("run: output 0 ('y') has the wrong dtype: must be float32");
}
TEST_F(GraphExecutorChecks, Shape) {
  DLTensor t = *c.args[0];
  int64_t shape[1] = {kN + 1};
  t.shape = shape;
  c.args[0] = &t;
  expect_error("run: input 0 ('x') has the wrong shape: dimension 0 must be 10, got 11");
}
TEST_F(GraphExecutorChecks, NullShape) {
  DLTensor t = *c.args[0];
  t.shape = nullptr;
  c.args[0] = &t;
  expect_error("run: input 0 ('x') has a null shape array");
}
TEST_F(GraphExecutorChecks, Strides) {
  DLTensor t = *c.args[3];
  int64_t strides[1] = {2};
  t.strides = strides;
  c.args[3] = &t;
  expect_error("run: output 2 ('x') must be compact row-major: stride of dimension 0 must be 1");
  int64_t compact[1] = {1};
  t.strides = compact;
  EXPECT_EQ(e.run(c.args.data(), int32_t(c.args.size())), 0) << loom_get_last_error();
}
TEST_F(GraphExecutorChecks, ByteOffset) {
  DLTensor t = *c.args[0];
  t.byte_offset = 4;
  c.args[0] = &t;
  expect_error("run: input 0 ('x') must have byte_offset 0");
}
TEST_F(GraphExecutorChecks, NullData) {
  DLTensor t = *c.args[0];
  t.data = nullptr;
  c.args[0] = &t;
  expect_error("run: input 0 ('x') has no data");
}
TEST_F(GraphExecutorChecks, Alignment) {
  NDArray big = NDArray::empty({kN + 1}, f32);
  DLTensor t = *c.args[0];
  t.data = static_cast<char*>(big.raw_data()) + 2;
  c.args[0] = &t;
  expect_error("run: input 0 ('x') data pointer must be aligned to 4 bytes");
}
TEST_F(GraphExecutorChecks, OutputOverlapsInput) {
  c.args[5] = c.args[0];
  expect_error("run: output 4 ('y') overlaps input 0 ('x')");
}
TEST_F(GraphExecutorChecks, OutputsOverlap) {
  DLTensor t = *c.args[2];
  t.data = static_cast<float*>(c.args[1]->data);
  c.args[2] = &t;
  expect_error("run: output 1 ('z') overlaps output 0 ('y')");
}

// ------------------------------------------------------------------ the plan's validation

std::string validation_error(const GraphPlan& p) {
  try {
    p.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GraphPlanValidate, TheChainIsValid) { EXPECT_EQ(validation_error(chain_plan()), ""); }

TEST(GraphPlanValidate, LiveIntermediatesSharingBytes) {
  GraphPlan p = chain_plan();
  p.tensors[3].arena_offset = 32;  // t2 overlaps t1, and both are live at add_t
  EXPECT_NE(validation_error(p).find("intermediate 2 't1' (arena bytes [0, 40), kernels 0..2) and intermediate 3 't2' "
                                     "(bytes [32, 72), kernels 1..2) share memory while both are live"),
            std::string::npos)
      << validation_error(p);
}

TEST(GraphPlanValidate, KernelWritesItsInputsBytes) {
  GraphPlan p = chain_plan();
  p.tensors[3].arena_offset = 0;  // twice reads t1 and writes t2 at the same bytes
  EXPECT_NE(validation_error(p).find("share memory while both are live"), std::string::npos) << validation_error(p);
}

TEST(GraphPlanValidate, Errors) {
  struct Case {
    std::function<void(GraphPlan&)> damage;
    std::string msg;
  };
  std::vector<Case> cases = {
      {[](GraphPlan& p) { std::swap(p.kernels[0], p.kernels[1]); },
       "kernel 0 ('twice') reads intermediate 2 't1' (argument 0) before any kernel writes it"},
      {[](GraphPlan& p) { p.kernels[1].args[1] = 2; }, "intermediate 2 't1' is written by kernel 0 and again by kernel 1"},
      {[](GraphPlan& p) { p.kernels[0].args[2] = 1; }, "kernel 0 ('add_c') writes constant 1 'c' (argument 2), which is read-only"},
      {[](GraphPlan& p) { p.kernels[0].args[0] = 9; }, "kernel 0 ('add_c') argument 0 names tensor 9, but the plan has 7 tensors"},
      {[](GraphPlan& p) { p.kernels[0].writes.pop_back(); }, "kernel 0 ('add_c') has 3 arguments but 2 write flags"},
      {[](GraphPlan& p) { p.kernels[0].args[1] = 2; }, "kernel 0 ('add_c') both reads and writes intermediate 2 't1'"},
      {[](GraphPlan& p) { p.outputs.push_back(2); }, "output 5 is intermediate 2 't1', whose arena storage later kernels may reuse"},
      {[](GraphPlan& p) { p.outputs = {4}; }, "output 6 'z' is not among the plan's outputs"},
      {[](GraphPlan& p) { p.inputs = {}; }, "input 0 'x' is not among the plan's inputs"},
      {[](GraphPlan& p) { p.inputs = {0, 0}; }, "input 0 'x' is listed as input 0 and 1"},
      {[](GraphPlan& p) { p.inputs = {1}; }, "input 0 is constant 1 'c', not an input tensor"},
      {[](GraphPlan& p) { p.tensors[1].value = NDArray(); }, "constant 1 'c' has no value"},
      {[](GraphPlan& p) { p.tensors[1].value = NDArray::empty({kN + 1}, f32); },
       "the value of constant 1 'c' is float32[11] on device type 1, expected float32[10] on the CPU"},
      {[](GraphPlan& p) { p.tensors[5].arena_offset = 2; },
       "intermediate 5 't3' has arena offset 2, which is not a non-negative multiple of its element size 4"},
      {[](GraphPlan& p) { p.tensors[3].arena_offset = 100; }, "intermediate 3 't2' (bytes [100, 140)) lies outside the arena of 128 bytes"},
      {[](GraphPlan& p) { p.kernels.pop_back(); }, "no kernel writes output 6 'z'"},
      {[](GraphPlan& p) { p.outputs = {}; p.tensors[4].kind = p.tensors[6].kind = GraphTensorKind::kIntermediate; },
       "the plan has no outputs"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    GraphPlan p = chain_plan();
    cases[i].damage(p);
    std::string err = validation_error(p);
    EXPECT_NE(err.find(cases[i].msg), std::string::npos) << "case " << i << ": got '" << err << "'";
  }
}

}  // namespace
}  // namespace loom::runtime
