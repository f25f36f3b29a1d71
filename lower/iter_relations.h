// Moving ranges and index values across a stage's split/fuse/rebase relations.
#pragma once
#include <unordered_map>

#include "loom/lower/passes.h"

namespace loom::lowering {

using IterValueMap = std::unordered_map<const te::IterVarNode*, Expr>;

/// Fills `bounds` for every non-root iteration variable of `stage` from its roots' ranges.
void pass_down_domain(const schedule::StageNode& stage, BoundMap* bounds);

/// Given values for the leaf variables, the value of every iteration variable (roots
/// included) as an expression of the leaves.
IterValueMap pass_up_index(const schedule::StageNode& stage, const BoundMap& bounds, IterValueMap values);

/// Extent of an iteration variable's inferred range; LOOM_ICHECK that it is known.
Expr extent_of(const BoundMap& bounds, const te::IterVar& iv);

}  // namespace loom::lowering
