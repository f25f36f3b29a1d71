// Convolution and pooling over 1 to 3 spatial dims with ONNX's window semantics, and group
// normalization.
#include <fmt/ranges.h>

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

/// `v`, or `r` ones when empty; throws unless it has `r` entries.
std::vector<int64_t> per_dim(std::string_view op, const char* what, std::vector<int64_t> v, size_t r, int64_t fill) {
  if (v.empty()) v.assign(r, fill);
  LOOM_CHECK(v.size() == r, "{}: {} [{}] must have {} entries, one per spatial dim", op, what, fmt::join(v, ","), r);
  return v;
}

/// The window with every list filled to the spatial rank `r` and checked.
WindowNd complete(std::string_view op, WindowNd w, size_t r) {
  w.kernel = per_dim(op, "kernel", w.kernel, r, 0);
  w.strides = per_dim(op, "strides", w.strides, r, 1);
  w.dilations = per_dim(op, "dilations", w.dilations, r, 1);
  w.pads = per_dim(op, "pads", w.pads, 2 * r, 0);
  for (size_t d = 0; d < r; ++d) {
    LOOM_CHECK(w.kernel[d] > 0 && w.strides[d] > 0 && w.dilations[d] > 0,
               "{}: kernel [{}], strides [{}] and dilations [{}] must be positive", op, fmt::join(w.kernel, ","),
               fmt::join(w.strides, ","), fmt::join(w.dilations, ","));
    LOOM_CHECK(w.pads[d] >= 0 && w.pads[d + r] >= 0, "{}: pads [{}] must be non-negative", op, fmt::join(w.pads, ","));
    for (int64_t v : {w.kernel[d], w.strides[d], w.dilations[d], w.pads[d], w.pads[d + r]})
      LOOM_CHECK(v <= INT32_MAX, "{}: window attributes must be below 2^31", op);
  }
  return w;
}

/// [N, C, spatial...] with at least one spatial dim.
std::vector<int64_t> spatial_shape(std::string_view op, const Tensor& data) {
  auto s = const_shape(data, op, "data");
  LOOM_CHECK(s.size() >= 3, "{}: data must be [N,C,spatial...] with at least one spatial dim, got {}", op,
             shape_str(s));
  return s;
}

/// Window geometry of one op instance: the completed window, input and output extents, and
/// the end padding that covers the ceil_mode excess.
struct Geometry {
  WindowNd w;
  std::vector<int64_t> shape, out, end_pad;
  size_t r = 0;
  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> o{shape[0], shape[1]};
    o.insert(o.end(), out.begin(), out.end());
    return o;
  }
};

Geometry geometry(std::string_view op, const std::vector<int64_t>& shape, const WindowNd& window) {
  Geometry g;
  g.shape = shape;
  g.r = shape.size() - 2;
  g.w = complete(op, window, g.r);
  std::vector<int64_t> in(shape.begin() + 2, shape.end());
  g.out = window_out_extents(op, in, g.w);
  for (size_t d = 0; d < g.r; ++d) {
    const int64_t span = g.w.dilations[d] * (g.w.kernel[d] - 1) + 1;
    const int64_t reach = (g.out[d] - 1) * g.w.strides[d] + span;
    g.end_pad.push_back(std::max(g.w.pads[d + g.r], reach - in[d] - g.w.pads[d]));
  }
  return g;
}

/// data padded by the window's begin pads and `end_pad` with `fill`, or data itself.
Tensor pad_window(const Tensor& data, const Geometry& g, Expr fill) {
  std::vector<int64_t> before(g.shape.size(), 0), after(g.shape.size(), 0);
  bool any = false;
  for (size_t d = 0; d < g.r; ++d) {
    before[d + 2] = g.w.pads[d];
    after[d + 2] = g.end_pad[d];
    any = any || before[d + 2] || after[d + 2];
  }
  return any ? pad(data, before, after, std::move(fill), "pad") : data;
}

/// One reduce axis per spatial dim, named by `prefix` and the dim.
std::vector<IterVar> window_axes(const Geometry& g) {
  std::vector<IterVar> k;
  for (size_t d = 0; d < g.r; ++d) k.push_back(reduce_axis(Range(0, int_const(g.w.kernel[d])), fmt::format("k{}", d)));
  return k;
}

/// The padded-data position of tap `k` of the window at output index `iv` along spatial dim d.
Expr tap(const Geometry& g, const std::vector<Var>& iv, const std::vector<IterVar>& k, size_t d) {
  return scaled(iv[d + 2], g.w.strides[d]) + scaled(k[d], g.w.dilations[d]);
}

std::vector<Expr> tap_index(const Geometry& g, const std::vector<Var>& iv, const std::vector<IterVar>& k) {
  std::vector<Expr> idx{iv[0], iv[1]};
  for (size_t d = 0; d < g.r; ++d) idx.push_back(tap(g, iv, k, d));
  return idx;
}

/// ceil(a / b) for b > 0.
Expr ceildiv(const Expr& a, int64_t b) { return b == 1 ? a : floordiv(a + int_const(b - 1), int_const(b)); }

/// The count of taps of the window at `iv` along dim d whose input position lies in [lo, hi).
Expr taps_inside(const Geometry& g, const std::vector<Var>& iv, size_t d, int64_t lo, int64_t hi) {
  Expr start = scaled(iv[d + 2], g.w.strides[d]) - int_const(g.w.pads[d]);
  const int64_t dil = g.w.dilations[d], K = g.w.kernel[d];
  Expr first = max(ceildiv(int_const(lo) - start, dil), 0);
  Expr last = min(ceildiv(int_const(hi) - start, dil), int_const(K));
  return max(last - first, 0);
}

}  // namespace

std::vector<int64_t> window_out_extents(std::string_view op, const std::vector<int64_t>& in, const WindowNd& window) {
  WindowNd w = complete(op, window, in.size());
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t span = w.dilations[d] * (w.kernel[d] - 1) + 1;
    const int64_t room = in[d] + w.pads[d] + w.pads[d + in.size()] - span;
    LOOM_CHECK(room >= 0,
               "{}: the window spans {} elements along spatial dim {} (kernel {}, dilation {}) but the padded input "
               "has only {}",
               op, span, d, w.kernel[d], w.dilations[d], room + span);
    int64_t o = (w.ceil_mode ? (room + w.strides[d] - 1) / w.strides[d] : room / w.strides[d]) + 1;
    if (w.ceil_mode && (o - 1) * w.strides[d] >= in[d] + w.pads[d]) --o;
    out.push_back(o);
  }
  return out;
}

Tensor conv3d_ncdhw(const Tensor& data, const Tensor& kernel, const WindowNd& window, int64_t groups,
                    const std::string& name) {
  const char* op = "conv3d_ncdhw";
  auto x = const_shape(data, 5, op, "data", "[N,C,D,H,W]");
  auto k = const_shape(kernel, 5, op, "kernel", "[K,C/groups,KD,KH,KW]");
  detail::check_same_dtype(data, kernel, op, "data", "kernel");
  LOOM_CHECK(window.ceil_mode == false, "{}: ceil_mode is for pooling", op);
  LOOM_CHECK(groups > 0 && x[1] % groups == 0 && k[0] % groups == 0 && k[1] == x[1] / groups,
             "{}: data {} and kernel {} do not fit groups={} (kernel's dim 1 must be C/groups)", op, shape_str(x),
             shape_str(k), groups);
  WindowNd w = window;
  w.kernel = {k[2], k[3], k[4]};
  Geometry g = geometry(op, x, w);
  Tensor p = pad_window(data, g, Expr());
  const int64_t cpg = x[1] / groups, kpg = k[0] / groups;
  IterVar rc = reduce_axis(Range(0, int_const(cpg)), "rc");
  IterVar rz = reduce_axis(Range(0, int_const(k[2])), "rz");
  IterVar ry = reduce_axis(Range(0, int_const(k[3])), "ry");
  IterVar rx = reduce_axis(Range(0, int_const(k[4])), "rx");
  std::vector<int64_t> os{x[0], k[0], g.out[0], g.out[1], g.out[2]};
  return compute(to_exprs(os), FCompute([&](const std::vector<Var>& iv) {
    Expr ch = groups == 1 ? Expr(rc) : floordiv(iv[1], int_const(kpg)) * int_const(cpg) + rc;
    Expr z = scaled(iv[2], g.w.strides[0]) + scaled(rz, g.w.dilations[0]);
    Expr y = scaled(iv[3], g.w.strides[1]) + scaled(ry, g.w.dilations[1]);
    Expr xx = scaled(iv[4], g.w.strides[2]) + scaled(rx, g.w.dilations[2]);
    return sum(p(std::vector<Expr>{iv[0], ch, z, y, xx}) * kernel(std::vector<Expr>{iv[1], rc, rz, ry, rx}), {rc, rz, ry, rx});
  }), name, "conv3d_ncdhw");
}

Tensor pool_nd(const Tensor& data, PoolNdKind kind, const WindowNd& window, bool count_include_pad, double p,
               const std::string& name) {
  const char* op = "pool_nd";
  Geometry g = geometry(op, spatial_shape(op, data), window);
  const DataType t = data.dtype();
  LOOM_CHECK(kind == PoolNdKind::kMax || t.is_float(), "{}: average and Lp pooling need floating-point data, got {}", op,
             t.str());
  LOOM_CHECK(kind != PoolNdKind::kLp || p > 0, "{}: p must be positive, got {}", op, p);
  std::vector<IterVar> k = window_axes(g);
  if (kind == PoolNdKind::kMax) {
    Tensor padded = pad_window(data, g, min_value(t));
    return compute(to_exprs(g.out_shape()), FCompute([&](const std::vector<Var>& iv) {
      return max_reduce(padded(tap_index(g, iv, k)), k);
    }), name, "pool_max");
  }
  Tensor padded = pad_window(data, g, Expr());
  Tensor s = compute(to_exprs(g.out_shape()), FCompute([&](const std::vector<Var>& iv) {
    Expr v = padded(tap_index(g, iv, k));
    if (kind == PoolNdKind::kLp) v = p == 2.0 ? v * v : p == 1.0 ? abs(v) : pow(abs(v), detail::const_of(t, p));
    return sum(v, k);
  }), name + "_sum", "pool_sum");
  return compute(s.shape(), FCompute([&](const std::vector<Var>& iv) {
    Expr v = s(std::vector<Expr>(iv.begin(), iv.end()));
    if (kind == PoolNdKind::kLp)
      return p == 2.0 ? te::sqrt(v) : p == 1.0 ? v : pow(v, detail::const_of(t, 1.0 / p));
    Expr count;
    for (size_t d = 0; d < g.r; ++d) {
      const int64_t in = g.shape[d + 2];
      Expr c = count_include_pad ? taps_inside(g, iv, d, -g.w.pads[d], in + g.w.pads[d + g.r])
                                 : taps_inside(g, iv, d, 0, in);
      count = count.defined() ? count * c : c;
    }
    return v / cast(t, count);
  }), name, "pool_avg");
}

Tensor max_pool_nd_indices(const Tensor& data, const WindowNd& window, bool column_major, const std::string& name) {
  const char* op = "max_pool_nd_indices";
  Geometry g = geometry(op, spatial_shape(op, data), window);
  const DataType t = data.dtype();
  Tensor padded = pad_window(data, g, min_value(t));
  std::vector<IterVar> k = window_axes(g);
  Tensor m = compute(to_exprs(g.out_shape()), FCompute([&](const std::vector<Var>& iv) {
    return max_reduce(padded(tap_index(g, iv, k)), k);
  }), name + "_max", "pool_max");
  // The spatial offset of each tap, row-major, and whether it lies inside the input.
  std::vector<IterVar> k2 = window_axes(g);
  std::vector<int64_t> row_stride(g.r, 1), col_stride(g.r, 1);
  for (size_t d = g.r - 1; d > 0; --d) row_stride[d - 1] = row_stride[d] * g.shape[d + 2];
  for (size_t d = 1; d < g.r; ++d) col_stride[d] = col_stride[d - 1] * g.shape[d + 1];
  int64_t plane = 1;
  for (size_t d = 0; d < g.r; ++d) plane *= g.shape[d + 2];
  Tensor first = compute(to_exprs(g.out_shape()), FCompute([&](const std::vector<Var>& iv) {
    Expr inside, offset;
    for (size_t d = 0; d < g.r; ++d) {
      Expr pos = tap(g, iv, k2, d) - int_const(g.w.pads[d]);
      Expr c = pos >= 0 && pos < int_const(g.shape[d + 2]);
      inside = inside.defined() ? (inside && c) : c;
      Expr o = scaled(pos, row_stride[d]);
      offset = offset.defined() ? offset + o : o;
    }
    Expr hit = inside && padded(tap_index(g, iv, k2)) == m(std::vector<Expr>(iv.begin(), iv.end()));
    return min_reduce(select(hit, offset, int_const(plane)), k2);
  }), name + "_first", "pool_argmax");
  const DataType i64 = DataType::Int(64);
  return compute(to_exprs(g.out_shape()), FCompute([&](const std::vector<Var>& iv) {
    Expr f = first(std::vector<Expr>(iv.begin(), iv.end()));
    Expr spatial = f;
    if (column_major) {
      spatial = Expr();
      for (size_t d = 0; d < g.r; ++d) {
        Expr coord = floormod(floordiv(f, int_const(row_stride[d])), int_const(g.shape[d + 2]));
        Expr o = scaled(coord, col_stride[d]);
        spatial = spatial.defined() ? spatial + o : o;
      }
    }
    Expr channel = cast(i64, iv[0]) * make_const(i64, g.shape[1]) + cast(i64, iv[1]);
    return channel * make_const(i64, plane) + cast(i64, spatial);
  }), name, "pool_argmax");
}

Tensor col2im(const Tensor& data, const std::vector<int64_t>& image, const WindowNd& window, const std::string& name) {
  const char* op = "col2im";
  auto d = const_shape(data, 3, op, "data", "[N,C*prod(block),L]");
  LOOM_CHECK(!image.empty(), "{}: the image has no spatial dims", op);
  LOOM_CHECK(!window.ceil_mode, "{}: ceil_mode is for pooling", op);
  for (int64_t e : image) LOOM_CHECK(e > 0 && e <= INT32_MAX, "{}: image extents [{}] must be positive", op, fmt::join(image, ","));
  const size_t r = image.size();
  WindowNd w = complete(op, window, r);
  std::vector<int64_t> grid = window_out_extents(op, image, w);
  int64_t block = 1, L = 1;
  for (size_t i = 0; i < r; ++i) {
    block *= w.kernel[i];
    L *= grid[i];
  }
  LOOM_CHECK(d[1] % block == 0, "{}: data {} has {} rows, not a multiple of the block's {} elements", op, shape_str(d),
             d[1], block);
  LOOM_CHECK(d[2] == L, "{}: data {} has {} columns but the image [{}] holds {} windows ([{}])", op, shape_str(d), d[2],
             fmt::join(image, ","), L, fmt::join(grid, ","));
  std::vector<int64_t> os{d[0], d[1] / block};
  os.insert(os.end(), image.begin(), image.end());
  std::vector<IterVar> k;
  for (size_t i = 0; i < r; ++i) k.push_back(reduce_axis(Range(0, int_const(w.kernel[i])), fmt::format("k{}", i)));
  return compute(to_exprs(os), FCompute([&](const std::vector<Var>& iv) {
    // For each block offset: the window start t = y + pad - k*dilation must be a stride
    // multiple inside the grid.
    Expr valid, row = iv[1], col = Expr(0);
    for (size_t i = 0; i < r; ++i) {
      Expr t = iv[i + 2] + int_const(w.pads[i]) - scaled(k[i], w.dilations[i]);
      const int64_t s = w.strides[i];
      Expr c = t >= 0 && t < int_const(grid[i] * s);
      if (s > 1) c = c && floormod(t, int_const(s)) == 0;
      valid = valid.defined() ? (valid && c) : c;
      row = scaled(row, w.kernel[i]) + k[i];
      col = scaled(col, grid[i]) + (s > 1 ? floordiv(t, int_const(s)) : t);
    }
    return sum(select(valid, data(std::vector<Expr>{iv[0], row, col}), make_zero(data.dtype())), k);
  }), name, "col2im");
}

Tensor max_unpool(const Tensor& data, const Tensor& indices, const std::vector<int64_t>& scatter_shape,
                  const std::vector<int64_t>& out_shape, const std::string& name) {
  const char* op = "max_unpool";
  auto d = const_shape(data, op, "data");
  auto is = const_shape(indices, op, "indices");
  LOOM_CHECK(d == is, "{}: data {} and indices {} must have one shape", op, shape_str(d), shape_str(is));
  LOOM_CHECK(indices.dtype() == DataType::Int(64), "{}: indices must be int64, got {}", op, indices.dtype().str());
  LOOM_CHECK(scatter_shape.size() == d.size() && out_shape.size() == d.size(),
             "{}: data is {} but the scatter shape is {} and the output shape {}; give one extent per dim", op,
             shape_str(d), shape_str(scatter_shape), shape_str(out_shape));
  for (size_t i = 0; i < d.size(); ++i)
    LOOM_CHECK(scatter_shape[i] > 0 && out_shape[i] >= scatter_shape[i] && out_shape[i] <= INT32_MAX,
               "{}: the output shape {} must hold the scatter shape {} in every dim", op, shape_str(out_shape),
               shape_str(scatter_shape));
  int64_t n = 1;
  for (int64_t e : d) n *= e;
  LOOM_CHECK(n <= INT32_MAX, "{}: data {} has 2^31 elements or more", op, shape_str(d));
  const DataType i64 = DataType::Int(64);
  // The flat position in data of reduce index r, unraveled.
  auto unravel = [&](const Expr& r) {
    std::vector<Expr> idx(d.size());
    Expr rest = r;
    for (size_t i = d.size(); i-- > 0;) {
      idx[i] = i == 0 ? rest : floormod(rest, int_const(d[i]));
      if (i > 0) rest = floordiv(rest, int_const(d[i]));
    }
    return idx;
  };
  IterVar r = reduce_axis(Range(0, int_const(n)), "r");
  Tensor source = compute(to_exprs(out_shape), FCompute([&](const std::vector<Var>& iv) {
    Expr inside, flat = make_const(i64, int64_t(0));
    for (size_t i = 0; i < iv.size(); ++i) {
      if (out_shape[i] > scatter_shape[i]) {
        Expr c = iv[i] < int_const(scatter_shape[i]);
        inside = inside.defined() ? (inside && c) : c;
      }
      flat = flat * make_const(i64, scatter_shape[i]) + cast(i64, iv[i]);
    }
    Expr hit = indices(unravel(r)) == flat;
    if (inside.defined()) hit = inside && hit;
    return max_reduce(select(hit, Expr(r), int_const(-1)), {r});
  }), name + "_source", "unpool_source");
  return compute(to_exprs(out_shape), FCompute([&](const std::vector<Var>& iv) {
    Expr s = source(std::vector<Expr>(iv.begin(), iv.end()));
    return select(s >= 0, data(unravel(s)), make_zero(data.dtype()));
  }), name, "unpool");
}

Tensor group_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t groups, double eps,
                  const std::string& name) {
  const char* op = "group_norm";
  auto s = const_shape(x, op, "x");
  LOOM_CHECK(s.size() >= 2, "{}: x must be [N,C,...], got {}", op, shape_str(s));
  LOOM_CHECK(x.dtype().is_float(), "{}: x must be floating point, got {}", op, x.dtype().str());
  LOOM_CHECK(eps >= 0, "{}: eps must be non-negative, got {}", op, eps);
  const int64_t C = s[1];
  LOOM_CHECK(groups > 0 && C % groups == 0, "{}: x has {} channels, not divisible by groups={}", op, C, groups);
  for (auto [t, what] : {std::pair{&gamma, "gamma"}, std::pair{&beta, "beta"}}) {
    auto ts = const_shape(*t, op, what);
    LOOM_CHECK(ts.size() == 1 && ts[0] == C, "{}: x is {} but {} is {}; it must be 1-D of the {} channels", op,
               shape_str(s), what, shape_str(ts), C);
    detail::check_same_dtype(x, *t, op, "x", what);
  }
  const int64_t cpg = C / groups;
  int64_t n = cpg;
  for (size_t d = 2; d < s.size(); ++d) n *= s[d];
  const DataType dt = x.dtype();
  Expr inv_n = detail::const_of(dt, 1.0 / double(n));
  // One reduce axis over the group's channels, one per spatial dim.
  auto axes = [&] {
    std::vector<IterVar> r{reduce_axis(Range(0, int_const(cpg)), "rc")};
    for (size_t d = 2; d < s.size(); ++d) r.push_back(reduce_axis(Range(0, int_const(s[d])), fmt::format("k{}", d - 2)));
    return r;
  };
  auto element = [&](const Expr& n_, const Expr& g_, const std::vector<IterVar>& r) {
    std::vector<Expr> idx{n_, cpg == 1 ? g_ : scaled(g_, cpg) + r[0]};
    for (size_t d = 1; d < r.size(); ++d) idx.push_back(r[d]);
    return x(idx);
  };
  std::vector<IterVar> r1 = axes();
  Tensor mean = compute(to_exprs({s[0], groups}), [&](Var n_, Var g_) {
    return sum(element(n_, g_, r1) * inv_n, r1);
  }, name + "_mean", "group_norm_reduce");
  std::vector<IterVar> r2 = axes();
  Tensor var = compute(to_exprs({s[0], groups}), [&](Var n_, Var g_) {
    Expr d = element(n_, g_, r2) - mean(n_, g_);
    return sum(d * d * inv_n, r2);
  }, name + "_var", "group_norm_reduce");
  Expr e = detail::const_of(dt, eps);
  return compute(to_exprs(s), FCompute([&](const std::vector<Var>& iv) {
    Expr g_ = cpg == 1 ? Expr(iv[1]) : floordiv(iv[1], int_const(cpg));
    std::vector<Expr> idx(iv.begin(), iv.end());
    return (x(idx) - mean(iv[0], g_)) / te::sqrt(var(iv[0], g_) + e) * gamma(iv[1]) + beta(iv[1]);
  }), name, "group_norm");
}

}  // namespace loom::te::ops
