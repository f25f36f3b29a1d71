// build_graph: hand-built plans of small te kernels chained through arena intermediates, run
// in process and through the exported library (Module::load, dlopen, a fresh process),
// compared with te::evaluate of the same computation; the C ABI's errors.
#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <atomic>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "common/process_util.h"
#include "common/test_util.h"
#include "loom/codegen/graph.h"
#include "loom/runtime/c_runtime_api.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using runtime::GraphKernel;
using runtime::GraphPlan;
using runtime::GraphTensor;
using runtime::GraphTensorKind;
using runtime::Module;
using runtime::NDArray;
using te::Tensor;
using te::Var;

const DataType f32 = DataType::Float(32);
constexpr int64_t N = 5, K = 7, M = 6;

const fs::path& work_dir() { return test::scratch_dir("loom-graph-test"); }

const std::string& loader() { return test::export_loader(); }

GraphTensor tensor(const std::string& name, GraphTensorKind kind, std::vector<int64_t> shape, int64_t offset = 0) {
  GraphTensor t;
  t.name = name;
  t.kind = kind;
  t.dtype = f32;
  t.shape = std::move(shape);
  t.arena_offset = offset;
  return t;
}

NDArray random_array(std::vector<int64_t> shape, uint64_t seed) {
  NDArray a = NDArray::empty(std::move(shape), f32);
  a.fill_random(seed);
  return a;
}

// The chain, as one te computation (the reference) and as five kernels:
//   Y = X·W            k_matmul     (Y: arena [0, 120))
//   Z = relu(Y + b)    k_bias_relu  (Z: output 0, read again by k_mix)
//   U = 2 Z - Y        k_mix        (U: arena [128, 248))
//   V = U + 1          k_shift      (V: arena [0, 120), Y's bytes: Y is dead after k_mix)
//   S = Σ_j V          k_rowsum     (S: output 1)
// run(x, z, s, x_copy, W_copy, z_copy): outputs 2..4 are an input, a constant and a repeat.
struct Chain {
  Tensor relu_bias(const Tensor& Y, const Tensor& B) {
    return te::compute({N, M}, [&](Var i, Var j) { return te::max(Y(i, j) + B(j), te::make_const(f32, 0)); }, "Z");
  }
  Tensor mix(const Tensor& Y, const Tensor& Z) {
    return te::compute({N, M}, [&](Var i, Var j) { return Z(i, j) * 2 - Y(i, j); }, "U");
  }
  Tensor shift(const Tensor& U) {
    return te::compute({N, M}, [&](Var i, Var j) { return U(i, j) + 1; }, "V");
  }
  Tensor rowsum(const Tensor& V) {
    te::IterVar j = te::reduce_axis({0, M}, "j");
    return te::compute({N}, [&](Var i) { return te::sum(V(i, j), {j}); }, "S");
  }

  Chain() {
    W = random_array({K, M}, 11);
    b = random_array({M}, 12);
    // Each kernel over placeholders of its own, scheduled so that tiles do not divide.
    {
      Tensor X = te::placeholder({N, K}, f32, "X"), Wp = te::placeholder({K, M}, f32, "W");
      Tensor Y = te::ops::matmul(X, Wp, false, false, "Y");
      Schedule s = create_schedule({Y});
      auto [jo, ji] = s[Y].split(s[Y].axis(1), 4);
      s[Y].reorder({s[Y].axis(0), jo, s[Y].reduce_axis(0), ji});
      s[Y].vectorize(ji);
      s[Y].parallel(s[Y].axis(0));
      funcs.push_back(lowering::lower(s, {X, Wp, Y}, "k_matmul"));
    }
    {
      Tensor Y = te::placeholder({N, M}, f32, "Y"), B = te::placeholder({M}, f32, "B");
      Tensor Z = relu_bias(Y, B);
      Schedule s = create_schedule({Z});
      auto [jo, ji] = s[Z].split(s[Z].axis(1), 4);
      s[Z].vectorize(ji);
      funcs.push_back(lowering::lower(s, {Y, B, Z}, "k_bias_relu"));
    }
    {
      Tensor Y = te::placeholder({N, M}, f32, "Y"), Z = te::placeholder({N, M}, f32, "Z");
      Tensor U = mix(Y, Z);
      Schedule s = create_schedule({U});
      funcs.push_back(lowering::lower(s, {Y, Z, U}, "k_mix"));
    }
    {
      Tensor U = te::placeholder({N, M}, f32, "U");
      Tensor V = shift(U);
      Schedule s = create_schedule({V});
      s[V].parallel(s[V].axis(0));
      funcs.push_back(lowering::lower(s, {U, V}, "k_shift"));
    }
    {
      Tensor V = te::placeholder({N, M}, f32, "V");
      Tensor S = rowsum(V);
      Schedule s = create_schedule({S});
      funcs.push_back(lowering::lower(s, {V, S}, "k_rowsum"));
    }

    plan.tensors = {tensor("x", GraphTensorKind::kInput, {N, K}),
                    tensor("W", GraphTensorKind::kConstant, {K, M}),
                    tensor("b", GraphTensorKind::kConstant, {M}),
                    tensor("y", GraphTensorKind::kIntermediate, {N, M}, 0),
                    tensor("z", GraphTensorKind::kOutput, {N, M}),
                    tensor("u", GraphTensorKind::kIntermediate, {N, M}, 128),
                    tensor("v", GraphTensorKind::kIntermediate, {N, M}, 0),
                    tensor("s", GraphTensorKind::kOutput, {N})};
    plan.tensors[1].value = W;
    plan.tensors[2].value = b;
    plan.kernels = {{"k_matmul", {0, 1, 3}, {}, "matmul"},
                    {"k_bias_relu", {3, 2, 4}, {}, "injective"},
                    {"k_mix", {3, 4, 5}, {}, ""},
                    {"k_shift", {5, 6}, {}, ""},
                    {"k_rowsum", {6, 7}, {}, "reduction"}};
    plan.inputs = {0};
    plan.outputs = {4, 7, 0, 1, 4};
    plan.arena_bytes = 256;
  }

  /// te::evaluate of the whole chain: {z, s}.
  std::vector<NDArray> reference(const NDArray& x) {
    Tensor X = te::placeholder({N, K}, f32, "X"), Wp = te::placeholder({K, M}, f32, "W");
    Tensor B = te::placeholder({M}, f32, "B");
    Tensor Y = te::ops::matmul(X, Wp, false, false, "Y");
    Tensor Z = relu_bias(Y, B);
    Tensor S = rowsum(shift(mix(Y, Z)));
    return te::evaluate({Z, S}, {{X, x}, {Wp, W}, {B, b}});
  }

  GraphPlan plan;
  std::vector<lowering::LoweredFunc> funcs;
  NDArray W, b;
};

/// One call's arrays: x, then the five outputs filled with a marker.
struct Call {
  NDArray x;
  std::vector<NDArray> outs;
  explicit Call(uint64_t seed) {
    x = random_array({N, K}, seed);
    for (auto shape : std::vector<std::vector<int64_t>>{{N, M}, {N}, {N, K}, {K, M}, {N, M}}) {
      outs.push_back(NDArray::empty(shape, f32));
      std::memset(outs.back().raw_data(), 0x5a, outs.back().nbytes());
    }
  }
  std::vector<NDArray> arrays() const {
    std::vector<NDArray> a = {x};
    a.insert(a.end(), outs.begin(), outs.end());
    return a;
  }
  std::vector<DLTensor*> args() const {
    std::vector<DLTensor*> a;
    for (const auto& t : arrays()) a.push_back(t.dltensor());
    return a;
  }
};

bool same_bytes(const NDArray& a, const NDArray& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void expect_matches_reference(Chain& chain, const Call& c) {
  std::vector<NDArray> want = chain.reference(c.x);
  EXPECT_EQ(test::compare_arrays(c.outs[0], want[0], test::tolerance_for(f32), "z"), "");
  EXPECT_EQ(test::compare_arrays(c.outs[1], want[1], test::tolerance_for(f32), "s"), "");
  EXPECT_TRUE(same_bytes(c.outs[2], c.x)) << "output 2 copies the input";
  EXPECT_TRUE(same_bytes(c.outs[3], chain.W)) << "output 3 copies the constant";
  EXPECT_TRUE(same_bytes(c.outs[4], c.outs[0])) << "output 4 repeats output 0";
}

Module build_chain(Chain& chain) { return codegen::build_graph(chain.plan, chain.funcs, Target("llvm")); }

/// One library of the chain for the whole binary.
const std::string& chain_library() {
  static std::string path = [] {
    Chain chain;
    std::string p = (work_dir() / "libchain.so").string();
    build_chain(chain).export_library(p);
    return p;
  }();
  return path;
}

// ------------------------------------------------------------------ in process

TEST(GraphModule, InProcessMatchesReference) {
  Chain chain;
  Module m = build_chain(chain);
  EXPECT_EQ(m->type_key(), "graph");
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"run", "run_profile"}));
  for (uint64_t seed : {1, 2}) {  // the second run reuses the arena
    Call c(seed);
    m.get_function("run").call(c.args());
    expect_matches_reference(chain, c);
  }
}

TEST(GraphModule, InfoDescribesInputsOutputsAndKernels) {
  Chain chain;
  auto info = nlohmann::json::parse(build_chain(chain).info_json());
  EXPECT_EQ(info["type_key"], "graph");
  ASSERT_EQ(info["inputs"].size(), 1u);
  EXPECT_EQ(info["inputs"][0], nlohmann::json({{"name", "x"}, {"dtype", "float32"}, {"shape", {N, K}}}));
  ASSERT_EQ(info["outputs"].size(), 5u);
  EXPECT_EQ(info["outputs"][1], nlohmann::json({{"name", "s"}, {"dtype", "float32"}, {"shape", {N}}}));
  EXPECT_EQ(info["outputs"][3]["name"], "W");
  ASSERT_EQ(info["kernels"].size(), 5u);
  EXPECT_EQ(info["kernels"][0], nlohmann::json({{"name", "k_matmul"},
                                                {"note", "matmul"},
                                                {"args", {"x", "W", "y"}},
                                                {"bytes", (N * K + K * M + N * M) * 4}}));
  EXPECT_EQ(info["arena_bytes"], 256);
  EXPECT_EQ(info["unplanned_bytes"], 3 * N * M * 4);
  EXPECT_EQ(info["constants_bytes"], 192 + 64);  // W (168 bytes) and b (24), each padded to 64 bytes
  ASSERT_EQ(info["functions"].size(), 2u);
  EXPECT_EQ(info["functions"][0]["name"], "run");
  EXPECT_EQ(info["functions"][0]["args"].size(), 6u);
  EXPECT_EQ(info["functions"][0]["args"][1]["role"], "output");
  EXPECT_EQ(info["functions"][1]["args"][6],
            nlohmann::json({{"name", "kernel_seconds"}, {"dtype", "float64"}, {"shape", {5}}, {"role", "output"}}));
}

TEST(GraphModule, ProfileRunsAndTimesEachKernel) {
  Chain chain;
  Module m = build_chain(chain);
  Call c(3);
  NDArray seconds = NDArray::empty({5}, DataType::Float(64));
  std::vector<DLTensor*> args = c.args();
  args.push_back(seconds.dltensor());
  m.get_function("run_profile").call(args);
  expect_matches_reference(chain, c);
  for (int k = 0; k < 5; ++k) EXPECT_GE(seconds.get(k), 0.0);
}

TEST(GraphModule, BuildErrorsNameTheKernel) {
  auto error = [](Chain& chain) {
    try {
      build_chain(chain);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  {
    Chain chain;
    chain.plan.kernels[1].args = {3, 4, 2};
    EXPECT_NE(error(chain).find("build_graph: kernel 1 ('k_bias_relu'): argument 1 ('B') of the function is "
                                "float32[6], but tensor 4 ('z') is float32[5, 6]"),
              std::string::npos)
        << error(chain);
  }
  {
    Chain chain;
    chain.plan.kernels[2].name = "k_nothing";
    EXPECT_NE(error(chain).find("build_graph: kernel 2 ('k_nothing'): no function of that name among the 5 compiled"),
              std::string::npos)
        << error(chain);
  }
  {
    Chain chain;
    chain.plan.kernels[3].args.pop_back();
    EXPECT_NE(error(chain).find("kernel 3 ('k_shift'): the function takes 2 arguments, the kernel passes 1"),
              std::string::npos)
        << error(chain);
  }
  {
    Chain chain;
    chain.plan.kernels[0].writes = {false, true, false};
    EXPECT_NE(error(chain).find("argument 1 ('W') is read by the function, but the kernel says it is written"),
              std::string::npos)
        << error(chain);
  }
  {
    Chain chain;
    chain.plan.name = "loom_run";
    EXPECT_NE(error(chain).find("entry name 'loom_run' is not a C identifier"), std::string::npos) << error(chain);
  }
  {
    Chain chain;
    chain.plan.tensors[6].arena_offset = 128;  // v on u's bytes while k_shift reads u
    EXPECT_NE(error(chain).find("share memory while both are live"), std::string::npos) << error(chain);
  }
  {
    Chain chain;
    EXPECT_THROW(codegen::build_graph(chain.plan, chain.funcs, Target("cuda")), Error);
  }
}

/// A kernel failing at run time (an index read from the data, checked): the graph's error
/// names the kernel, in process and in the exported library.
TEST(GraphModule, KernelFailureNamesTheKernel) {
  Tensor I = te::placeholder({3}, DataType::Int(32), "I");
  Tensor T = te::placeholder({4}, f32, "T");
  Tensor G = te::compute({3}, [&](Var i) { return T(I(i)); }, "G");
  Schedule s = create_schedule({G});
  lowering::LowerOptions opts;
  opts.check_accesses = true;
  GraphPlan plan;
  plan.tensors = {tensor("idx", GraphTensorKind::kInput, {3}), tensor("table", GraphTensorKind::kConstant, {4}),
                  tensor("out", GraphTensorKind::kOutput, {3})};
  plan.tensors[0].dtype = DataType::Int(32);
  plan.tensors[1].value = NDArray::from_vector({10, 11, 12, 13}, {4}, f32);
  plan.kernels = {{"k_gather", {0, 1, 2}, {}, ""}};
  plan.inputs = {0};
  plan.outputs = {2};
  Module m = codegen::build_graph(plan, {lowering::lower(s, {I, T, G}, "k_gather", opts)}, Target("llvm"));
  std::string path = (work_dir() / "libgather.so").string();
  m.export_library(path);

  NDArray idx = NDArray::from_vector({3, 0, 2}, {3}, DataType::Int(32));
  NDArray out = NDArray::empty({3}, f32);
  for (Module mod : {m, Module::load(path)}) {
    mod.get_function("run")(idx, out);
    EXPECT_EQ(out.get(0), 13);
    EXPECT_EQ(out.get(2), 12);
    idx.set(1, 7);
    try {
      mod.get_function("run")(idx, out);
      ADD_FAILURE() << "an index outside the table ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("run: kernel 0 of 1 ('k_gather') failed: stage 'G' reads tensor 'T' out "
                                           "of bounds"),
                std::string::npos)
          << e.what();
    }
    idx.set(1, 0);
  }
}

// ------------------------------------------------------------------ the exported library

TEST(GraphExport, LoadedLibraryMatchesInProcess) {
  Chain chain;
  Module jit = build_chain(chain);
  Module back = Module::load(chain_library());
  EXPECT_EQ(back->type_key(), "dso");
  EXPECT_EQ(back.function_names(), (std::vector<std::string>{"run", "run_profile"}));
  Call a(5), b(5);
  jit.get_function("run").call(a.args());
  back.get_function("run").call(b.args());
  for (size_t j = 0; j < a.outs.size(); ++j) EXPECT_TRUE(same_bytes(a.outs[j], b.outs[j])) << "output " << j;
  expect_matches_reference(chain, b);
  EXPECT_EQ(nlohmann::json::parse(back.info_json())["kernels"], nlohmann::json::parse(jit.info_json())["kernels"]);
  EXPECT_TRUE(nlohmann::json::parse(back.info_json()).contains("cpu"));

  NDArray seconds = NDArray::empty({5}, DataType::Float(64));
  std::vector<DLTensor*> args = b.args();
  args.push_back(seconds.dltensor());
  back.get_function("run_profile").call(args);
  for (int k = 0; k < 5; ++k) EXPECT_GE(seconds.get(k), 0.0);
}

TEST(GraphExport, HeaderDeclaresTheEntries) {
  std::string h = test::read_file(fs::path(chain_library()).replace_extension(".h"));
  EXPECT_NE(h.find("int32_t run(DLTensor* x, DLTensor* z, DLTensor* s, DLTensor* arg3, DLTensor* W, DLTensor* arg5);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find(" *   2 s: float32[5]  (output)"), std::string::npos) << h;
  EXPECT_NE(h.find("int32_t __loom_packed_run_profile(DLTensor** args, int32_t num_args);"), std::string::npos) << h;
  EXPECT_NE(h.find("const char* loom_module_info(void);"), std::string::npos) << h;
  // The header compiles as C11 against DLPack's.
  fs::path src = work_dir() / "use_header.c";
  std::ofstream(src) << "#include \"libchain.h\"\nint main(void) { run_fn f = run; return f == 0; }\n";
  std::string out;
  int st = test::run({"cc", "-std=c11", "-fsyntax-only", "-I" + work_dir().string(), "-I" LOOM_DLPACK_INCLUDE_DIR,
                      src.string()},
                     test::host_env(), &out);
  EXPECT_EQ(st, 0) << out;
}

TEST(GraphExport, DependenciesAndExportedSymbols) {
  test::ElfInfo elf = test::read_elf(chain_library());
  EXPECT_EQ(elf.exported, (std::set<std::string>{"run", "__loom_packed_run", "run_profile", "__loom_packed_run_profile",
                                                 "loom_module_info", "loom_module_function_names", "loom_get_last_error",
                                                 "__loom_get_last_error"}));
  for (const auto& n : elf.needed)
    EXPECT_TRUE(n.rfind("libc.so", 0) == 0 || n.rfind("libm.so", 0) == 0 || n.rfind("libpthread.so", 0) == 0 ||
                n.rfind("ld-linux", 0) == 0)
        << n;
}

TEST(GraphExport, FreshProcessMatchesInProcess) {
  Chain chain;
  Call c(8);
  fs::path in = work_dir() / "chain.in", out_file = work_dir() / "chain.out";
  std::ofstream(in, std::ios::binary) << test::export_loader_input(c.arrays());
  std::string out;
  int st = test::run({loader(), chain_library(), "run", in.string(), out_file.string()}, {"LD_LIBRARY_PATH="}, &out);
  ASSERT_EQ(st, 0) << out;
  std::vector<std::string> got = test::export_loader_output(test::read_file(out_file), 6);
  build_chain(chain).get_function("run").call(c.args());
  for (size_t j = 0; j < c.outs.size(); ++j) {
    ASSERT_EQ(got[j + 1].size(), c.outs[j].nbytes());
    EXPECT_EQ(std::memcmp(got[j + 1].data(), c.outs[j].raw_data(), c.outs[j].nbytes()), 0) << "output " << j;
  }
  expect_matches_reference(chain, c);
}

TEST(GraphExport, CAbiErrors) {
  void* h = dlopen(chain_library().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  using Packed = int32_t (*)(DLTensor**, int32_t);
  using Run = int32_t (*)(DLTensor*, DLTensor*, DLTensor*, DLTensor*, DLTensor*, DLTensor*);
  auto packed = reinterpret_cast<Packed>(dlsym(h, "__loom_packed_run"));
  auto run = reinterpret_cast<Run>(dlsym(h, "run"));
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(h, "loom_get_last_error"));
  ASSERT_TRUE(packed && run && last_error);
  auto expect = [&](int32_t status, const std::string& msg) {
    EXPECT_EQ(status, LOOM_ERR_ARGUMENT);
    EXPECT_NE(std::string(last_error()).find(msg), std::string::npos) << "got: " << last_error();
  };
  Call c(9);
  std::vector<DLTensor*> args = c.args();
  expect(packed(nullptr, 6), "run: the argument array is null");
  expect(packed(args.data(), 5), "run: expected 6 arguments (1 inputs, then 5 outputs), got 5");
  expect(packed(args.data(), -1), "run: expected 6 arguments");
  expect(run(nullptr, args[1], args[2], args[3], args[4], args[5]), "run: input 0 ('x') is null");
  DLTensor bad = *args[2];
  int64_t shape[1] = {N + 3};
  bad.shape = shape;
  expect(run(args[0], args[1], &bad, args[3], args[4], args[5]),
         "run: output 1 ('s') has the wrong shape: dimension 0 must be 5, got 8");
  for (const auto& o : c.outs)
    for (size_t i = 0; i < o.nbytes(); ++i) ASSERT_EQ(static_cast<unsigned char*>(o.raw_data())[i], 0x5a);
  EXPECT_EQ(run(args[0], args[1], args[2], args[3], args[4], args[5]), 0) << last_error();
  dlclose(h);
}

/// Two threads running the loaded library at once (one of them on a fallback arena), each
/// checking its own results against the in-process module's.
TEST(GraphExport, ConcurrentRunsOfTheLibrary) {
  Chain chain;
  Module jit = build_chain(chain);
  Module back = Module::load(chain_library());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        Call a(uint64_t(1000 * t + i)), b(uint64_t(1000 * t + i));
        jit.get_function("run").call(a.args());
        back.get_function("run").call(b.args());
        for (size_t j = 0; j < a.outs.size(); ++j) mismatches += !same_bytes(a.outs[j], b.outs[j]);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(GraphExport, LargeConstantsAreEmbedded) {
  // y = C·x with C float32[1024, 4096] (16 MiB) embedded in the library.
  constexpr int64_t R = 1024, L = 4096;
  Tensor X = te::placeholder({L}, f32, "X"), Cp = te::placeholder({R, L}, f32, "C");
  te::IterVar k = te::reduce_axis({0, L}, "k");
  Tensor Y = te::compute({R}, [&](Var i) { return te::sum(Cp(i, k) * X(k), {k}); }, "Y");
  Schedule s = create_schedule({Y});
  s[Y].parallel(s[Y].axis(0));
  GraphPlan plan;
  plan.tensors = {tensor("x", GraphTensorKind::kInput, {L}), tensor("C", GraphTensorKind::kConstant, {R, L}),
                  tensor("y", GraphTensorKind::kOutput, {R})};
  plan.tensors[1].value = random_array({R, L}, 21);
  NDArray C = plan.tensors[1].value;
  plan.kernels = {{"k_matvec", {0, 1, 2}, {}, ""}};
  plan.inputs = {0};
  plan.outputs = {2};
  std::string path = (work_dir() / "libbig.so").string();
  codegen::build_graph(plan, {lowering::lower(s, {X, Cp, Y}, "k_matvec")}, Target("llvm")).export_library(path);
  EXPECT_GT(fs::file_size(path), uintmax_t(R * L * 4));

  NDArray x = random_array({L}, 22), y = NDArray::empty({R}, f32);
  Module::load(path).get_function("run")(x, y);
  for (int64_t i = 0; i < R; i += 97) {
    double want = 0;
    for (int64_t j = 0; j < L; ++j) want += double(C.data<float>()[i * L + j]) * x.data<float>()[j];
    EXPECT_NEAR(y.data<float>()[i], want, 1e-3 * (1 + std::abs(want))) << i;
  }
}

}  // namespace
}  // namespace loom
