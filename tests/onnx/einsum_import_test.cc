// ONNX Einsum through the importer: the equations transformers and exporters write, checked
// against a naive einsum (every assignment of the labels) in modes reference and compiled;
// the operators the lowering picks (the attention forms become batch_matmul without a
// transpose); and the errors for equations that do not fit the inputs.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "common/cli_test_util.h"
#include "import_test_util.h"
#include "onnx_model_writer.h"

namespace loom::test::onnx_writer {
namespace {

using graph_opt::Graph;
using runtime::NDArray;

/// out[output labels] = sum over the other labels of the product of the inputs, for an
/// explicit equation of letters only.
std::vector<double> naive_einsum(const std::string& eq, const std::vector<NDArray>& in) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string t;
  for (char c : eq.substr(0, arrow)) {
    if (c == ',') {
      terms.push_back(t);
      t.clear();
    } else {
      t += c;
    }
  }
  terms.push_back(t);
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) extent[terms[i][d]] = std::max(extent[terms[i][d]], in[i].shape()[d]);
  std::string labels = out;
  for (const auto& [l, e] : extent)
    if (out.find(l) == std::string::npos) labels += l;
  int64_t n_out = 1;
  for (char l : out) n_out *= extent[l];
  std::vector<double> r(size_t(n_out), 0.0);
  std::map<char, int64_t> at;
  std::function<void(size_t)> walk = [&](size_t k) {
    if (k == labels.size()) {
      double p = 1;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t off = 0;
        for (size_t d = 0; d < terms[i].size(); ++d) {
          const int64_t e = in[i].shape()[d];
          off = off * e + (e == 1 ? 0 : at[terms[i][d]]);
        }
        p *= in[i].get(off);
      }
      int64_t o = 0;
      for (char l : out) o = o * extent[l] + at[l];
      r[size_t(o)] += p;
      return;
    }
    for (int64_t v = 0; v < extent[labels[k]]; ++v) {
      at[labels[k]] = v;
      walk(k + 1);
    }
  };
  walk(0);
  return r;
}

ModelPb einsum_model(const std::string& eq, const std::vector<std::vector<int64_t>>& shapes, int64_t type = kFloat) {
  ModelPb m;
  m.opset = 13;
  std::vector<std::string> names;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    m.inputs.push_back(value(names.back(), shapes[i], type));
  }
  m.nodes = {node("Einsum", names, {"y"}, "einsum1", {attr_str("equation", eq)})};
  m.outputs = {Pb().s(1, "y")};
  return m;
}

/// Imports the Einsum `eq` on inputs of `shapes`, runs it in both modes against the naive
/// einsum of `naive_eq` (the same equation with "..." and implicit outputs written out) and
/// returns the graph; `out_shape` is the ONNX output's.
Graph check(const std::string& eq, const std::string& naive_eq, const std::vector<std::vector<int64_t>>& shapes,
            const std::vector<int64_t>& out_shape) {
  SCOPED_TRACE(eq);
  ModelPb m = einsum_model(eq, shapes);
  Graph g = graph_opt::import_onnx_bytes(m.bytes(), "m.onnx");
  std::vector<NDArray> args;
  uint64_t seed = 3;
  for (const auto& s : shapes) {
    args.push_back(NDArray::empty(s.empty() ? std::vector<int64_t>{1} : s, DataType::Float(32)));
    args.back().fill_random(seed++, -1.0, 1.0);
  }
  std::vector<int64_t> want_shape = out_shape.empty() ? std::vector<int64_t>{1} : out_shape;
  EXPECT_EQ(g.type(g.outputs.at(0)).shape, want_shape);
  std::vector<double> want = naive_einsum(naive_eq, args);
  expect_values(graph_opt::run_reference(g, args).at(0), want, 1e-5, "reference");
  expect_values(run_compiled(g, args).at(0), want, 1e-4, "compiled");
  return g;
}

TEST(EinsumImport, AttentionFormsAreBatchMatmulsWithoutTransposes) {
  REQUIRE_FRONTEND();
  // Q·K^T: K is [b,h,j,d] = [batch, N, K], batch_matmul's transpose_b.
  Graph g = check("bhid,bhjd->bhij", "bhid,bhjd->bhij", {{2, 3, 5, 8}, {2, 3, 7, 8}}, {2, 3, 5, 7});
  EXPECT_EQ(count_ops(g, "batch_matmul"), 1);
  EXPECT_EQ(count_ops(g, "transpose"), 0);
  for (const auto& n : g.nodes)
    if (n.is_op() && n.op == "batch_matmul") EXPECT_EQ(std::get<int64_t>(n.attrs.at("transpose_b")), 1);
  // P·V.
  g = check("bhij,bhjd->bhid", "bhij,bhjd->bhid", {{2, 3, 5, 7}, {2, 3, 7, 8}}, {2, 3, 5, 8});
  EXPECT_EQ(count_ops(g, "batch_matmul"), 1);
  EXPECT_EQ(count_ops(g, "transpose"), 0);
  g = check("bij, bjk -> bik", "bij,bjk->bik", {{5, 2, 3}, {5, 3, 4}}, {5, 2, 4});
  EXPECT_EQ(count_ops(g, "batch_matmul"), 1);
  // A plain matmul, and one whose output order needs a transpose.
  g = check("ij,jk->ik", "ij,jk->ik", {{13, 17}, {17, 30}}, {13, 30});
  EXPECT_EQ(count_ops(g, "matmul"), 1);
  check("ij,jk->ki", "ij,jk->ki", {{4, 6}, {6, 3}}, {3, 4});
  // Heads split off a projection: "bsd,hdk->bhsk".
  check("bsd,hdk->bhsk", "bsd,hdk->bhsk", {{2, 5, 6}, {3, 6, 4}}, {2, 3, 5, 4});
}

TEST(EinsumImport, SingleOperandForms) {
  REQUIRE_FRONTEND();
  check("ij->ji", "ij->ji", {{3, 4}}, {4, 3});
  check("ij->i", "ij->i", {{3, 4}}, {3});
  check("ij->", "ij->", {{3, 4}}, {});
}

/// The Einsum `eq` of one [B, n, n] (or [n, n] when B is 0) input in both modes against
/// want(x).
void check_diagonal(const std::string& eq, int64_t B, int64_t n, const std::vector<int64_t>& out_shape,
                    const std::function<std::vector<double>(const NDArray&)>& want) {
  SCOPED_TRACE(eq);
  std::vector<int64_t> shape = B ? std::vector<int64_t>{B, n, n} : std::vector<int64_t>{n, n};
  Graph g = graph_opt::import_onnx_bytes(einsum_model(eq, {shape}).bytes(), "m.onnx");
  EXPECT_EQ(g.type(g.outputs.at(0)).shape, out_shape);
  NDArray x = NDArray::empty(shape, DataType::Float(32));
  x.fill_random(9, -1, 1);
  expect_values(graph_opt::run_reference(g, {x}).at(0), want(x), 1e-5, "reference");
  expect_values(run_compiled(g, {x}).at(0), want(x), 1e-5, "compiled");
}

TEST(EinsumImport, DiagonalsAndTraces) {
  REQUIRE_FRONTEND();
  // naive_einsum takes no repeated labels: these against their loops.
  check_diagonal("ii->i", 0, 5, {5}, [](const NDArray& x) {
    std::vector<double> r;
    for (int64_t i = 0; i < 5; ++i) r.push_back(x.get(i * 6));
    return r;
  });
  check_diagonal("ii", 0, 7, {1}, [](const NDArray& x) {  // implicit: the trace
    double t = 0;
    for (int64_t i = 0; i < 7; ++i) t += x.get(i * 8);
    return std::vector<double>{t};
  });
  check_diagonal("...ii ->...i", 3, 4, {3, 4}, [](const NDArray& x) {
    std::vector<double> r;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t i = 0; i < 4; ++i) r.push_back(x.get(b * 16 + i * 5));
    return r;
  });
  check_diagonal("bii->b", 2, 4, {2}, [](const NDArray& x) {
    std::vector<double> r(2, 0.0);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 4; ++i) r[size_t(b)] += x.get(b * 16 + i * 5);
    return r;
  });
}

TEST(EinsumImport, OuterProductsBroadcastingAndImplicitOutputs) {
  REQUIRE_FRONTEND();
  Graph g = check("i,j->ij", "i,j->ij", {{4}, {6}}, {4, 6});
  EXPECT_EQ(count_ops(g, "multiply"), 1);
  check("i,i", "i,i->", {{5}, {5}}, {});
  check("ij,jk", "ij,jk->ik", {{3, 4}, {4, 2}}, {3, 2});
  check("ij,ij->ij", "ij,ij->ij", {{3, 4}, {3, 4}}, {3, 4});
  // "..." broadcasting a batch of 1 against one of 3.
  check("...ij,...jk->...ik", "bij,bjk->bik", {{1, 2, 3}, {3, 3, 4}}, {3, 2, 4});
  check("...ij,jk", "bij,jk->bik", {{2, 3, 4}, {4, 5}}, {2, 3, 5});
  // Three operands, a label summed out of one alone.
  check("abc,cd,def->abf", "abc,cd,def->abf", {{2, 3, 4}, {4, 5}, {5, 2, 3}}, {2, 3, 3});
  check("ij,k->i", "ij,k->i", {{3, 4}, {5}}, {3});
  check("->", "->", {{}}, {});
}

TEST(EinsumImport, EquationsThatDoNotFitAreErrors) {
  REQUIRE_FRONTEND();
  EXPECT_HAS(import_error(einsum_model("ij,jk->ik", {{2, 3, 4}, {4, 5}}).bytes()),
             "node #0 'einsum1' (Einsum): equation 'ij,jk->ik': term 0 names 2 dims but input 0 has rank 3");
  EXPECT_HAS(import_error(einsum_model("ij,jk->ik", {{2, 3}, {4, 5}}).bytes()),
             "label 'j' has extent 3 in one place and 4 in another");
  EXPECT_HAS(import_error(einsum_model("ij->ik", {{2, 3}}).bytes()), "output label 'k' is in no input");
  EXPECT_HAS(import_error(einsum_model("ij,jk->ik", {{2, 3}}).bytes()), "has 2 input terms but the node has 1 inputs");
  EXPECT_HAS(import_error(einsum_model("i.j->i", {{2, 3}}).bytes()), "not a letter or '...'");
  EXPECT_HAS(import_error(einsum_model("ij->ii", {{2, 3}}).bytes()), "the output repeats a label");
}

}  // namespace
}  // namespace loom::test::onnx_writer
