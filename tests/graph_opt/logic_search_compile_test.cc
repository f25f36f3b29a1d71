// The comparison, logical, bitwise, selection, remainder, trigonometric and search operators
// (te/ops/logic.h, search.h) and reduce_prod through the normal graph path: a graph of each,
// compiled for the CPU with LLVM at opt levels 0 and 3 (scheduled by its pattern, fused), run,
// and compared with te::evaluate's reference execution of the same graph; bool, integer and
// int64 outputs exactly. Extents 13 and 37 are divided by no common split factor.
#include <cmath>
#include <cstring>
#include <limits>

#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/reference.h"

namespace loom::graph_opt {
namespace {

using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

/// Values in [lo, hi] of dtype `t` (small integers for integer and bool types: ties), with a few
/// NaN and infinities among floats when `specials`.
NDArray values(std::vector<int64_t> shape, DataType t, uint64_t seed, double lo, double hi, bool specials = false) {
  NDArray a = NDArray::empty(std::move(shape), t);
  uint64_t v = seed * 0x9e3779b97f4a7c15ULL + 7;
  for (int64_t i = 0; i < a.numel(); ++i) {
    v = v * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = double(v >> 11) / double(uint64_t(1) << 53);
    double x = lo + u * (hi - lo);
    if (!t.is_float()) x = std::floor(x + 0.5);
    if (specials && i % 11 == 3) x = std::numeric_limits<double>::infinity() * (i % 2 ? 1 : -1);
    if (specials && i % 11 == 7) x = NAN;
    a.set(i, x);
  }
  return a;
}

struct Input {
  std::vector<int64_t> shape;
  DataType t = f32;
  double lo = -3, hi = 3;
  bool specials = false;
};

struct Case {
  std::string op;
  Attrs attrs;
  std::vector<Input> inputs;
};

std::vector<Case> cases() {
  const DataType b = DataType::Bool(), i32 = DataType::Int(32), i8 = DataType::Int(8), u16 = DataType::UInt(16);
  std::vector<Case> c = {
      {"equal", {}, {{{3, 37}, i32, -2, 2}, {{37}, i32, -2, 2}}},
      {"less", {}, {{{3, 1, 13}}, {{5, 13}}}},
      {"greater_equal", {}, {{{3, 37}, u16, 0, 3}, {{3, 1}, u16, 0, 3}}},
      {"logical_and", {}, {{{3, 37}, b, 0, 1}, {{37}, b, 0, 1}}},
      {"logical_xor", {}, {{{3, 37}, b, 0, 1}, {{3, 37}, b, 0, 1}}},
      {"logical_not", {}, {{{3, 37}, b, 0, 1}}},
      {"bitwise_xor", {}, {{{3, 37}, i32, -500, 500}, {{37}, i32, -500, 500}}},
      {"bitwise_not", {}, {{{3, 37}, u16, 0, 60000}}},
      {"left_shift", {}, {{{4, 13}, i8, -100, 100}, {{13}, i8, -2, 10}}},
      {"right_shift", {}, {{{4, 13}, i8, -100, 100}, {{13}, i8, -2, 10}}},
      {"where", {}, {{{4, 1, 13}, b, 0, 1}, {{3, 13}}, {{1}}}},
      {"mod", {{"fmod", int64_t(0)}}, {{{3, 37}, i32, -50, 50}, {{37}, i32, 1, 9}}},
      {"mod", {{"fmod", int64_t(1)}}, {{{3, 37}, i32, -50, 50}, {{37}, i32, -9, -1}}},
      {"mod", {{"fmod", int64_t(0)}}, {{{3, 37}, i8, -128, 127}, {{37}, i8, -1, 1}}},  // divisors 0 and -1
      {"mod", {{"fmod", int64_t(0)}}, {{{3, 37}, f32, -9, 9}, {{37}, f32, -4, 4}}},
      {"isnan", {}, {{{3, 37}, f32, -3, 3, true}}},
      {"isinf", {{"detect_negative", int64_t(0)}}, {{{3, 37}, f32, -3, 3, true}}},
      {"prelu", {}, {{{2, 3, 13}}, {{3, 1}, f32, 0, 1}}},
      {"shrink", {{"lambd", 1.0}, {"bias", 0.25}}, {{{3, 37}}}},
      {"shrink", {{"lambd", 1.5}, {"bias", 0.5}}, {{{3, 37}, i32, -4, 4}}},
      {"swish", {{"alpha", 0.5}}, {{{3, 37}}}},
      {"reduce_prod", {{"axes", std::vector<int64_t>{1}}}, {{{3, 13, 5}, f32, 0.5, 1.5}}},
      {"argmax", {{"axis", int64_t(1)}}, {{{5, 37}, f32, -3, 3}}},
      {"argmax",
       {{"axis", int64_t(0)}, {"select_last_index", int64_t(1)}, {"keepdims", int64_t(0)}},
       {{{13, 6}, i32, -3, 3}}},
      {"argmin", {{"axis", int64_t(-1)}}, {{{4, 3, 13}, i32, -3, 3}}},
      {"topk", {{"k", int64_t(5)}}, {{{4, 37}, i32, -6, 6}}},
      {"topk",
       {{"k", int64_t(3)}, {"axis", int64_t(0)}, {"largest", int64_t(0)}, {"output", std::string("indices")}},
       {{{13, 4}, f32, -2, 2}}},
  };
  for (const char* op : {"tan", "atan", "sinh", "cosh", "asinh"}) c.push_back({op, {}, {{{3, 37}, f32, -1.3, 1.3}}});
  for (const char* op : {"asin", "acos", "atanh"}) c.push_back({op, {}, {{{3, 37}, f32, -0.99, 0.99}}});
  c.push_back({"acosh", {}, {{{3, 37}, f32, 1, 9}}});
  return c;
}

std::vector<NDArray> run(const Module& m, const Graph& g, const std::vector<NDArray>& in) {
  std::vector<NDArray> out;
  std::vector<DLTensor*> args;
  for (const NDArray& a : in) args.push_back(a.dltensor());
  for (ValueRef v : g.outputs) {
    out.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
    std::memset(out.back().raw_data(), 0x5a, out.back().nbytes());
    args.push_back(out.back().dltensor());
  }
  m.get_function("run").call(args);
  return out;
}

TEST(LogicSearchCompile, EachOperatorMatchesTheReference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.op + " " + std::to_string(c.attrs.size()) + " attrs");
    GraphBuilder b("one_" + c.op);
    std::vector<Value> ins;
    std::vector<NDArray> arrays;
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      const Input& in = c.inputs[k];
      ins.push_back(b.input("x" + std::to_string(k), {in.shape, in.t, ""}));
      arrays.push_back(values(in.shape, in.t, k + 1, in.lo, in.hi, in.specials));
    }
    b.output(b.op(c.op, ins, c.attrs, "y"));
    Graph g = b.build();
    std::vector<NDArray> want = run_reference(g, arrays);
    for (int level : {0, 3}) {
      SCOPED_TRACE(level);
      CompileOptions opt;
      opt.passes.opt_level = level;
      std::vector<NDArray> got = run(compile(g, Target("llvm"), nullptr, opt), g, arrays);
      ASSERT_EQ(got.size(), 1u);
      ASSERT_EQ(got[0].shape(), want[0].shape());
      int bad = 0;
      for (int64_t i = 0; i < want[0].numel(); ++i) {
        double w = want[0].get(i), v = got[0].get(i);
        const bool same = want[0].dtype().is_float()
                              ? (std::isnan(w) ? std::isnan(v) : std::abs(v - w) <= 1e-5 * (1 + std::abs(w)))
                              : v == w;
        if (!same && bad++ < 5) ADD_FAILURE() << "element " << i << ": compiled " << v << ", reference " << w;
      }
    }
  }
}

TEST(LogicSearchCompile, AFusedChainOfComparisonSelectionAndReduction) {
  // y = reduce_sum(where(x < t, x, 0), axis 1) and argmax of x: comparisons feeding a
  // selection feeding a reduction, fused at opt level 3.
  GraphBuilder b("chain");
  Value x = b.input("x", {{6, 37}, f32, ""});
  Value t = b.input("t", {{6, 1}, f32, ""});
  Value zero = b.input("zero", {{1}, f32, ""});
  Value sel = b.op("where", {b.op("less", {x, t}), x, zero});
  b.output(b.op("reduce_sum", {sel}, {{"axes", std::vector<int64_t>{1}}}));
  b.output(b.op("argmax", {x}, {{"axis", int64_t(1)}}));
  Graph g = b.build();
  std::vector<NDArray> in = {values({6, 37}, f32, 3, -2, 2), values({6, 1}, f32, 4, -1, 1), values({1}, f32, 5, 0, 0)};
  std::vector<NDArray> want = run_reference(g, in);
  EXPECT_EQ(test::compare_outputs(run(compile(g, Target("llvm")), g, in), want), "");
}

}  // namespace
}  // namespace loom::graph_opt
