// Entry point of the LLVM CPU backend, free of LLVM headers so that codegen/build.cc can
// call it.
#pragma once
#include <vector>

#include "loom/lower/lower.h"
#include "loom/runtime/module.h"
#include "loom/runtime/target.h"

namespace loom::codegen {

/// Compiles packed lowered functions for a CPU target and JIT-links them into a module (an
/// empty list gives a module without functions: a graph whose operators all folded away).
runtime::Module build_llvm(const std::vector<lowering::LoweredFunc>& funcs, const Target& target);

/// Throws loom::Error unless LLVM knows the target's triple, CPU and -mattr features.
void check_llvm_target(const Target& target);

}  // namespace loom::codegen
