#include "loom/runtime/module.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"

using loom::DataType;
using loom::runtime::Module;
using loom::runtime::ModuleNode;
using loom::runtime::NDArray;
using loom::runtime::PackedFunc;

namespace fs = std::filesystem;

namespace {

// A library following the contract in runtime/dso_module.cc, as export_library writes it.
constexpr const char* kLibrarySource = R"(
#include <stdint.h>
#include <stdio.h>
typedef struct { void* data; } Tensor;  /* DLTensor begins with its data pointer */
static char last_error[256];
const char* __loom_get_last_error(void) { return last_error; }
#ifndef NO_NAMES
const char* loom_module_function_names(void) { return "add_one\nfail_always\n"; }
#endif
const char* loom_module_info(void) {
  return "{\"functions\": [{\"name\": \"add_one\", \"args\": [{\"name\": \"A\", \"shape\": [1]}]},"
         " {\"name\": \"fail_always\", \"args\": []}], \"name\": \"not a function\", \"target\": \"llvm\"}";
}
int32_t __loom_packed_add_one(Tensor** args, int32_t n) {
  if (n != 1) { snprintf(last_error, sizeof last_error, "add_one: expected 1 argument, got %d", n); return -1; }
  ((float*)args[0]->data)[0] += 1.0f;
  return 0;
}
int32_t __loom_packed_fail_always(Tensor** args, int32_t n) {
  snprintf(last_error, sizeof last_error, "fail_always: as designed");
  return -2;
}
)";

class ModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom_module_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "lib.c") << kLibrarySource;
    std::ofstream(dir_ / "empty.c") << "int not_loom(void) { return 0; }\n";
    std::ofstream(dir_ / "garbage.so") << "not an ELF file";
    ok_ = compile("lib.c", "lib.so", "") && compile("lib.c", "lib_info_only.so", "-DNO_NAMES") &&
          compile("empty.c", "empty.so", "");
    if (!ok_) GTEST_SKIP() << "no C compiler (cc) to build the test libraries";
  }
  void TearDown() override { fs::remove_all(dir_); }

  bool compile(const std::string& src, const std::string& out, const std::string& flags) {
    std::string cmd = "cc -shared -fPIC " + flags + " -o '" + path(out) + "' '" + path(src) + "' 2>/dev/null";
    return std::system(cmd.c_str()) == 0;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  bool ok_ = false;
};

}  // namespace

TEST_F(ModuleTest, LoadAndCall) {
  Module m = Module::load(path("lib.so"));
  EXPECT_EQ(m->type_key(), "dso");
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"add_one", "fail_always"}));
  NDArray a = NDArray::from_vector({41.0}, {1}, DataType::Float(32));
  m.get_function("add_one")(a);
  EXPECT_EQ(a.get(0), 42.0);
  EXPECT_NE(m.info_json().find("\"add_one\""), std::string::npos);
}

TEST_F(ModuleTest, ErrorsComeFromTheLibrary) {
  Module m = Module::load(path("lib.so"));
  PackedFunc f = m.get_function("add_one");
  NDArray a = NDArray::empty({1}, DataType::Float(32));
  try {
    f(a, a);
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_STREQ(e.what(), "add_one: expected 1 argument, got 2");
  }
  EXPECT_EQ(m.get_function("fail_always").call_status({}), -2);
  EXPECT_STREQ(loom_get_last_error(), "fail_always: as designed");
}

TEST_F(ModuleTest, MissingFunctionListsAvailableOnes) {
  Module m = Module::load(path("lib.so"));
  try {
    m.get_function("matmul");
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("add_one, fail_always"), std::string::npos) << msg;
  }
  EXPECT_FALSE(m->get_function("matmul").defined());
}

TEST_F(ModuleTest, NamesFromInfoJsonWhenNoNameList) {
  Module m = Module::load(path("lib_info_only.so"));
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"add_one", "fail_always"}));
}

TEST_F(ModuleTest, LoadFailuresThrow) {
  EXPECT_THROW(Module::load(path("missing.so")), loom::Error);
  try {
    Module::load(path("garbage.so"));
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("garbage.so"), std::string::npos) << e.what();
  }
  try {
    Module::load(path("empty.so"));
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a loom module"), std::string::npos) << e.what();
  }
}

TEST_F(ModuleTest, FunctionKeepsLibraryAliveAndReexport) {
  PackedFunc f;
  {
    Module m = Module::load(path("lib.so"));
    f = m.get_function("add_one");
    m.export_library(path("copy.so"));
  }
  NDArray a = NDArray::from_vector({1.0}, {1}, DataType::Float(32));
  f(a);
  EXPECT_EQ(a.get(0), 2.0);
  Module copy = Module::load(path("copy.so"));
  copy.get_function("add_one")(a);
  EXPECT_EQ(a.get(0), 3.0);
}

namespace {
struct InMemoryNode : ModuleNode {
  std::string type_key() const override { return "in_memory"; }
  PackedFunc get_function(const std::string& name) override {
    if (name != "negate") return {};
    return PackedFunc("negate", [](DLTensor** args, int32_t n) -> int32_t {
      if (n != 1) {
        loom_set_last_error("expected one tensor");
        return LOOM_ERR_ARGUMENT;
      }
      float* p = static_cast<float*>(args[0]->data);
      p[0] = -p[0];
      return 0;
    });
  }
  std::vector<std::string> function_names() const override { return {"negate"}; }
};
}  // namespace

TEST(Module, PackedFuncStatusAndExportDefault) {
  Module m(std::make_shared<InMemoryNode>());
  NDArray a = NDArray::from_vector({2.0}, {1}, DataType::Float(32));
  m.get_function("negate")(a);
  EXPECT_EQ(a.get(0), -2.0);
  EXPECT_EQ(m.get_function("negate").call_status({}), LOOM_ERR_ARGUMENT);
  try {
    m.get_function("negate").call({});
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_STREQ(e.what(), "negate: expected one tensor");
  }
  try {
    m.export_library("/tmp/never_written.so");
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("module of type in_memory cannot be exported"), std::string::npos);
  }
  EXPECT_THROW(PackedFunc().call({}), loom::Error);
  EXPECT_THROW(Module().get_function("x"), loom::Error);
}
