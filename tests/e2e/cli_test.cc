// The `loom` command line, run as a user runs it: help, usage errors, and a tiny tuning job
// carried through summary, show, build, bench and plot.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using test::CliTest;
using test::Result;
using test::slurp;

const std::string kShape = "--op matmul --shape 32,32,32";


TEST_F(CliTest, HelpOfEveryCommandNamesItsOptions) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"tune", {"--op", "--shape", "--dtype", "--target", "--trials", "--log", "--tuner", "--resume", "--transfer-from",
                "--timeout", "--jobs", "--seed", "--batch", "--min-repeat-ms", "--rotate-inputs"}},
      {"build", {"--op", "--shape", "--log", "-o", "--target", "--name"}},
      {"bench", {"--op", "--shape", "--log", "--so", "--threads", "--json", "--repeat"}},
      {"show", {"--op", "--shape", "--log", "--config", "--vector-report"}},
      {"records", {"summary", "best", "merge", "distill", "plot"}},
      {"records summary", {"FILE"}},
      {"records best", {"--json"}},
      {"records merge", {"-o"}},
      {"records distill", {"-o"}},
      {"records plot", {"-o", "--title"}},
      {"ops", {"--te"}},
      {"lower", {"--op", "--print-after-all", "--vector-report", "gather", "scalarized"}},
      {"run", {"MODEL.so", "--input", "--output", "--repeat", "--warmup", "--threads", "--seed", "--profile"}},
      {"compile", {"MODEL.json", "-o", "--log", "--target", "--opt-level", "--disable"}},
  };
  for (const auto& [cmd, options] : cases) {
    SCOPED_TRACE(cmd);
    Result r = loom(cmd + " --help");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_HAS(r.out, "usage: loom " + cmd);
    for (const std::string& o : options) EXPECT_HAS(r.out, o);
  }
  Result top = loom("--help");
  EXPECT_EQ(top.rc, 0);
  for (const char* c : {"tune", "build", "bench", "show", "compile", "run", "records", "ops", "lower"}) EXPECT_HAS(top.out, c);
  EXPECT_EQ(loom("").rc, 2);
  Result unknown = loom("frobnicate");
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_HAS(unknown.err, "frobnicate");
}

TEST_F(CliTest, UsageErrorsExitTwoAndNameTheOption) {
  const std::string log = " --log " + path("x.jsonl");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tune " + kShape + log + " --bogus", "--bogus"},
      {"tune " + kShape, "--log"},
      {"tune --shape 32,32,32" + log, "--op"},
      {"tune --op nosuch --shape 32,32,32" + log, "--op"},
      {"tune --op matmul" + log, "--shape"},
      {"tune --op matmul --shape 32,x,32" + log, "--shape"},
      {"tune --op matmul --shape 32,32" + log, "--shape"},
      {"tune " + kShape + log + " --trials abc", "--trials"},
      {"tune " + kShape + log + " --trials 0", "--trials"},
      {"tune " + kShape + log + " --tuner annealing", "--tuner"},
      {"tune " + kShape + log + " --timeout", "--timeout"},
      {"tune " + kShape + log + " --transfer-from " + path("missing.jsonl"), "--transfer-from"},
      {"tune " + kShape + log + " --target 'bogus'", "--target"},
      {"build " + kShape + log, "-o"},
      {"bench " + kShape + " --threads 0", "--threads"},
      {"bench " + kShape + " --so " + path("missing.so"), "--so"},
      {"show " + kShape + " --log " + path("missing.jsonl"), "--log"},
      {"records merge " + path("a.jsonl"), "-o"},
      {"records frob", "frob"},
      {"lower --op matmul --wat", "--wat"},
      {"lower --op matmul --vector-report --target cuda", "--vector-report"},
      {"show --op matmul_cuda --shape 64,64,64 --target cuda --vector-report", "--vector-report"},
  };
  std::ofstream(path("a.jsonl")) << "";
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    Result r = loom(args);
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_HAS(r.err, needle);
  }
}

TEST_F(CliTest, OpsListsTemplatesAndLowerStillWorks) {
  Result ops = loom("ops");
  ASSERT_EQ(ops.rc, 0) << ops.err;
  EXPECT_HAS(ops.out, "matmul");
  EXPECT_HAS(ops.out, "M,N,K");
  EXPECT_HAS(ops.out, "conv2d_nchw");
  Result te = loom("ops --te");
  ASSERT_EQ(te.rc, 0) << te.err;
  EXPECT_HAS(te.out, "matmul:");
  Result lower = loom("lower --op matmul --shape 16,16,16 --print-after-all");
  ASSERT_EQ(lower.rc, 0) << lower.err;
  EXPECT_HAS(lower.out, "for");
}

// One op name serves every target: --target picks the template; the old CUDA names still work.
TEST_F(CliTest, OneOpNamePerTargetAndTheGraphOperators) {
  Result graph = loom("ops --graph");
  ASSERT_EQ(graph.rc, 0) << graph.err;
  EXPECT_HAS(graph.out, "conv2d(data, weight [bias])  out_elemwise_fusable");
  EXPECT_HAS(graph.out, "layout_transform(data)  injective");
  Result ops = loom("ops");
  EXPECT_HAS(ops.out, "matmul (also matmul_cuda)  --shape M,N,K  [cuda]");
  Result no_gpu_template = loom("build --op softmax --shape 4,4 --target cuda -o " + path("s.so"));
  EXPECT_EQ(no_gpu_template.rc, 2);
  EXPECT_HAS(no_gpu_template.err, "--target: softmax has no schedule template for 'cuda'");
  Result cpu_only_name = loom("show --op dense_pack --shape 4,16,8 --target cuda");
  EXPECT_EQ(cpu_only_name.rc, 2);
  EXPECT_HAS(cpu_only_name.err, "--target");
  // The GPU template's IR from its new and its old name (lowering needs no GPU).
  for (const char* op : {"matmul", "matmul_cuda"}) {
    Result show = loom(std::string("show --op ") + op + " --shape 64,64,64 --target cuda");
    ASSERT_EQ(show.rc, 0) << show.err;
    EXPECT_HAS(show.out, "launch_kernel");
  }
}

TEST_F(CliTest, VectorReportOfLowerAndShow) {
  // The te::ops examples are unscheduled: no vector code, and the IR is not printed.
  Result lower = loom("lower --op matmul --shape 16,16,16 --vector-report");
  ASSERT_EQ(lower.rc, 0) << lower.err;
  EXPECT_HAS(lower.out, "vectorization report of 'matmul': 0 vector load(s)/store(s), all dense");
  EXPECT_EQ(lower.out.find("for ("), std::string::npos) << lower.out;
  // The matmul template's default config vectorizes densely.
  Result dense = loom("show --op matmul --shape 64,64,64 --vector-report");
  ASSERT_EQ(dense.rc, 0) << dense.err;
  EXPECT_HAS(dense.out, "vectorization report of 'matmul'");
  EXPECT_HAS(dense.out, "all dense");
  EXPECT_EQ(dense.out.find("for ("), std::string::npos) << dense.out;
  // A stride-2 depthwise convolution reads every other input column: strided loads of data.
  Result strided =
      loom("show --op depthwise_conv2d_nchw --shape 1,5,11,10,3,3 --attr stride=2 --attr pad=1 --vector-report");
  ASSERT_EQ(strided.rc, 0) << strided.err;
  EXPECT_HAS(strided.out, "index / expression");
  EXPECT_HAS(strided.out, "depthwise_conv2d_nchw.local  data    strided");
  EXPECT_HAS(strided.out, "stride 2: 2 lane-wide loads and a shuffle");
}

TEST_F(CliTest, TuneThenSummaryShowBuildBenchPlot) {
  const std::string log = path("mm.jsonl"), xlog = path("mm_xgb.jsonl");
  const std::string fast = " --trials 8 --batch 4 --repeat 1 --min-repeat-ms 1 --timeout 60 --jobs 2";
  Result random = loom("tune " + kShape + " --tuner random --seed 3 --log " + log + fast);
  ASSERT_EQ(random.rc, 0) << random.out << random.err;
  EXPECT_HAS(random.out, "best");
  EXPECT_HAS(random.err, "8/8 trials");  // the tuner's progress on stderr
  Result xgb = loom("tune " + kShape + " --tuner xgb --log " + xlog + fast);
  ASSERT_EQ(xgb.rc, 0) << xgb.out << xgb.err;
  // 8 trials, then the 5 fastest measured twice more each (--confirm 5 by default); when the
  // re-measurements drop a config out of the top 5, the one that rises in is confirmed too,
  // so timing noise decides how many of the 8 end up confirmed (5 at least).
  EXPECT_HAS(random.out, "median of 3 measurements");
  {
    std::ifstream is(log);
    int lines = 0, confirming = 0;
    for (std::string line; std::getline(is, line);) {
      lines += !line.empty();
      confirming += line.find("\"tuner\":\"confirm\"") != std::string::npos;
    }
    EXPECT_EQ(lines, 8 + confirming);
    EXPECT_GE(confirming, 10);
    EXPECT_LE(confirming, 16);
    EXPECT_EQ(confirming % 2, 0);
  }
  // --resume measures only new configs: the log grows by the new trials (timed here on
  // rotated copies of the inputs).
  Result resumed = loom("tune " + kShape + " --tuner random --resume --log " + log +
                        " --trials 4 --batch 4 --repeat 1 --min-repeat-ms 1 --rotate-inputs");
  ASSERT_EQ(resumed.rc, 0) << resumed.err;
  EXPECT_HAS(resumed.out, "8 resumed");

  Result summary = loom("records summary " + log + " " + xlog);
  ASSERT_EQ(summary.rc, 0) << summary.err;
  EXPECT_HAS(summary.out, "matmul(32,32,32;float32)");
  EXPECT_HAS(summary.out, "confirm");  // re-measurements are counted apart from trials
  Result best = loom("records best " + log);
  ASSERT_EQ(best.rc, 0) << best.err;
  EXPECT_HAS(best.out, "GFLOP/s");

  Result portable = loom("records portable " + log + " " + xlog + " --top 1");
  ASSERT_EQ(portable.rc, 0) << portable.err;
  EXPECT_HAS(portable.out, "in all 1 workloads");
  EXPECT_HAS(portable.out, "   1    1.000   1.00  cols_outer=");  // one shape: its best ranks first

  Result merged = loom("records merge " + log + " " + xlog + " -o " + path("merged.jsonl"));
  ASSERT_EQ(merged.rc, 0) << merged.err;
  Result distilled = loom("records distill " + path("merged.jsonl") + " -o " + path("best.jsonl"));
  ASSERT_EQ(distilled.rc, 0) << distilled.err;
  EXPECT_HAS(distilled.out, "1 best record");

  Result show = loom("show " + kShape + " --log " + path("best.jsonl"));
  ASSERT_EQ(show.rc, 0) << show.err;
  EXPECT_HAS(show.out, "best record, config");
  EXPECT_HAS(show.out, "tile_");
  EXPECT_HAS(show.out, "for");
  EXPECT_EQ(show.err.find("warning"), std::string::npos) << show.err;

  const std::string lib = path("libmm.so");
  Result build = loom("build " + kShape + " --log " + path("merged.jsonl") + " -o " + lib);
  ASSERT_EQ(build.rc, 0) << build.err;
  EXPECT_TRUE(fs::exists(lib));
  EXPECT_TRUE(fs::exists(path("libmm.h")));
  EXPECT_EQ(build.err.find("warning"), std::string::npos) << build.err;

  Result bench = loom("bench " + kShape + " --log " + log + " --so " + lib + " --json --repeat 3 --threads 1");
  ASSERT_EQ(bench.rc, 0) << bench.err;
  nlohmann::json j = nlohmann::json::parse(bench.out);  // throws (and fails) unless one JSON object
  for (const char* k : {"workload", "target", "threads", "flop", "default", "tuned", "deployed", "peer", "speedup"})
    EXPECT_TRUE(j.contains(k)) << k << " missing in " << bench.out;
  EXPECT_EQ(j["workload"], "matmul(32,32,32;float32)");
  EXPECT_GT(j["default"]["gflops"].get<double>(), 0);
  EXPECT_GT(j["tuned"]["gflops"].get<double>(), 0);
  EXPECT_GT(j["deployed"]["gflops"].get<double>(), 0);
  EXPECT_TRUE(j["speedup"].contains("deployed_vs_default"));
  if (!j["peer"].is_null()) {
    EXPECT_GT(j["peer"]["gflops"].get<double>(), 0);
  }

  Result table = loom("bench " + kShape + " --repeat 2 --threads 1 --config 5");
  ASSERT_EQ(table.rc, 0) << table.err;
  EXPECT_HAS(table.out, "default schedule");
  EXPECT_HAS(table.out, "config 5 (--config)");
  Result config = loom("bench " + kShape + " --repeat 2 --threads 1 --config 5 --json");
  ASSERT_EQ(config.rc, 0) << config.err;
  nlohmann::json jc = nlohmann::json::parse(config.out);
  EXPECT_EQ(jc["config"]["config"], 5);
  EXPECT_TRUE(j["config"].is_null());
  Result bad = loom("bench " + kShape + " --config 99999999");
  EXPECT_NE(bad.rc, 0);
  EXPECT_HAS(bad.err, "--config");

  const std::string svg = path("curve.svg");
  Result plot = loom("records plot " + log + " " + xlog + " -o " + svg + " --title 'tiny matmul'");
  ASSERT_EQ(plot.rc, 0) << plot.err;
  std::string text = slurp(svg);
  EXPECT_HAS(text, "<svg");
  EXPECT_HAS(text, "polyline");
  EXPECT_HAS(text, "tiny matmul");
}

TEST_F(CliTest, BuildWithoutRecordWarnsAndFallsBack) {
  std::ofstream(path("empty.jsonl")) << "";
  const std::string lib = path("libdef.so");
  Result build = loom("build " + kShape + " --log " + path("empty.jsonl") + " -o " + lib + " --name mm_default");
  ASSERT_EQ(build.rc, 0) << build.err;
  EXPECT_HAS(build.err, "warning");
  EXPECT_HAS(build.err, "default config");
  EXPECT_TRUE(fs::exists(lib));
  Result bench = loom("bench " + kShape + " --so " + lib + " --json --repeat 2 --threads 1");
  ASSERT_EQ(bench.rc, 0) << bench.err;
  EXPECT_TRUE(nlohmann::json::parse(bench.out)["tuned"].is_null());
}

TEST_F(CliTest, BenchSaysHowOneDnnsThreadsWait) {
  // loom bench runs oneDNN's OpenMP threads with the passive wait policy unless the user set
  // one, and says so: its several-thread figures are lower than with OpenMP's default.
  const std::string int8 = "bench --op matmul_int8 --shape 32,64,64 --dtype int8 --repeat 2 --threads 2";
  Result table = loom(int8);
  ASSERT_EQ(table.rc, 0) << table.err;
  if (table.out.find("oneDNN") == std::string::npos || table.out.find("n/a") != std::string::npos)
    GTEST_SKIP() << "no oneDNN peer in this build:\n" << table.out;
  EXPECT_HAS(table.out, "note: oneDNN's OpenMP threads wait with OMP_WAIT_POLICY=passive (set by loom bench");
  nlohmann::json j = nlohmann::json::parse(loom(int8 + " --json").out);
  EXPECT_EQ(j["peer"]["omp_wait_policy"], "passive");
  // A policy the user set is kept, and reported.
  ::setenv("OMP_WAIT_POLICY", "active", 1);
  Result chosen = loom("bench --op matmul_int8 --shape 32,64,64 --dtype int8 --repeat 2 --threads 1 --json");
  ::unsetenv("OMP_WAIT_POLICY");
  ASSERT_EQ(chosen.rc, 0) << chosen.err;
  EXPECT_EQ(nlohmann::json::parse(chosen.out)["peer"]["omp_wait_policy"], "active");
}

TEST_F(CliTest, BadTargetsHugeShapesAndUnusableOutputsAreClearErrors) {
  const std::string log = " --log " + path("x.jsonl");
  const std::string out = " -o " + path("lib.so");
  const std::vector<std::pair<std::string, std::string>> usage = {
      {"build " + kShape + out + " --target 'llvm -mcpu=nosuchcpu'", "unknown CPU 'nosuchcpu'"},
      {"build " + kShape + out + " --target 'llvm -mattr=+nosuchfeature'", "unknown CPU feature 'nosuchfeature'"},
      {"tune " + kShape + log + " --target 'llvm -mcpu=nosuchcpu'", "-mcpu=help"},
      {"build --op matmul --shape 9223372036854775807,64,64" + out, "--shape"},
      {"tune --op matmul --shape 1000000000000,64,64" + log, "integers in [1, 2^31-1]"},
      {"tune --op matmul --shape 64,4611686018427387904,64" + log, "--shape"},
      {"build --op matmul --shape 64,9223372036854775807,64" + out, "--shape"},
      {"build --op conv2d_nchw --shape 1,1000,1000,1000,1,1000,1000 --attr pad=9223372036854775807" + out, "--attr"},
  };
  for (const auto& [args, needle] : usage) {
    SCOPED_TRACE(args);
    Result r = loom(args);
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_HAS(r.err, needle);
  }
  // Sizes that each fit but whose tensors do not: an error naming the tensor, not a hang.
  Result big = loom("build --op matmul --shape 65536,65536,1" + out);
  EXPECT_NE(big.rc, 0);
  EXPECT_HAS(big.err, "has more than 2147483647 elements");
  // An output that is a directory.
  fs::create_directories(path("adir"));
  Result dir = loom("build " + kShape + " -o " + path("adir"));
  EXPECT_NE(dir.rc, 0);
  EXPECT_HAS(dir.err, "is a directory");
  EXPECT_EQ(dir.err.find("Success"), std::string::npos) << dir.err;
}

TEST_F(CliTest, RecordsBestSkipsOutOfSpaceAndNonPositiveRecords) {
  // Two valid records of the default config's neighbours, then a cheaper one with cost 0 and
  // one with an index outside the space: neither may be picked.
  Result tune = loom("tune " + kShape + " --trials 2 --log " + path("t.jsonl"));
  ASSERT_EQ(tune.rc, 0) << tune.err;
  std::ifstream in(path("t.jsonl"));
  std::string line, good;
  while (std::getline(in, line))
    if (line.find("\"error\":\"no_error\"") != std::string::npos) good = line;
  ASSERT_FALSE(good.empty());
  nlohmann::json zero = nlohmann::json::parse(good), outside = zero;
  zero["result"]["costs"] = {0.0};
  outside["config"]["index"] = 99999999;
  outside["result"]["costs"] = {1e-12};
  {
    std::ofstream os(path("t.jsonl"), std::ios::app);
    os << zero.dump() << "\n" << outside.dump() << "\n";
  }
  Result best = loom("records best --json " + path("t.jsonl"));
  ASSERT_EQ(best.rc, 0) << best.err;
  EXPECT_HAS(best.err, "t.jsonl:");
  EXPECT_HAS(best.err, "expected a positive, finite time");
  EXPECT_HAS(best.err, "config index 99999999 is outside the config space of matmul");
  nlohmann::json got = nlohmann::json::parse(best.out.substr(0, best.out.find('\n')));
  EXPECT_GT(got["result"]["costs"][0].get<double>(), 1e-12);
  Result merge = loom("records merge " + path("t.jsonl") + " -o " + path("m.jsonl"));
  ASSERT_EQ(merge.rc, 0) << merge.err;
  EXPECT_HAS(merge.err, "config index 99999999 is outside");
  EXPECT_EQ(slurp(path("m.jsonl")).find("99999999"), std::string::npos);
}

}  // namespace
}  // namespace loom
