// Malformed input to the `loom` commands that read model files and tuning logs (issue 31):
// deeply nested and out-of-range JSON in a model, log records that name no config of their
// template's space or have no times, and exported names that collide with loom's symbols. Each
// must end in a clean error (exit 1 or 2 with a message naming the problem), never a signal,
// or, for a bad log line, a warning naming the file and line while the rest of the log is used.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_test_util.h"
#include "loom/records/record.h"
#include "loom/tuner/space.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

using test::CliTest;
using test::Result;
using test::slurp;

class ProbeRecords : public CliTest {
 protected:
  void write(const std::string& name, const std::string& text) { std::ofstream(path(name)) << text; }
};

/// x: float32[2,3] → softmax(axis) → sm; each field raw JSON text.
std::string model(const std::string& shape, const std::string& inputs, const std::string& outputs,
                  const std::string& axis) {
  return R"({"format": "loom.graph", "version": 1, "name": "m", "nodes": [
    {"name": "x", "kind": "input", "type": {"shape": )" +
         shape + R"(, "dtype": "float32"}},
    {"name": "sm", "op": "softmax", "inputs": )" +
         inputs + R"(, "attrs": {"axis": )" + axis + R"(}}],
    "outputs": )" +
         outputs + "}";
}

TEST_F(ProbeRecords, DeeplyNestedModelsAreRefusedByCompileAndTuneModel) {
  const std::string deep = std::string(100000, '[') + "1" + std::string(100000, ']');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"shape", model(deep, R"(["x"])", R"(["sm"])", "1")},
      {"inputs", model("[2,3]", deep, R"(["sm"])", "1")},
      {"outputs", model("[2,3]", R"(["x"])", deep, "1")},
      {"attrs", model("[2,3]", R"(["x"])", R"(["sm"])", deep)},
  };
  for (const auto& [field, text] : cases) {
    SCOPED_TRACE(field);
    write("deep.json", text);
    Result c = loom("compile " + path("deep.json") + " -o " + path("deep.so"));
    EXPECT_EQ(c.rc, 1) << c.err;
    EXPECT_HAS(c.err, "deep.json: JSON nested more than 64 levels deep at");
    Result l = loom("tune-model " + path("deep.json") + " --list");
    EXPECT_EQ(l.rc, 1) << l.err;
    EXPECT_HAS(l.err, "nested more than 64 levels");
  }
}

TEST_F(ProbeRecords, OutOfRangeIntegersInAModelAreRefused) {
  write("ok.json", model("[2,3]", R"(["x"])", R"(["sm"])", "1"));
  Result ok = loom("tune-model " + path("ok.json") + " --list");
  EXPECT_EQ(ok.rc, 0) << ok.err;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {model("[2,3]", R"(["x"])", R"(["sm"])", "4294967296"), "attribute 'axis': 4294967296 does not fit in int32"},
      {model("[2,3]", R"(["x"])", R"(["sm"])", "9223372036854775807"), "9223372036854775807 does not fit in int32"},
      {model("[2,3]", R"(["x"])", R"(["sm"])", "1.5"), "must be an integer, found 1.5"},
      {model("[2,3]", R"([["x", 4294967296]])", R"(["sm"])", "1"), "4294967296 does not fit in int32"},
      {model("[2,3]", R"(["x"])", R"([["sm", 4294967296]])", "1"), "4294967296 does not fit in int32"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(message);
    write("bad.json", text);
    Result c = loom("compile " + path("bad.json") + " -o " + path("bad.so"));
    EXPECT_EQ(c.rc, 1) << c.err;
    EXPECT_HAS(c.err, message);
    Result l = loom("tune-model " + path("bad.json") + " --list");
    EXPECT_EQ(l.rc, 1) << l.err;
    EXPECT_HAS(l.err, message);
  }
}

/// A log of three valid matmul 32x32x32 records, then a much faster one whose knob values fit
/// no config of the space, then a trial with no error and no times. Returns the log's path and
/// sets `best` to the fastest valid config.
std::string write_log(const std::string& file, int64_t* best, int64_t* bogus) {
  tuner::Task task = tuner::Task::create("matmul", {32, 32, 32}, Target("llvm"));
  std::string split;
  for (const tuner::Knob& k : task.space().knobs())
    if (k.kind == tuner::KnobKind::kSplit) split = k.name;
  std::ofstream os(file);
  for (int64_t i : {1, 2, 3}) {
    records::MeasureResult m;
    m.costs = {1e-3 * double(i)};
    m.timestamp = 1.7e9;
    os << task.record(i, m, "probe").to_json() << "\n";
  }
  *best = 1;
  *bogus = 4;
  records::MeasureResult fast;
  fast.costs = {1e-12};
  records::Record r = task.record(*bogus, fast, "probe");
  r.config.knobs[split] = {524288, 1, 1};
  os << r.to_json() << "\n";                    // line 4
  nlohmann::json empty = nlohmann::json::parse(task.record(5, fast, "probe").to_json());
  empty["result"]["costs"] = nlohmann::json::array();
  os << empty.dump() << "\n";                   // line 5
  return file;
}

TEST_F(ProbeRecords, EveryLogReaderSkipsRecordsThatFitNoConfig) {
  int64_t best = -1, bogus = -1;
  const std::string log = write_log(path("t.jsonl"), &best, &bogus);
  const std::string skipped = fmt::format("t.jsonl:4: skipped: config {} does not fit the config space of matmul",
                                          bogus);
  const std::string empty = "t.jsonl:5: skipped: record field 'result.costs' is empty";
  const std::string workload = " --op matmul --shape 32,32,32 --log " + log;
  const std::vector<std::string> commands = {
      "records best " + log,
      "records best --json " + log,
      "records summary " + log,
      "records merge " + log + " -o " + path("merged.jsonl"),
      "records distill " + log + " -o " + path("distilled.jsonl"),
      "records plot " + log + " -o " + path("curve.svg"),
      "show" + workload,
      "build" + workload + " -o " + path("lib.so"),
  };
  for (const std::string& c : commands) {
    SCOPED_TRACE(c);
    Result r = loom(c);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_HAS(r.err, skipped);
    EXPECT_HAS(r.err, empty);
    EXPECT_EQ(r.out.find("524288"), std::string::npos) << r.out;
  }
  Result b = loom("records best " + log);
  EXPECT_HAS(b.out, fmt::format("config {} ", best));
  Result s = loom("show" + workload);
  EXPECT_HAS(s.out, fmt::format("best record, config {} of", best));
  Result lib = loom("build" + workload + " -o " + path("lib2.so"));
  EXPECT_HAS(lib.out, fmt::format("config {} from", best));
  EXPECT_EQ(slurp(path("merged.jsonl")).find("524288"), std::string::npos);
  // tune --resume reads the log the same way.
  Result t = loom("tune --op matmul --shape 32,32,32 --trials 1 --resume --log " + log);
  EXPECT_EQ(t.rc, 0) << t.err;
  EXPECT_HAS(t.err, skipped);
}

TEST_F(ProbeRecords, BuildRefusesNamesThatCollideWithLoomsSymbols) {
  const std::string base = "build --op matmul --shape 32,32,32 -o " + path("lib.so") + " --name ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"loom_get_last_error", "--name: 'loom_get_last_error' is reserved"},
      {"loom_module_info", "is reserved"},
      {"__loom_packed_matmul", "is reserved"},
      {"_Exit", "is reserved"},
      {"memcpy", "'memcpy' is a C library function"},
      {"expf", "is a C library function"},
      {"main", "'main' is the C program's entry point"},
      {"int", "'int' is a C keyword"},
      {"9lives", "'9lives' is not a C identifier"},
      {"'a-b'", "'a-b' is not a C identifier"},
  };
  for (const auto& [name, message] : cases) {
    SCOPED_TRACE(name);
    Result r = loom(base + name);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_HAS(r.err, message);
    EXPECT_FALSE(std::filesystem::exists(path("lib.so")));
  }
  Result ok = loom(base + "my_matmul");
  EXPECT_EQ(ok.rc, 0) << ok.err;
}

}  // namespace
}  // namespace loom
