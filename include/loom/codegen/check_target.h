// Validation of a Target against the code generators, before anything is compiled for it.
#pragma once
#include "loom/runtime/target.h"

namespace loom::codegen {

/// Throws loom::Error, naming what is wrong and where the valid choices are listed, unless
/// `target` has a code generator that knows its CPU (-mcpu), features (-mattr) and triple.
/// build() calls it; tools call it to reject a bad --target before any other work.
void check_target(const Target& target);

}  // namespace loom::codegen
