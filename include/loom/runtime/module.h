// Module and PackedFunc: compiled functions, JIT-ed or loaded from a shared library.
#pragma once
#include <dlpack/dlpack.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/ndarray.h"

namespace loom::runtime {

/// A compiled function taking tensors. Calling it checks the status and throws
/// loom::Error with the function's own message when an argument is wrong.
class PackedFunc {
 public:
  using Raw = std::function<int32_t(DLTensor** args, int32_t num_args)>;
  PackedFunc() = default;
  PackedFunc(std::string name, Raw raw) : name_(std::move(name)), raw_(std::move(raw)) {}
  /// A function whose body reports errors by throwing: a std::exception becomes status -1
  /// with its message as loom_get_last_error().
  static PackedFunc from_throwing(std::string name, std::function<void(DLTensor** args, int32_t num_args)> body);
  bool defined() const { return static_cast<bool>(raw_); }
  const std::string& name() const { return name_; }

  /// Calls with DLTensor pointers; throws loom::Error on a non-zero status.
  void call(std::vector<DLTensor*> args) const;
  /// Calls with the raw status instead of throwing.
  int32_t call_status(std::vector<DLTensor*> args) const;
  template <typename... Args>
  void operator()(Args&&... args) const {
    call(std::vector<DLTensor*>{to_dl(std::forward<Args>(args))...});
  }

 private:
  static DLTensor* to_dl(const NDArray& a) { return a.dltensor(); }
  static DLTensor* to_dl(DLTensor* t) { return t; }
  std::string name_;
  Raw raw_;
};

/// What a module implementation provides (JIT-ed code, a loaded library, device code).
class ModuleNode {
 public:
  virtual ~ModuleNode() = default;
  virtual std::string type_key() const = 0;
  /// Undefined PackedFunc if there is no such function.
  virtual PackedFunc get_function(const std::string& name) = 0;
  virtual std::vector<std::string> function_names() const = 0;
  /// Writes a self-contained shared library (and its C header) to `path`.
  virtual void export_library(const std::string& path);
  /// Writes the relocatable object file the library is linked from (CPU modules).
  virtual void export_object(const std::string& path);
  /// Source of the given kind ("ll", "asm", "cuda", "ptx"), empty if not kept.
  virtual std::string source(const std::string& kind) const { (void)kind; return ""; }
  /// JSON describing every function (names, arguments, target, version).
  virtual std::string info_json() const { return "{}"; }
};

/// A set of compiled functions.
class Module {
 public:
  Module() = default;
  explicit Module(std::shared_ptr<ModuleNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  ModuleNode* operator->() const { return node_.get(); }
  /// The function; throws loom::Error naming the available ones if absent.
  PackedFunc get_function(const std::string& name) const;
  std::vector<std::string> function_names() const { return node_->function_names(); }
  void export_library(const std::string& path) const { node_->export_library(path); }
  void export_object(const std::string& path) const { node_->export_object(path); }
  std::string source(const std::string& kind) const { return node_->source(kind); }
  std::string info_json() const { return node_->info_json(); }
  /// Loads a library written by export_library.
  static Module load(const std::string& path);

 private:
  std::shared_ptr<ModuleNode> node_;
};

}  // namespace loom::runtime
