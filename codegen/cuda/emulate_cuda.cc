// build_cuda_emulated: the CUDA C that build_cuda gives NVRTC, compiled instead with the host
// C++ compiler against a model of CUDA's execution (codegen/module_runtime/cuda_emulation.h)
// and run on the CPU, with the same launch plans. It checks generated kernels without a GPU:
// their indexing (every buffer ends at a page the process may not touch, so an access past
// the end of an argument, a temporary or a shared array faults and is reported), barriers
// (each call runs twice, the second time with blocks and threads in the opposite order; a
// difference is a race) and results (compared by the caller with te::evaluate).
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <regex>

#include "../llvm/toolchain.h"
#include "codegen_cuda_internal.h"
#include "loom/codegen/cuda.h"
#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"
#include "loom_cuda_emulation_source.h"

namespace loom::codegen {

namespace {

namespace fs = std::filesystem;
using runtime::CudaFunctionPlan;

using LaunchFn = int (*)(void (*)(void**), void**, const unsigned*, const unsigned*, int, char*, size_t, void**);
using EntryFn = void (*)(void**);

/// The C++ compiler: $LOOM_CXX, else c++, g++ or clang++ on PATH.
std::vector<std::string> find_cxx_compiler() {
  if (const char* env = std::getenv("LOOM_CXX"); env && *env) {
    LOOM_CHECK(!find_program(env).empty(), "CUDA emulation: LOOM_CXX is '{}', which is not an executable", env);
    return {env};
  }
  for (const char* c : {"c++", "g++", "clang++"})
    if (std::string p = find_program(c); !p.empty()) return {p};
  fail("CUDA emulation: no C++ compiler (install g++ or set LOOM_CXX)");
}

/// What of the source the emulation does not model, or "".
std::string unmodeled(const std::string& src) {
  if (src.find("nvcuda::wmma") != std::string::npos) return "WMMA fragments (nvcuda::wmma)";
  if (src.find("asm(") != std::string::npos || src.find("asm volatile") != std::string::npos) return "inline PTX";
  return "";
}

/// Rewrites every `__shared__ __align__(A) T name[N];` into a shared_array() call; throws when
/// a __shared__ remains (a declaration of another form).
std::string rewrite_shared(const std::string& src) {
  static const std::regex decl(R"(__shared__ __align__\((\d+)\) ([A-Za-z_][A-Za-z0-9_ ]*?) ([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\];)");
  std::string out;
  int id = 0;
  auto begin = std::sregex_iterator(src.begin(), src.end(), decl);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out += src.substr(last, size_t(m.position()) - last);
    out += fmt::format("{0}* const {1} = ::loom_emu::shared_array<{0}>({2}, {3}, {4});", m[2].str(), m[3].str(), id++,
                       m[4].str(), m[1].str());
    last = size_t(m.position() + m.length());
  }
  out += src.substr(last);
  LOOM_CHECK(out.find("__shared__") == std::string::npos,
             "CUDA emulation: a __shared__ declaration of a form it does not know:\n{}",
             out.substr(out.find("__shared__"), 200));
  return out;
}

/// One wrapper per kernel, `loom_emu_entry_<kernel>(void** params)`, that calls it with its
/// typed parameters.
std::string entry_wrappers(const std::vector<lowering::LoweredFunc>& funcs) {
  std::string out = "\n// ---- entry points of the emulation (emulate_cuda.cc)\n";
  for (const auto& f : funcs)
    for (const auto& k : f.device_funcs) {
      std::string args;
      size_t i = 0;
      for (; i < k.buffer_params.size(); ++i)
        args += fmt::format("{}*({}**)p[{}]", i ? ", " : "", cuda_c_type(k.buffer_dtypes[i], "kernel " + k.name), i);
      for (size_t s = 0; s < k.scalar_params.size(); ++s, ++i) {
        std::string t = cuda_c_type(k.scalar_params[s].dtype(), "kernel " + k.name);
        args += fmt::format("{}*({}*)p[{}]", i ? ", " : "", t, i);
      }
      out += fmt::format(
          "extern \"C\" __attribute__((visibility(\"default\"))) void loom_emu_entry_{0}(void** p) {{ {0}({1}); }}\n",
          k.name, args);
    }
  return out;
}

/// Device memory of the emulation: host pages whose data ends at a page the process may not
/// touch (rounded down to 16 bytes), filled with 0xff bytes.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) : bytes_(bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t body = (bytes + 16 + page - 1) / page * page;
    mapped_ = body + page;
    base_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    LOOM_CHECK(base_ != MAP_FAILED, "CUDA emulation: cannot map {} bytes", mapped_);
    mprotect(static_cast<unsigned char*>(base_) + body, page, PROT_NONE);
    uintptr_t end = reinterpret_cast<uintptr_t>(base_) + body;
    data_ = reinterpret_cast<unsigned char*>((end - bytes) / 16 * 16);
    std::memset(data_, 0xff, bytes);
  }
  ~GuardedBuffer() { munmap(base_, mapped_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  /// The byte offset of `p` from the start of the data when it lies in this mapping.
  std::optional<int64_t> offset_of(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
    if (a < b || a >= b + mapped_) return std::nullopt;
    return int64_t(a) - int64_t(reinterpret_cast<uintptr_t>(data_));
  }

 private:
  size_t bytes_, mapped_;
  void* base_;
  unsigned char* data_;
};

size_t nbytes(DataType t, int64_t numel) { return size_t(numel) * size_t((t.bits() * t.lanes() + 7) / 8); }

/// One compiled emulation library, unloaded with the module.
struct Library {
  void* handle = nullptr;
  LaunchFn launch = nullptr;
  ~Library() {
    if (handle) dlclose(handle);
  }
};

/// The engine keeps its state in the library's statics: one launch at a time per process.
std::mutex& launch_mutex() {
  static std::mutex mu;
  return mu;
}

class EmulatedCudaModuleNode : public runtime::ModuleNode,
                               public std::enable_shared_from_this<EmulatedCudaModuleNode> {
 public:
  EmulatedCudaModuleNode(std::shared_ptr<Library> lib, std::string src, std::vector<CudaFunctionPlan> plans,
                         CudaEmulationOptions opts)
      : lib_(std::move(lib)), src_(std::move(src)), plans_(std::move(plans)), opts_(opts) {
    for (const auto& p : plans_)
      for (const auto& l : p.launches) {
        if (entries_.count(l.kernel)) continue;
        void* sym = dlsym(lib_->handle, ("loom_emu_entry_" + l.kernel).c_str());
        LOOM_CHECK(sym != nullptr, "CUDA emulation: the compiled kernels lack '{}'", l.kernel);
        entries_[l.kernel] = reinterpret_cast<EntryFn>(sym);
      }
  }

  std::string type_key() const override { return "cuda_emulated"; }

  runtime::PackedFunc get_function(const std::string& name) override {
    for (size_t i = 0; i < plans_.size(); ++i)
      if (plans_[i].name == name) {
        auto self = shared_from_this();
        return runtime::PackedFunc::from_throwing(
            name, [self, i](DLTensor** args, int32_t n) { self->run(self->plans_[i], args, n); });
      }
    return runtime::PackedFunc();
  }

  std::vector<std::string> function_names() const override {
    std::vector<std::string> out;
    for (const auto& p : plans_) out.push_back(p.name);
    return out;
  }

  std::string source(const std::string& kind) const override { return kind == "cuda" ? src_ : ""; }

  void export_library(const std::string& path) override {
    fail("export_library('{}'): an emulated cuda module runs in this process only; build for cuda to export", path);
  }
  void export_object(const std::string& path) override {
    fail("export_object('{}'): an emulated cuda module has no object file", path);
  }

 private:
  static void check_arg(const CudaFunctionPlan& f, size_t i, const DLTensor* t) {
    const runtime::CudaArgSpec& a = f.args[i];
    std::string who = fmt::format("{}: argument {} ('{}')", f.name, i, a.name);
    LOOM_CHECK(t != nullptr, "{} is null", who);
    LOOM_CHECK(t->device.device_type == kDLCPU,
               "{} must be host memory (kDLCPU): the emulation's device memory is host memory", who);
    LOOM_CHECK(t->ndim == int(a.shape.size()), "{} has the wrong number of dimensions: must be {}", who,
               a.shape.size());
    LOOM_CHECK(DataType(t->dtype) == a.dtype, "{} has the wrong dtype: must be {}", who, a.dtype.str());
    int64_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
      LOOM_CHECK(t->shape[d] == a.shape[d], "{} has the wrong shape: dimension {} must be {}", who, d, a.shape[d]);
      LOOM_CHECK(!t->strides || t->strides[d] == stride, "{} must be compact row-major", who);
      stride *= a.shape[d];
    }
    LOOM_CHECK(t->byte_offset == 0 && (t->data != nullptr || stride == 0), "{} has no data or a byte_offset", who);
  }

  /// Runs every launch of `f` on guarded copies of the arguments; the copies, in argument
  /// order. Throws naming the kernel on a fault or a barrier not every thread reaches.
  std::vector<std::unique_ptr<GuardedBuffer>> run_once(const CudaFunctionPlan& f, DLTensor** args, bool reverse) {
    std::vector<std::unique_ptr<GuardedBuffer>> bufs;
    for (size_t i = 0; i < f.args.size(); ++i) {
      int64_t numel = 1;
      for (int64_t d : f.args[i].shape) numel *= d;
      bufs.push_back(std::make_unique<GuardedBuffer>(nbytes(f.args[i].dtype, numel)));
      if (bufs.back()->bytes()) std::memcpy(bufs.back()->data(), args[i]->data, bufs.back()->bytes());
    }
    for (const auto& t : f.temps) bufs.push_back(std::make_unique<GuardedBuffer>(nbytes(t.dtype, t.numel)));
    std::lock_guard<std::mutex> lock(launch_mutex());
    for (const runtime::CudaLaunch& l : f.launches) {
      // The wrapper receives pointers to the values, as cuLaunchKernel does.
      runtime::CudaLaunchParams params(l, [&](int b) { return bufs[size_t(b)]->data(); });
      const unsigned grid[3] = {unsigned(l.grid[0]), unsigned(l.grid[1]), unsigned(l.grid[2])};
      const unsigned block[3] = {unsigned(l.block[0]), unsigned(l.block[1]), unsigned(l.block[2])};
      char error[1024] = {0};
      void* fault = nullptr;
      int status = lib_->launch(entries_.at(l.kernel), params.data(), grid, block, reverse ? 1 : 0, error,
                                sizeof error, &fault);
      if (status != 0) {
        std::string where;
        for (size_t b = 0; b < bufs.size() && fault; ++b)
          if (auto off = bufs[b]->offset_of(fault)) {
            std::string name = b < f.args.size() ? fmt::format("argument '{}'", f.args[b].name)
                                                 : fmt::format("temporary {}", b - f.args.size());
            where = *off >= int64_t(bufs[b]->bytes())
                        ? fmt::format(": {} bytes past the end of {} ({} bytes)", *off - int64_t(bufs[b]->bytes()),
                                      name, bufs[b]->bytes())
                        : fmt::format(": {} bytes before the start of {}", -*off, name);
          }
        if (fault && where.empty()) where = ": outside every argument and temporary (a shared array's end, or a wild pointer)";
        fail("{}: kernel {} (emulated, {} order): {}{}", f.name, l.kernel, reverse ? "reverse" : "forward", error,
             where);
      }
    }
    return bufs;
  }

  void run(const CudaFunctionPlan& f, DLTensor** args, int32_t n) {
    LOOM_CHECK(n == int32_t(f.args.size()), "{}: expected {} arguments, got {}", f.name, f.args.size(), n);
    for (size_t i = 0; i < f.args.size(); ++i) check_arg(f, i, args[i]);
    auto forward = run_once(f, args, false);
    if (opts_.check_races) {
      auto backward = run_once(f, args, true);
      for (size_t i = 0; i < f.args.size(); ++i) {
        const size_t bytes = forward[i]->bytes();
        if (std::memcmp(forward[i]->data(), backward[i]->data(), bytes) == 0) continue;
        size_t at = 0;
        while (at < bytes && forward[i]->data()[at] == backward[i]->data()[at]) ++at;
        const size_t elem = at / size_t(std::max(1, f.args[i].dtype.bytes()));
        fail("{}: argument '{}' differs at element {} between running blocks and threads forward and in reverse: "
             "a race (shared memory that no __syncthreads orders) or a dependency between blocks",
             f.name, f.args[i].name, elem);
      }
    }
    for (size_t i = 0; i < f.args.size(); ++i)
      if (forward[i]->bytes()) std::memcpy(args[i]->data, forward[i]->data(), forward[i]->bytes());
  }

  std::shared_ptr<Library> lib_;
  std::string src_;
  std::vector<CudaFunctionPlan> plans_;
  CudaEmulationOptions opts_;
  std::map<std::string, EntryFn> entries_;
};

}  // namespace

std::string cuda_emulation_unsupported(const std::vector<lowering::LoweredFunc>& funcs, const Target& target) {
  CudaCodegenOptions copts;
  copts.fast_math = target.get("fast_math", "1") != "0";
  copts.omit_mma_functions = true;  // cuda_emulation.h models them
  return unmodeled(cuda_source(funcs, copts));
}

runtime::Module build_cuda_emulated(const std::vector<lowering::LoweredFunc>& funcs, const Target& target,
                                    const CudaEmulationOptions& opts) {
  LOOM_CHECK(target.is_cuda(), "build_cuda_emulated: target '{}' is not cuda", target.str());
  std::vector<CudaFunctionPlan> plans;
  for (const auto& f : funcs) plans.push_back(cuda_launch_plan(f));
  CudaCodegenOptions copts;
  copts.fast_math = target.get("fast_math", "1") != "0";
  copts.omit_mma_functions = true;  // cuda_emulation.h models them
  const std::string src = cuda_source(funcs, copts);
  if (std::string what = unmodeled(src); !what.empty())
    fail("CUDA emulation: the kernels use {}, which the emulation does not model (ptxas and a GPU check them)", what);

  TempDir tmp;
  write_file(tmp.path() / "cuda_fp16.h", "// the emulation defines __half\n", "CUDA emulation");
  const std::string program = std::string(kCudaEmulationSource) + "\n#line 1 \"loom_kernels.cu\"\n" +
                              rewrite_shared(src) + entry_wrappers(funcs);
  const fs::path cc = tmp.path() / "kernels.cc", so = tmp.path() / "kernels.so";
  write_file(cc, program, "CUDA emulation");
  std::vector<std::string> cmd = find_cxx_compiler();
  for (const char* a : {"-std=c++17", "-O1", "-g0", "-fPIC", "-shared", "-fno-strict-aliasing", "-fwrapv", "-w",
                        "-fvisibility=hidden", "-ftrivial-auto-var-init=pattern"})
    cmd.push_back(a);
  cmd.insert(cmd.end(), {"-I" + tmp.path().string(), cc.string(), "-o", so.string()});
  std::string log;
  int status = run_command(cmd, tmp.path() / "cxx.log", &log);
  LOOM_CHECK(status == 0, "CUDA emulation: compiling the kernels failed (status {}):\n{}", status, log);
  auto lib = std::make_shared<Library>();
  lib->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  LOOM_CHECK(lib->handle != nullptr, "CUDA emulation: cannot load the compiled kernels: {}", dlerror());
  lib->launch = reinterpret_cast<LaunchFn>(dlsym(lib->handle, "loom_emu_launch"));
  LOOM_CHECK(lib->launch != nullptr, "CUDA emulation: the compiled kernels lack loom_emu_launch");
  return runtime::Module(std::make_shared<EmulatedCudaModuleNode>(std::move(lib), src, std::move(plans), opts));
}

}  // namespace loom::codegen
