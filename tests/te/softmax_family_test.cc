// log_softmax and hardmax: the registry entries through te::evaluate against naive loops,
// type inference and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/te/op_registry.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::te::ops::Attrs;

Ref naive_along(const Ref& x, int axis, bool log_softmax) {
  Ref out = x;
  const int64_t n = x.shape[size_t(axis)];
  for_each_line(x.shape, axis, [&](auto at) {
    double mx = -INFINITY, sum = 0;
    int64_t first = 0;
    for (int64_t i = 0; i < n; ++i)
      if (at(i) > mx) mx = at(i), first = i;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(at(i) - mx);
    for (int64_t i = 0; i < n; ++i) at(i) = log_softmax ? at(i) - mx - std::log(sum) : i == first ? 1.0 : 0.0;
  }, out.v);
  return out;
}

TEST(SoftmaxFamily, LogSoftmaxAndHardmaxMatchNaiveLoopsAlongEachAxis) {
  Inputs in;
  Tensor X = ph({3, 5, 7}, "x");
  Ref x = in.add(X, -4.0, 4.0);
  for (int axis : {0, 1, 2, -1}) {
    SCOPED_TRACE(axis);
    const int a = axis < 0 ? axis + 3 : axis;
    expect_close(in.eval(reg("log_softmax", {X}, {{"axis", int64_t(axis)}})), naive_along(x, a, true), 1e-5);
    expect_close(in.eval(reg("hardmax", {X}, {{"axis", int64_t(axis)}})), naive_along(x, a, false), 0.0);
  }
  // The default axis is the last.
  expect_close(in.eval(reg("log_softmax", {X})), naive_along(x, 2, true), 1e-5);
}

TEST(SoftmaxFamily, HardmaxTakesTheFirstOfTiedMaxima) {
  Inputs in;
  Tensor X = ph({2, 4}, "x");
  Ref x({2, 4});
  x.v = {1, 3, 3, 0, -1, -1, -1, -1};
  in.set(X, x);
  Ref want({2, 4});
  want.v = {0, 1, 0, 0, 1, 0, 0, 0};
  expect_close(in.eval(reg("hardmax", {X}, {{"axis", int64_t(1)}})), want, 0.0);
}

TEST(SoftmaxFamily, TypesPatternsAndErrors) {
  for (const char* op : {"log_softmax", "hardmax"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(ops::get_op(op).pattern, ops::OpPattern::kOpaque);
    ops::TensorType t{{2, 3}, DataType::Float(16), ""};
    auto out = ops::infer_type(op, {t}, {{"axis", int64_t(0)}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape, (Shape{2, 3}));
    EXPECT_EQ(out[0].dtype, DataType::Float(16));
    expect_error([&] { ops::infer_type(op, {ops::TensorType{{2, 3}, DataType::Int(32), ""}}, {}); },
                 {op, "floating point", "int32"});
    expect_error([&] { ops::infer_type(op, {t}, {{"axis", int64_t(2)}}); }, {op, "axis"});
  }
}

}  // namespace
