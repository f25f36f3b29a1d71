// build(): lowered functions to a runnable Module for a target.
#pragma once
#include <string>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"

namespace loom::codegen {

/// Lowers and compiles one schedule into a module with one function, `name`.
runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
                      const std::string& name);
/// The same with lowering options (opts.target is the target).
runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                      const lowering::LowerOptions& opts);
/// Compiles several lowered (packed) functions into one module.
runtime::Module build(const std::vector<lowering::LoweredFunc>& funcs, const Target& target);

}  // namespace loom::codegen
