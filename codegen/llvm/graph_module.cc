// build_graph and the in-process graph module: kernels JIT-compiled into one module, the
// plan bound to their packed entries and run by the graph executor.
#include "graph_module.h"

#include <fmt/ranges.h>

#include <cctype>
#include <map>

#include "build_llvm.h"
#include "loom/codegen/graph.h"
#include "loom/runtime/error.h"
#include "loom/runtime/shape.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif

namespace loom::codegen {

namespace {

using runtime::GraphPlan;
using runtime::GraphTensorKind;

std::string tensor_text(const runtime::GraphTensor& t) { return t.dtype.str() + runtime::shape_str(t.shape); }

std::string arg_text(const FunctionInfo::Arg& a) { return fmt::format("{}[{}]", a.dtype, fmt::join(a.shape, ", ")); }

/// Fills each kernel's `writes` from its function's argument roles and checks the arguments
/// against the function's signature.
void bind_signatures(GraphPlan& plan, const std::vector<FunctionInfo>& infos) {
  std::map<std::string, const FunctionInfo*> by_name;
  for (const auto& f : infos) by_name[f.name] = &f;
  const std::string profile = plan.name + "_profile";
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    runtime::GraphKernel& kern = plan.kernels[k];
    std::string who = fmt::format("build_graph: kernel {} ('{}')", k, kern.name);
    LOOM_CHECK(kern.name != plan.name && kern.name != profile && kern.name.rfind("loom_", 0) != 0 &&
                   kern.name.rfind("__", 0) != 0,
               "{}: the name is reserved for the graph's own symbols ('{}', '{}', 'loom_*', '__*')", who, plan.name,
               profile);
    auto it = by_name.find(kern.name);
    LOOM_CHECK(it != by_name.end(), "{}: no function of that name among the {} compiled", who, infos.size());
    const FunctionInfo& f = *it->second;
    LOOM_CHECK(f.args.size() == kern.args.size(), "{}: the function takes {} arguments, the kernel passes {}", who,
               f.args.size(), kern.args.size());
    std::vector<bool> writes;
    for (size_t a = 0; a < f.args.size(); ++a) {
      int32_t t = kern.args[a];
      LOOM_CHECK(t >= 0 && size_t(t) < plan.tensors.size(), "{}: argument {} names tensor {}, but the plan has {}", who,
                 a, t, plan.tensors.size());
      const runtime::GraphTensor& tensor = plan.tensors[t];
      std::vector<std::string> shape;
      for (int64_t d : tensor.shape) shape.push_back(std::to_string(d));
      LOOM_CHECK(f.args[a].dtype == tensor.dtype.str() && f.args[a].shape == shape,
                 "{}: argument {} ('{}') of the function is {}, but tensor {} ('{}') is {}", who, a, f.args[a].name,
                 arg_text(f.args[a]), t, tensor.name, tensor_text(tensor));
      LOOM_CHECK(!f.args[a].role.empty() || !kern.writes.empty(),
                 "{}: argument {} ('{}') is neither a placeholder nor a computed tensor; give the kernel's writes", who,
                 a, f.args[a].name);
      bool w = f.args[a].role == "output";
      if (!kern.writes.empty() && !f.args[a].role.empty())
        LOOM_CHECK(kern.writes.size() == f.args.size() && kern.writes[a] == w,
                   "{}: argument {} ('{}') is {} by the function, but the kernel says it is {}", who, a,
                   f.args[a].name, w ? "written" : "read", w ? "read" : "written");
      writes.push_back(kern.writes.empty() ? w : kern.writes[a]);
    }
    kern.writes = std::move(writes);
  }
}

nlohmann::json tensor_json(const runtime::GraphTensor& t) {
  return {{"name", t.name}, {"dtype", t.dtype.str()}, {"shape", t.shape}};
}

}  // namespace

GraphModuleNode::GraphModuleNode(std::shared_ptr<LLVMModuleNode> kernels, GraphPlan plan)
    : kernels_(std::move(kernels)) {
  std::vector<loom_graph_kernel_fn> entries;
  for (const auto& k : plan.kernels) entries.push_back(kernels_->entry(k.name));
  exec_ = std::make_unique<runtime::GraphExecutor>(std::move(plan), std::move(entries));
}

std::vector<std::string> GraphModuleNode::function_names() const { return {exec_->plan().name, profile_name()}; }

runtime::PackedFunc GraphModuleNode::get_function(const std::string& name) {
  bool is_run = name == exec_->plan().name, is_profile = name == profile_name();
  if (!is_run && !is_profile) return {};
  LOOM_CHECK(kernels_->host_incompatibility().empty(), "function '{}' cannot run on this host: {}", name,
             kernels_->host_incompatibility());
  auto self = shared_from_this();
  if (is_run) return runtime::PackedFunc(name, [self](DLTensor** args, int32_t n) { return self->exec_->run(args, n); });
  return runtime::PackedFunc(name, [self](DLTensor** args, int32_t n) { return self->exec_->profile(args, n); });
}

void GraphModuleNode::export_library(const std::string& path) { export_graph_library(*this, path); }

nlohmann::json graph_info(const GraphModuleNode& node) {
  const GraphPlan& plan = node.executor().plan();
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  nlohmann::json run_args = nlohmann::json::array();
  for (int32_t id : plan.inputs) {
    inputs.push_back(tensor_json(plan.tensors[id]));
    run_args.push_back(tensor_json(plan.tensors[id]));
    run_args.back()["role"] = "input";
  }
  for (int32_t id : plan.outputs) {
    outputs.push_back(tensor_json(plan.tensors[id]));
    run_args.push_back(tensor_json(plan.tensors[id]));
    run_args.back()["role"] = "output";
  }
  nlohmann::json profile_args = run_args;
  profile_args.push_back({{"name", "kernel_seconds"},
                          {"dtype", "float64"},
                          {"shape", {plan.kernels.size()}},
                          {"role", "output"}});
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : plan.kernels) {
    nlohmann::json args = nlohmann::json::array();
    int64_t bytes = 0;
    for (int32_t t : k.args) args.push_back(plan.tensors[t].name), bytes += plan.tensors[t].nbytes();
    kernels.push_back({{"name", k.name}, {"note", k.note}, {"args", args}, {"bytes", bytes}});
  }
  return {{"functions",
           {{{"name", plan.name}, {"args", run_args}}, {{"name", node.profile_name()}, {"args", profile_args}}}},
          {"inputs", inputs},
          {"outputs", outputs},
          {"kernels", kernels},
          {"arena_bytes", plan.arena_bytes},
          {"unplanned_bytes", plan.unplanned_bytes()},
          {"constants_bytes", node.executor().constants().blob.nbytes()},
          {"target", node.kernels().target().str()},
          {"version", LOOM_VERSION},
          {"type_key", "graph"}};
}

std::string GraphModuleNode::info_json() const { return graph_info(*this).dump(); }

runtime::Module build_graph(GraphPlan plan, const std::vector<lowering::LoweredFunc>& funcs, const Target& target) {
  LOOM_CHECK(target.is_cpu(), "build_graph: target \"{}\": graph modules run on the CPU (an llvm target)",
             target.str());
  bool ident = !plan.name.empty() && !std::isdigit(static_cast<unsigned char>(plan.name[0])) &&
               plan.name.rfind("loom_", 0) != 0 && plan.name.rfind("__", 0) != 0;
  for (char c : plan.name) ident &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  LOOM_CHECK(ident, "build_graph: the plan's entry name '{}' is not a C identifier outside 'loom_*' and '__*'",
             plan.name);
  for (const auto& f : funcs) LOOM_CHECK(f.packed, "build_graph: function '{}' is not packed (lower it without skip_packed_api)", f.name);
  std::vector<FunctionInfo> infos;
  for (const auto& f : funcs) infos.push_back(FunctionInfo::of(f));
  bind_signatures(plan, infos);
  plan.validate();  // before the (slow) compile
  runtime::Module kernels = build_llvm(funcs, target);
  auto node = static_cast<LLVMModuleNode*>(kernels.operator->())->shared_from_this();
  return runtime::Module(std::make_shared<GraphModuleNode>(std::move(node), std::move(plan)));
}

}  // namespace loom::codegen
