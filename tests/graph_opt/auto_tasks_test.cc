// Auto-scheduled kernels of networks: task extraction gives every fused kernel without a
// template an auto-scheduler task of its own computation (and, with SearchKind::kBoth, the
// templated ones too); the task scheduler's records of them (random configs, made-up costs)
// schedule the compiled network, whose outputs stay the reference's; compile takes the faster
// of a kernel's template and auto records, ignores records of other workloads, and a corrupt
// log line is skipped as every log reader skips it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "examples/models/models.h"
#include "graph_test_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/task_extraction.h"
#include "loom/codegen/build.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/fused.h"
#include "loom/tuner/task_scheduler.h"

namespace loom::graph_opt {
namespace {

namespace fs = std::filesystem;
using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

std::vector<NDArray> run(const Module& m, const Graph& g, const std::vector<NDArray>& inputs) {
  std::vector<NDArray> outs;
  std::vector<DLTensor*> args;
  for (const auto& a : inputs) args.push_back(a.dltensor());
  for (ValueRef v : g.outputs) outs.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
  for (const auto& a : outs) args.push_back(a.dltensor());
  m.get_function("run").call(args);
  return outs;
}

/// A small BERT-like encoder layer: Q/K/V projections, two heads of scaled dot-product
/// attention with softmax, the output projection, residual + layer_norm, a GELU FFN, residual
/// + layer_norm. S = 12 tokens of 24 features (shapes that divide no tile evenly).
Graph bert_like_layer() {
  const int64_t S = 12, H = 24, heads = 2, D = H / heads, F = 40;
  GraphBuilder b("bert_like");
  uint64_t seed = 1;
  auto weight = [&](const std::string& n, std::vector<int64_t> s) {
    return b.constant(n, test::random_array(std::move(s), seed++, -0.3, 0.3));
  };
  Value x = b.input("x", {{S, H}, f32, ""});
  auto split = [&](Value v) {  // [S, H] -> [heads, S, D]
    return b.op("transpose", {b.reshape(v, {S, heads, D})}, {{"axes", std::vector<int64_t>{1, 0, 2}}});
  };
  Value q = split(b.dense(x, weight("wq", {H, H}), weight("bq", {H})));
  Value k = split(b.dense(x, weight("wk", {H, H}), weight("bk", {H})));
  Value v = split(b.dense(x, weight("wv", {H, H}), weight("bv", {H})));
  Value scores = b.op("batch_matmul", {q, k}, {{"transpose_b", int64_t(1)}});
  NDArray inv = NDArray::empty({}, f32);
  inv.set(0, 1 / std::sqrt(double(D)));
  Value probs = b.op("softmax", {b.multiply(scores, b.constant("inv_sqrt_d", inv))}, {{"axis", int64_t(-1)}});
  Value ctx = b.op("batch_matmul", {probs, v});
  ctx = b.reshape(b.op("transpose", {ctx}, {{"axes", std::vector<int64_t>{1, 0, 2}}}), {S, H});
  Value attn = b.dense(ctx, weight("wo", {H, H}), weight("bo", {H}));
  Value h1 = b.op("layer_norm", {b.add(attn, x), weight("g1", {H}), weight("b1", {H})});
  Value ff = b.op("gelu", {b.dense(h1, weight("w1", {F, H}), weight("bf1", {F}))});
  Value out = b.op("layer_norm", {b.add(b.dense(ff, weight("w2", {H, F}), weight("bf2", {H})), h1),
                                  weight("g2", {H}), weight("b2", {H})});
  b.output(out);
  return b.build();
}

class AutoTasks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("loom_auto_tasks_test_{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Tunes the tasks of `g` with the task scheduler, `trials` random configs each, costs made
  /// up (nothing is timed); returns the log.
  std::string tune(const TaskExtraction& x, int trials, const std::string& name) {
    std::vector<tuner::WeightedTask> tasks;
    for (const ExtractedTask& t : x.tasks) tasks.push_back({t.task, t.weight});
    tuner::TaskSchedulerOptions o;
    o.n_trial = int(tasks.size()) * trials;
    o.round_trials = trials;
    o.tuner = "random";
    o.tune.log_file = (dir_ / (name + ".jsonl")).string();
    o.tune.batch_size = trials;
    o.tune.include_default = false;  // random configs: the replay of non-default decisions is what is checked
    o.measure_fn = [](size_t task, const std::vector<int64_t>& configs) {
      std::vector<records::MeasureResult> out(configs.size());
      for (size_t k = 0; k < configs.size(); ++k)
        out[k].costs = {1e-4 * double(1 + task) + 1e-7 * double(configs[k] % 97)};
      return out;
    };
    tuner::TaskScheduler(tasks, o).run();
    return o.tune.log_file;
  }

  /// Compiles `g` untuned and with `log`, checks both against the reference, and returns the
  /// tuned compile's report.
  CompileReport compile_both(const Graph& g, const std::string& log) {
    const Target target("llvm");
    auto inputs = test::graph_inputs(g);
    auto want = run_reference(g, inputs);
    Module untuned = compile(g, target, nullptr);
    EXPECT_EQ(test::compare_outputs(run(untuned, g, inputs), want), "");
    records::ApplyHistoryBest best(log);
    CompileReport report;
    Module tuned = compile(g, target, &best, {}, &report);
    EXPECT_EQ(test::compare_outputs(run(tuned, g, inputs), want), "");
    return report;
  }

  fs::path dir_;
};

TEST_F(AutoTasks, EveryKernelOfABertLikeLayerIsTunedAndStillComputesTheLayer) {
  Graph g = bert_like_layer();
  TaskExtraction x = extract_tasks(g, Target("llvm"));
  for (const UntunedKernel& u : x.untuned) ADD_FAILURE() << u.kernel << ": " << u.reason;
  std::set<std::string> auto_ops;
  int templated = 0;
  for (const ExtractedTask& t : x.tasks) {
    if (t.task.is_auto()) auto_ops.insert(t.task.workload().op);
    else ++templated;
  }
  EXPECT_GT(templated, 0) << "dense and batch_matmul keep their templates";
  bool layer_norm = false;
  for (const std::string& op : auto_ops) layer_norm |= op.find("layer_norm") != std::string::npos;
  EXPECT_TRUE(layer_norm) << fmt::format("{}", fmt::join(auto_ops, " "));
  // Two layer_norm kernels of one shape (with the same fused residual add) are one task.
  CompileReport report = compile_both(g, tune(x, 3, "bert"));
  int auto_kernels = 0;
  for (const CompiledKernel& k : report.kernels) {
    EXPECT_TRUE(k.tuned) << k.name << " (" << k.ops << "): " << k.schedule;
    auto_kernels += k.source == "auto";
  }
  EXPECT_GE(auto_kernels, int(auto_ops.size()));
}

TEST_F(AutoTasks, ASmallConvNetsPoolingKernelsAreAutoTasks) {
  Graph g = models::resnet18(test::small_model());
  TaskExtraction x = extract_tasks(g, Target("llvm"));
  for (const UntunedKernel& u : x.untuned) ADD_FAILURE() << u.kernel << ": " << u.reason;
  std::set<std::string> auto_kernels;
  for (const ExtractedTask& t : x.tasks)
    if (t.task.is_auto()) auto_kernels.insert(t.kernels.begin(), t.kernels.end());
  EXPECT_TRUE(auto_kernels.count("fused_max_pool2d")) << fmt::format("{}", fmt::join(auto_kernels, " "));
  CompileReport report = compile_both(g, tune(x, 2, "resnet"));
  for (const CompiledKernel& k : report.kernels) EXPECT_TRUE(k.tuned) << k.name << ": " << k.schedule;
}

TEST_F(AutoTasks, SearchBothGivesTemplatedKernelsAnAutoTaskToo) {
  Graph g = bert_like_layer();
  TaskExtraction one = extract_tasks(g, Target("llvm"));
  TaskExtraction both = extract_tasks(g, Target("llvm"), {}, tuner::SearchKind::kBoth);
  TaskExtraction all_auto = extract_tasks(g, Target("llvm"), {}, tuner::SearchKind::kAuto);
  int templated = 0, auto_one = 0, auto_both = 0;
  for (const ExtractedTask& t : one.tasks) templated += !t.task.is_auto(), auto_one += t.task.is_auto();
  for (const ExtractedTask& t : both.tasks) auto_both += t.task.is_auto();
  EXPECT_EQ(both.tasks.size(), one.tasks.size() + size_t(auto_both - auto_one));
  EXPECT_GT(auto_both, auto_one);
  for (const ExtractedTask& t : all_auto.tasks) EXPECT_TRUE(t.task.is_auto()) << t.task.key();
  EXPECT_EQ(int(all_auto.tasks.size()), auto_both);
  // Compiled with the log of all of them, each kernel takes one of its records.
  CompileReport report = compile_both(g, tune(both, 2, "both"));
  for (const CompiledKernel& k : report.kernels) EXPECT_TRUE(k.tuned) << k.name << ": " << k.schedule;
}

// ---------------------------------------------------------------- choosing among records

/// dense [9,20] x [14,20]^T + bias, then GELU: a kernel with a template and an auto task.
tuner::FusedKernel dense_gelu(int64_t rows = 9) {
  tuner::FusedKernel k;
  k.graph.inputs = {{{rows, 20}, f32, ""}, {{14, 20}, f32, ""}, {{14}, f32, ""}};
  k.anchor = 0;
  k.graph.outputs = {k.graph.add("gelu", {k.graph.add("dense", {0, 1, 2})})};
  return k;
}

/// A record of config `index` of `task` costing `cost` seconds.
records::Record record(const tuner::Task& task, int64_t index, double cost) {
  records::MeasureResult m;
  m.costs = {cost};
  return task.record(index, m, "test");
}

/// The first canonical config after the default that instantiates.
int64_t some_other_config(const tuner::Task& task) {
  for (int64_t i = 1; i < int64_t(task.space().size()); ++i) {
    const int64_t c = task.canonical((task.default_index() + i * 7919) % int64_t(task.space().size()));
    if (c == task.default_index()) continue;
    try {
      task.instantiate(c);
      return c;
    } catch (const tuner::InstantiationError&) {
    }
  }
  return -1;
}

/// Builds `fs` and compares its output with te::evaluate of the kernel's own computation.
std::string check(const tuner::FusedKernel& k, const tuner::FusedSchedule& fs) {
  std::vector<te::Tensor> ref = k.graph.build();
  std::vector<te::Tensor> in(ref.begin(), ref.begin() + long(k.graph.inputs.size()));
  auto inputs = test::random_inputs(in, 3);
  NDArray want = te::evaluate(tuner::outputs_of(ref), inputs).at(0);
  Module m = codegen::build(fs.schedule, fs.args, Target("llvm"), "f");
  NDArray got = NDArray::empty(want.shape(), f32);
  std::vector<DLTensor*> args;
  for (const te::Tensor& t : in) args.push_back(inputs.at(t).dltensor());
  args.push_back(got.dltensor());
  m.get_function("f").call(args);
  return test::compare_outputs({got}, {want});
}

TEST(AutoTasksRecords, CompileTakesTheFasterOfTheTemplateAndTheAutoRecord) {
  const Target target("llvm");
  tuner::FusedKernel k = dense_gelu();
  tuner::KernelTasks kt = tuner::kernel_tasks(k, target);
  ASSERT_TRUE(kt.templated) << kt.template_note;
  ASSERT_TRUE(kt.automatic) << kt.auto_note;
  tuner::Task bare = tuner::Task::create(kt.templated->workload(), target);
  EXPECT_EQ(bare.key(), "dense(9,14,20;float32)");
  EXPECT_EQ(kt.automatic->key(), tuner::auto_workload(k).key());
  const int64_t auto_config = some_other_config(*kt.automatic), tmpl_config = some_other_config(bare);
  ASSERT_GE(auto_config, 0);
  ASSERT_GE(tmpl_config, 0);
  for (bool auto_faster : {true, false}) {
    SCOPED_TRACE(auto_faster);
    records::ApplyHistoryBest best;
    best.add(record(*kt.automatic, auto_config, auto_faster ? 1e-6 : 1e-3));
    best.add(record(bare, tmpl_config, auto_faster ? 1e-3 : 1e-6));
    tuner::FusedSchedule fs = tuner::schedule_fused(k, target, &best);
    EXPECT_EQ(fs.source, auto_faster ? tuner::ScheduleSource::kAuto : tuner::ScheduleSource::kTuned) << fs.note;
    EXPECT_EQ(fs.config_index, auto_faster ? auto_config : tmpl_config) << fs.note;
    EXPECT_EQ(fs.workload_key, auto_faster ? kt.automatic->key() : bare.key());
    EXPECT_EQ(check(k, fs), "");
  }
  // Only an auto record: it is taken over the template's default.
  records::ApplyHistoryBest only_auto;
  only_auto.add(record(*kt.automatic, auto_config, 1e-3));
  EXPECT_EQ(tuner::schedule_fused(k, target, &only_auto).source, tuner::ScheduleSource::kAuto);
}

TEST(AutoTasksRecords, RecordsOfOtherWorkloadsAreIgnored) {
  const Target target("llvm");
  tuner::FusedKernel k = dense_gelu(9), other = dense_gelu(10);
  tuner::Task other_auto = tuner::Task::create_auto(other.graph, target);
  ASSERT_NE(other_auto.key(), tuner::auto_workload(k).key());
  records::ApplyHistoryBest best;
  best.add(record(other_auto, some_other_config(other_auto), 1e-9));
  tuner::FusedSchedule fs = tuner::schedule_fused(k, target, &best);
  EXPECT_EQ(fs.source, tuner::ScheduleSource::kDefault) << fs.note;
  EXPECT_EQ(check(k, fs), "");
  // A template-less kernel (layer_norm) with only another shape's record: the pattern schedule.
  auto norm = [](int64_t rows) {
    tuner::FusedKernel n;
    n.graph.inputs = {{{rows, 24}, f32, ""}, {{24}, f32, ""}, {{24}, f32, ""}};
    n.graph.outputs = {n.graph.add("layer_norm", {0, 1, 2})};
    return n;
  };
  tuner::Task norm7 = tuner::Task::create_auto(norm(7).graph, target);
  records::ApplyHistoryBest best2;
  best2.add(record(norm7, some_other_config(norm7), 1e-9));
  tuner::FusedKernel norm5 = norm(5);
  fs = tuner::schedule_fused(norm5, target, &best2);
  EXPECT_EQ(fs.source, tuner::ScheduleSource::kPattern) << fs.note;
  EXPECT_EQ(check(norm5, fs), "");
  fs = tuner::schedule_fused(norm(7), target, &best2);
  EXPECT_EQ(fs.source, tuner::ScheduleSource::kAuto) << fs.note;
}

TEST_F(AutoTasks, ACorruptLogLineIsSkippedAndTheRestApplies) {
  const Target target("llvm");
  tuner::FusedKernel k = dense_gelu();
  tuner::Task task = tuner::Task::create_auto(k.graph, target);
  const int64_t config = some_other_config(task);
  const std::string path = (dir_ / "corrupt.jsonl").string();
  {
    std::ofstream f(path);
    f << "{\"not a record\n" << record(task, config, 1e-6).to_json() << "\n";
  }
  std::ostringstream warn;
  records::LogContents log = records::read_log(path, &warn);
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings[0].find("corrupt.jsonl:1: skipped"), std::string::npos) << log.warnings[0];
  records::ApplyHistoryBest best;
  for (const records::Record& r : log.records) best.add(r);
  tuner::FusedSchedule fs = tuner::schedule_fused(k, target, &best);
  EXPECT_EQ(fs.source, tuner::ScheduleSource::kAuto) << fs.note;
  EXPECT_EQ(fs.config_index, config);
  EXPECT_EQ(check(k, fs), "");
}

}  // namespace
}  // namespace loom::graph_opt
