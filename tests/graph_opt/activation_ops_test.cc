// The activation and rounding operators of issue 32 (hard_sigmoid … sign): each one built
// through the registry in a one-node graph, compiled (scheduled by its pattern, fused at opt
// level 3) and run on a 3x37 input, against te::evaluate's reference execution and against
// the formula in plain C++; default and non-default attributes.
#include <cmath>
#include <cstring>
#include <functional>

#include "graph_test_util.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/reference.h"
#include "loom/te/op_registry.h"

namespace loom::graph_opt {
namespace {

using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);

struct Case {
  std::string op;
  Attrs attrs;
  std::function<double(double)> f;
  double lo = -4, hi = 4;
};

double softplus(double x) { return std::log1p(std::exp(x)); }

std::vector<Case> cases() {
  const double sa = 1.67326319217681884765625, sg = 1.05070102214813232421875;
  auto hs = [](double x, double a, double b) { return std::max(0.0, std::min(1.0, a * x + b)); };
  return {
      {"hard_sigmoid", {}, [=](double x) { return hs(x, 0.2, 0.5); }},
      {"hard_sigmoid", {{"alpha", 0.5}, {"beta", 0.6}}, [=](double x) { return hs(x, 0.5, 0.6); }},
      {"hard_swish", {}, [=](double x) { return x * hs(x, 1.0 / 6, 0.5); }},
      {"leaky_relu", {}, [](double x) { return x < 0 ? 0.01 * x : x; }},
      {"leaky_relu", {{"alpha", 0.3}}, [](double x) { return x < 0 ? 0.3 * x : x; }},
      {"elu", {}, [](double x) { return x > 0 ? x : std::exp(x) - 1; }},
      {"elu", {{"alpha", 2.5}}, [](double x) { return x > 0 ? x : 2.5 * (std::exp(x) - 1); }},
      {"selu", {}, [=](double x) { return sg * (x > 0 ? x : sa * (std::exp(x) - 1)); }},
      {"selu", {{"alpha", 2.0}, {"gamma", 3.0}}, [](double x) { return 3 * (x > 0 ? x : 2 * (std::exp(x) - 1)); }},
      {"celu", {}, [](double x) { return std::max(0.0, x) + std::min(0.0, std::exp(x) - 1); }},
      {"celu", {{"alpha", 2.0}}, [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * (std::exp(x / 2) - 1)); }},
      {"softplus", {}, softplus, -30, 30},
      {"softsign", {}, [](double x) { return x / (1 + std::abs(x)); }},
      {"thresholded_relu", {}, [](double x) { return x > 1 ? x : 0; }},
      {"thresholded_relu", {{"alpha", -0.5}}, [](double x) { return x > -0.5 ? x : 0; }},
      {"mish", {}, [](double x) { return x * std::tanh(softplus(x)); }, -30, 30},
      {"floor", {}, [](double x) { return std::floor(x); }},
      {"ceil", {}, [](double x) { return std::ceil(x); }},
      {"round", {}, [](double x) { return std::nearbyint(x); }},
      {"reciprocal", {}, [](double x) { return 1 / x; }, 0.25, 4},
      {"sin", {}, [](double x) { return std::sin(x); }},
      {"cos", {}, [](double x) { return std::cos(x); }},
      {"sign", {}, [](double x) { return double((x > 0) - (x < 0)); }},
  };
}

Graph one_op(const std::string& op, const Attrs& attrs, std::vector<int64_t> shape = {3, 37}, DataType t = f32) {
  GraphBuilder b("one_" + op);
  Value x = b.input("x", {std::move(shape), t, ""});
  b.output(b.op(op, {x}, attrs, "y"));
  return b.build();
}

NDArray run(const Module& m, const Graph& g, const NDArray& x) {
  NDArray y = NDArray::empty(g.type(g.outputs[0]).shape, g.type(g.outputs[0]).dtype);
  std::memset(y.raw_data(), 0x5a, y.nbytes());
  m.get_function("run").call({x.dltensor(), y.dltensor()});
  return y;
}

TEST(ActivationOps, CompiledMatchReferenceAndFormula) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.op + " " + std::to_string(c.attrs.size()) + " attrs");
    const te::ops::OpDef* d = te::ops::find_op(c.op);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->pattern, te::ops::OpPattern::kElemwise);
    Graph g = one_op(c.op, c.attrs);
    NDArray x = test::random_array({3, 37}, 11, c.lo, c.hi);
    std::vector<NDArray> want = run_reference(g, {x});
    for (int64_t i = 0; i < x.numel(); ++i) {
      double e = c.f(x.get(i));
      ASSERT_NEAR(want[0].get(i), e, 1e-5 * std::max(1.0, std::abs(e))) << "element " << i << ", x = " << x.get(i);
    }
    for (int level : {0, 3}) {
      SCOPED_TRACE(level);
      CompileOptions opt;
      opt.passes.opt_level = level;
      Module m = compile(g, Target("llvm"), nullptr, opt);
      EXPECT_EQ(test::compare_outputs({run(m, g, x)}, want), "");
    }
  }
}

TEST(ActivationOps, RoundHalvesToEvenAndSignKeepsZeroAndNaN) {
  const std::vector<float> in = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 0.49999997f, -0.7f, 1e7f + 1, 0.0f, NAN};
  NDArray x = NDArray::empty({int64_t(in.size())}, f32);
  std::memcpy(x.raw_data(), in.data(), in.size() * sizeof(float));
  const std::vector<float> want_round = {-2, -2, -0.0f, 0, 2, 2, 4, 0, -1, 1e7f + 1, 0};
  const std::vector<float> want_sign = {-1, -1, -1, 1, 1, 1, 1, 1, -1, 1, 0};
  for (const char* op : {"round", "sign"}) {
    SCOPED_TRACE(op);
    Graph g = one_op(op, {}, {int64_t(in.size())});
    const auto& want = std::string(op) == "round" ? want_round : want_sign;
    NDArray ref = run_reference(g, {x})[0];
    NDArray got = run(compile(g, Target("llvm")), g, x);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(ref.get(int64_t(i)), want[i]) << "reference, element " << i;
      EXPECT_EQ(got.get(int64_t(i)), want[i]) << "compiled, element " << i;
    }
    EXPECT_TRUE(std::isnan(ref.get(int64_t(want.size()))));
    EXPECT_TRUE(std::isnan(got.get(int64_t(want.size()))));
  }
}

TEST(ActivationOps, ChainOfActivationsMatchesTheReference) {
  GraphBuilder b("chain");
  Value v = b.input("x", {{3, 37}, f32, ""});
  for (const char* op : {"leaky_relu", "hard_swish", "softsign"}) v = b.op(op, {v}, {}, op);
  b.output(v);
  Graph g = b.build();
  NDArray x = test::random_array({3, 37}, 5, -4, 4);
  Module m = compile(g, Target("llvm"));
  EXPECT_EQ(test::compare_outputs({run(m, g, x)}, run_reference(g, {x})), "");
}

TEST(ActivationOps, Errors) {
  EXPECT_THROW(run_reference(one_op("celu", {{"alpha", 0.0}}), {test::random_array({3, 37}, 1)}), Error);
  GraphBuilder b("int");
  Value x = b.input("x", {{4}, DataType::Int(32), ""});
  EXPECT_THROW(b.op("elu", {x}, {}, "y"), Error);
  Value s = b.op("sign", {x}, {}, "s");
  b.output(s);
  Graph g = b.build();
  NDArray xi = NDArray::empty({4}, DataType::Int(32));
  const int32_t vals[] = {-7, 0, 3, -1};
  std::memcpy(xi.raw_data(), vals, sizeof(vals));
  NDArray got = run(compile(g, Target("llvm")), g, xi);
  const double want[] = {-1, 0, 1, -1};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.get(i), want[i]) << i;
}

}  // namespace
}  // namespace loom::graph_opt
