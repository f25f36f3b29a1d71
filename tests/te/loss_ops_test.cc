// nll_loss and nll_loss_weight: the registry entries through te::evaluate against naive loops
// written from ONNX's NegativeLogLikelihoodLoss, type inference and errors.
#include <gtest/gtest.h>

#include <optional>

#include "loom/te/op_registry.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::te::ops::Attrs;

/// ONNX's per-element loss (want_weight false) or weight (true) of x [N, C, rest], target
/// [N, rest] (classes clamped into [0, C)), weight [C] or none, elements of class
/// `ignore` counting 0.
Ref naive_nll(const Ref& x, const Ref& target, const Ref* weight, std::optional<int64_t> ignore, bool want_weight) {
  const int64_t n = x.shape[0], c = x.shape[1], rest = numel(x.shape) / (n * c);
  Ref out(target.shape);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < rest; ++d) {
      const int64_t t = int64_t(target.v[size_t(i * rest + d)]);
      const int64_t k = std::clamp<int64_t>(t, 0, c - 1);
      const double w = ignore && t == *ignore ? 0.0 : weight ? weight->v[size_t(k)] : 1.0;
      out.v[size_t(i * rest + d)] = want_weight ? w : w == 0.0 ? 0.0 : -x.v[size_t((i * c + k) * rest + d)] * w;
    }
  return out;
}

TEST(LossOps, NllLossAndWeightMatchNaiveLoops) {
  Inputs in;
  Tensor X = ph({3, 5, 2, 3}, "x"), T = ph({3, 2, 3}, "target", DataType::Int(64)), W = ph({5}, "weight");
  Ref x = in.add(X, -3.0, 0.0), w = in.add(W, 0.5, 2.0);
  Ref t({3, 2, 3});
  // every class, the ignored class 2, and targets beyond [0, C) (clamped)
  t.v = {0, 1, 2, 3, 4, 2, 4, 3, 2, 1, 0, 7, -1, 2, 2, 1, 0, 3};
  in.set(T, t);
  for (bool weighted : {false, true})
    for (std::optional<int64_t> ignore : {std::optional<int64_t>(), std::optional<int64_t>(2), std::optional<int64_t>(-1)}) {
      SCOPED_TRACE(::testing::Message() << "weighted " << weighted << ", ignore_index " << ignore.value_or(99));
      std::vector<Tensor> args = {X, T}, weight_args = {T};
      if (weighted) args.push_back(W), weight_args.push_back(W);
      Attrs a{{"ignore_index", ignore ? std::vector<int64_t>{*ignore} : std::vector<int64_t>{}}};
      expect_close(in.eval(reg("nll_loss", args, a)), naive_nll(x, t, weighted ? &w : nullptr, ignore, false), 1e-6);
      a["dtype"] = std::string("float32");
      expect_close(in.eval(reg("nll_loss_weight", weight_args, a)), naive_nll(x, t, weighted ? &w : nullptr, ignore, true),
                   0.0);
    }
}

TEST(LossOps, TwoDimensionalInputAndNarrowTargets) {
  Inputs in;
  Tensor X = ph({4, 3}, "x"), T = ph({4}, "target", DataType::Int(32));
  Ref x = in.add(X, -2.0, 0.0);
  Ref t({4});
  t.v = {2, 0, 1, 2};
  in.set(T, t);
  expect_close(in.eval(reg("nll_loss", {X, T})), naive_nll(x, t, nullptr, std::nullopt, false), 1e-6);
  // An ignore_index int32 cannot hold matches no target (2^40 is not 0, its low bits).
  expect_close(in.eval(reg("nll_loss", {X, T}, {{"ignore_index", std::vector<int64_t>{int64_t(1) << 40}}})),
               naive_nll(x, t, nullptr, std::nullopt, false), 1e-6);
  expect_close(in.eval(reg("nll_loss", {X, T}, {{"ignore_index", std::vector<int64_t>{2}}})),
               naive_nll(x, t, nullptr, 2, false), 1e-6);
}

TEST(LossOps, TypesPatternsAndErrors) {
  EXPECT_EQ(ops::get_op("nll_loss").pattern, ops::OpPattern::kInjective);
  EXPECT_EQ(ops::get_op("nll_loss_weight").pattern, ops::OpPattern::kInjective);
  ops::TensorType x{{2, 4, 3}, DataType::Float(16), ""}, t{{2, 3}, DataType::Int(64), ""};
  auto out = ops::infer_type("nll_loss", {x, t}, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  EXPECT_EQ(out[0].dtype, DataType::Float(16));
  out = ops::infer_type("nll_loss_weight", {t}, {{"dtype", std::string("float16")}});
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  EXPECT_EQ(out[0].dtype, DataType::Float(16));
  expect_error([&] { ops::infer_type("nll_loss", {ops::TensorType{{2, 4, 3}, DataType::Int(32), ""}, t}, {}); },
               {"nll_loss", "input", "floating point", "int32"});
  expect_error([&] { ops::infer_type("nll_loss", {x, ops::TensorType{{2, 3}, DataType::Float(32), ""}}, {}); },
               {"nll_loss", "target", "integers"});
  expect_error([&] { ops::infer_type("nll_loss", {x, ops::TensorType{{2, 4}, DataType::Int(64), ""}}, {}); },
               {"nll_loss", "does not match input", "dim 1"});
  expect_error([&] { ops::infer_type("nll_loss", {x, ops::TensorType{{2}, DataType::Int(64), ""}}, {}); },
               {"nll_loss", "[N, C, d1, ...]"});
  expect_error([&] { ops::infer_type("nll_loss", {x, t, ops::TensorType{{3}, DataType::Float(16), ""}}, {}); },
               {"nll_loss", "weight", "[C] = [4]"});
  expect_error([&] { ops::infer_type("nll_loss", {x, t, ops::TensorType{{4}, DataType::Float(32), ""}}, {}); },
               {"nll_loss", "weight is float32 but the loss float16"});
  expect_error([&] { ops::infer_type("nll_loss", {x, t}, {{"ignore_index", std::vector<int64_t>{1, 2}}}); },
               {"nll_loss", "ignore_index", "at most one"});
  expect_error([&] { ops::infer_type("nll_loss_weight", {t}, {}); }, {"nll_loss_weight", "dtype"});
  expect_error([&] { ops::infer_type("nll_loss_weight", {t}, {{"dtype", std::string("int32")}}); },
               {"nll_loss_weight", "floating point", "int32"});
  expect_error(
      [&] {
        ops::infer_type("nll_loss_weight", {t, ops::TensorType{{4, 1}, DataType::Float(32), ""}},
                        {{"dtype", std::string("float32")}});
      },
      {"nll_loss_weight", "weight 4x1 must be [C], one weight per class"});
}

}  // namespace
