// `loom` on registry operators without a template: auto-scheduled tune, show, build and bench,
// --auto on an operator with a template, and the usage errors of the auto path.
#include <gtest/gtest.h>

#include <string>

#include "common/cli_test_util.h"
#include "loom/runtime/cuda.h"

namespace loom {
namespace {

using test::CliTest;
using test::Result;

const std::string kLayerNorm = "--op layer_norm --input 16,64 --input 64 --input 64 --attr epsilon=1e-5";

TEST_F(CliTest, AutoScheduledOperatorTunesShowsBuildsAndBenches) {
  const std::string log = path("ln.jsonl");
  Result tune = loom("tune " + kLayerNorm + " --trials 4 --jobs 2 --confirm 0 --repeat 1 --min-repeat-ms 1 --log " + log);
  ASSERT_EQ(tune.rc, 0) << tune.err;
  EXPECT_HAS(tune.out, "workload  auto:layer_norm(;float32;graph=");
  EXPECT_HAS(tune.out, "4 trials measured (0 errors)");
  Result show = loom("show " + kLayerNorm + " --log " + log);
  ASSERT_EQ(show.rc, 0) << show.err;
  EXPECT_HAS(show.out, "best record, config");
  EXPECT_HAS(show.out, "layer_norm_mean: reduction (rule reduction)");
  EXPECT_HAS(show.out, "// steps:");
  EXPECT_HAS(show.out, "func layer_norm(");
  Result build = loom("build " + kLayerNorm + " --log " + log + " -o " + path("libln.so"));
  ASSERT_EQ(build.rc, 0) << build.err;
  EXPECT_HAS(build.out, "layer_norm(DLTensor* in0, DLTensor* in1, DLTensor* in2, DLTensor* layer_norm)");
  Result bench = loom("bench " + kLayerNorm + " --log " + log + " --so " + path("libln.so") + " --repeat 2 --min-repeat-ms 1");
  ASSERT_EQ(bench.rc, 0) << bench.err;
  EXPECT_HAS(bench.out, "best record");
  // An untuned default is the pattern schedule.
  Result untuned = loom("show " + kLayerNorm);
  ASSERT_EQ(untuned.rc, 0) << untuned.err;
  EXPECT_HAS(untuned.out, "default config");
  EXPECT_HAS(untuned.err, "no tuning record");
}

TEST_F(CliTest, AutoOnAnOperatorWithATemplate) {
  Result t = loom("show --op matmul --shape 32,32,32 --steps");
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_HAS(t.out, "template 'matmul'");
  EXPECT_HAS(t.out, "// steps:");
  Result a = loom("show --op matmul --auto --input 32,32 --input 32,32 --config 1");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_HAS(a.out, "auto:matmul(");
  EXPECT_HAS(a.out, "matmul: multi-level tiled, through a cache_write");
}

TEST_F(CliTest, AutoScheduledOnTheCudaTarget) {
  Result show = loom("show " + kLayerNorm + " --target cuda");
  ASSERT_EQ(show.rc, 0) << show.err;
  EXPECT_HAS(show.out, "layer_norm_mean: reduction (rule reduction)");
  EXPECT_HAS(show.out, "// CUDA C of its kernels");
  EXPECT_HAS(show.out, "__global__");
  // Measuring needs a GPU: without one, tune stops before it writes the log.
  if (runtime::cuda_available()) GTEST_SKIP() << "a GPU is present: tuning on it is tested by the GPU tests";
  Result tune = loom("tune " + kLayerNorm + " --target cuda --trials 2 --log " + path("ln_cuda.jsonl"));
  EXPECT_NE(tune.rc, 0);
  EXPECT_HAS(tune.err, "--target cuda needs an NVIDIA GPU");
}

TEST_F(CliTest, AutoPathUsageErrorsNameTheOption) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--op layer_nrom --input 4", "unknown op 'layer_nrom'; did you mean 'layer_norm'?"},
      {"--op layer_norm --input 16,64", "--input: operator 'layer_norm' takes 3 input(s) (data, gamma, beta), got 1"},
      {"--op layer_norm --input 16x64 --input 64 --input 64", "--input: '16x64' is not a comma-separated list"},
      {"--op layer_norm --input float32[16,6 --input 64 --input 64", "--input: 'float32[16,6' is not a tensor type"},
      {"--op layer_norm --input 16,63 --input 64 --input 64", "--input: operator 'layer_norm' on (float32[16,63]"},
      {"--op layer_norm --shape 16,64", "--shape gives a template's sizes"},
      {"--op layer_norm", "--input is required: 'layer_norm' has no template"},
      {"--op layer_norm --input 16,64 --input 64 --input 64 --attr eps=1", "--attr: operator 'layer_norm' has no "
                                                                           "attribute 'eps' (its attributes: axis, "
                                                                           "epsilon)"},
      {"--op layer_norm --input 16,64 --input 64 --input 64 --attr axis=x", "--attr axis: 'x' is not an integer"},
      {"--op softmax --input 4,4", "--input is for auto-scheduled operators; 'softmax' has a schedule template"},
      {"--op matmul_int8 --auto --input 4,4", "is a template but not a registry operator"},
  };
  for (const Case& c : cases) {
    Result r = loom("tune " + c.args + " --log " + path("x.jsonl"));
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.err;
    EXPECT_HAS(r.err, c.message);
  }
  Result help = loom("tune --help");
  EXPECT_HAS(help.out, "--op layer_norm --input 128,768 --input 768 --input 768");
  EXPECT_HAS(help.out, "--auto");
}

}  // namespace
}  // namespace loom
