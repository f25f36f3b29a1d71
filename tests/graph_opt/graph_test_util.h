// Helpers of the graph_opt tests: small models and comparisons with the reference execution.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_util.h"
#include "examples/models/models.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/graph.h"
#include "loom/graph_opt/reference.h"

namespace loom::test {

/// ResNet-18 and MobileNetV2 small enough for te::evaluate: 32x32 images, a quarter of the
/// channels, 10 classes.
inline models::ModelOptions small_model() {
  models::ModelOptions o;
  o.image = 32;
  o.width = 0.25;
  o.num_classes = 10;
  return o;
}

/// Deterministic inputs for the graph's inputs, uniform in [-1, 1).
inline std::vector<runtime::NDArray> graph_inputs(const graph_opt::Graph& g, uint64_t seed = 7) {
  std::vector<runtime::NDArray> r;
  for (int i : g.input_nodes()) {
    const graph_opt::TensorType& t = g.nodes[size_t(i)].outputs[0];
    runtime::NDArray a = runtime::NDArray::empty(t.shape, t.dtype);
    a.fill_random(seed + uint64_t(i));
    r.push_back(a);
  }
  return r;
}

/// "" when every output of `got` matches `want` to a relative tolerance of the outputs'
/// largest magnitude (the graphs reassociate float arithmetic), else the first mismatch.
inline std::string compare_outputs(const std::vector<runtime::NDArray>& got, const std::vector<runtime::NDArray>& want,
                                   double rtol = 1e-4) {
  if (got.size() != want.size()) return fmt::format("{} outputs, expected {}", got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].shape() != want[k].shape()) return fmt::format("output {} has another shape", k);
    double scale = 0;
    for (int64_t i = 0; i < want[k].numel(); ++i) scale = std::max(scale, std::abs(want[k].get(i)));
    std::string m = compare_arrays(got[k], want[k], {0, rtol * std::max(scale, 1e-3)}, fmt::format("output {}", k));
    if (!m.empty()) return m;
  }
  return "";
}

/// A float32 array of `shape`, uniform in [lo, hi) from `seed`.
inline runtime::NDArray random_array(std::vector<int64_t> shape, uint64_t seed, double lo = -1, double hi = 1) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), DataType::Float(32));
  a.fill_random(seed, lo, hi);
  return a;
}

/// Each fused group as the names of its members, in execution order.
inline std::vector<std::vector<std::string>> group_members(const graph_opt::Graph& g) {
  std::vector<std::vector<std::string>> r;
  for (const graph_opt::FusedGroup& grp : g.groups) {
    std::vector<std::string> m;
    for (int n : grp.nodes) m.push_back(g.nodes[size_t(n)].name);
    r.push_back(m);
  }
  return r;
}

/// Number of op nodes running `op`.
inline int count_ops(const graph_opt::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.is_op() && node.op == op;
  return n;
}

}  // namespace loom::test
