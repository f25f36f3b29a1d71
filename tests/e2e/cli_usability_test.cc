// The `loom` command line where users stumbled: --require-tuned for build and compile, CUDA
// targets on a machine without a GPU, `records plot` drawing every trial with the best as
// build ranks it, the phases of tune-model's progress and what its estimate leaves out, the
// graph's softmax tuned as the softmax template, and "did you mean" for mistyped names.
#include <filesystem>
#include <fstream>
#include <regex>

#include "common/cli_test_util.h"
#include "common/test_util.h"
#include "graph_opt/graph_test_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/serialize.h"
#include "loom/graph_opt/task_extraction.h"
#include "loom/records/record.h"
#include "loom/tuner/measure.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

using test::CliTest;
using test::Result;

const DataType f32 = DataType::Float(32);

/// Writes records of `task` to `path` (appending): one per (config, seconds).
void write_records(const std::string& path, const tuner::Task& task,
                   const std::vector<std::pair<int64_t, double>>& configs, const std::string& tuner = "random") {
  records::LogWriter w(path);
  for (const auto& [index, cost] : configs) {
    records::MeasureResult m;
    m.costs = {cost};
    w.write(task.record(index, m, tuner));
  }
}

tuner::Task matmul(int64_t n) { return tuner::Task::create("matmul", {n, n, n}, Target("llvm")); }

/// x[4,24] -> dense -> relu -> softmax: two template kernels (dense, softmax).
graph_opt::Graph head() {
  graph_opt::GraphBuilder b("head");
  auto x = b.input("x", {{4, 24}, f32, ""});
  auto d = b.relu(b.dense(x, b.constant("w", test::random_array({10, 24}, 3))), "relu");
  b.output(b.op("softmax", {d}, {}, "softmax"));
  return b.build();
}

// ---------------------------------------------------------------- --require-tuned

TEST_F(CliTest, BuildRequireTuned) {
  const std::string good = path("good.jsonl"), other = path("other.jsonl");
  const tuner::Task t32 = matmul(32);
  const int64_t tuned = (t32.default_index() + 3) % t32.space().size();
  write_records(good, t32, {{tuned, 1e-6}});
  write_records(other, matmul(64), {{0, 1e-6}});
  const std::string op = "build --op matmul --shape 32,32,32 ";

  Result ok = loom(op + "--log " + good + " -o " + path("a.so") + " --require-tuned");
  ASSERT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_HAS(ok.out, fmt::format("config {} from {}", tuned, good));
  EXPECT_TRUE(std::filesystem::exists(path("a.so")));

  // A log without the workload: by default a warning and the default config ...
  Result lax = loom(op + "--log " + other + " -o " + path("b.so"));
  ASSERT_EQ(lax.rc, 0) << lax.out << lax.err;
  EXPECT_HAS(lax.err, "warning: no tuning record for matmul(32,32,32;float32)");
  EXPECT_HAS(lax.out, "the template's default (untuned)");
  // ... with --require-tuned an error naming the workload, and nothing written.
  Result strict = loom(op + "--log " + other + " -o " + path("c.so") + " --require-tuned");
  EXPECT_EQ(strict.rc, 1) << strict.out << strict.err;
  EXPECT_HAS(strict.err, "loom build: error: no tuning record for matmul(32,32,32;float32) on llvm in " + other);
  EXPECT_HAS(strict.err, "--require-tuned");
  EXPECT_FALSE(std::filesystem::exists(path("c.so")));
  EXPECT_FALSE(std::filesystem::exists(path("c.h")));

  Result no_log = loom(op + "-o " + path("d.so") + " --require-tuned");
  EXPECT_EQ(no_log.rc, 1) << no_log.out << no_log.err;
  EXPECT_HAS(no_log.err, "(no --log given)");
  EXPECT_FALSE(std::filesystem::exists(path("d.so")));

  Result help = loom("build --help");
  EXPECT_HAS(help.out, "--require-tuned");
}

TEST_F(CliTest, CompileRequireTuned) {
  graph_opt::Graph g = head();
  graph_opt::save_graph(g, path("head.json"));
  graph_opt::TaskExtraction x = graph_opt::extract_tasks(g, Target("llvm"));
  ASSERT_EQ(x.tasks.size(), 2u);
  const tuner::Task *dense = nullptr, *softmax = nullptr;
  for (const auto& t : x.tasks) (t.task.workload().op == "softmax" ? softmax : dense) = &t.task;
  ASSERT_TRUE(dense && softmax);
  const std::string all = path("all.jsonl"), part = path("part.jsonl");
  write_records(all, *dense, {{dense->default_index(), 1e-6}});
  write_records(all, *softmax, {{softmax->default_index(), 1e-6}});
  write_records(part, *dense, {{dense->default_index(), 1e-6}});
  const std::string compile = "compile " + path("head.json") + " ";

  Result ok = loom(compile + "--log " + all + " -o " + path("a.so") + " --require-tuned");
  ASSERT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_HAS(ok.out, "(2 tuned from the log, 0 on the default config)");
  EXPECT_TRUE(std::filesystem::exists(path("a.so")));

  Result lax = loom(compile + "--log " + part + " -o " + path("b.so"));
  ASSERT_EQ(lax.rc, 0) << lax.out << lax.err;
  EXPECT_HAS(lax.err, "warning: no tuning record for " + softmax->key());
  EXPECT_TRUE(std::filesystem::exists(path("b.so")));

  Result strict = loom(compile + "--log " + part + " -o " + path("c.so") + " --require-tuned");
  EXPECT_EQ(strict.rc, 1) << strict.out << strict.err;
  EXPECT_HAS(strict.err, "--require-tuned: 1 of the 2 template kernels have no tuning record on llvm in " + part);
  EXPECT_HAS(strict.err, ": " + softmax->key());
  EXPECT_EQ(strict.err.find(dense->key()), std::string::npos) << strict.err;
  EXPECT_FALSE(std::filesystem::exists(path("c.so")));

  Result none = loom(compile + "-o " + path("d.so") + " --require-tuned");
  EXPECT_EQ(none.rc, 1) << none.out << none.err;
  EXPECT_HAS(none.err, "2 of the 2 template kernels");
  EXPECT_HAS(none.err, softmax->key());
  EXPECT_HAS(none.err, dense->key());

  EXPECT_HAS(loom("compile --help").out, "--require-tuned");
}

// ---------------------------------------------------------------- CUDA without a GPU

TEST_F(CliTest, CudaTargetWithoutAGpuSaysSo) {
  const std::string why = tuner::cuda_worker_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "this machine has a GPU";
  const std::string w = "--op matmul --shape 64,64,64 --target cuda";
  Result bench = loom("bench " + w + " --no-peer --repeat 1");
  EXPECT_EQ(bench.rc, 1) << bench.out << bench.err;
  EXPECT_HAS(bench.err, "loom bench: error: no CUDA driver/GPU: " + why);
  EXPECT_HAS(bench.err, "--target cuda needs an NVIDIA GPU");
  EXPECT_EQ(bench.err.find("matmul: matmul:"), std::string::npos) << bench.err;
  EXPECT_EQ(bench.err.find("argument 0"), std::string::npos) << bench.err;
  EXPECT_EQ(std::count(bench.err.begin(), bench.err.end(), '\n'), 1) << "one message:\n" << bench.err;

  const std::string log = path("cuda.jsonl");
  Result tune = loom("tune " + w + " --trials 4 --log " + log);
  EXPECT_EQ(tune.rc, 1) << tune.out << tune.err;
  EXPECT_HAS(tune.err, "loom tune: error: no CUDA driver/GPU: " + why);
  EXPECT_HAS(tune.err, "--target cuda needs an NVIDIA GPU");
  EXPECT_EQ(std::count(tune.err.begin(), tune.err.end(), '\n'), 1) << "one message:\n" << tune.err;
  EXPECT_FALSE(std::filesystem::exists(log)) << "no empty log is left behind";
}

// ---------------------------------------------------------------- records plot

TEST_F(CliTest, RecordsPlotDrawsEveryTrialAndTheBestBuildPicks) {
  const tuner::Task t = matmul(32);
  const std::string log = path("m.jsonl");
  const int64_t n = t.space().size();
  // Config a is measured fastest once, then slower when confirmed; config b is steady and
  // is what build picks. One trial failed.
  const int64_t a = 1 % n, b = 2 % n, c = 3 % n, d = 4 % n;
  write_records(log, t, {{c, 9e-5}, {a, 1e-5}, {b, 2e-5}, {d, 7e-5}});
  {
    records::LogWriter w(log);
    records::MeasureResult m;
    m.error = records::ErrorCode::kCompile;
    m.error_msg = "failed";
    w.write(t.record(5 % n, m, "random"));
  }
  write_records(log, t, {{a, 5e-5}, {b, 2e-5}, {a, 6e-5}, {b, 2.2e-5}}, records::kConfirmTuner);

  Result r = loom("records plot " + log + " -o " + path("m.svg"));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const std::string svg = test::slurp(path("m.svg"));
  std::regex circle("<circle class=\"trial\"");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), circle), std::sregex_iterator()), 4);
  EXPECT_HAS(r.out, "4 trials drawn, 1 failed not drawn");

  // The line ends at what `records best` reports and `build` picks.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<polyline class=\"best\" data-final-gflops=\"([0-9.]+)\" "
                                                   "data-config=\"(\\d+)\"")))
      << svg;
  const double final_gflops = std::stod(m[1]);
  EXPECT_EQ(std::stoll(m[2]), b);
  Result best = loom("records best " + log);
  ASSERT_EQ(best.rc, 0) << best.err;
  EXPECT_HAS(best.out, fmt::format("{:.2f} GFLOP/s", final_gflops));
  EXPECT_HAS(best.out, fmt::format("config {} ", b));
  Result build = loom("build --op matmul --shape 32,32,32 --log " + log + " -o " + path("m.so"));
  ASSERT_EQ(build.rc, 0) << build.err;
  EXPECT_HAS(build.out, fmt::format("config {} from", b));
  EXPECT_HAS(build.out, fmt::format("{:.2f} GFLOP/s when tuned", final_gflops));

  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<text class=\"title\"[^>]*>([^<]*)</text>")));
  EXPECT_HAS(m[1].str(), "matmul(32,32,32;float32) on llvm");
}

// ---------------------------------------------------------------- tune-model

TEST_F(CliTest, TuneModelAnnouncesTheConfirmStepAndQualifiesItsEstimate) {
  graph_opt::save_graph(head(), path("head.json"));
  Result r = loom("tune-model " + path("head.json") + " --log " + path("h.jsonl") +
                  " --trials 4 --round 2 --min-repeat-ms 1 --repeat 1 --jobs 2 --confirm 1 --confirm-measurements 2 "
                  "--measure-network");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_HAS(r.err, "search ETA");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"re(confirming the 1 best configs of each task: (\d+) measurements, ~)re")))
      << r.err;
  EXPECT_EQ(std::stoi(m[1]), 2);  // one config of each of the 2 tasks, one more measurement each
  EXPECT_LT(r.err.find("confirming the 1 best"), r.err.find("[scheduler] confirm: task 0"));
  EXPECT_HAS(r.out, "(search ");
  EXPECT_HAS(r.out, "each timed alone with hot caches");
  EXPECT_HAS(r.out, "`loom run` of the compiled network measures more");
  // --measure-network: the compiled network timed end to end, next to the estimate.
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"re(measured  ([0-9.e+-]+) ms: the network compiled with this log, run end to end \(median of 10 runs after 3 warm-up runs, as `loom run` times it\); the estimate is (\d+)% of it)re")))
      << r.out;
  EXPECT_GT(std::stod(m[1]), 0);
  // The softmax kernel is one of the tasks.
  EXPECT_HAS(r.out, "softmax(4,10;float32)");
}

// ---------------------------------------------------------------- did you mean

TEST_F(CliTest, MistypedNamesGetSuggestions) {
  struct Case {
    std::string args, msg;
  };
  const std::vector<Case> cases = {
      {"tune --op matmu --shape 8,8,8 --log " + path("x.jsonl"), "--op: unknown op 'matmu'; did you mean 'matmul'?"},
      {"build --op sofmax --shape 4,4 -o " + path("x.so"), "unknown op 'sofmax'; did you mean 'softmax'?"},
      {"bench --op Matmul --shape 8,8,8", "did you mean 'matmul'?"},
      {"show --op dense_pak --shape 8,8,8", "did you mean 'dense_pack'?"},
      {"lower --op matmull", "--op: unknown operator 'matmull'; did you mean 'matmul'?"},
      {"tune --op matmul --shape 8,8,8 --log " + path("x.jsonl") + " --trails 3", "unknown option '--trails'; did you mean '--trials'?"},
      {"records sumary " + path("x.jsonl"), "unknown command 'sumary'; did you mean 'summary'?"},
      {"tnue --op matmul", "unknown command 'tnue'; did you mean 'tune'?"},
  };
  for (const Case& c : cases) {
    Result r = loom(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.err;
    EXPECT_HAS(r.err, c.msg);
  }
  // Nothing near: no guess, a pointer to the list.
  Result far = loom("tune --op qqqqqqqq --shape 8 --log " + path("x.jsonl"));
  EXPECT_EQ(far.rc, 2);
  EXPECT_HAS(far.err, "unknown op 'qqqqqqqq'; `loom ops` lists the operator templates");
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

}  // namespace
}  // namespace loom
