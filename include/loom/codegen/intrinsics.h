// What the code generators know of intrinsics and CPU features, for checks and templates.
#pragma once
#include <string>
#include <vector>

#include "loom/runtime/target.h"

namespace loom::codegen {

/// Names of the intrinsics the LLVM CPU code generator lowers (its table, intrinsics_llvm.cc).
std::vector<std::string> llvm_lowered_intrinsics();
/// Names of the intrinsics the CUDA C code generator lowers (intrinsics_cuda.cc).
std::vector<std::string> cuda_lowered_intrinsics();
/// True if code for `target` (an llvm target) may use CPU feature `feature`, as LLVM names
/// it ("avx512vnni", "avx2"): the host's features for a host target without -mcpu, else
/// those of its -mcpu and -mattr.
bool target_has_feature(const Target& target, const std::string& feature);

}  // namespace loom::codegen
