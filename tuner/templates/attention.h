// What the "attention" templates (CPU: attention_cpu.cc, CUDA: attention_cuda.cc) share: the
// workload they are tuned as and the extern operation they schedule (private to the tuner).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "loom/lower/ir_builder.h"
#include "loom/te/ops/attention.h"
#include "templates.h"

namespace loom::tuner::tmpl {

/// An attention workload (te::ops::AttentionWorkload: shape [batch, heads, seq_q, seq_kv,
/// head_dim] and attributes packed, kv_heads, v_head_dim, bias, causal, causal_offset, scale,
/// as the registry's strategy writes them), parsed.
struct AttentionSpec {
  te::ops::AttentionDims dims;
  te::ops::AttentionAttrs attrs;
  bool causal() const { return attrs.causal; }
};

/// Parses and checks `w` (loom::Error naming the attribute or size that is wrong).
AttentionSpec attention_workload(const records::Workload& w);

/// Placeholders query, key, value and (with a bias) bias, in the shapes the workload reads.
std::vector<te::Tensor> attention_inputs(const AttentionSpec& a);

/// The computation of workload `w`: the inputs, then te::extern_op "attention" whose body is
/// `body` (built with `params`, its tunable parameters and defaults) and whose reference is
/// te::ops::attention, the unfused chain.
std::vector<te::Tensor> attention_computation(const records::Workload& w, lowering::LoopBodyBuilder body,
                                              const std::string& body_name, std::map<std::string, int64_t> params);

/// The workload of the template's output `out` (its extern operation carries it).
AttentionSpec attention_workload_of(const te::Tensor& out);

/// A schedule of the computation's output `out` with the extern body's parameters `params`
/// (the templates' knob values).
schedule::Schedule attention_schedule(const te::Tensor& out, const std::map<std::string, int64_t>& params);

/// What both templates share: name, workload check and flop count.
Template attention_template_base();

/// int32 and float32 constants, as the kernels' loop IR writes them.
inline te::Expr c32(int64_t v) { return te::make_const(DataType::Int(32), v); }
inline te::Expr f32(double v) { return te::make_const(DataType::Float(32), v); }

/// Element (b, h, i, x) of the [batch, heads, seq, dim] view of `t` (packed or not).
te::Expr attention_at(const AttentionSpec& a, const te::Tensor& t, int64_t dim, te::Expr b, te::Expr h, te::Expr i,
                      te::Expr x);
/// The bias's element for query i and key j of (b, h), its size-1 dims broadcast; undefined
/// without a bias.
te::Expr attention_bias(const AttentionSpec& a, const te::Tensor& bias, te::Expr b, te::Expr h, te::Expr i,
                        te::Expr j);

}  // namespace loom::tuner::tmpl
