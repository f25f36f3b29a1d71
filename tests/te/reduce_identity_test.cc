// The identities of the max and min reductions: a row of -inf has max -inf (and a row of +inf
// min +inf), in the reference evaluator and compiled; ONNX's Attention finds fully masked rows so.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/loom.h"

namespace loom {
namespace {

using runtime::NDArray;

TEST(ReduceIdentity, MaxOfMinusInfinityAndMinOfInfinity) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DataType t : {DataType::Float(16), DataType::Float(32), DataType::Float(64)}) {
    te::Tensor x = te::placeholder({3, 4}, t, "x");
    te::IterVar k = te::reduce_axis({0, 4}, "k");
    te::Tensor mx = te::compute({3}, [&](te::Var i) { return te::max_reduce(x(i, k->var), {k}); }, "mx");
    te::IterVar k2 = te::reduce_axis({0, 4}, "k2");
    te::Tensor mn = te::compute({3}, [&](te::Var i) { return te::min_reduce(x(i, k2->var), {k2}); }, "mn");
    NDArray xa = NDArray::empty({3, 4}, t);
    // row 0: all -inf; row 1: all +inf; row 2: finite
    for (int64_t j = 0; j < 4; ++j) {
      xa.set(j, -inf);
      xa.set(4 + j, inf);
      xa.set(8 + j, double(j) - 1.5);
    }
    std::vector<NDArray> want = te::evaluate({mx, mn}, {{x, xa}});
    schedule::Schedule s = schedule::create_schedule({mx, mn});
    runtime::Module m = codegen::build(s, {x, mx, mn}, Target("llvm"), "minmax");
    NDArray gx = NDArray::empty({3}, t), gn = NDArray::empty({3}, t);
    m.get_function("minmax").call({xa.dltensor(), gx.dltensor(), gn.dltensor()});
    const double ex[] = {-inf, inf, 1.5}, en[] = {-inf, inf, -1.5};
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(want[0].get(i), ex[i]) << t.str() << " max, evaluate, row " << i;
      EXPECT_EQ(want[1].get(i), en[i]) << t.str() << " min, evaluate, row " << i;
      EXPECT_EQ(gx.get(i), ex[i]) << t.str() << " max, compiled, row " << i;
      EXPECT_EQ(gn.get(i), en[i]) << t.str() << " min, compiled, row " << i;
    }
  }
}

}  // namespace
}  // namespace loom
