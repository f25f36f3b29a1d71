// Schedules generated from patterns: groups of registry operators that no template
// schedules, compiled and compared with te::evaluate on shapes that do and do not divide the
// vector width; the vectorization report holds the injective ones to dense vector accesses.
#include "loom/tuner/schedule_by_pattern.h"

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/cuda.h"
#include "loom/lower/vector_access.h"
#include "loom/te/op_registry.h"

namespace loom::tuner {
namespace {

using Shape = std::vector<int64_t>;
using te::Tensor;
using te::ops::Attrs;
using lowering::VectorReportEntry;

Tensor input(const Shape& s, const std::string& name, std::vector<Tensor>* args) {
  std::vector<te::Expr> e;
  for (int64_t d : s) e.push_back(te::Expr(int(d)));
  Tensor t = te::placeholder(e, DataType::Float(32), name);
  args->push_back(t);
  return t;
}

Tensor op(const std::string& name, const std::vector<Tensor>& in, const Attrs& attrs = {}) {
  const te::ops::OpDef& d = te::ops::get_op(name);
  return d.compute(in, te::ops::normalize_attrs(d, attrs)).at(0);
}

struct Case {
  std::string what;
  std::function<Tensor(std::vector<Tensor>*)> make;  // appends inputs, returns the output
};

/// The vector width of this host for float32 (the schedules use the target's).
int lanes() { return std::max(1, Target("llvm").vector_bits() / 32); }

std::vector<Case> injective_cases(int64_t inner) {
  return {
      {"add + relu", [=](auto* a) { return op("relu", {op("add", {input({3, inner}, "x", a), input({3, inner}, "y", a)})}); }},
      {"bias_add + tanh (broadcast over the rows)",
       [=](auto* a) { return op("tanh", {op("add", {input({4, 2, inner}, "x", a), input({inner}, "b", a)})}); }},
      {"batch_norm NCHW16c + relu",
       [=](auto* a) {
         Tensor x = input({1, 2, 3, inner, 16}, "x", a);
         std::vector<Tensor> p;
         for (const char* n : {"g", "b", "m", "v"}) p.push_back(input({32}, n, a));
         return op("relu", {op("batch_norm", {x, p[0], p[1], p[2], p[3]}, {{"layout", std::string("NCHW16c")}})});
       }},
      {"multiply by a per-row scale, then clip",
       [=](auto* a) {
         return op("clip", {op("multiply", {input({5, inner}, "x", a), input({5, 1}, "s", a)})},
                   {{"min", -0.5}, {"max", 0.5}});
       }},
  };
}

TEST(ScheduleByPattern, InjectiveChainsMatchAndVectorizeDensely) {
  for (int64_t inner : {int64_t(lanes()) * 4, int64_t(37), int64_t(5)}) {
    for (const Case& c : injective_cases(inner)) {
      SCOPED_TRACE(testing::Message() << c.what << ", innermost " << inner);
      std::vector<Tensor> args;
      Tensor out = c.make(&args);
      args.push_back(out);
      std::string why;
      Schedule s = schedule_by_pattern({out}, Target("llvm"), &why);
      EXPECT_NE(why.find("vectorized"), std::string::npos) << why;
      EXPECT_MATCHES_REFERENCE(s, args);
      lowering::VectorizationReport r;
      lowering::LowerOptions opts;
      opts.vector_report = &r;
      lowering::lower(s, args, "f", opts);
      EXPECT_GT(r.vector_accesses, 0) << "no vector code";
      for (const VectorReportEntry& e : r.entries) {
        // tanh is vector code where the target has a vector math library, else libm per lane.
        if (e.kind == VectorReportEntry::Kind::kScalarized && lowering::vector_math_library(Target("llvm")).empty()) continue;
        // A tail shorter than the vector may be masked; nothing else may be other than dense.
        const bool tail = e.kind == VectorReportEntry::Kind::kPredicated && inner % lanes() != 0;
        EXPECT_TRUE(tail) << to_string(e.kind) << " access of " << e.buffer << ": " << e.index << "\n" << r.to_string();
      }
    }
  }
}

std::vector<Case> other_cases(int64_t n) {
  return {
      {"injective: transpose", [=](auto* a) { return op("transpose", {input({3, n, 4}, "x", a)}, {{"axes", Shape{2, 0, 1}}}); }},
      {"injective: concat + pad",
       [=](auto* a) {
         Tensor c = op("concat", {input({2, n}, "x", a), input({3, n}, "y", a)});
         return op("pad", {c}, {{"pads", Shape{1, 0, 0, 2}}});
       }},
      {"injective: layout_transform to NCHW16c",
       [=](auto* a) {
         return op("layout_transform", {input({1, 20, 3, n}, "x", a)},
                   {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW16c")}});
       }},
      {"injective: flatten of a reshape",
       [=](auto* a) { return op("flatten", {op("reshape", {input({6, n}, "x", a)}, {{"newshape", Shape{2, 3, n}}})}); }},
      {"reduce_sum over the last axis", [=](auto* a) { return op("reduce_sum", {input({5, n}, "x", a)}, {{"axes", Shape{-1}}}); }},
      {"reduce_mean over axis 0, kept", [=](auto* a) {
         return op("reduce_mean", {input({n, 3, 7}, "x", a)}, {{"axes", Shape{0}}, {"keepdims", int64_t(1)}});
       }},
      {"reduce_max over everything", [=](auto* a) { return op("reduce_max", {input({3, n}, "x", a)}); }},
      {"softmax, last axis", [=](auto* a) { return op("softmax", {input({4, n}, "x", a)}); }},
      {"softmax, axis 0", [=](auto* a) { return op("softmax", {input({n, 3, 4}, "x", a)}, {{"axis", int64_t(0)}}); }},
      {"layer_norm + gelu",
       [=](auto* a) {
         Tensor x = input({3, n}, "x", a), g = input({n}, "g", a), b = input({n}, "b", a);
         return op("gelu", {op("layer_norm", {x, g, b})});
       }},
      {"max_pool2d NCHW", [=](auto* a) {
         return op("max_pool2d", {input({1, 3, n, n}, "x", a)},
                   {{"pool_size", Shape{3, 3}}, {"strides", Shape{2, 2}}, {"padding", Shape{1, 1}}});
       }},
      {"avg_pool2d NCHW16c", [=](auto* a) {
         return op("avg_pool2d", {input({1, 2, n, 9, 16}, "x", a)},
                   {{"pool_size", Shape{3, 3}}, {"padding", Shape{1, 1}}, {"layout", std::string("NCHW16c")}});
       }},
      {"global_avg_pool2d NCHW + flatten",
       [=](auto* a) { return op("flatten", {op("global_avg_pool2d", {input({1, 20, 7, n}, "x", a)})}); }},
      {"global_avg_pool2d NCHW16c", [=](auto* a) {
         return op("global_avg_pool2d", {input({1, 2, 7, n, 16}, "x", a)}, {{"layout", std::string("NCHW16c")}});
       }},
      {"global_avg_pool2d NCHW16c + layout_transform + flatten (ResNet-18's last group)",
       [=](auto* a) {
         // 4 channel blocks take a tile of 4 accumulators; 3 (n odd) take none.
         Tensor p = op("global_avg_pool2d", {input({1, n % 2 ? 3 : 4, 7, 7, 16}, "x", a)},
                       {{"layout", std::string("NCHW16c")}});
         return op("flatten", {op("layout_transform", {p}, {{"src_layout", std::string("NCHW16c")},
                                                            {"dst_layout", std::string("NCHW")}})});
       }},
      {"conv2d of 3 input channels, dilated (no template) + relu",
       [=](auto* a) {
         Tensor c = op("conv2d", {input({1, 3, n, n}, "x", a), input({8, 3, 3, 3}, "w", a)},
                       {{"dilation", Shape{2, 2}}, {"padding", Shape{1, 1}}});
         return op("relu", {c});
       }},
      {"take along axis 1", [=](auto* a) {
         Tensor x = input({4, n}, "x", a);
         Tensor i = te::placeholder({3}, DataType::Int(32), "i");
         a->push_back(i);
         return op("take", {x, i}, {{"axis", int64_t(1)}});
       }},
  };
}

TEST(ScheduleByPattern, ReductionsPoolingNormalizationAndTransformsMatch) {
  for (int64_t n : {int64_t(lanes()) * 2, int64_t(13)}) {
    for (const Case& c : other_cases(n)) {
      SCOPED_TRACE(testing::Message() << c.what << ", n = " << n);
      std::vector<Tensor> args;
      Tensor out = c.make(&args);
      args.push_back(out);
      std::string why;
      Schedule s = schedule_by_pattern({out}, Target("llvm"), &why);
      EXPECT_MATCHES_REFERENCE(s, args) << why;
      // Never a naive loop nest: some loop is vectorized.
      std::string ir = lowering::to_string(lowering::lower(s, args, "f"));
      EXPECT_NE(ir.find("ramp("), std::string::npos) << why << ir;
    }
  }
}

TEST(ScheduleByPattern, RowReductionsAreRfactoredAndKeptAxesVectorized) {
  std::vector<Tensor> args;
  Tensor sum = op("reduce_sum", {input({8, 100}, "x", &args)}, {{"axes", Shape{1}}});
  std::string why;
  schedule_by_pattern({sum}, Target("llvm"), &why);
  EXPECT_NE(why.find("rfactor"), std::string::npos) << why;
  args.clear();
  Tensor pool = op("max_pool2d", {input({1, 4, 20, 20, 16}, "x", &args)},
                   {{"pool_size", Shape{2, 2}}, {"strides", Shape{2, 2}}, {"layout", std::string("NCHW16c")}});
  why.clear();
  Schedule s = schedule_by_pattern({pool}, Target("llvm"), &why);
  EXPECT_NE(why.find("across the kept axis"), std::string::npos) << why;
  args.push_back(pool);
  lowering::VectorizationReport r;
  lowering::LowerOptions opts;
  opts.vector_report = &r;
  lowering::lower(s, args, "f", opts);
  EXPECT_EQ(r.entries.size(), 0u) << "a blocked pool reads whole channel vectors\n" << r.to_string();

  // An NCHW pool whose output width (56) the lanes do not divide but a narrower vector does:
  // every tile has the same constant width, so the accumulator tile is vector code.
  args.clear();
  Tensor nchw = op("max_pool2d", {input({1, 2, 112, 112}, "x", &args)},
                   {{"pool_size", Shape{3, 3}}, {"strides", Shape{2, 2}}, {"padding", Shape{1, 1}}});
  args.push_back(nchw);
  Schedule s2 = schedule_by_pattern({nchw}, Target("llvm"));
  std::string ir = lowering::to_string(lowering::lower(s2, args, "f"));
  EXPECT_NE(ir.find("max_pool2d.local[ramp(0, 1, "), std::string::npos) << ir;
  EXPECT_MATCHES_REFERENCE(s2, args);
}

TEST(ScheduleByPattern, LargeStagesRunTheirFusedOuterLoopsInParallel) {
  // Rows and the column vectors' outer loop fused into one parallel loop: 128 x (3072 / lanes).
  std::vector<Tensor> args;
  Tensor x = input({128, 3072}, "x", &args);
  Tensor out = op("multiply", {x, op("erf", {x})});
  args.push_back(out);
  Schedule s = schedule_by_pattern({out}, Target("llvm"));
  std::ostringstream ir;
  ir << lowering::lower(s, args, "f").body;
  // Less than 2^20 elements: one task per thread (parallel_task_per_thread), not the pool's 8.
  EXPECT_NE(ir.str().find(fmt::format(", 0, {}) parallel parallel_task_per_thread=1 {{", 128 * 3072 / lanes())),
            std::string::npos)
      << ir.str();
  EXPECT_MATCHES_REFERENCE(s, args);

  args.clear();
  Tensor big = input({512, 3072}, "x", &args);
  Tensor out2 = op("multiply", {big, op("erf", {big})});
  args.push_back(out2);
  std::ostringstream ir2;
  ir2 << lowering::lower(schedule_by_pattern({out2}, Target("llvm")), args, "f").body;
  EXPECT_NE(ir2.str().find(fmt::format(", 0, {}) parallel {{", 512 * 3072 / lanes())), std::string::npos) << ir2.str();
}

TEST(ScheduleByPattern, GlobalPoolSumsFourChannelBlocksAtOnce) {
  // ResNet-18's global pool: 32 blocks of 16 channels over 7x7. One accumulator vector per
  // block would wait on a chain of 49 dependent adds; four blocks' sums interleave.
  std::vector<Tensor> args;
  Tensor p = op("global_avg_pool2d", {input({1, 32, 7, 7, 16}, "x", &args)}, {{"layout", std::string("NCHW16c")}});
  args.push_back(p);
  std::string why;
  Schedule s = schedule_by_pattern({p}, Target("llvm"), &why);
  if (lanes() != 16) GTEST_SKIP() << "the tile is chosen for 16 float lanes (AVX-512); this CPU has " << lanes();
  EXPECT_NE(why.find("4 vectors of it along"), std::string::npos) << why;
  std::string ir = lowering::to_string(lowering::lower(s, args, "f"));
  EXPECT_NE(ir.find("pool_sum.local[ramp(48, 1, 16)] = (pool_sum.local[ramp(48, 1, 16)] +"), std::string::npos) << ir;
  EXPECT_NE(ir.find("parallel parallel_task_per_thread=1"), std::string::npos) << ir;
  EXPECT_MATCHES_REFERENCE(s, args);
}

TEST(ScheduleByPattern, CudaSchedulesBindThreads) {
  std::vector<Tensor> args;
  Tensor out = op("relu", {op("add", {input({3, 40}, "x", &args), input({40}, "y", &args)})});
  args.push_back(out);
  Schedule s = schedule_by_pattern({out}, Target("cuda"));
  lowering::LoweredFunc f = lowering::lower(s, args, "f", lowering::LowerOptions{.target = Target("cuda")});
  ASSERT_EQ(f.device_funcs.size(), 1u);
  std::string src = codegen::cuda_source(f);
  EXPECT_NE(src.find("threadIdx.x"), std::string::npos) << src;
  EXPECT_NE(src.find("120"), std::string::npos) << "120 threads in one block:\n" << src;
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "NVRTC not available: " << codegen::nvrtc_unavailable_reason();
  EXPECT_NE(codegen::compile_to_ptx(src, "sm_80").find(".entry"), std::string::npos);
}

}  // namespace
}  // namespace loom::tuner
