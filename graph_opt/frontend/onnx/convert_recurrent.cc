// Converters of ONNX's recurrent operators LSTM, GRU and RNN (opsets 7 and 14: `layout` from
// 14 on), unrolled over the sequence at import. loom's IR has no loop or scan, so each time
// step becomes its own small group of operators: the input projection X·Wᵀ + Wb (+ Rb) of
// every step is one matmul per direction up front (sliced per gate), then per step a matmul
// H·Rᵀ and the gates and the new state as take and elementwise operators, which fuse into one
// or two kernels reading the matmul's output and the step's slices of the projection. Steps past
// a batch entry's sequence_lens keep the state and write zeros to Y; the reverse direction
// walks from the last step down, holding the initial state until a batch entry's last valid
// step, which is ONNX's per-entry reversal.
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// The most time steps (sequence length times directions) unrolled into one graph.
constexpr int64_t kMaxUnrolledSteps = 1024;

/// One of ONNX's RNN activation functions with its alpha and beta.
struct Activation {
  std::string name;  // lower case: "sigmoid", "tanh", "relu", "affine", …
  double alpha = 0, beta = 0;
};

/// Whether activation `name` (lower case) takes alpha, beta; the defaults; nullopt if unknown.
struct ActivationInfo {
  int params;  // 0: none, 1: alpha, 2: alpha and beta
  double alpha, beta;
};
std::optional<ActivationInfo> activation_info(const std::string& name) {
  if (name == "relu" || name == "tanh" || name == "sigmoid" || name == "softsign" || name == "softplus")
    return ActivationInfo{0, 0, 0};
  if (name == "leakyrelu") return ActivationInfo{1, 0.01, 0};
  if (name == "thresholdedrelu" || name == "elu") return ActivationInfo{1, 1.0, 0};
  if (name == "affine") return ActivationInfo{2, 1.0, 0.0};
  if (name == "scaledtanh") return ActivationInfo{2, 1.0, 1.0};
  if (name == "hardsigmoid") return ActivationInfo{2, 0.2, 0.5};
  return std::nullopt;
}

/// `count` activations per direction from the attributes activations, activation_alpha and
/// activation_beta (alpha and beta are consumed in order by the activations that take them,
/// as ONNX Runtime reads them), or `defaults` for each direction.
std::vector<Activation> read_activations(Importer& im, int64_t dirs, const std::vector<std::string>& defaults) {
  const size_t count = defaults.size() * size_t(dirs);
  std::vector<std::string> names;
  if (im.has_attr("activations")) {
    const onnx::AttributeProto* a = nullptr;
    for (const auto& attr : im.node().attribute())
      if (attr.name() == "activations") a = &attr;
    if (a->type() != onnx::AttributeProto::STRINGS) im.invalid("attribute 'activations' is not a list of strings");
    im.ignore_attr("activations");
    for (const std::string& s : a->strings()) names.push_back(s);
    if (names.size() != count)
      im.invalid(fmt::format("activations [{}] lists {} functions; {} direction(s) take {}", fmt::join(names, ","),
                             names.size(), dirs, count));
  } else {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  std::vector<double> alphas = im.has_attr("activation_alpha") ? im.attr_floats("activation_alpha") : std::vector<double>{};
  std::vector<double> betas = im.has_attr("activation_beta") ? im.attr_floats("activation_beta") : std::vector<double>{};
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& n : names) {
    std::string lower = n;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    std::optional<ActivationInfo> info = activation_info(lower);
    if (!info)
      im.unsupported(fmt::format("activation '{}'; loom takes Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                                 "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                                 n));
    Activation act{lower, info->alpha, info->beta};
    if (info->params >= 1 && ai < alphas.size()) act.alpha = alphas[ai++];
    if (info->params >= 2 && bi < betas.size()) act.beta = betas[bi++];
    out.push_back(act);
  }
  if (ai < alphas.size() || bi < betas.size())
    im.invalid(fmt::format("activation_alpha [{}] and activation_beta [{}] hold more values than activations [{}] take",
                           fmt::join(alphas, ","), fmt::join(betas, ","), fmt::join(names, ",")));
  return out;
}

/// The recurrent node's common parts, read and checked.
struct Recurrent {
  int gates = 0;          // 4 (LSTM), 3 (GRU), 1 (RNN)
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false;  // direction "reverse"
  bool batch_major = false;   // layout 1
  DataType dtype;
  std::optional<double> clip;
  std::vector<Activation> acts;  // per direction, in order
  std::optional<Value> mask;     // [seq, batch, 1]: 1 for steps within sequence_lens, else 0
};

/// `v` restricted to indices [begin, begin + count) of `axis`.
Value slice(Importer& im, Value v, int64_t axis, int64_t begin, int64_t count) {
  runtime::NDArray idx = runtime::NDArray::empty({count}, DataType::Int(64));
  for (int64_t i = 0; i < count; ++i) idx.data<int64_t>()[i] = begin + i;
  return im.op("take", {v, im.constant(idx, "indices")}, {{"axis", axis}});
}

/// Direction `d` of a per-direction input of shape [dirs, rest...] as [rest...].
Value direction_of(Importer& im, Value v, int64_t d) {
  std::vector<int64_t> s = im.type(v).shape;
  Value r = slice(im, v, 0, d, 1);
  return im.reshape(r, std::vector<int64_t>(s.begin() + 1, s.end()));
}

Value apply(Importer& im, const Activation& a, Value x, DataType t) {
  const size_t rank = im.type(x).shape.size();
  if (a.name == "affine")
    return im.op("add", {im.op("multiply", {x, im.scalar(a.alpha, t, rank, "alpha")}), im.scalar(a.beta, t, rank, "beta")});
  if (a.name == "scaledtanh")
    return im.op("multiply",
                 {im.op("tanh", {im.op("multiply", {x, im.scalar(a.beta, t, rank, "beta")})}), im.scalar(a.alpha, t, rank, "alpha")});
  if (a.name == "leakyrelu") return im.op("leaky_relu", {x}, {{"alpha", a.alpha}});
  if (a.name == "thresholdedrelu") return im.op("thresholded_relu", {x}, {{"alpha", a.alpha}});
  if (a.name == "hardsigmoid") return im.op("hard_sigmoid", {x}, {{"alpha", a.alpha}, {"beta", a.beta}});
  if (a.name == "elu") return im.op("elu", {x}, {{"alpha", a.alpha}});
  return im.op(a.name, {x});  // relu, tanh, sigmoid, softsign, softplus
}

/// The activation of a gate's pre-activation `x`, clipped first when clip is set.
Value activate(Importer& im, const Recurrent& r, const Activation& a, Value x) {
  if (r.clip) x = im.op("clip", {x}, {{"min", -*r.clip}, {"max", *r.clip}});
  return apply(im, a, x, r.dtype);
}

/// Checks that input `i` (when present) has shape `want`.
void expect_shape(Importer& im, int i, const char* name, const std::vector<int64_t>& want) {
  if (!im.has_input(i)) return;
  std::vector<int64_t> s = im.input_shape(i);
  if (s != want) im.invalid(fmt::format("input {} has shape {}; expected {}", name, shape_str(s), shape_str(want)));
  if (i != 4 && im.input_dtype(i) != im.input_dtype(0))
    im.invalid(fmt::format("input {} has type {}, X has {}", name, im.input_dtype(i).str(), im.input_dtype(0).str()));
}

/// Reads X, W, R, sequence_lens and the attributes every recurrent operator has.
Recurrent read_common(Importer& im, int gates, const std::vector<std::string>& default_acts) {
  Recurrent r;
  r.gates = gates;
  const int64_t layout = im.opset() >= 14 ? im.attr_int("layout", 0) : 0;  // an attribute from LSTM-14 on
  if (layout != 0 && layout != 1) im.invalid(fmt::format("layout {} is not 0 or 1", layout));
  r.batch_major = layout == 1;
  const std::string direction = im.attr_str("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    im.invalid("direction '" + direction + "' is not forward, reverse or bidirectional");
  r.dirs = direction == "bidirectional" ? 2 : 1;
  r.reverse_only = direction == "reverse";
  std::vector<int64_t> x = im.input_shape(0), w = im.input_shape(1), rs = im.input_shape(2);
  r.dtype = im.input_dtype(0);
  if (!r.dtype.is_float()) im.invalid(fmt::format("X has type {}; expected a floating-point type", r.dtype.str()));
  if (x.size() != 3) im.invalid(fmt::format("X {} is not 3-D", shape_str(x)));
  r.seq = r.batch_major ? x[1] : x[0];
  r.batch = r.batch_major ? x[0] : x[1];
  r.input = x[2];
  if (rs.size() != 3) im.invalid(fmt::format("R {} is not 3-D", shape_str(rs)));
  r.hidden = rs[2];
  if (im.has_attr("hidden_size") && im.attr_int("hidden_size") != r.hidden)
    im.invalid(fmt::format("hidden_size {} does not match R {}", im.attr_int("hidden_size"), shape_str(rs)));
  const int64_t gh = gates * r.hidden;
  expect_shape(im, 1, "W", {r.dirs, gh, r.input});
  expect_shape(im, 2, "R", {r.dirs, gh, r.hidden});
  expect_shape(im, 3, "B", {r.dirs, 2 * gh});
  if (r.seq < 1 || r.batch < 1 || r.hidden < 1)
    im.unsupported(fmt::format("an empty sequence, batch or hidden state (X {}, R {})", shape_str(x), shape_str(rs)));
  if (r.seq * r.dirs > kMaxUnrolledSteps)
    im.unsupported(fmt::format("{} time steps ({} direction(s) of sequence length {}); loom unrolls the recurrence at "
                               "import, up to {} steps",
                               r.seq * r.dirs, r.dirs, r.seq, kMaxUnrolledSteps));
  if (im.has_attr("clip")) {
    r.clip = im.attr_float("clip");
    if (!(*r.clip > 0)) im.invalid(fmt::format("clip {} is not positive", *r.clip));
  }
  r.acts = read_activations(im, r.dirs, default_acts);

  if (im.has_input(4)) {
    std::vector<int64_t> ls = im.input_shape(4);
    if (ls != std::vector<int64_t>{r.batch})
      im.invalid(fmt::format("sequence_lens has shape {}; expected [{}]", shape_str(ls), r.batch));
    if (im.input_dtype(4) != DataType::Int(32))
      im.invalid(fmt::format("sequence_lens has type {}; expected int32", im.input_dtype(4).str()));
    Value lens = im.input(4);
    bool full = false;
    if (const runtime::NDArray* c = im.constant_of(lens)) {
      full = true;
      for (int64_t b = 0; b < r.batch; ++b) {
        const int32_t l = c->data<int32_t>()[b];
        if (l < 0 || l > r.seq)
          im.invalid(fmt::format("sequence_lens[{}] = {} is outside [0, {}] (the sequence length)", b, l, r.seq));
        full = full && l == r.seq;
      }
    }
    if (!full) {
      // mask[t, b] = clip(lens[b] - t, 0, 1): 1 while t < lens[b] (both integers).
      runtime::NDArray steps = runtime::NDArray::empty({r.seq, 1}, r.dtype);
      for (int64_t t = 0; t < r.seq; ++t) steps.set(t, double(t));
      Value lf = im.reshape(im.op("cast", {lens}, {{"dtype", r.dtype.str()}}), {1, r.batch});
      Value m = im.op("clip", {im.op("subtract", {lf, im.constant(steps, "steps")})}, {{"min", 0.0}, {"max", 1.0}});
      r.mask = im.reshape(m, {r.seq, r.batch, 1});
    }
  }
  return r;
}

/// Input `i` of shape [dirs, batch, H] (layout 0) or [batch, dirs, H] (layout 1) for direction
/// `d` as [batch, H]; zeros when absent.
Value initial_state(Importer& im, const Recurrent& r, int i, const char* name, int64_t d) {
  if (!im.has_input(i)) {
    runtime::NDArray z = runtime::NDArray::empty({r.batch, r.hidden}, r.dtype);
    for (int64_t k = 0; k < r.batch * r.hidden; ++k) z.set(k, 0.0);
    return im.constant(z, std::string(name) + "_zero");
  }
  expect_shape(im, i, name, r.batch_major ? std::vector<int64_t>{r.batch, r.dirs, r.hidden}
                                          : std::vector<int64_t>{r.dirs, r.batch, r.hidden});
  return im.reshape(slice(im, im.input(i), r.batch_major ? 1 : 0, d, 1), {r.batch, r.hidden});
}

/// Per direction: the input projection X·Wᵀ + bias of every step, one slab per gate, so that
/// each step's part of a gate is read only by the kernel that computes the gate.
struct Projection {
  std::vector<Value> gates;  // each [seq, batch, H] (layout 1: [batch, seq, H])
  /// Gate `k` of step `t`, [batch, H].
  Value at(Importer& im, const Recurrent& r, int64_t t, int64_t k) const {
    return im.reshape(slice(im, gates[size_t(k)], r.batch_major ? 1 : 0, t, 1), {r.batch, r.hidden});
  }
};

/// X·W_dᵀ (+ `bias` [G*H]) for all steps as one matmul.
Projection project(Importer& im, const Recurrent& r, Value w_d, std::optional<Value> bias) {
  const int64_t gh = r.gates * r.hidden;
  Value x2 = im.reshape(im.input(0), {r.seq * r.batch, r.input});
  Value p = im.op("matmul", {x2, w_d}, {{"transpose_b", int64_t(1)}});
  if (bias) p = im.op("add", {p, im.reshape(*bias, {1, gh})});
  p = im.reshape(p, r.batch_major ? std::vector<int64_t>{r.batch, r.seq, gh} : std::vector<int64_t>{r.seq, r.batch, gh});
  Projection out;
  for (int64_t k = 0; k < r.gates; ++k) out.gates.push_back(r.gates == 1 ? p : slice(im, p, 2, k * r.hidden, r.hidden));
  return out;
}

/// The step's mask [batch, 1], or nullopt when every step is within the sequence.
std::optional<Value> step_mask(Importer& im, const Recurrent& r, int64_t t) {
  if (!r.mask) return std::nullopt;
  return im.reshape(slice(im, *r.mask, 0, t, 1), {r.batch, 1});
}

/// `next` where the mask is 1, `prev` where it is 0 (exact for a 0/1 mask).
Value masked(Importer& im, const std::optional<Value>& m, Value next, Value prev) {
  if (!m) return next;
  Value one = im.scalar(1.0, im.type(next).dtype, 2, "one");
  return im.op("add", {im.op("multiply", {*m, next}), im.op("multiply", {im.op("subtract", {one, *m}), prev})});
}

/// The outputs of one direction: Y's steps [batch, H] in time order, and the final states.
struct DirectionResult {
  std::vector<Value> ys;
  Value h, c;
};

/// Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]) and a final state [dirs, batch, H]
/// ([batch, dirs, H]) from the directions' results.
void set_outputs(Importer& im, const Recurrent& r, const std::vector<DirectionResult>& res, bool has_c) {
  if (im.output_used(0)) {
    std::vector<Value> per_dir;
    for (const DirectionResult& d : res) {
      std::vector<Value> steps;
      for (Value y : d.ys) steps.push_back(im.reshape(y, {1, 1, r.batch, r.hidden}));
      per_dir.push_back(steps.size() == 1 ? steps[0] : im.op("concat", steps, {{"axis", int64_t(0)}}));
    }
    Value y = per_dir.size() == 1 ? per_dir[0] : im.op("concat", per_dir, {{"axis", int64_t(1)}});
    if (r.batch_major) y = im.op("transpose", {y}, {{"axes", std::vector<int64_t>{2, 0, 1, 3}}});
    im.set_output(0, y);
  }
  for (int k = 1; k <= (has_c ? 2 : 1); ++k) {
    if (!im.output_used(k)) continue;
    std::vector<Value> states;
    for (const DirectionResult& d : res) states.push_back(im.reshape(k == 1 ? d.h : d.c, {1, r.batch, r.hidden}));
    Value s = states.size() == 1 ? states[0] : im.op("concat", states, {{"axis", int64_t(0)}});
    if (r.batch_major) s = im.op("transpose", {s}, {{"axes", std::vector<int64_t>{1, 0, 2}}});
    im.set_output(k, s);
  }
}

/// The time steps of direction `d` in processing order.
std::vector<int64_t> step_order(const Recurrent& r, int64_t d) {
  std::vector<int64_t> ts;
  for (int64_t t = 0; t < r.seq; ++t) ts.push_back(t);
  if (r.reverse_only || d == 1) std::reverse(ts.begin(), ts.end());
  return ts;
}

/// W_b + R_b of gates [first, first + count) ([count*H]) from a direction's B [2*G*H].
Value summed_bias(Importer& im, const Recurrent& r, Value b_d, int64_t first, int64_t count) {
  const int64_t gh = r.gates * r.hidden;
  return im.op("add", {slice(im, b_d, 0, first * r.hidden, count * r.hidden),
                       slice(im, b_d, 0, gh + first * r.hidden, count * r.hidden)});
}

/// Gate `g` ([batch, H]) of the per-step gate block [batch, G*H].
Value gate(Importer& im, const Recurrent& r, Value block, int64_t g) {
  return slice(im, block, 1, g * r.hidden, r.hidden);
}

void lstm(Importer& im) {
  Recurrent r = read_common(im, 4, {"Sigmoid", "Tanh", "Tanh"});
  const bool input_forget = im.attr_int("input_forget", 0) != 0;
  expect_shape(im, 7, "P", {r.dirs, 3 * r.hidden});
  std::vector<DirectionResult> res;
  for (int64_t d = 0; d < r.dirs; ++d) {
    const Activation &f = r.acts[3 * d], &g = r.acts[3 * d + 1], &h = r.acts[3 * d + 2];
    Value w_d = direction_of(im, im.input(1), d), r_d = direction_of(im, im.input(2), d);
    std::optional<Value> bias;
    if (im.has_input(3)) bias = summed_bias(im, r, direction_of(im, im.input(3), d), 0, 4);
    Projection proj = project(im, r, w_d, bias);
    std::optional<Value> p_i, p_o, p_f;
    if (im.has_input(7)) {
      Value p_d = direction_of(im, im.input(7), d);
      p_i = im.reshape(slice(im, p_d, 0, 0, r.hidden), {1, r.hidden});
      p_o = im.reshape(slice(im, p_d, 0, r.hidden, r.hidden), {1, r.hidden});
      p_f = im.reshape(slice(im, p_d, 0, 2 * r.hidden, r.hidden), {1, r.hidden});
    }
    DirectionResult out;
    out.h = initial_state(im, r, 5, "initial_h", d);
    out.c = initial_state(im, r, 6, "initial_c", d);
    out.ys.resize(size_t(r.seq));
    for (int64_t t : step_order(r, d)) {
      Value h_r = im.op("matmul", {out.h, r_d}, {{"transpose_b", int64_t(1)}});
      // Gate order in W, R and B: input, output, forget, cell.
      auto pre = [&](int64_t k) { return im.op("add", {proj.at(im, r, t, k), gate(im, r, h_r, k)}); };
      Value i_pre = pre(0), o_pre = pre(1), f_pre = pre(2);
      if (p_i) i_pre = im.op("add", {i_pre, im.op("multiply", {*p_i, out.c})});
      if (p_f) f_pre = im.op("add", {f_pre, im.op("multiply", {*p_f, out.c})});
      Value i_t = activate(im, r, f, i_pre);
      Value f_t = input_forget ? im.op("subtract", {im.scalar(1.0, r.dtype, 2, "one"), i_t}) : activate(im, r, f, f_pre);
      Value c_t = activate(im, r, g, pre(3));
      Value c_new = im.op("add", {im.op("multiply", {f_t, out.c}), im.op("multiply", {i_t, c_t})});
      if (p_o) o_pre = im.op("add", {o_pre, im.op("multiply", {*p_o, c_new})});
      Value h_new = im.op("multiply", {activate(im, r, f, o_pre), apply(im, h, c_new, r.dtype)});
      std::optional<Value> m = step_mask(im, r, t);
      out.ys[size_t(t)] = m ? im.op("multiply", {*m, h_new}) : h_new;
      out.h = masked(im, m, h_new, out.h);
      out.c = masked(im, m, c_new, out.c);
    }
    res.push_back(out);
  }
  set_outputs(im, r, res, true);
}

void gru(Importer& im) {
  Recurrent r = read_common(im, 3, {"Sigmoid", "Tanh"});
  const bool linear_before_reset = im.attr_int("linear_before_reset", 0) != 0;
  std::vector<DirectionResult> res;
  for (int64_t d = 0; d < r.dirs; ++d) {
    const Activation &f = r.acts[2 * d], &g = r.acts[2 * d + 1];
    Value w_d = direction_of(im, im.input(1), d), r_d = direction_of(im, im.input(2), d);
    // Gate order: update z, reset r, hidden h. R_h is applied apart (after the reset), as is
    // Rb_h with linear_before_reset.
    Value r_zr = slice(im, r_d, 0, 0, 2 * r.hidden), r_h = slice(im, r_d, 0, 2 * r.hidden, r.hidden);
    std::optional<Value> bias, rb_h;
    if (im.has_input(3)) {
      Value b_d = direction_of(im, im.input(3), d);
      Value zr = summed_bias(im, r, b_d, 0, 2);
      Value wb_h = slice(im, b_d, 0, 2 * r.hidden, r.hidden);
      rb_h = im.reshape(slice(im, b_d, 0, 5 * r.hidden, r.hidden), {1, r.hidden});
      bias = linear_before_reset ? im.op("concat", {zr, wb_h}, {{"axis", int64_t(0)}})
                                 : im.op("concat", {zr, im.op("add", {wb_h, im.reshape(*rb_h, {r.hidden})})}, {{"axis", int64_t(0)}});
    }
    Projection proj = project(im, r, w_d, bias);
    DirectionResult out;
    out.h = initial_state(im, r, 5, "initial_h", d);
    out.ys.resize(size_t(r.seq));
    for (int64_t t : step_order(r, d)) {
      Value h_zr = im.op("matmul", {out.h, r_zr}, {{"transpose_b", int64_t(1)}});
      Value z = activate(im, r, f, im.op("add", {proj.at(im, r, t, 0), gate(im, r, h_zr, 0)}));
      Value reset = activate(im, r, f, im.op("add", {proj.at(im, r, t, 1), gate(im, r, h_zr, 1)}));
      Value hr;
      if (linear_before_reset) {
        hr = im.op("matmul", {out.h, r_h}, {{"transpose_b", int64_t(1)}});
        if (rb_h) hr = im.op("add", {hr, *rb_h});
        hr = im.op("multiply", {reset, hr});
      } else {
        hr = im.op("matmul", {im.op("multiply", {reset, out.h}), r_h}, {{"transpose_b", int64_t(1)}});
      }
      Value h_cand = activate(im, r, g, im.op("add", {proj.at(im, r, t, 2), hr}));
      // H = (1 - z) h + z H_prev
      Value one = im.scalar(1.0, r.dtype, 2, "one");
      Value h_new = im.op("add", {im.op("multiply", {im.op("subtract", {one, z}), h_cand}), im.op("multiply", {z, out.h})});
      std::optional<Value> m = step_mask(im, r, t);
      out.ys[size_t(t)] = m ? im.op("multiply", {*m, h_new}) : h_new;
      out.h = masked(im, m, h_new, out.h);
    }
    res.push_back(out);
  }
  set_outputs(im, r, res, false);
}

void rnn(Importer& im) {
  Recurrent r = read_common(im, 1, {"Tanh"});
  std::vector<DirectionResult> res;
  for (int64_t d = 0; d < r.dirs; ++d) {
    Value w_d = direction_of(im, im.input(1), d), r_d = direction_of(im, im.input(2), d);
    std::optional<Value> bias;
    if (im.has_input(3)) bias = summed_bias(im, r, direction_of(im, im.input(3), d), 0, 1);
    Projection proj = project(im, r, w_d, bias);
    DirectionResult out;
    out.h = initial_state(im, r, 5, "initial_h", d);
    out.ys.resize(size_t(r.seq));
    for (int64_t t : step_order(r, d)) {
      Value pre = im.op("add", {proj.at(im, r, t, 0), im.op("matmul", {out.h, r_d}, {{"transpose_b", int64_t(1)}})});
      Value h_new = activate(im, r, r.acts[size_t(d)], pre);
      std::optional<Value> m = step_mask(im, r, t);
      out.ys[size_t(t)] = m ? im.op("multiply", {*m, h_new}) : h_new;
      out.h = masked(im, m, h_new, out.h);
    }
    res.push_back(out);
  }
  set_outputs(im, r, res, false);
}

}  // namespace

void add_recurrent_converters(std::map<std::string, Converter>& out) {
  out["LSTM"] = lstm;
  out["GRU"] = gru;
  out["RNN"] = rnn;
}

}  // namespace loom::graph_opt::onnx_frontend
