// Operator libraries refuse an output that shares memory with another argument, as graph
// libraries do (the compiled code takes its arguments not to alias): a loom::Error from the C++
// Module, LOOM_ERR_ARGUMENT and loom_get_last_error() at the exported C ABI. A graph module's
// run_profile refuses kernel times placed on an input.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/process_util.h"
#include "loom/codegen/build.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/compile.h"
#include "loom/runtime/c_runtime_api.h"
#include "loom/te/ops.h"

namespace loom {
namespace {

using runtime::Module;
using runtime::NDArray;
const DataType f32 = DataType::Float(32);

/// relu(X) → Y and X + W → Z over float32[4,8].
Module build_relu_add() {
  te::Tensor X = te::placeholder({4, 8}, f32, "X");
  te::Tensor W = te::placeholder({4, 8}, f32, "W");
  te::Tensor Y = te::ops::relu(X, "Y");
  te::Tensor Z = te::compute({4, 8}, [&](te::Var i, te::Var j) { return X(i, j) + W(i, j); }, "Z");
  schedule::Schedule s = schedule::create_schedule({Y, Z});
  return codegen::build(s, {X, W, Y, Z}, Target("llvm"), "relu_add");
}

/// A [4,8] float32 view `offset_floats` into `base`.
DLTensor view(const NDArray& base, int64_t offset_floats, int64_t* shape) {
  DLTensor t = *base.dltensor();
  t.data = static_cast<float*>(t.data) + offset_floats;
  t.shape = shape;
  t.ndim = 2;
  return t;
}

std::string error_of(const Module& m, std::vector<DLTensor*> args) {
  try {
    m.get_function("relu_add").call(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AliasArgs, AnOutputMustNotShareMemoryWithAnotherArgument) {
  Module m = build_relu_add();
  NDArray buf = NDArray::empty({4 * 32}, f32);  // room for four [4,8] tensors side by side
  buf.fill_random(2);
  int64_t shape[2] = {4, 8};
  DLTensor x = view(buf, 0, shape), w = view(buf, 32, shape), y = view(buf, 64, shape), z = view(buf, 96, shape);
  EXPECT_EQ(error_of(m, {&x, &w, &y, &z}), "") << "adjacent tensors do not overlap";
  for (int i = 0; i < 32; ++i) {
    float xv = static_cast<float*>(x.data)[i], wv = static_cast<float*>(w.data)[i];
    EXPECT_EQ(static_cast<float*>(y.data)[i], std::max(xv, 0.0f));
    EXPECT_EQ(static_cast<float*>(z.data)[i], xv + wv);
  }
  EXPECT_EQ(error_of(m, {&x, &x, &y, &z}), "") << "inputs may share memory";

  DLTensor y_on_x = view(buf, 0, shape), y_into_w = view(buf, 40, shape), z_into_y = view(buf, 70, shape);
  struct Case {
    std::vector<DLTensor*> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{&x, &w, &y_on_x, &z}, "relu_add: argument 2 ('Y') overlaps argument 0 ('X'): an output must not share memory"},
      {{&x, &w, &y_into_w, &z}, "argument 2 ('Y') overlaps argument 1 ('W')"},
      {{&x, &w, &y, &z_into_y}, "argument 3 ('Z') overlaps argument 2 ('Y')"},
      {{&x, &w, &y, &x}, "argument 3 ('Z') overlaps argument 0 ('X')"},
  };
  for (const Case& c : cases) {
    std::string e = error_of(m, c.args);
    EXPECT_NE(e.find(c.message), std::string::npos) << c.message << ": got " << e;
    EXPECT_EQ(m.get_function("relu_add").call_status(c.args), LOOM_ERR_ARGUMENT);
  }
}

TEST(AliasArgs, TheExportedCAbiRefusesAnAliasedOutput) {
  const std::string lib = (test::scratch_dir("loom-alias-test") / "librelu_add.so").string();
  build_relu_add().export_library(lib);
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<int32_t (*)(DLTensor*, DLTensor*, DLTensor*, DLTensor*)>(dlsym(h, "relu_add"));
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(h, "loom_get_last_error"));
  ASSERT_TRUE(fn && last_error);
  NDArray x = NDArray::empty({4, 8}, f32), w = NDArray::empty({4, 8}, f32), z = NDArray::empty({4, 8}, f32);
  x.fill_random(1);
  w.fill_random(2);
  NDArray x_before = x.copy();
  EXPECT_EQ(fn(x.dltensor(), w.dltensor(), x.dltensor(), z.dltensor()), LOOM_ERR_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("argument 2 ('Y') overlaps argument 0 ('X')"), std::string::npos)
      << last_error();
  EXPECT_EQ(std::memcmp(x.raw_data(), x_before.raw_data(), x.nbytes()), 0);
  NDArray y = NDArray::empty({4, 8}, f32);
  EXPECT_EQ(fn(x.dltensor(), w.dltensor(), y.dltensor(), z.dltensor()), 0) << last_error();
  dlclose(h);
}

TEST(AliasArgs, ExportRefusesReservedFunctionNames) {
  te::Tensor X = te::placeholder({4}, f32, "X");
  te::Tensor Y = te::ops::relu(X, "Y");
  schedule::Schedule s = schedule::create_schedule({Y});
  const std::string lib = (test::scratch_dir("loom-alias-test") / "libreserved.so").string();
  for (const char* name : {"loom_get_last_error", "__loom_packed_x", "memcpy", "main"}) {
    Module m = codegen::build(s, {X, Y}, Target("llvm"), name);
    try {
      m.export_library(lib);
      ADD_FAILURE() << name << ": exported";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("the function name '{}'", name)), std::string::npos) << e.what();
    }
    EXPECT_NE(codegen::export_name_problem(name), "");
  }
  EXPECT_EQ(codegen::export_name_problem("relu_4"), "");
}

TEST(AliasArgs, GraphRunProfileRefusesTimesOnAnInput) {
  graph_opt::GraphBuilder b("g");
  graph_opt::Value x = b.input("x", {{16}, f32, ""});
  b.output(b.relu(x, "r"));
  Module m = graph_opt::compile(b.build(), Target("llvm"));
  NDArray xin = NDArray::empty({16}, f32), y = NDArray::empty({16}, f32);
  xin.fill_random(4);
  NDArray before = xin.copy();
  DLTensor times = *xin.dltensor();
  int64_t kernels = 1;
  times.shape = &kernels;
  times.dtype = {kDLFloat, 64, 1};
  try {
    m.get_function("run_profile").call({xin.dltensor(), y.dltensor(), &times});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the kernel times (the last argument) overlap input 0 ('x')"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(std::memcmp(xin.raw_data(), before.raw_data(), xin.nbytes()), 0);
}

}  // namespace
}  // namespace loom
