// GPU benchmark: loom's tuned CUDA kernels next to NVIDIA's libraries, in one run.
//
//   matmul  C = A·B, float32: the "matmul" CUDA template (cuda_gemm.cc) against cuBLAS SGEMM at
//           M = N = K = --size (4096; target 0.9×), 1024³ and 1000×1000×999 (targets 0.8×)
//   conv    conv2d NCHW float32, batch 1, on the ResNet-18 layers (C, H=W, K, kernel, stride,
//           pad): conv2d_nchw_cuda against cuDNN's fastest forward algorithm
//   tensorcore  C = A·B with float16 A, B and float32 accumulation and C, M = N = K = --size:
//           matmul_tensorcore (WMMA) and matmul_mma (mma.sync.m16n8k16, ldmatrix) against
//           cuBLAS's tensor-core GEMM (target 0.8×), cublasGemmEx with
//           float16 inputs and float32 compute and output (HGEMM's inputs; the output type of
//           loom's kernel, so both write the same bytes)
//
// Each workload is tuned with the XGBoost tuner (one JSON-lines log per workload in --log-dir;
// with --resume a rerun reuses the log and only measures the trials missing up to N), or with
// --no-tune only read from existing logs. All tuning comes first: the tuner's measuring
// workers are forked, and CUDA does not survive fork(), so this process touches the GPU only
// afterwards. Then each workload is built from its best record and timed with CUDA events,
// interleaved with its peer (the median of --repeat rounds), and its output is compared with
// the peer's. cuBLAS and cuDNN are opened with dlopen and run in plain FP32 (cuBLAS's default
// math, cuDNN's FMA math: no TF32 tensor cores), so the comparison is like for like.
// Without a GPU it prints a skip line and exits 0.
//
//   bench/gpu_bench [--log-dir DIR] [--trials N] [--conv-trials N] [--resume | --no-tune]
//                   [--sections matmul,conv,tensorcore] [--size N] [--repeat R] [--timeout S]
//                   [--json FILE] [--verbose]
#include <dlfcn.h>
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/runtime/cuda.h>
#include <loom/tuner/build_best.h>
#include <loom/tuner/tuner.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_common.h"
#include "cli.h"

using namespace loom;  // NOLINT
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string log_dir = "gpu_logs";
  int trials = 200;      // matmul
  int conv_trials = 100;  // each conv layer
  bool resume = false, no_tune = false, verbose = false;
  std::vector<std::string> sections = {"matmul", "conv", "tensorcore"};
  int size = 4096;
  int repeat = 7;
  double timeout_s = 20;  // of the tuner's measurer (build, and run)
  std::string json;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "gpu_bench";
  c.usage = "[options]";
  c.synopsis = "tuned CUDA matmul and conv2d next to cuBLAS and cuDNN (skips without a GPU)";
  c.options = {
      {"--log-dir", "DIR", "tuning logs, one JSON-lines file per workload (default gpu_logs)"},
      {"--trials", "N", "XGB trials for each matmul, float32 and tensor-core (default 200)"},
      {"--conv-trials", "N", "XGB trials for each conv layer (default 100)"},
      {"--resume", "", "reuse existing logs: only the trials missing up to N are measured"},
      {"--no-tune", "", "do not tune; build each workload from its log (default config if none)"},
      {"--sections", "LIST", "any of matmul,conv,tensorcore (default all)"},
      {"--size", "N", "M = N = K of the first matmul and the tensor-core matmuls (default 4096)"},
      {"--repeat", "R", "timed rounds, loom and its peer interleaved; the median is reported (default 7)"},
      {"--timeout", "S", "the measurer's build and run limits per candidate (default 20)"},
      {"--json", "FILE", "also write the results as JSON"},
      {"--verbose", "", "the tuner's progress lines"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  o.log_dir = a.str("--log-dir", o.log_dir);
  o.trials = int(a.integer("--trials", o.trials, 0, 1 << 30));
  o.conv_trials = int(a.integer("--conv-trials", o.conv_trials, 0, 1 << 30));
  o.resume = a.has("--resume");
  o.no_tune = a.has("--no-tune");
  o.verbose = a.has("--verbose");
  if (a.has("--sections")) o.sections = bench::split_list(a.str("--sections"), ',');
  for (const auto& s : o.sections)
    if (s != "matmul" && s != "conv" && s != "tensorcore")
      a.usage_error("--sections: unknown section '{}' (expected matmul, conv, tensorcore)", s);
  o.size = int(a.integer("--size", o.size, 1, 1 << 20));
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 1000));
  o.timeout_s = a.number("--timeout", o.timeout_s, 0.001);
  o.json = a.str("--json");
  if (o.resume && o.no_tune) a.usage_error("--resume and --no-tune exclude each other");
  return o;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// ---------------------------------------------------------------- the peers, through dlopen

void* open_first(const std::vector<const char*>& names, std::string* tried) {
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
    *tried += std::string(tried->empty() ? "" : ", ") + n;
  }
  return nullptr;
}

template <typename F>
F sym(void* lib, const char* name, const char* libname) {
  void* p = dlsym(lib, name);
  LOOM_CHECK(p != nullptr, "gpu_bench: {} lacks {}", libname, name);
  return reinterpret_cast<F>(p);
}

/// cuBLAS SGEMM on row-major arrays: C[M,N] = A[M,K]·B[K,N].
class Cublas {
 public:
  Cublas() {
    std::string tried;
    lib_ = open_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"},
                      &tried);
    LOOM_CHECK(lib_ != nullptr, "gpu_bench: cuBLAS not found (tried {})", tried);
    auto create = sym<int (*)(void**)>(lib_, "cublasCreate_v2", "cuBLAS");
    sgemm_ = sym<SgemmFn>(lib_, "cublasSgemm_v2", "cuBLAS");
    int st = create(&handle_);
    LOOM_CHECK(st == 0, "gpu_bench: cublasCreate failed (status {})", st);
  }
  void sgemm(int64_t m, int64_t n, int64_t k, const runtime::NDArray& a, const runtime::NDArray& b,
             const runtime::NDArray& c) const {
    const float one = 1, zero = 0;
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ.
    int st = sgemm_(handle_, 0, 0, int(n), int(m), int(k), &one, b.data<float>(), int(n), a.data<float>(), int(k),
                    &zero, c.data<float>(), int(n));
    LOOM_CHECK(st == 0, "gpu_bench: cublasSgemm failed (status {})", st);
  }
  /// C[M,N] (float32) = A[M,K]·B[K,N] (float16), float32 compute: cublasGemmEx on tensor cores.
  void gemm_f16_f32(int64_t m, int64_t n, int64_t k, const runtime::NDArray& a, const runtime::NDArray& b,
                    const runtime::NDArray& c) {
    if (!gemm_ex_) gemm_ex_ = sym<GemmExFn>(lib_, "cublasGemmEx", "cuBLAS");
    const float one = 1, zero = 0;
    constexpr int kR16F = 2, kR32F = 0, kCompute32F = 68, kGemmDefault = -1;
    int st = gemm_ex_(handle_, 0, 0, int(n), int(m), int(k), &one, b.raw_data(), kR16F, int(n), a.raw_data(), kR16F,
                      int(k), &zero, c.raw_data(), kR32F, int(n), kCompute32F, kGemmDefault);
    LOOM_CHECK(st == 0, "gpu_bench: cublasGemmEx failed (status {})", st);
  }

 private:
  using GemmExFn = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                           const void*, void*, int, int, int, int);
  GemmExFn gemm_ex_ = nullptr;
  using SgemmFn = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                          const float*, float*, int);
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  SgemmFn sgemm_ = nullptr;
};

/// cuDNN's legacy convolution API, float32 NCHW, cross-correlation (what conv2d_nchw computes).
class Cudnn {
 public:
  struct AlgoPerf {  // cudnnConvolutionFwdAlgoPerf_t
    int algo;
    int status;
    float time;
    size_t memory;
    int determinism;
    int math_type;
    int reserved[3];
  };
  static constexpr int kFloat = 0, kNCHW = 0, kCrossCorrelation = 1, kFmaMath = 3;

  Cudnn() {
    std::string tried;
    lib_ = open_first({"libcudnn.so.9", "libcudnn.so", "/usr/local/cuda/lib64/libcudnn.so.9",
                       "/usr/local/cuda/lib/libcudnn.so.9"},
                      &tried);
    LOOM_CHECK(lib_ != nullptr, "gpu_bench: cuDNN 9 not found (tried {})", tried);
#define LOOM_CUDNN_SYM(name) name = sym<decltype(name)>(lib_, "cudnn" #name, "cuDNN")
    LOOM_CUDNN_SYM(Create);
    LOOM_CUDNN_SYM(GetErrorString);
    LOOM_CUDNN_SYM(CreateTensorDescriptor);
    LOOM_CUDNN_SYM(SetTensor4dDescriptor);
    LOOM_CUDNN_SYM(CreateFilterDescriptor);
    LOOM_CUDNN_SYM(SetFilter4dDescriptor);
    LOOM_CUDNN_SYM(CreateConvolutionDescriptor);
    LOOM_CUDNN_SYM(SetConvolution2dDescriptor);
    LOOM_CUDNN_SYM(SetConvolutionMathType);
    LOOM_CUDNN_SYM(GetConvolution2dForwardOutputDim);
    LOOM_CUDNN_SYM(FindConvolutionForwardAlgorithm);
    LOOM_CUDNN_SYM(GetConvolutionForwardWorkspaceSize);
    LOOM_CUDNN_SYM(ConvolutionForward);
#undef LOOM_CUDNN_SYM
    check(Create(&handle_), "cudnnCreate");
  }

  void check(int status, const char* what) const {
    LOOM_CHECK(status == 0, "gpu_bench: {} failed: {} (status {})", what, GetErrorString(status), status);
  }

  /// One convolution layer, with the fastest FMA-math forward algorithm cuDNN finds.
  struct Conv {
    void *x = nullptr, *w = nullptr, *conv = nullptr, *y = nullptr;
    int algo = 0;
    size_t workspace_bytes = 0;
    runtime::NDArray workspace;
  };

  Conv plan(int n, int c, int h, int k, int r, int stride, int pad, const std::vector<int64_t>& out_shape) const {
    Conv p;
    check(CreateTensorDescriptor(&p.x), "cudnnCreateTensorDescriptor");
    check(SetTensor4dDescriptor(p.x, kNCHW, kFloat, n, c, h, h), "cudnnSetTensor4dDescriptor");
    check(CreateFilterDescriptor(&p.w), "cudnnCreateFilterDescriptor");
    check(SetFilter4dDescriptor(p.w, kFloat, kNCHW, k, c, r, r), "cudnnSetFilter4dDescriptor");
    check(CreateConvolutionDescriptor(&p.conv), "cudnnCreateConvolutionDescriptor");
    check(SetConvolution2dDescriptor(p.conv, pad, pad, stride, stride, 1, 1, kCrossCorrelation, kFloat),
          "cudnnSetConvolution2dDescriptor");
    check(SetConvolutionMathType(p.conv, kFmaMath), "cudnnSetConvolutionMathType");
    int on, oc, oh, ow;
    check(GetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &on, &oc, &oh, &ow),
          "cudnnGetConvolution2dForwardOutputDim");
    LOOM_CHECK(std::vector<int64_t>({on, oc, oh, ow}) == out_shape,
               "gpu_bench: cuDNN's output shape {}x{}x{}x{} differs from loom's", on, oc, oh, ow);
    check(CreateTensorDescriptor(&p.y), "cudnnCreateTensorDescriptor");
    check(SetTensor4dDescriptor(p.y, kNCHW, kFloat, on, oc, oh, ow), "cudnnSetTensor4dDescriptor");
    AlgoPerf perf[16];
    int found = 0;
    check(FindConvolutionForwardAlgorithm(handle_, p.x, p.w, p.conv, p.y, 16, &found, perf),
          "cudnnFindConvolutionForwardAlgorithm");
    // Sorted fastest first; take the fastest that ran and used FMA math (no TF32).
    int pick = -1;
    for (int i = 0; i < found && pick < 0; ++i)
      if (perf[i].status == 0 && perf[i].math_type == kFmaMath) pick = i;
    for (int i = 0; i < found && pick < 0; ++i)
      if (perf[i].status == 0 && perf[i].math_type == 0) pick = i;
    LOOM_CHECK(pick >= 0, "gpu_bench: cuDNN found no FP32 forward algorithm for this layer");
    p.algo = perf[pick].algo;
    check(SetConvolutionMathType(p.conv, perf[pick].math_type), "cudnnSetConvolutionMathType");
    check(GetConvolutionForwardWorkspaceSize(handle_, p.x, p.w, p.conv, p.y, p.algo, &p.workspace_bytes),
          "cudnnGetConvolutionForwardWorkspaceSize");
    p.workspace = runtime::NDArray::empty({int64_t(std::max<size_t>(p.workspace_bytes, 4) + 3) / 4},
                                          DataType::Float(32), DLDevice{kDLCUDA, 0});
    return p;
  }

  void forward(const Conv& p, const runtime::NDArray& x, const runtime::NDArray& w, const runtime::NDArray& y) const {
    const float one = 1, zero = 0;
    check(ConvolutionForward(handle_, &one, p.x, x.raw_data(), p.w, w.raw_data(), p.conv, p.algo,
                             p.workspace.raw_data(), p.workspace_bytes, &zero, p.y, y.raw_data()),
          "cudnnConvolutionForward");
  }

 private:
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  int (*Create)(void**) = nullptr;
  const char* (*GetErrorString)(int) = nullptr;
  int (*CreateTensorDescriptor)(void**) = nullptr;
  int (*SetTensor4dDescriptor)(void*, int, int, int, int, int, int) = nullptr;
  int (*CreateFilterDescriptor)(void**) = nullptr;
  int (*SetFilter4dDescriptor)(void*, int, int, int, int, int, int) = nullptr;
  int (*CreateConvolutionDescriptor)(void**) = nullptr;
  int (*SetConvolution2dDescriptor)(void*, int, int, int, int, int, int, int, int) = nullptr;
  int (*SetConvolutionMathType)(void*, int) = nullptr;
  int (*GetConvolution2dForwardOutputDim)(void*, void*, void*, int*, int*, int*, int*) = nullptr;
  int (*FindConvolutionForwardAlgorithm)(void*, void*, void*, void*, void*, int, int*, AlgoPerf*) = nullptr;
  int (*GetConvolutionForwardWorkspaceSize)(void*, void*, void*, void*, void*, int, size_t*) = nullptr;
  int (*ConvolutionForward)(void*, const void*, void*, const void*, void*, const void*, void*, int, void*, size_t,
                            const void*, void*, void*) = nullptr;
};

// ---------------------------------------------------------------- workloads and tuning

struct ConvLayer {
  int c, hw, k, kernel, stride, pad;
};

struct Case {
  std::string section, label;
  tuner::Task task;
  int trials = 0;
  std::string log;
  ConvLayer layer{};
  double target = 0;  // the issue's goal for loom / peer (0: none of its own)
};

void tune(const Case& c, const Options& o) {
  bench::TuneRequest r;
  r.tag = "gpu_bench";
  r.label = c.label;
  r.trials = c.trials;
  r.resume = o.resume;
  r.no_tune = o.no_tune;
  r.verbose = o.verbose;
  r.measure.timeout_s = o.timeout_s;
  r.measure.min_repeat_ms = 50;
  bench::tune_xgb(c.task, c.log, r);
}

// ---------------------------------------------------------------- measuring

runtime::NDArray device_random(const std::vector<int64_t>& shape, uint64_t seed, DataType t = DataType::Float(32)) {
  auto h = runtime::NDArray::empty(shape, t);
  h.fill_random(seed, -1.0, 1.0);
  auto d = runtime::NDArray::empty(shape, t, DLDevice{kDLCUDA, 0});
  d.copy_from(h);
  return d;
}

runtime::NDArray device_poisoned(const std::vector<int64_t>& shape) {
  auto h = runtime::NDArray::empty(shape, DataType::Float(32));
  bench::poison(h.data<float>(), h.numel());
  auto d = runtime::NDArray::empty(shape, DataType::Float(32), DLDevice{kDLCUDA, 0});
  d.copy_from(h);
  return d;
}

runtime::NDArray to_host(const runtime::NDArray& d) {
  auto h = runtime::NDArray::empty(d.shape(), d.dtype());
  h.copy_from(d);
  return h;
}

/// Seconds per call of loom's and the peer's function: `repeat` rounds, each timing loom then
/// the peer with CUDA events over as many calls as make a round last about 50 ms; medians.
std::pair<double, double> time_pair(const std::function<void()>& loom_f, const std::function<void()>& peer_f,
                                    int repeat) {
  auto calls_for = [](const std::function<void()>& f) {
    double t = runtime::cuda_time(f, 1, 1)[0];
    return int(std::clamp(0.05 / std::max(t, 1e-7), 1.0, 10000.0));
  };
  const int nl = calls_for(loom_f), np = calls_for(peer_f);
  std::vector<double> tl, tp;
  for (int r = 0; r < repeat; ++r) {
    tl.push_back(runtime::cuda_time(loom_f, nl, 1)[0]);
    tp.push_back(runtime::cuda_time(peer_f, np, 1)[0]);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(tl), median(tp)};
}

struct Result {
  std::string section, label, peer, config;
  double target = 0;
  int records = 0;
  double flop = 0, loom_s = 0, peer_s = 0, max_rel_err = 0;
  double loom_gflops() const { return flop / loom_s * 1e-9; }
  double peer_gflops() const { return flop / peer_s * 1e-9; }
  /// loom's throughput as a fraction of the peer's.
  double ratio() const { return peer_s / loom_s; }
};

constexpr double kTolerance = 1e-3;

}  // namespace

int run(const Options& o) {
  // Probed in a child, so that this process has not initialized CUDA when the tuner forks.
  if (std::string why = tuner::cuda_worker_unavailable_reason(); !why.empty()) {
    std::printf("bench/gpu: skipped: no CUDA driver/GPU (%s)\n", why.c_str());
    return 0;
  }
  fs::create_directories(o.log_dir);
  const Target cuda("cuda");

  std::vector<Case> cases;
  if (has(o.sections, "matmul")) {
    const int64_t n = o.size;
    std::vector<std::vector<int64_t>> seen;
    for (auto [shape, target] : std::vector<std::pair<std::vector<int64_t>, double>>{
             {{n, n, n}, 0.9}, {{1024, 1024, 1024}, 0.8}, {{1000, 1000, 999}, 0.8}}) {
      if (std::find(seen.begin(), seen.end(), shape) != seen.end()) continue;  // --size 1024
      seen.push_back(shape);
      cases.push_back(Case{"matmul", fmt::format("matmul {}x{}x{}", shape[0], shape[1], shape[2]),
                           tuner::Task::create("matmul", shape, cuda), o.trials, "", {}, target});
    }
  }
  if (has(o.sections, "tensorcore")) {
    const int64_t n = o.size;
    cases.push_back(Case{"tensorcore", fmt::format("fp16 WMMA matmul {}^3", n),
                         tuner::Task::create("matmul_tensorcore", {n, n, n}, cuda, "float16"), o.trials, "", {}, 0.8});
    cases.push_back(Case{"tensorcore", fmt::format("fp16 mma.sync matmul {}^3", n),
                         tuner::Task::create("matmul_mma", {n, n, n}, cuda, "float16"), o.trials, "", {}, 0.8});
  }
  if (has(o.sections, "conv")) {
    for (const ConvLayer& l : std::vector<ConvLayer>{{64, 56, 64, 3, 1, 1},
                                                     {64, 56, 128, 1, 2, 0},
                                                     {128, 28, 128, 3, 1, 1},
                                                     {256, 14, 256, 3, 1, 1},
                                                     {512, 7, 512, 3, 1, 1}}) {
      auto task = tuner::Task::create("conv2d_nchw_cuda", {1, l.c, l.hw, l.hw, l.k, l.kernel, l.kernel}, cuda,
                                      "float32", {{"stride", std::to_string(l.stride)}, {"pad", std::to_string(l.pad)}});
      cases.push_back(Case{"conv",
                           fmt::format("conv C={} H=W={} K={} {}x{} s{} p{}", l.c, l.hw, l.k, l.kernel, l.kernel,
                                       l.stride, l.pad),
                           task, o.conv_trials, "", l});
    }
  }
  for (Case& c : cases) c.log = (fs::path(o.log_dir) / (bench::sanitize(c.task.key()) + ".jsonl")).string();

  // 1. Tune everything (forked workers; this process keeps off the GPU).
  for (const Case& c : cases) tune(c, o);

  // 2. Build the best records and time them next to cuBLAS / cuDNN.
  std::vector<Result> results;
  bool ok = true;
  std::unique_ptr<Cublas> cublas;
  std::unique_ptr<Cudnn> cudnn;
  for (const Case& c : cases) {
    records::ApplyHistoryBest best(c.log);
    runtime::Module m = tuner::build_best(c.task, best, &std::cerr);
    runtime::PackedFunc f = m.get_function(c.task.workload().op);
    Result r;
    r.section = c.section;
    r.label = c.label;
    r.flop = c.task.flop();
    r.target = c.target;
    r.records = int(bench::task_records(c.log, c.task).size());
    if (auto rec = best.best(c.task.workload(), c.task.target().str())) {
      r.config = c.task.space().get(rec->config.index).str();
      std::replace(r.config.begin(), r.config.end(), '"', '\'');
    }
    std::vector<runtime::NDArray> args;
    runtime::NDArray peer_out;
    std::function<void()> peer;
    if (c.section == "tensorcore" || c.section == "matmul") {
      // Workload shape M, N, K.
      const int64_t m = c.task.workload().shape[0], n = c.task.workload().shape[1], k = c.task.workload().shape[2];
      const DataType in = c.section == "tensorcore" ? DataType::Float(16) : DataType::Float(32);
      args = {device_random({m, k}, 1, in), device_random({k, n}, 2, in), device_poisoned({m, n})};
      peer_out = device_poisoned({m, n});
      if (!cublas) cublas = std::make_unique<Cublas>();
      if (c.section == "tensorcore") {
        r.peer = "cuBLAS GemmEx fp16->fp32";
        peer = [&, m, n, k] { cublas->gemm_f16_f32(m, n, k, args[0], args[1], peer_out); };
      } else {
        r.peer = "cuBLAS SGEMM";
        peer = [&, m, n, k] { cublas->sgemm(m, n, k, args[0], args[1], peer_out); };
      }
    } else {
      const ConvLayer& l = c.layer;
      const int64_t oh = (l.hw + 2 * l.pad - l.kernel) / l.stride + 1;
      std::vector<int64_t> out_shape = {1, l.k, oh, oh};
      args = {device_random({1, l.c, l.hw, l.hw}, 1), device_random({l.k, l.c, l.kernel, l.kernel}, 2),
              device_poisoned(out_shape)};
      peer_out = device_poisoned(out_shape);
      if (!cudnn) cudnn = std::make_unique<Cudnn>();
      auto plan = std::make_shared<Cudnn::Conv>(cudnn->plan(1, l.c, l.hw, l.k, l.kernel, l.stride, l.pad, out_shape));
      r.peer = fmt::format("cuDNN (algo {})", plan->algo);
      peer = [&, plan] { cudnn->forward(*plan, args[0], args[1], peer_out); };
    }
    auto loom_f = [&] { f(args[0], args[1], args[2]); };
    loom_f();
    peer();
    runtime::cuda_synchronize();
    runtime::NDArray got = to_host(args[2]), want = to_host(peer_out);
    r.max_rel_err = bench::max_rel_err(got.data<float>(), want.data<float>(), got.numel());
    if (!(r.max_rel_err <= kTolerance)) {
      std::fprintf(stderr, "[gpu_bench] %s: loom's output differs from %s: max relative error %.3g\n",
                   c.label.c_str(), r.peer.c_str(), r.max_rel_err);
      ok = false;
    }
    std::tie(r.loom_s, r.peer_s) = time_pair(loom_f, peer, o.repeat);
    results.push_back(r);
  }

  // 3. Report.
  std::printf("\nbench/gpu: tuned loom kernels against NVIDIA's libraries (median of %d rounds, CUDA events)\n",
              o.repeat);
  std::printf("%-36s %8s %10s %10s %10s %8s  %s\n", "workload", "records", "loom ms", "GFLOP/s", "peer ms",
              "loom/peer", "peer");
  std::vector<double> conv_ratios;
  for (const Result& r : results) {
    std::printf("%-36s %8d %10.3f %10.1f %10.3f %8.1f%%  %s (%.1f GFLOP/s)\n", r.label.c_str(), r.records,
                r.loom_s * 1e3, r.loom_gflops(), r.peer_s * 1e3, 100 * r.ratio(), r.peer.c_str(), r.peer_gflops());
    if (r.section == "conv") conv_ratios.push_back(r.ratio());
  }
  if (!conv_ratios.empty())
    std::printf("conv geomean loom/cuDNN throughput: %.1f%% over %zu layers\n", 100 * bench::geomean(conv_ratios),
                conv_ratios.size());
  for (const Result& r : results)
    if (r.target > 0)
      std::printf("%s target: at least %.0f%% of cuBLAS; %s: %.1f%% (%s)\n", r.section.c_str(), 100 * r.target,
                  r.label.c_str(), 100 * r.ratio(), r.ratio() >= r.target ? "met" : "not met");
  std::printf("(loom/peer = peer time / loom time: loom's throughput as a share of the peer's)\n");

  if (!o.json.empty()) {
    std::ofstream js(o.json);
    LOOM_CHECK(js.good(), "gpu_bench: cannot write '{}'", o.json);
    js << fmt::format(R"({{"benchmark": "gpu", "target": "{}", "compute_capability": {}, "repeat": {}, )"
                      R"("stat": "median", "results": [)",
                      cuda.str(), runtime::cuda_compute_capability(0), o.repeat);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      js << fmt::format(R"({}{{"section": "{}", "workload": "{}", "records": {}, "config": "{}", "peer": "{}", )"
                        R"("loom_ms": {:.4f}, "peer_ms": {:.4f}, "loom_gflops": {:.2f}, "peer_gflops": {:.2f}, )"
                        R"("ratio": {:.4f}, "max_rel_err": {:.3e}}})",
                        i ? ", " : "", r.section, r.label, r.records, r.config, r.peer, r.loom_s * 1e3, r.peer_s * 1e3,
                        r.loom_gflops(), r.peer_gflops(), r.ratio(), r.max_rel_err);
    }
    js << "]";
    if (!conv_ratios.empty()) js << fmt::format(R"(, "conv_geomean_ratio": {:.4f})", bench::geomean(conv_ratios));
    js << "}\n";
  }
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  cli::Command c = command();
  c.run = [](const cli::Args& a) { return run(options_from(a)); };
  return cli::run_command(c, {argv + 1, argv + argc});
}
