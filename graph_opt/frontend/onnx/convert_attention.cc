// Converters of ONNX's attention operators: Attention (opsets 23 to 25) onto the registry's
// `attention` operator (one kernel), or, for what it does not cover (softcap, the qk output, a
// softmax precision of its own), as a chain of registry operators (batch_matmul, softmax,
// elementwise); RotaryEmbedding (23) as take, concat and elementwise operators; ai.onnx.preview's
// FlexAttention (1, its score_mod and prob_mod subgraphs imported inline) as that chain.
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// `v` restricted to `indices` along `axis` (a take with constant indices).
Value pick(Importer& im, Value v, int64_t axis, const std::vector<int64_t>& indices) {
  runtime::NDArray idx = runtime::NDArray::empty({int64_t(indices.size())}, DataType::Int(64));
  std::copy(indices.begin(), indices.end(), idx.data<int64_t>());
  return im.op("take", {v, im.constant(idx, "indices")}, {{"axis", axis}});
}

std::vector<int64_t> iota(int64_t begin, int64_t count, int64_t step = 1) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[size_t(i)] = begin + i * step;
  return v;
}

Value cast_to(Importer& im, Value v, DataType t) {
  return im.type(v).dtype == t ? v : im.op("cast", {v}, {{"dtype", t.str()}});
}

/// The largest finite value of float type `t`.
double max_finite(DataType t) {
  if (t.bits() == 16) return 65504.0;
  if (t.bits() == 32) return double(std::numeric_limits<float>::max());
  return std::numeric_limits<double>::max();
}

// ---------------------------------------------------------------- Attention

/// One attention in loom's 4-D form, past keys and values already concatenated.
struct AttentionInputs {
  Value q, k, v;              // [B, Hq, Sq, D], [B, Hkv, Skv, D], [B, Hkv, Skv, Dv]
  std::optional<Value> bias;  // additive (0 attends, -inf masks), broadcasting to [B, Hq, Sq, Skv]
  bool bias_may_mask_row = false;  // some query row of `bias` may be -inf throughout
};

struct AttentionParams {
  double scale = 1.0;    // multiplies Q·K^T
  double softcap = 0.0;  // > 0: softcap * tanh(logits / softcap) before the bias
  DataType softmax_dtype;
  int64_t qk_mode = 0;   // which logits qk_output returns (ONNX's qk_matmul_output_mode)
  bool want_qk = false;
  // FlexAttention's modifiers, applied in softmax_dtype to the logits before the softmax and
  // to the probabilities after it; and its product with V computed in softmax_dtype.
  std::function<Value(Value)> score_mod, prob_mod;
  bool pv_in_softmax_dtype = false;
};

struct AttentionResult {
  Value y;                     // [B, Hq, Sq, Dv]
  std::optional<Value> qk;     // [B, Hq, Sq, Skv], when want_qk
};

/// `kv` [B, Hkv, S, D] with each head repeated Hq / Hkv times in a row, as [B * Hq, S, D].
Value heads_for_queries(Importer& im, Value kv, int64_t hq) {
  const std::vector<int64_t> s = im.type(kv).shape;
  if (s[1] != hq) {
    std::vector<int64_t> idx(static_cast<size_t>(hq));
    for (int64_t h = 0; h < hq; ++h) idx[size_t(h)] = h / (hq / s[1]);
    kv = pick(im, kv, 1, idx);
  }
  return im.reshape(kv, {s[0] * hq, s[2], s[3]});
}

/// softmax along the last axis that gives 0 (not NaN) for a row that is -inf throughout:
/// the row maximum is clamped to the finite range and the sum kept at least 1 (a row with a
/// finite maximum sums to at least e^0).
Value masked_softmax(Importer& im, Value x) {
  const DataType t = im.type(x).dtype;
  const size_t rank = im.type(x).shape.size();
  const te::ops::Attrs last{{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(1)}};
  Value m = im.op("maximum", {im.op("reduce_max", {x}, last), im.scalar(-max_finite(t), t, rank, "lowest")});
  Value e = im.op("exp", {im.op("subtract", {x, m})});
  Value s = im.op("maximum", {im.op("reduce_sum", {e}, last), im.scalar(1.0, t, rank, "one")});
  return im.op("divide", {e, s});
}

/// Q·K^T scaled, softcapped, biased, softmaxed and applied to V (ONNX's Attention function
/// body), as registry operators. The seam a fused attention operator replaces.
AttentionResult attention_chain(Importer& im, const AttentionInputs& in, const AttentionParams& p) {
  const std::vector<int64_t> qs = im.type(in.q).shape, ks = im.type(in.k).shape, vs = im.type(in.v).shape;
  const int64_t b = qs[0], hq = qs[1], sq = qs[2], skv = ks[2];
  const DataType t = im.type(in.q).dtype;
  AttentionResult r;

  Value logits = im.op("batch_matmul", {im.reshape(in.q, {b * hq, sq, qs[3]}), heads_for_queries(im, in.k, hq)},
                       {{"transpose_b", int64_t(1)}});
  if (p.scale != 1.0) logits = im.op("multiply", {logits, im.scalar(p.scale, t, 3, "scale")});
  if (p.softcap > 0) {
    Value c = im.scalar(p.softcap, t, 3, "softcap");
    logits = im.op("multiply", {im.op("tanh", {im.op("divide", {logits, c})}), c});
  }
  logits = im.reshape(logits, {b, hq, sq, skv});
  if (p.want_qk && p.qk_mode <= 1) r.qk = logits;
  if (in.bias) logits = im.op("add", {logits, *in.bias});
  if (p.want_qk && p.qk_mode == 2) r.qk = logits;

  logits = cast_to(im, logits, p.softmax_dtype);
  if (p.score_mod) logits = p.score_mod(logits);
  Value probs = in.bias_may_mask_row
                    ? masked_softmax(im, logits)
                    : im.reshape(im.op("softmax", {im.reshape(logits, {b * hq * sq, skv})}, {{"axis", int64_t(-1)}}),
                                 {b, hq, sq, skv});
  if (p.prob_mod) probs = p.prob_mod(probs);
  if (p.want_qk && p.qk_mode == 3) r.qk = probs;
  if (r.qk) r.qk = cast_to(im, *r.qk, t);
  Value values = heads_for_queries(im, in.v, hq);
  if (p.pv_in_softmax_dtype) values = cast_to(im, values, p.softmax_dtype);
  else probs = cast_to(im, probs, t);

  Value y = im.op("batch_matmul", {im.reshape(probs, {b * hq, sq, skv}), values});
  r.y = cast_to(im, im.reshape(y, {b, hq, sq, vs[3]}), t);
  return r;
}

/// A constant [Sq, Skv] additive bias of the causal frontier and the sliding window, keys
/// offset by `offset` (the past length): 0 where query i may attend key j, -inf elsewhere.
runtime::NDArray structural_bias(int64_t sq, int64_t skv, int64_t offset, bool causal, int64_t left, int64_t right,
                                 DataType t) {
  runtime::NDArray a = runtime::NDArray::empty({sq, skv}, t);
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < skv; ++j) {
      const int64_t diff = i + offset - j;
      const bool ok = (!causal || diff >= 0) && (left < 0 || diff <= left) && (right < 0 || -diff <= right);
      a.set(i * skv + j, ok ? 0.0 : -kInf);
    }
  return a;
}

/// The additive bias of run-time key lengths `nonpad` [B] (the external cache of opset 24):
/// key j is valid below nonpad[b], and the causal frontier and window of query i sit at
/// offset nonpad[b] - Sq. Built from clipped integer differences (1 allowed, 0 not, exact in
/// floating point), multiplied, and mapped to 0 / -inf by log.
Value nonpad_bias(Importer& im, Value nonpad, int64_t b, int64_t sq, int64_t skv, bool causal, int64_t left,
                  int64_t right, DataType t) {
  Value n = im.reshape(cast_to(im, nonpad, t), {b, 1, 1, 1});
  auto allowed = [&](Value x) { return im.op("clip", {x}, {{"min", 0.0}, {"max", 1.0}}); };
  // c(i, j) -> a [1, 1, Sq, Skv] constant
  auto grid = [&](const std::function<double(int64_t, int64_t)>& c, const std::string& hint) {
    runtime::NDArray a = runtime::NDArray::empty({1, 1, sq, skv}, t);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < skv; ++j) a.set(i * skv + j, c(i, j));
    return im.constant(a, hint);
  };
  auto both = [&](Value a, Value c) { return im.op("multiply", {a, c}); };
  // j < n  <=>  n - j >= 1
  Value ok = allowed(im.op("subtract", {n, grid([](int64_t, int64_t j) { return double(j); }, "key_index")}));
  // j <= i + n - Sq  <=>  n + (i - j - Sq + 1) >= 1
  if (causal) {
    Value c = grid([&](int64_t i, int64_t j) { return double(i - j - sq + 1); }, "causal_frontier");
    ok = both(ok, allowed(im.op("add", {n, c})));
  }
  // i + n - Sq - j <= left  <=>  (left - i + j + Sq + 1) - n >= 1
  if (left >= 0) {
    Value c = grid([&](int64_t i, int64_t j) { return double(left - i + j + sq + 1); }, "left_window");
    ok = both(ok, allowed(im.op("subtract", {c, n})));
  }
  // j - (i + n - Sq) <= right  <=>  n + (right + i - j - Sq + 1) >= 1
  if (right >= 0) {
    Value c = grid([&](int64_t i, int64_t j) { return double(right + i - j - sq + 1); }, "right_window");
    ok = both(ok, allowed(im.op("add", {n, c})));
  }
  return im.op("log", {ok});
}

/// attn_mask as an additive bias of dtype `t` whose last dim is Skv: a boolean mask maps
/// true to 0 and false to -inf (log of the mask as 0/1), others are added as they are; a
/// mask shorter than Skv masks the keys past its end.
Value mask_bias(Importer& im, Value mask, int64_t skv, DataType t) {
  const std::vector<int64_t> s = im.type(mask).shape;
  if (s.empty() || s.size() > 4 || s.back() > skv)
    im.invalid(fmt::format("attn_mask {} does not broadcast to [batch, heads, q_sequence, {}]", shape_str(s), skv));
  const bool boolean = im.type(mask).dtype == DataType::Bool();
  Value m = cast_to(im, mask, t);
  if (boolean) m = im.op("log", {m});
  if (s.back() < skv) {
    std::vector<int64_t> pads(2 * s.size(), 0);
    pads.back() = skv - s.back();
    m = im.op("pad", {m}, {{"pads", pads}, {"pad_value", -kInf}});
  }
  return m;
}

/// Whether some row (last axis) of constant `a` is -inf throughout.
bool has_masked_row(const runtime::NDArray& a) {
  const int64_t n = a.shape().empty() ? 1 : a.shape().back();
  if (n == 0) return false;
  for (int64_t row = 0; row * n < a.numel(); ++row) {
    bool masked = true;
    for (int64_t j = 0; j < n && masked; ++j) masked = a.get(row * n + j) == -kInf;
    if (masked) return true;
  }
  return false;
}

/// Q, K or V as [B, heads, S, head_size]: a 3-D [B, S, heads * head_size] input split into heads.
Value to_heads(Importer& im, int i, int64_t heads, const char* what) {
  std::vector<int64_t> s = im.input_shape(i);
  if (s.size() == 4) return im.input(i);
  if (heads <= 0 || s[2] % heads)
    im.invalid(fmt::format("3-D {} {} does not split into {} heads ({} must be a positive divisor of its last dim)",
                           what, shape_str(s), heads, what[0] == 'Q' ? "q_num_heads" : "kv_num_heads"));
  Value v = im.reshape(im.input(i), {s[0], s[1], heads, s[2] / heads});
  return im.op("transpose", {v}, {{"axes", std::vector<int64_t>{0, 2, 1, 3}}});
}

void attention(Importer& im) {
  const std::vector<int64_t> q0 = im.input_shape(0), k0 = im.input_shape(1), v0 = im.input_shape(2);
  const size_t rank = q0.size();
  if ((rank != 3 && rank != 4) || k0.size() != rank || v0.size() != rank)
    im.invalid(
        fmt::format("Q {}, K {} and V {} must all be 3-D or all 4-D", shape_str(q0), shape_str(k0), shape_str(v0)));
  const DataType t = im.input_dtype(0);
  if (im.input_dtype(1) != t || im.input_dtype(2) != t)
    im.unsupported(fmt::format("Q, K and V of different element types ({}, {}, {})", t.str(), im.input_dtype(1).str(),
                               im.input_dtype(2).str()));
  if (t.code() != DataType::kFloat) im.invalid(fmt::format("Q is {}; Attention takes floating-point inputs", t.str()));

  const bool has_heads = im.has_attr("q_num_heads") || im.has_attr("kv_num_heads");
  int64_t hq = im.attr_int("q_num_heads", 0), hkv = im.attr_int("kv_num_heads", 0);
  if (rank == 4) {
    if (has_heads && im.opset() >= 25) im.invalid("q_num_heads and kv_num_heads are given for 4-D inputs");
    if ((hq && hq != q0[1]) || (hkv && hkv != k0[1]))
      im.invalid(fmt::format("q_num_heads {} and kv_num_heads {} disagree with Q {} and K {}", hq, hkv, shape_str(q0),
                             shape_str(k0)));
  }
  Value q = to_heads(im, 0, hq, "Q"), k = to_heads(im, 1, hkv, "K"), v = to_heads(im, 2, hkv, "V");
  const std::vector<int64_t> qs = im.type(q).shape, vs = im.type(v).shape;
  std::vector<int64_t> ks = im.type(k).shape;
  hq = qs[1];
  hkv = ks[1];
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[3] != qs[3] || vs[1] != hkv || vs[2] != ks[2] || hq % hkv)
    im.invalid(fmt::format("Q {}, K {} and V {} (as [batch, heads, sequence, head_size]) do not fit together: equal "
                           "batch, K's head size Q's, V's heads and sequence K's, Q's heads a multiple of K's",
                           shape_str(qs), shape_str(ks), shape_str(vs)));

  // The key-value cache.
  const bool past = im.has_input(4) || im.has_input(5);
  int64_t past_len = 0;
  if (past) {
    if (!im.has_input(4) || !im.has_input(5)) im.invalid("past_key and past_value must be given together");
    const std::vector<int64_t> pk = im.input_shape(4), pv = im.input_shape(5);
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != ks[0] || pk[1] != hkv || pk[3] != ks[3] || pv[0] != vs[0] ||
        pv[1] != hkv || pv[3] != vs[3] || pv[2] != pk[2])
      im.invalid(fmt::format("past_key {} and past_value {} do not fit K {} and V {}", shape_str(pk), shape_str(pv),
                             shape_str(ks), shape_str(vs)));
    past_len = pk[2];
    k = im.op("concat", {cast_to(im, im.input(4), t), k}, {{"axis", int64_t(2)}});
    v = im.op("concat", {cast_to(im, im.input(5), t), v}, {{"axis", int64_t(2)}});
    ks = im.type(k).shape;
  }
  if (im.output_used(1)) im.set_output(1, k);
  if (im.output_used(2)) im.set_output(2, v);

  // The additive bias: attn_mask, the causal frontier, the sliding window, the valid key lengths.
  const int64_t b = qs[0], sq = qs[2], skv = ks[2];
  const bool causal = im.attr_int("is_causal", 0) != 0;
  const int64_t left = im.opset() >= 25 ? im.attr_int("left_window_size", -1) : -1;
  const int64_t right = im.opset() >= 25 ? im.attr_int("right_window_size", -1) : -1;
  if (left < -1 || right < -1)
    im.invalid(fmt::format("left_window_size {} and right_window_size {} must be -1 or nonnegative", left, right));
  const bool nonpad = im.has_input(6);
  if (nonpad) {
    if (past) im.invalid("nonpad_kv_seqlen cannot be combined with past_key and past_value");
    if (im.input_shape(6) != std::vector<int64_t>{b})
      im.invalid(fmt::format("nonpad_kv_seqlen {} is not [batch] = [{}]", shape_str(im.input_shape(6)), b));
  }
  AttentionParams p;
  p.scale = im.has_attr("scale") ? im.attr_float("scale") : 1.0 / std::sqrt(double(qs[3]));
  p.softcap = im.attr_float("softcap", 0.0);
  if (p.softcap < 0) im.invalid(fmt::format("softcap {} is negative", p.softcap));
  p.softmax_dtype = im.has_attr("softmax_precision")
                        ? to_dtype(int(im.attr_int("softmax_precision")), im.where() + ": softmax_precision")
                        : t;
  if (p.softmax_dtype.code() != DataType::kFloat)
    im.invalid(fmt::format("softmax_precision is {}, not a floating-point type", p.softmax_dtype.str()));
  p.qk_mode = im.attr_int("qk_matmul_output_mode", 0);
  if (p.qk_mode < 0 || p.qk_mode > 3)
    im.invalid(fmt::format("qk_matmul_output_mode {} is not 0, 1, 2 or 3", p.qk_mode));
  p.want_qk = im.output_used(3);
  // The attention operator covers all but softcap, the qk output and a softmax type of its own.
  const bool fused = p.softcap == 0 && !p.want_qk && p.softmax_dtype == t;
  // Its causal flag stands for the causal frontier (offset by the past keys) when no window
  // or run-time key length joins it.
  const bool causal_flag = fused && causal && left < 0 && right < 0 && !nonpad;

  std::optional<Value> bias;
  auto add_bias = [&](Value x) { bias = bias ? im.op("add", {*bias, x}) : x; };
  if (im.has_input(3)) add_bias(mask_bias(im, im.input(3), skv, t));
  if (nonpad) {
    add_bias(nonpad_bias(im, im.input(6), b, sq, skv, causal, left, right, t));
  } else if ((causal && !causal_flag) || left >= 0 || right >= 0) {
    add_bias(im.constant(structural_bias(sq, skv, past_len, causal, left, right, t), "causal_mask"));
  }

  if (fused) {
    // 3-D inputs without a cache are read as they are ([batch, seq, heads * head_size]).
    const bool packed = rank == 3 && !past;
    std::vector<Value> in = packed ? std::vector<Value>{im.input(0), im.input(1), im.input(2)}
                                   : std::vector<Value>{q, k, v};
    if (bias) in.push_back(*bias);
    te::ops::Attrs a{{"scale", p.scale}};
    if (packed) {
      a["num_heads"] = hq;
      a["kv_num_heads"] = hkv;
    }
    if (causal_flag) {
      a["causal"] = int64_t(1);
      a["causal_offset"] = past_len;
    }
    Value y = im.op("attention", in, a);
    if (rank == 3 && !packed) {
      y = im.op("transpose", {y}, {{"axes", std::vector<int64_t>{0, 2, 1, 3}}});
      y = im.reshape(y, {b, sq, hq * vs[3]});
    }
    im.set_output(0, y);
    return;
  }

  AttentionInputs in{q, k, v, bias, false};
  if (bias) {
    const runtime::NDArray* c = im.constant_of(*bias);
    in.bias_may_mask_row = !c || has_masked_row(*c);
  }

  AttentionResult r = attention_chain(im, in, p);
  Value y = r.y;
  if (rank == 3) {
    y = im.op("transpose", {y}, {{"axes", std::vector<int64_t>{0, 2, 1, 3}}});
    y = im.reshape(y, {b, sq, hq * vs[3]});
  }
  im.set_output(0, y);
  if (r.qk) im.set_output(3, *r.qk);
}

// ---------------------------------------------------------------- RotaryEmbedding

/// x rotated pairwise by the angles of cos_cache and sin_cache: [x1, x2] -> [cos x1 - sin x2,
/// sin x1 + cos x2], the pairs being the two halves of the first rotary_embedding_dim
/// elements of each head (or neighbours when interleaved).
void rotary_embedding(Importer& im) {
  const std::vector<int64_t> x = im.input_shape(0);
  const bool interleaved = im.attr_int("interleaved", 0) != 0;
  const int64_t num_heads = im.attr_int("num_heads", 0);
  int64_t rd = im.attr_int("rotary_embedding_dim", 0);
  if (x.size() != 3 && x.size() != 4) im.invalid(fmt::format("input {} is neither 3-D nor 4-D", shape_str(x)));
  // The working form: [B, H, S, D] as given (4-D), or [B, S, H, D] from [B, S, H * D] (3-D).
  Value data = im.input(0);
  const bool packed = x.size() == 3;
  if (packed) {
    if (num_heads <= 0 || x[2] % num_heads)
      im.invalid(fmt::format("3-D input {} needs num_heads dividing its last dim (num_heads is {})", shape_str(x),
                             num_heads));
    data = im.reshape(data, {x[0], x[1], num_heads, x[2] / num_heads});
  } else if (num_heads != 0 && num_heads != x[1]) {
    im.invalid(fmt::format("num_heads {} disagrees with the 4-D input {}", num_heads, shape_str(x)));
  }
  const std::vector<int64_t> s = im.type(data).shape;
  const int64_t b = s[0], seq = packed ? s[1] : s[2], d = s[3];
  if (rd == 0) rd = d;
  if (rd < 0 || rd > d || rd % 2)
    im.invalid(fmt::format("rotary_embedding_dim {} is not an even number up to the head size {}", rd, d));
  const int64_t half = rd / 2;

  // cos and sin as [B, S, half], then [B, 1, S, half] or [B, S, 1, half] against the data.
  auto angles = [&](int i, const char* what) {
    Value c = im.input(i);
    if (im.has_input(3)) {
      std::vector<int64_t> ids = im.input_shape(3), cs = im.input_shape(i);
      if (ids != std::vector<int64_t>{b, seq} || cs.size() != 2)
        im.invalid(fmt::format("position_ids {} must be [batch, sequence] = [{},{}] and {} {} 2-D", shape_str(ids), b,
                               seq, what, shape_str(cs)));
      c = im.op("take", {c, im.input(3)}, {{"axis", int64_t(0)}});
    }
    std::vector<int64_t> cs = im.type(c).shape;
    if (cs != std::vector<int64_t>{b, seq, half})
      im.invalid(fmt::format("{} gives {} per position; expected [batch, sequence, rotary_embedding_dim / 2] = "
                             "[{},{},{}]",
                             what, shape_str(cs), b, seq, half));
    if (im.type(c).dtype != im.type(data).dtype)
      im.invalid(fmt::format("{} is {}, the input {}", what, im.type(c).dtype.str(), im.type(data).dtype.str()));
    return im.reshape(c, packed ? std::vector<int64_t>{b, seq, 1, half} : std::vector<int64_t>{b, 1, seq, half});
  };
  Value cos = angles(1, "cos_cache"), sin = angles(2, "sin_cache");

  Value rot = rd < d ? pick(im, data, 3, iota(0, rd)) : data;
  Value x1 = pick(im, rot, 3, interleaved ? iota(0, half, 2) : iota(0, half));
  Value x2 = pick(im, rot, 3, interleaved ? iota(1, half, 2) : iota(half, half));
  Value real = im.op("subtract", {im.op("multiply", {cos, x1}), im.op("multiply", {sin, x2})});
  Value imag = im.op("add", {im.op("multiply", {sin, x1}), im.op("multiply", {cos, x2})});
  Value out = im.op("concat", {real, imag}, {{"axis", int64_t(3)}});
  if (interleaved) {  // [r0.., i0..] -> [r0, i0, r1, i1, ..]
    std::vector<int64_t> order;
    for (int64_t k = 0; k < half; ++k) order.insert(order.end(), {k, half + k});
    out = pick(im, out, 3, order);
  }
  if (rd < d) out = im.op("concat", {out, pick(im, data, 3, iota(rd, d - rd))}, {{"axis", int64_t(3)}});
  im.set_output(0, im.reshape(out, x));
}

// ---------------------------------------------------------------- FlexAttention

/// The modifier subgraph attribute `name` as a function of the [B, Hq, L, S] tensor it
/// modifies (none when absent); its result must keep the shape and type.
std::function<Value(Value)> modifier(Importer& im, const char* name) {
  if (!im.has_attr(name)) return {};
  const onnx::GraphProto& g = im.attr_graph(name);
  return [&im, &g, name](Value x) {
    Value y = im.import_subgraph_function(g, name, {OnnxValue{x, false}}).value;
    if (im.type(y).shape != im.type(x).shape || im.type(y).dtype != im.type(x).dtype)
      im.invalid(fmt::format("{} turns {} into {}; it must keep the shape and type", name, te::ops::to_string(im.type(x)),
                             te::ops::to_string(im.type(y))));
    return y;
  };
}

/// FlexAttention (ai.onnx.preview opset 1): scaled dot-product attention of rank-4 Q, K and V
/// (grouped-query when Q has more heads), the logits and probabilities in softmax_precision
/// (float32 below float64) and passed through score_mod and prob_mod.
void flex_attention(Importer& im) {
  const std::vector<int64_t> qs = im.input_shape(0), ks = im.input_shape(1), vs = im.input_shape(2);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4)
    im.invalid(fmt::format("Q {}, K {} and V {} must all be rank 4", shape_str(qs), shape_str(ks), shape_str(vs)));
  const DataType t = im.input_dtype(0);
  if (im.input_dtype(1) != t || im.input_dtype(2) != t || t.code() != DataType::kFloat)
    im.invalid(fmt::format("Q, K and V must be of one floating-point type, got {}, {} and {}", t.str(),
                           im.input_dtype(1).str(), im.input_dtype(2).str()));
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[3] != qs[3] || vs[1] != ks[1] || vs[2] != ks[2] || qs[1] % ks[1])
    im.invalid(fmt::format("Q {}, K {} and V {} do not fit together: equal batch, K's head size Q's, V's heads and "
                           "sequence K's, Q's heads a multiple of K's",
                           shape_str(qs), shape_str(ks), shape_str(vs)));
  AttentionParams p;
  p.scale = im.has_attr("scale") ? im.attr_float("scale") : 1.0 / std::sqrt(double(qs[3]));
  p.softmax_dtype = im.has_attr("softmax_precision")
                        ? to_dtype(int(im.attr_int("softmax_precision")), im.where() + ": softmax_precision")
                        : t.bits() == 64 ? t : DataType::Float(32);
  if (p.softmax_dtype.code() != DataType::kFloat)
    im.invalid(fmt::format("softmax_precision is {}, not a floating-point type", p.softmax_dtype.str()));
  p.score_mod = modifier(im, "score_mod");
  p.prob_mod = modifier(im, "prob_mod");
  p.pv_in_softmax_dtype = true;
  im.set_output(0, attention_chain(im, AttentionInputs{im.input(0), im.input(1), im.input(2), std::nullopt, false}, p).y);
}

}  // namespace

void add_attention_converters(std::map<std::string, Converter>& out) {
  out["Attention"] = attention;
  out["RotaryEmbedding"] = rotary_embedding;
  out[std::string(kOnnxPreviewDomain) + ".FlexAttention"] = flex_attention;
}

}  // namespace loom::graph_opt::onnx_frontend
