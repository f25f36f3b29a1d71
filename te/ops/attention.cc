// Scaled dot-product attention as the chain of stages its fused kernels replace.
#include "loom/te/ops/attention.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "loom/runtime/error.h"
#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::int_const;
using detail::shape_str;

std::vector<int64_t> AttentionDims::output_shape() const {
  if (packed) return {batch, seq_q, heads * v_head_dim};
  return {batch, heads, seq_q, v_head_dim};
}

double AttentionDims::flop() const {
  return 2.0 * double(batch) * double(heads) * double(seq_q) * double(seq_kv) * double(head_dim + v_head_dim);
}

AttentionDims attention_dims(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                             const std::vector<int64_t>& v, const std::vector<int64_t>* bias, const AttentionAttrs& a,
                             const std::string& op) {
  AttentionDims d;
  const size_t rank = q.size();
  LOOM_CHECK((rank == 3 || rank == 4) && k.size() == rank && v.size() == rank,
             "{}: query {}, key {} and value {} must all be 4-D [batch, heads, seq, head_dim] or all 3-D [batch, seq, "
             "heads * head_dim]",
             op, shape_str(q), shape_str(k), shape_str(v));
  LOOM_CHECK(a.num_heads >= 0 && a.kv_num_heads >= 0, "{}: num_heads {} and kv_num_heads {} must not be negative", op,
             a.num_heads, a.kv_num_heads);
  d.packed = rank == 3;
  if (d.packed) {
    const int64_t hq = a.num_heads, hk = a.kv_num_heads ? a.kv_num_heads : a.num_heads;
    LOOM_CHECK(hq > 0, "{}: 3-D query {} needs num_heads (the heads its last dim holds)", op, shape_str(q));
    LOOM_CHECK(q[2] % hq == 0, "{}: query {} does not split into num_heads {} heads", op, shape_str(q), hq);
    LOOM_CHECK(k[2] % hk == 0 && v[2] % hk == 0, "{}: key {} and value {} do not split into {} heads", op,
               shape_str(k), shape_str(v), hk);
    d.batch = q[0];
    d.heads = hq;
    d.kv_heads = hk;
    d.seq_q = q[1];
    d.seq_kv = k[1];
    d.head_dim = q[2] / hq;
    d.v_head_dim = v[2] / hk;
    LOOM_CHECK(k[0] == d.batch && v[0] == d.batch && v[1] == d.seq_kv && k[2] / hk == d.head_dim,
               "{}: query {}, key {} and value {} (3-D, {} and {} heads) do not fit together: equal batch, value's "
               "sequence the key's, the key's head_dim the query's",
               op, shape_str(q), shape_str(k), shape_str(v), hq, hk);
  } else {
    LOOM_CHECK(a.num_heads == 0 || a.num_heads == q[1], "{}: num_heads {} disagrees with the 4-D query {}", op,
               a.num_heads, shape_str(q));
    LOOM_CHECK(a.kv_num_heads == 0 || a.kv_num_heads == k[1], "{}: kv_num_heads {} disagrees with the 4-D key {}", op,
               a.kv_num_heads, shape_str(k));
    d.batch = q[0];
    d.heads = q[1];
    d.kv_heads = k[1];
    d.seq_q = q[2];
    d.seq_kv = k[2];
    d.head_dim = q[3];
    d.v_head_dim = v[3];
    LOOM_CHECK(k[0] == d.batch && v[0] == d.batch && v[1] == d.kv_heads && v[2] == d.seq_kv && k[3] == d.head_dim,
               "{}: query {}, key {} and value {} do not fit together as [batch, heads, seq, head_dim]: equal batch, "
               "value's heads and sequence the key's, the key's head_dim the query's",
               op, shape_str(q), shape_str(k), shape_str(v));
  }
  LOOM_CHECK(d.heads % d.kv_heads == 0, "{}: the query's {} heads are not a multiple of the key's {}", op, d.heads,
             d.kv_heads);
  if (bias) {
    const std::vector<int64_t>& b = *bias;
    const std::vector<int64_t> full = {d.batch, d.heads, d.seq_q, d.seq_kv};
    bool ok = b.size() <= 4;
    for (size_t i = 0; ok && i < b.size(); ++i) {
      const int64_t want = full[4 - b.size() + i];
      ok = b[i] == 1 || b[i] == want;
    }
    LOOM_CHECK(ok, "{}: bias {} does not broadcast to [batch, heads, seq_q, seq_kv] = {}", op, shape_str(b),
               shape_str(full));
    d.bias = b;
  }
  LOOM_CHECK(std::isfinite(a.scale), "{}: scale {} is not finite", op, a.scale);
  d.scale = a.scale != 0 ? a.scale : 1.0 / std::sqrt(double(d.head_dim));
  return d;
}

AttentionWorkload attention_workload(const AttentionDims& d, const AttentionAttrs& a) {
  AttentionWorkload w{{d.batch, d.heads, d.seq_q, d.seq_kv, d.head_dim}, {}};
  if (d.packed) w.attrs["packed"] = "1";
  if (d.kv_heads != d.heads) w.attrs["kv_heads"] = std::to_string(d.kv_heads);
  if (d.v_head_dim != d.head_dim) w.attrs["v_head_dim"] = std::to_string(d.v_head_dim);
  if (!d.bias.empty()) w.attrs["bias"] = fmt::format("{}", fmt::join(d.bias, ","));
  if (a.causal) {
    w.attrs["causal"] = "1";
    if (a.causal_offset) w.attrs["causal_offset"] = std::to_string(a.causal_offset);
  }
  w.attrs["scale"] = fmt::format("{}", d.scale);
  return w;
}

namespace {

/// An integer attribute in [lo, 2^31 - 1].
int64_t int_attr(const std::map<std::string, std::string>& attrs, const std::string& key, int64_t def, int64_t lo,
                 const std::string& op) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  char* stop = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &stop, 10);
  LOOM_CHECK(!it->second.empty() && stop && *stop == '\0' && v >= lo && v <= INT32_MAX,
             "{}: attribute {} must be an integer in [{}, 2^31-1], got '{}'", op, key, lo, it->second);
  return v;
}

}  // namespace

AttentionDims parse_attention_workload(const std::vector<int64_t>& shape,
                                       const std::map<std::string, std::string>& attrs, AttentionAttrs* out,
                                       const std::string& op) {
  static const char* kKnown[] = {"packed", "kv_heads", "v_head_dim", "bias", "causal", "causal_offset", "scale"};
  for (const auto& [k, v] : attrs)
    LOOM_CHECK(std::find(std::begin(kKnown), std::end(kKnown), k) != std::end(kKnown),
               "{}: unknown attribute '{}' (expected packed, kv_heads, v_head_dim, bias, causal, causal_offset, "
               "scale)",
               op, k);
  LOOM_CHECK(shape.size() == 5, "{}: shape must be [batch, heads, seq_q, seq_kv, head_dim], got {} sizes", op,
             shape.size());
  for (int64_t x : shape) LOOM_CHECK(x >= 1 && x <= INT32_MAX, "{}: size {} is not in [1, 2^31-1]", op, x);
  const int64_t B = shape[0], H = shape[1], Sq = shape[2], Skv = shape[3], D = shape[4];
  const bool packed = int_attr(attrs, "packed", 0, 0, op) != 0;
  const int64_t Hk = int_attr(attrs, "kv_heads", H, 1, op), Dv = int_attr(attrs, "v_head_dim", D, 1, op);
  AttentionAttrs a;
  a.causal = int_attr(attrs, "causal", 0, 0, op) != 0;
  a.causal_offset = int_attr(attrs, "causal_offset", 0, -INT32_MAX, op);
  if (auto it = attrs.find("scale"); it != attrs.end()) {
    char* stop = nullptr;
    a.scale = std::strtod(it->second.c_str(), &stop);
    LOOM_CHECK(!it->second.empty() && stop && *stop == '\0' && std::isfinite(a.scale) && a.scale != 0,
               "{}: attribute scale must be a finite nonzero number, got '{}'", op, it->second);
  }
  std::vector<int64_t> q, k, v;
  if (packed) {
    a.num_heads = H;
    a.kv_num_heads = Hk;
    q = {B, Sq, H * D};
    k = {B, Skv, Hk * D};
    v = {B, Skv, Hk * Dv};
  } else {
    q = {B, H, Sq, D};
    k = {B, Hk, Skv, D};
    v = {B, Hk, Skv, Dv};
  }
  std::vector<int64_t> bias;
  auto it = attrs.find("bias");
  if (it != attrs.end()) {
    const std::string& text = it->second;
    for (size_t pos = 0; pos <= text.size();) {
      size_t end = std::min(text.find(',', pos), text.size());
      const std::string part = text.substr(pos, end - pos);
      char* stop = nullptr;
      const long long x = std::strtoll(part.c_str(), &stop, 10);
      LOOM_CHECK(!part.empty() && stop && *stop == '\0' && x >= 1 && x <= INT32_MAX,
                 "{}: attribute bias must be positive sizes separated by commas, got '{}'", op, text);
      bias.push_back(x);
      pos = end + 1;
    }
  }
  if (out) *out = a;
  return attention_dims(q, k, v, it != attrs.end() ? &bias : nullptr, a, op);
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, const AttentionAttrs& a,
                 const std::string& name) {
  const std::vector<int64_t> qs = detail::const_shape(q, "attention", "query");
  const std::vector<int64_t> ks = detail::const_shape(k, "attention", "key");
  const std::vector<int64_t> vs = detail::const_shape(v, "attention", "value");
  std::vector<int64_t> bs;
  if (bias.defined()) bs = detail::const_shape(bias, "attention", "bias");
  const AttentionDims d = attention_dims(qs, ks, vs, bias.defined() ? &bs : nullptr, a);
  const DataType t = q.dtype();
  LOOM_CHECK(t.is_float(), "attention: the query is {}; attention takes floating-point inputs", t.str());
  detail::check_same_dtype(q, k, "attention", "query", "key");
  detail::check_same_dtype(q, v, "attention", "query", "value");
  if (bias.defined()) detail::check_same_dtype(q, bias, "attention", "query", "bias");
  const int64_t group = d.heads / d.kv_heads;

  // Element (b, h, i, x) of a [batch, heads, seq, dim] view of an input.
  auto at = [&](const Tensor& x, int64_t dim, Expr b, Expr h, Expr i, Expr c) -> Expr {
    if (d.packed) return x(b, i, h * int_const(dim) + c);
    return x(b, h, i, c);
  };
  auto kv_head = [&](const Expr& h) { return group == 1 ? h : floordiv(h, int_const(group)); };
  const std::vector<Expr> rows = {int_const(d.batch), int_const(d.heads), int_const(d.seq_q)};
  const std::vector<Expr> grid = {int_const(d.batch), int_const(d.heads), int_const(d.seq_q), int_const(d.seq_kv)};

  IterVar kd = reduce_axis(Range(0, int_const(d.head_dim)), "d");
  Tensor scores = compute(grid, [&](Var b, Var h, Var i, Var j) {
    return sum(at(q, d.head_dim, b, h, i, kd) * at(k, d.head_dim, b, kv_head(h), j, kd), {kd});
  }, "attention_scores", "attention_scores");
  Tensor logits = compute(grid, [&](Var b, Var h, Var i, Var j) {
    Expr x = scores(b, h, i, j) * detail::const_of(t, d.scale);
    if (bias.defined()) {
      std::vector<Expr> idx;
      const std::vector<Var> all = {b, h, i, j};
      for (size_t n = 0; n < bs.size(); ++n) idx.push_back(bs[n] == 1 ? Expr(int_const(0)) : Expr(all[4 - bs.size() + n]));
      x = x + bias(idx);
    }
    if (a.causal)
      x = select(j <= i + int_const(a.causal_offset), x, detail::const_of(t, -std::numeric_limits<double>::infinity()));
    return x;
  }, "attention_logits", "attention_logits");
  IterVar km = reduce_axis(Range(0, int_const(d.seq_kv)), "j");
  Tensor row_max = compute(rows, [&](Var b, Var h, Var i) { return max_reduce(logits(b, h, i, km), {km}); },
                           "attention_max", "attention_max");
  const Expr lowest = detail::const_of(t, -double(t.bits() == 16   ? 65504.0
                                                  : t.bits() == 32 ? double(std::numeric_limits<float>::max())
                                                                   : std::numeric_limits<double>::max()));
  Tensor e = compute(grid, [&](Var b, Var h, Var i, Var j) {
    return exp(logits(b, h, i, j) - max(row_max(b, h, i), lowest));
  }, "attention_exp", "attention_exp");
  IterVar ks2 = reduce_axis(Range(0, int_const(d.seq_kv)), "j");
  Tensor row_sum = compute(rows, [&](Var b, Var h, Var i) { return sum(e(b, h, i, ks2), {ks2}); }, "attention_sum",
                           "attention_sum");
  IterVar kc = reduce_axis(Range(0, int_const(d.seq_kv)), "j");
  Tensor context = compute({int_const(d.batch), int_const(d.heads), int_const(d.seq_q), int_const(d.v_head_dim)},
                           [&](Var b, Var h, Var i, Var c) {
                             return sum(e(b, h, i, kc) * at(v, d.v_head_dim, b, kv_head(h), kc, c), {kc});
                           }, "attention_context", "attention_context");
  const Expr one = detail::const_of(t, 1.0);
  if (d.packed) {
    const Expr dv = int_const(d.v_head_dim);
    return compute({int_const(d.batch), int_const(d.seq_q), int_const(d.heads * d.v_head_dim)},
                   [&](Var b, Var i, Var x) {
                     Expr h = floordiv(x, dv), c = floormod(x, dv);
                     return context(b, h, i, c) / max(row_sum(b, h, i), one);
                   }, name, "attention");
  }
  return compute({int_const(d.batch), int_const(d.heads), int_const(d.seq_q), int_const(d.v_head_dim)},
                 [&](Var b, Var h, Var i, Var c) { return context(b, h, i, c) / max(row_sum(b, h, i), one); }, name,
                 "attention");
}

}  // namespace loom::te::ops
