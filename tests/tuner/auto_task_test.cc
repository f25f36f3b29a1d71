// Auto-scheduled tasks: workload keys (a te computation by its structure, registry operators and
// fused groups by their op graph), tasks re-created from records, records that carry their
// steps and replay them, and the XGB tuner searching an auto task end to end into a record
// that build_best applies.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/test_util.h"
#include "loom/records/record_check.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/auto/workload.h"

namespace loom::tuner {
namespace {

using autosched::OpGraph;
using te::IterVar;
using te::Tensor;
using te::Var;

const DataType f32 = DataType::Float(32);

/// A row-normalization written by a user, rebuilt on each call with variables named `v`.
std::vector<Tensor> my_norm(int64_t rows, int64_t cols, const std::string& v = "k", float scale = 1.0f) {
  Tensor X = te::placeholder({rows, cols}, f32, "X");
  IterVar k = te::reduce_axis({0, cols}, v);
  Tensor S = te::compute({rows}, [&](Var i) { return te::sum(X(i, k) * X(i, k), {k}); }, "sumsq");
  Tensor Y = te::compute({rows, cols}, [&](Var i, Var j) { return X(i, j) * scale / te::sqrt(S(i) + 1e-6f); }, "Y");
  return {X, Y};
}

std::string lowered(const Instance& inst) { return lowering::to_string(lower(inst.schedule, inst.args, "f")); }

std::filesystem::path temp_log(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / fmt::format("loom_auto_{}_{}.jsonl", name, ::getpid());
  std::filesystem::remove(p);
  return p;
}

TEST(AutoWorkload, TeComputationKeyIsItsStructureAndName) {
  const Target llvm("llvm");
  Task a = Task::create_auto("my_norm", my_norm(8, 32), llvm);
  Task b = Task::create_auto("my_norm", my_norm(8, 32, "r"), llvm);  // other variable names
  EXPECT_EQ(a.key(), b.key());
  EXPECT_TRUE(a.is_auto());
  EXPECT_EQ(a.workload().op, "auto:my_norm");
  EXPECT_EQ(a.workload().shape, std::vector<int64_t>{});
  EXPECT_NE(a.key(), Task::create_auto("my_norm", my_norm(8, 33), llvm).key());        // another shape
  EXPECT_NE(a.key(), Task::create_auto("my_norm", my_norm(8, 32, "k", 2), llvm).key());  // another body
  EXPECT_NE(a.key(), Task::create_auto("other", my_norm(8, 32), llvm).key());           // another name
  // Made in this process, its workload re-creates the task (as a forked worker or a record does).
  Task c = Task::create(a.workload(), llvm);
  EXPECT_EQ(c.key(), a.key());
  EXPECT_EQ(c.space().size(), a.space().size());
  EXPECT_THROW(a.tmpl(), Error);
}

TEST(AutoWorkload, UnknownTeComputationSaysWhy) {
  records::Workload w = autosched::workload_of("never_built", my_norm(3, 5));
  try {
    Task::create(w, Target("llvm"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only a process that builds it again"), std::string::npos) << e.what();
  }
}

TEST(AutoWorkload, RegistryOperatorIsRecreatedFromItsRecordAlone) {
  OpGraph g = OpGraph::single("layer_norm", {autosched::parse_tensor_type("float32[16,96]"),
                                             autosched::parse_tensor_type("float32[96]"),
                                             autosched::parse_tensor_type("float32[96]")},
                              {{"epsilon", 1e-5}});
  const std::string json = g.to_json();
  EXPECT_EQ(OpGraph::from_json(json).to_json(), json);
  EXPECT_NE(json.find("\"axis\":-1"), std::string::npos) << json;  // defaults filled in
  Task t = Task::create_auto(g, Target("llvm"));
  EXPECT_EQ(t.workload().op, "auto:layer_norm");
  EXPECT_EQ(t.workload().dtype, "float32");
  // Through a record's JSON, as `loom build` and MPI ranks re-create it.
  records::Record r = t.record(t.default_index(), records::MeasureResult{{1e-3}}, "xgb");
  records::Record back = records::Record::from_json(r.to_json());
  Task again = Task::create(back.workload, Target("llvm"));
  EXPECT_EQ(again.key(), t.key());
  EXPECT_EQ(again.space().size(), t.space().size());
  EXPECT_EQ(lowered(again.instantiate_default()), lowered(t.instantiate_default()));
}

TEST(AutoWorkload, FusedGroupOfRegistryOperators) {
  OpGraph g;
  g.inputs = {autosched::parse_tensor_type("float32[8,32]"), autosched::parse_tensor_type("float32[16,32]"),
              autosched::parse_tensor_type("float32[16]"), autosched::parse_tensor_type("float32[8,16]")};
  const int d = g.add("dense", {0, 1, 2});
  const int s = g.add("add", {d, 3});
  g.outputs = {g.add("gelu", {s})};
  Task t = Task::create_auto(g, Target("llvm"));
  EXPECT_EQ(t.workload().op, "auto:dense+add+gelu");
  EXPECT_EQ(Task::create(t.workload(), Target("llvm")).key(), t.key());
  std::vector<Tensor> args = g.build();
  ASSERT_EQ(args.size(), 5u);
  const std::string d_desc = t.search_space().describe();
  EXPECT_NE(d_desc.find("multi-level tiled, computed in the tiles of"), std::string::npos) << d_desc;
  Instance inst = t.instantiate(t.canonical(t.space().size() / 3));
  EXPECT_MATCHES_REFERENCE(inst.schedule, inst.args);
}

TEST(AutoWorkload, OpGraphErrorsNameTheOperator) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  auto t = [](const char* s) { return autosched::parse_tensor_type(s); };
  EXPECT_NE(message([&] { OpGraph::single("layer_nrom", {t("float32[4,4]")}); }).find("layer_nrom"), std::string::npos);
  EXPECT_NE(message([&] { OpGraph::single("layer_norm", {t("float32[4,4]")}); }).find("input"), std::string::npos);
  EXPECT_NE(message([&] { OpGraph::single("softmax", {t("float32[4,4]")}, {{"axis", std::string("x")}}); })
                .find("axis"),
            std::string::npos);
  EXPECT_NE(message([&] { t("float32[4;4]"); }).find("not a tensor type"), std::string::npos);
  EXPECT_NE(message([&] { t("floaty[4]"); }).find("not a tensor type"), std::string::npos);
  EXPECT_EQ(t("int8[1,2,3]@NCHW").layout, "NCHW");
}

TEST(AutoRecords, CarryStepsThatReplayToTheSameSchedule) {
  const Target llvm("llvm");
  Task t = Task::create_auto("my_norm", my_norm(12, 40), llvm);
  const int64_t index = t.canonical(t.space().size() / 2 + 7);
  records::Record r = records::Record::from_json(t.record(index, records::MeasureResult{{2e-3}}, "xgb").to_json());
  ASSERT_FALSE(r.steps.empty());
  EXPECT_EQ(r.version, records::kSchemaVersion);
  EXPECT_EQ(schedule::steps_from_json(r.steps), t.steps(index));
  std::string how;
  EXPECT_EQ(lowered(instantiate_record(t, r, &how)), lowered(t.instantiate(index)));
  EXPECT_EQ(how, fmt::format("config {}", index));
  // A record whose config no longer fits the space (rules changed since): its steps replay.
  records::Record stale = r;
  stale.config.knobs.begin()->second = {-1, 12345};
  EXPECT_EQ(lowered(instantiate_record(t, stale, &how)), lowered(t.instantiate(index)));
  EXPECT_NE(how.find("recorded steps"), std::string::npos) << how;
  EXPECT_EQ(record_problem(t, stale), "");
  // Without steps it is an error, as for a template's.
  stale.steps.clear();
  EXPECT_THROW(instantiate_record(t, stale), Error);
  EXPECT_NE(record_problem(t, stale), "");
}

TEST(AutoRecords, Version1LogsStillApply) {
  Task t = Task::create("matmul", {32, 32, 32}, Target("llvm"));
  records::Record r = t.record(t.default_index(), records::MeasureResult{{1e-4}}, "xgb");
  std::string line = r.to_json();
  const size_t v = line.find("\"v\":2");
  ASSERT_NE(v, std::string::npos);
  line.replace(v, 5, "\"v\":1");
  records::Record old = records::Record::from_json(line);
  EXPECT_EQ(old.version, 1);
  EXPECT_TRUE(old.steps.empty());
  records::ApplyHistoryBest best;
  best.add(old);
  ASSERT_TRUE(best_record(t, best).has_value());
  EXPECT_EQ(lowered(instantiate_record(t, *best_record(t, best))), lowered(t.instantiate_default()));
  EXPECT_THROW(records::Record::from_json(line.replace(line.find("\"v\":1"), 5, "\"v\":3")), records::SchemaVersionError);
}

TEST(AutoTuning, XgbTunerSearchesAnAutoTaskAndBuildBestAppliesIt) {
  OpGraph g = OpGraph::single("softmax", {autosched::parse_tensor_type("float32[32,200]")});
  Task task = Task::create_auto(g, Target("llvm"));
  const auto log = temp_log("xgb");
  TuneOptions opt;
  opt.n_trial = 12;
  opt.batch_size = 4;
  opt.log_file = log.string();
  opt.measure.n_parallel = 2;
  opt.measure.repeat = 1;
  opt.measure.min_repeat_ms = 1;
  opt.progress = nullptr;
  XGBTuner tuner(task);
  TuneSummary sum = tuner.tune(opt);
  EXPECT_EQ(sum.trials, 12);
  EXPECT_EQ(sum.errors, 0);
  ASSERT_TRUE(sum.best.has_value());
  records::LogContents contents = records::read_log(log.string());
  ASSERT_EQ(contents.records.size(), 12u);
  std::set<int64_t> seen;
  for (const records::Record& r : contents.records) {
    EXPECT_EQ(task.canonical(r.config.index), r.config.index);  // only canonical configs measured
    EXPECT_TRUE(seen.insert(r.config.index).second);              // each once
    EXPECT_FALSE(r.steps.empty());
  }
  EXPECT_TRUE(seen.count(task.default_index()));  // the pattern schedule first
  // The best record rebuilds, here and from a new task made from the log's workload.
  records::ApplyHistoryBest best(log.string());
  Task again = Task::create(contents.records[0].workload, Target("llvm"));
  runtime::Module m = build_best(again, best, nullptr, "softmax");
  std::vector<Tensor> args = again.compute();
  auto in = test::random_inputs(args, 3);
  runtime::NDArray x = in.at(args[0]);
  runtime::NDArray y = runtime::NDArray::empty({32, 200}, f32);
  m.get_function("softmax")(x, y);
  auto want = te::evaluate({args[1]}, in);
  EXPECT_EQ(test::compare_arrays(y, want[0], test::tolerance_for(f32), "softmax"), "");
  std::filesystem::remove(log);
}

TEST(AutoTuning, ResumeSkipsConfigsMeasuredUnderAnotherIndex) {
  Task task = Task::create_auto("my_norm", my_norm(4, 64), Target("llvm"));
  const auto log = temp_log("resume");
  // A log holding a non-canonical index of a config: resume counts it as its canonical one.
  int64_t raw = -1;
  for (int64_t i = 1; i < task.space().size() && raw < 0; i += 97)
    if (task.canonical(i) != i) raw = i;
  ASSERT_GE(raw, 0);
  {
    records::LogWriter w(log.string());
    records::Record r = task.record(raw, records::MeasureResult{{1e-3}}, "xgb");
    w.write(r);
  }
  TuneOptions opt;
  opt.n_trial = 0;
  opt.resume = true;
  opt.log_file = log.string();
  opt.progress = nullptr;
  RandomTuner tuner(task);
  TuneSummary sum = tuner.tune(opt);
  EXPECT_EQ(sum.resumed, 1);
  ASSERT_TRUE(sum.best.has_value());
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace loom::tuner
