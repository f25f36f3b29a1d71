// export_library: self-contained shared libraries with a C ABI, loaded back in this process
// (Module::load, dlopen) and in fresh processes that know nothing of loom.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <atomic>

#include "common/process_util.h"
#include "common/test_util.h"
#include "loom/codegen/build.h"
#include "loom/runtime/c_runtime_api.h"


namespace loom {
namespace {

namespace fs = std::filesystem;
using test::compile_c_program;
using test::ElfInfo;
using test::host_env;
using test::read_elf;
using test::read_file;
using test::run;
using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

const fs::path& work_dir() { return test::scratch_dir("loom-export-test"); }

const std::string& loader() { return test::export_loader(); }

// ------------------------------------------------------------------ helpers

/// A matmul with a tiled, vectorized, parallel schedule (exercises the embedded pool).
Module build_matmul(const std::string& name, int64_t M, int64_t K, int64_t N, const Target& target = Target("llvm")) {
  te::Tensor A = te::placeholder({M, K}, f32, "A");
  te::Tensor B = te::placeholder({K, N}, f32, "B");
  te::Tensor C = te::ops::matmul(A, B, false, false, "C");
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 8);
  auto [jo, ji] = s[C].split(s[C].axis(1), 8);
  s[C].reorder({io, jo, s[C].reduce_axis(0), ii, ji});
  s[C].vectorize(ji);
  s[C].parallel(io);
  return build(s, {A, B, C}, target, name);
}

NDArray random_array(std::vector<int64_t> shape, uint64_t seed) {
  NDArray a = NDArray::empty(std::move(shape), f32);
  a.fill_random(seed);
  return a;
}

bool same_bytes(const NDArray& a, const NDArray& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

std::string lib_path(const std::string& name) { return (work_dir() / ("lib" + name + ".so")).string(); }

/// What an exported library may depend on: glibc's libc, libm (and libmvec, its vector math,
/// when the code calls it), libpthread and the dynamic loader.
const std::set<std::string>& allowed_dependencies() {
  static const std::set<std::string> allowed = {"libc.so.6", "libm.so.6", "libmvec.so.1", "libpthread.so.0",
                                                "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"};
  return allowed;
}

/// Runs function `name` of library `path` in a fresh process (export_loader, empty
/// LD_LIBRARY_PATH) on `in_path` and expects every argument afterwards to have the bytes of
/// `arrays` (what the JIT module left in them).
void expect_loader_output_equal(const std::string& path, const std::string& name, const fs::path& in_path,
                                const fs::path& out_path, const std::vector<NDArray>& arrays) {
  std::string out;
  int st = run({loader(), path, name, in_path.string(), out_path.string()}, {"LD_LIBRARY_PATH="}, &out);
  ASSERT_EQ(st, 0) << out;
  EXPECT_NE(out.find("LD_LIBRARY_PATH=[]"), std::string::npos) << out;
  std::vector<std::string> got = test::export_loader_output(read_file(out_path), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    ASSERT_EQ(got[i].size(), arrays[i].nbytes());
    EXPECT_EQ(std::memcmp(got[i].data(), arrays[i].raw_data(), got[i].size()), 0)
        << "argument " << i << " differs from the JIT module's";
  }
}

// ------------------------------------------------------------------ tests

TEST(Export, MatmulRoundTripHeaderAndInfo) {
  Module jit = build_matmul("matmul", 37, 19, 29);
  std::string path = lib_path("matmul");
  jit.export_library(path);
  ASSERT_TRUE(fs::exists(path));
  std::string header = read_file(work_dir() / "libmatmul.h");
  EXPECT_NE(header.find("int32_t matmul(DLTensor* A, DLTensor* B, DLTensor* C);"), std::string::npos) << header;
  EXPECT_NE(header.find("float32[37, 19]"), std::string::npos) << header;
  EXPECT_NE(header.find("const char* loom_get_last_error(void);"), std::string::npos);
  EXPECT_NE(header.find("#ifndef LOOM_MODULE_LIBMATMUL_H_"), std::string::npos);

  Module back = Module::load(path);
  EXPECT_EQ(back->type_key(), "dso");
  EXPECT_EQ(back.function_names(), std::vector<std::string>{"matmul"});
  NDArray a = random_array({37, 19}, 1), b = random_array({19, 29}, 2);
  NDArray c1 = NDArray::empty({37, 29}, f32), c2 = NDArray::empty({37, 29}, f32);
  jit.get_function("matmul")(a, b, c1);
  back.get_function("matmul")(a, b, c2);
  EXPECT_TRUE(same_bytes(c1, c2));

  auto info = nlohmann::json::parse(back.info_json());
  ASSERT_EQ(info["functions"].size(), 1u);
  const auto& f = info["functions"][0];
  EXPECT_EQ(f["name"], "matmul");
  ASSERT_EQ(f["args"].size(), 3u);
  EXPECT_EQ(f["args"][0]["name"], "A");
  EXPECT_EQ(f["args"][0]["dtype"], "float32");
  EXPECT_EQ(f["args"][0]["shape"], nlohmann::json({37, 19}));
  EXPECT_EQ(f["args"][0]["role"], "input");
  EXPECT_EQ(f["args"][2]["role"], "output");
  EXPECT_EQ(info["target"], Target("llvm").str());
  EXPECT_TRUE(info.contains("version"));
  EXPECT_TRUE(info.contains("cpu"));
  EXPECT_TRUE(info.contains("triple"));
}

TEST(Export, EmbeddedThreadPoolUnderConcurrentCalls) {
  Module jit = build_matmul("pmm", 64, 24, 40);
  jit.export_library(lib_path("pmm"));
  Module back = Module::load(lib_path("pmm"));
  NDArray a = random_array({64, 24}, 1), b = random_array({24, 40}, 2), want = NDArray::empty({64, 40}, f32);
  jit.get_function("pmm")(a, b, want);
  runtime::PackedFunc f = back.get_function("pmm");
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      NDArray c = NDArray::empty({64, 40}, f32);
      for (int i = 0; i < 50; ++i) {
        std::memset(c.raw_data(), 0, c.nbytes());
        f(a, b, c);
        if (!same_bytes(c, want)) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Export, DependenciesAndExportedSymbols) {
  std::string path = lib_path("deps");
  build_matmul("deps_fn", 16, 16, 16).export_library(path);
  ElfInfo elf = read_elf(path);
  for (const auto& n : elf.needed) EXPECT_TRUE(allowed_dependencies().count(n)) << "unexpected dependency " << n;
  // glibc's vector math library only where the code calls it (VectorMathLinksLibmvec…).
  EXPECT_EQ(std::find(elf.needed.begin(), elf.needed.end(), "libmvec.so.1"), elf.needed.end());
  EXPECT_TRUE(std::find(elf.needed.begin(), elf.needed.end(), "libc.so.6") != elf.needed.end());
  const std::set<std::string> want = {"deps_fn", "__loom_packed_deps_fn", "loom_get_last_error", "__loom_get_last_error",
                                      "loom_module_info", "loom_module_function_names"};
  EXPECT_EQ(elf.exported, want);
}

TEST(Export, EveryOpInFreshProcessMatchesJit) {
  // Every op with its default schedule, all in one library (several functions per module).
  std::vector<lowering::LoweredFunc> funcs;
  std::vector<std::vector<te::Tensor>> args;
  std::vector<std::string> names;
  for (const auto& c : te::ops::test_cases()) {
    std::string name = "op_" + c.name;
    for (char& ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    auto t = c.make();
    std::vector<te::Tensor> outs;
    for (const auto& x : t)
      if (x.op()->kind != te::OpKind::kPlaceholder) outs.push_back(x);
    Schedule s = create_schedule(outs);
    funcs.push_back(lowering::lower(s, t, name));
    args.push_back(t);
    names.push_back(name);
  }
  ASSERT_GT(funcs.size(), 20u);
  Module jit = codegen::build(funcs, Target("llvm"));
  std::string path = lib_path("allops");
  jit.export_library(path);
  EXPECT_EQ(Module::load(path).function_names(), names);

  for (size_t fi = 0; fi < funcs.size(); ++fi) {
    SCOPED_TRACE(names[fi]);
    auto inputs = test::random_inputs(args[fi], 7 + fi);
    std::vector<NDArray> arrays;
    for (const auto& t : args[fi]) {
      if (inputs.count(t)) {
        arrays.push_back(inputs.at(t));
        continue;
      }
      std::vector<int64_t> shape;
      for (const auto& d : t.shape()) shape.push_back(*te::as_const_int(d));
      NDArray o = NDArray::empty(shape, t.dtype());
      std::memset(o.raw_data(), 0x5a, o.nbytes());
      arrays.push_back(o);
    }
    // The input file of export_loader, written before the JIT overwrites the outputs.
    std::string in = test::export_loader_input(arrays);
    fs::path in_path = work_dir() / (names[fi] + ".in"), out_path = work_dir() / (names[fi] + ".out");
    std::ofstream(in_path, std::ios::binary) << in;

    std::vector<DLTensor*> dl;
    for (const auto& a : arrays) dl.push_back(a.dltensor());
    jit.get_function(names[fi]).call(dl);

    expect_loader_output_equal(path, names[fi], in_path, out_path, arrays);
  }
}

TEST(Export, VectorMathLinksLibmvecAndMatchesJitInFreshProcess) {
#if !(defined(__x86_64__) && defined(__linux__))
  GTEST_SKIP() << "libmvec is x86-64 GNU/Linux only";
#else
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")))
    GTEST_SKIP() << "this host cannot run x86-64-v3 code";
#endif
  const int64_t n = 203;  // not a multiple of the lanes: a vector body and a scalar tail
  te::Tensor X = te::placeholder({n}, f32, "X");
  te::Tensor Y = te::compute({n}, [&](te::Var i) {
    te::Expr x = X(i);
    return te::exp(x * 0.25f) + te::tanh(x) + te::erf(x) + te::sigmoid(x) + te::log(te::abs(x) + 1.0f);
  }, "Y");
  Schedule s = create_schedule({Y});
  auto [o, i] = s[Y].split(s[Y].axis(0), 8);
  s[Y].vectorize(i);
  Module jit = build(s, {X, Y}, Target("llvm -mcpu=x86-64-v3"), "vmath");
  std::string path = lib_path("vmath");
  jit.export_library(path);
  ElfInfo elf = read_elf(path);
  EXPECT_NE(std::find(elf.needed.begin(), elf.needed.end(), "libmvec.so.1"), elf.needed.end());
  for (const auto& d : elf.needed) EXPECT_TRUE(allowed_dependencies().count(d)) << "unexpected dependency " << d;

  NDArray x = NDArray::empty({n}, f32), y = NDArray::empty({n}, f32);
  x.fill_random(3, -9.0, 9.0);
  std::memset(y.raw_data(), 0x5a, y.nbytes());
  std::vector<NDArray> arrays = {x, y};
  fs::path in_path = work_dir() / "vmath.in", out_path = work_dir() / "vmath.out";
  std::ofstream(in_path, std::ios::binary) << test::export_loader_input(arrays);
  jit.get_function("vmath")(x, y);
  expect_loader_output_equal(path, "vmath", in_path, out_path, arrays);
  for (int64_t j = 0; j < n; ++j) {
    const double v = x.data<float>()[j];
    const double want = std::exp(v * 0.25) + std::tanh(v) + std::erf(v) + 1 / (1 + std::exp(-v)) + std::log(std::fabs(v) + 1);
    EXPECT_NEAR(y.data<float>()[j], want, 1e-5 * std::fabs(want) + 1e-6) << "x=" << v;
  }
}

/// Each argument check of the exported entry, triggered through Module::load.
class ExportChecks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te::Tensor X = te::placeholder({4, 8}, f32, "X");
    te::Tensor Y = te::ops::relu(X, "Y");
    Schedule s = create_schedule({Y});
    build(s, {X, Y}, Target("llvm"), "relu").export_library(lib_path("checks"));
  }
  void SetUp() override {
    mod = Module::load(lib_path("checks"));
    x = random_array({4, 8}, 3);
    y = NDArray::empty({4, 8}, f32);
    std::memset(y.raw_data(), 0x5a, y.nbytes());
    xt = *x.dltensor();
    yt = *y.dltensor();
  }
  /// Calls with (X, Y) replaced by the given tensors; expects failure with `msg` and an
  /// untouched output.
  void expect_error(DLTensor* a, DLTensor* b, const std::string& msg, std::vector<DLTensor*> extra = {}) {
    std::vector<DLTensor*> args = {a, b};
    args.insert(args.end(), extra.begin(), extra.end());
    int32_t st = mod.get_function("relu").call_status(args);
    EXPECT_EQ(st, LOOM_ERR_ARGUMENT);
    std::string err = loom_get_last_error();
    EXPECT_NE(err.find(msg), std::string::npos) << "got: " << err;
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(reinterpret_cast<uint32_t*>(y.raw_data())[i], 0x5a5a5a5au);
  }
  Module mod;
  NDArray x, y;
  DLTensor xt, yt;
};

TEST_F(ExportChecks, GoodCallAndCompactStrides) {
  int64_t strides[2] = {8, 1};
  xt.strides = strides;
  std::vector<DLTensor*> args = {&xt, &yt};
  ASSERT_EQ(mod.get_function("relu").call_status(args), 0) << loom_get_last_error();
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(y.data<float>()[i], std::max(0.0f, x.data<float>()[i]));
}
TEST_F(ExportChecks, NullArgumentArray) {
  void* h = dlopen(lib_path("checks").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto packed = reinterpret_cast<int32_t (*)(DLTensor**, int32_t)>(dlsym(h, "__loom_packed_relu"));
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(h, "loom_get_last_error"));
  ASSERT_TRUE(packed && last_error);
  EXPECT_EQ(packed(nullptr, 2), LOOM_ERR_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("relu: the argument array is null (2 arguments expected)"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(packed(nullptr, 0), LOOM_ERR_ARGUMENT);  // the count is checked first
  EXPECT_NE(std::string(last_error()).find("expected 2 arguments, got 0"), std::string::npos) << last_error();
  dlclose(h);
}

TEST_F(ExportChecks, NumArgs) { expect_error(&xt, &yt, "relu: expected 2 arguments, got 3", {&yt}); }
TEST_F(ExportChecks, NullTensor) { expect_error(nullptr, &yt, "argument 0 ('X') is null"); }
TEST_F(ExportChecks, NullData) {
  yt.data = nullptr;
  expect_error(&xt, &yt, "argument 1 ('Y') has a null data pointer");
}
TEST_F(ExportChecks, NullShape) {
  xt.shape = nullptr;
  expect_error(&xt, &yt, "argument 0 ('X') has a null shape array");
}
TEST_F(ExportChecks, Device) {
  xt.device = {kDLCUDA, 0};
  expect_error(&xt, &yt, "argument 0 ('X') must be on the CPU");
}
TEST_F(ExportChecks, Ndim) {
  yt.ndim = 3;
  expect_error(&xt, &yt, "argument 1 ('Y') has the wrong number of dimensions: must be 2");
}
TEST_F(ExportChecks, Dtype) {
  xt.dtype = {kDLInt, 32, 1};
  expect_error(&xt, &yt, "argument 0 ('X') has the wrong dtype: must be float32");
  xt.dtype = {kDLFloat, 64, 1};
  expect_error(&xt, &yt, "has the wrong dtype: must be float32");
  xt.dtype = {kDLFloat, 32, 4};
  expect_error(&xt, &yt, "has the wrong dtype: must be float32");
}
TEST_F(ExportChecks, Shape) {
  int64_t shape[2] = {4, 9};
  yt.shape = shape;
  expect_error(&xt, &yt, "argument 1 ('Y') has the wrong shape: dimension 1 must be 8");
}
TEST_F(ExportChecks, Strides) {
  int64_t strides[2] = {16, 2};
  yt.strides = strides;
  expect_error(&xt, &yt, "argument 1 ('Y') must be compact row-major: stride of dimension 0 must be 8");
}
TEST_F(ExportChecks, ByteOffset) {
  xt.byte_offset = 4;
  expect_error(&xt, &yt, "argument 0 ('X') must have byte_offset 0");
}
TEST_F(ExportChecks, Alignment) {
  yt.data = static_cast<char*>(yt.data) + 1;
  expect_error(&xt, &yt, "argument 1 ('Y') data pointer must be aligned to 4 bytes");
}
TEST_F(ExportChecks, ErrorsInTheLibrarysOwnSlot) {
  void* h = dlopen(lib_path("checks").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<int32_t (*)(DLTensor*, DLTensor*)>(dlsym(h, "relu"));
  auto err = reinterpret_cast<const char* (*)()>(dlsym(h, "loom_get_last_error"));
  ASSERT_TRUE(fn && err);
  loom_set_last_error("libloom's slot");
  xt.ndim = 1;
  EXPECT_EQ(fn(&xt, &yt), LOOM_ERR_ARGUMENT);  // the plain C entry checks as well
  EXPECT_NE(std::string(err()).find("wrong number of dimensions"), std::string::npos) << err();
  EXPECT_EQ(std::string(loom_get_last_error()), "libloom's slot");
  dlclose(h);
}

TEST(Export, TwoLibrariesWithTheSameNamesInOneProcess) {
  // Same function name, different computations, both loaded RTLD_GLOBAL next to libloom.
  auto make = [](bool add, const std::string& file) {
    te::Tensor a = te::placeholder({64}, f32, "a"), b = te::placeholder({64}, f32, "b");
    te::Tensor c = add ? te::ops::add(a, b, "c") : te::ops::multiply(a, b, "c");
    Schedule s = create_schedule({c});
    s[c].parallel(s[c].axis(0));
    build(s, {a, b, c}, Target("llvm"), "op").export_library(lib_path(file));
  };
  make(true, "twin_add");
  make(false, "twin_mul");
  void* h1 = dlopen(lib_path("twin_add").c_str(), RTLD_NOW | RTLD_GLOBAL);
  void* h2 = dlopen(lib_path("twin_mul").c_str(), RTLD_NOW | RTLD_GLOBAL);
  ASSERT_TRUE(h1 && h2) << dlerror();
  using Fn = int32_t (*)(DLTensor*, DLTensor*, DLTensor*);
  using Err = const char* (*)();
  auto f1 = reinterpret_cast<Fn>(dlsym(h1, "op")), f2 = reinterpret_cast<Fn>(dlsym(h2, "op"));
  auto e1 = reinterpret_cast<Err>(dlsym(h1, "loom_get_last_error"));
  auto e2 = reinterpret_cast<Err>(dlsym(h2, "loom_get_last_error"));
  ASSERT_TRUE(f1 && f2 && e1 && e2 && e1 != e2);
  NDArray a = random_array({64}, 1), b = random_array({64}, 2), c = NDArray::empty({64}, f32);
  ASSERT_EQ(f1(a.dltensor(), b.dltensor(), c.dltensor()), 0) << e1();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]);
  ASSERT_EQ(f2(a.dltensor(), b.dltensor(), c.dltensor()), 0) << e2();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] * b.data<float>()[i]);

  loom_set_last_error("");
  EXPECT_EQ(f1(nullptr, b.dltensor(), c.dltensor()), LOOM_ERR_ARGUMENT);
  EXPECT_NE(std::string(e1()).find("op: argument 0 ('a') is null"), std::string::npos) << e1();
  EXPECT_EQ(std::string(e2()), "");
  EXPECT_EQ(std::string(loom_get_last_error()), "");
  dlclose(h2);
  dlclose(h1);
}

TEST(Export, MultipleSchedulesInOneModule) {
  auto lower_one = [](const std::string& name, bool relu) {
    te::Tensor x = te::placeholder({10}, f32, "x");
    te::Tensor y = relu ? te::ops::relu(x, "y") : te::ops::exp(x, "y");
    return lowering::lower(create_schedule({y}), {x, y}, name);
  };
  Module jit = codegen::build({lower_one("my_relu", true), lower_one("my_exp", false)}, Target("llvm"));
  jit.export_library(lib_path("two"));
  Module back = Module::load(lib_path("two"));
  EXPECT_EQ(back.function_names(), (std::vector<std::string>{"my_relu", "my_exp"}));
  NDArray x = random_array({10}, 5), y1 = NDArray::empty({10}, f32), y2 = NDArray::empty({10}, f32);
  for (const char* f : {"my_relu", "my_exp"}) {
    jit.get_function(f)(x, y1);
    back.get_function(f)(x, y2);
    EXPECT_TRUE(same_bytes(y1, y2)) << f;
  }
  std::string header = read_file(work_dir() / "libtwo.h");
  EXPECT_NE(header.find("int32_t my_relu(DLTensor* x, DLTensor* y);"), std::string::npos) << header;
  EXPECT_NE(header.find("int32_t my_exp(DLTensor* x, DLTensor* y);"), std::string::npos) << header;
}

TEST(Export, OlderAndNewerX86CpusLoadAndRun) {
#if defined(__x86_64__)
  for (const char* cpu : {"x86-64", "x86-64-v3"}) {
    SCOPED_TRACE(cpu);
    if (std::string(cpu) == "x86-64-v3" &&
        !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")))
      GTEST_SKIP() << "this host cannot run x86-64-v3 code";
    Target t(fmt::format("llvm -mcpu={}", cpu));
    Module jit = build_matmul("mm", 21, 33, 17, t);
    // The baseline build must not use AVX: it is meant for older machines.
    if (std::string(cpu) == "x86-64") EXPECT_EQ(jit.source("asm").find("%ymm"), std::string::npos);
    std::string path = lib_path(fmt::format("mm_{}", cpu == std::string("x86-64") ? "v1" : "v3"));
    jit.export_library(path);
    NDArray a = random_array({21, 33}, 1), b = random_array({33, 17}, 2);
    NDArray c1 = NDArray::empty({21, 17}, f32), c2 = NDArray::empty({21, 17}, f32);
    jit.get_function("mm")(a, b, c1);
    Module::load(path).get_function("mm")(a, b, c2);
    EXPECT_TRUE(same_bytes(c1, c2));
    auto info = nlohmann::json::parse(Module::load(path).info_json());
    EXPECT_EQ(info["target"], t.str());
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(Export, Aarch64ObjectAndLinker) {
  Target t("llvm -mtriple=aarch64-linux-gnu");
  Module m = build_matmul("mm_arm", 8, 8, 8, t);
  std::string obj = (work_dir() / "mm_arm.o").string();
  m.export_object(obj);
  EXPECT_EQ(read_elf(obj).machine, EM_AARCH64);
  std::string lib = lib_path("mm_arm");
  bool have_linker = std::getenv("LOOM_CC") == nullptr && system("command -v aarch64-linux-gnu-gcc >/dev/null 2>&1") == 0;
  if (std::getenv("LOOM_CC")) GTEST_SKIP() << "LOOM_CC is set";
  if (have_linker) {
    m.export_library(lib);
    EXPECT_EQ(read_elf(lib).machine, EM_AARCH64);
  } else {
    try {
      m.export_library(lib);
      FAIL() << "expected a missing-linker error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no linker for aarch64-linux-gnu (install gcc-aarch64-linux-gnu or set LOOM_CC)"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(read_elf(work_dir() / "libmm_arm.o").machine, EM_AARCH64);
    EXPECT_FALSE(fs::exists(lib));
  }
}

/// The device-code container, written by hand as docs/deploy.md describes it.
TEST(Export, LoaderReadsDeviceBlobContainer) {
  std::string ptx = "// ptx of kernel k\n.version 8.0\n";
  auto c_source = [&](const char* magic) {
    std::string bytes(magic, 8);
    auto put = [&](uint64_t v, int n) {
      for (int i = 0; i < n; ++i) bytes.push_back(char((v >> (8 * i)) & 0xff));
    };
    uint64_t name_off = 24 + 40, data_off = 80, total = data_off + ptx.size();
    put(1, 4), put(1, 4), put(total, 8);
    put(1, 4), put(0, 4), put(name_off, 8), put(1, 8), put(data_off, 8), put(ptx.size(), 8);
    bytes += "k";
    bytes.resize(data_off, '\0');
    bytes += ptx;
    std::string arr;
    for (unsigned char c : bytes) arr += fmt::format("{},", int(c));
    return fmt::format(
        "const unsigned char __loom_device_blobs[] __attribute__((aligned(16))) = {{{}}};\n"
        "const char* loom_module_function_names(void) {{ return \"\"; }}\n",
        arr);
  };
  for (const char* magic : {"LOOMDEV\0", "BADMAGIC"}) {
    fs::path src = work_dir() / "blobs.c", so = work_dir() / (magic[0] == 'L' ? "libblobs.so" : "libbadblobs.so");
    std::ofstream(src) << c_source(magic);
    std::string out;
    ASSERT_EQ(run({"cc", "-shared", "-fPIC", "-o", so.string(), src.string()}, host_env(), &out), 0) << out;
    if (magic[0] == 'L') {
      Module m = Module::load(so.string());
      EXPECT_EQ(m.source("ptx"), ptx);
      EXPECT_EQ(m.function_names(), std::vector<std::string>{});
    } else {
      EXPECT_THROW(Module::load(so.string()), Error);
    }
  }
}

TEST(Export, LoadErrors) {
  EXPECT_THROW(Module::load((work_dir() / "missing.so").string()), Error);
  fs::path src = work_dir() / "notloom.c", so = work_dir() / "libnotloom.so";
  std::ofstream(src) << "int answer(void) { return 42; }\n";
  std::string out;
  ASSERT_EQ(run({"cc", "-shared", "-fPIC", "-o", so.string(), src.string()}, host_env(), &out), 0) << out;
  try {
    Module::load(so.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a loom module"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
