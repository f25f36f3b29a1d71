// The O3 pipeline and machine-code emission for one LLVM module.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Target/TargetMachine.h>

#include <string>

#include "loom/runtime/target.h"

namespace loom::codegen {

/// Runs LLVM's default O3 module pipeline, tuned for `tm`, whose vectorizers may call the
/// vector math library of `target` (vector_math.h) for scalar libm calls in loops.
void optimize_module(llvm::Module& m, llvm::TargetMachine* tm, const Target& target);

/// Machine code for `m` (an object file, or assembly text) built by `tm`.
std::string emit_machine_code(llvm::Module& m, llvm::TargetMachine* tm, llvm::CodeGenFileType type);

/// The module as bitcode, and back.
std::string to_bitcode(const llvm::Module& m);
std::unique_ptr<llvm::Module> from_bitcode(const std::string& bitcode, llvm::LLVMContext& ctx);

}  // namespace loom::codegen
