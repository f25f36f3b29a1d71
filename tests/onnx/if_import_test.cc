// ONNX If through the importer: a condition that folds at import selects the branch imported
// inline (its initializers, its reads of outer-scope values, nested Ifs); the untaken branch
// is never looked at; a condition computed at run time is OnnxUnsupported saying so.
#include <gtest/gtest.h>

#include "common/cli_test_util.h"
#include "import_test_util.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

Pb bool_tensor(const std::string& name, bool v) { return tensor(name, kBool, {}, std::string(1, char(v))); }

/// then: x + 1 (an initializer of the branch); else: x * k (k an initializer of the model).
GraphPb then_branch() {
  GraphPb g;
  g.inits = {floats_tensor("one", {1}, {1})};
  g.nodes = {node("Add", {"x", "one"}, {"then_out"}, "add")};
  g.outputs = {value("then_out", {2, 3})};
  return g;
}
GraphPb else_branch() {
  GraphPb g;
  g.nodes = {node("Mul", {"x", "k"}, {"else_out"}, "mul")};
  g.outputs = {value("else_out", {2, 3})};
  return g;
}

/// y = If(cond) with the branches above; `cond_nodes` compute "cond" (or it is an initializer).
ModelPb if_model(std::vector<Pb> cond_nodes, std::vector<Pb> cond_inits, std::vector<Pb> extra_inputs = {}) {
  ModelPb m;
  m.opset = 13;
  m.inputs = {value("x", {2, 3})};
  for (Pb& v : extra_inputs) m.inputs.push_back(std::move(v));
  m.inits = {floats_tensor("k", {1}, {3})};
  for (Pb& t : cond_inits) m.inits.push_back(std::move(t));
  m.nodes = std::move(cond_nodes);
  m.nodes.push_back(node("If", {"cond"}, {"y"}, "if1",
                         {attr_graph("then_branch", then_branch()), attr_graph("else_branch", else_branch())}));
  m.outputs = {Pb().s(1, "y")};
  return m;
}

std::vector<double> run(const Graph& g) {
  NDArray x = NDArray::empty({2, 3}, DataType::Float(32));
  for (int64_t k = 0; k < 6; ++k) x.set(k, double(k));
  NDArray r = graph_opt::run_reference(g, {x}).at(0);
  std::vector<double> v;
  for (int64_t k = 0; k < r.numel(); ++k) v.push_back(r.get(k));
  NDArray c = run_compiled(g, {x}).at(0);
  for (int64_t k = 0; k < c.numel(); ++k) EXPECT_EQ(c.get(k), v[size_t(k)]) << "compiled, element " << k;
  return v;
}

TEST(IfImport, AConstantConditionImportsTheTakenBranchInline) {
  REQUIRE_FRONTEND();
  Graph t = graph_opt::import_onnx_bytes(if_model({}, {bool_tensor("cond", true)}).bytes(), "m.onnx");
  EXPECT_EQ(run(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(count_ops(t, "add"), 1);
  EXPECT_EQ(count_ops(t, "multiply"), 0);
  Graph e = graph_opt::import_onnx_bytes(if_model({}, {bool_tensor("cond", false)}).bytes(), "m.onnx");
  EXPECT_EQ(run(e), (std::vector<double>{0, 3, 6, 9, 12, 15}));
  // A condition some nodes fold at import (a Constant node).
  Graph c = graph_opt::import_onnx_bytes(
      if_model({node("Constant", {}, {"cond"}, "c", {attr_tensor("value", bool_tensor("v", false))})}, {}).bytes(),
      "m.onnx");
  EXPECT_EQ(run(c), (std::vector<double>{0, 3, 6, 9, 12, 15}));
}

TEST(IfImport, TheUntakenBranchIsNotImported) {
  REQUIRE_FRONTEND();
  ModelPb m = if_model({}, {bool_tensor("cond", true)});
  GraphPb bad;
  bad.nodes = {node("NoSuchOp", {"x"}, {"else_out"}, "nope")};
  bad.outputs = {value("else_out", {2, 3})};
  m.nodes.back() = node("If", {"cond"}, {"y"}, "if1",
                        {attr_graph("then_branch", then_branch()), attr_graph("else_branch", bad)});
  EXPECT_EQ(run(graph_opt::import_onnx_bytes(m.bytes(), "m.onnx")), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Taken, it names the branch and the node inside it.
  m.inits.back() = bool_tensor("cond", false);
  EXPECT_HAS(import_error(m.bytes()), "node #0 'if1' (If): else_branch: node #0 'nope' (NoSuchOp): operator NoSuchOp");
}

TEST(IfImport, BranchNamesAreTheBranchsOwn) {
  REQUIRE_FRONTEND();
  // Two Ifs with one then-branch (its initializer "one" and output "then_out" twice), the
  // second reading the first's output through outer scope as x: y = (x + 1) + 1.
  GraphPb second = then_branch();
  second.nodes[0] = node("Add", {"y1", "one"}, {"then_out"}, "add");
  ModelPb m;
  m.opset = 13;
  m.inputs = {value("x", {2, 3})};
  m.inits = {floats_tensor("k", {1}, {3}), bool_tensor("cond", true)};
  m.nodes = {node("If", {"cond"}, {"y1"}, "if1",
                  {attr_graph("then_branch", then_branch()), attr_graph("else_branch", else_branch())}),
             node("If", {"cond"}, {"y"}, "if2",
                  {attr_graph("then_branch", second), attr_graph("else_branch", else_branch())})};
  m.outputs = {Pb().s(1, "y")};
  EXPECT_EQ(run(graph_opt::import_onnx_bytes(m.bytes(), "m.onnx")), (std::vector<double>{2, 3, 4, 5, 6, 7}));
  // A branch may name its output as the If's own.
  GraphPb same = then_branch();
  same.nodes[0] = node("Add", {"x", "one"}, {"y"}, "add");
  same.outputs = {value("y", {2, 3})};
  ModelPb n = if_model({}, {bool_tensor("cond", true)});
  n.nodes.back() = node("If", {"cond"}, {"y"}, "if1", {attr_graph("then_branch", same), attr_graph("else_branch", else_branch())});
  EXPECT_EQ(run(graph_opt::import_onnx_bytes(n.bytes(), "m.onnx")), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // A branch's name may not shadow a value outside it.
  GraphPb shadow = then_branch();
  shadow.inits = {floats_tensor("k", {1}, {1})};
  shadow.nodes[0] = node("Add", {"x", "k"}, {"then_out"}, "add");
  n.nodes.back() = node("If", {"cond"}, {"y"}, "if1", {attr_graph("then_branch", shadow), attr_graph("else_branch", else_branch())});
  EXPECT_HAS(import_error(n.bytes()), "then_branch initializer 'k' reuses the name of another value");
}

TEST(IfImport, NestedIfsAndOuterValuesComputedAfterTheIfInTheFile) {
  REQUIRE_FRONTEND();
  // The outer If's then-branch holds an If whose else-branch reads "z", which a node listed
  // after the outer If computes (x - 2).
  GraphPb inner_else;
  inner_else.nodes = {node("Mul", {"z", "k"}, {"inner_out"}, "mul")};
  inner_else.outputs = {value("inner_out", {2, 3})};
  GraphPb inner_then = then_branch();
  inner_then.nodes[0] = node("Add", {"x", "one"}, {"inner_out"}, "add");
  inner_then.outputs = {value("inner_out", {2, 3})};
  GraphPb outer_then;
  outer_then.inits = {bool_tensor("inner_cond", false)};
  outer_then.nodes = {node("If", {"inner_cond"}, {"then_out"}, "if2",
                           {attr_graph("then_branch", inner_then), attr_graph("else_branch", inner_else)})};
  outer_then.outputs = {value("then_out", {2, 3})};
  ModelPb m;
  m.opset = 13;
  m.inputs = {value("x", {2, 3})};
  m.inits = {floats_tensor("k", {1}, {3}), floats_tensor("two", {1}, {2}), bool_tensor("cond", true)};
  m.nodes = {node("If", {"cond"}, {"y"}, "if1",
                  {attr_graph("then_branch", outer_then), attr_graph("else_branch", else_branch())}),
             node("Sub", {"x", "two"}, {"z"}, "sub")};
  m.outputs = {Pb().s(1, "y")};
  Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  EXPECT_EQ(run(g), (std::vector<double>{-6, -3, 0, 3, 6, 9}));
}

TEST(IfImport, ARunTimeConditionIsUnsupported) {
  REQUIRE_FRONTEND();
  // A graph input: binding it helps.
  try {
    graph_opt::import_onnx_bytes(if_model({}, {}, {value("cond", {}, kBool)}).bytes(), "m.onnx");
    ADD_FAILURE() << "imported";
  } catch (const graph_opt::OnnxUnsupported& e) {
    EXPECT_HAS(std::string(e.what()), "node #0 'if1' (If): the condition (input 0 'cond') is computed at run time");
    EXPECT_HAS(std::string(e.what()), "data-dependent");
    EXPECT_EQ(e.constant_input, "cond");
  }
  graph_opt::OnnxImportOptions bound;
  NDArray yes = NDArray::empty({}, DataType::Bool());
  yes.set(0, 1);
  bound.bind_inputs["cond"] = yes;
  Graph g = graph_opt::import_onnx_bytes(if_model({}, {}, {value("cond", {}, kBool)}).bytes(), "m.onnx", bound);
  EXPECT_EQ(run(g), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Computed from a graph input: the error names that input, which may be bound.
  try {
    graph_opt::import_onnx_bytes(
        if_model({node("Cast", {"s"}, {"cond"}, "to_bool", {attr_int("to", kBool)})}, {}, {value("s", {}, kFloat)})
            .bytes(),
        "m.onnx");
    ADD_FAILURE() << "imported";
  } catch (const graph_opt::OnnxUnsupported& e) {
    EXPECT_HAS(std::string(e.what()), "(If): the condition (input 0 'cond') is computed at run time");
    EXPECT_EQ(e.constant_input, "s");
  }
}

}  // namespace
}  // namespace loom::test::onnx_writer
