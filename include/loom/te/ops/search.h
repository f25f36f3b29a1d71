// Index-finding reductions: argmax, argmin and top-k along one axis.
#pragma once
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// The int64 index of the largest (argmax) or smallest (argmin) element along `axis`
/// (negative counts from the end): the first such index, or with `select_last_index` the
/// last. With `keepdims` the axis stays as extent 1, otherwise it is dropped (a 1-D x gives
/// shape [1]). Two stages: "<name>_extreme" (the max or min along the axis, tag "reduce") and
/// the index (tag "reduce").
Tensor argmax(const Tensor& x, int axis = 0, bool keepdims = true, bool select_last_index = false,
              const std::string& name = "argmax");
Tensor argmin(const Tensor& x, int axis = 0, bool keepdims = true, bool select_last_index = false,
              const std::string& name = "argmin");

/// The `k` largest (or, without `largest`, smallest) elements along `axis` and their int64
/// indices, both of x's shape with that axis k long, in order (largest first, or smallest
/// first); of equal elements the lower index comes first. 1 <= k <= the axis's extent.
/// Stages: "<name>_rank" (each element's position in that order: an O(n²) count along the
/// axis, tag "reduce"), "<name>_indices" (tag "reduce") and "<name>_values" (tag "injective").
/// Returns {values, indices}.
std::vector<Tensor> topk(const Tensor& x, int64_t k, int axis = -1, bool largest = true,
                         const std::string& name = "topk");

}  // namespace loom::te::ops
