// CUDA C to PTX with NVRTC, opened with dlopen (libnvrtc.so*, then /usr/local/cuda/lib64)
// so that libloom builds and runs where CUDA is absent.
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "loom/codegen/cuda.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct Nvrtc {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  bool ok = false;
  std::string reason;
};

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

Nvrtc load() {
  Nvrtc n{};
  std::vector<std::string> candidates = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"};
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu"})
    for (const char* f : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"})
      candidates.push_back(std::string(dir) + "/" + f);
  void* lib = nullptr;
  std::string errors;
  for (const auto& c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
  }
  if (!lib) {
    n.reason = "libnvrtc.so could not be loaded (searched the library path and /usr/local/cuda/lib64)";
    return n;
  }
  std::string missing;
  auto need = [&](const char* name, auto*& fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need("nvrtcGetErrorString", n.GetErrorString);
  need("nvrtcVersion", n.Version);
  need("nvrtcCreateProgram", n.CreateProgram);
  need("nvrtcDestroyProgram", n.DestroyProgram);
  need("nvrtcCompileProgram", n.CompileProgram);
  need("nvrtcGetPTXSize", n.GetPTXSize);
  need("nvrtcGetPTX", n.GetPTX);
  need("nvrtcGetProgramLogSize", n.GetProgramLogSize);
  need("nvrtcGetProgramLog", n.GetProgramLog);
  if (!missing.empty()) {
    n.reason = "libnvrtc lacks " + missing;
    return n;
  }
  n.ok = true;
  return n;
}

const Nvrtc& nvrtc() {
  static const Nvrtc n = load();
  return n;
}

std::string normalize_arch(const std::string& arch) {
  std::string a = arch;
  for (const char* p : {"sm_", "compute_"})
    if (a.rfind(p, 0) == 0) a = a.substr(std::string(p).size());
  LOOM_CHECK(!a.empty() && std::all_of(a.begin(), a.end(), [](char c) { return std::isdigit(c) || c == 'a'; }),
             "CUDA: architecture '{}' is not of the form sm_XX", arch);
  return a;
}

}  // namespace

bool nvrtc_available() { return nvrtc().ok; }
std::string nvrtc_unavailable_reason() { return nvrtc().reason; }

std::string compile_to_ptx(const std::string& src, const std::string& arch, bool fast_math) {
  const Nvrtc& n = nvrtc();
  LOOM_CHECK(n.ok, "CUDA: cannot compile kernels: {}", n.reason);
  std::vector<std::string> opts = {"--gpu-architecture=compute_" + normalize_arch(arch), "-default-device",
                                   "-std=c++17"};
  if (fast_math) opts.push_back("--use_fast_math");
  if ((src.find("cuda_fp16.h") != std::string::npos || src.find("<mma.h>") != std::string::npos) &&
      exists("/usr/local/cuda/include/cuda_fp16.h"))
    opts.push_back("-I/usr/local/cuda/include");
  std::vector<const char*> copts;
  for (const auto& o : opts) copts.push_back(o.c_str());
  nvrtcProgram prog = nullptr;
  nvrtcResult r = n.CreateProgram(&prog, src.c_str(), "loom_kernels.cu", 0, nullptr, nullptr);
  LOOM_CHECK(r == 0, "CUDA: nvrtcCreateProgram failed: {}", n.GetErrorString(r));
  r = n.CompileProgram(prog, int(copts.size()), copts.data());
  size_t log_size = 0;
  n.GetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) n.GetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (r != 0) {
    n.DestroyProgram(&prog);
    fail("CUDA: NVRTC could not compile the kernels for {} ({}):\n{}", arch, n.GetErrorString(r), log);
  }
  size_t ptx_size = 0;
  n.GetPTXSize(prog, &ptx_size);
  std::string ptx(ptx_size, '\0');
  n.GetPTX(prog, ptx.data());
  n.DestroyProgram(&prog);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

std::string cuda_arch(const Target& target) {
  if (target.has("arch")) return "sm_" + normalize_arch(target.get("arch"));
  if (runtime::cuda_available()) return fmt::format("sm_{}", runtime::cuda_compute_capability(0));
  return "sm_80";
}

}  // namespace loom::codegen
