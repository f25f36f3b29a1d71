// log_softmax and hardmax: softmax's relatives along one axis (ONNX's LogSoftmax and Hardmax).
#pragma once
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// x - max - log(sum(exp(x - max))) along `axis` (negative counts from the end), floating
/// point. Stages "log_softmax_maxelem" (max-reduce) and "log_softmax_expsum" (sum-reduce),
/// which drop `axis`, then the output (tag "log_softmax").
Tensor log_softmax(const Tensor& x, int axis = -1, const std::string& name = "log_softmax");

/// 1 where x holds the first maximum along `axis`, else 0 (x's dtype). Stages
/// "hardmax_maxelem" (max-reduce) and "hardmax_first" (the index of the first maximum,
/// min-reduce, int32), which drop `axis`, then the output (tag "hardmax").
Tensor hardmax(const Tensor& x, int axis = -1, const std::string& name = "hardmax");

}  // namespace loom::te::ops
