// Fused kernels: groups composed from the operator registry's computes, scheduled by their
// anchor's template with the epilogue in the output tile (schedule_fused), compiled and
// compared with te::evaluate of the group as composed; the template registry keyed by
// target; tuned configs of the bare workload applied to the fused kernel.
#include "loom/tuner/fused.h"

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/cuda.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

using Shape = std::vector<int64_t>;
using te::Tensor;
using te::ops::Attrs;

/// A group composed from registry computes (the reference), with the kernel the graph hands
/// the tuner for it (FusedKernel: its operators as an op graph).
struct TestGroup {
  std::vector<Tensor> inputs, outputs;
  /// The anchor's strategy for the target.
  std::optional<te::ops::TemplateCall> call;
};

struct Group {
  TestGroup g;
  struct Op {
    std::string name;
    std::vector<Tensor> in;
    Attrs attrs;
    std::vector<Tensor> out;
  };
  std::vector<Op> ops;
  int anchor_op = -1;
  Tensor input(const Shape& s, const std::string& name) {
    std::vector<te::Expr> e;
    for (int64_t d : s) e.push_back(te::Expr(int(d)));
    Tensor t = te::placeholder(e, DataType::Float(32), name);
    g.inputs.push_back(t);
    return t;
  }
  Tensor op(const std::string& name, const std::vector<Tensor>& in, const Attrs& attrs = {}) {
    ops.push_back({name, in, attrs, te::ops::apply_op(name, in, attrs)});
    return ops.back().out.at(0);
  }
  /// `name` as the group's anchor, with its strategy for `target`.
  Tensor anchor(const std::string& name, const std::vector<Tensor>& in, const Attrs& attrs = {},
                const std::string& target = "llvm") {
    std::vector<te::ops::TensorType> types;
    for (const Tensor& t : in) {
      te::ops::TensorType tt;
      for (const auto& e : t.shape()) tt.shape.push_back(*te::as_const_int(e));
      types.push_back(tt);
    }
    g.call = te::ops::select_template(name, target, types, attrs);
    anchor_op = int(ops.size());
    return op(name, in, attrs);
  }
  /// The kernel of the group's operators.
  FusedKernel kernel() const {
    FusedKernel k;
    std::map<Tensor, int> value;
    for (const Tensor& t : g.inputs) {
      value[t] = int(k.graph.inputs.size());
      te::ops::TensorType tt;
      for (const auto& e : t.shape()) tt.shape.push_back(*te::as_const_int(e));
      k.graph.inputs.push_back(tt);
    }
    int next = int(g.inputs.size());
    for (const Op& o : ops) {
      std::vector<int> in;
      for (const Tensor& t : o.in) in.push_back(value.at(t));
      k.graph.add(o.name, in, o.attrs);
      for (const Tensor& t : o.out) value[t] = next++;
    }
    for (const Tensor& t : g.outputs) k.graph.outputs.push_back(value.at(t));
    k.anchor = anchor_op;
    return k;
  }
};

/// Builds `fs` and runs it on random inputs bound by position, against te::evaluate of the
/// group as composed (not of the template's rebuilt computation); "" on a match.
std::string run_against_group(const TestGroup& g, const FusedSchedule& fs, uint64_t seed = 1) {
  try {
    auto inputs = test::random_inputs(g.inputs, seed);
    std::vector<runtime::NDArray> want = te::evaluate(g.outputs, inputs);
    runtime::Module m = build(fs.schedule, fs.args, Target("llvm"), "f");
    std::vector<runtime::NDArray> got;
    std::vector<DLTensor*> dl;
    for (const Tensor& t : g.inputs) dl.push_back(inputs.at(t).dltensor());
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      got.push_back(runtime::NDArray::empty(want[i].shape(), DataType::Float(32)));
      for (int64_t j = 0; j < got.back().numel(); ++j) got.back().set(j, 12345);
      dl.push_back(got.back().dltensor());
    }
    m.get_function("f").call(dl);
    for (size_t i = 0; i < got.size(); ++i) {
      std::string err = test::compare_arrays(got[i], want[i], test::tolerance_for(DataType::Float(32)), "output");
      if (!err.empty()) return err;
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

/// The lowered IR of a fused schedule.
std::string ir_of(const FusedSchedule& fs) {
  return lowering::to_string(lowering::lower(fs.schedule, fs.args, "f"));
}

// ---------------------------------------------------------------- the template registry

TEST(TemplateRegistry, OneOpNameServesEveryTarget) {
  EXPECT_EQ(get_template("matmul", "cuda").targets, std::vector<std::string>{"cuda"});
  EXPECT_EQ(get_template("matmul", "llvm").targets, std::vector<std::string>{"llvm"});
  EXPECT_EQ(get_template("matmul").targets, std::vector<std::string>{"llvm"});
  EXPECT_EQ(&get_template("matmul_cuda", "cuda"), &get_template("matmul", "cuda"));
  EXPECT_EQ(get_template("conv2d_nchw_cuda").name, "conv2d_nchw");
  EXPECT_EQ(find_template("matmul_cuda", "llvm"), nullptr);
  Task t = Task::create("matmul", {64, 32, 16}, Target("cuda"));
  EXPECT_EQ(t.tmpl().targets, std::vector<std::string>{"cuda"});
  EXPECT_EQ(t.key(), "matmul(64,32,16;float32)");
  // A task keeps the name it was made with (old logs keep matching).
  EXPECT_EQ(Task::create("matmul_cuda", {64, 32, 16}, Target("cuda")).key(), "matmul_cuda(64,32,16;float32)");
  int llvm_matmuls = 0;
  for (const Template* tp : templates()) llvm_matmuls += tp->name == "matmul";
  EXPECT_EQ(llvm_matmuls, 2);  // one per target
  try {
    get_template("dense_pack", "cuda");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not support target 'cuda' (it supports: llvm)"), std::string::npos)
        << e.what();
  }
}

TEST(TemplateRegistry, RecordsUnderAnAliasStillApply) {
  Task t = Task::create("matmul", {64, 32, 16}, Target("cuda"));
  records::Record r;
  r.workload = t.workload();
  r.workload.op = "matmul_cuda";
  r.target = t.target().str();
  r.config = t.space().get(3).to_record();
  r.result.costs = {1e-6};
  records::ApplyHistoryBest best;
  best.add(r);
  ASSERT_TRUE(best_record(t, best));
  EXPECT_EQ(best_record(t, best)->config.index, 3);
  // And the other way round: a task under the old name finds records of the new one.
  Task old = Task::create("matmul_cuda", {64, 32, 16}, Target("cuda"));
  r.workload.op = "matmul";
  records::ApplyHistoryBest best2;
  best2.add(r);
  ASSERT_TRUE(best_record(old, best2));
  EXPECT_FALSE(best_record(Task::create("matmul", {64, 32, 16}, Target("llvm")), best2));
}

// ---------------------------------------------------------------- fused kernels

TEST(Fused, Conv2dNchwcBiasResidualReluInTheOutputTile) {
  Group b;
  Tensor x = b.input({1, 2, 9, 10, 16}, "x"), w = b.input({2, 2, 3, 3, 16, 16}, "w");
  Tensor bias = b.input({32}, "bias"), res = b.input({1, 2, 9, 10, 16}, "residual");
  Tensor conv = b.anchor("conv2d_nchwc", {x, w}, {{"padding", std::vector<int64_t>{1, 1}}});
  Tensor y = b.op("relu", {b.op("add", {b.op("bias_add", {conv, bias}, {{"layout", std::string("NCHW16c")}}), res})});
  b.g.outputs = {y};
  ASSERT_TRUE(b.g.call);
  FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
  EXPECT_EQ(fs.source, ScheduleSource::kDefault) << fs.note;
  EXPECT_EQ(fs.workload_key, "conv2d_nchwc(1,32,9,10,32,3,3;float32;pad=1,stride=1)");
  EXPECT_NE(fs.note.find("no tuning record"), std::string::npos) << fs.note;
  EXPECT_NE(fs.note.find("fused epilogue"), std::string::npos) << fs.note;
  EXPECT_EQ(run_against_group(b.g, fs), "");
  // The convolution accumulates in a local tile; no global buffer holds it.
  std::string ir = ir_of(fs);
  size_t at = ir.find("allocate conv2d_nchwc: ");
  ASSERT_NE(at, std::string::npos) << ir;
  std::string line = ir.substr(at, ir.find('\n', at) - at);
  EXPECT_NE(line.find("\"local\""), std::string::npos) << line;
  EXPECT_EQ(ir.find("bias_add"), std::string::npos) << "the epilogue is inlined into the store\n" << ir;
}

TEST(Fused, SiluEpilogueReadsTheAccumulatorsUnrolled) {
  // x·sigmoid(x) after conv + bias: a long epilogue that LLVM left in a rolled loop, which
  // kept the accumulators in memory and halved the convolution's speed. The tile's loops are
  // unrolled by the template: no loop over the tile remains around the store.
  for (Shape hw : {Shape{8, 10}, Shape{9, 7}}) {
    Group b;
    Tensor x = b.input({1, 2, hw[0], hw[1], 16}, "x"), w = b.input({4, 2, 3, 3, 16, 16}, "w");
    Tensor bias = b.input({64}, "bias");
    Tensor conv = b.anchor("conv2d_nchwc", {x, w}, {{"padding", std::vector<int64_t>{1, 1}}});
    Tensor c = b.op("bias_add", {conv, bias}, {{"layout", std::string("NCHW16c")}});
    b.g.outputs = {b.op("multiply", {c, b.op("sigmoid", {c})})};
    FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
    EXPECT_EQ(fs.source, ScheduleSource::kDefault) << fs.note;
    EXPECT_EQ(run_against_group(b.g, fs), "") << hw[0] << "x" << hw[1];
    std::string ir = ir_of(fs);
    EXPECT_EQ(ir.find("for (ax3.inner"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("for (ax1.inner"), std::string::npos) << ir;
    EXPECT_NE(ir.find("sigmoid("), std::string::npos) << ir;
  }
}

TEST(Fused, EveryCpuAnchorTemplateTakesAnEpilogue) {
  struct Case {
    std::string what;
    std::function<void(Group&)> make;
    std::string workload_prefix;
  };
  std::vector<Case> cases = {
      {"conv2d NCHW (K=20, not a multiple of 16) + bias + residual + relu",
       [](Group& b) {
         Tensor x = b.input({1, 3, 10, 11}, "x"), w = b.input({20, 3, 3, 3}, "w"), bias = b.input({20}, "bias");
         Tensor res = b.input({1, 20, 10, 11}, "res");
         Tensor c = b.anchor("conv2d", {x, w, bias}, {{"padding", std::vector<int64_t>{1, 1}}});
         b.g.outputs = {b.op("relu", {b.op("add", {c, res})})};
       },
       "conv2d_nchw("},
      {"a first layer: conv2d_nchwc of NCHW data (3 channels) to NCHW16c + bias + relu",
       [](Group& b) {
         Tensor x = b.input({1, 3, 15, 14}, "x"), w = b.input({2, 3, 3, 3, 16}, "w"), bias = b.input({32}, "bias");
         Tensor c = b.anchor("conv2d_nchwc", {x, w, bias},
                             {{"layout", std::string("NCHW")}, {"strides", std::vector<int64_t>{2, 2}},
                              {"padding", std::vector<int64_t>{1, 1}}});
         b.g.outputs = {b.op("relu", {c})};
       },
       "conv2d_nchwc("},
      {"depthwise conv2d (groups = C) + batch_norm + clip (relu6)",
       [](Group& b) {
         Tensor x = b.input({1, 5, 11, 10}, "x"), w = b.input({5, 1, 3, 3}, "w");
         std::vector<Tensor> p;
         for (const char* n : {"gamma", "beta", "mean", "var"}) p.push_back(b.input({5}, n));
         Tensor c = b.anchor("conv2d", {x, w},
                             {{"groups", int64_t(5)}, {"strides", std::vector<int64_t>{2, 2}},
                              {"padding", std::vector<int64_t>{1, 1}}});
         Tensor bn = b.op("batch_norm", {c, p[0], p[1], p[2], p[3]});
         b.g.outputs = {b.op("clip", {bn}, {{"min", 0.0}, {"max", 6.0}})};
       },
       "depthwise_conv2d_nchw("},
      {"depthwise_conv2d_nchwc + bias + relu",
       [](Group& b) {
         Tensor x = b.input({1, 2, 9, 9, 16}, "x"), w = b.input({2, 1, 3, 3, 1, 16}, "w"), bias = b.input({32}, "bias");
         Tensor c = b.anchor("depthwise_conv2d_nchwc", {x, w, bias}, {{"padding", std::vector<int64_t>{1, 1}}});
         b.g.outputs = {b.op("relu", {c})};
       },
       "depthwise_conv2d_nchwc("},
      {"dense + bias + relu",
       [](Group& b) {
         Tensor x = b.input({9, 33}, "x"), w = b.input({20, 33}, "w"), bias = b.input({20}, "bias");
         b.g.outputs = {b.op("relu", {b.anchor("dense", {x, w, bias})})};
       },
       "dense("},
      {"dense_pack + bias + sigmoid",
       [](Group& b) {
         Tensor x = b.input({4, 17}, "x"), w = b.input({2, 17, 16}, "w"), bias = b.input({30}, "bias");
         Tensor d = b.anchor("dense_pack", {x, w}, {{"units", int64_t(30)}});
         b.g.outputs = {b.op("sigmoid", {b.op("bias_add", {d, bias})})};
       },
       "dense_pack("},
      {"matmul + residual add + gelu",
       [](Group& b) {
         Tensor a = b.input({7, 13}, "a"), w = b.input({13, 21}, "b"), r = b.input({7, 21}, "r");
         b.g.outputs = {b.op("gelu", {b.op("add", {b.anchor("matmul", {a, w}), r})})};
       },
       "matmul("},
      {"matmul with transpose_b (dense's template) + a broadcast scale",
       [](Group& b) {
         Tensor a = b.input({6, 10}, "a"), w = b.input({18, 10}, "bt"), s = b.input({1}, "scale");
         b.g.outputs = {b.op("multiply", {b.anchor("matmul", {a, w}, {{"transpose_b", int64_t(1)}}), s})};
       },
       "dense("},
      {"batch_matmul + scale + a [M,N] mask",
       [](Group& b) {
         Tensor a = b.input({2, 5, 8}, "a"), w = b.input({2, 8, 19}, "b"), s = b.input({1}, "scale");
         Tensor mask = b.input({5, 19}, "mask");
         b.g.outputs = {b.op("add", {b.op("multiply", {b.anchor("batch_matmul", {a, w}), s}), mask})};
       },
       "batch_matmul("},
      {"batch_matmul with transpose_b (Q·K^T) + scale",
       [](Group& b) {
         Tensor q = b.input({3, 7, 8}, "q"), k = b.input({3, 7, 8}, "k"), s = b.input({1}, "scale");
         b.g.outputs = {b.op("multiply", {b.anchor("batch_matmul", {q, k}, {{"transpose_b", int64_t(1)}}), s})};
       },
       "batch_matmul("},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Group b;
    c.make(b);
    ASSERT_TRUE(b.g.call);
    FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
    EXPECT_EQ(fs.source, ScheduleSource::kDefault) << fs.note;
    EXPECT_EQ(fs.workload_key.rfind(c.workload_prefix, 0), 0u) << fs.workload_key;
    EXPECT_EQ(run_against_group(b.g, fs), "");
  }
}

TEST(Fused, TheBareWorkloadsTunedConfigSchedulesTheFusedKernel) {
  Group b;
  Tensor x = b.input({1, 1, 8, 8, 16}, "x"), w = b.input({1, 1, 3, 3, 16, 16}, "w"), bias = b.input({16}, "bias");
  Tensor c = b.anchor("conv2d_nchwc", {x, w}, {{"padding", std::vector<int64_t>{1, 1}}});
  b.g.outputs = {b.op("relu", {b.op("bias_add", {c, bias}, {{"layout", std::string("NCHW16c")}})})};
  Task task = Task::create("conv2d_nchwc", {1, 16, 8, 8, 16, 3, 3}, Target("llvm"), "float32",
                           {{"stride", "1"}, {"pad", "1"}});
  ASSERT_EQ(task.key(), schedule_fused(b.kernel(), Target("llvm")).workload_key);
  // Two records of the bare workload; the faster one's config must schedule the fused kernel.
  records::ApplyHistoryBest best;
  int64_t fast = -1;
  for (int64_t idx = 1; idx < task.space().size() && fast < 0; ++idx) {
    try {
      task.instantiate(idx);
      fast = idx;
    } catch (const InstantiationError&) {
    }
  }
  ASSERT_GE(fast, 0);
  for (auto [idx, cost] : {std::pair{fast, 1e-6}, std::pair{task.default_index(), 1e-3}}) {
    records::Record r;
    r.workload = task.workload();
    r.target = task.target().str();
    r.config = task.space().get(idx).to_record();
    r.result.costs = {cost};
    best.add(r);
  }
  FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"), &best);
  EXPECT_EQ(fs.source, ScheduleSource::kTuned) << fs.note;
  EXPECT_EQ(fs.config_index, fast);
  EXPECT_NE(fs.note.find("tuned config " + std::to_string(fast)), std::string::npos) << fs.note;
  EXPECT_EQ(run_against_group(b.g, fs), "");
  // The fused kernel's space is the bare task's: every config index means the same.
  EXPECT_EQ(to_string(fs.source), std::string("tuned"));
}

TEST(Fused, GroupsNoTemplateTakesGetAPatternScheduleAndSayWhy) {
  {  // dilation: no template
    Group b;
    Tensor x = b.input({1, 3, 12, 12}, "x"), w = b.input({8, 3, 3, 3}, "w");
    b.g.outputs = {b.op("relu", {b.anchor("conv2d", {x, w}, {{"dilation", std::vector<int64_t>{2, 2}}})})};
    FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
    EXPECT_EQ(fs.source, ScheduleSource::kPattern);
    EXPECT_NE(fs.note.find("no template"), std::string::npos) << fs.note;
    EXPECT_EQ(run_against_group(b.g, fs), "");
  }
  {  // a reduction after the anchor is no epilogue
    Group b;
    Tensor x = b.input({4, 9}, "x"), w = b.input({12, 9}, "w");
    b.g.outputs = {b.op("softmax", {b.anchor("dense", {x, w})})};
    FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
    EXPECT_EQ(fs.source, ScheduleSource::kPattern);
    EXPECT_NE(fs.note.find("cannot schedule the kernel"), std::string::npos) << fs.note;
    EXPECT_EQ(run_against_group(b.g, fs), "");
  }
  {  // two outputs
    Group b;
    Tensor x = b.input({4, 9}, "x"), w = b.input({12, 9}, "w");
    Tensor d = b.anchor("dense", {x, w});
    b.g.outputs = {d, b.op("relu", {d})};
    FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
    EXPECT_EQ(fs.source, ScheduleSource::kPattern);
    EXPECT_EQ(run_against_group(b.g, fs), "");
  }
  {  // no anchor at all: an injective chain
    Group b;
    Tensor x = b.input({3, 20}, "x"), y = b.input({20}, "y");
    b.g.outputs = {b.op("tanh", {b.op("add", {x, y})})};
    FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
    EXPECT_EQ(fs.source, ScheduleSource::kPattern);
    EXPECT_EQ(run_against_group(b.g, fs), "");
  }
  {  // an anchor reading a value computed in the group (a fused pad)
    Group b;
    Tensor x = b.input({1, 3, 8, 8}, "x"), w = b.input({4, 3, 3, 3}, "w");
    Tensor p = b.op("pad", {x}, {{"pads", std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}}});
    b.g.outputs = {b.op("relu", {b.anchor("conv2d", {p, w})})};
    FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
    EXPECT_EQ(fs.source, ScheduleSource::kPattern);
    EXPECT_NE(fs.note.find("computed in the group"), std::string::npos) << fs.note;
    EXPECT_EQ(run_against_group(b.g, fs), "");
  }
  Group bad;  // malformed kernels: no outputs, an anchor out of range
  Tensor x = bad.input({4, 9}, "x");
  bad.g.outputs = {bad.op("relu", {x})};
  FusedKernel k = bad.kernel();
  k.anchor = 3;
  EXPECT_THROW(schedule_fused(k, Target("llvm")), Error);
  k.anchor = -1;
  k.graph.outputs.clear();
  EXPECT_THROW(schedule_fused(k, Target("llvm")), Error);
}

// The GPU templates take the epilogue into each thread's store; without a GPU the kernels
// are compiled to PTX by NVRTC (the GPU test suites run them).
TEST(Fused, CudaTemplatesTakeAnEpilogue) {
  std::vector<std::pair<std::string, std::function<void(Group&)>>> cases = {
      {"matmul + bias + relu",
       [](Group& b) {
         Tensor a = b.input({64, 32}, "a"), w = b.input({32, 48}, "b"), bias = b.input({48}, "bias");
         b.g.outputs = {b.op("relu", {b.op("bias_add", {b.anchor("matmul", {a, w}, {}, "cuda"), bias}, {{"axis", int64_t(1)}})})};
       }},
      {"conv2d + bias + residual + relu",
       [](Group& b) {
         Tensor x = b.input({1, 8, 14, 14}, "x"), w = b.input({16, 8, 3, 3}, "w"), bias = b.input({16}, "bias");
         Tensor r = b.input({1, 16, 14, 14}, "r");
         Tensor c = b.anchor("conv2d", {x, w, bias}, {{"padding", std::vector<int64_t>{1, 1}}}, "cuda");
         b.g.outputs = {b.op("relu", {b.op("add", {c, r})})};
       }},
  };
  for (auto& [what, make] : cases) {
    SCOPED_TRACE(what);
    Group b;
    make(b);
    ASSERT_TRUE(b.g.call);
    FusedSchedule fs = schedule_fused(b.kernel(), Target("cuda"));
    EXPECT_EQ(fs.source, ScheduleSource::kDefault) << fs.note;
    lowering::LoweredFunc f;
    try {
      f = lowering::lower(fs.schedule, fs.args, "f", lowering::LowerOptions{.target = Target("cuda")});
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    ASSERT_EQ(f.device_funcs.size(), 1u);
    std::string src = codegen::cuda_source(f);
    EXPECT_NE(src.find("max("), std::string::npos) << "relu in the kernel\n" << src;
    if (codegen::nvrtc_available()) EXPECT_NE(codegen::compile_to_ptx(src, "sm_80").find(".entry"), std::string::npos);
  }
}

// The preferred tile (2 channel blocks x 14 columns) adapts to the shape; where the closest
// values overflow the 28 accumulators (3 blocks x 16 columns) the default must still be a
// config the template instantiates (MobileNetV2's 48-channel layers at 16x16).
TEST(Templates, NchwcDefaultsFitTheRegisterBudget) {
  for (const auto& [op, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"conv2d_nchwc", {1, 48, 16, 16, 48, 1, 1}},
           {"conv2d_nchwc", {1, 48, 32, 32, 48, 3, 3}},
           {"depthwise_conv2d_nchwc", {1, 48, 16, 16, 3, 3}}}) {
    Task t = Task::create(op, shape, Target("llvm"));
    EXPECT_NO_THROW(t.instantiate_default()) << t.key() << ": " << t.space().get(t.default_index()).str();
  }
}

/// "" when every access of the register tile `acc` (a "local" anchor) in `ir` has a constant
/// index, else the first that does not.
std::string loop_indexed_accumulator_access(const std::string& ir, const std::string& acc) {
  const std::string access = acc + "[ramp(";
  int accesses = 0;
  for (size_t at = ir.find(access); at != std::string::npos; at = ir.find(access, at + 1)) {
    if (at > 0 && ir[at - 1] != ' ' && ir[at - 1] != '(') continue;
    ++accesses;
    const char next = ir[at + access.size()];
    if (next < '0' || next > '9') return ir.substr(at, ir.find('\n', at) - at);
  }
  return accesses ? "" : "no access of '" + acc + "' at all";
}

// An epilogue that calls a vector function (GELU's erf, SiLU's exp) must not keep the register
// tile on the stack: the tile's write-out is unrolled, so the accumulator is read at constant
// indices only, on tiles with row and column tails (13 rows in 8-row tiles, 40 columns in 48).
/// Schedules `b`'s group, checks it against the group and that its register tile `acc`
/// (allocated "local") is accessed at constant indices only.
void expect_tile_in_registers(const Group& b, const std::string& acc) {
  ASSERT_TRUE(b.g.call);
  FusedSchedule fs = schedule_fused(b.kernel(), Target("llvm"));
  EXPECT_EQ(run_against_group(b.g, fs), "");
  const std::string ir = ir_of(fs);
  ASSERT_NE(ir.find("allocate " + acc + ": "), std::string::npos) << ir;
  EXPECT_EQ(loop_indexed_accumulator_access(ir, acc), "");
}

TEST(Fused, CallingEpiloguesReadTheAccumulatorAtConstantIndices) {
  {
    Group b;
    Tensor x = b.input({13, 24}, "x"), w = b.input({3, 24, 16}, "w"), bias = b.input({40}, "bias");
    Tensor d = b.anchor("dense_pack", {x, w}, {{"units", int64_t(40)}});
    b.g.outputs = {b.op("gelu", {b.op("bias_add", {d, bias})})};
    expect_tile_in_registers(b, "dense");
  }
  {
    Group b;
    Tensor x = b.input({1, 1, 9, 10, 16}, "x"), w = b.input({2, 1, 3, 3, 16, 16}, "w");
    Tensor c = b.anchor("conv2d_nchwc", {x, w}, {{"padding", std::vector<int64_t>{1, 1}}});
    b.g.outputs = {b.op("multiply", {c, b.op("sigmoid", {c})})};
    expect_tile_in_registers(b, "conv2d_nchwc");
  }
  {
    Group b;
    Tensor x = b.input({1, 2, 9, 9, 16}, "x"), w = b.input({2, 1, 3, 3, 1, 16}, "w");
    Tensor c = b.anchor("depthwise_conv2d_nchwc", {x, w}, {{"padding", std::vector<int64_t>{1, 1}}});
    b.g.outputs = {b.op("multiply", {c, b.op("sigmoid", {c})})};
    expect_tile_in_registers(b, "depthwise_conv2d_nchwc");
  }
}

// Fewer rows than columns (a dense layer over a few hundred tokens): the untuned config runs
// the column panels outermost, so that the weight streams through the cache once; square
// products keep rows outermost.
TEST(Templates, GemmDefaultStreamsTheLargerOperandOnce) {
  for (const char* op : {"dense_pack", "dense", "matmul"}) {
    Task tall = Task::create(op, {197, 3072, 768}, Target("llvm"));
    ConfigEntity t = tall.space().get(tall.default_index());
    EXPECT_EQ(t.value("cols_outer"), (std::vector<int64_t>{1})) << op << ": " << t.str();
    EXPECT_EQ(t.value("tile_y").back(), 8) << op << ": " << t.str();  // with a tail: 197 is prime
    EXPECT_EQ(t.value("tile_x").back(), 48) << op << ": " << t.str();
    Task square = Task::create(op, {256, 256, 256}, Target("llvm"));
    EXPECT_EQ(square.space().get(square.default_index()).value("cols_outer"), (std::vector<int64_t>{0})) << op;
  }
}

TEST(Fused, DenseBiasReluIsDenseWithAnEpilogue) {
  Task old = Task::create("dense_bias_relu", {9, 20, 11}, Target("llvm"));
  Task dense = Task::create("dense", {9, 20, 11}, Target("llvm"));
  EXPECT_EQ(old.space().size(), dense.space().size());
  EXPECT_EQ(old.default_index(), dense.default_index());
  Instance inst = old.instantiate_default();
  ASSERT_EQ(inst.args.size(), 4u);
  EXPECT_MATCHES_REFERENCE(inst.schedule, inst.args);
  std::string ir = lowering::to_string(lowering::lower(inst.schedule, inst.args, "f"));
  EXPECT_NE(ir.find("allocate dense: float32["), std::string::npos) << ir;
  EXPECT_NE(ir.find("\"local\""), std::string::npos) << ir;
}

}  // namespace
}  // namespace loom::tuner
