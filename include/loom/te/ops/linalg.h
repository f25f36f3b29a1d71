// Linear algebra on batches of small matrices: the determinant (ONNX's Det).
#pragma once
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// The determinant of each square matrix of x [..., M, M] (floating point) -> [...] ([1] for
/// a 2-D x), by Gaussian elimination with partial pivoting: per column k, stages
/// "<name>_pivot_max_k" and "<name>_pivot_k" (max- and min-reductions: the first row at or
/// below k of largest magnitude), "<name>_swap_k", "<name>_sign_k" and "<name>_eliminate_k";
/// the output multiplies the diagonal and the sign (tag "det"). A singular matrix gives 0.
Tensor det(const Tensor& x, const std::string& name = "det");

/// The bits of each element of x as `dtype`, which has x's element width (int, uint and
/// float types of 8 to 64 bits; bool with an 8-bit type converts 0/1 values). Tag "elemwise".
Tensor bitcast(const Tensor& x, DataType dtype, const std::string& name = "bitcast");

}  // namespace loom::te::ops
