// LLVM target set-up: one-time initialization and cached TargetMachines per loom Target.
#pragma once
#include <llvm/Target/TargetMachine.h>

#include <string>

#include "loom/runtime/target.h"

namespace loom::codegen {

/// Initializes LLVM's targets once per process (thread-safe).
void init_llvm();

/// The TargetMachine for `target`, created once per thread and target string and reused
/// across builds. Owned by the cache; valid for the life of the calling thread.
llvm::TargetMachine* get_target_machine(const Target& target);

/// True if `target` names this process's architecture and OS.
bool runs_on_host(const Target& target);

/// Why code for `target` cannot run in this process ("" if it can): another triple, or a
/// CPU feature (from -mcpu/-mattr) that this host lacks.
std::string host_incompatibility(const Target& target);

}  // namespace loom::codegen
