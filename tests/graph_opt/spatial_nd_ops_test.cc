// The N-D window operators (conv3d, max/avg/Lp pooling over 1 to 3 spatial dims, MaxPool's
// indices, col2im, max_unpool) and group_norm compiled through graph_opt::compile for LLVM, each in a small
// graph with a fusable consumer, against te::evaluate's reference execution.
#include <cstring>

#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/reference.h"

namespace loom::graph_opt {
namespace {

using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

struct Case {
  std::string op;
  std::vector<std::vector<int64_t>> inputs;
  Attrs attrs;
};

std::vector<Case> cases() {
  using V = std::vector<int64_t>;
  Attrs pool1{{"pool_size", V{3}}, {"strides", V{2}}, {"padding", V{1, 2}}, {"ceil_mode", int64_t(1)}};
  Attrs pool2{{"pool_size", V{3, 2}}, {"strides", V{2, 3}}, {"dilations", V{2, 1}}, {"padding", V{1, 0, 2, 1}}};
  Attrs pool3{{"pool_size", V{2, 3, 2}}, {"strides", V{1, 2, 2}}, {"dilations", V{2, 1, 1}},
              {"padding", V{1, 1, 0, 0, 1, 1}}, {"ceil_mode", int64_t(1)}};
  auto with = [](Attrs a, const std::string& k, te::ops::AttrValue v) {
    a[k] = std::move(v);
    return a;
  };
  return {
      {"conv3d", {{1, 4, 5, 7, 6}, {6, 2, 3, 2, 3}, {6}},
       {{"strides", V{1, 2, 1}}, {"padding", V{1, 0, 1, 1, 1, 0}}, {"dilations", V{1, 1, 2}}, {"groups", int64_t(2)}}},
      {"conv3d", {{2, 3, 4, 4, 4}, {5, 3, 1, 1, 1}}, {}},
      {"max_pool_nd", {{2, 3, 17}}, pool1},
      {"max_pool_nd", {{1, 2, 9, 13}}, pool2},
      {"max_pool_nd", {{1, 3, 5, 7, 6}}, pool3},
      {"avg_pool_nd", {{2, 3, 17}}, pool1},
      {"avg_pool_nd", {{1, 2, 9, 13}}, with(pool2, "count_include_pad", int64_t(1))},
      {"avg_pool_nd", {{1, 3, 5, 7, 6}}, pool3},
      {"lp_pool_nd", {{1, 2, 9, 13}}, pool2},
      {"lp_pool_nd", {{2, 3, 17}}, with(pool1, "p", 3.0)},
      {"max_pool_nd_indices", {{1, 2, 9, 13}}, pool2},
      {"max_pool_nd_indices", {{1, 3, 5, 7, 6}}, with(pool3, "column_major", int64_t(1))},
      {"col2im", {{2, 3 * 6, 9}}, {{"image_shape", V{5, 7}}, {"block_shape", V{2, 3}}, {"strides", V{2, 2}},
                                    {"padding", V{1, 0, 0, 1}}}},
      {"max_unpool", {{2, 3, 4, 4}, {2, 3, 4, 4}},
       {{"scatter_shape", V{2, 3, 9, 8}}, {"output_shape", V{2, 3, 10, 9}}}},
      {"group_norm", {{2, 6, 5, 3}, {6}, {6}}, {{"groups", int64_t(3)}}},
      {"group_norm", {{3, 4, 17}, {4}, {4}}, {{"groups", int64_t(4)}, {"epsilon", 1e-3}}},
  };
}

TEST(SpatialNdOps, CompiledMatchReference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.op + " on " + std::to_string(c.inputs[0].size()) + "-D data");
    GraphBuilder b("one_" + c.op);
    std::vector<Value> ins;
    const bool unpool = c.op == "max_unpool";  // its second input: int64 indices
    for (size_t i = 0; i < c.inputs.size(); ++i)
      ins.push_back(b.input("in" + std::to_string(i), {c.inputs[i], unpool && i == 1 ? DataType::Int(64) : f32, ""}));
    Value y = b.op(c.op, ins, c.attrs, "y");
    // A fusable consumer (float outputs).
    if (b.type(y).dtype == f32) y = b.op("relu", {y}, {}, "relu");
    b.output(y);
    Graph g = b.build();
    std::vector<NDArray> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) inputs.push_back(test::random_array(c.inputs[i], 3 + i, -2, 2));
    if (unpool) {  // distinct positions of the [2,3,9,8] scatter shape, a few repeated
      NDArray idx = NDArray::empty(c.inputs[1], DataType::Int(64));
      for (int64_t i = 0; i < idx.numel(); ++i) idx.set(i, double((i * 37 + i / 5) % (2 * 3 * 9 * 8)));
      inputs[1] = idx;
    }
    std::vector<NDArray> want = run_reference(g, inputs);
    for (int level : {0, 3}) {
      SCOPED_TRACE(level);
      CompileOptions opt;
      opt.passes.opt_level = level;
      Module m = compile(g, Target("llvm"), nullptr, opt);
      NDArray got = NDArray::empty(g.type(g.outputs[0]).shape, g.type(g.outputs[0]).dtype);
      std::memset(got.raw_data(), 0x5a, got.nbytes());
      std::vector<DLTensor*> args;
      for (NDArray& a : inputs) args.push_back(a.dltensor());
      args.push_back(got.dltensor());
      m.get_function("run").call(args);
      EXPECT_EQ(test::compare_outputs({got}, want), "");
    }
  }
}

}  // namespace
}  // namespace loom::graph_opt
