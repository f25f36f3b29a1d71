// build(): lowered functions to a runnable Module for a target.
#pragma once
#include <string>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"

namespace loom::codegen {

/// Why `name` cannot be the name of a function an exported library (export_library) defines,
/// or "" when it can: it must be a C identifier, not a C keyword, not `main`, and outside the
/// names loom's runtime and the library's own symbols take (`loom_*`, `__*`, `_` and a capital
/// letter, which C reserves) and the C library functions that the runtime and compiled code
/// call (a library defining `memcpy` or `expf` would call itself).
std::string export_name_problem(const std::string& name);

/// Lowers and compiles one schedule into a module with one function, `name`.
runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
                      const std::string& name);
/// The same with lowering options (opts.target is the target).
runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                      const lowering::LowerOptions& opts);
/// Compiles several lowered (packed) functions into one module.
runtime::Module build(const std::vector<lowering::LoweredFunc>& funcs, const Target& target);

}  // namespace loom::codegen
