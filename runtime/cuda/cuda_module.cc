// The module of CUDA kernels: PTX loaded lazily into the device, and one packed function
// per plan that checks its arguments and launches the kernels in order.
#include <fmt/ranges.h>

#include <atomic>
#include <map>
#include <mutex>

#include "cuda_driver.h"
#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"

namespace loom::runtime {
namespace {

std::atomic<CudaLibraryExporter>& library_exporter() {
  static std::atomic<CudaLibraryExporter> exporter{nullptr};
  return exporter;
}

using cuda::CUfunction;
using cuda::CUmodule;

class CudaModuleNode : public ModuleNode, public std::enable_shared_from_this<CudaModuleNode> {
 public:
  CudaModuleNode(std::string ptx, std::string src, std::vector<CudaFunctionPlan> funcs, std::string target)
      : ptx_(std::move(ptx)), src_(std::move(src)), funcs_(std::move(funcs)), target_(std::move(target)) {}
  ~CudaModuleNode() override {
    if (module_ && cuda_available()) cuda::driver().cuModuleUnload(module_);
  }

  std::string type_key() const override { return "cuda"; }

  PackedFunc get_function(const std::string& name) override {
    for (size_t i = 0; i < funcs_.size(); ++i)
      if (funcs_[i].name == name) {
        auto self = shared_from_this();  // the function keeps its module loaded
        return PackedFunc::from_throwing(
            name, [self, i](DLTensor** args, int32_t n) { self->run(self->funcs_[i], args, n); });
      }
    return PackedFunc();
  }

  std::vector<std::string> function_names() const override {
    std::vector<std::string> names;
    for (const auto& f : funcs_) names.push_back(f.name);
    return names;
  }

  std::string source(const std::string& kind) const override {
    if (kind == "cuda") return src_;
    if (kind == "ptx") return ptx_;
    return "";
  }

  void export_library(const std::string& path) override {
    CudaLibraryExporter exporter = library_exporter().load();
    LOOM_CHECK(exporter != nullptr, "export_library('{}'): no exporter for cuda modules is registered (the codegen "
               "layer of libloom provides it)", path);
    exporter(ptx_, funcs_, target_, path);
  }
  void export_object(const std::string& path) override {
    fail("export_object('{}'): cuda modules have no host object file; use export_library", path);
  }

  std::string info_json() const override {
    std::string out = fmt::format("{{\"type\": \"cuda\", \"target\": \"{}\", \"functions\": [", target_);
    for (size_t i = 0; i < funcs_.size(); ++i) {
      const auto& f = funcs_[i];
      out += fmt::format("{}{{\"name\": \"{}\", \"kernels\": {}, \"args\": [", i ? ", " : "", f.name, f.launches.size());
      for (size_t j = 0; j < f.args.size(); ++j)
        out += fmt::format("{}{{\"name\": \"{}\", \"dtype\": \"{}\", \"shape\": [{}]}}", j ? ", " : "", f.args[j].name,
                           f.args[j].dtype.str(), fmt::join(f.args[j].shape, ", "));
      out += "]}";
    }
    return out + "]}";
  }

 private:
  static void check_arg(const CudaFunctionPlan& f, size_t i, const DLTensor* t) {
    const CudaArgSpec& a = f.args[i];
    std::string who = fmt::format("{}: argument {} ('{}')", f.name, i, a.name);
    LOOM_CHECK(t != nullptr, "{} is null", who);
    LOOM_CHECK(t->device.device_type == kDLCUDA, "{} must be on the GPU (device type kDLCUDA)", who);
    LOOM_CHECK(t->device.device_id == 0, "{} must be on CUDA device 0", who);
    LOOM_CHECK(t->ndim == int(a.shape.size()), "{} has the wrong number of dimensions: must be {}", who,
               a.shape.size());
    LOOM_CHECK(DataType(t->dtype) == a.dtype, "{} has the wrong dtype: must be {}", who, a.dtype.str());
    int64_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
      LOOM_CHECK(t->shape[d] == a.shape[d], "{} has the wrong shape: dimension {} must be {}", who, d, a.shape[d]);
      LOOM_CHECK(!t->strides || t->strides[d] == stride, "{} must be compact row-major: stride of dimension {} must be {}",
                 who, d, stride);
      stride *= a.shape[d];
    }
    LOOM_CHECK(t->byte_offset == 0, "{} must have byte_offset 0", who);
    LOOM_CHECK(t->data != nullptr || stride == 0, "{} has no data", who);
    // Kernels may use 16-byte vector accesses (float4) on buffers.
    LOOM_CHECK(reinterpret_cast<uintptr_t>(t->data) % 16 == 0, "{} data pointer must be aligned to 16 bytes", who);
  }

  CUfunction kernel(const std::string& name) {
    std::lock_guard<std::mutex> lk(mu_);
    const cuda::Driver& d = cuda::driver();
    if (!module_) cuda::check(d.cuModuleLoadData(&module_, ptx_.c_str()), "cuModuleLoadData (loading the PTX)");
    auto it = kernels_.find(name);
    if (it != kernels_.end()) return it->second;
    CUfunction fn = nullptr;
    cuda::check(d.cuModuleGetFunction(&fn, module_, name.c_str()), ("cuModuleGetFunction " + name).c_str());
    kernels_[name] = fn;
    return fn;
  }

  void run(const CudaFunctionPlan& f, DLTensor** args, int32_t n) {
    LOOM_CHECK(n == int32_t(f.args.size()), "{}: expected {} arguments, got {}", f.name, f.args.size(), n);
    for (size_t i = 0; i < f.args.size(); ++i) check_arg(f, i, args[i]);
    const cuda::Driver& d = cuda::driver();
    std::vector<NDArray> temps;
    for (const auto& t : f.temps) temps.push_back(NDArray::empty({t.numel}, t.dtype, DLDevice{kDLCUDA, 0}));
    for (const CudaLaunch& l : f.launches) {
      CUfunction fn = kernel(l.kernel);
      CudaLaunchParams params(l, [&](int b) {
        LOOM_ICHECK(b >= 0 && size_t(b) < f.args.size() + temps.size());
        return size_t(b) < f.args.size() ? args[b]->data : temps[b - f.args.size()].raw_data();
      });
      cuda::check(d.cuLaunchKernel(fn, unsigned(l.grid[0]), unsigned(l.grid[1]), unsigned(l.grid[2]),
                                   unsigned(l.block[0]), unsigned(l.block[1]), unsigned(l.block[2]), 0, nullptr,
                                   params.data(), nullptr),
                  ("cuLaunchKernel " + l.kernel).c_str());
    }
    if (!temps.empty()) cuda_synchronize();  // temporaries are freed when this returns
  }

  std::string ptx_, src_;
  std::vector<CudaFunctionPlan> funcs_;
  std::string target_;
  std::mutex mu_;
  CUmodule module_ = nullptr;
  std::map<std::string, CUfunction> kernels_;
};

}  // namespace

CudaLaunchParams::CudaLaunchParams(const CudaLaunch& launch, const std::function<void*(int)>& buffer) {
  ptrs_.reserve(launch.buffers.size());  // params_ points into these: no reallocation after
  i32s_.reserve(launch.scalars.size());
  i64s_.reserve(launch.scalars.size());
  for (int b : launch.buffers) ptrs_.push_back(buffer(b));
  for (void*& p : ptrs_) params_.push_back(&p);
  for (size_t s = 0; s < launch.scalars.size(); ++s) {
    if (launch.scalar_is_64[s]) {
      i64s_.push_back(launch.scalars[s]);
      params_.push_back(&i64s_.back());
    } else {
      i32s_.push_back(int32_t(launch.scalars[s]));
      params_.push_back(&i32s_.back());
    }
  }
}

void set_cuda_library_exporter(CudaLibraryExporter exporter) { library_exporter().store(exporter); }

Module make_cuda_module(std::string ptx, std::string cuda_source, std::vector<CudaFunctionPlan> funcs,
                        std::string target) {
  for (const auto& f : funcs)
    for (const auto& l : f.launches)
      for (int k = 0; k < 3; ++k)
        LOOM_CHECK(l.grid[k] >= 1 && l.block[k] >= 1, "{}: kernel {} has an empty launch extent", f.name, l.kernel);
  return Module(std::make_shared<CudaModuleNode>(std::move(ptx), std::move(cuda_source), std::move(funcs),
                                                 std::move(target)));
}

}  // namespace loom::runtime
