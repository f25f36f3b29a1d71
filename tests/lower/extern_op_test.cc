// Extern operations (te::extern_op) with loop-IR bodies (lowering::loop_body, IRBuilder): the
// reference computation runs under te::evaluate, the body compiles and matches it, the
// schedule's parameters reach the body, and misuse is a clear error.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/lower/ir_builder.h"
#include "loom/lower/passes.h"
#include "loom/schedule/trace.h"
#include "loom/te/evaluate.h"
#include "loom/te/ops.h"

namespace loom {
namespace {

using lowering::ExternContext;
using lowering::ForKind;
using lowering::IRBuilder;
using te::Expr;
using te::Tensor;
using te::Var;

Expr c32(int64_t v) { return te::make_const(DataType::Int(32), v); }

lowering::LoopBodyBuilder noop_body() {
  return [](const ExternContext&) { return lowering::no_op(); };
}

/// The running sum of each row of x [rows, n], a scan: the state (the sum so far) carries
/// across the loop. Blocks of `block` rows run in parallel; each row keeps its sum in a
/// local scratch element. The reference is cumsum's formula as a te reduction.
std::vector<Tensor> row_scan(int64_t rows, int64_t n) {
  Tensor x = te::placeholder({rows, n}, DataType::Float(32), "x");
  auto body = [rows, n](const ExternContext& ctx) {
    const int64_t block = ctx.param("block");
    const Tensor &in = ctx.inputs[0], &out = ctx.outputs[0];
    IRBuilder ib;
    ib.loop("rb", c32(0), c32((rows + block - 1) / block), [&](const Var& rb) {
      const Tensor acc = ib.scratch("acc", {c32(1)}, DataType::Float(32));
      ib.loop("r", c32(0), te::min(c32(block), c32(rows) - rb * c32(block)), [&](const Var& r) {
        const Var row = ib.let("row", rb * c32(block) + r);
        ib.store(acc, {c32(0)}, te::make_const(DataType::Float(32), 0.0));
        ib.loop("j", c32(0), c32(n), [&](const Var& j) {
          ib.store(acc, {c32(0)}, acc(c32(0)) + in(row, j));
          ib.store(out, {row, j}, acc(c32(0)));
        });
      });
    }, ForKind::kParallel);
    return ib.get();
  };
  auto reference = [n](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{te::compute({in[0].shape()[0], c32(n)}, [&](Var i, Var j) {
      te::IterVar k = te::reduce_axis({0, c32(n)}, "k");
      return te::sum(in[0](i, k), {k}, k <= j);
    }, "scan_ref")};
  };
  Tensor y = te::extern_op("row_scan", {{c32(rows), c32(n)}}, {DataType::Float(32)}, {x},
                           lowering::loop_body("row_scan", body), {{"block", 4}}, reference)[0];
  return {x, y};
}

TEST(ExternOp, EvaluateRunsTheReference) {
  auto args = row_scan(3, 5);
  runtime::NDArray x = runtime::NDArray::empty({3, 5}, DataType::Float(32));
  for (int64_t i = 0; i < 15; ++i) x.set(i, double(i % 5 + 1));
  runtime::NDArray y = te::evaluate({args[1]}, {{args[0], x}})[0];
  EXPECT_DOUBLE_EQ(y.get(4), 15.0);   // 1+2+3+4+5
  EXPECT_DOUBLE_EQ(y.get(7), 6.0);    // row 1: 1+2+3
}

TEST(ExternOp, CompiledBodyMatchesTheReference) {
  for (auto [rows, n, block] : {std::tuple{7, 13, 4}, std::tuple{8, 16, 8}, std::tuple{1, 3, 16}}) {
    auto args = row_scan(rows, n);
    Schedule s = create_schedule({args[1]});
    s[args[1]].extern_param("block", block);
    EXPECT_MATCHES_REFERENCE(s, args) << rows << "x" << n << " block " << block;
  }
}

TEST(ExternOp, ParameterIsAReplayableTraceStep) {
  auto a1 = row_scan(7, 13);
  Schedule s1 = create_schedule({a1[1]});
  s1[a1[1]].extern_param("block", 3);
  ASSERT_EQ(schedule::trace(s1).size(), 1u);
  EXPECT_EQ(schedule::trace(s1)[0].kind, schedule::StepKind::kExternParam);
  const std::string json = schedule::steps_to_json(schedule::trace(s1));
  auto a2 = row_scan(7, 13);
  Schedule s2 = create_schedule({a2[1]});
  schedule::apply_steps(s2, schedule::steps_from_json(json));
  EXPECT_EQ(s2[a2[1]]->extern_params.at("block"), 3);
  EXPECT_EQ(lowering::to_string(lower(s2, a2, "f")), lowering::to_string(lower(s1, a1, "f")));
  EXPECT_MATCHES_REFERENCE(s2, a2);
}

TEST(ExternOp, BetweenComputedStages) {
  // x -> 2x (a compute stage) -> the scan (extern) -> + 1 (a compute stage).
  Tensor x = te::placeholder({5, 9}, DataType::Float(32), "x");
  Tensor twice = te::compute({5, 9}, [&](Var i, Var j) { return x(i, j) * 2.0f; }, "twice");
  auto scan = row_scan(5, 9);
  Tensor y = te::replace_tensors({scan[1]}, {{scan[0], twice}})[0];
  Tensor z = te::compute({5, 9}, [&](Var i, Var j) { return y(i, j) + 1.0f; }, "plus_one");
  Schedule s = create_schedule({z});
  s[z].parallel(s[z].axis(0));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{x, z}));
  // An inlined producer has no storage for the extern operation to read.
  s[twice].compute_inline();
  EXPECT_THROW(lower(s, {x, z}, "f"), Error);
}

TEST(ExternOp, VectorizedLoopCarryingStateRunsSerially) {
  // out[j] = Σ_{i<=j} x[i] with j marked vectorized: the state carried from lane to lane
  // keeps the loop serial (vectorize_loops scalarizes it), and the result is the scan.
  const int64_t n = 24;
  Tensor x = te::placeholder({n}, DataType::Float(32), "x");
  auto body = [n](const lowering::ExternContext& ctx) {
    lowering::IRBuilder ib;
    const Tensor acc = ib.scratch("acc", {te::make_const(DataType::Int(32), 1)}, DataType::Float(32));
    const te::Expr zero = te::make_const(DataType::Int(32), 0);
    ib.store(acc, {zero}, te::make_const(DataType::Float(32), 0.0));
    ib.loop("j", zero, te::make_const(DataType::Int(32), n), [&](const Var& j) {
      ib.store(acc, {zero}, acc(zero) + ctx.inputs[0](j));
      ib.store(ctx.outputs[0], {j}, acc(zero));
    }, lowering::ForKind::kVectorized);
    return ib.get();
  };
  auto reference = [n](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{te::compute({n}, [&](Var j) {
      te::IterVar k = te::reduce_axis({0, n}, "k");
      return te::sum(in[0](k), {k}, k <= j);
    }, "ref")};
  };
  Tensor y = te::extern_op("scan", {{te::make_const(DataType::Int(32), n)}}, {DataType::Float(32)}, {x},
                           lowering::loop_body("scan", body), {}, reference)[0];
  Schedule s = create_schedule({y});
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{x, y}));
}

TEST(ExternOp, ParametersReachTheBody) {
  auto args = row_scan(6, 4);
  Schedule s = create_schedule({args[1]});
  s[args[1]].extern_param("block", 3);
  const std::string ir = lowering::to_string(lower(s, args, "scan"));
  EXPECT_NE(ir.find("for (rb, 0, 2)"), std::string::npos) << ir;  // 6 rows in blocks of 3
  s[args[1]].extern_param("block", 2);
  const std::string ir1 = lowering::to_string(lower(s, args, "scan"));
  EXPECT_NE(ir1.find("for (rb, 0, 3)"), std::string::npos) << ir1;
}

TEST(ExternOp, MisuseIsAnErrorNamingTheStage) {
  auto args = row_scan(4, 4);
  Schedule s = create_schedule({args[1]});
  auto error = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error([&] { s[args[1]].extern_param("blok", 2); }).find("no parameter 'blok' (it has: block)"),
            std::string::npos);
  EXPECT_NE(error([&] { s[args[1]].axis(0); }).find("extern operation"), std::string::npos);
  EXPECT_NE(error([&] { s[args[1]].compute_inline(); }).find("extern operation"), std::string::npos);
  EXPECT_NE(error([&] { s[args[1]].parallel(te::IterVar()); }).find("row_scan"), std::string::npos);
  Tensor x = te::placeholder({4}, DataType::Float(32), "x");
  Tensor plain = te::compute({4}, [&](Var i) { return x(i) * 2.0f; }, "plain");
  Schedule s2 = create_schedule({plain});
  EXPECT_NE(error([&] { s2[plain].extern_param("block", 2); }).find("not an extern operation"), std::string::npos);
  // A reference that does not compute the outputs' shape.
  EXPECT_NE(error([&] {
              te::extern_op("bad", {{c32(4)}}, {DataType::Float(32)}, {x}, lowering::loop_body("b", noop_body()),
                            {}, [](const std::vector<Tensor>& in) {
                              return std::vector<Tensor>{te::compute({c32(5)}, [&](Var i) { return in[0](i * 0); })};
                            });
            }).find("reference output 0"),
            std::string::npos);
  // Without a reference, te::evaluate says so.
  Tensor y = te::extern_op("opaque", {{c32(4)}}, {DataType::Float(32)}, {x}, lowering::loop_body("b", noop_body()))[0];
  runtime::NDArray a = runtime::NDArray::empty({4}, DataType::Float(32));
  EXPECT_NE(error([&] { te::evaluate({y}, {{x, a}}); }).find("no reference computation"), std::string::npos);
}

}  // namespace
}  // namespace loom
