// Scaled dot-product attention: softmax(Q·Kᵀ·scale + bias) · V per batch and head, as the
// unfused chain of te stages (the reference that te::evaluate and constant folding run;
// the attention templates compute it in one kernel).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// How an attention reads its inputs and masks its scores (the registry's attributes).
struct AttentionAttrs {
  /// 0: Q, K, V are 4-D [batch, heads, seq, head_dim]. Otherwise they are 3-D
  /// [batch, seq, heads * head_dim] (as projections produce them) and this is Q's heads.
  int64_t num_heads = 0;
  /// The heads of 3-D K and V (0: num_heads); Q's heads must be a multiple of it (grouped
  /// queries: head h reads key/value head h / (num_heads / kv_num_heads)).
  int64_t kv_num_heads = 0;
  /// Multiplies Q·Kᵀ; 0 means 1/sqrt(head_dim).
  double scale = 0;
  /// Query i attends key j only when j <= i + causal_offset.
  bool causal = false;
  int64_t causal_offset = 0;
};

/// The sizes of one attention call, from its inputs' shapes and attributes.
struct AttentionDims {
  int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0, v_head_dim = 0;
  bool packed = false;             // 3-D [batch, seq, heads * head_dim] inputs and output
  std::vector<int64_t> bias;       // the bias's shape as given (empty: no bias)
  double scale = 0;                // resolved (never 0)
  /// The output's shape: [batch, heads, seq_q, v_head_dim], or [batch, seq_q, heads * v_head_dim] packed.
  std::vector<int64_t> output_shape() const;
  /// Multiply-adds of Q·Kᵀ and of P·V, times two.
  double flop() const;
};

/// Checks the shapes of q, k, v and bias (undefined: none) against `a`, naming `op` and what
/// does not fit: equal batch; 4-D inputs, or 3-D ones whose last dim splits into the heads;
/// K's head_dim Q's; V's heads and sequence K's; Q's heads a multiple of K's; a bias of at
/// most 4 dims broadcasting (numpy rules, aligned right) to [batch, heads, seq_q, seq_kv];
/// float types alike.
AttentionDims attention_dims(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                             const std::vector<int64_t>& v, const std::vector<int64_t>* bias, const AttentionAttrs& a,
                             const std::string& op = "attention");

/// An attention as the "attention" templates' workloads describe it: shape [batch, heads,
/// seq_q, seq_kv, head_dim] and string attributes packed ("1": 3-D inputs), kv_heads,
/// v_head_dim (when they differ from heads and head_dim), bias (its shape, "1,1,1,128"),
/// causal, causal_offset and scale (resolved).
struct AttentionWorkload {
  std::vector<int64_t> shape;
  std::map<std::string, std::string> attrs;
};
AttentionWorkload attention_workload(const AttentionDims& d, const AttentionAttrs& a);
/// The dims and attributes of a workload's shape and attributes; throws loom::Error naming
/// `op` and the attribute or size that is wrong.
AttentionDims parse_attention_workload(const std::vector<int64_t>& shape,
                                       const std::map<std::string, std::string>& attrs, AttentionAttrs* out,
                                       const std::string& op = "attention");

/// softmax(Q·Kᵀ·scale + bias, masked causally) · V, a query row whose every key is masked
/// (-inf) giving zeros. Stages, each tagged with its name: "attention_scores" (Q·Kᵀ,
/// sum-reduce), "attention_logits" (scaled, biased, masked), "attention_max" (max-reduce),
/// "attention_exp" (exp of logits minus the row max, clamped to the lowest finite value),
/// "attention_sum" (sum-reduce), "attention_context" (Σ exp·V, sum-reduce), then the output
/// (the context over the row sum, at least 1, in the output's layout; tag "attention"):
/// the softmax's division comes after the second product, which is the same value.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, const AttentionAttrs& a,
                 const std::string& name = "attention");

}  // namespace loom::te::ops
