// Loop IR → LLVM IR for CPUs.
#pragma once
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/lower/vector_access.h"

namespace loom::codegen {

/// Stack allocations up to this many bytes go in the entry block; larger or dynamically
/// sized ones use loom_workspace_alloc.
inline constexpr uint64_t kMaxStackAllocBytes = 64 * 1024;

/// How vector loads and stores are emitted is decided by lower/vector_access.h (shared with
/// the vectorization report).
using lowering::kMaxDenseLoadStride;

/// Emits, for every function f, `int32_t f(DLTensor*...)` and the packed entry
/// `int32_t __loom_packed_f(DLTensor** args, int32_t num_args)`, plus one outlined task
/// function per parallel loop. The module is unoptimized, for `tm`'s triple and layout;
/// `target` (which `tm` was made for) decides the vector math (vector_math.h).
std::unique_ptr<llvm::Module> emit_llvm_module(const std::vector<lowering::LoweredFunc>& funcs, llvm::LLVMContext& ctx,
                                               llvm::TargetMachine* tm, const Target& target);

/// Name of the packed entry of function `name`.
std::string packed_name(const std::string& name);

}  // namespace loom::codegen
