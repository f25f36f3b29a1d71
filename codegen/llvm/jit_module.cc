// The module node of CPU code and the process-wide ORC LLJIT that runs it.
#include "jit_module.h"

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>

#include "codegen_llvm.h"
#include "export_library.h"
#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"
#include "optimize.h"
#include "target_machine.h"
#include "vector_math.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif

namespace loom::codegen {

namespace {

template <typename T>
T check(llvm::Expected<T> v, const char* what) {
  if (!v) fail("codegen: {}: {}", what, llvm::toString(v.takeError()));
  return std::move(*v);
}
void check(llvm::Error err, const char* what) {
  if (err) fail("codegen: {}: {}", what, llvm::toString(std::move(err)));
}

/// The process-wide JIT. Never destroyed: modules may outlive static destructors.
llvm::orc::LLJIT& global_jit() {
  static llvm::orc::LLJIT* jit = [] {
    init_llvm();
    return check(llvm::orc::LLJITBuilder().create(), "cannot start the LLVM JIT").release();
  }();
  return *jit;
}

/// Runtime functions generated code calls, defined by address so that they resolve
/// however libloom itself was loaded.
llvm::orc::SymbolMap runtime_symbols(llvm::orc::LLJIT& jit) {
  llvm::orc::SymbolMap syms;
  auto add = [&](const char* name, auto* fn) {
    syms[jit.mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void*>(fn)),
                                       llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  };
  add("loom_set_last_error", &loom_set_last_error);
  add("loom_parallel_launch", &loom_parallel_launch);
  add("loom_workspace_alloc", &loom_workspace_alloc);
  add("loom_workspace_free", &loom_workspace_free);
  add("snprintf", static_cast<int (*)(char*, size_t, const char*, ...)>(&std::snprintf));
  return syms;
}

nlohmann::json to_json(const FunctionInfo& f) {
  nlohmann::json args = nlohmann::json::array();
  for (const auto& a : f.args) {
    nlohmann::json shape = nlohmann::json::array();
    for (const auto& s : a.shape) {
      char* end = nullptr;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end && *end == '\0') shape.push_back(v);
      else shape.push_back(s);
    }
    nlohmann::json arg = {{"name", a.name}, {"dtype", a.dtype}, {"shape", shape}};
    if (!a.role.empty()) arg["role"] = a.role;
    args.push_back(std::move(arg));
  }
  return {{"name", f.name}, {"args", args}};
}

}  // namespace

FunctionInfo FunctionInfo::of(const lowering::LoweredFunc& f) {
  FunctionInfo info;
  info.name = f.name;
  for (const auto& a : f.args) {
    Arg arg{a.name, a.dtype.str(), "", {}};
    if (a.tensor.defined()) arg.role = a.tensor.op()->kind == te::OpKind::kPlaceholder ? "input" : "output";
    for (const auto& s : a.shape) {
      if (auto* imm = s.as<te::IntImmNode>()) arg.shape.push_back(std::to_string(imm->value));
      else arg.shape.push_back(te::to_string(s));
    }
    info.args.push_back(std::move(arg));
  }
  return info;
}

LLVMModuleNode::LLVMModuleNode(Target target, std::string bitcode, std::vector<FunctionInfo> funcs)
    : target_(std::move(target)), bitcode_(std::move(bitcode)), funcs_(std::move(funcs)) {}

LLVMModuleNode::~LLVMModuleNode() {
  if (!jd_) return;
  if (auto err = global_jit().getExecutionSession().removeJITDylib(*jd_)) llvm::consumeError(std::move(err));
}

void LLVMModuleNode::link(const std::string& object) {
  static std::atomic<uint64_t> counter{0};
  llvm::orc::LLJIT& jit = global_jit();
  std::string jd_name = fmt::format("loom_module_{}", counter++);
  auto created = jit.createJITDylib(jd_name);
  if (!created) fail("codegen: cannot create a JITDylib: {}", llvm::toString(created.takeError()));
  llvm::orc::JITDylib& jd = *created;
  jd_ = &jd;
  check(jd.define(llvm::orc::absoluteSymbols(runtime_symbols(jit))), "cannot define the runtime symbols");
  jd.addGenerator(check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit.getDataLayout().getGlobalPrefix()),
                        "cannot search the process for symbols"));
  // The vector math (vector_math.h) an exported library links as -lmvec; code generation
  // only calls what this host's libmvec exports.
  if (host_has_libmvec())
    jd.addGenerator(check(llvm::orc::DynamicLibrarySearchGenerator::Load(kLibmvecSoname, jit.getDataLayout().getGlobalPrefix()),
                          "cannot load libmvec"));
  check(jit.addObjectFile(jd, llvm::MemoryBuffer::getMemBufferCopy(object, jd_name)), "cannot add the object file to the JIT");
  for (const auto& f : funcs_) {
    auto addr = jit.lookup(jd, packed_name(f.name));
    if (!addr) fail("codegen: cannot link function '{}': {}", f.name, llvm::toString(addr.takeError()));
    entries_[f.name] = addr->toPtr<PackedEntry>();
  }
  object_ = object;
}

runtime::PackedFunc LLVMModuleNode::get_function(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    bool known = false;
    for (const auto& f : funcs_) known |= f.name == name;
    if (known && !jd_) fail("function '{}' cannot run on this host: {}", name, host_incompatibility_);
    return {};
  }
  PackedEntry fn = it->second;
  auto self = shared_from_this();
  return runtime::PackedFunc(name, [self, fn](DLTensor** args, int32_t n) { return fn(args, n); });
}

PackedEntry LLVMModuleNode::entry(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second;
}

std::vector<std::string> LLVMModuleNode::function_names() const {
  std::vector<std::string> out;
  for (const auto& f : funcs_) out.push_back(f.name);
  return out;
}

void LLVMModuleNode::export_library(const std::string& path) { codegen::export_library(*this, path); }

void LLVMModuleNode::export_object(const std::string& path) { codegen::export_object(*this, path); }

std::string LLVMModuleNode::source(const std::string& kind) const {
  if (kind == "bc") return bitcode_;
  if (kind != "ll" && kind != "asm") return "";
  std::lock_guard<std::mutex> lock(mu_);
  auto it = source_cache_.find(kind);
  if (it != source_cache_.end()) return it->second;
  llvm::LLVMContext ctx;
  auto m = from_bitcode(bitcode_, ctx);
  std::string text;
  if (kind == "ll") {
    llvm::raw_string_ostream os(text);
    m->print(os, nullptr);
    os.flush();
  } else {
    text = emit_machine_code(*m, get_target_machine(target_), llvm::CodeGenFileType::AssemblyFile);
  }
  return source_cache_[kind] = text;
}

std::string LLVMModuleNode::info_json() const {
  nlohmann::json fs = nlohmann::json::array();
  for (const auto& f : funcs_) fs.push_back(to_json(f));
  nlohmann::json j = {{"functions", fs}, {"target", target_.str()}, {"version", LOOM_VERSION}, {"type_key", "llvm"}};
  return j.dump();
}

}  // namespace loom::codegen
