// The module node of a compiled network: a graph plan over the JIT-compiled kernels of one
// LLVM module, run in process by the graph executor and exported as one library.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "jit_module.h"
#include "loom/runtime/graph_plan.h"

namespace loom::codegen {

class GraphModuleNode : public runtime::ModuleNode, public std::enable_shared_from_this<GraphModuleNode> {
 public:
  /// `plan` is validated and its kernels bound to `kernels`' entries (left unbound, so that
  /// only export works, when the kernels cannot run on this host).
  GraphModuleNode(std::shared_ptr<LLVMModuleNode> kernels, runtime::GraphPlan plan);

  std::string type_key() const override { return "graph"; }
  /// `run` and `run_profile` (named after the plan).
  runtime::PackedFunc get_function(const std::string& name) override;
  std::vector<std::string> function_names() const override;
  /// One library: kernels, plan tables, constants, graph executor and runtime (export_graph.cc).
  void export_library(const std::string& path) override;
  /// The kernels' sources ("ll", "asm", "bc").
  std::string source(const std::string& kind) const override { return kernels_->source(kind); }
  std::string info_json() const override;

  const LLVMModuleNode& kernels() const { return *kernels_; }
  const runtime::GraphExecutor& executor() const { return *exec_; }
  std::string profile_name() const { return exec_->plan().name + "_profile"; }

 private:
  std::shared_ptr<LLVMModuleNode> kernels_;
  std::unique_ptr<runtime::GraphExecutor> exec_;
};

/// The JSON `info_json()` and the exported `loom_module_info()` return: "functions" (run and
/// run_profile with their arguments, as other modules list theirs), "inputs" and "outputs"
/// ({"name","dtype","shape"}), "kernels" ({"name","note","args":[tensor names],"bytes": of its arguments}),
/// "arena_bytes", "unplanned_bytes", "constants_bytes", "target", "version", "type_key".
nlohmann::json graph_info(const GraphModuleNode& node);

/// Writes the library `path` and its C header (export_graph.cc).
void export_graph_library(const GraphModuleNode& node, const std::string& path);

}  // namespace loom::codegen
