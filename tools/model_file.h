// What the commands that take a network share (compile, tune-model, import): reading it (a
// loom model file, docs/graph.md, or an ONNX model, docs/onnx.md), its target and the graph
// passes' options, so that tune-model extracts the tasks of the kernels compile will build.
#pragma once
#include <string>
#include <vector>

#include "cli.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/graph.h"
#include "loom/runtime/target.h"

namespace loom::cli {

/// --input-shape NAME=DIMS (repeated), for ONNX models with dynamic dims: INPUT=D0,D1,… (a graph
/// input's shape) or DIM=N,DIM=N… (symbolic dims).
Option input_shape_option();

/// The ONNX model at `path`, with the --input-shape options of `a`.
graph_opt::Graph import_onnx_model(const Args& a, const std::string& path);

/// The network at `path` (graph_opt::load_model: ONNX by its name or first byte, with the
/// --input-shape options of `a`; else a loom model file). UsageError when it is missing.
graph_opt::Graph load_model(const Args& a, const std::string& path);

/// --target (an llvm target, default llvm: this CPU), checked; UsageError otherwise.
Target network_target(const Args& a);

/// --opt-level N and --disable PASS (repeated), as compile takes them.
std::vector<Option> pass_options();
/// The CompileOptions they give (UsageError naming an unknown pass). `--winograd auto` sets
/// nothing here: it needs the tuning records (compile's LayoutOptions::choose_winograd).
graph_opt::CompileOptions compile_options(const Args& a);

}  // namespace loom::cli
