// export_library of "cuda" modules without a GPU: the library's dependencies and symbols,
// the embedded PTX read back by Module::load, its info, and its argument checks and clear
// "no CUDA driver/GPU" failure in a fresh process that knows nothing of loom.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
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

#include "common/process_util.h"
#include "loom/codegen/cuda.h"
#include "loom/loom.h"
#include "loom/runtime/cuda.h"
#include "loom/tuner/task.h"


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
using te::Var;

#define SKIP_WITHOUT_NVRTC() \
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "NVRTC not available: " << codegen::nvrtc_unavailable_reason()

const fs::path& work_dir() { return test::scratch_dir("loom-cuda-export-test"); }

/// tests/codegen/cuda_export_loader.c, compiled once with the system C compiler.
const std::string& loader() {
  static std::string exe = [] {
    std::string path = (work_dir() / "cuda_export_loader").string();
    compile_c_program(std::string(LOOM_SOURCE_DIR) + "/tests/codegen/cuda_export_loader.c", path);
    return path;
  }();
  return exe;
}

/// B = A * 2 + 1 on 256 floats, 64 threads per block.
Module build_elementwise(const std::string& name) {
  te::Tensor A = te::placeholder({256}, DataType::Float(32), "A");
  te::Tensor B = te::compute({256}, [&](Var i) { return A(i) * 2.0f + 1.0f; }, "B");
  Schedule s = create_schedule({B});
  auto [bo, bi] = s[B].split(s[B].axis(0), 64);
  s[B].bind(bo, te::thread_axis("blockIdx.x"));
  s[B].bind(bi, te::thread_axis("threadIdx.x"));
  return build(s, {A, B}, Target("cuda -arch=sm_80"), name);
}

/// The first config of the matmul_cuda template (M=128, N=64, K=32) that builds.
Module build_matmul_template(const std::string& name) {
  auto task = tuner::Task::create("matmul_cuda", {128, 64, 32}, Target("cuda"));
  std::string last;
  for (int64_t idx = 0; idx < std::min<int64_t>(int64_t(task.space().size()), 200); ++idx) {
    try {
      tuner::Instance inst = task.instantiate(idx);
      return build(inst.schedule, inst.args, Target("cuda -arch=sm_80"), name);
    } catch (const Error& e) {
      last = e.what();
    }
  }
  throw Error("no matmul_cuda config builds: " + last);
}

/// Checks what every exported cuda library must be; returns its loaded form.
Module check_library(const Module& built, const std::string& path, const std::string& fn) {
  built.export_library(path);
  EXPECT_TRUE(fs::exists(path));
  ElfInfo elf = read_elf(path);
  const std::set<std::string> allowed = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
                                         "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"};
  for (const auto& n : elf.needed) EXPECT_TRUE(allowed.count(n)) << "unexpected dependency " << n;
  EXPECT_TRUE(std::find(elf.needed.begin(), elf.needed.end(), "libc.so.6") != elf.needed.end());
  const std::set<std::string> want = {fn, "__loom_packed_" + fn, "loom_get_last_error", "__loom_get_last_error",
                                      "loom_module_info", "loom_module_function_names", "__loom_device_blobs"};
  EXPECT_EQ(elf.exported, want);

  Module back = Module::load(path);
  EXPECT_EQ(back.source("ptx"), built.source("ptx"));
  EXPECT_NE(back.source("ptx").find(".entry"), std::string::npos);
  EXPECT_EQ(back.function_names(), std::vector<std::string>{fn});
  nlohmann::json info = nlohmann::json::parse(back.info_json());
  EXPECT_EQ(info["type_key"], "cuda");
  EXPECT_EQ(info["target"], "cuda -arch=sm_80");
  EXPECT_EQ(info["functions"].size(), 1u);
  EXPECT_EQ(info["functions"][0]["name"], fn);
  nlohmann::json built_info = nlohmann::json::parse(built.info_json());
  EXPECT_EQ(info["functions"][0]["args"].size(), built_info["functions"][0]["args"].size());

  std::string header = read_file(fs::path(path).replace_extension(".h"));
  EXPECT_NE(header.find("int32_t " + fn + "("), std::string::npos) << header;
  EXPECT_NE(header.find("cuda -arch=sm_80"), std::string::npos) << header;
  return back;
}

/// Calls `fn` of `path` in a fresh process with float32 arguments of `shapes` said to be on
/// `device_type`; returns the loader's exit status and output.
int call_fresh(const std::string& path, const std::string& fn, int device_type,
               const std::vector<std::string>& shapes, std::string* out) {
  std::vector<std::string> argv = {loader(), path, fn, std::to_string(device_type)};
  argv.insert(argv.end(), shapes.begin(), shapes.end());
  return run(argv, {"LD_LIBRARY_PATH=", "PATH=/usr/bin:/bin"}, out);
}

TEST(CudaExport, ElementwiseLibrary) {
  SKIP_WITHOUT_NVRTC();
  Module built = build_elementwise("ew");
  std::string path = (work_dir() / "libew.so").string();
  Module back = check_library(built, path, "ew");

  std::string out;
  int st = call_fresh(path, "ew", kDLCUDA, {"256", "256"}, &out);
  if (!runtime::cuda_available()) {
    EXPECT_EQ(st, 3) << out;
    EXPECT_NE(out.find("status=-2"), std::string::npos) << out;
    EXPECT_NE(out.find("ew: no CUDA driver/GPU"), std::string::npos) << out;
  }
  // Arguments are checked before the driver is touched.
  st = call_fresh(path, "ew", kDLCPU, {"256", "256"}, &out);
  EXPECT_EQ(st, 3) << out;
  EXPECT_NE(out.find("status=-1"), std::string::npos) << out;
  EXPECT_NE(out.find("argument 0 ('A') is on device type 1"), std::string::npos) << out;
  st = call_fresh(path, "ew", kDLCUDA, {"256", "255"}, &out);
  EXPECT_NE(out.find("argument 1 ('B') has the wrong shape: dimension 0 must be 256"), std::string::npos) << out;
  st = call_fresh(path, "ew", kDLCUDA, {"256"}, &out);
  EXPECT_NE(out.find("expected 2 arguments, got 1"), std::string::npos) << out;

  // In this process, through Module::load: a CPU array is rejected naming its device.
  runtime::NDArray a = runtime::NDArray::empty({256}, DataType::Float(32));
  runtime::NDArray b = runtime::NDArray::empty({256}, DataType::Float(32));
  try {
    back.get_function("ew")(a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ew: argument 0 ('A') is on device type 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kDLCUDA"), std::string::npos) << e.what();
  }
}

TEST(CudaExport, MatmulTemplateLibrary) {
  SKIP_WITHOUT_NVRTC();
  Module built = build_matmul_template("mm");
  std::string path = (work_dir() / "libmm.so").string();
  check_library(built, path, "mm");
  nlohmann::json info = nlohmann::json::parse(Module::load(path).info_json());
  ASSERT_EQ(info["functions"][0]["args"].size(), 3u);
  std::vector<std::string> shapes;
  for (const auto& a : info["functions"][0]["args"]) {
    std::string s;
    for (const auto& d : a["shape"]) s += (s.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
    shapes.push_back(s);
  }
  std::string out;
  int st = call_fresh(path, "mm", kDLCUDA, shapes, &out);
  if (!runtime::cuda_available()) {
    EXPECT_EQ(st, 3) << out;
    EXPECT_NE(out.find("mm: no CUDA driver/GPU"), std::string::npos) << out;
  }
  st = call_fresh(path, "mm", kDLCPU, shapes, &out);
  EXPECT_EQ(st, 3) << out;
  EXPECT_NE(out.find("argument 0"), std::string::npos) << out;
  EXPECT_NE(out.find("device type 1"), std::string::npos) << out;
}

/// tests/codegen/cuda_export_fake_driver.c built as libcuda.so.1; returns its directory.
const std::string& fake_driver_dir() {
  static std::string dir = [] {
    fs::path d = work_dir() / "fake_driver";
    fs::create_directories(d);
    std::string out;
    int st = run({"cc", "-std=c11", "-O1", "-shared", "-fPIC",
                  std::string(LOOM_SOURCE_DIR) + "/tests/codegen/cuda_export_fake_driver.c", "-o",
                  (d / "libcuda.so.1").string()},
                 host_env(), &out);
    if (st != 0) throw Error("cannot compile cuda_export_fake_driver.c: " + out);
    return d.string();
  }();
  return dir;
}

TEST(CudaExport, DriverCallsThroughFakeDriver) {
  SKIP_WITHOUT_NVRTC();
  Module built = build_elementwise("ew_drv");
  std::string path = (work_dir() / "libew_drv.so").string();
  built.export_library(path);
  std::string log = (work_dir() / "fake_cuda.log").string();
  std::string out;
  int st = run({loader(), path, "ew_drv", std::to_string(kDLCUDA), "256", "256"},
               {"LD_LIBRARY_PATH=" + fake_driver_dir(), "FAKE_CUDA_LOG=" + log}, &out);
  EXPECT_EQ(st, 0) << out;
  // The driver received exactly the module's PTX, NUL-terminated.
  EXPECT_EQ(read_file(log + ".ptx"), built.source("ptx"));
  std::string calls = read_file(log);
  EXPECT_EQ(calls.find("cuInit"), 0u) << calls;
  // 256 elements, 64 threads per block: 4 blocks, no dynamic shared memory.
  size_t launch = calls.find("launch ");
  ASSERT_NE(launch, std::string::npos) << calls;
  std::string kernel = calls.substr(launch + 7, calls.find(' ', launch + 7) - launch - 7);
  EXPECT_NE(built.source("ptx").find(".entry " + kernel), std::string::npos) << kernel;
  EXPECT_NE(calls.find(" 4 1 1 64 1 1 0\n", launch), std::string::npos) << calls;
  EXPECT_EQ(calls.find("launch ", launch + 1), std::string::npos) << calls;  // one kernel

}

TEST(CudaExport, ExportObjectIsRejectedClearly) {
  SKIP_WITHOUT_NVRTC();
  Module built = build_elementwise("ew_obj");
  try {
    built.export_object((work_dir() / "ew.o").string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use export_library"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
