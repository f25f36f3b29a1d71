// A concat of hundreds of inputs compiles into a correct kernel (its compute is a balanced
// tree of selects; tests/e2e/concat_many_inputs_cli_test.cc checks the cost of thousands).
#include <gtest/gtest.h>

#include <cstring>

#include "graph_test_util.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/reference.h"

namespace loom::graph_opt {
namespace {

const DataType f32 = DataType::Float(32);

std::vector<runtime::NDArray> run(const runtime::Module& m, const Graph& g,
                                  const std::vector<runtime::NDArray>& inputs) {
  std::vector<runtime::NDArray> outs;
  for (ValueRef v : g.outputs) {
    outs.push_back(runtime::NDArray::empty(g.type(v).shape, g.type(v).dtype));
    std::memset(outs.back().raw_data(), 0x5a, outs.back().nbytes());
  }
  std::vector<DLTensor*> args;
  for (const auto& a : inputs) args.push_back(a.dltensor());
  for (const auto& a : outs) args.push_back(a.dltensor());
  m.get_function("run").call(args);
  return outs;
}

/// concat of `n` values along axis 1: the inputs x [2,3] and y [2,5] and relu(y), in turn.
Graph many_concat(int n) {
  GraphBuilder b("many_concat");
  Value x = b.input("x", {{2, 3}, f32, ""}), y = b.input("y", {{2, 5}, f32, ""});
  Value r = b.relu(y, "r");
  std::vector<Value> parts;
  for (int i = 0; i < n; ++i) parts.push_back(i % 3 == 0 ? x : i % 3 == 1 ? y : r);
  b.output(b.op("concat", parts, {{"axis", int64_t(1)}}, "cat"));
  return b.build();
}

TEST(ConcatManyInputs, CompiledMatchesTheReference) {
  Graph g = many_concat(300);
  auto inputs = test::graph_inputs(g);
  for (int level : {0, 3}) {
    SCOPED_TRACE(level);
    CompileOptions opt;
    opt.passes.opt_level = level;
    runtime::Module m = compile(g, Target("llvm"), nullptr, opt);
    EXPECT_EQ(test::compare_outputs(run(m, g, inputs), run_reference(g, inputs)), "");
  }
}

}  // namespace
}  // namespace loom::graph_opt
