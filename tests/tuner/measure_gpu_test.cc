// Measuring CUDA tasks: tuning runs, wrong answers and the host reference need a GPU (they
// skip with the reason without one); without a driver, measuring must fail clearly.
//
// This process never uses CUDA itself: the measuring workers are forked, and CUDA does not
// survive fork(), so the GPU is probed with tuner::cuda_worker_unavailable_reason().
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../../tuner/measure/measure_worker.h"
#include "common/test_util.h"
#include "loom/records/record.h"
#include "loom/tuner/measure.h"
#include "loom/tuner/tuner.h"

namespace loom::tuner {
namespace {

using records::ErrorCode;

#define SKIP_WITHOUT_GPU()                                               \
  if (std::string why = cuda_worker_unavailable_reason(); !why.empty()) \
  GTEST_SKIP() << "no CUDA driver/GPU: " << why

MeasureOptions fast_options() {
  MeasureOptions o;
  o.min_repeat_ms = 5;
  o.repeat = 2;
  o.timeout_s = 20;
  o.n_parallel = 2;
  return o;
}

/// "test_cuda_faulty": C = 2A on the GPU, n elements, with knobs "threads" (per block) and
/// "wrong" (1: the instance computes 2A + 0.01, as a schedule bug that changes the result would).
void register_cuda_faulty() {
  Template t;
  t.name = "test_cuda_faulty";
  t.shape_doc = "N";
  t.targets = {"cuda"};
  t.flop = [](const records::Workload& w) { return double(w.shape[0]); };
  t.compute = [](const records::Workload& w) {
    te::Tensor A = te::placeholder({w.shape[0]}, DataType::Float(32), "A");
    te::Tensor C = te::compute({w.shape[0]}, [&](te::Var i) { return A(i) * 2.0f; }, "C");
    return std::vector<te::Tensor>{A, C};
  };
  t.schedule = [](ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target&) {
    int64_t threads = cfg.choice("threads", {32, 128, 256});
    int64_t wrong = cfg.choice("wrong", {0, 1});
    te::Tensor C = args[1];
    if (!cfg.defining() && wrong == 1) {
      auto* op = const_cast<te::OperationNode*>(C.op().get());
      op->body[0] = args[0](op->axis[0].var()) * 2.0f + 0.01f;
    }
    Schedule s = create_schedule({C});
    auto [bo, bi] = s[C].split(s[C].axis(0), threads);
    s[C].bind(bo, te::thread_axis("blockIdx.x"));
    s[C].bind(bi, te::thread_axis("threadIdx.x"));
    return s;
  };
  register_template(t);
}

class MeasureCudaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { register_cuda_faulty(); }
};

int64_t config_with(const Task& task, const std::map<std::string, int>& picks) {
  std::vector<int> choices(task.space().knobs().size(), 0);
  for (const auto& [name, v] : picks) choices[size_t(task.space().knob_index(name))] = v;
  return task.space().index_of(choices);
}

TEST_F(MeasureCudaTest, WithoutADriverMeasuringFailsClearlyUpFront) {
  std::string why = cuda_worker_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a GPU is present";
  Task task = Task::create("matmul_cuda", {64, 64, 64}, Target("cuda"));
  try {
    Measurer m(task, fast_options());
    FAIL() << "a Measurer of a CUDA task was created without a GPU";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no CUDA driver/GPU: " + why), std::string::npos) << msg;
    EXPECT_NE(msg.find(task.key()), std::string::npos) << msg;
  }
  // The tuner (what `loom tune --target cuda` runs) stops with the same error and logs nothing.
  auto log = std::filesystem::temp_directory_path() / fmt::format("loom_measure_cuda_{}.jsonl", ::getpid());
  std::filesystem::remove(log);
  TuneOptions opt;
  opt.n_trial = 4;
  opt.log_file = log.string();
  opt.progress = nullptr;
  opt.measure = fast_options();
  EXPECT_THROW(
      {
        try {
          XGBTuner(task).tune(opt);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("no CUDA driver/GPU"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  if (std::filesystem::exists(log)) EXPECT_TRUE(records::read_log(log.string()).records.empty());
  std::filesystem::remove(log);
}

TEST_F(MeasureCudaTest, CpuTasksNeedNoProbe) {
  // The CPU path is unchanged: no GPU is needed to measure an llvm task.
  Task task = Task::create("matmul", {32, 32, 32}, Target("llvm"));
  Measurer m(task, fast_options());
  auto res = m.measure(std::vector<int64_t>{task.default_index()});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
}

// The schedule the host reference of large CUDA tasks is computed with, checked against
// te::evaluate on the CPU (it needs no GPU).
TEST_F(MeasureCudaTest, ReferenceCpuScheduleMatchesTheEvaluator) {
  for (const char* op : {"matmul_cuda", "conv2d_nchw_cuda", "depthwise_conv2d_nchw_cuda"}) {
    const Template& t = get_template(op);
    records::Workload w;
    w.op = op;
    w.dtype = "float32";
    if (std::string(op) == "matmul_cuda") {
      w.shape = {37, 29, 23};
    } else {
      w.shape = {2, 4, 9, 9, std::string(op) == "depthwise_conv2d_nchw_cuda" ? 8 : 6, 3, 3};
      w.attrs = {{"stride", "2"}, {"pad", "1"}};
    }
    std::vector<te::Tensor> args = t.compute(w);
    std::vector<te::Tensor> outs;
    for (const auto& a : args)
      if (a.op()->kind != te::OpKind::kPlaceholder) outs.push_back(a);
    EXPECT_EQ(test::compare_with_reference(detail::reference_cpu_schedule(outs), args), "") << op;
  }
}

TEST_F(MeasureCudaTest, ShortMatmulTuningRunRecordsValidResults) {
  SKIP_WITHOUT_GPU();
  Task task = Task::create("matmul_cuda", {256, 256, 256}, Target("cuda"));
  auto log = std::filesystem::temp_directory_path() / fmt::format("loom_tune_cuda_{}.jsonl", ::getpid());
  std::filesystem::remove(log);
  TuneOptions opt;
  opt.n_trial = 12;
  opt.batch_size = 6;
  opt.log_file = log.string();
  opt.progress = nullptr;
  opt.measure = fast_options();
  TuneSummary s = XGBTuner(task).tune(opt);
  EXPECT_EQ(s.trials, 12);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_GT(s.best_gflops(), 0);
  auto recs = records::read_log(log.string()).records;
  ASSERT_EQ(recs.size(), 12u);
  int valid = 0;
  for (const auto& r : recs) {
    EXPECT_EQ(r.workload.key(), task.key());
    EXPECT_EQ(r.target, task.target().str());
    // No candidate computes a wrong answer, and no failure is a missing driver.
    EXPECT_NE(r.result.error, ErrorCode::kWrongAnswer) << r.result.error_msg;
    EXPECT_EQ(r.result.error_msg.find("no CUDA driver"), std::string::npos) << r.result.error_msg;
    if (r.result.error != ErrorCode::kNoError) continue;
    ++valid;
    ASSERT_FALSE(r.result.costs.empty());
    for (double c : r.result.costs) EXPECT_GT(c, 0);
  }
  EXPECT_GE(valid, 1);
  std::filesystem::remove(log);
}

TEST_F(MeasureCudaTest, AWrongAnswerIsCaughtAndValidConfigsAreTimed) {
  SKIP_WITHOUT_GPU();
  for (double flop_limit : {5e7, 0.0}) {  // reference from te::evaluate, then compiled on the host
    Task task = Task::create("test_cuda_faulty", {5000}, Target("cuda"));
    MeasureOptions o = fast_options();
    o.evaluate_flop_limit = flop_limit;
    Measurer m(task, o);
    auto res = m.measure(std::vector<int64_t>{config_with(task, {{"threads", 1}, {"wrong", 0}}),
                                              config_with(task, {{"threads", 2}, {"wrong", 1}}),
                                              config_with(task, {{"threads", 0}, {"wrong", 0}})});
    ASSERT_EQ(res.size(), 3u);
    EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
    EXPECT_EQ(res[1].error, ErrorCode::kWrongAnswer) << res[1].error_msg;
    EXPECT_NE(res[1].error_msg.find("expected"), std::string::npos) << res[1].error_msg;
    EXPECT_EQ(res[2].error, ErrorCode::kNoError) << res[2].error_msg;
    for (size_t i : {size_t(0), size_t(2)}) {
      ASSERT_EQ(res[i].costs.size(), 2u);
      for (double c : res[i].costs) EXPECT_GT(c, 0);
    }
  }
  // Without checking, the wrong candidate is timed like any other.
  Task task = Task::create("test_cuda_faulty", {5000}, Target("cuda"));
  MeasureOptions o = fast_options();
  o.check_correctness = false;
  Measurer m(task, o);
  auto res = m.measure(std::vector<int64_t>{config_with(task, {{"threads", 1}, {"wrong", 1}})});
  EXPECT_EQ(res[0].error, ErrorCode::kNoError) << res[0].error_msg;
}

TEST_F(MeasureCudaTest, LargeMatmulUsesTheCompiledHostReference) {
  SKIP_WITHOUT_GPU();
  Task task = Task::create("matmul_cuda", {512, 512, 512}, Target("cuda"));  // 2.7e8 flop
  MeasureOptions o = fast_options();
  ASSERT_GT(task.flop(), o.evaluate_flop_limit);
  Measurer m(task, o);
  std::vector<int64_t> picks = {task.default_index()};
  for (int64_t i = 1; i <= 7; ++i) picks.push_back(task.space().size() * i / 8);
  auto res = m.measure(picks);
  int valid = 0;
  for (const auto& r : res) {
    EXPECT_NE(r.error, ErrorCode::kWrongAnswer) << r.error_msg;
    EXPECT_NE(r.error, ErrorCode::kUnknown) << r.error_msg;  // e.g. the reference failing
    valid += r.error == ErrorCode::kNoError;
  }
  EXPECT_GE(valid, 1);
}

}  // namespace
}  // namespace loom::tuner
