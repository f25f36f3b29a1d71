// The graph's softmax operator is scheduled by the "softmax" template that `loom tune --op
// softmax` tunes: task extraction lists its workload, compile applies its records, and the
// compiled network computes what the reference does.
#include <gtest/gtest.h>

#include <cstring>

#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/task_extraction.h"
#include "loom/records/record.h"
#include "loom/tuner/task.h"

namespace loom::graph_opt {
namespace {

using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

/// x[4,24] -> dense to 10 classes (+ relu) -> softmax -> exp: a classifier head.
Graph classifier(Attrs softmax_attrs = {}) {
  GraphBuilder b("head");
  Value x = b.input("x", {{4, 24}, f32, ""});
  Value d = b.relu(b.dense(x, b.constant("w", test::random_array({10, 24}, 3))), "relu");
  Value s = b.op("softmax", {d}, softmax_attrs, "softmax");
  b.output(b.op("exp", {s}, {}, "exp"));
  return b.build();
}

std::vector<NDArray> run(const Module& m, const Graph& g, const std::vector<NDArray>& inputs) {
  std::vector<NDArray> outs;
  std::vector<DLTensor*> args;
  for (const NDArray& a : inputs) args.push_back(a.dltensor());
  for (ValueRef v : g.outputs) {
    outs.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
    std::memset(outs.back().raw_data(), 0x5a, outs.back().nbytes());
    args.push_back(outs.back().dltensor());
  }
  m.get_function("run").call(args);
  return outs;
}

const CompiledKernel* softmax_kernel(const CompileReport& r) {
  for (const CompiledKernel& k : r.kernels)
    if (k.ops == "softmax") return &k;
  return nullptr;
}

TEST(SoftmaxTemplate, TaskExtractionListsASoftmaxTask) {
  TaskExtraction x = extract_tasks(classifier(), Target("llvm"));
  std::vector<std::string> keys;
  for (const ExtractedTask& t : x.tasks) keys.push_back(t.task.key());
  const std::string want = records::Workload{"softmax", {4, 10}, "float32", {}}.key();
  EXPECT_NE(std::find(keys.begin(), keys.end(), want), keys.end()) << fmt::format("{}", fmt::join(keys, " "));
  for (const UntunedKernel& u : x.untuned) EXPECT_EQ(u.kernel.find("softmax"), std::string::npos) << u.reason;
}

TEST(SoftmaxTemplate, AnotherAxisOrRankKeepsThePatternSchedule) {
  // The template is a row softmax of a 2-D input: axis 0 has no template.
  TaskExtraction x = extract_tasks(classifier({{"axis", int64_t(0)}}), Target("llvm"));
  for (const ExtractedTask& t : x.tasks) EXPECT_NE(t.task.workload().op, "softmax") << t.task.key();
  auto inputs = test::graph_inputs(classifier({{"axis", int64_t(0)}}));
  Graph g = classifier({{"axis", int64_t(0)}});
  EXPECT_EQ(test::compare_outputs(run(compile(g, Target("llvm")), g, inputs), run_reference(g, inputs)), "");
}

TEST(SoftmaxTemplate, CompileAppliesTheSoftmaxRecord) {
  Graph g = classifier();
  const Target target("llvm");
  auto inputs = test::graph_inputs(g, 5);
  const std::vector<NDArray> want = run_reference(g, inputs);

  CompileReport untuned;
  Module m0 = compile(g, target, nullptr, {}, &untuned);
  const CompiledKernel* k0 = softmax_kernel(untuned);
  ASSERT_NE(k0, nullptr);
  EXPECT_EQ(k0->task.op, "softmax") << k0->schedule;
  EXPECT_FALSE(k0->tuned);
  EXPECT_EQ(test::compare_outputs(run(m0, g, inputs), want), "");

  // Records of softmax configs other than the default, one clearly fastest: compile uses it.
  tuner::Task task = tuner::Task::create("softmax", {4, 10}, target);
  ASSERT_GT(task.space().size(), 2);
  records::ApplyHistoryBest best;
  for (int64_t k = 0; k < std::min<int64_t>(task.space().size(), 6); ++k) {
    const int64_t index = (task.default_index() + 1 + k) % task.space().size();
    if (index == task.default_index()) continue;
    records::MeasureResult r;
    r.costs = {k == 2 ? 1e-6 : 1e-4};
    best.add(task.record(index, r, "test"));
  }
  const int64_t chosen = best.best(task.workload(), target.str())->config.index;
  CompileReport tuned;
  Module m1 = compile(g, target, &best, {}, &tuned);
  const CompiledKernel* k1 = softmax_kernel(tuned);
  ASSERT_NE(k1, nullptr);
  EXPECT_TRUE(k1->tuned) << k1->schedule;
  EXPECT_NE(k1->schedule.find(fmt::format("tuned config {}", chosen)), std::string::npos) << k1->schedule;
  EXPECT_EQ(test::compare_outputs(run(m1, g, inputs), want), "");
}

}  // namespace
}  // namespace loom::graph_opt
