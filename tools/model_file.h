// Reading a network for the commands that take one (compile, tune-model, import): a loom
// model file (docs/graph.md) or an ONNX model (docs/onnx.md).
#pragma once
#include <string>
#include <vector>

#include "cli.h"
#include "loom/graph_opt/graph.h"

namespace loom::cli {

/// --input-shape NAME=DIMS (repeated), for ONNX models with dynamic dims.
Option input_shape_option();

/// The ONNX model at `path`, with the --input-shape options of `a`.
graph_opt::Graph import_onnx_model(const Args& a, const std::string& path);

/// The network at `path` (graph_opt::load_model: ONNX by its name or first byte, with the
/// --input-shape options of `a`; else a loom model file). UsageError when it is missing.
graph_opt::Graph load_model(const Args& a, const std::string& path);

}  // namespace loom::cli
