// The int8 templates (matmul_int8, conv2d_nchwc_int8): random configs of each, with and
// without tails and requantization, compiled and compared exactly with te::evaluate on inputs
// over the whole uint8/int8 ranges; the measurer's exact check of integer outputs.
#include <gtest/gtest.h>

#include <random>

#include "loom/loom.h"
#include "loom/te/evaluate.h"
#include "loom/tuner/measure.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

using records::ErrorCode;

bool host_has_avx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

/// "" if config `index` of `task` computes what te::evaluate does, exactly (an
/// InstantiationError counts as a match: the template rejected the config).
std::string check_config(const Task& task, int64_t index, const Target& target) {
  Instance inst;
  try {
    inst = task.instantiate(index);
  } catch (const InstantiationError&) {
    return "";
  }
  try {
    std::map<te::Tensor, runtime::NDArray> in;
    std::vector<te::Tensor> outs;
    uint64_t seed = uint64_t(index) + 3;
    for (const te::Tensor& t : inst.args) {
      if (t.op()->kind != te::OpKind::kPlaceholder) {
        outs.push_back(t);
        continue;
      }
      std::vector<int64_t> shape;
      for (const te::Expr& d : t.shape()) shape.push_back(*te::as_const_int(d));
      auto a = runtime::NDArray::empty(shape, t.dtype());
      DataType dt = t.dtype();
      if (dt.bits() == 8) a.fill_random(seed++, dt.is_uint() ? 0 : -128, dt.is_uint() ? 255 : 127);
      else a.fill_random(seed++, -100000, 100000);  // int32 bias
      in[t] = a;
    }
    std::vector<runtime::NDArray> want = te::evaluate(outs, in);
    runtime::Module m = build(inst.schedule, inst.args, target, "f");
    std::vector<runtime::NDArray> arrays;
    std::vector<DLTensor*> dl;
    for (const te::Tensor& t : inst.args) {
      if (t.op()->kind == te::OpKind::kPlaceholder) {
        arrays.push_back(in.at(t));
      } else {
        arrays.push_back(runtime::NDArray::empty(want[0].shape(), t.dtype()));
        for (int64_t i = 0; i < arrays.back().numel(); ++i) arrays.back().set(i, 99);
      }
      dl.push_back(arrays.back().dltensor());
    }
    m.get_function("f").call(dl);
    const runtime::NDArray& got = arrays.back();
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (got.get(i) != want[0].get(i))
        return fmt::format("config {} ({}) on {}: element {} is {}, expected {}", index,
                           task.space().get(index).str(), target.str(), i, got.get(i), want[0].get(i));
    }
    return "";
  } catch (const std::exception& e) {
    return fmt::format("config {}: {}", index, e.what());
  }
}

/// The default config and `n` random ones, on the host and (where it runs) an AVX2 target.
void check_random_configs(const Task& task, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> idx = {task.default_index()};
  for (int i = 0; i < n; ++i) idx.push_back(int64_t(rng() % uint64_t(task.space().size())));
  int built = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    try {
      task.instantiate(idx[i]);
      ++built;
    } catch (const InstantiationError&) {
    }
    EXPECT_EQ(check_config(task, idx[i], Target("llvm")), "") << task.key();
    if (i < 2 && host_has_avx2()) EXPECT_EQ(check_config(task, idx[i], Target("llvm -mcpu=haswell")), "") << task.key();
  }
  EXPECT_GE(built, int(idx.size() + 1) / 2) << task.key() << ": most configs were rejected, few were checked";
  std::cout << "[ checked ] " << task.key() << ": " << built << " of " << idx.size() << " configs built\n";
}

TEST(Int8Templates, MatmulRandomConfigs) {
  // 32x64x64 fills whole column blocks and k steps; 13x40x18 leaves tails in columns
  // (40 = 2·16 + 8) and k (18 = 4·4 + 2), which run outside the intrinsic. (Row tiles
  // divide M; tests/e2e/tensorize_test.cc has row tails.)
  for (auto shape : {std::vector<int64_t>{32, 64, 64}, std::vector<int64_t>{13, 40, 18}}) {
    check_random_configs(Task::create("matmul_int8", shape, Target("llvm"), "int8"), 6, 11);
  }
}

TEST(Int8Templates, MatmulRequantized) {
  for (auto [out, zp] : {std::pair<std::string, std::string>{"int8", "-3"}, {"uint8", "128"}}) {
    Task task = Task::create("matmul_int8", {13, 40, 36}, Target("llvm"), "int8",
                             {{"out_dtype", out}, {"scale", "0.00137"}, {"zero_point", zp}});
    ASSERT_EQ(task.tmpl().compute(task.workload()).back().dtype(), DataType::parse(out));
    check_random_configs(task, 3, 5);
  }
}

/// A conv2d_nchwc_int8 workload: [N, C, H, W, K, R, S] and its attrs.
struct ConvCase {
  std::vector<int64_t> shape;
  std::map<std::string, std::string> attrs;
  Task task() const { return Task::create("conv2d_nchwc_int8", shape, Target("llvm"), "int8", attrs); }
};

TEST(Int8Templates, ConvRandomConfigs) {
  // A padded 3x3, a strided 3x3 and a 1x1.
  const ConvCase cases[] = {
      {{1, 32, 9, 9, 32, 3, 3}, {{"pad", "1"}}},
      {{1, 16, 11, 10, 32, 3, 3}, {{"pad", "1"}, {"stride", "2"}}},
      {{2, 32, 7, 7, 16, 1, 1}, {}},
  };
  for (const ConvCase& c : cases) check_random_configs(c.task(), 4, 3);
}

TEST(Int8Templates, ConvWithInlinePaddingSkipsThePaddingTaps) {
  // pad_inline=1: the convolution reads its input through the padding's select, and the dot
  // products on the padding are skipped (rows by the range of the kernel-row loop, columns
  // by the kernel-column loop unrolled). On a 3x3 pad-1 layer and a strided one, every
  // pad_inline config of one reduction order and row tiling (rows of 1, 2 -- each tile
  // touching one edge: the tile loop is peeled --, 3, 4, 6 or 12 column tiles), and of a
  // requantized layer, against te::evaluate; none of them multiplies by the padding.
  const ConvCase cases[] = {
      {{1, 16, 6, 12, 32, 3, 3}, {{"pad", "1"}}},
      {{1, 16, 7, 11, 16, 3, 3}, {{"pad", "1"}, {"stride", "2"}}},
      {{1, 16, 5, 6, 16, 3, 3}, {{"pad", "1"}, {"out_dtype", "uint8"}, {"scale", "0.0007"}, {"zero_point", "7"}}},
  };
  for (const ConvCase& c : cases) {
    Task task = c.task();
    int checked = 0;
    for (int64_t i = 0; i < task.space().size(); ++i) {
      ConfigEntity cfg = task.space().get(i);
      if (cfg.value("pad_inline")[0] != 1 || cfg.value("reduce_order") != std::vector<int64_t>{0, 1, 2} ||
          cfg.value("tile_oh").back() != 1 || cfg.value("rows_outer")[0] != 0 || cfg.label("unroll_rc") != "unroll")
        continue;
      Instance inst;
      try {
        inst = task.instantiate(i);
      } catch (const InstantiationError&) {
        continue;
      }
      EXPECT_EQ(check_config(task, i, Target("llvm")), "") << task.key();
      std::string ir = lowering::to_string(lower(inst.schedule, inst.args, "f"));
      EXPECT_EQ(ir.find("select("), std::string::npos) << task.key() << " config " << cfg.str() << ":\n" << ir;
      EXPECT_NE(ir.find("loom.dot_u8s8s32"), std::string::npos) << cfg.str();
      ++checked;
    }
    EXPECT_GE(checked, 4) << task.key();
    std::cout << "[ checked ] " << task.key() << ": " << checked << " configs with the padding inlined\n";
  }
}

TEST(Int8Templates, ConvRequantized) {
  Task task = Task::create("conv2d_nchwc_int8", {1, 16, 8, 8, 32, 3, 3}, Target("llvm"), "int8",
                           {{"pad", "1"}, {"out_dtype", "uint8"}, {"scale", "0.0007"}, {"zero_point", "7"}});
  check_random_configs(task, 3, 9);
}

TEST(Int8Templates, WorkloadErrors) {
  auto message = [](const std::string& op, std::vector<int64_t> shape, const std::string& dtype,
                    std::map<std::string, std::string> attrs = {}) -> std::string {
    try {
      Task::create(op, shape, Target("llvm"), dtype, attrs);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(message("matmul_int8", {4, 4, 4}, "float32").find("dtype must be int8"), std::string::npos);
  EXPECT_NE(message("conv2d_nchwc_int8", {1, 8, 4, 4, 16, 1, 1}, "int8").find("must be multiples of 16"),
            std::string::npos);
  EXPECT_NE(message("matmul_int8", {4, 4, 4}, "int8", {{"scale", "0.5"}}).find("need out_dtype int8 or uint8"),
            std::string::npos);
  EXPECT_NE(message("matmul_int8", {4, 4, 4}, "int8", {{"out_dtype", "int16"}}).find("out_dtype must be"),
            std::string::npos);
  EXPECT_NE(message("matmul_int8", {4, 4, 4}, "int8", {{"out_dtype", "int8"}, {"scale", "-1"}}).find("scale must lie"),
            std::string::npos);
  EXPECT_EQ(message("matmul_int8", {4, 4, 4}, "int8", {{"out_dtype", "int8"}, {"scale", "0.5"}}), "(no error)");
}

TEST(Int8Templates, TheMeasurerChecksIntegerOutputsExactly) {
  // C = A·100000 in int32; mode 1 adds 1, a relative error of 1e-6 that the float tolerance
  // (1e-3) would accept.
  Template t;
  t.name = "test_int_off_by_one";
  t.shape_doc = "N";
  t.flop = [](const records::Workload& w) { return double(w.shape[0]); };
  t.compute = [](const records::Workload& w) {
    te::Tensor A = te::placeholder({w.shape[0]}, DataType::Int(32), "A");
    te::Tensor C = te::compute({w.shape[0]}, [&](te::Var i) { return A(i) * 100000 + 3; }, "C");
    return std::vector<te::Tensor>{A, C};
  };
  t.schedule = [](ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target&) {
    int64_t mode = cfg.choice("mode", {0, 1});
    te::Tensor C = args[1];
    if (!cfg.defining() && mode == 1) {
      auto* op = const_cast<te::OperationNode*>(C.op().get());
      op->body[0] = args[0](op->axis[0].var()) * 100000 + 4;
    }
    return create_schedule({C});
  };
  register_template(t);
  Task task = Task::create("test_int_off_by_one", {64}, Target("llvm"));
  MeasureOptions o;
  o.min_repeat_ms = 1;
  o.repeat = 1;
  o.n_parallel = 1;
  Measurer m(task, o);
  auto res = m.measure(std::vector<int64_t>{0, 1});
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
  EXPECT_EQ(res[1].error, ErrorCode::kWrongAnswer) << res[1].error_msg;
}

TEST(Int8Templates, MeasuredWithTheTuner) {
  Task task = Task::create("matmul_int8", {24, 48, 40}, Target("llvm"), "int8");
  MeasureOptions o;
  o.min_repeat_ms = 1;
  o.repeat = 1;
  o.n_parallel = 2;
  Measurer m(task, o);
  std::vector<int64_t> idx = {task.default_index(), 1, 2, 3};
  for (const auto& r : m.measure(idx)) {
    EXPECT_TRUE(r.error == ErrorCode::kNoError || r.error == ErrorCode::kInstantiation) << r.error_msg;
  }
}

}  // namespace
}  // namespace loom::tuner
