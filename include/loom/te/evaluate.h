// te::evaluate: the reference evaluator. Slow, direct and obviously correct; every
// compiled schedule is tested against it.
#pragma once
#include <map>
#include <vector>

#include "loom/runtime/ndarray.h"
#include "loom/te/tensor.h"

namespace loom::te {

/// Computes `outputs` from `inputs` (one array per placeholder reached). Arithmetic is
/// done in double for floats and int64 for integers; the result of each float operation
/// (+ - * /, a math call) is rounded to its type, as integers wrap to theirs, and reductions
/// accumulate in double, so results round like a compiled kernel would.
std::vector<runtime::NDArray> evaluate(const std::vector<Tensor>& outputs,
                                       const std::map<Tensor, runtime::NDArray>& inputs);

}  // namespace loom::te
