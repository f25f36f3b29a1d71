// `loom tune-model` as a user runs it: a small network's tasks listed, tuned (real
// measurements, a few trials), resumed, the latency file, and `loom compile` taking the log;
// clear errors for bad options.
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/cli_test_util.h"
#include "common/test_util.h"
#include "graph_opt/graph_test_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/reference.h"
#include "loom/graph_opt/serialize.h"
#include "loom/records/record.h"
#include "loom/runtime/npy.h"

namespace loom {
namespace {

using runtime::NDArray;
using test::CliTest;
using test::Result;

const DataType f32 = DataType::Float(32);

NDArray random_array(std::vector<int64_t> shape, uint64_t seed, double lo = -0.3, double hi = 0.3) {
  return test::random_array(std::move(shape), seed, lo, hi);
}

/// Three 3x3 convs of 16 channels on 8x8, relus, a residual add and a 1x1 conv to 32: two
/// tuning tasks, the 3x3 convs' workload (weight 3) and the 1x1's (weight 1).
graph_opt::Graph conv_net() {
  using namespace graph_opt;
  GraphBuilder b("conv_net");
  Value x = b.input("image", {{1, 16, 8, 8}, f32, "NCHW"});
  Conv2dAttrs pad1;
  pad1.padding = {1, 1};
  Value c1 = b.relu(b.conv2d(x, b.constant("c1.w", random_array({16, 16, 3, 3}, 1)), pad1, "c1"), "r1");
  Value c2 = b.relu(b.conv2d(c1, b.constant("c2.w", random_array({16, 16, 3, 3}, 2)), pad1, "c2"), "r2");
  Value c3 = b.conv2d(c2, b.constant("c3.w", random_array({16, 16, 3, 3}, 3)), pad1, "c3");
  Value s = b.relu(b.add(c3, c1, "add"), "r3");
  b.output(b.conv2d(s, b.constant("c4.w", random_array({32, 16, 1, 1}, 4)), Conv2dAttrs{}, "c4"));
  return b.build();
}

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

const std::string kFast = " --round 2 --min-repeat-ms 2 --repeat 2 --confirm 0 --jobs 2";

TEST_F(CliTest, TuneModelListsTheTasks) {
  graph_opt::save_graph(conv_net(), path("net.json"));
  Result r = loom("tune-model " + path("net.json") + " --list");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  // The two layout transforms have no template: each is an auto-scheduled task.
  EXPECT_HAS(r.out, "graph 'conv_net', 6 kernels (level 3), 4 tuning tasks (2 auto-scheduled; --search template) on llvm");
  EXPECT_EQ(r.out.find("no task covers"), std::string::npos) << r.out;
  EXPECT_HAS(r.out, "auto:layout_transform(");
  EXPECT_HAS(r.out, "conv2d_nchwc(1,16,8,8,16,3,3;float32;pad=1,stride=1)");
  EXPECT_HAS(r.out, "conv2d_nchwc(1,16,8,8,32,1,1;float32;pad=0,stride=1)");
  EXPECT_HAS(r.out, "     1       3 ");  // the three 3x3 convs: one workload, weight 3
  // --search both: the conv kernels get auto tasks too.
  Result both = loom("tune-model " + path("net.json") + " --list --search both");
  ASSERT_EQ(both.rc, 0) << both.out << both.err;
  EXPECT_HAS(both.out, "auto-scheduled; --search both) on llvm");
  EXPECT_HAS(both.out, "auto:conv2d_nchwc+relu(");
  Result bad = loom("tune-model " + path("net.json") + " --list --search ansor");
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_HAS(bad.err, "--search");
}

TEST_F(CliTest, TuneModelThenResumeThenCompile) {
  graph_opt::Graph g = conv_net();
  graph_opt::save_graph(g, path("net.json"));
  const std::string log = path("net.jsonl");
  Result r = loom("tune-model " + path("net.json") + " --trials 8 --log " + log + kFast);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_HAS(r.err, "[scheduler] round 1 (warm-up): task 0");
  EXPECT_HAS(r.err, "after the warm-up:");
  EXPECT_HAS(r.out, "tuned     8 trials (0 errors) in 4 rounds");
  EXPECT_HAS(r.out, "estimate  ");
  EXPECT_HAS(r.out, "latency   " + path("net.latency.jsonl"));
  records::LogContents first = records::read_log(log);
  EXPECT_TRUE(first.warnings.empty());
  ASSERT_EQ(first.records.size(), 8u);
  int auto_records = 0;
  for (const records::Record& rec : first.records) auto_records += !rec.steps.empty();
  EXPECT_EQ(auto_records, 4) << "the two layout transforms' records carry their steps";

  std::vector<nlohmann::json> lines = json_lines(path("net.latency.jsonl"));
  ASSERT_EQ(lines.size(), 6u);  // start, 4 rounds, end
  EXPECT_EQ(lines[0]["event"], "start");
  EXPECT_EQ(lines[2]["phase"], "warm-up");
  EXPECT_EQ(lines[4]["trials"], 8);
  EXPECT_TRUE(lines[4]["estimated_ms"].is_number());

  Result again = loom("tune-model " + path("net.json") + " --trials 4 --resume --log " + log + kFast);
  ASSERT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_HAS(again.out, "tuned     4 trials (0 errors) in 2 rounds, 8 resumed from the log");
  EXPECT_HAS(again.err, "8 trials resumed from " + log);
  EXPECT_EQ(again.err.find("(warm-up)"), std::string::npos) << again.err;  // every task had records
  records::LogContents both = records::read_log(log);
  ASSERT_EQ(both.records.size(), 12u);
  std::set<std::pair<std::string, int64_t>> configs;
  for (const records::Record& rec : both.records)
    EXPECT_TRUE(configs.insert({rec.workload.key(), rec.config.index}).second)
        << rec.workload.key() << " config " << rec.config.index << " measured twice";
  EXPECT_EQ(json_lines(path("net.latency.jsonl")).size(), 6u + 4u);  // appended: start, 2 rounds, end

  Result c = loom("compile " + path("net.json") + " --log " + log + " -o " + path("net.so"));
  ASSERT_EQ(c.rc, 0) << c.out << c.err;
  EXPECT_HAS(c.out, "(4 tuned from the log, 0 on the default config); auto-scheduled from the log: 2; patterns: 0");
  EXPECT_EQ(c.err.find("warning: no tuning record"), std::string::npos) << c.err;
  NDArray x = random_array({1, 16, 8, 8}, 9, -1, 1);
  runtime::save_npy(path("x.npy"), x);
  Result run = loom("run " + path("net.so") + " --input " + path("x.npy") + " --output " + path("y.npy") + " --repeat 2");
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(test::compare_arrays(runtime::load_npy(path("y.npy")), graph_opt::run_reference(g, {x})[0], {1e-4, 1e-4},
                                 "c4"),
            "");
}

TEST_F(CliTest, TuneModelErrors) {
  graph_opt::save_graph(conv_net(), path("net.json"));
  const std::string net = path("net.json"), log = " --log " + path("l.jsonl");
  struct Case {
    std::string args;
    int rc;
    std::string msg;
  };
  std::vector<Case> cases = {
      {"tune-model" + log, 2, "expected one MODEL"},
      {"tune-model " + net, 2, "--log FILE is required"},
      {"tune-model " + path("missing.json") + log, 2, "no such file"},
      {"tune-model " + path("missing.onnx") + log, 2, "no such file"},
      {"tune-model " + net + log + " --trials 4 --trials-per-task 2", 2, "not both"},
      {"tune-model " + net + log + " --strategy greedy", 2, "--strategy"},
      {"tune-model " + net + log + " --target cuda", 2, "networks compile for the CPU"},
      {"tune-model " + net + log + " --opt-level 5", 2, "--opt-level"},
      {"tune-model " + net + log + " --disable nosuchpass", 2, "no pass named 'nosuchpass'"},
      {"tune-model " + net + log + " --input-shape image", 2, "--input-shape wants NAME=D0,D1"},
      {"tune-model " + net + log + " --tuner random --features knob", 2, "need --tuner xgb"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    Result r = loom(c.args);
    EXPECT_EQ(r.rc, c.rc) << r.out << r.err;
    EXPECT_HAS(r.err, c.msg);
  }
}

}  // namespace
}  // namespace loom
