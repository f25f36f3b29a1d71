// `loom compile` and `loom run` on networks, as a user runs them: a model file compiled into
// a library; inputs from .npy files (or random), latency, outputs printed or written to .npy,
// the per-kernel profile; clear errors for bad files, options and shapes.
#include <filesystem>

#include "common/cli_test_util.h"
#include "common/test_util.h"
#include "loom/codegen/graph.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/reference.h"
#include "loom/graph_opt/serialize.h"
#include "loom/runtime/npy.h"

namespace loom {
namespace {

using runtime::GraphPlan;
using runtime::GraphTensor;
using runtime::GraphTensorKind;
using runtime::NDArray;
using te::Tensor;
using te::Var;
using test::CliTest;
using test::Result;

const DataType f32 = DataType::Float(32);
constexpr int64_t N = 3, K = 9, M = 5;

GraphTensor tensor(const std::string& name, GraphTensorKind kind, std::vector<int64_t> shape) {
  GraphTensor t;
  t.name = name;
  t.kind = kind;
  t.shape = std::move(shape);
  return t;
}

/// y = relu(x·W + b) in two kernels through the arena, with W and b constants.
struct Dense {
  NDArray W = NDArray::empty({K, M}, f32), b = NDArray::empty({M}, f32);
  Dense() {
    W.fill_random(5);
    b.fill_random(6);
  }
  Tensor bias_relu(const Tensor& Y, const Tensor& B) {
    return te::compute({N, M}, [&](Var i, Var j) { return te::max(Y(i, j) + B(j), te::make_const(f32, 0)); }, "R");
  }
  void export_to(const std::string& path) {
    Tensor X = te::placeholder({N, K}, f32, "X"), Wp = te::placeholder({K, M}, f32, "W");
    Tensor Y = te::ops::matmul(X, Wp, false, false, "Y");
    Tensor Yp = te::placeholder({N, M}, f32, "Y"), B = te::placeholder({M}, f32, "B");
    Tensor R = bias_relu(Yp, B);
    Schedule s1 = create_schedule({Y}), s2 = create_schedule({R});
    GraphPlan p;
    p.tensors = {tensor("x", GraphTensorKind::kInput, {N, K}), tensor("W", GraphTensorKind::kConstant, {K, M}),
                 tensor("b", GraphTensorKind::kConstant, {M}), tensor("y", GraphTensorKind::kIntermediate, {N, M}),
                 tensor("relu", GraphTensorKind::kOutput, {N, M})};
    p.tensors[1].value = W;
    p.tensors[2].value = b;
    p.kernels = {{"fused_dense", {0, 1, 3}, {}, "matmul default"}, {"fused_bias_relu", {3, 2, 4}, {}, "injective"}};
    p.inputs = {0};
    p.outputs = {4};
    p.arena_bytes = N * M * 4;
    codegen::build_graph(p, {lowering::lower(s1, {X, Wp, Y}, "fused_dense"), lowering::lower(s2, {Yp, B, R}, "fused_bias_relu")},
                         Target("llvm"))
        .export_library(path);
  }
  NDArray reference(const NDArray& x) {
    Tensor X = te::placeholder({N, K}, f32, "X"), Wp = te::placeholder({K, M}, f32, "W");
    Tensor B = te::placeholder({M}, f32, "B");
    return te::evaluate({bias_relu(te::ops::matmul(X, Wp, false, false, "Y"), B)}, {{X, x}, {Wp, W}, {B, b}})[0];
  }
};

TEST_F(CliTest, RunReadsNpyInputsAndWritesOutputs) {
  Dense d;
  d.export_to(path("model.so"));
  NDArray x = NDArray::empty({N, K}, f32);
  x.fill_random(7);
  runtime::save_npy(path("x.npy"), x);
  Result r = loom("run " + path("model.so") + " --input " + path("x.npy") + " --output " + path("y.npy") +
                  " --repeat 3 --threads 2 --profile");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_HAS(r.out, "a network of 2 kernels; 1 input, 1 output; arena 60 B, constants 256 B");
  EXPECT_HAS(r.out, "input 0 'x': float32[3, 9] from " + path("x.npy"));
  EXPECT_HAS(r.out, "latency: median ");
  EXPECT_HAS(r.out, "over 3 runs after 3 warm-up runs (2 threads)");
  EXPECT_HAS(r.out, "per kernel (median of 3 profiled runs");
  EXPECT_HAS(r.out, "fused_dense");
  EXPECT_HAS(r.out, "matmul default");
  EXPECT_HAS(r.out, "fused_bias_relu");
  EXPECT_HAS(r.out, "output 0 'relu': float32[3, 5] written to " + path("y.npy"));
  NDArray y = runtime::load_npy(path("y.npy"));
  EXPECT_EQ(test::compare_arrays(y, d.reference(x), test::tolerance_for(f32), "relu"), "");
}

TEST_F(CliTest, RunWithRandomInputsPrintsTheOutputs) {
  Dense d;
  d.export_to(path("model.so"));
  Result r = loom("run " + path("model.so") + " --repeat 1 --warmup 0 --seed 4");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_HAS(r.out, "input 0 'x': float32[3, 9], uniform random in [-1, 1) (seed 4)");
  EXPECT_HAS(r.out, "over 1 run after 0 warm-up runs");
  EXPECT_HAS(r.out, "output 0 'relu': float32[3, 5]: min ");
  EXPECT_HAS(r.out, "argmax");
}

TEST_F(CliTest, RunErrors) {
  Dense d;
  d.export_to(path("model.so"));
  NDArray wrong = NDArray::empty({N + 1, K}, f32);
  wrong.fill_random(1);
  runtime::save_npy(path("wrong.npy"), wrong);
  std::ofstream(path("text.npy")) << "not numpy";
  std::ofstream(path("text.so")) << "not a library";
  {  // a library of one operator, not a network
    Tensor A = te::placeholder({4}, f32, "A");
    Tensor B = te::ops::relu(A, "B");
    build(create_schedule({B}), {A, B}, Target("llvm"), "relu").export_library(path("op.so"));
  }
  const std::string model = path("model.so");
  struct Case {
    std::string args;
    int rc;
    std::string msg;
  };
  std::vector<Case> cases = {
      {"run", 2, "expected one MODEL.so"},
      {"run " + path("missing.so"), 2, "cannot read '" + path("missing.so") + "' (no such file)"},
      {"run " + model + " --input " + path("missing.npy"), 2, "--input: cannot read"},
      {"run " + model + " --input " + path("wrong.npy"), 1,
       "--input " + path("wrong.npy") + ": holds float32[4, 9], but input 0 ('x') is float32[3, 9]"},
      {"run " + model + " --input " + path("text.npy"), 1, "not a .npy file"},
      {"run " + model + " --input " + path("wrong.npy") + " --input " + path("wrong.npy"), 2,
       "--input: the network takes 1 input (x: float32[3, 9]), 2 files are given"},
      {"run " + model + " --output a.npy --output b.npy", 2, "--output: the network has 1 output, 2 files are given"},
      {"run " + model + " --repeat 0", 2, "--repeat"},
      {"run " + model + " --threads 0", 2, "--threads"},
      {"run " + path("text.so"), 1, "cannot open"},
      {"run " + path("op.so"), 1, "is not a compiled network"},
      {"run " + model + " --output " + path("no/such/dir/y.npy"), 1, "save_npy: cannot open"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    Result r = loom(c.args);
    EXPECT_EQ(r.rc, c.rc) << r.out << r.err;
    EXPECT_HAS(r.err, c.msg);
  }
}

// ------------------------------------------------------------------ loom compile

NDArray random_array(std::vector<int64_t> shape, uint64_t seed, double lo = -1, double hi = 1) {
  NDArray a = NDArray::empty(std::move(shape), f32);
  a.fill_random(seed, lo, hi);
  return a;
}

/// conv 3x3 (16 → 16 channels) + batch norm + relu, a residual add, global pool, flatten, dense.
graph_opt::Graph small_net() {
  using namespace graph_opt;
  GraphBuilder b("small_net");
  Value x = b.input("image", {{1, 16, 12, 12}, f32, "NCHW"});
  Conv2dAttrs ca;
  ca.padding = {1, 1};
  Value c = b.conv2d(x, b.constant("conv.weight", random_array({16, 16, 3, 3}, 1, -0.2, 0.2)), ca, "conv");
  Value bn = b.batch_norm(c, b.constant("bn.gamma", random_array({16}, 2, 0.5, 1.5)),
                          b.constant("bn.beta", random_array({16}, 3)), b.constant("bn.mean", random_array({16}, 4)),
                          b.constant("bn.var", random_array({16}, 5, 0.5, 1.5)), 1e-5, "bn");
  Value r = b.relu(b.add(b.relu(bn, "relu"), x, "add"), "relu2");
  Value p = b.flatten(b.global_avg_pool2d(r, "pool"), "flatten");
  b.output(b.dense(p, b.constant("fc.weight", random_array({10, 16}, 6)), b.constant("fc.bias", random_array({10}, 7)),
                   "fc"));
  return b.build();
}

TEST_F(CliTest, CompileThenRunMatchesTheReference) {
  graph_opt::Graph g = small_net();
  graph_opt::save_graph(g, path("net.json"));
  Result c = loom("compile " + path("net.json") + " -o " + path("net.so"));
  ASSERT_EQ(c.rc, 0) << c.out << c.err;
  EXPECT_HAS(c.out, "graph 'small_net', 8 operators, 1 input, 1 output");
  EXPECT_HAS(c.out, "4 kernels (level 3; 4 distinct functions), in execution order:");
  EXPECT_HAS(c.out, "conv2d_nchwc+relu+add+relu");  // the batch norm folded; relu, residual add, relu fused
  EXPECT_HAS(c.out, "memory: planned ");
  EXPECT_HAS(c.out, "wrote " + path("net.so"));
  EXPECT_HAS(c.err, "warning: no tuning record for conv2d_nchwc(");
  EXPECT_TRUE(std::filesystem::exists(path("net.h")));

  NDArray x = random_array({1, 16, 12, 12}, 8);
  runtime::save_npy(path("x.npy"), x);
  Result r = loom("run " + path("net.so") + " --input " + path("x.npy") + " --output " + path("y.npy") + " --repeat 2");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  NDArray want = graph_opt::run_reference(g, {x})[0];
  EXPECT_EQ(test::compare_arrays(runtime::load_npy(path("y.npy")), want, {1e-4, 1e-4}, "fc"), "");

  Result o0 = loom("compile " + path("net.json") + " -o " + path("net0.so") + " --opt-level 0");
  ASSERT_EQ(o0.rc, 0) << o0.err;
  // The two relus share one function; the flatten is a view of the pool's result (no kernel).
  EXPECT_HAS(o0.out, "7 kernels (level 0; 6 distinct functions)");
  EXPECT_EQ(o0.out.find("flatten"), std::string::npos) << o0.out;
}

TEST_F(CliTest, CompileWithWinogradMatchesTheReference) {
  using namespace graph_opt;
  GraphBuilder b("wino_net");
  Value x = b.input("image", {{1, 64, 10, 10}, f32, "NCHW"});
  Conv2dAttrs ca;
  ca.padding = {1, 1};
  b.output(b.relu(b.conv2d(x, b.constant("w", random_array({64, 64, 3, 3}, 1, -0.1, 0.1)),
                           b.constant("bias", random_array({64}, 2)), ca, "conv"),
                  "relu"));
  Graph g = b.build();
  save_graph(g, path("wino.json"));
  Result c = loom("compile " + path("wino.json") + " -o " + path("wino.so") + " --winograd 2");
  ASSERT_EQ(c.rc, 0) << c.out << c.err;
  EXPECT_HAS(c.out, "conv2d_nchwc_winograd");
  EXPECT_HAS(c.err, "warning: no tuning record for conv2d_nchwc_winograd(1,64,10,10,64,3,3;float32;pad=1,tile_size=2)");
  NDArray in = random_array({1, 64, 10, 10}, 3);
  runtime::save_npy(path("x.npy"), in);
  Result r = loom("run " + path("wino.so") + " --input " + path("x.npy") + " --output " + path("y.npy") + " --repeat 1");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(test::compare_arrays(runtime::load_npy(path("y.npy")), run_reference(g, {in})[0], {1e-4, 1e-4}, "relu"),
            "");
  // auto without a Winograd record: direct.
  std::ofstream(path("empty.jsonl")) << "";
  Result a = loom("compile " + path("wino.json") + " -o " + path("wino_auto.so") + " --winograd auto --log " +
                  path("empty.jsonl"));
  ASSERT_EQ(a.rc, 0) << a.out << a.err;
  EXPECT_EQ(a.out.find("conv2d_nchwc_winograd"), std::string::npos) << a.out;
}

TEST_F(CliTest, CompileErrors) {
  graph_opt::save_graph(small_net(), path("net.json"));
  std::ofstream(path("bad.json")) << "{ \"version\": 1, \"nodes\": [ {\"name\": \"x\"} ";
  const std::string net = path("net.json"), out = " -o " + path("o.so");
  struct Case {
    std::string args;
    int rc;
    std::string msg;
  };
  std::vector<Case> cases = {
      {"compile" + out, 2, "expected one MODEL"},
      {"compile " + net, 2, "-o/--output FILE.so is required"},
      {"compile " + path("missing.json") + out, 2, "no such file"},
      {"compile " + net + out + " --opt-level 4", 2, "--opt-level"},
      {"compile " + net + out + " --disable nosuchpass", 2, "--disable: no pass named 'nosuchpass'"},
      {"compile " + net + out + " --target cuda", 2, "networks compile for the CPU"},
      {"compile " + net + out + " --target 'llvm -mcpu=nosuchcpu'", 2, "--target"},
      {"compile " + net + out + " --log " + path("missing.jsonl"), 2, "--log"},
      {"compile " + path("bad.json") + out, 1, "bad.json"},
      {"compile " + net + " -o " + dir_.string(), 2, "is a directory"},
      {"compile " + net + out + " --winograd 7", 2, "--winograd"},
      {"compile " + net + out + " --winograd auto", 2, "--winograd auto compares tuning records: give --log"},
      {"tune-model " + net + " --log " + path("t.jsonl") + " --winograd auto", 2, "tune with --winograd M"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    Result r = loom(c.args);
    EXPECT_EQ(r.rc, c.rc) << r.out << r.err;
    EXPECT_HAS(r.err, c.msg);
  }
}

}  // namespace
}  // namespace loom
