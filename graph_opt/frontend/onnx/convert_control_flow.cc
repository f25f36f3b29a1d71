// Converter of ONNX's If: a condition that folds to a constant at import selects the branch
// imported inline; a condition computed at run time is unsupported (loom's graphs have no
// control flow).
#include <fmt/format.h>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

void if_(Importer& im) {
  const onnx::GraphProto& then_branch = im.attr_graph("then_branch");
  const onnx::GraphProto& else_branch = im.attr_graph("else_branch");
  runtime::NDArray cond;
  try {
    cond = im.const_input(0, "the condition");
  } catch (const OnnxUnsupported& e) {
    throw OnnxUnsupported(fmt::format("{}: the condition (input 0 '{}') is computed at run time, so which branch runs "
                                      "is data-dependent; loom imports an If only when its condition is a constant "
                                      "at import{}",
                                      im.where(), im.node().input(0),
                                      e.constant_input.empty() ? "" : " (bind the graph input: OnnxImportOptions::bind_inputs)"),
                          e.constant_input);
  }
  if (cond.numel() != 1)
    im.invalid(fmt::format("the condition must hold one value, got shape {}", shape_str(cond.shape())));
  const bool taken = cond.get(0) != 0;
  im.import_subgraph_as_outputs(taken ? then_branch : else_branch, taken ? "then_branch" : "else_branch");
}

}  // namespace

void add_control_flow_converters(std::map<std::string, Converter>& m) { m["If"] = if_; }

}  // namespace loom::graph_opt::onnx_frontend
