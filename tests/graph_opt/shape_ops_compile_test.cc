// The shape and index operators of issue 32 (strided_slice … reverse_sequence, pad's modes)
// in chains that fuse with their neighbours, compiled for the CPU at opt levels 0 and 3 and
// run against the reference execution; index inputs are graph inputs (read at run time),
// some out of range.
#include <cstring>

#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/reference.h"
#include "loom/te/op_registry.h"

namespace loom::graph_opt {
namespace {

using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32), i64 = DataType::Int(64);

/// An int64 array of `shape` with values cycling through lo..hi.
NDArray index_array(std::vector<int64_t> shape, int64_t lo, int64_t hi, int64_t step = 3) {
  NDArray a = NDArray::empty(std::move(shape), i64);
  for (int64_t k = 0; k < a.numel(); ++k) a.data<int64_t>()[k] = lo + (k * step) % (hi - lo + 1);
  return a;
}

/// Compiles `g` at opt levels 0 and 3 and compares each run on `args` with the reference.
void expect_compiled_matches_reference(const Graph& g, const std::vector<NDArray>& args) {
  std::vector<NDArray> want = run_reference(g, args);
  for (int level : {0, 3}) {
    SCOPED_TRACE(level);
    CompileOptions opt;
    opt.passes.opt_level = level;
    Module m = compile(g, Target("llvm"), nullptr, opt);
    std::vector<NDArray> got;
    std::vector<DLTensor*> call;
    for (const NDArray& a : args) call.push_back(a.dltensor());
    for (ValueRef v : g.outputs) {
      got.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
      std::memset(got.back().raw_data(), 0x5a, got.back().nbytes());
    }
    for (const NDArray& a : got) call.push_back(a.dltensor());
    m.get_function("run").call(call);
    EXPECT_EQ(test::compare_outputs(got, want), "");
  }
}

TEST(ShapeOpsCompile, ChannelSplitAndConcatOnBlockedValues) {
  // A channel Split and Concat between convolutions (YOLOv8's C2f): on whole 16-channel
  // blocks they run on the blocked values; across blocks (channels 8..24, a step of 2) in NCHW.
  for (bool aligned : {true, false}) {
    SCOPED_TRACE(aligned);
    GraphBuilder b("split_concat");
    Value x = b.input("x", {{1, 16, 5, 9}, f32, "NCHW"});
    Value c1 = b.conv2d(x, b.constant("w1", test::random_array({48, 16, 1, 1}, 1, -0.3, 0.3)), {}, "c1");
    auto slice = [&](int64_t from, int64_t to, int64_t step) {
      return b.op("strided_slice", {c1},
                  {{"begin", std::vector<int64_t>{0, from, 0, 0}}, {"end", std::vector<int64_t>{1, to, 5, 9}},
                   {"strides", std::vector<int64_t>{1, step, 1, 1}}});
    };
    Value s0 = aligned ? slice(0, 16, 1) : slice(8, 24, 1), s1 = aligned ? slice(16, 48, 1) : slice(0, 48, 2);
    Value m = b.relu(b.conv2d(s1, b.constant("w2", test::random_array({16, aligned ? 32 : 24, 3, 3}, 2, -0.2, 0.2)),
                              {{1, 1}, {1, 1}}));
    Value cat = b.op("concat", {s0, m, s1}, {{"axis", int64_t(1)}});
    b.output(b.conv2d(cat, b.constant("w3", test::random_array({32, aligned ? 64 : 56, 1, 1}, 3, -0.2, 0.2))));
    expect_compiled_matches_reference(b.build(), {test::random_array({1, 16, 5, 9}, 4)});
  }
}

TEST(ShapeOpsCompile, PadModesSliceTileChain) {
  for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
    SCOPED_TRACE(mode);
    GraphBuilder b("pad_chain");
    Value x = b.input("x", {{5, 13}, f32, ""});
    Value p = b.op("pad", {x}, {{"pads", std::vector<int64_t>{2, 9, 7, -3}}, {"mode", std::string(mode)}}, "pad");
    Value r = b.op("relu", {p}, {}, "relu");
    Value s = b.op("strided_slice", {r},
                   {{"begin", std::vector<int64_t>{-1, 1}}, {"end", std::vector<int64_t>{INT64_MIN, 17}},
                    {"strides", std::vector<int64_t>{-2, 3}}},
                   "slice");
    b.output(b.op("tile", {s}, {{"reps", std::vector<int64_t>{2, 3}}}, "tile"));
    expect_compiled_matches_reference(b.build(), {test::random_array({5, 13}, 3)});
  }
}

TEST(ShapeOpsCompile, GathersWithRunTimeIndices) {
  GraphBuilder b("gathers");
  Value x = b.input("x", {{7, 13}, f32, ""});
  Value ie = b.input("ie", {{7, 5}, i64, ""});
  Value in = b.input("in", {{4, 2}, i64, ""});
  Value e = b.op("gather_elements", {b.op("sigmoid", {x}, {}, "sig"), ie}, {{"axis", int64_t(1)}}, "ge");
  b.output(b.op("cumsum", {e}, {{"axis", int64_t(1)}, {"exclusive", int64_t(1)}}, "cs"));
  b.output(b.op("gather_nd", {x, in}, {}, "gnd"));
  // Indices from -15 (below -13: clamped) to 14 (beyond 12: clamped), and -8..7 on [7, 13].
  expect_compiled_matches_reference(b.build(), {test::random_array({7, 13}, 5), index_array({7, 5}, -15, 14),
                                                index_array({4, 2}, -8, 7, 5)});
}

TEST(ShapeOpsCompile, ScattersWithRunTimeIndices) {
  for (const char* r : {"none", "add", "max"}) {
    SCOPED_TRACE(r);
    GraphBuilder b("scatters");
    Value x = b.input("x", {{6, 5}, f32, ""});
    Value i1 = b.input("i1", {{4, 1}, i64, ""});
    Value u1 = b.input("u1", {{4, 5}, f32, ""});
    Value i2 = b.input("i2", {{3, 5}, i64, ""});
    Value nd = b.op("scatter_nd", {b.op("tanh", {x}, {}, "t"), i1, b.op("relu", {u1}, {}, "ru")},
                    {{"reduction", std::string(r)}}, "snd");
    Value u2 = b.op("strided_slice", {u1}, {{"begin", std::vector<int64_t>{0, 0}}, {"end", std::vector<int64_t>{3, 5}}},
                    "u2");
    b.output(b.op("relu", {b.op("scatter_elements", {nd, i2, u2}, {{"reduction", std::string(r)}}, "se2")}, {}, "out"));
    Graph g = b.build();
    // Distinct rows for i1 where duplicates would make "none" order-dependent: 2, -1 (5), 0, 3.
    NDArray idx1 = NDArray::empty({4, 1}, i64);
    const int64_t rows[] = {2, -1, 0, 3};
    std::memcpy(idx1.raw_data(), rows, sizeof(rows));
    NDArray idx2 = NDArray::empty({3, 5}, i64);  // per column distinct rows: c, c+2, c+4 (mod 6), some negative
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t c = 0; c < 5; ++c) idx2.data<int64_t>()[i * 5 + c] = (c + 2 * i) % 6 - ((i + c) % 2 ? 6 : 0);
    expect_compiled_matches_reference(g, {test::random_array({6, 5}, 7), idx1, test::random_array({4, 5}, 8), idx2});
  }
}

TEST(ShapeOpsCompile, OneHotTriluReverseSequenceBroadcast) {
  GraphBuilder b("misc");
  Value idx = b.input("idx", {{3, 5}, i64, ""});
  Value vals = b.input("vals", {{2}, f32, ""});
  Value lens = b.input("lens", {{5}, i64, ""});
  Value oh = b.op("one_hot", {idx, vals}, {{"depth", int64_t(7)}, {"axis", int64_t(1)}}, "oh");  // [3, 7, 5]
  Value tr = b.op("trilu", {oh}, {{"upper", int64_t(0)}, {"k", int64_t(-1)}}, "tr");
  Value rs = b.op("reverse_sequence", {tr, lens}, {{"batch_axis", int64_t(2)}, {"time_axis", int64_t(1)}}, "rs");
  Value bc = b.op("broadcast_to", {b.op("exp", {vals}, {}, "e")}, {{"shape", std::vector<int64_t>{3, 7, 2}}}, "bc");
  b.output(rs);
  b.output(b.op("cumprod", {bc}, {{"axis", int64_t(1)}, {"reverse", int64_t(1)}}, "cp"));
  NDArray v = NDArray::empty({2}, f32);
  v.data<float>()[0] = -0.5f;
  v.data<float>()[1] = 0.25f;
  expect_compiled_matches_reference(b.build(), {index_array({3, 5}, -9, 8), v, index_array({5}, 0, 9, 4)});
}

}  // namespace
}  // namespace loom::graph_opt
