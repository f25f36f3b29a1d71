// PackedFunc calls and Module lookup.
#include "loom/runtime/module.h"

#include <fmt/ranges.h>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"

namespace loom::runtime {

/// Defined in dso_module.cc.
std::shared_ptr<ModuleNode> load_dso_module(const std::string& path);

void PackedFunc::call(std::vector<DLTensor*> args) const {
  LOOM_CHECK(defined(), "calling an undefined PackedFunc '{}'", name_);
  loom_set_last_error("");
  int32_t status = raw_(args.data(), int32_t(args.size()));
  if (status != 0) {
    std::string msg = loom_get_last_error();
    if (msg.empty()) msg = fmt::format("failed with status {}", status);
    // Functions whose messages already name them (every loom-generated check does) are
    // not prefixed again.
    if (msg.rfind(name_ + ": ", 0) == 0) fail("{}", msg);
    fail("{}: {}", name_, msg);
  }
}

PackedFunc PackedFunc::from_throwing(std::string name, std::function<void(DLTensor**, int32_t)> body) {
  return PackedFunc(std::move(name), [body = std::move(body)](DLTensor** args, int32_t n) -> int32_t {
    try {
      body(args, n);
      return 0;
    } catch (const std::exception& e) {
      loom_set_last_error(e.what());
      return -1;
    }
  });
}

int32_t PackedFunc::call_status(std::vector<DLTensor*> args) const {
  if (!defined()) {
    loom_set_last_error(fmt::format("calling an undefined PackedFunc '{}'", name_).c_str());
    return LOOM_ERR_ARGUMENT;
  }
  return raw_(args.data(), int32_t(args.size()));
}

void ModuleNode::export_library(const std::string& path) {
  fail("module of type {} cannot be exported (to {})", type_key(), path);
}

void ModuleNode::export_object(const std::string& path) {
  fail("module of type {} cannot be exported as an object file (to {})", type_key(), path);
}

PackedFunc Module::get_function(const std::string& name) const {
  LOOM_CHECK(defined(), "get_function('{}') on an undefined Module", name);
  PackedFunc f = node_->get_function(name);
  if (!f.defined())
    fail("module of type {} has no function '{}' (available: {})", node_->type_key(), name,
         fmt::join(node_->function_names(), ", "));
  return f;
}

Module Module::load(const std::string& path) { return Module(load_dso_module(path)); }

}  // namespace loom::runtime
