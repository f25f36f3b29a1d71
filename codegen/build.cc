// build(): lowered functions to a runnable Module, dispatched on the target kind.
#include "loom/codegen/build.h"

#include "llvm/build_llvm.h"
#include "loom/codegen/cuda.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

runtime::Module build(const std::vector<lowering::LoweredFunc>& funcs, const Target& target) {
  if (target.is_cuda()) return build_cuda(funcs, target);
  LOOM_CHECK(target.is_cpu(), "build: target \"{}\" has no code generator", target.str());
  for (const auto& f : funcs)
    LOOM_CHECK(f.body.defined(), "build: function '{}' has no body", f.name);
  return build_llvm(funcs, target);
}

runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
                      const std::string& name) {
  lowering::LowerOptions opts;
  opts.target = target;
  return build({lowering::lower(s, args, name, opts)}, target);
}

}  // namespace loom::codegen
