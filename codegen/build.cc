// build(): lowered functions to a runnable Module, dispatched on the target kind.
#include "loom/codegen/build.h"

#include "llvm/build_llvm.h"
#include "loom/codegen/check_target.h"
#include "loom/codegen/cuda.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

runtime::Module build(const std::vector<lowering::LoweredFunc>& funcs, const Target& target) {
  if (target.is_cuda()) return build_cuda(funcs, target);
  LOOM_CHECK(target.is_cpu(), "build: target \"{}\" has no code generator", target.str());
  LOOM_CHECK(!funcs.empty(), "build: no functions to compile for target \"{}\"", target.str());
  for (const auto& f : funcs)
    LOOM_CHECK(f.body.defined(), "build: function '{}' has no body", f.name);
  return build_llvm(funcs, target);
}

void check_target(const Target& target) {
  if (target.is_cpu()) check_llvm_target(target);
  else LOOM_CHECK(target.is_cuda(), "target \"{}\" has no code generator", target.str());
}

runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
                      const std::string& name) {
  lowering::LowerOptions opts;
  opts.target = target;
  return build(s, args, name, opts);
}

runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                      const lowering::LowerOptions& opts) {
  check_target(opts.target);
  return build({lowering::lower(s, args, name, opts)}, opts.target);
}

}  // namespace loom::codegen
