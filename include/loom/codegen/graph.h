// build_graph: a graph plan's kernels compiled into one module that runs the whole plan.
#pragma once
#include <vector>

#include "loom/lower/lower.h"
#include "loom/runtime/graph_plan.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"

namespace loom::codegen {

/// Compiles `funcs` (packed lowered functions; the plan's kernels name them, several kernels
/// may call one function) for a CPU target into one module, and returns the graph module
/// over it. Its functions: `run` (plan.name; the plan's inputs then its outputs) and
/// `run_profile` (the same plus a float64[kernels] tensor that receives each kernel's
/// seconds); `info_json()` describes the inputs, outputs and kernels; `export_library`
/// writes one self-contained shared library with the constants embedded (docs/deploy.md).
/// Fills each kernel's `writes` from its function's signature, then checks the plan
/// (GraphPlan::validate) and every kernel's arguments against its function (count, dtype,
/// shape); errors name the kernel, the argument and the tensor.
runtime::Module build_graph(runtime::GraphPlan plan, const std::vector<lowering::LoweredFunc>& funcs,
                            const Target& target);

}  // namespace loom::codegen
