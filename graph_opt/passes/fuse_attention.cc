// fuse_attention: the scaled dot-product attention that exporters write as a chain of
// operators becomes one `attention` operator (te/ops/attention.h), which its templates run
// as one kernel without materializing the scores.
//
// The chain, as PyTorch, tf2onnx and onnx.helper exports import (graph_opt/frontend/onnx):
//   scores = matmul(Q, Kᵀ)           batch_matmul (or a 2-D matmul for one head), K given
//                                    transposed ([.., D, Skv]) or with transpose_b
//   logits = scores · c (÷ c) + bias  scalar-constant multiplies/divides, at most one add of a
//                                    bias broadcasting to [B, H, Sq, Skv], in either order
//   probs  = softmax(logits)          along the last axis, Skv
//   out    = matmul(probs, V)
// with reshapes anywhere between (the importer's batch flattening, opsets before 13's 2-D
// softmax). A scale may also multiply Q or K before the product, and the product may be K·Qᵀ
// transposed into the scores (Keras's einsum 'aecd,abcd->acbe', as tf2onnx exports it).
// Q, K and V are read from where the head split leaves them: a transpose (0, 2, 1, 3) of
// [B, S, H, D] (a reshape of the projection's [B, S, H·D]) makes the operator read
// [B, S, H·D] directly (num_heads H), when the output goes through the inverse transpose,
// which it then writes directly too; otherwise the operator reads [B, H, S, D] views (K
// transposed back where it came as Kᵀ).
//
// Left alone: a softmax along another axis, a mask that is not added (where, multiply), a
// scale that is not a scalar constant, a chain value that something else reads (or the graph
// returns), and anything else that does not fit.
#include <fmt/format.h>

#include <numeric>
#include <optional>

#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/passes.h"
#include "loom/runtime/error.h"
#include "pass_util.h"

namespace loom::graph_opt {

namespace {

using detail::is_reshape;

int64_t product(const std::vector<int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>());
}

/// How to read one of Q, K, V: a source value and what to make of it.
struct Operand {
  ValueRef source;
  /// Packed: `source` is 4-D [B, S, H, D] (a transpose (0, 2, 1, 3) read it as [B, H, S, D]);
  /// the operator reads it viewed as [B, S, H·D].
  bool packed = false;
  /// Else the [B, H, S, D] operand is `source` transposed by `perm` (empty: viewed as it is).
  std::vector<int64_t> perm;
};

/// One attention found in the source graph.
struct Match {
  int qk = -1, softmax = -1, pv = -1;
  std::vector<int> interior;  // source nodes the operator replaces (every one read once, inside)
  Operand q, k, v;
  std::optional<ValueRef> bias;
  std::vector<int64_t> bias_view;  // non-empty: the bias viewed in this shape first
  double bias_scale = 1.0;         // the bias multiplied by this first (it was added before a scale)
  double scale = 1.0;
  int64_t batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0, v_head_dim = 0;
  /// The node whose value the operator's result stands for: the output transpose (packed) or pv.
  int replaced = -1;
  bool packed = false;
};

class Finder {
 public:
  explicit Finder(const Graph& g) : g_(g), users_(detail::users_with_outputs(g)) {}

  std::optional<Match> match(int softmax) {
    const Node& s = g_.nodes[size_t(softmax)];
    const TensorType& in = g_.type(s.inputs[0]);
    const int64_t rank = int64_t(in.shape.size());
    if (rank < 2 || !in.dtype.is_float()) return std::nullopt;
    int64_t axis = te::ops::attr_int(s.attrs, "axis");
    if (axis < 0) axis += rank;
    if (axis != rank - 1) return std::nullopt;  // a softmax along another axis
    Match m;
    m.softmax = softmax;
    m.seq_kv = in.shape.back();
    if (!read_once(softmax)) return std::nullopt;
    m.interior.push_back(softmax);

    // Up from the softmax to the product Q·Kᵀ: reshapes, scalar scales, one bias add.
    double scale_above = 1.0, scale = 1.0;  // scale_above: the scales between the add and the softmax
    bool added = false;
    bool swapped = false;  // the product is K·Qᵀ, transposed into the scores (as Keras's einsum writes it)
    std::vector<int64_t> add_shape;
    ValueRef x = s.inputs[0];
    while (true) {
      const Node& p = g_.node(x);
      if (!p.is_op() || x.index != 0 || !read_once(x.node)) return std::nullopt;
      if (p.op == "batch_matmul" || p.op == "matmul") break;
      m.interior.push_back(x.node);
      if (is_reshape(p)) {
        x = p.inputs[0];
      } else if (auto c = scaled(p)) {
        scale *= c->second;
        if (!added) scale_above *= c->second;
        x = c->first;
      } else if (p.op == "transpose" && !swapped && swaps_last_two(p)) {
        swapped = true;
        x = p.inputs[0];
      } else if (p.op == "add" && !added && !swapped) {
        const int path = leads_to_product(p.inputs[0]) ? 0 : leads_to_product(p.inputs[1]) ? 1 : -1;
        if (path < 0) return std::nullopt;
        m.bias = p.inputs[size_t(1 - path)];
        add_shape = p.outputs[0].shape;
        if (add_shape != g_.type(p.inputs[size_t(path)]).shape) return std::nullopt;  // the bias must not grow it
        added = true;
        x = p.inputs[size_t(path)];
      } else {
        return std::nullopt;  // a mask that is not added, a scale that is not a scalar, …
      }
    }
    m.qk = x.node;
    m.interior.push_back(m.qk);
    m.scale = scale;
    m.bias_scale = scale_above;
    const Node& qk = g_.nodes[size_t(m.qk)];
    if (te::ops::attr_int(qk.attrs, "transpose_a")) return std::nullopt;
    // The product's operands: rows [.., S, D] first; the second given transposed [.., D, S] unless
    // transpose_b. Q then K, or K then Q when the product is transposed into the scores.
    const bool second_transposed = te::ops::attr_int(qk.attrs, "transpose_b") == 0;

    // Down from the softmax to probs·V.
    ValueRef y{softmax, 0};
    while (true) {
      std::optional<int> next = sole_reader(y.node);
      if (!next) return std::nullopt;
      const Node& n = g_.nodes[size_t(*next)];
      if (is_reshape(n)) {
        if (!read_once(*next)) return std::nullopt;
        m.interior.push_back(*next);
        y = {*next, 0};
        continue;
      }
      if ((n.op != "batch_matmul" && n.op != "matmul") || n.inputs[0] != y || n.inputs[1] == y ||
          te::ops::attr_int(n.attrs, "transpose_a") || te::ops::attr_int(n.attrs, "transpose_b"))
        return std::nullopt;
      m.pv = *next;
      break;
    }
    m.interior.push_back(m.pv);

    // Sizes: the products are [BH, Sq, Skv] and [BH, Sq, Dv] (2-D for one head).
    const std::vector<int64_t>& qks = qk.outputs[0].shape;
    const std::vector<int64_t>& pvs = g_.nodes[size_t(m.pv)].outputs[0].shape;
    if (qks.size() < 2 || qks[qks.size() - (swapped ? 2 : 1)] != m.seq_kv || pvs.size() != qks.size())
      return std::nullopt;
    m.seq_q = qks[qks.size() - (swapped ? 1 : 2)];
    const int64_t bh = product(std::vector<int64_t>(qks.begin(), qks.end() - 2));
    m.head_dim = g_.type(qk.inputs[0]).shape.back();
    m.v_head_dim = pvs.back();
    if (pvs[pvs.size() - 2] != m.seq_q || product(pvs) != bh * m.seq_q * m.v_head_dim) return std::nullopt;
    if (product(g_.type(s.inputs[0]).shape) != bh * m.seq_q * m.seq_kv) return std::nullopt;

    // The batch and head split: a 4-D [B, H, Sq, Skv] value of the chain, else Q's 4-D source.
    m.batch = bh;
    m.heads = 1;
    for (int n : m.interior) {
      const std::vector<int64_t>& sh = g_.nodes[size_t(n)].outputs[0].shape;
      if (n != m.pv && sh.size() == 4 && sh[2] == m.seq_q && sh[3] == m.seq_kv && sh[0] * sh[1] == bh) {
        m.batch = sh[0];
        m.heads = sh[1];
        break;
      }
    }
    const ValueRef q_side = qk.inputs[swapped ? 1 : 0], k_side = qk.inputs[swapped ? 0 : 1];
    if (m.heads == 1 && !swapped) {
      const std::vector<int64_t>& qsrc = g_.type(strip(q_side, nullptr)).shape;
      if (qsrc.size() == 4 && qsrc[0] * qsrc[1] == bh && qsrc[2] == m.seq_q && qsrc[3] == m.head_dim) {
        m.batch = qsrc[0];
        m.heads = qsrc[1];
      }
    }
    if (m.bias && !fit_bias(m, add_shape)) return std::nullopt;

    // Q, K (scales before the product fold into the scale) and V.
    double qscale = 1.0, kscale = 1.0;
    ValueRef qv = strip(q_side, &qscale), kv = strip(k_side, &kscale);
    m.q = swapped && second_transposed ? transposed(qv, m, m.seq_q, m.head_dim, &qscale)
                                       : rows(qv, m, m.seq_q, m.head_dim, &qscale);
    m.k = !swapped && second_transposed ? transposed(kv, m, m.seq_kv, m.head_dim, &kscale)
                                        : rows(kv, m, m.seq_kv, m.head_dim, &kscale);
    m.v = rows(strip(g_.nodes[size_t(m.pv)].inputs[1], nullptr), m, m.seq_kv, m.v_head_dim, nullptr);
    m.scale *= qscale * kscale;

    // The output: through reshapes to the inverse transpose (0, 2, 1, 3), read by itself alone.
    m.replaced = m.pv;
    if (m.q.packed && m.k.packed && m.v.packed) {
      std::vector<int> between;
      ValueRef o{m.pv, 0};
      while (true) {
        std::optional<int> next = sole_reader(o.node);
        if (!next || !read_once(o.node)) break;
        const Node& n = g_.nodes[size_t(*next)];
        if (is_reshape(n)) {
          between.push_back(*next);
          o = {*next, 0};
          continue;
        }
        if (n.op == "transpose" && te::ops::attr_ints(n.attrs, "axes") == std::vector<int64_t>{0, 2, 1, 3} &&
            n.outputs[0].shape == std::vector<int64_t>{m.batch, m.seq_q, m.heads, m.v_head_dim}) {
          m.packed = true;
          m.replaced = *next;
          m.interior.insert(m.interior.end(), between.begin(), between.end());
          m.interior.push_back(*next);
        }
        break;
      }
    }
    if (!m.packed) {
      for (Operand* o : {&m.q, &m.k, &m.v})
        if (o->packed) {
          o->packed = false;
          o->perm = {0, 2, 1, 3};
        }
    }
    return m;
  }

 private:
  /// The node that reads node `n`'s value, when exactly one does (a graph output counts).
  std::optional<int> sole_reader(int n) const {
    const std::vector<int>& u = users_[size_t(n)];
    if (u.size() != 1 || u[0] < 0) return std::nullopt;
    return u[0];
  }

  /// Node `n` has one output, read by one node (not returned by the graph).
  bool read_once(int n) const {
    if (g_.nodes[size_t(n)].outputs.size() != 1) return false;
    std::optional<int> r = sole_reader(n);
    if (!r) return false;
    int count = 0;
    for (const ValueRef& in : g_.nodes[size_t(*r)].inputs) count += in.node == n;
    return count == 1;
  }

  /// A transpose of the last two dims alone.
  bool swaps_last_two(const Node& n) const {
    std::vector<int64_t> swap(n.outputs[0].shape.size());
    std::iota(swap.begin(), swap.end(), 0);
    if (swap.size() < 2) return false;
    std::swap(swap[swap.size() - 1], swap[swap.size() - 2]);
    return n.op == "transpose" && te::ops::attr_ints(n.attrs, "axes") == swap;
  }

  /// A float scalar constant (any shape of one element): its value.
  std::optional<double> scalar_constant(ValueRef v) const {
    const Node& n = g_.node(v);
    if (!n.is_constant() || !n.value.dtype().is_float() || n.value.numel() != 1) return std::nullopt;
    return n.value.get(0);
  }

  /// `p` as x·c, c·x or x/c with c a scalar constant: x and the factor.
  std::optional<std::pair<ValueRef, double>> scaled(const Node& p) const {
    if (p.op == "multiply") {
      if (auto c = scalar_constant(p.inputs[1])) return std::make_pair(p.inputs[0], *c);
      if (auto c = scalar_constant(p.inputs[0])) return std::make_pair(p.inputs[1], *c);
    } else if (p.op == "divide") {
      if (auto c = scalar_constant(p.inputs[1]); c && *c != 0) return std::make_pair(p.inputs[0], 1.0 / *c);
    }
    return std::nullopt;
  }

  /// Whether `v` reaches a matmul through reshapes, scalar scales and a transpose of the last
  /// two dims alone.
  bool leads_to_product(ValueRef v) const {
    while (true) {
      const Node& p = g_.node(v);
      if (!p.is_op()) return false;
      if (p.op == "batch_matmul" || p.op == "matmul") return true;
      if (is_reshape(p) || swaps_last_two(p)) v = p.inputs[0];
      else if (auto c = scaled(p)) v = c->first;
      else return false;
    }
  }

  /// `v` through reshapes and (when `scale` is given) scalar scales, multiplied into it.
  ValueRef strip(ValueRef v, double* scale) const {
    while (true) {
      const Node& p = g_.node(v);
      if (is_reshape(p)) {
        v = p.inputs[0];
      } else if (auto c = scaled(p); c && scale) {
        *scale *= c->second;
        v = c->first;
      } else {
        return v;
      }
    }
  }

  /// Q, K or V as rows [.., S, D]: packed when it is a transpose (0, 2, 1, 3) of [B, S, H, D]
  /// (scalar scales under the transpose fold into `scale`, when given).
  Operand rows(ValueRef v, const Match& m, int64_t seq, int64_t dim, double* scale) const {
    const Node& n = g_.node(v);
    if (n.is_op() && n.op == "transpose" && te::ops::attr_ints(n.attrs, "axes") == std::vector<int64_t>{0, 2, 1, 3} &&
        g_.type(n.inputs[0]).shape == std::vector<int64_t>{m.batch, seq, m.heads, dim})
      return Operand{scalars_under(n.inputs[0], scale), true, {}};
    return Operand{v, false, {}};
  }

  /// `v` through scalar scales of the same shape, multiplied into `scale` (when given).
  ValueRef scalars_under(ValueRef v, double* scale) const {
    while (scale) {
      const Node& p = g_.node(v);
      auto c = scaled(p);
      if (!c || g_.type(c->first).shape != g_.type(v).shape) break;
      *scale *= c->second;
      v = c->first;
    }
    return v;
  }

  /// Q or K given transposed ([.., D, S]): a transpose's input permuted back, or transposed.
  Operand transposed(ValueRef v, const Match& m, int64_t seq, int64_t dim, double* scale) const {
    const Node& n = g_.node(v);
    // A transpose of the last two dims alone: its input is the rows (viewed as [B, H, S, D]).
    if (n.is_op() && swaps_last_two(n)) return Operand{n.inputs[0], false, {}};
    if (n.is_op() && n.op == "transpose" &&
        g_.type(v).shape == std::vector<int64_t>{m.batch, m.heads, dim, seq}) {
      std::vector<int64_t> p = te::ops::attr_ints(n.attrs, "axes");
      std::swap(p[2], p[3]);  // the permutation that gives [B, H, S, D]
      const std::vector<int64_t>& src = g_.type(n.inputs[0]).shape;
      if (p == std::vector<int64_t>{0, 2, 1, 3} && src == std::vector<int64_t>{m.batch, seq, m.heads, dim})
        return Operand{scalars_under(n.inputs[0], scale), true, {}};
      if (p == std::vector<int64_t>{0, 1, 2, 3}) return Operand{n.inputs[0], false, {}};
      return Operand{n.inputs[0], false, p};
    }
    return Operand{v, false, {0, 1, 3, 2}};  // viewed as [B, H, D, S] first
  }

  /// Whether the bias, added to a value of shape `at`, broadcasts to [B, H, Sq, Skv]; sets
  /// the view it needs.
  bool fit_bias(Match& m, const std::vector<int64_t>& at) const {
    const TensorType& t = g_.type(*m.bias);
    const std::vector<int64_t> frame = {m.batch, m.heads, m.seq_q, m.seq_kv};
    if (t.dtype != g_.type(g_.nodes[size_t(m.softmax)].inputs[0]).dtype) return false;
    std::vector<int64_t> b = t.shape;
    if (b.size() > at.size()) return false;
    b.insert(b.begin(), at.size() - b.size(), 1);
    if (at == frame) return true;
    // A bias added in a flattened frame: its leading dim spans the flattened dims, whole or 1.
    if (at.size() == 3 && at[0] == m.batch * m.heads && at[1] == m.seq_q) {
      if (b[0] == 1) return true;
      m.bias_view = {m.batch, m.heads, b[1], b[2]};
      return true;
    }
    if (at.size() == 2 && at[0] == m.batch * m.heads * m.seq_q) {
      if (b[0] == 1) return true;
      m.bias_view = {m.batch, m.heads, m.seq_q, b[1]};
      return true;
    }
    return false;
  }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
};

class Rewriter {
 public:
  explicit Rewriter(const Graph& g) : g_(g), rw_(g) {}

  Graph run(std::vector<Match> matches) {
    std::vector<int> role(g_.nodes.size(), -1);  // the match a node is interior to
    for (size_t i = 0; i < matches.size(); ++i)
      for (int n : matches[i].interior) role[size_t(n)] = int(i);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const int r = role[i];
      if (r < 0) {
        rw_.copy(int(i));
      } else if (matches[size_t(r)].replaced == int(i)) {
        emit(matches[size_t(r)]);
      }
    }
    return rw_.finish();
  }

 private:
  Value operand(const Operand& o, const Match& m, int64_t seq, int64_t dim, const std::string& name) {
    Value x = rw_.map(o.source);
    if (o.packed) return detail::reshape_to(rw_, x, {m.batch, seq, m.heads * dim}, name + ".packed");
    if (o.perm.empty()) return detail::reshape_to(rw_, x, {m.batch, m.heads, seq, dim}, name + ".heads");
    std::vector<int64_t> before(4);
    for (size_t i = 0; i < 4; ++i) before[size_t(o.perm[i])] = std::vector<int64_t>{m.batch, m.heads, seq, dim}[i];
    if (rw_.type(x).shape != before) x = detail::reshape_to(rw_, x, before, name + ".view");
    return rw_.op("transpose", {x}, {{"axes", o.perm}}, rw_.unique_name(name + ".transpose"));
  }

  void emit(const Match& m) {
    const Node& at = g_.nodes[size_t(m.replaced)];
    const std::string base = g_.nodes[size_t(m.softmax)].name;
    std::vector<Value> in = {operand(m.q, m, m.seq_q, m.head_dim, base + ".query"),
                             operand(m.k, m, m.seq_kv, m.head_dim, base + ".key"),
                             operand(m.v, m, m.seq_kv, m.v_head_dim, base + ".value")};
    if (m.bias) {
      Value b = rw_.map(*m.bias);
      if (!m.bias_view.empty()) b = detail::reshape_to(rw_, b, m.bias_view, base + ".bias");
      if (m.bias_scale != 1.0) {
        const DataType t = rw_.type(b).dtype;
        Value c = detail::fill_constant(rw_, base + ".bias_scale", {}, t, m.bias_scale);
        b = rw_.op("multiply", {b, c}, {}, rw_.unique_name(base + ".bias_scaled"));
      }
      in.push_back(b);
    }
    Attrs attrs{{"scale", m.scale}};
    if (m.packed) {
      attrs["num_heads"] = m.heads;
      attrs["kv_num_heads"] = m.heads;
    }
    Value y = rw_.op("attention", in, attrs, rw_.unique_name(base + ".attention"));
    rw_.replace({m.replaced, 0}, detail::reshape_to(rw_, y, at.outputs[0].shape, at.name));
  }

  const Graph& g_;
  GraphRewriter rw_;
};

}  // namespace

Graph fuse_attention(const Graph& g) {
  Finder finder(g);
  std::vector<Match> matches;
  std::vector<bool> taken(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!g.nodes[i].is_op() || g.nodes[i].op != "softmax") continue;
    std::optional<Match> m = finder.match(int(i));
    if (!m) continue;
    bool free = true;
    for (int n : m->interior) free = free && !taken[size_t(n)];
    if (!free) continue;
    for (int n : m->interior) taken[size_t(n)] = true;
    matches.push_back(std::move(*m));
  }
  if (matches.empty()) return g;
  return Rewriter(g).run(std::move(matches));
}

}  // namespace loom::graph_opt
