// Validation of a Target against the code generators, before anything is compiled for it.
#pragma once
#include <string>

#include "loom/runtime/target.h"

namespace loom::codegen {

/// Throws loom::Error, naming what is wrong and where the valid choices are listed, unless
/// `target` has a code generator that knows its CPU (-mcpu), features (-mattr) and triple.
/// build() calls it; tools call it to reject a bad --target before any other work.
void check_target(const Target& target);

/// This machine's CPU as LLVM sees it, which is what an "llvm" target without -mcpu compiles for.
struct HostCpu {
  std::string name;      // LLVM's CPU name, e.g. "skylake-avx512", "znver3"
  std::string features;  // the features it has, sorted: "+adx,+aes,+avx,…"
};
HostCpu host_cpu();

/// Why code for `target` cannot run on this machine ("" if it can): another triple, or a CPU
/// feature (from -mcpu/-mattr) that this machine lacks. For "llvm" targets.
std::string host_incompatibility(const Target& target);

}  // namespace loom::codegen
