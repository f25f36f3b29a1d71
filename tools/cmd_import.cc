// `loom import`: an ONNX model into loom's graph JSON (graph_opt/frontend/onnx).
#include <fmt/ranges.h>

#include <iostream>

#include "cli.h"
#include "model_file.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/serialize.h"

namespace loom::cli {
namespace {

int run(const Args& a) {
  if (a.positional().size() != 1) a.usage_error("give one model file (MODEL.onnx), got {}", a.positional().size());
  const std::string model = a.positional()[0];
  require_file("MODEL.onnx", model);
  graph_opt::Graph g = import_onnx_model(a, model);
  if (a.has("--print")) std::cout << g;
  if (a.has("--output")) {
    graph_opt::SaveOptions so;
    std::string weights = graph_opt::save_graph(g, a.str("--output"), so);
    std::cerr << fmt::format("{}: {} nodes ({} operators) -> {}{}\n", model, g.nodes.size(), g.num_ops(), a.str("--output"),
                             weights.empty() ? "" : " + " + weights);
  } else if (!a.has("--print")) {
    std::cerr << fmt::format("{}: imports as {} nodes ({} operators); -o FILE.json writes it, --print shows it\n",
                             model, g.nodes.size(), g.num_ops());
  }
  return 0;
}

}  // namespace

Command import_command() {
  Command c;
  c.name = "import";
  c.synopsis = "read an ONNX model into loom's graph JSON";
  c.usage = "MODEL.onnx [-o MODEL.json] [--print] [--input-shape NAME=DIMS]...";
  c.positional = "MODEL.onnx";
  c.description =
      "Reads an ONNX model (opset 7 or later) into the graph IR: initializers become constants,\n"
      "each node registry operators, constant subgraphs (Shape, Constant, arithmetic on shapes)\n"
      "are evaluated at import. An operator, attribute or type loom does not support is an error\n"
      "naming the node (index and name), its op type and what is missing. docs/onnx.md lists\n"
      "what is supported. Dynamic dims take static extents from --input-shape: a graph input's\n"
      "whole shape (data=1,3,224,224) or symbolic dims by name (batch=1,height=48).";
  c.options = {{"--output", "FILE.json", "write the graph as JSON (large constants in a .weights file next to it)", false, "-o"},
               {"--print", "", "print the imported graph"},
               input_shape_option()};
  c.run = run;
  return c;
}

}  // namespace loom::cli
