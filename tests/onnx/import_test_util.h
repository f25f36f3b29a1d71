// Shared by the converter tests: importing a model written with onnx_model_writer.h, running
// the imported graph node by node (run_reference) and compiled for the CPU, and the error a
// model's import throws.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/ndarray.h"

namespace loom::test::onnx_writer {

#define REQUIRE_FRONTEND() \
  if (!graph_opt::onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

/// The message of the loom::Error importing `bytes` throws ("" when it imports).
inline std::string import_error(const std::string& bytes) {
  try {
    graph_opt::import_onnx_bytes(bytes, "m.onnx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// The graph compiled for the CPU (LLVM) and run on `args`.
inline std::vector<runtime::NDArray> run_compiled(const graph_opt::Graph& g, const std::vector<runtime::NDArray>& args) {
  runtime::Module m = graph_opt::compile(g, Target("llvm"));
  std::vector<runtime::NDArray> outs;
  std::vector<DLTensor*> call;
  for (const runtime::NDArray& a : args) call.push_back(a.dltensor());
  for (graph_opt::ValueRef v : g.outputs) outs.push_back(runtime::NDArray::empty(g.type(v).shape, g.type(v).dtype));
  for (const runtime::NDArray& a : outs) call.push_back(a.dltensor());
  m.get_function("run").call(call);
  return outs;
}

inline void expect_values(const runtime::NDArray& got, const std::vector<double>& want, double tol,
                          const std::string& what) {
  ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
  int bad = 0;
  for (int64_t k = 0; k < got.numel(); ++k)
    if (!(std::abs(got.get(k) - want[size_t(k)]) <= tol * (1 + std::abs(want[size_t(k)]))) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << k << " is " << got.get(k) << ", expected " << want[size_t(k)];
  EXPECT_EQ(bad, 0) << what;
}

/// Number of op nodes of `g` running registry operator `op`.
inline int count_ops(const graph_opt::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.is_op() && node.op == op;
  return n;
}

}  // namespace loom::test::onnx_writer
