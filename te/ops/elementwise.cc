// Elementwise (unary, tag "elemwise") and broadcasting (binary, tag "broadcast") ops.
#include <functional>

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// out = f(a[bcast], b[bcast]) with numpy-style broadcasting.
Tensor broadcast_binary(const Tensor& a, const Tensor& b, const char* op, const std::string& name,
                        Expr (*f)(Expr, Expr)) {
  auto sa = const_shape(a, op, "a");
  auto sb = const_shape(b, op, "b");
  detail::check_same_dtype(a, b, op, "a", "b");
  size_t n = std::max(sa.size(), sb.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    // i counts dims from the right
    int64_t da = i < sa.size() ? sa[sa.size() - 1 - i] : 1;
    int64_t db = i < sb.size() ? sb[sb.size() - 1 - i] : 1;
    LOOM_CHECK(da == db || da == 1 || db == 1,
               "{}: a is {} but b is {}; dim {} from the right has extents {} and {}, which neither match nor "
               "broadcast (one must be 1)",
               op, shape_str(sa), shape_str(sb), i, da, db);
    out[n - 1 - i] = std::max(da, db);
  }
  auto index = [n](const std::vector<Var>& iv, const std::vector<int64_t>& s) {
    std::vector<Expr> idx;
    size_t lead = n - s.size();
    for (size_t d = 0; d < s.size(); ++d)
      idx.push_back(s[d] == 1 ? Expr(0) : Expr(iv[lead + d]));
    return idx;
  };
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr { return f(a(index(iv, sa)), b(index(iv, sb))); };
  return compute(to_exprs(out), fc, name, "broadcast");
}

template <typename F>
Tensor unary(const Tensor& x, const char* op, const std::string& name, F f) {
  auto s = const_shape(x, op, "x");
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr { return f(x(std::vector<Expr>(iv.begin(), iv.end()))); };
  return compute(to_exprs(s), fc, name, "elemwise");
}

Expr add_e(Expr a, Expr b) { return a + b; }
Expr sub_e(Expr a, Expr b) { return a - b; }
Expr mul_e(Expr a, Expr b) { return a * b; }
Expr div_e(Expr a, Expr b) { return a / b; }
Expr max_e(Expr a, Expr b) { return te::max(a, b); }
Expr min_e(Expr a, Expr b) { return te::min(a, b); }
Expr pow_e(Expr a, Expr b) { return te::pow(a, b); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "add", name, add_e);
}
Tensor subtract(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "subtract", name, sub_e);
}
Tensor multiply(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "multiply", name, mul_e);
}
Tensor divide(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "divide", name, div_e);
}
Tensor maximum(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "maximum", name, max_e);
}
Tensor minimum(const Tensor& a, const Tensor& b, const std::string& name) {
  return broadcast_binary(a, b, "minimum", name, min_e);
}

Tensor power(const Tensor& a, const Tensor& b, const std::string& name) {
  LOOM_CHECK(a.dtype().is_float(), "power: a must be floating point, got {}", a.dtype().str());
  return broadcast_binary(a, b, "power", name, pow_e);
}

namespace {

/// The channel axis of a per-channel operator: its position and, in a blocked layout, the
/// position and size of its block.
struct ChannelAxis {
  int outer;
  int inner = -1;
  int64_t block = 1;
};

ChannelAxis channel_axis(size_t ndim, int axis, const std::string& layout, std::string_view op) {
  int ax = detail::normalize_axis(axis, ndim, op);
  if (layout.empty()) return {ax};
  Layout l = Layout::parse(layout);
  LOOM_CHECK(l.ndim() == ndim, "{}: layout '{}' has {} axes but the data has {} dims", op, layout, l.ndim(), ndim);
  char c = l.axes[size_t(ax)].name;
  LOOM_CHECK(l.axes[size_t(ax)].factor == 0,
             "{}: axis {} of layout '{}' is the sub-axis '{}'; name the primal (uppercase) channel axis", op, ax,
             layout, c);
  ChannelAxis ca{ax};
  if (int64_t b = l.block_of(c)) {
    ca.inner = l.index_of(char(c - 'A' + 'a'));
    ca.block = b;
  }
  return ca;
}

}  // namespace

Expr channel_index(const std::vector<Var>& index, int axis, const std::string& layout, std::string_view op) {
  ChannelAxis ca = channel_axis(index.size(), axis, layout, op);
  if (ca.inner < 0) return index[size_t(ca.outer)];
  return index[size_t(ca.outer)] * int_const(ca.block) + index[size_t(ca.inner)];
}

int64_t channel_count(const std::vector<int64_t>& shape, int axis, const std::string& layout, std::string_view op) {
  ChannelAxis ca = channel_axis(shape.size(), axis, layout, op);
  return shape[size_t(ca.outer)] * ca.block;
}

namespace {

/// Checks that each of `params` is 1-D with `count` elements and data's dtype.
void check_channel_params(std::string_view op, const Tensor& data, const std::vector<int64_t>& ds, int axis,
                          int64_t count, const std::vector<std::pair<const Tensor*, const char*>>& params) {
  for (auto [t, what] : params) {
    auto ts = const_shape(*t, op, what);
    LOOM_CHECK(ts.size() == 1 && ts[0] == count,
               "{}: data is {} with {} channels along axis {} but {} is {}; it must be 1-D with one element per "
               "channel",
               op, shape_str(ds), count, detail::normalize_axis(axis, ds.size(), op), what, shape_str(ts));
    detail::check_same_dtype(data, *t, op, "data", what);
  }
}

}  // namespace

Tensor bias_add(const Tensor& data, const Tensor& bias, int axis, const std::string& layout, const std::string& name) {
  auto s = const_shape(data, "bias_add", "data");
  int64_t count = channel_count(s, axis, layout, "bias_add");
  check_channel_params("bias_add", data, s, axis, count, {{&bias, "bias"}});
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr {
    return data(std::vector<Expr>(iv.begin(), iv.end())) + bias(channel_index(iv, axis, layout, "bias_add"));
  };
  return compute(to_exprs(s), fc, name, "broadcast");
}

Tensor batch_norm(const Tensor& data, const Tensor& gamma, const Tensor& beta, const Tensor& mean, const Tensor& var,
                  int axis, double eps, const std::string& layout, const std::string& name) {
  const char* op = "batch_norm";
  auto s = const_shape(data, op, "data");
  LOOM_CHECK(data.dtype().is_float(), "batch_norm: data must be floating point, got {}", data.dtype().str());
  LOOM_CHECK(eps >= 0, "batch_norm: epsilon must be non-negative, got {}", eps);
  int64_t count = channel_count(s, axis, layout, op);
  check_channel_params(op, data, s, axis, count,
                       {{&gamma, "gamma"}, {&beta, "beta"}, {&mean, "moving_mean"}, {&var, "moving_var"}});
  Expr e = detail::const_of(data.dtype(), eps);
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr {
    Expr c = channel_index(iv, axis, layout, op);
    Expr x = data(std::vector<Expr>(iv.begin(), iv.end()));
    return (x - mean(c)) / te::sqrt(var(c) + e) * gamma(c) + beta(c);
  };
  return compute(to_exprs(s), fc, name, "broadcast");
}

Tensor relu(const Tensor& x, const std::string& name) {
  DataType t = x.dtype();
  return unary(x, "relu", name, [t](Expr v) { return te::max(v, make_zero(t)); });
}

Tensor clip(const Tensor& x, double lo, double hi, const std::string& name) {
  LOOM_CHECK(lo <= hi, "clip: lower bound {} is greater than upper bound {}", lo, hi);
  Expr l = detail::const_of(x.dtype(), lo), h = detail::const_of(x.dtype(), hi);
  return unary(x, "clip", name, [l, h](Expr v) { return te::min(te::max(v, l), h); });
}

Tensor exp(const Tensor& x, const std::string& name) {
  return unary(x, "exp", name, [](Expr v) { return te::exp(v); });
}
Tensor tanh(const Tensor& x, const std::string& name) {
  return unary(x, "tanh", name, [](Expr v) { return te::tanh(v); });
}
Tensor sigmoid(const Tensor& x, const std::string& name) {
  return unary(x, "sigmoid", name, [](Expr v) { return te::sigmoid(v); });
}

namespace {

void check_float(const Tensor& x, const char* op) {
  LOOM_CHECK(x.defined(), "{}: x is an undefined tensor", op);
  LOOM_CHECK(x.dtype().is_float(), "{}: x must be floating point, got {}", op, x.dtype().str());
}

/// The floating-point constant v of x's dtype.
std::function<Expr(double)> consts(const Tensor& x) {
  DataType t = x.dtype();
  return [t](double v) { return detail::const_of(t, v); };
}

Expr softplus_e(Expr v, const std::function<Expr(double)>& c) {
  return te::max(v, c(0.0)) + te::log(c(1.0) + te::exp(-te::abs(v)));
}

/// x for x > 0, alpha (e^x - 1) otherwise: elu, and selu before its scale.
Expr elu_e(Expr v, double alpha, const std::function<Expr(double)>& c) {
  return te::select(v > c(0.0), v, c(alpha) * (te::exp(v) - c(1.0)));
}

}  // namespace

Tensor sqrt(const Tensor& x, const std::string& name) {
  check_float(x, "sqrt");
  return unary(x, "sqrt", name, [](Expr v) { return te::sqrt(v); });
}
Tensor log(const Tensor& x, const std::string& name) {
  check_float(x, "log");
  return unary(x, "log", name, [](Expr v) { return te::log(v); });
}
Tensor abs(const Tensor& x, const std::string& name) {
  return unary(x, "abs", name, [](Expr v) { return te::abs(v); });
}
Tensor negative(const Tensor& x, const std::string& name) {
  return unary(x, "negative", name, [](Expr v) { return -v; });
}
Tensor erf(const Tensor& x, const std::string& name) {
  check_float(x, "erf");
  return unary(x, "erf", name, [](Expr v) { return te::erf(v); });
}

Tensor gelu(const Tensor& x, bool tanh_approximation, const std::string& name) {
  check_float(x, "gelu");
  auto c = consts(x);
  if (tanh_approximation) {
    return unary(x, "gelu", name, [c](Expr v) {
      Expr inner = c(0.7978845608028654) * (v + c(0.044715) * v * v * v);
      return c(0.5) * v * (c(1.0) + te::tanh(inner));
    });
  }
  return unary(x, "gelu", name, [c](Expr v) { return c(0.5) * v * (c(1.0) + te::erf(v * c(0.7071067811865476))); });
}

Tensor cast(const Tensor& x, DataType dtype, const std::string& name) {
  LOOM_CHECK(dtype.lanes() == 1 && dtype.bits() > 0, "cast: the target dtype must be a scalar type, got {}",
             dtype.str());
  return unary(x, "cast", name, [dtype](Expr v) { return te::cast(dtype, v); });
}

Tensor hard_sigmoid(const Tensor& x, double alpha, double beta, const std::string& name) {
  check_float(x, "hard_sigmoid");
  auto c = consts(x);
  return unary(x, "hard_sigmoid", name,
               [c, alpha, beta](Expr v) { return te::max(c(0.0), te::min(c(1.0), c(alpha) * v + c(beta))); });
}
Tensor hard_swish(const Tensor& x, const std::string& name) {
  check_float(x, "hard_swish");
  auto c = consts(x);
  return unary(x, "hard_swish", name,
               [c](Expr v) { return v * te::max(c(0.0), te::min(c(1.0), v * c(1.0 / 6.0) + c(0.5))); });
}
Tensor leaky_relu(const Tensor& x, double alpha, const std::string& name) {
  check_float(x, "leaky_relu");
  auto c = consts(x);
  return unary(x, "leaky_relu", name, [c, alpha](Expr v) { return te::select(v < c(0.0), c(alpha) * v, v); });
}
Tensor elu(const Tensor& x, double alpha, const std::string& name) {
  check_float(x, "elu");
  auto c = consts(x);
  return unary(x, "elu", name, [c, alpha](Expr v) { return elu_e(v, alpha, c); });
}
Tensor selu(const Tensor& x, double alpha, double gamma, const std::string& name) {
  check_float(x, "selu");
  auto c = consts(x);
  return unary(x, "selu", name, [c, alpha, gamma](Expr v) { return c(gamma) * elu_e(v, alpha, c); });
}
Tensor celu(const Tensor& x, double alpha, const std::string& name) {
  check_float(x, "celu");
  LOOM_CHECK(alpha != 0.0, "celu: alpha must not be 0");
  auto c = consts(x);
  return unary(x, "celu", name, [c, alpha](Expr v) {
    return te::max(c(0.0), v) + te::min(c(0.0), c(alpha) * (te::exp(v / c(alpha)) - c(1.0)));
  });
}
Tensor softplus(const Tensor& x, const std::string& name) {
  check_float(x, "softplus");
  auto c = consts(x);
  return unary(x, "softplus", name, [c](Expr v) { return softplus_e(v, c); });
}
Tensor softsign(const Tensor& x, const std::string& name) {
  check_float(x, "softsign");
  auto c = consts(x);
  return unary(x, "softsign", name, [c](Expr v) { return v / (c(1.0) + te::abs(v)); });
}
Tensor thresholded_relu(const Tensor& x, double alpha, const std::string& name) {
  check_float(x, "thresholded_relu");
  auto c = consts(x);
  return unary(x, "thresholded_relu", name, [c, alpha](Expr v) { return te::select(v > c(alpha), v, c(0.0)); });
}
Tensor mish(const Tensor& x, const std::string& name) {
  check_float(x, "mish");
  auto c = consts(x);
  return unary(x, "mish", name, [c](Expr v) { return v * te::tanh(softplus_e(v, c)); });
}
Tensor floor(const Tensor& x, const std::string& name) {
  check_float(x, "floor");
  return unary(x, "floor", name, [](Expr v) { return te::floor(v); });
}
Tensor ceil(const Tensor& x, const std::string& name) {
  check_float(x, "ceil");
  return unary(x, "ceil", name, [](Expr v) { return te::ceil(v); });
}
Tensor round(const Tensor& x, const std::string& name) {
  check_float(x, "round");
  return unary(x, "round", name, [](Expr v) { return te::round(v); });
}
Tensor reciprocal(const Tensor& x, const std::string& name) {
  check_float(x, "reciprocal");
  auto c = consts(x);
  return unary(x, "reciprocal", name, [c](Expr v) { return c(1.0) / v; });
}
Tensor sin(const Tensor& x, const std::string& name) {
  check_float(x, "sin");
  DataType t = x.dtype();
  return unary(x, "sin", name, [t](Expr v) { return te::call(t, "sin", {v}); });
}
Tensor cos(const Tensor& x, const std::string& name) {
  check_float(x, "cos");
  DataType t = x.dtype();
  return unary(x, "cos", name, [t](Expr v) { return te::call(t, "cos", {v}); });
}
Tensor sign(const Tensor& x, const std::string& name) {
  DataType t = x.dtype();
  LOOM_CHECK(!t.is_bool(), "sign: x must be numeric, got {}", t.str());
  return unary(x, "sign", name, [t](Expr v) {
    Expr zero = make_zero(t);
    if (t.is_uint()) return te::select(v > zero, make_const(t, int64_t(1)), zero);
    return te::select(v > zero, make_const(t, int64_t(1)), te::select(v < zero, make_const(t, int64_t(-1)), v));
  });
}

}  // namespace loom::te::ops
