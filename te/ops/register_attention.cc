// Registry entry of attention: softmax(Q·Kᵀ·scale + bias) · V, one kernel per call with the
// "attention" templates, the unfused chain (te/ops/attention.cc) as its computation.
#include "loom/te/ops/attention.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

using Types = std::vector<TensorType>;

AttentionAttrs attention_attrs(const Attrs& a) {
  AttentionAttrs r;
  r.num_heads = attr_int(a, "num_heads");
  r.kv_num_heads = attr_int(a, "kv_num_heads");
  r.scale = attr_float(a, "scale");
  r.causal = attr_int(a, "causal") != 0;
  r.causal_offset = attr_int(a, "causal_offset");
  return r;
}

/// The "attention" templates' workload (te::ops::AttentionWorkload).
std::optional<TemplateCall> attention_call(const Types& in, const Attrs& a) {
  for (const TensorType& t : in)
    if (!is_f32(t)) return std::nullopt;
  const AttentionAttrs attrs = attention_attrs(a);
  const AttentionDims d =
      attention_dims(in[0].shape, in[1].shape, in[2].shape, in.size() > 3 ? &in[3].shape : nullptr, attrs);
  AttentionWorkload w = attention_workload(d, attrs);
  return TemplateCall{"attention", w.shape, "float32", w.attrs};
}

}  // namespace

std::vector<OpDef> attention_ops() {
  OpDef d;
  d.name = "attention";
  d.doc = "softmax(query·keyᵀ·scale + bias, causally masked) · value per batch and head";
  d.inputs = {"query", "key", "value", "bias"};
  d.min_inputs = 3;
  d.attrs = {
      attr("num_heads", AttrKind::kInt, int64_t(0),
           "0: 4-D [batch, heads, seq, head_dim] inputs; else 3-D [batch, seq, heads * head_dim], these the query's heads"),
      attr("kv_num_heads", AttrKind::kInt, int64_t(0), "3-D key and value: their heads (0: num_heads)"),
      attr("scale", AttrKind::kFloat, 0.0, "multiplies query·keyᵀ (0: 1/sqrt(head_dim))"),
      attr("causal", AttrKind::kInt, int64_t(0), "1: query i attends key j only when j <= i + causal_offset"),
      attr("causal_offset", AttrKind::kInt, int64_t(0), "the causal frontier's offset (the past keys' length)"),
  };
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {attention(in[0], in[1], in[2], in.size() > 3 ? in[3] : Tensor(), attention_attrs(a), "attention")};
  };
  d.infer_type = [](const Types& in, const Attrs& a) -> Types {
    const AttentionDims dims = attention_dims(in[0].shape, in[1].shape, in[2].shape,
                                              in.size() > 3 ? &in[3].shape : nullptr, attention_attrs(a));
    for (size_t i = 1; i < in.size(); ++i)
      LOOM_CHECK(in[i].dtype == in[0].dtype, "attention: input {} is {}, the query {}", i, in[i].dtype.str(),
                 in[0].dtype.str());
    LOOM_CHECK(in[0].dtype.is_float(), "attention: the query is {}; attention takes floating-point inputs",
               in[0].dtype.str());
    return {TensorType{dims.output_shape(), in[0].dtype, ""}};
  };
  d.strategy["llvm"] = attention_call;
  d.strategy["cuda"] = attention_call;
  return {std::move(d)};
}

}  // namespace loom::te::ops::detail
