// ONNX's LSTM, GRU and RNN through the importer (graph_opt/frontend/onnx/convert_recurrent.cc):
// models written as protobuf bytes, imported, run node by node (te::evaluate) and compiled for
// the CPU, against a naive C++ recurrence written from ONNX's operator specification (each
// batch entry walked over its own sequence length, the reverse direction from its own last
// step); and the converter's errors.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/error.h"
#include "common/protobuf_writer.h"

namespace loom::graph_opt {
namespace {

using runtime::NDArray;

#define REQUIRE_FRONTEND() \
  if (!onnx_frontend_available()) GTEST_SKIP() << "built without the ONNX frontend (libonnx-dev, libprotobuf-dev)"

using loom::test::Pb;

enum : int64_t { kFloat = 1, kInt32 = 6, kDouble = 11 };

Pb attr_int(const std::string& name, int64_t v) { return Pb().s(1, name).i(3, v).i(20, 2); }
Pb attr_float(const std::string& name, float v) { return Pb().s(1, name).f32(2, v).i(20, 1); }
Pb attr_str(const std::string& name, const std::string& v) { return Pb().s(1, name).s(4, v).i(20, 3); }
Pb attr_floats(const std::string& name, const std::vector<float>& v) {
  Pb a;
  a.s(1, name);
  for (float x : v) a.f32(7, x);
  return a.i(20, 6);
}
Pb attr_strs(const std::string& name, const std::vector<std::string>& v) {
  Pb a;
  a.s(1, name);
  for (const auto& x : v) a.s(9, x);
  return a.i(20, 8);
}

/// A float or int32 tensor in row-major order.
struct Tensor {
  std::vector<int64_t> dims;
  std::vector<double> data;
  int64_t type = kFloat;
  int64_t at(std::vector<int64_t> idx) const {
    int64_t k = 0;
    for (size_t d = 0; d < dims.size(); ++d) k = k * dims[d] + idx[d];
    return k;
  }
  NDArray array() const {
    NDArray a = NDArray::empty(dims, type == kFloat ? DataType::Float(32) : type == kDouble ? DataType::Float(64) : DataType::Int(32));
    for (size_t k = 0; k < data.size(); ++k) a.set(int64_t(k), data[k]);
    return a;
  }
  Pb proto(const std::string& name) const {
    Pb t;
    for (int64_t d : dims) t.i(1, d);
    std::string raw;
    for (double v : data) {
      if (type == kFloat) {
        float f = float(v);
        raw.append(reinterpret_cast<const char*>(&f), 4);
      } else if (type == kDouble) {
        raw.append(reinterpret_cast<const char*>(&v), 8);
      } else {
        int32_t x = int32_t(v);
        raw.append(reinterpret_cast<const char*>(&x), 4);
      }
    }
    return t.i(2, type).s(8, name).s(9, raw);
  }
};

Pb value_info(const std::string& name, const std::vector<int64_t>& dims, int64_t type) {
  Pb shape;
  for (int64_t d : dims) shape.m(1, Pb().i(1, d));
  return Pb().s(1, name).m(2, Pb().m(1, Pb().i(1, type).m(2, shape)));
}

/// One recurrent node and its data.
struct Case {
  std::string op = "LSTM";
  int64_t seq = 2, batch = 1, input = 3, hidden = 5;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = false, peephole = false, init_h = false, init_c = false;
  std::vector<int32_t> lens;  // empty: no sequence_lens
  bool lens_runtime = false;  // sequence_lens a graph input rather than an initializer
  bool weights_runtime = false;  // W, R, B and P graph inputs rather than initializers
  std::vector<std::string> acts;  // empty: the defaults
  std::vector<float> alpha, beta;
  float clip = 0;  // 0: none
  bool input_forget = false, linear_before_reset = false;
  std::vector<bool> outputs = {true, true, true};  // Y, Y_h, Y_c (LSTM)
  int64_t opset = 14;
  int64_t type = kFloat;  // of X, W, R, B, the states, P and the outputs
  uint32_t seed = 1;

  int gates() const { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int num_outputs() const { return op == "LSTM" ? 3 : 2; }
};

/// The graph inputs and initializers of a case, by ONNX input slot.
struct Data {
  std::vector<std::optional<Tensor>> in;  // X, W, R, B, sequence_lens, initial_h, initial_c, P
  std::vector<bool> runtime;              // graph input (else initializer)
};

Tensor random(std::vector<int64_t> dims, std::mt19937& rng, double scale, int64_t type) {
  Tensor t{dims, {}, type};
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::uniform_real_distribution<double> u(-scale, scale);
  for (int64_t k = 0; k < n; ++k) t.data.push_back(type == kFloat ? double(float(u(rng))) : u(rng));
  return t;
}

Data make_data(const Case& c) {
  std::mt19937 rng(c.seed);
  const int64_t g = c.gates(), h = c.hidden, dirs = c.dirs();
  Data d;
  d.in.resize(8);
  const bool w = c.weights_runtime;
  d.runtime = {true, w, w, w, c.lens_runtime, true, true, w};
  d.in[0] = random(c.layout ? std::vector<int64_t>{c.batch, c.seq, c.input} : std::vector<int64_t>{c.seq, c.batch, c.input},
                   rng, 1.0, c.type);
  d.in[1] = random({dirs, g * h, c.input}, rng, 0.6, c.type);
  d.in[2] = random({dirs, g * h, h}, rng, 0.6, c.type);
  if (c.bias) d.in[3] = random({dirs, 2 * g * h}, rng, 0.5, c.type);
  if (!c.lens.empty()) {
    Tensor l{{c.batch}, {}, kInt32};
    for (int32_t v : c.lens) l.data.push_back(v);
    d.in[4] = l;
  }
  std::vector<int64_t> state = c.layout ? std::vector<int64_t>{c.batch, dirs, h} : std::vector<int64_t>{dirs, c.batch, h};
  if (c.init_h) d.in[5] = random(state, rng, 0.8, c.type);
  if (c.init_c) d.in[6] = random(state, rng, 0.8, c.type);
  if (c.peephole) d.in[7] = random({dirs, 3 * h}, rng, 0.5, c.type);
  return d;
}

const char* kInputNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
const char* kOutputNames[] = {"Y", "Y_h", "Y_c"};

std::string model_bytes(const Case& c, const Data& d, std::vector<Pb> extra_attrs = {}) {
  Pb node;
  int last = 0;
  for (int k = 0; k < 8; ++k)
    if (d.in[size_t(k)]) last = k;
  for (int k = 0; k <= last; ++k) node.s(1, d.in[size_t(k)] ? kInputNames[k] : "");
  for (int k = 0; k < c.num_outputs(); ++k) node.s(2, c.outputs[size_t(k)] ? kOutputNames[k] : "");
  node.s(3, "rnn").s(4, c.op);
  std::vector<Pb> attrs = std::move(extra_attrs);
  attrs.push_back(attr_int("hidden_size", c.hidden));
  if (c.direction != "forward") attrs.push_back(attr_str("direction", c.direction));
  if (c.layout) attrs.push_back(attr_int("layout", c.layout));
  if (!c.acts.empty()) attrs.push_back(attr_strs("activations", c.acts));
  if (!c.alpha.empty()) attrs.push_back(attr_floats("activation_alpha", c.alpha));
  if (!c.beta.empty()) attrs.push_back(attr_floats("activation_beta", c.beta));
  if (c.clip > 0) attrs.push_back(attr_float("clip", c.clip));
  if (c.input_forget) attrs.push_back(attr_int("input_forget", 1));
  if (c.linear_before_reset) attrs.push_back(attr_int("linear_before_reset", 1));
  for (const Pb& a : attrs) node.m(5, a);
  Pb g;
  g.m(1, node).s(2, "g");
  for (int k = 0; k < 8; ++k) {
    if (!d.in[size_t(k)]) continue;
    const Tensor& t = *d.in[size_t(k)];
    if (d.runtime[size_t(k)]) g.m(11, value_info(kInputNames[k], t.dims, t.type));
    else g.m(5, t.proto(kInputNames[k]));
  }
  const int64_t s = c.seq, b = c.batch, dirs = c.dirs(), h = c.hidden;
  for (int k = 0; k < c.num_outputs(); ++k) {
    if (!c.outputs[size_t(k)]) continue;
    std::vector<int64_t> dims = k == 0 ? (c.layout ? std::vector<int64_t>{b, s, dirs, h} : std::vector<int64_t>{s, dirs, b, h})
                                       : (c.layout ? std::vector<int64_t>{b, dirs, h} : std::vector<int64_t>{dirs, b, h});
    g.m(12, value_info(kOutputNames[k], dims, c.type));
  }
  Pb model;
  model.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, c.opset));
  return model.b;
}

// ---------------------------------------------------------------- the naive recurrence

double act(const std::string& name, double alpha, double beta, double x) {
  std::string n;
  for (char ch : name) n += char(std::tolower(ch));
  if (n == "sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "tanh") return std::tanh(x);
  if (n == "relu") return x > 0 ? x : 0;
  if (n == "affine") return alpha * x + beta;
  if (n == "leakyrelu") return x >= 0 ? x : alpha * x;
  if (n == "thresholdedrelu") return x > alpha ? x : 0;
  if (n == "scaledtanh") return alpha * std::tanh(beta * x);
  if (n == "hardsigmoid") return std::max(0.0, std::min(1.0, alpha * x + beta));
  if (n == "elu") return x > 0 ? x : alpha * (std::exp(x) - 1);
  if (n == "softsign") return x / (1 + std::abs(x));
  if (n == "softplus") return std::log1p(std::exp(x));
  ADD_FAILURE() << "no activation " << name;
  return 0;
}

/// Y [seq, dirs, batch, H], Y_h and Y_c [dirs, batch, H] (layout 0), in double precision.
std::vector<Tensor> naive(const Case& c, const Data& d) {
  const int64_t S = c.seq, B = c.batch, I = c.input, H = c.hidden, D = c.dirs(), G = c.gates();
  const Tensor &X = *d.in[0], &W = *d.in[1], &R = *d.in[2];
  auto x_at = [&](int64_t t, int64_t b, int64_t i) { return X.data[size_t(c.layout ? X.at({b, t, i}) : X.at({t, b, i}))]; };
  auto state_at = [&](int slot, int64_t dir, int64_t b, int64_t j) {
    if (!d.in[size_t(slot)]) return 0.0;
    const Tensor& s = *d.in[size_t(slot)];
    return s.data[size_t(c.layout ? s.at({b, dir, j}) : s.at({dir, b, j}))];
  };
  auto bias = [&](int64_t dir, int64_t k) { return d.in[3] ? d.in[3]->data[size_t(d.in[3]->at({dir, k}))] : 0.0; };
  auto peep = [&](int64_t dir, int64_t k) { return d.in[7] ? d.in[7]->data[size_t(d.in[7]->at({dir, k}))] : 0.0; };
  // Activations with alpha/beta consumed in order by the functions that take them.
  std::vector<std::string> defaults = c.op == "LSTM" ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : c.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Tanh"};
  struct A { std::string n; double a, b; };
  std::vector<A> acts;
  size_t ai = 0, bi = 0;
  for (int64_t k = 0; k < D * int64_t(defaults.size()); ++k) {
    std::string n = c.acts.empty() ? defaults[size_t(k) % defaults.size()] : c.acts[size_t(k)];
    std::string l;
    for (char ch : n) l += char(std::tolower(ch));
    A a{l, 0, 0};
    if (l == "leakyrelu") a.a = 0.01;
    if (l == "thresholdedrelu" || l == "elu" || l == "affine" || l == "scaledtanh") a.a = 1;
    if (l == "scaledtanh") a.b = 1;
    if (l == "hardsigmoid") a = {l, 0.2, 0.5};
    const bool takes_alpha = a.a != 0 || l == "affine", takes_beta = l == "affine" || l == "scaledtanh" || l == "hardsigmoid";
    if (takes_alpha && ai < c.alpha.size()) a.a = c.alpha[ai++];
    if (takes_beta && bi < c.beta.size()) a.b = c.beta[bi++];
    acts.push_back(a);
  }
  auto clip = [&](double v) { return c.clip > 0 ? std::max(-double(c.clip), std::min(double(c.clip), v)) : v; };
  auto f = [&](const A& a, double v) { return act(a.n, a.a, a.b, clip(v)); };

  Tensor Y{{S, D, B, H}, std::vector<double>(size_t(S * D * B * H), 0.0)};
  Tensor Yh{{D, B, H}, std::vector<double>(size_t(D * B * H), 0.0)}, Yc = Yh;
  for (int64_t dir = 0; dir < D; ++dir) {
    const bool rev = c.direction == "reverse" || dir == 1;
    const size_t a0 = size_t(dir) * defaults.size();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = c.lens.empty() ? S : c.lens[size_t(b)];
      std::vector<double> h(size_t(H), 0.0), cell(size_t(H), 0.0);
      for (int64_t j = 0; j < H; ++j) h[size_t(j)] = state_at(5, dir, b, j), cell[size_t(j)] = state_at(6, dir, b, j);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t t = rev ? len - 1 - k : k;
        // xw[g*H+j] = x·W[g*H+j] + Wb, hr[g*H+j] = h·R[g*H+j] + Rb
        std::vector<double> xw(size_t(G * H)), hr(size_t(G * H));
        for (int64_t r = 0; r < G * H; ++r) {
          double sx = bias(dir, r), sh = bias(dir, G * H + r);
          for (int64_t i = 0; i < I; ++i) sx += x_at(t, b, i) * W.data[size_t(W.at({dir, r, i}))];
          for (int64_t j = 0; j < H; ++j) sh += h[size_t(j)] * R.data[size_t(R.at({dir, r, j}))];
          xw[size_t(r)] = sx, hr[size_t(r)] = sh;
        }
        std::vector<double> hn(size_t(H), 0.0), cn(size_t(H), 0.0);
        if (c.op == "LSTM") {
          for (int64_t j = 0; j < H; ++j) {
            auto pre = [&](int g) { return xw[size_t(g * H + j)] + hr[size_t(g * H + j)]; };
            const double ig = f(acts[a0], pre(0) + peep(dir, j) * cell[size_t(j)]);
            const double fg = c.input_forget ? 1 - ig : f(acts[a0], pre(2) + peep(dir, 2 * H + j) * cell[size_t(j)]);
            const double cg = f(acts[a0 + 1], pre(3));
            cn[size_t(j)] = fg * cell[size_t(j)] + ig * cg;
            const double og = f(acts[a0], pre(1) + peep(dir, H + j) * cn[size_t(j)]);
            hn[size_t(j)] = og * act(acts[a0 + 2].n, acts[a0 + 2].a, acts[a0 + 2].b, cn[size_t(j)]);
          }
        } else if (c.op == "GRU") {
          std::vector<double> z(size_t(H), 0.0), rg(size_t(H), 0.0);
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = f(acts[a0], xw[size_t(j)] + hr[size_t(j)]);
            rg[size_t(j)] = f(acts[a0], xw[size_t(H + j)] + hr[size_t(H + j)]);
          }
          for (int64_t j = 0; j < H; ++j) {
            double rec;
            if (c.linear_before_reset) {
              rec = rg[size_t(j)] * hr[size_t(2 * H + j)];
            } else {
              rec = bias(dir, G * H + 2 * H + j);
              for (int64_t q = 0; q < H; ++q) rec += rg[size_t(q)] * h[size_t(q)] * R.data[size_t(R.at({dir, 2 * H + j, q}))];
            }
            const double hc = f(acts[a0 + 1], xw[size_t(2 * H + j)] + rec);
            hn[size_t(j)] = (1 - z[size_t(j)]) * hc + z[size_t(j)] * h[size_t(j)];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) hn[size_t(j)] = f(acts[a0], xw[size_t(j)] + hr[size_t(j)]);
        }
        h = hn, cell = cn;
        for (int64_t j = 0; j < H; ++j) Y.data[size_t(Y.at({t, dir, b, j}))] = h[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh.data[size_t(Yh.at({dir, b, j}))] = h[size_t(j)];
        Yc.data[size_t(Yc.at({dir, b, j}))] = cell[size_t(j)];
      }
    }
  }
  if (c.layout) {  // Y [batch, seq, dirs, H], states [batch, dirs, H]
    Tensor y2{{B, S, D, H}, Y.data}, h2{{B, D, H}, Yh.data}, c2 = h2;
    for (int64_t t = 0; t < S; ++t)
      for (int64_t dir = 0; dir < D; ++dir)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j) {
            y2.data[size_t(y2.at({b, t, dir, j}))] = Y.data[size_t(Y.at({t, dir, b, j}))];
            if (t == 0) {
              h2.data[size_t(h2.at({b, dir, j}))] = Yh.data[size_t(Yh.at({dir, b, j}))];
              c2.data[size_t(c2.at({b, dir, j}))] = Yc.data[size_t(Yc.at({dir, b, j}))];
            }
          }
    return {y2, h2, c2};
  }
  return {Y, Yh, Yc};
}

// ---------------------------------------------------------------- running

std::vector<NDArray> run_compiled(const Graph& g, const std::vector<NDArray>& args) {
  runtime::Module m = compile(g, Target("llvm"));
  std::vector<NDArray> outs;
  std::vector<DLTensor*> call;
  for (const NDArray& a : args) call.push_back(a.dltensor());
  for (ValueRef v : g.outputs) outs.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
  for (const NDArray& a : outs) call.push_back(a.dltensor());
  m.get_function("run").call(call);
  return outs;
}

/// Imports the case and compares its outputs, node by node and compiled, with the naive ones.
void check(const Case& c, bool compiled = true) {
  SCOPED_TRACE(fmt::format("{} {} seq {} batch {} hidden {} layout {} lens [{}]{}", c.op, c.direction, c.seq, c.batch,
                           c.hidden, c.layout, fmt::join(c.lens, ","), c.lens_runtime ? " (run time)" : ""));
  Data d = make_data(c);
  Graph g = import_onnx_bytes(model_bytes(c, d), "rnn.onnx");
  std::vector<NDArray> args;
  for (int k = 0; k < 8; ++k)
    if (d.in[size_t(k)] && d.runtime[size_t(k)]) args.push_back(d.in[size_t(k)]->array());
  ASSERT_EQ(g.input_nodes().size(), args.size());
  std::vector<Tensor> want = naive(c, d);
  std::vector<Tensor> used;
  for (int k = 0; k < c.num_outputs(); ++k)
    if (c.outputs[size_t(k)]) used.push_back(want[size_t(k)]);
  std::vector<std::pair<std::string, std::vector<NDArray>>> runs = {{"reference", run_reference(g, args)}};
  if (compiled) runs.push_back({"compiled", run_compiled(g, args)});
  const double tol = c.type == kDouble ? 1e-10 : 1e-4;
  for (const auto& [mode, got] : runs) {
    ASSERT_EQ(got.size(), used.size()) << mode;
    for (size_t k = 0; k < used.size(); ++k) {
      ASSERT_EQ(got[k].shape(), used[k].dims) << mode << " output " << k;
      for (size_t e = 0; e < used[k].data.size(); ++e) {
        const double w = used[k].data[e], v = got[k].get(int64_t(e));
        ASSERT_NEAR(v, w, tol * (0.1 + std::abs(w))) << mode << " output " << k << " element " << e;
      }
    }
  }
}

TEST(RecurrentImport, ShapesAndDirectionsMatchTheNaiveRecurrence) {
  REQUIRE_FRONTEND();
  uint32_t seed = 10;
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (auto [batch, hidden, seq] : {std::tuple{1, 5, 1}, std::tuple{3, 17, 7}, std::tuple{3, 5, 7}, std::tuple{1, 17, 7}})
      for (const char* dir : {"forward", "reverse", "bidirectional"}) {
        Case c;
        c.op = op, c.batch = batch, c.hidden = hidden, c.seq = seq, c.direction = dir, c.input = 4;
        c.bias = c.init_h = c.init_c = (seed % 2 == 0);
        c.peephole = std::string(op) == "LSTM" && seed % 3 == 0;
        c.seed = seed++;
        // Compiling every one of these takes a while: the first shape of each direction and
        // the larger ones compile, the rest run node by node.
        check(c, batch == 3 || seq == 1);
      }
}

TEST(RecurrentImport, SequenceLensShorterThanTheSequence) {
  REQUIRE_FRONTEND();
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (bool run_time : {false, true}) {
      Case c;
      c.op = op, c.seq = 7, c.batch = 3, c.hidden = 5, c.direction = "bidirectional";
      c.bias = c.init_h = c.init_c = true;
      c.lens = {7, 3, 1};
      c.lens_runtime = run_time;
      c.seed = run_time ? 3 : 4;
      check(c);
    }
  Case c;  // a constant full length needs no mask
  c.op = "GRU", c.seq = 4, c.batch = 2, c.lens = {4, 4}, c.direction = "reverse";
  check(c);
}

TEST(RecurrentImport, LayoutOneIsBatchMajor) {
  REQUIRE_FRONTEND();
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    Case c;
    c.op = op, c.seq = 5, c.batch = 3, c.hidden = 4, c.layout = 1, c.direction = "bidirectional";
    c.init_h = c.init_c = c.bias = true;
    c.lens = {5, 2, 4};
    check(c);
  }
}

TEST(RecurrentImport, ActivationsClipAndVariants) {
  REQUIRE_FRONTEND();
  Case lstm;
  lstm.seq = 4, lstm.batch = 2, lstm.direction = "bidirectional", lstm.bias = lstm.peephole = true;
  lstm.acts = {"HardSigmoid", "LeakyRelu", "ScaledTanh", "Sigmoid", "Affine", "Softsign"};
  lstm.alpha = {0.3f, 0.2f, 0.8f, 0.7f};  // HardSigmoid, LeakyRelu, ScaledTanh, Affine
  lstm.beta = {0.4f, 1.5f, 0.1f};        // HardSigmoid, ScaledTanh, Affine
  check(lstm);
  lstm.acts = {"Sigmoid", "Elu", "Softplus", "sigmoid", "ThresholdedRelu", "Relu"};
  lstm.alpha = {0.5f, 0.1f};
  lstm.beta = {};
  lstm.clip = 0.7f;
  lstm.input_forget = true;
  check(lstm);

  Case gru;
  gru.op = "GRU", gru.seq = 5, gru.batch = 3, gru.bias = gru.init_h = true, gru.linear_before_reset = true;
  check(gru);
  gru.direction = "reverse", gru.clip = 0.5f, gru.acts = {"HardSigmoid", "Softsign"};
  check(gru);

  Case rnn;
  rnn.op = "RNN", rnn.seq = 3, rnn.batch = 2, rnn.bias = true, rnn.direction = "bidirectional";
  rnn.acts = {"Relu", "Affine"}, rnn.alpha = {2.0f}, rnn.beta = {-0.5f};
  check(rnn);
}

TEST(RecurrentImport, WeightsGivenAtRunTime) {
  REQUIRE_FRONTEND();
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    Case c;
    c.op = op, c.seq = 3, c.batch = 2, c.direction = "bidirectional", c.weights_runtime = true;
    c.bias = c.init_h = true;
    c.peephole = std::string(op) == "LSTM";
    check(c);
  }
}

TEST(RecurrentImport, Float64) {
  REQUIRE_FRONTEND();
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    Case c;
    c.op = op, c.type = kDouble, c.seq = 4, c.batch = 2, c.direction = "bidirectional", c.bias = c.init_h = true;
    c.lens = {4, 2};
    check(c);
  }
}

TEST(RecurrentImport, AnySubsetOfOutputs) {
  REQUIRE_FRONTEND();
  for (std::vector<bool> outs : {std::vector<bool>{false, true, false}, {false, false, true}, {true, false, false}}) {
    Case c;
    c.seq = 3, c.batch = 2, c.init_c = true, c.outputs = outs;
    check(c, false);
  }
  Case c;
  c.op = "GRU", c.outputs = {false, true};
  check(c, false);
}

TEST(RecurrentImport, BeforeOpset14LayoutIsNotAnAttribute) {
  REQUIRE_FRONTEND();
  Case c;
  c.opset = 13;  // LSTM-7, the same operator from opset 7 to 13
  c.seq = 3, c.batch = 2;
  check(c, false);
  Data d = make_data(c);
  try {
    import_onnx_bytes(model_bytes(c, d, {attr_int("layout", 0)}), "rnn.onnx");
    ADD_FAILURE() << "layout accepted at opset 13";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layout"), std::string::npos) << e.what();
  }
}

/// The message of the error importing case `c` (with `extra` attributes) throws.
std::string import_error(const Case& c, std::vector<Pb> extra = {}, const std::function<void(Data&)>& edit = {}) {
  Data d = make_data(c);
  if (edit) edit(d);
  try {
    import_onnx_bytes(model_bytes(c, d, std::move(extra)), "rnn.onnx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RecurrentImport, Errors) {
  REQUIRE_FRONTEND();
  auto has = [](const std::string& msg, const std::string& what) {
    EXPECT_NE(msg.find(what), std::string::npos) << "'" << msg << "' lacks '" << what << "'";
  };
  Case c;
  c.seq = 3;
  {
    Case u = c;
    u.acts = {"Sigmoid", "Gelu", "Tanh"};
    has(import_error(u), "activation 'Gelu'");
    u.acts = {"Sigmoid", "Tanh"};
    has(import_error(u), "lists 2 functions; 1 direction(s) take 3");
    u.acts = {"Sigmoid", "Tanh", "Tanh"}, u.alpha = {0.5f};
    has(import_error(u), "hold more values than activations");
  }
  {
    Case u = c;
    u.direction = "sideways";
    has(import_error(u), "direction 'sideways'");
  }
  has(import_error(c, {attr_int("layout", 2)}), "layout 2 is not 0 or 1");
  has(import_error(c, {}, [](Data& d) { d.in[1]->dims[1] = 19, d.in[1]->data.resize(19 * 3); }),
      "input W has shape [1,19,3]; expected [1,20,3]");
  has(import_error(c, {}, [](Data& d) { d.in[2]->dims = {1, 20, 4}, d.in[2]->data.resize(80); }),
      "hidden_size 5 does not match R [1,20,4]");
  {
    Case u = c;
    u.lens = {4};
    has(import_error(u), "sequence_lens[0] = 4 is outside [0, 3]");
    u.lens = {1};
    has(import_error(u, {}, [](Data& d) { d.in[4]->dims = {2}, d.in[4]->data = {1, 2}; }),
        "sequence_lens has shape [2]; expected [1]");
  }
  {
    Case u = c;
    u.direction = "bidirectional";
    has(import_error(u, {}, [](Data& d) { d.in[1]->dims[0] = 1, d.in[1]->data.resize(60); }), "input W has shape [1,20,3]");
  }
  {
    Case u = c;
    u.clip = -1;
    has(import_error(u, {attr_float("clip", -1.0f)}), "clip -1 is not positive");
  }
  {
    Case u = c;
    u.seq = 1025;
    u.input = 1, u.hidden = 1;
    std::string msg = import_error(u);
    has(msg, "1025 time steps");
    has(msg, "up to 1024 steps");
  }
  {
    Case u = c;
    u.peephole = true;
    has(import_error(u, {}, [](Data& d) { d.in[7]->dims = {1, 10}, d.in[7]->data.resize(10); }),
        "input P has shape [1,10]; expected [1,15]");
  }
}

TEST(RecurrentImport, StepsBecomeASmallGroupEach) {
  REQUIRE_FRONTEND();
  // The input projection is one matmul per direction, and each step adds one matmul more.
  Case c;
  c.seq = 6, c.batch = 2, c.direction = "bidirectional", c.bias = c.init_h = true;
  Data d = make_data(c);
  Graph g = import_onnx_bytes(model_bytes(c, d), "rnn.onnx");
  int matmuls = 0;
  for (const Node& n : g.nodes)
    if (n.kind == NodeKind::kOp && n.op == "matmul") ++matmuls;
  EXPECT_EQ(matmuls, 2 + 2 * 6);
}

}  // namespace
}  // namespace loom::graph_opt
