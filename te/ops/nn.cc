// Convolutions and pooling: windowed reductions over (optionally padded) NCHW/NHWC data.
#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// v * s, leaving v alone for s == 1.
Expr scaled(const Expr& v, int64_t s) { return s == 1 ? v : v * int_const(s); }

/// Output extent of a window of `window` taps spaced `dil` apart sliding by `stride` over
/// `in` elements padded by `pad` on both sides.
int64_t out_extent(std::string_view op, const char* dim, int64_t in, int64_t window, int64_t stride, int64_t pad,
                   int64_t dil) {
  int64_t span = dil * (window - 1) + 1;
  LOOM_CHECK(window > 0, "{}: the window is empty along {} ({} taps)", op, dim, window);
  LOOM_CHECK(in + 2 * pad >= span,
             "{}: the window spans {} elements along {} (size {}, dilation {}) but the padded input has only {} "
             "({} + 2*{})",
             op, span, dim, window, dil, in + 2 * pad, in, pad);
  return (in + 2 * pad - span) / stride + 1;
}

struct ConvDims {
  int64_t N, C, H, W, K, R, S, OH, OW, groups;
};

ConvDims check_conv(std::string_view op, const Tensor& data, const Tensor& kernel, bool nhwc, Pair stride,
                    Pair padding, Pair dilation, int64_t groups) {
  auto d = const_shape(data, 4, op, "data", nhwc ? "[N,H,W,C]" : "[N,C,H,W]");
  auto w = const_shape(kernel, 4, op, "kernel", nhwc ? "[R,S,C/groups,K]" : "[K,C/groups,R,S]");
  detail::check_same_dtype(data, kernel, op, "data", "kernel");
  detail::check_pairs(op, stride, padding, dilation);
  ConvDims c{};
  c.N = d[0];
  c.C = nhwc ? d[3] : d[1];
  c.H = nhwc ? d[1] : d[2];
  c.W = nhwc ? d[2] : d[3];
  c.K = nhwc ? w[3] : w[0];
  int64_t kc = nhwc ? w[2] : w[1];
  c.R = nhwc ? w[0] : w[2];
  c.S = nhwc ? w[1] : w[3];
  c.groups = groups;
  LOOM_CHECK(groups > 0, "{}: groups must be positive, got {}", op, groups);
  LOOM_CHECK(c.C % groups == 0, "{}: data has {} channels, not divisible by groups={}", op, c.C, groups);
  LOOM_CHECK(c.K % groups == 0, "{}: kernel has {} output channels, not divisible by groups={}", op, c.K, groups);
  LOOM_CHECK(kc == c.C / groups,
             "{}: data is {} but kernel is {}; the kernel's input channels ({}) must equal data's channels / groups "
             "({} / {} = {})",
             op, shape_str(d), shape_str(w), kc, c.C, groups, c.C / groups);
  c.OH = out_extent(op, "height", c.H, c.R, stride[0], padding[0], dilation[0]);
  c.OW = out_extent(op, "width", c.W, c.S, stride[1], padding[1], dilation[1]);
  return c;
}

/// data padded by `padding` on the two spatial dims (h_dim, h_dim+1), or data itself.
Tensor pad_spatial(const Tensor& data, int h_dim, Pair padding, Expr value = Expr()) {
  if (padding[0] == 0 && padding[1] == 0) return data;
  std::vector<int64_t> before(4, 0);
  before[h_dim] = padding[0];
  before[h_dim + 1] = padding[1];
  return pad(data, before, before, std::move(value), "pad");
}

}  // namespace

Tensor conv2d_nchw(const Tensor& data, const Tensor& kernel, Pair stride, Pair padding, Pair dilation, int64_t groups,
                   const std::string& name) {
  ConvDims c = check_conv("conv2d_nchw", data, kernel, false, stride, padding, dilation, groups);
  Tensor p = pad_spatial(data, 2, padding);
  int64_t cpg = c.C / groups, kpg = c.K / groups;
  IterVar rc = reduce_axis(Range(0, int_const(cpg)), "rc");
  IterVar ry = reduce_axis(Range(0, int_const(c.R)), "ry");
  IterVar rx = reduce_axis(Range(0, int_const(c.S)), "rx");
  return compute(to_exprs({c.N, c.K, c.OH, c.OW}), [&](Var n, Var k, Var y, Var x) {
    Expr ch = groups == 1 ? Expr(rc) : floordiv(k, int_const(kpg)) * int_const(cpg) + rc;
    Expr h = scaled(y, stride[0]) + scaled(ry, dilation[0]);
    Expr w = scaled(x, stride[1]) + scaled(rx, dilation[1]);
    return sum(p(n, ch, h, w) * kernel(k, rc, ry, rx), {rc, ry, rx});
  }, name, "conv2d_nchw");
}

Tensor conv2d_nhwc(const Tensor& data, const Tensor& kernel, Pair stride, Pair padding, Pair dilation, int64_t groups,
                   const std::string& name) {
  ConvDims c = check_conv("conv2d_nhwc", data, kernel, true, stride, padding, dilation, groups);
  Tensor p = pad_spatial(data, 1, padding);
  int64_t cpg = c.C / groups, kpg = c.K / groups;
  IterVar ry = reduce_axis(Range(0, int_const(c.R)), "ry");
  IterVar rx = reduce_axis(Range(0, int_const(c.S)), "rx");
  IterVar rc = reduce_axis(Range(0, int_const(cpg)), "rc");
  return compute(to_exprs({c.N, c.OH, c.OW, c.K}), [&](Var n, Var y, Var x, Var k) {
    Expr ch = groups == 1 ? Expr(rc) : floordiv(k, int_const(kpg)) * int_const(cpg) + rc;
    Expr h = scaled(y, stride[0]) + scaled(ry, dilation[0]);
    Expr w = scaled(x, stride[1]) + scaled(rx, dilation[1]);
    return sum(p(n, h, w, ch) * kernel(ry, rx, rc, k), {ry, rx, rc});
  }, name, "conv2d_nhwc");
}

Tensor depthwise_conv2d_nchw(const Tensor& data, const Tensor& kernel, Pair stride, Pair padding, Pair dilation,
                             const std::string& name) {
  const char* op = "depthwise_conv2d_nchw";
  auto d = const_shape(data, 4, op, "data", "[N,C,H,W]");
  auto w = const_shape(kernel, 4, op, "kernel", "[C,multiplier,R,S]");
  detail::check_same_dtype(data, kernel, op, "data", "kernel");
  detail::check_pairs(op, stride, padding, dilation);
  LOOM_CHECK(d[1] == w[0], "{}: data is {} but kernel is {}; the kernel's first dim must equal data's channels ({})",
             op, shape_str(d), shape_str(w), d[1]);
  int64_t mult = w[1];
  int64_t OH = out_extent(op, "height", d[2], w[2], stride[0], padding[0], dilation[0]);
  int64_t OW = out_extent(op, "width", d[3], w[3], stride[1], padding[1], dilation[1]);
  Tensor p = pad_spatial(data, 2, padding);
  IterVar ry = reduce_axis(Range(0, int_const(w[2])), "ry");
  IterVar rx = reduce_axis(Range(0, int_const(w[3])), "rx");
  return compute(to_exprs({d[0], d[1] * mult, OH, OW}), [&](Var n, Var k, Var y, Var x) {
    Expr c = mult == 1 ? Expr(k) : floordiv(k, int_const(mult));
    Expr m = mult == 1 ? Expr(0) : floormod(k, int_const(mult));
    Expr h = scaled(y, stride[0]) + scaled(ry, dilation[0]);
    Expr ww = scaled(x, stride[1]) + scaled(rx, dilation[1]);
    return sum(p(n, c, h, ww) * kernel(c, m, ry, rx), {ry, rx});
  }, name, "depthwise_conv2d_nchw");
}

Tensor conv2d_nchwc(const Tensor& data, const Tensor& kernel, Pair stride, Pair padding, Pair dilation,
                    const std::string& name) {
  const char* op = "conv2d_nchwc";
  auto d = const_shape(data, op, "data");
  auto w = const_shape(kernel, op, "kernel");
  const bool blocked = d.size() == 5;
  LOOM_CHECK(d.size() == 4 || d.size() == 5, "{}: data must be [N,C,H,W] or [N,C/ib,H,W,ib] but is {}", op,
             shape_str(d));
  LOOM_CHECK(w.size() == (blocked ? 6u : 5u), "{}: data is {}, so kernel must be {} but is {}", op, shape_str(d),
             blocked ? "[K/ob,C/ib,R,S,ib,ob]" : "[K/ob,C,R,S,ob]", shape_str(w));
  detail::check_same_dtype(data, kernel, op, "data", "kernel");
  detail::check_pairs(op, stride, padding, dilation);
  LOOM_CHECK(w[1] == d[1] && (!blocked || w[4] == d[4]),
             "{}: data is {} but kernel is {}; the kernel's input channels (dims 1{}) must match the data's", op,
             shape_str(d), shape_str(w), blocked ? " and 4" : "");
  const int64_t ob = w.back(), R = w[2], S = w[3];
  int64_t OH = out_extent(op, "height", d[2], R, stride[0], padding[0], dilation[0]);
  int64_t OW = out_extent(op, "width", d[3], S, stride[1], padding[1], dilation[1]);
  std::vector<int64_t> before(d.size(), 0);
  before[2] = padding[0];
  before[3] = padding[1];
  Tensor p = padding[0] || padding[1] ? pad(data, before, before, Expr(), "pad") : data;
  IterVar ry = reduce_axis(Range(0, int_const(R)), "ry");
  IterVar rx = reduce_axis(Range(0, int_const(S)), "rx");
  if (blocked) {
    IterVar rco = reduce_axis(Range(0, int_const(d[1])), "rco");
    IterVar rci = reduce_axis(Range(0, int_const(d[4])), "rci");
    return compute(to_exprs({d[0], w[0], OH, OW, ob}), [&](Var n, Var kb, Var y, Var x, Var v) {
      Expr h = scaled(y, stride[0]) + scaled(ry, dilation[0]);
      Expr ww = scaled(x, stride[1]) + scaled(rx, dilation[1]);
      return sum(p(n, rco, h, ww, rci) * kernel(kb, rco, ry, rx, rci, v), {rco, ry, rx, rci});
    }, name, "conv2d_nchwc");
  }
  IterVar rc = reduce_axis(Range(0, int_const(d[1])), "rc");
  return compute(to_exprs({d[0], w[0], OH, OW, ob}), [&](Var n, Var kb, Var y, Var x, Var v) {
    Expr h = scaled(y, stride[0]) + scaled(ry, dilation[0]);
    Expr ww = scaled(x, stride[1]) + scaled(rx, dilation[1]);
    return sum(p(n, rc, h, ww) * kernel(kb, rc, ry, rx, v), {rc, ry, rx});
  }, name, "conv2d_nchwc");
}

Tensor depthwise_conv2d_nchwc(const Tensor& data, const Tensor& kernel, Pair stride, Pair padding, Pair dilation,
                              const std::string& name) {
  const char* op = "depthwise_conv2d_nchwc";
  auto d = const_shape(data, 5, op, "data", "[N,C/b,H,W,b]");
  auto w = const_shape(kernel, 6, op, "kernel", "[C/b,1,R,S,1,b]");
  detail::check_same_dtype(data, kernel, op, "data", "kernel");
  detail::check_pairs(op, stride, padding, dilation);
  LOOM_CHECK(w[0] == d[1] && w[1] == 1 && w[4] == 1 && w[5] == d[4],
             "{}: data is {} but kernel is {}; the kernel must be [{},1,R,S,1,{}] (one filter per channel)", op,
             shape_str(d), shape_str(w), d[1], d[4]);
  int64_t OH = out_extent(op, "height", d[2], w[2], stride[0], padding[0], dilation[0]);
  int64_t OW = out_extent(op, "width", d[3], w[3], stride[1], padding[1], dilation[1]);
  std::vector<int64_t> before{0, 0, padding[0], padding[1], 0};
  Tensor p = padding[0] || padding[1] ? pad(data, before, before, Expr(), "pad") : data;
  IterVar ry = reduce_axis(Range(0, int_const(w[2])), "ry");
  IterVar rx = reduce_axis(Range(0, int_const(w[3])), "rx");
  return compute(to_exprs({d[0], d[1], OH, OW, d[4]}), [&](Var n, Var c, Var y, Var x, Var v) {
    Expr h = scaled(y, stride[0]) + scaled(ry, dilation[0]);
    Expr ww = scaled(x, stride[1]) + scaled(rx, dilation[1]);
    return sum(p(n, c, h, ww, v) * kernel(c, 0, ry, rx, 0, v), {ry, rx});
  }, name, "depthwise_conv2d_nchwc");
}

// ---------------------------------------------------------------- pooling

namespace {

struct PoolDims {
  std::vector<int64_t> d;  // [N,C,H,W] or [N,C/c,H,W,c]
  int64_t OH, OW;
  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> o = d;
    o[2] = OH;
    o[3] = OW;
    return o;
  }
};

std::vector<int64_t> pool_shape(std::string_view op, const Tensor& data) {
  auto d = const_shape(data, op, "data");
  LOOM_CHECK(d.size() == 4 || d.size() == 5,
             "{}: data must be 4-D [N,C,H,W] or 5-D channel-blocked [N,C/c,H,W,c] but is {}", op, shape_str(d));
  return d;
}

PoolDims check_pool(std::string_view op, const Tensor& data, Pair kernel, Pair stride, Pair padding) {
  PoolDims p;
  p.d = pool_shape(op, data);
  detail::check_pairs(op, stride, padding, {1, 1});
  LOOM_CHECK(kernel[0] > 0 && kernel[1] > 0, "{}: kernel must be positive, got {{{}, {}}}", op, kernel[0], kernel[1]);
  LOOM_CHECK(padding[0] < kernel[0] && padding[1] < kernel[1],
             "{}: padding {{{}, {}}} must be smaller than the kernel {{{}, {}}} (a window would see only padding)", op,
             padding[0], padding[1], kernel[0], kernel[1]);
  p.OH = out_extent(op, "height", p.d[2], kernel[0], stride[0], padding[0], 1);
  p.OW = out_extent(op, "width", p.d[3], kernel[1], stride[1], padding[1], 1);
  return p;
}

/// data padded by `padding` on dims 2 and 3 (of 4 or 5), or data itself.
Tensor pad_hw(const Tensor& data, size_t ndim, Pair padding, Expr value = Expr()) {
  if (padding[0] == 0 && padding[1] == 0) return data;
  std::vector<int64_t> before(ndim, 0);
  before[2] = padding[0];
  before[3] = padding[1];
  return pad(data, before, before, std::move(value), "pad");
}

/// `iv` with dims 2 and 3 replaced by h and w.
std::vector<Expr> window_index(const std::vector<Var>& iv, Expr h, Expr w) {
  std::vector<Expr> idx(iv.begin(), iv.end());
  idx[2] = std::move(h);
  idx[3] = std::move(w);
  return idx;
}

/// Sum over each window of the zero-padded input; stage "pool_sum".
Tensor pool_sum(const Tensor& data, const PoolDims& pd, Pair kernel, Pair stride, Pair padding,
                const std::string& name) {
  Tensor p = pad_hw(data, pd.d.size(), padding);
  IterVar rh = reduce_axis(Range(0, int_const(kernel[0])), "rh");
  IterVar rw = reduce_axis(Range(0, int_const(kernel[1])), "rw");
  return compute(to_exprs(pd.out_shape()), FCompute([&](const std::vector<Var>& iv) {
    return sum(p(window_index(iv, scaled(iv[2], stride[0]) + rh, scaled(iv[3], stride[1]) + rw)), {rh, rw});
  }), name, "pool_sum");
}

}  // namespace

Tensor max_pool2d(const Tensor& data, Pair kernel, Pair stride, Pair padding, const std::string& name) {
  PoolDims pd = check_pool("max_pool2d", data, kernel, stride, padding);
  Tensor p = pad_hw(data, pd.d.size(), padding, min_value(data.dtype()));
  IterVar rh = reduce_axis(Range(0, int_const(kernel[0])), "rh");
  IterVar rw = reduce_axis(Range(0, int_const(kernel[1])), "rw");
  return compute(to_exprs(pd.out_shape()), FCompute([&](const std::vector<Var>& iv) {
    return max_reduce(p(window_index(iv, scaled(iv[2], stride[0]) + rh, scaled(iv[3], stride[1]) + rw)), {rh, rw});
  }), name, "pool_max");
}

Tensor avg_pool2d(const Tensor& data, Pair kernel, Pair stride, Pair padding, bool count_include_pad,
                  const std::string& name) {
  PoolDims pd = check_pool("avg_pool2d", data, kernel, stride, padding);
  Tensor s = pool_sum(data, pd, kernel, stride, padding, "pool_sum");
  DataType t = data.dtype();
  int64_t H = pd.d[2], W = pd.d[3];
  bool exclude = !count_include_pad && (padding[0] > 0 || padding[1] > 0);
  return compute(s.shape(), FCompute([&](const std::vector<Var>& iv) {
    Expr v = s(std::vector<Expr>(iv.begin(), iv.end()));
    if (!exclude) return v / detail::const_of(t, double(kernel[0] * kernel[1]));
    Expr h0 = scaled(iv[2], stride[0]) - int_const(padding[0]);
    Expr w0 = scaled(iv[3], stride[1]) - int_const(padding[1]);
    Expr hn = min(h0 + int_const(kernel[0]), int_const(H)) - max(h0, 0);
    Expr wn = min(w0 + int_const(kernel[1]), int_const(W)) - max(w0, 0);
    return v / cast(t, hn * wn);
  }), name, "pool_avg");
}

Tensor global_avg_pool2d(const Tensor& data, const std::string& name) {
  auto d = pool_shape("global_avg_pool2d", data);
  LOOM_CHECK(d[2] > 0 && d[3] > 0, "global_avg_pool2d: data is {}; H and W must be positive", shape_str(d));
  IterVar rh = reduce_axis(Range(0, int_const(d[2])), "rh");
  IterVar rw = reduce_axis(Range(0, int_const(d[3])), "rw");
  std::vector<int64_t> os = d;
  os[2] = os[3] = 1;
  Tensor s = compute(to_exprs(os), FCompute([&](const std::vector<Var>& iv) {
    return sum(data(window_index(iv, rh, rw)), {rh, rw});
  }), "pool_sum", "pool_sum");
  Expr count = detail::const_of(data.dtype(), double(d[2] * d[3]));
  return compute(s.shape(), FCompute([&](const std::vector<Var>& iv) {
    return s(std::vector<Expr>(iv.begin(), iv.end())) / count;
  }), name, "pool_avg");
}

}  // namespace loom::te::ops
