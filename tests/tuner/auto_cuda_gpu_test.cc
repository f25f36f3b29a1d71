// The auto-scheduler's GPU rules on a real GPU: short tuning runs of auto-scheduled tasks
// (matmul, softmax, layer_norm, a transpose) whose every measured config is checked against
// the reference by the measurer, with no wrong answer. Skips with the reason without a GPU
// (tests/tuner/auto_cuda_rules_test.cc checks the same rules on the CUDA emulation).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../../tuner/measure/measure_worker.h"
#include "loom/records/record.h"
#include "loom/te/ops.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/measure.h"
#include "loom/tuner/tuner.h"

namespace loom::tuner {
namespace {

using records::ErrorCode;

TEST(AutoCudaGpu, ShortTuningRunsMeasureOnlyCorrectConfigs) {
  if (std::string why = cuda_worker_unavailable_reason(); !why.empty()) GTEST_SKIP() << "no CUDA driver/GPU: " << why;
  const DataType f32 = DataType::Float(32);
  te::Tensor A = te::placeholder({256, 192}, f32, "A"), B = te::placeholder({192, 200}, f32, "B");
  te::Tensor X = te::placeholder({128, 768}, f32, "X"), g = te::placeholder({768}, f32, "g"),
             b = te::placeholder({768}, f32, "b");
  te::Tensor T = te::placeholder({8, 128, 12, 64}, f32, "T");
  const std::vector<std::pair<std::string, std::vector<te::Tensor>>> kernels = {
      {"gpu_matmul", {A, B, te::ops::matmul(A, B)}},
      {"gpu_softmax", {X, te::ops::softmax(X, -1)}},
      {"gpu_layer_norm", {X, g, b, te::ops::layer_norm(X, g, b)}},
      {"gpu_transpose", {T, te::ops::transpose(T, {0, 2, 1, 3})}},
  };
  for (const auto& [name, args] : kernels) {
    Task task = Task::create_auto(name, args, Target("cuda"));
    auto log = std::filesystem::temp_directory_path() / fmt::format("loom_auto_cuda_{}_{}.jsonl", name, ::getpid());
    std::filesystem::remove(log);
    TuneOptions opt;
    opt.n_trial = 8;
    opt.batch_size = 4;
    opt.log_file = log.string();
    opt.progress = nullptr;
    opt.measure.min_repeat_ms = 5;
    opt.measure.repeat = 2;
    opt.measure.timeout_s = 20;
    TuneSummary s = XGBTuner(task).tune(opt);
    ASSERT_TRUE(s.best.has_value()) << name;
    int valid = 0;
    for (const auto& r : records::read_log(log.string()).records) {
      EXPECT_NE(r.result.error, ErrorCode::kWrongAnswer) << name << ": " << r.result.error_msg;
      valid += r.result.error == ErrorCode::kNoError;
    }
    EXPECT_GE(valid, 1) << name;
    std::filesystem::remove(log);
  }
}

}  // namespace
}  // namespace loom::tuner
