// `loom compile` of a concat of 2000 inputs stays within the model fuzzer's limits (2 GiB of
// address space, 60 s). When concat was a chain of selects, each predicated load carried
// every enclosing condition: 1000 inputs took 12 s and 900 MB to compile, 2000 ran out of
// the limit (std::bad_alloc).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/process_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/serialize.h"

namespace loom::graph_opt {
namespace {

namespace fs = std::filesystem;

TEST(ConcatManyInputsCli, TwoThousandInputsCompileWithinTheFuzzersLimits) {
  const std::string loom = LOOM_BINARY_DIR "/tools/loom";
  ASSERT_TRUE(fs::exists(loom)) << loom << " was not built (target loom_cli)";
  GraphBuilder b("many_concat");
  Value x = b.input("x", {{2, 3}, DataType::Float(32), ""}), y = b.input("y", {{2, 5}, DataType::Float(32), ""});
  Value r = b.relu(y, "r");
  std::vector<Value> parts;
  for (int i = 0; i < 2000; ++i) parts.push_back(i % 3 == 0 ? x : i % 3 == 1 ? y : r);
  b.output(b.op("concat", parts, {{"axis", int64_t(1)}}, "cat"));
  const fs::path& dir = test::scratch_dir("loom-concat-many");
  fs::path model = dir / "cat2000.json", lib = dir / "cat2000.so";
  std::ofstream(model) << to_json(b.build());
  std::string out;
  int st = test::run({loom, "compile", model.string(), "-o", lib.string()}, test::host_env(), &out,
                     {.timeout_s = 60, .address_space = uint64_t(2) << 30});
  EXPECT_EQ(st, 0) << out;
  EXPECT_TRUE(fs::exists(lib));
}

}  // namespace
}  // namespace loom::graph_opt
