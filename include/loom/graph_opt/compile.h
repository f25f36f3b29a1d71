// compile: a network to one runnable, exportable module. The graph is optimized and fused
// (passes.h) unless it is fused already, its intermediates planned (memory_plan.h); each
// fused group's composed computation is scheduled (its anchor's template with the tuned
// config from the log, or the template's default; a schedule generated from its pattern
// where no template applies), lowered, and every kernel is built into one module whose
// graph executor runs them over the planned arena with the constants (codegen/graph.h).
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "loom/graph_opt/graph.h"
#include "loom/graph_opt/memory_plan.h"
#include "loom/graph_opt/passes.h"
#include "loom/lower/lower.h"
#include "loom/records/record.h"
#include "loom/runtime/graph_plan.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"

namespace loom::graph_opt {

struct CompileOptions {
  /// How a graph without groups is optimized and fused (default: level 3).
  PassOptions passes;
  /// The graph module's entry ("run"; "run_profile" is the profiling one).
  std::string entry = "run";
  /// Where the warning per workload without a tuning record goes (null: nowhere).
  std::ostream* warn = nullptr;
  /// Check every tensor access of every kernel at run time (slow; for debugging).
  bool check_accesses = false;
};

/// One kernel as compiled. Groups that compute the same thing (same operators, attributes
/// and types: a network's repeated blocks) call one function.
struct CompiledKernel {
  std::string name;      // the function (the first such group's name, made a C identifier)
  std::string ops;       // the member operators: "conv2d_nchwc+add+relu"
  /// How it was scheduled: "conv2d_nchwc [N,C,…] tuned config 1234 (0.12 ms)", "… default
  /// config 17 (no record)", "pattern injective".
  std::string schedule;
  /// The workload whose records were looked up: the anchor template's, or the group's own
  /// auto-scheduled one when its record was chosen; "" for a pattern schedule.
  std::string workload;
  records::Workload task;  // that workload, to tune (op "" for a pattern)
  /// tuner::ScheduleSource: "tuned", "auto", "default" or "pattern".
  std::string source;
  bool tuned = false;  // scheduled by a tuning record ("tuned" or "auto")
};

/// What compile did: the fused graph, its memory plan and its kernels in execution order.
struct CompileReport {
  Graph fused;
  MemoryPlan memory;
  std::vector<CompiledKernel> kernels;
  size_t functions = 0;  // distinct compiled functions the kernels call
  /// Workload keys of templates that found no record (each once).
  std::vector<std::string> untuned;
};

/// The fused graph compile works on: `graph` itself if it has groups (or no operators), else
/// optimize(graph, opt.passes).
Graph optimize_for_compile(const Graph& graph, const CompileOptions& opt = {});

/// The graph executor's plan and the lowered kernels of `graph` (fused and planned first if
/// it has no groups), not yet built.
struct LoweredGraph {
  runtime::GraphPlan plan;
  std::vector<lowering::LoweredFunc> funcs;
  CompileReport report;
};
LoweredGraph lower_graph(const Graph& graph, const Target& target, const records::ApplyHistoryBest* best = nullptr,
                         const CompileOptions& opt = {});

/// lower_graph, then codegen::build_graph: a module with `run(inputs…, outputs…)` in the
/// order of the graph's input nodes and outputs, `run_profile`, info_json() and
/// export_library (one self-contained .so). `report`, if given, receives what was done.
runtime::Module compile(const Graph& graph, const Target& target, const records::ApplyHistoryBest* best = nullptr,
                        const CompileOptions& opt = {}, CompileReport* report = nullptr);

}  // namespace loom::graph_opt
