// The CUDA backend without a GPU: CUDA C emission, NVRTC compilation for sm_80 and sm_90,
// and the runtime's clear error when no driver is present.
#include <gtest/gtest.h>

#include "loom/codegen/cuda.h"
#include "loom/loom.h"
#include "loom/runtime/cuda.h"
#include "loom/tuner/task.h"

#include <random>

namespace loom {
namespace {

using namespace lowering;  // NOLINT
using te::Expr;
using te::Var;

#define SKIP_WITHOUT_NVRTC() \
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "NVRTC not available: " << codegen::nvrtc_unavailable_reason()

/// Compiles for both architectures; "" on success, else the first error.
std::string compile_both(const std::string& src) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    try {
      std::string ptx = codegen::compile_to_ptx(src, arch);
      if (ptx.find(".entry") == std::string::npos) return std::string(arch) + ": PTX has no kernel entry";
    } catch (const Error& e) {
      return std::string(arch) + ": " + e.what() + "\n--- source ---\n" + src;
    }
  }
  return "";
}

Expr i32(int64_t v) { return te::make_const(DataType::Int(32), v); }

/// out[i] = exp(a[i]) * 2 + floormod(i - 7, 5), through a shared tile and a barrier, with a
/// float4 copy, a predicated vector store and a local accumulator.
DeviceFunc hand_written_kernel() {
  DeviceFunc k;
  k.name = "hand_kernel0";
  Var a("a_data", DataType::Handle()), out("out_data", DataType::Handle()), n("n", DataType::Int(32));
  Var tx("threadIdx.x"), bx("blockIdx.x");
  Var sh("tile", DataType::Handle()), acc("acc", DataType::Handle());
  k.buffer_params = {a, out};
  k.buffer_dtypes = {DataType::Float(32), DataType::Float(32)};
  k.scalar_params = {n};
  k.thread_extents = {{"blockIdx.x", i32(8)}, {"threadIdx.x", i32(64)}};
  k.thread_vars = {bx, tx};
  k.shared_bytes = 256 * 4;
  Expr base = bx * 256 + tx * 4;
  auto ramp = [](Expr b) { return te::make<te::RampNode>(b, i32(1), 4); };
  Stmt fetch = make_stmt<StoreNode>(sh, te::make<te::LoadNode>(DataType::Float(32, 4), a, ramp(base), Expr()),
                                    ramp(tx * 4), Expr());
  Stmt sync = make_stmt<EvaluateNode>(te::call(DataType::Int(32), "loom.sync_threads", {}));
  Var i("i");
  Expr gi = bx * 256 + tx * 4 + i;
  Expr val = te::exp(te::make<te::LoadNode>(DataType::Float(32), sh, tx * 4 + i, Expr())) * 2.0f +
             te::cast(DataType::Float(32), te::floormod(gi - 7, 5)) + te::make<te::LoadNode>(DataType::Float(32), acc, i32(0), Expr());
  Stmt init = make_stmt<StoreNode>(acc, te::make_const(DataType::Float(32), 0.5), i32(0), Expr());
  Stmt body = make_stmt<ForNode>(i, i32(0), i32(4), ForKind::kUnrolled,
                                 make_stmt<IfThenElseNode>(gi < n, make_stmt<StoreNode>(out, val, gi, Expr()), Stmt()));
  Expr pred = te::make<te::BroadcastNode>(base < n, 4);
  Stmt vstore = make_stmt<StoreNode>(out, te::make<te::BroadcastNode>(te::sigmoid(te::make<te::LoadNode>(DataType::Float(32), a, base, Expr())), 4),
                                     ramp(base), pred);
  Stmt inner = seq({init, fetch, sync, body, vstore});
  inner = make_stmt<AllocateNode>(acc, DataType::Float(32), std::vector<Expr>{i32(1)}, "local", inner);
  k.body = make_stmt<AllocateNode>(sh, DataType::Float(32), std::vector<Expr>{i32(256)}, "shared", inner);
  return k;
}

TEST(CudaCodegen, HandWrittenKernelSource) {
  std::string src = codegen::cuda_kernel_source(hand_written_kernel());
  EXPECT_NE(src.find("extern \"C\" __global__ void __launch_bounds__(64) hand_kernel0("), std::string::npos) << src;
  EXPECT_NE(src.find("float* __restrict__ a_data"), std::string::npos) << src;
  EXPECT_NE(src.find("int n)"), std::string::npos) << src;
  EXPECT_NE(src.find("__shared__ __align__(16) float tile[256];"), std::string::npos) << src;
  EXPECT_NE(src.find("float acc[1];"), std::string::npos) << src;
  EXPECT_NE(src.find("__syncthreads();"), std::string::npos) << src;
  EXPECT_NE(src.find("*(float4*)(tile + "), std::string::npos) << src;
  EXPECT_NE(src.find("#pragma unroll"), std::string::npos) << src;
  EXPECT_NE(src.find("loom_floormod<int>"), std::string::npos) << src;
  EXPECT_NE(src.find("__expf("), std::string::npos) << src;
  EXPECT_NE(src.find("threadIdx.x"), std::string::npos) << src;
  codegen::CudaCodegenOptions precise;
  precise.fast_math = false;
  EXPECT_NE(codegen::cuda_kernel_source(hand_written_kernel(), precise).find("expf("), std::string::npos);
}

TEST(CudaCodegen, HandWrittenKernelCompilesWithNvrtc) {
  SKIP_WITHOUT_NVRTC();
  LoweredFunc f;
  f.name = "hand";
  f.device_funcs = {hand_written_kernel()};
  EXPECT_EQ(compile_both(codegen::cuda_source(f)), "");
}

TEST(CudaCodegen, CompileErrorCarriesNvrtcLog) {
  SKIP_WITHOUT_NVRTC();
  try {
    codegen::compile_to_ptx("extern \"C\" __global__ void k() { undefined_symbol_xyz = 1; }", "sm_80");
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("undefined_symbol_xyz"), std::string::npos) << e.what();
  }
  EXPECT_THROW(codegen::compile_to_ptx("", "xyz"), Error);
}

TEST(CudaCodegen, UnknownThreadTagIsAnError) {
  DeviceFunc k = hand_written_kernel();
  k.thread_extents[0].first = "vthread";
  EXPECT_THROW(codegen::cuda_kernel_source(k), Error);
}

TEST(CudaCodegen, ArchFromTarget) {
  EXPECT_EQ(codegen::cuda_arch(Target("cuda -arch=sm_90")), "sm_90");
  if (!runtime::cuda_available()) EXPECT_EQ(codegen::cuda_arch(Target("cuda")), "sm_80");
}

/// Lowered through the real pipeline: a two-level split bound to blocks and threads, and a
/// matmul with shared-memory tiles fetched cooperatively.
TEST(CudaCodegen, LoweredSchedulesCompile) {
  SKIP_WITHOUT_NVRTC();
  {
    te::Tensor A = te::placeholder({1000}, DataType::Float(32), "A");
    te::Tensor B = te::compute({1000}, [&](Var i) { return te::exp(A(i)) + te::cast(DataType::Float(32), te::floormod(te::cast(DataType::Int(32), i) - 3, 7)); }, "B");
    Schedule s = create_schedule({B});
    auto [bo, bi] = s[B].split(s[B].axis(0), 128);
    s[B].bind(bo, te::thread_axis("blockIdx.x"));
    s[B].bind(bi, te::thread_axis("threadIdx.x"));
    LowerOptions o;
    o.target = Target("cuda");
    LoweredFunc f = lowering::lower(s, {A, B}, "ew", o);
    ASSERT_EQ(f.device_funcs.size(), 1u);
    EXPECT_EQ(compile_both(codegen::cuda_source(f)), "");
  }
  {
    const int64_t M = 128, N = 128, K = 64;
    te::Tensor A = te::placeholder({M, K}, DataType::Float(32), "A");
    te::Tensor B = te::placeholder({K, N}, DataType::Float(32), "B");
    te::IterVar k = te::reduce_axis({0, K}, "k");
    te::Tensor C = te::compute({M, N}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
    Schedule s = create_schedule({C});
    te::Tensor AA = s.cache_read(A, "shared", std::vector<te::Tensor>{C});
    te::Tensor BB = s.cache_read(B, "shared", std::vector<te::Tensor>{C});
    te::Tensor CL = s.cache_write(C, "local");
    auto [io, ii] = s[C].split(s[C].axis(0), 16);
    auto [jo, ji] = s[C].split(s[C].axis(1), 16);
    s[C].reorder({io, jo, ii, ji});
    s[C].bind(io, te::thread_axis("blockIdx.y"));
    s[C].bind(jo, te::thread_axis("blockIdx.x"));
    s[C].bind(ii, te::thread_axis("threadIdx.y"));
    s[C].bind(ji, te::thread_axis("threadIdx.x"));
    s[CL].compute_at(s[C], ji);
    auto [ko, ki] = s[CL].split(s[CL].reduce_axis(0), 8);
    s[AA].compute_at(s[CL], ko);
    s[BB].compute_at(s[CL], ko);
    for (te::Tensor T : {AA, BB}) {
      te::IterVar fused = s[T].fuse(s[T].axis(0), s[T].axis(1));
      auto [ty, rest] = s[T].split(fused, 16 * 16 / 16);
      (void)rest;
      auto [a, tx] = s[T].split(ty, 16);
      (void)a;
      s[T].bind(tx, te::thread_axis("threadIdx.x"));
    }
    (void)ki;
    LowerOptions o;
    o.target = Target("cuda");
    LoweredFunc f = lowering::lower(s, {A, B, C}, "mm", o);
    ASSERT_FALSE(f.device_funcs.empty());
    std::string src = codegen::cuda_source(f);
    EXPECT_NE(src.find("__shared__"), std::string::npos) << src;
    EXPECT_EQ(compile_both(src), "");
  }
}

TEST(CudaRuntime, NoDriverGivesClearError) {
  if (runtime::cuda_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(runtime::cuda_unavailable_reason().empty());
  try {
    runtime::NDArray::empty({4}, DataType::Float(32), DLDevice{kDLCUDA, 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA driver/GPU"), std::string::npos) << e.what();
  }
  EXPECT_THROW(runtime::cuda_compute_capability(), Error);
  EXPECT_THROW(runtime::cuda_time([] {}, 1, 1), Error);
  // CPU arrays and CPU builds are unaffected.
  runtime::NDArray h = runtime::NDArray::empty({4}, DataType::Float(32));
  h.set(0, 1.5);
  EXPECT_EQ(h.get(0), 1.5);
}

TEST(CudaRuntime, BuildWithoutDriverMakesModuleThatFailsClearlyOnCall) {
  SKIP_WITHOUT_NVRTC();
  te::Tensor A = te::placeholder({256}, DataType::Float(32), "A");
  te::Tensor B = te::compute({256}, [&](Var i) { return A(i) * 2.0f; }, "B");
  Schedule s = create_schedule({B});
  auto [bo, bi] = s[B].split(s[B].axis(0), 64);
  s[B].bind(bo, te::thread_axis("blockIdx.x"));
  s[B].bind(bi, te::thread_axis("threadIdx.x"));
  runtime::Module m = build(s, {A, B}, Target("cuda -arch=sm_80"), "dbl");
  EXPECT_EQ(m->type_key(), "cuda");
  EXPECT_NE(m.source("ptx").find(".entry"), std::string::npos);
  EXPECT_NE(m.source("cuda").find("__global__"), std::string::npos);
  EXPECT_THROW(m.export_object("/tmp/loom_cuda_export_test.o"), Error);  // export_library: cuda_export_test.cc
  if (runtime::cuda_available()) return;
  runtime::NDArray a = runtime::NDArray::empty({256}, DataType::Float(32));
  runtime::NDArray b = runtime::NDArray::empty({256}, DataType::Float(32));
  try {
    m.get_function("dbl")(a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kDLCUDA"), std::string::npos) << e.what();
  }
}

TEST(CudaRuntime, UnboundScheduleIsAnError) {
  SKIP_WITHOUT_NVRTC();
  te::Tensor A = te::placeholder({16}, DataType::Float(32), "A");
  te::Tensor B = te::compute({16}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule({B});
  EXPECT_THROW(build(s, {A, B}, Target("cuda"), "unbound"), Error);
}

/// Random configs of every GPU template: instantiation (verifier rejections are counted
/// apart) and NVRTC compilation for sm_80 and sm_90 must both succeed.
void compile_random_configs(const std::string& op, std::vector<int64_t> shape, int n) {
  auto task = tuner::Task::create(op, shape, Target("cuda"));
  std::mt19937_64 rng(42);
  int compiled = 0, rejected = 0;
  for (int t = 0; t < n; ++t) {
    int64_t idx = int64_t(rng() % uint64_t(task.space().size()));
    tuner::Instance inst;
    try {
      inst = task.instantiate(idx);
    } catch (const tuner::InstantiationError&) {
      ++rejected;
      continue;
    }
    // A config the template instantiates must pass the GPU verifier (threads, shared memory,
    // registers): one it does not would cost the tuner a trial, and fail on a device.
    LowerOptions o;
    o.target = Target("cuda");
    LoweredFunc f;
    try {
      f = lowering::lower(inst.schedule, inst.args, op, o);
    } catch (const Error& e) {
      ADD_FAILURE() << op << " config " << idx << " (" << task.space().get(idx).str() << ") instantiates but "
                    << e.what();
      continue;
    }
    ASSERT_FALSE(f.device_funcs.empty()) << op << " config " << idx;
    ASSERT_EQ(compile_both(codegen::cuda_source(f)), "") << op << " config " << idx;
    ++compiled;
  }
  EXPECT_GT(compiled, 0) << op << ": every config was rejected (" << rejected << ")";
}

/// The default config's block: threads per block, from the kernel's launch extents.
int64_t default_threads(const std::string& op, std::vector<int64_t> shape,
                        std::map<std::string, std::string> attrs = {}) {
  auto task = tuner::Task::create(op, shape, Target("cuda"), "float32", attrs);
  tuner::Instance inst = task.instantiate_default();
  LowerOptions o;
  o.target = Target("cuda");
  LoweredFunc f = lowering::lower(inst.schedule, inst.args, op, o);
  int64_t threads = 1;
  for (const auto& [tag, e] : f.device_funcs.at(0).thread_extents)
    if (tag.rfind("threadIdx.", 0) == 0) threads *= te::as_const_int(e).value_or(1);
  return threads;
}

TEST(CudaTemplates, RandomConfigsCompile) {
  SKIP_WITHOUT_NVRTC();
  compile_random_configs("matmul_cuda", {256, 128, 64}, 12);
  compile_random_configs("matmul_cuda", {4096, 4096, 4096}, 12);
  compile_random_configs("conv2d_nchw_cuda", {1, 16, 14, 14, 32, 3, 3}, 8);
  compile_random_configs("conv2d_nchw_cuda", {1, 64, 56, 56, 64, 3, 3}, 8);
  compile_random_configs("depthwise_conv2d_nchw_cuda", {1, 16, 14, 14, 16, 3, 3}, 8);
}

TEST(CudaTemplates, DefaultConfigsFillABlock) {
  // Untuned, a GPU template runs its default config: 256-thread blocks, not one thread each
  // (config 0 of the space, which the matmul template ran at 0.1% of cuBLAS on an H200).
  EXPECT_EQ(default_threads("matmul", {4096, 4096, 4096}), 256);
  EXPECT_EQ(default_threads("matmul", {1024, 512, 256}), 256);
  EXPECT_EQ(default_threads("conv2d_nchw", {1, 64, 56, 56, 64, 3, 3}, {{"pad", "1"}}), 256);
  EXPECT_GE(default_threads("conv2d_nchw", {1, 512, 7, 7, 512, 3, 3}, {{"pad", "1"}}), 128);
}

TEST(CudaTemplates, OnlyForCudaTargets) {
  EXPECT_EQ(tuner::get_template("matmul_cuda").targets, std::vector<std::string>{"cuda"});
}

}  // namespace
}  // namespace loom
