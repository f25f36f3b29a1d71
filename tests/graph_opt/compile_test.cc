// compile: networks to modules, compared with the graph's reference execution (node by node
// with te::evaluate), in process and through the exported library, at every optimization
// level; graphs whose outputs are inputs, constants, repeated or read again; the report and
// the warnings per untuned workload.
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/process_util.h"
#include "graph_test_util.h"
#include "loom/graph_opt/task_extraction.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/passes.h"
#include "loom/tuner/task.h"

namespace loom::graph_opt {
namespace {

namespace fs = std::filesystem;
using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

const fs::path& work_dir() { return test::scratch_dir("loom-compile-test"); }

/// Output arrays for `g`'s outputs, filled with a marker.
std::vector<NDArray> output_arrays(const Graph& g) {
  std::vector<NDArray> out;
  for (ValueRef v : g.outputs) {
    out.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
    std::memset(out.back().raw_data(), 0x5a, out.back().nbytes());
  }
  return out;
}

std::vector<NDArray> run(const Module& m, const Graph& g, const std::vector<NDArray>& inputs) {
  std::vector<NDArray> outs = output_arrays(g);
  std::vector<DLTensor*> args;
  for (const auto& a : inputs) args.push_back(a.dltensor());
  for (const auto& a : outs) args.push_back(a.dltensor());
  m.get_function("run").call(args);
  return outs;
}

bool same_bytes(const std::vector<NDArray>& a, const std::vector<NDArray>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].nbytes() != b[i].nbytes() || std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()) != 0) return false;
  return true;
}

TEST(Compile, SmallResNet18MatchesTheReference) {
  Graph g = models::resnet18(test::small_model());
  auto inputs = test::graph_inputs(g);
  auto want = run_reference(g, inputs);
  CompileReport report;
  Module m = compile(g, Target("llvm"), nullptr, {}, &report);
  EXPECT_EQ(test::compare_outputs(run(m, g, inputs), want), "");
  EXPECT_EQ(report.kernels.size(), report.fused.groups.size());
  EXPECT_EQ(report.kernels.size(), 23u) << "ResNet-18's fused groups (tests/graph_opt/models_test.cc)";
  EXPECT_EQ(report.kernels[0].ops, "conv2d_nchwc+relu");
  // conv1 (3 input channels, NCHW data) runs the conv2d_nchwc template with ic_block 0.
  EXPECT_EQ(report.kernels[0].workload.rfind("conv2d_nchwc(1,3,", 0), 0u) << report.kernels[0].workload;
  EXPECT_NE(report.kernels[0].workload.find("ic_block=0"), std::string::npos) << report.kernels[0].workload;
  EXPECT_EQ(report.kernels[0].task.key(), report.kernels[0].workload);
  EXPECT_NE(report.kernels[2].schedule.find("default config"), std::string::npos) << report.kernels[2].schedule;
  EXPECT_EQ(report.kernels[2].ops, "conv2d_nchwc+relu");
  EXPECT_EQ(report.kernels[2].workload.rfind("conv2d_nchwc(", 0), 0u) << report.kernels[2].workload;
  EXPECT_EQ(report.kernels[2].task.key(), report.kernels[2].workload);
  auto info = nlohmann::json::parse(m.info_json());
  EXPECT_EQ(info["arena_bytes"], report.memory.arena_bytes);
  EXPECT_EQ(info["inputs"][0]["name"], "data");
  EXPECT_EQ(info["kernels"].size(), report.kernels.size());
}

/// The small MobileNetV2, compiled once for the tests that run it.
const Module& small_mobilenet() {
  static Module m = compile(models::mobilenet_v2(test::small_model()), Target("llvm"));
  return m;
}

TEST(Compile, SmallMobileNetV2MatchesTheReference) {
  Graph g = models::mobilenet_v2(test::small_model());
  auto inputs = test::graph_inputs(g);
  EXPECT_EQ(test::compare_outputs(run(small_mobilenet(), g, inputs), run_reference(g, inputs)), "");
}

TEST(Compile, EveryOptimizationLevelMatchesTheReference) {
  Graph g = models::resnet18(test::small_model());
  auto inputs = test::graph_inputs(g, 3);
  auto want = run_reference(g, inputs);
  for (int level : {0, 1, 2}) {
    SCOPED_TRACE(level);
    CompileOptions opt;
    opt.passes.opt_level = level;
    CompileReport report;
    Module m = compile(g, Target("llvm"), nullptr, opt, &report);
    EXPECT_EQ(test::compare_outputs(run(m, g, inputs), want), "");
    if (level == 0) {  // fuses nothing; the flatten between the pool and the dense is a view
      int views = 0;
      for (const FusedGroup& grp : report.fused.groups) views += is_view_group(report.fused, grp);
      EXPECT_EQ(views, 1);
      EXPECT_EQ(report.kernels.size() + size_t(views), g.num_ops()) << "level 0 fuses nothing";
    }
  }
}

TEST(Compile, ExportedLibraryMatchesInProcess) {
  Graph g = models::mobilenet_v2(test::small_model());
  auto inputs = test::graph_inputs(g, 5);
  const Module& m = small_mobilenet();
  std::string path = (work_dir() / "mobilenet.so").string();
  m.export_library(path);
  auto in_process = run(m, g, inputs);
  EXPECT_TRUE(same_bytes(run(Module::load(path), g, inputs), in_process));

  // In a fresh process that knows nothing of loom.
  const std::string& loader = test::export_loader();
  std::vector<NDArray> all = inputs;
  std::vector<NDArray> outs = output_arrays(g);
  all.insert(all.end(), outs.begin(), outs.end());
  fs::path in = work_dir() / "mobilenet.in", out = work_dir() / "mobilenet.out";
  std::ofstream(in, std::ios::binary) << test::export_loader_input(all);
  std::string log;
  ASSERT_EQ(test::run({loader, path, "run", in.string(), out.string()}, {"LD_LIBRARY_PATH="}, &log), 0) << log;
  std::vector<std::string> got = test::export_loader_output(test::read_file(out), all.size());
  for (size_t j = 0; j < in_process.size(); ++j) {
    const std::string& bytes = got[inputs.size() + j];
    ASSERT_EQ(bytes.size(), in_process[j].nbytes());
    EXPECT_EQ(std::memcmp(bytes.data(), in_process[j].raw_data(), bytes.size()), 0) << "output " << j;
  }
}

/// data → relu → (output 0, read again) → add(·, c) → output 1; outputs 2..4: the input, the
/// constant and output 0 again.
Graph odd_outputs() {
  GraphBuilder b("odd");
  Value x = b.input("x", {{2, 5}, f32, ""});
  NDArray cv = NDArray::empty({2, 5}, f32);
  cv.fill_random(9);
  Value c = b.constant("c", cv);
  Value r = b.relu(x, "r");
  b.output(r);
  b.output(b.add(r, c, "s"));
  b.output(x);
  b.output(c);
  b.output(r);
  return b.build();
}

TEST(Compile, OutputsThatAreInputsConstantsRepeatedOrReadAgain) {
  Graph g = odd_outputs();
  auto inputs = test::graph_inputs(g);
  for (int level : {0, 3}) {
    SCOPED_TRACE(level);
    CompileOptions opt;
    opt.passes.opt_level = level;
    Module m = compile(g, Target("llvm"), nullptr, opt);
    EXPECT_EQ(test::compare_outputs(run(m, g, inputs), run_reference(g, inputs)), "");
  }
}

TEST(Compile, WarnsOncePerUntunedWorkload) {
  Graph g = models::resnet18(test::small_model());
  records::ApplyHistoryBest empty;
  std::ostringstream warn;
  CompileOptions opt;
  opt.warn = &warn;
  LoweredGraph lg = lower_graph(g, Target("llvm"), &empty, opt);
  std::set<std::string> workloads;
  for (const auto& k : lg.report.kernels)
    if (!k.workload.empty()) workloads.insert(k.workload);
  EXPECT_EQ(lg.report.untuned.size(), workloads.size());
  EXPECT_LT(workloads.size(), lg.report.kernels.size()) << "repeated blocks share workloads";
  EXPECT_EQ(lg.funcs.size(), lg.report.functions);
  EXPECT_LT(lg.funcs.size(), lg.report.kernels.size()) << "repeated blocks share functions";
  std::set<std::string> called;
  for (const auto& k : lg.plan.kernels) called.insert(k.name);
  EXPECT_EQ(called.size(), lg.funcs.size());
  std::string w = warn.str();
  EXPECT_NE(w.find("warning: no tuning record for conv2d_nchwc("), std::string::npos) << w;
  size_t lines = size_t(std::count(w.begin(), w.end(), '\n'));
  EXPECT_EQ(lines, workloads.size()) << "one line per workload";
}

TEST(Compile, TunedConfigsFromTheLogAreUsed) {
  Graph g = models::resnet18(test::small_model());
  LoweredGraph untuned = lower_graph(g, Target("llvm"));
  // A record for every workload, naming a config other than the default.
  records::ApplyHistoryBest best;
  std::set<std::string> keys;
  for (const auto& t : extract_tasks(g, Target("llvm")).tasks) {
    if (t.task.is_auto() || !keys.insert(t.task.key()).second) continue;
    const tuner::Task& task = t.task;
    int64_t index = (task.default_index() + 7) % int64_t(task.space().size());
    records::MeasureResult m;
    m.costs = {1e-3};
    best.add(task.record(index, m, "test"));
  }
  ASSERT_GT(keys.size(), 3u);
  CompileReport report;
  Module m = compile(g, Target("llvm"), &best, {}, &report);
  int tuned = 0;
  for (const auto& k : report.kernels) {
    if (k.source == "pattern") continue;
    tuned += k.tuned;
    EXPECT_NE(k.schedule.find("tuned config"), std::string::npos) << k.schedule;
  }
  EXPECT_GT(tuned, 0);
  EXPECT_TRUE(report.untuned.empty());
  auto inputs = test::graph_inputs(g, 11);
  EXPECT_EQ(test::compare_outputs(run(m, g, inputs), run_reference(g, inputs)), "");
}

TEST(Compile, Errors) {
  Graph g = odd_outputs();
  EXPECT_THROW(compile(g, Target("cuda")), Error);
}

}  // namespace
}  // namespace loom::graph_opt
