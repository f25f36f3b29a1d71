// The negative log-likelihood loss per element (ONNX's NegativeLogLikelihoodLoss and, after a
// log_softmax, SoftmaxCrossEntropyLoss), before any reduction.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// For input [N, C, d1, …, dk] (floating point), target [N, d1, …, dk] (integers) and an
/// optional weight [C] (input's type): per element of target, −input[n, c, d1, …, dk] ·
/// weight[c] with c = target[n, d1, …, dk] (clamped into [0, C)), and 0 where c equals
/// `ignore_index`. Output of target's shape and input's type (tag "injective").
Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                std::optional<int64_t> ignore_index, const std::string& name = "nll_loss");

/// The weight nll_loss applies to each element of target [N, d1, …, dk]: weight[c] (weight
/// [C] of type `dtype`; 1 without one), 0 where c equals `ignore_index`; what a mean reduction
/// divides by, summed. Output of target's shape and type `dtype` (floating point; tag "injective").
Tensor nll_loss_weight(const Tensor& target, const std::optional<Tensor>& weight, std::optional<int64_t> ignore_index,
                       DataType dtype, const std::string& name = "nll_loss_weight");

}  // namespace loom::te::ops
