// te::evaluate rounds each float operation to its type, as compiled code does: a quotient
// that is a tie only in float32 rounds as in float32 (ONNX DynamicQuantizeLinear's 0.5 / (5/255)).
#include <gtest/gtest.h>

#include "loom/loom.h"

namespace loom {
namespace {

using runtime::NDArray;

TEST(EvaluateRounding, Float32QuotientRoundsBeforeRound) {
  const DataType f32 = DataType::Float(32);
  te::Tensor x = te::placeholder({1}, f32, "x"), s = te::placeholder({1}, f32, "s");
  te::Tensor q = te::compute({1}, [&](te::Var i) { return te::round(x(i) / s(i)); }, "q");
  NDArray xa = NDArray::empty({1}, f32), sa = NDArray::empty({1}, f32);
  xa.data<float>()[0] = 0.5f;
  sa.data<float>()[0] = 5.0f / 255.0f;
  ASSERT_EQ(0.5f / sa.data<float>()[0], 25.5f);  // a tie in float32, 25.4999... in double
  NDArray got = te::evaluate({q}, {{x, xa}, {s, sa}})[0];
  EXPECT_EQ(got.data<float>()[0], 26.0f);
  runtime::Module m = codegen::build(schedule::create_schedule({q}), {x, s, q}, Target("llvm"), "q");
  NDArray c = NDArray::empty({1}, f32);
  m.get_function("q").call({xa.dltensor(), sa.dltensor(), c.dltensor()});
  EXPECT_EQ(c.data<float>()[0], 26.0f);
}

TEST(EvaluateRounding, Float16SumRoundsEachAddition) {
  const DataType f16 = DataType::Float(16);
  te::Tensor x = te::placeholder({1}, f16, "x");
  const double ulp_half = 1.0 / 2048;  // half of float16's ulp at 1
  te::Tensor y = te::compute(
      {1}, [&](te::Var i) { return (x(i) + te::make_const(f16, ulp_half)) + te::make_const(f16, ulp_half); }, "y");
  NDArray xa = NDArray::empty({1}, f16);
  xa.set(0, 1.0);
  NDArray got = te::evaluate({y}, {{x, xa}})[0];
  EXPECT_EQ(got.get(0), 1.0);  // 1 + 2^-11 ties to 1, twice; the double sum 1 + 2^-10 is a float16
}

}  // namespace
}  // namespace loom
