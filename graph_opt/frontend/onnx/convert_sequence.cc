// Converters of ONNX's stateful sequence operators of recurrent language models:
// CausalConvWithState (a depthwise 1-D convolution over the past state and the input, with
// an optional SiLU, and the last k−1 positions as the new state) and LinearAttention (the
// linear, gated, delta and gated-delta state recurrences, unrolled over the static sequence
// length, in float32 as ONNX's reference accumulates).
#include <cmath>

#include "convert_window.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

Value as_type(Importer& im, Value v, DataType t) {
  return im.type(v).dtype == t ? v : im.op("cast", {v}, {{"dtype", t.str()}});
}

/// Position `i` of dim `axis` (kept, of extent 1).
Value at(Importer& im, Value v, int64_t axis, int64_t i) {
  runtime::NDArray idx = runtime::NDArray::from_vector({double(i)}, {1}, DataType::Int(64));
  return im.op("take", {v, im.constant(idx, "step")}, {{"axis", axis}});
}

/// CausalConvWithState: input [B, C, L], weight [C, 1, k], bias [C], past_state [B, C, k−1].
void causal_conv_with_state(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0), ws = im.input_shape(1);
  if (xs.size() != 3 || ws.size() != 3 || ws[0] != xs[1] || ws[1] != 1)
    im.invalid(fmt::format("input {} must be [B, C, L] and weight {} [C, 1, k]", shape_str(xs), shape_str(ws)));
  const DataType t = im.input_dtype(0);
  if (!t.is_float()) im.invalid("input must be floating point, got " + t.str());
  const std::string act = im.attr_str("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") im.invalid("activation '" + act + "' is not none, silu or swish");
  const int64_t B = xs[0], C = xs[1], k = ws[2];
  Value padded = im.input(0);
  if (k > 1) {
    Value past;
    if (im.has_input(3)) {
      if (im.input_shape(3) != std::vector<int64_t>{B, C, k - 1})
        im.invalid(fmt::format("past_state {} must be [{}, {}, {}]", shape_str(im.input_shape(3)), B, C, k - 1));
      past = as_type(im, im.input(3), t);
    } else {
      past = im.constant(runtime::NDArray::from_vector(std::vector<double>(size_t(B * C * (k - 1)), 0.0), {B, C, k - 1}, t),
                         "past_state");
    }
    padded = im.op("concat", {past, padded}, {{"axis", int64_t(2)}});
  }
  std::optional<Value> bias;
  if (im.has_input(2)) {
    if (im.input_shape(2) != std::vector<int64_t>{C})
      im.invalid(fmt::format("bias {} must be [{}]", shape_str(im.input_shape(2)), C));
    bias = im.input(2);
  }
  Window win{{k}, {1}, {1}, {0, 0}};
  Value y = emit_conv(im, padded, im.input(1), bias, win, C);
  if (act != "none") {
    Value f = as_type(im, y, DataType::Float(32));
    y = as_type(im, im.op("multiply", {f, im.op("sigmoid", {f})}), t);
  }
  im.set_output(0, y);
  if (!im.output_used(1)) return;
  if (k == 1) return im.set_empty_output(1, runtime::NDArray::empty({B, C, 0}, t));
  const int64_t len = im.type(padded).shape[2];
  std::vector<double> idx;
  for (int64_t i = len - (k - 1); i < len; ++i) idx.push_back(double(i));
  im.set_output(1, im.op("take", {padded, im.constant(runtime::NDArray::from_vector(idx, {k - 1}, DataType::Int(64)), "state")},
                         {{"axis", int64_t(2)}}));
}

/// LinearAttention: query [B, T, Hq·dk], key [B, T, Hkv·dk], value [B, T, Hkv·dv],
/// past_state [B, Hkv, dk, dv], decay [B, T, Hkv or Hkv·dk], beta [B, T, Hkv or 1]. Per step t
/// and kv head: S ← S·exp(g_t) (gated), v_t ← β_t(v_t − Sᵀk_t) (delta), S ← S + k_t v_tᵀ, and
/// each of its query heads reads scale·qᵀS.
void linear_attention(Importer& im) {
  const std::vector<int64_t> qs = im.input_shape(0), ks = im.input_shape(1), vs = im.input_shape(2);
  const int64_t hq = im.attr_int("q_num_heads"), hkv = im.attr_int("kv_num_heads");
  if (hq < 1 || hkv < 1 || hq % hkv)
    im.invalid(fmt::format("q_num_heads {} must be a positive multiple of kv_num_heads {}", hq, hkv));
  if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3 || ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] ||
      vs[1] != qs[1] || qs[2] % hq || ks[2] % hkv || vs[2] % hkv || qs[2] / hq != ks[2] / hkv)
    im.invalid(fmt::format("query {}, key {} and value {} must be [B, T, heads·dim] with one dk for {} query and {} "
                           "kv heads", shape_str(qs), shape_str(ks), shape_str(vs), hq, hkv));
  const DataType out_t = im.input_dtype(0), f32 = DataType::Float(32);
  if (!out_t.is_float()) im.invalid("query must be floating point, got " + out_t.str());
  const std::string rule = im.attr_str("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    im.invalid("update_rule '" + rule + "' is not linear, gated, delta or gated_delta");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gated != im.has_input(4)) im.invalid(fmt::format("update_rule '{}' {} the decay input", rule, gated ? "needs" : "forbids"));
  if (delta != im.has_input(5)) im.invalid(fmt::format("update_rule '{}' {} the beta input", rule, delta ? "needs" : "forbids"));
  if (im.has_attr("chunk_size")) im.attr_int("chunk_size");  // a tuning hint; the result does not depend on it
  const int64_t B = qs[0], T = qs[1], dk = qs[2] / hq, dv = vs[2] / hkv, group = hq / hkv, BH = B * hkv;
  double scale = im.attr_float("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(dk));
  int64_t decay_width = 0, beta_width = 0;
  if (gated) {
    const std::vector<int64_t> ds = im.input_shape(4);
    if (ds.size() != 3 || ds[0] != B || ds[1] != T || (ds[2] != hkv && ds[2] != hkv * dk))
      im.invalid(fmt::format("decay {} must be [{}, {}, {} or {}]", shape_str(ds), B, T, hkv, hkv * dk));
    decay_width = ds[2] / hkv;
  }
  if (delta) {
    const std::vector<int64_t> bs = im.input_shape(5);
    if (bs.size() != 3 || bs[0] != B || bs[1] != T || (bs[2] != hkv && bs[2] != 1))
      im.invalid(fmt::format("beta {} must be [{}, {}, {} or 1]", shape_str(bs), B, T, hkv));
    beta_width = bs[2];
  }
  Value q = as_type(im, im.input(0), f32), key = as_type(im, im.input(1), f32), value = as_type(im, im.input(2), f32);
  Value state;
  DataType state_t = out_t;
  if (im.has_input(3)) {
    if (im.input_shape(3) != std::vector<int64_t>{B, hkv, dk, dv})
      im.invalid(fmt::format("past_state {} must be [{}, {}, {}, {}]", shape_str(im.input_shape(3)), B, hkv, dk, dv));
    state_t = im.input_dtype(3);
    state = im.reshape(as_type(im, im.input(3), f32), {BH, dk, dv});
  } else {
    state = im.constant(runtime::NDArray::from_vector(std::vector<double>(size_t(BH * dk * dv), 0.0), {BH, dk, dv}, f32),
                        "state");
  }
  std::vector<Value> outputs;
  for (int64_t i = 0; i < T; ++i) {
    Value k_t = im.reshape(at(im, key, 1, i), {BH, 1, dk});
    Value v_t = im.reshape(at(im, value, 1, i), {BH, 1, dv});
    if (gated) {
      Value g = im.reshape(at(im, as_type(im, im.input(4), f32), 1, i), {BH, decay_width, 1});
      state = im.op("multiply", {state, im.op("exp", {g})});
    }
    if (delta) {
      Value retrieved = im.op("batch_matmul", {k_t, state});
      Value beta = im.reshape(at(im, as_type(im, im.input(5), f32), 1, i), {B, beta_width, 1, 1});
      Value diff = im.reshape(im.op("subtract", {v_t, retrieved}), {B, hkv, 1, dv});
      v_t = im.reshape(im.op("multiply", {beta, diff}), {BH, 1, dv});
    }
    state = im.op("add", {state, im.op("multiply", {im.reshape(k_t, {BH, dk, 1}), v_t})});
    Value q_t = im.reshape(at(im, q, 1, i), {BH, group, dk});
    Value o = im.op("batch_matmul", {q_t, state});
    o = im.op("multiply", {o, im.scalar(scale, f32, 3, "scale")});
    outputs.push_back(im.reshape(o, {B, 1, hq * dv}));
  }
  Value out = outputs.size() == 1 ? outputs[0] : im.op("concat", outputs, {{"axis", int64_t(1)}});
  im.set_output(0, as_type(im, out, out_t));
  if (im.output_used(1)) im.set_output(1, as_type(im, im.reshape(state, {B, hkv, dk, dv}), state_t));
}

}  // namespace

void add_sequence_converters(std::map<std::string, Converter>& m) {
  m["CausalConvWithState"] = causal_conv_with_state;
  m["LinearAttention"] = linear_attention;
}

}  // namespace loom::graph_opt::onnx_frontend
