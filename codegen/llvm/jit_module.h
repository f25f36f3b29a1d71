// The module node of CPU code: an optimized LLVM module kept as bitcode, JIT-linked into
// its own ORC JITDylib when it can run on this host.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"

namespace llvm::orc {
class JITDylib;
}

namespace loom::codegen {

/// Signature of a packed entry: int32_t __loom_packed_<name>(DLTensor** args, int32_t n).
using PackedEntry = int32_t (*)(DLTensor**, int32_t);

/// Name, dtype and shape of every argument of one compiled function.
struct FunctionInfo {
  struct Arg {
    std::string name, dtype;
    std::string role;                // "input" (a placeholder), "output", or "" if unknown
    std::vector<std::string> shape;  // integers as decimal text, symbolic extents as expressions
  };
  std::string name;
  std::vector<Arg> args;
  static FunctionInfo of(const lowering::LoweredFunc& f);
};

class LLVMModuleNode : public runtime::ModuleNode, public std::enable_shared_from_this<LLVMModuleNode> {
 public:
  LLVMModuleNode(Target target, std::string bitcode, std::vector<FunctionInfo> funcs);
  ~LLVMModuleNode() override;

  std::string type_key() const override { return "llvm"; }
  runtime::PackedFunc get_function(const std::string& name) override;
  std::vector<std::string> function_names() const override;
  /// A shared library with the embedded runtime, and its C header (export_library.h).
  void export_library(const std::string& path) override;
  /// The relocatable object the library is linked from (any target LLVM knows).
  void export_object(const std::string& path) override;
  /// "ll": optimized LLVM IR; "asm": assembly; "bc": raw bitcode.
  std::string source(const std::string& kind) const override;
  std::string info_json() const override;

  /// The JIT-linked packed entry of function `name`; null if it is not linked (no such
  /// function, or the module cannot run on this host). Valid while this node lives.
  PackedEntry entry(const std::string& name) const;

  /// Links the object file into a fresh JITDylib and resolves every packed entry.
  void link(const std::string& object);
  /// The object file linked ("" if none): export_graph_library reuses it rather than
  /// compiling the bitcode to machine code a second time.
  const std::string& object() const { return object_; }

  /// Why this module cannot run here ("" if it can); it is then compiled but not linked.
  void set_host_incompatibility(std::string why) { host_incompatibility_ = std::move(why); }
  const std::string& host_incompatibility() const { return host_incompatibility_; }

  const Target& target() const { return target_; }
  /// The optimized module as LLVM bitcode (what object emission starts from).
  const std::string& bitcode() const { return bitcode_; }
  const std::vector<FunctionInfo>& functions() const { return funcs_; }

 private:
  Target target_;
  std::string bitcode_;
  std::vector<FunctionInfo> funcs_;
  std::string host_incompatibility_;
  std::string object_;
  llvm::orc::JITDylib* jd_ = nullptr;
  std::map<std::string, PackedEntry> entries_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::string> source_cache_;
};

}  // namespace loom::codegen
