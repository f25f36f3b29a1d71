// The N-D window operators (conv3d, max/avg/Lp pooling over 1 to 3 spatial dims, MaxPool's
// indices) and group_norm: the registry's compute through te::evaluate against naive loops,
// on extents that common split factors do and do not divide; output extents (ceil_mode) and
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/te/op_registry.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::te::ops::Attrs;
namespace ops = loom::te::ops;

/// Iterates every multi-index of `shape`.
void for_each_index(const Shape& shape, const std::function<void(const Shape&)>& f) {
  const int64_t n = numel(shape);
  Ref probe(shape);
  for (int64_t i = 0; i < n; ++i) f(probe.unravel(i));
}

struct Win {
  Shape kernel, strides, dilations, pads;
  bool ceil = false;
};

/// ONNX's output extents, computed independently of the operator.
Shape out_extents(const Shape& in, const Win& w) {
  const size_t r = in.size();
  Shape out;
  for (size_t d = 0; d < r; ++d) {
    const double span = double(w.dilations[d] * (w.kernel[d] - 1) + 1);
    const double v = double(in[d] + w.pads[d] + w.pads[d + r]) - span;
    int64_t o = int64_t(w.ceil ? std::ceil(v / double(w.strides[d])) : std::floor(v / double(w.strides[d]))) + 1;
    if (w.ceil && (o - 1) * w.strides[d] >= in[d] + w.pads[d]) --o;
    out.push_back(o);
  }
  return out;
}

enum class Kind { kMax, kAvg, kAvgIncludePad, kLp2, kLp3, kArgmaxRow, kArgmaxCol };

/// Pooling of x [N,C,spatial...] by walking each window tap by tap.
Ref naive_pool_nd(const Ref& x, const Win& w, Kind kind) {
  const size_t r = x.shape.size() - 2;
  Shape in(x.shape.begin() + 2, x.shape.end());
  Shape out_shape{x.shape[0], x.shape[1]};
  Shape oe = out_extents(in, w);
  out_shape.insert(out_shape.end(), oe.begin(), oe.end());
  Ref out(out_shape);
  for_each_index(out_shape, [&](const Shape& o) {
    double best = -std::numeric_limits<double>::infinity(), acc = 0;
    int64_t count = 0, best_at = -1;
    Shape best_pos;
    for_each_index(w.kernel, [&](const Shape& k) {
      Shape pos{o[0], o[1]};
      bool inside = true, in_pads = true;
      for (size_t d = 0; d < r; ++d) {
        int64_t p = o[d + 2] * w.strides[d] + k[d] * w.dilations[d] - w.pads[d];
        inside = inside && p >= 0 && p < in[d];
        in_pads = in_pads && p >= -w.pads[d] && p < in[d] + w.pads[d + r];
        pos.push_back(p);
      }
      if (kind == Kind::kAvgIncludePad && in_pads) ++count;
      if (!inside) return;
      const double v = x.v[size_t(x.ravel(pos))];
      if (kind != Kind::kAvgIncludePad) ++count;
      if (v > best) {
        best = v;
        best_pos = pos;
        best_at = 0;
      }
      acc += kind == Kind::kLp2 ? v * v : kind == Kind::kLp3 ? std::pow(std::abs(v), 3) : v;
    });
    double& y = out.v[size_t(out.ravel(o))];
    switch (kind) {
      case Kind::kMax: y = best; break;
      case Kind::kAvg:
      case Kind::kAvgIncludePad: y = acc / double(count); break;
      case Kind::kLp2: y = std::sqrt(acc); break;
      case Kind::kLp3: y = std::cbrt(acc); break;
      case Kind::kArgmaxRow:
      case Kind::kArgmaxCol: {
        EXPECT_EQ(best_at, 0);
        int64_t off = 0, stride = 1;
        if (kind == Kind::kArgmaxRow) {
          for (size_t d = 0; d < r; ++d) off = off * in[d] + best_pos[d + 2];
        } else {
          for (size_t d = 0; d < r; ++d) {
            off += best_pos[d + 2] * stride;
            stride *= in[d];
          }
        }
        y = double((o[0] * x.shape[1] + o[1]) * numel(in) + off);
        break;
      }
    }
  });
  return out;
}

Attrs pool_attrs(const Win& w) {
  return {{"pool_size", w.kernel}, {"strides", w.strides}, {"dilations", w.dilations}, {"padding", w.pads},
          {"ceil_mode", int64_t(w.ceil)}};
}

struct PoolCase {
  Shape x;
  Win w;
};

std::vector<PoolCase> pool_cases() {
  return {
      {{2, 3, 13}, {{3}, {2}, {1}, {1, 2}, false}},
      {{1, 2, 17}, {{4}, {3}, {2}, {0, 0}, true}},
      {{2, 2, 9, 7}, {{3, 2}, {2, 3}, {2, 1}, {1, 0, 2, 1}, true}},
      {{1, 3, 16, 16}, {{2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false}},
      {{1, 2, 5, 7, 6}, {{2, 3, 2}, {1, 2, 2}, {2, 1, 1}, {1, 1, 0, 0, 1, 1}, true}},
      {{1, 1, 8, 8, 8}, {{2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, false}},
  };
}

TEST(SpatialNd, PoolsMatchNaiveLoops) {
  for (const PoolCase& c : pool_cases()) {
    for (Kind kind : {Kind::kMax, Kind::kAvg, Kind::kAvgIncludePad, Kind::kLp2, Kind::kLp3}) {
      SCOPED_TRACE(::testing::Message() << "x " << c.x.size() << "-D extent " << c.x.back() << " kind " << int(kind));
      Tensor x = ph(c.x);
      Inputs in;
      Ref xr = in.add(x, -2, 2);
      Attrs a = pool_attrs(c.w);
      std::string op = kind == Kind::kMax ? "max_pool_nd" : (kind == Kind::kLp2 || kind == Kind::kLp3) ? "lp_pool_nd"
                                                                                                       : "avg_pool_nd";
      if (kind == Kind::kAvgIncludePad) a["count_include_pad"] = int64_t(1);
      if (kind == Kind::kLp3) a["p"] = 3.0;
      expect_close(in.eval(reg(op, {x}, a)), naive_pool_nd(xr, c.w, kind), 1e-5);
    }
  }
}

TEST(SpatialNd, MaxPoolIndicesRowAndColumnMajor) {
  for (const PoolCase& c : pool_cases()) {
    Tensor x = ph(c.x);
    Inputs in;
    Ref xr = in.add(x, -2, 2);
    // Round to a coarse grid so that windows hold equal maxima: the first one wins.
    for (double& v : xr.v) v = std::round(v * 2) / 2;
    in.set(x, xr);
    for (bool col : {false, true}) {
      Attrs a = pool_attrs(c.w);
      a["column_major"] = int64_t(col);
      Tensor y = reg("max_pool_nd_indices", {x}, a);
      EXPECT_EQ(y.dtype(), DataType::Int(64));
      expect_close(in.eval(y), naive_pool_nd(xr, c.w, col ? Kind::kArgmaxCol : Kind::kArgmaxRow), 0);
    }
  }
}

TEST(SpatialNd, IntegerMaxPool) {
  Tensor x = ph({1, 2, 11}, "x", DataType::UInt(8));
  Inputs in;
  Ref xr = in.add(x, 0, 255);
  Win w{{3}, {2}, {1}, {1, 1}, false};
  NDArray got = in.eval(reg("max_pool_nd", {x}, pool_attrs(w)));
  EXPECT_EQ(got.dtype(), DataType::UInt(8));
  expect_close(got, naive_pool_nd(xr, w, Kind::kMax), 0);
}

/// conv3d: x [N,C,D,H,W], w [K,C/g,KD,KH,KW].
Ref naive_conv3d(const Ref& x, const Ref& w, const Shape& s, const Shape& p, const Shape& dl, int64_t g) {
  const int64_t N = x.shape[0], C = x.shape[1], K = w.shape[0], cpg = C / g, kpg = K / g;
  Shape in(x.shape.begin() + 2, x.shape.end()), kern(w.shape.begin() + 2, w.shape.end());
  Shape oe = out_extents(in, Win{kern, s, dl, p, false});
  Ref out({N, K, oe[0], oe[1], oe[2]});
  for_each_index(out.shape, [&](const Shape& o) {
    double acc = 0;
    for (int64_t c = 0; c < cpg; ++c)
      for_each_index(kern, [&](const Shape& k) {
        Shape pos{o[0], (o[1] / kpg) * cpg + c};
        for (size_t d = 0; d < 3; ++d) {
          int64_t q = o[d + 2] * s[d] + k[d] * dl[d] - p[d];
          if (q < 0 || q >= in[d]) return;
          pos.push_back(q);
        }
        acc += x.v[size_t(x.ravel(pos))] * w({o[1], c, k[0], k[1], k[2]});
      });
    out.v[size_t(out.ravel(o))] = acc;
  });
  return out;
}

TEST(SpatialNd, Conv3dMatchesNaiveLoops) {
  struct Case {
    Shape x, w, s, p, d;
    int64_t g;
    bool bias;
  };
  for (const Case& c : std::vector<Case>{
           {{1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1, true},
           {{2, 4, 7, 5, 9}, {6, 2, 2, 3, 2}, {2, 1, 3}, {0, 1, 2, 1, 0, 0}, {2, 1, 2}, 2, false},
           {{1, 3, 4, 4, 4}, {3, 1, 1, 2, 2}, {1, 2, 2}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, 3, true},
       }) {
    SCOPED_TRACE(::testing::Message() << "groups " << c.g);
    Tensor x = ph(c.x, "x"), w = ph(c.w, "w"), b = ph({c.w[0]}, "b");
    Inputs in;
    Ref xr = in.add(x), wr = in.add(w), br = in.add(b);
    std::vector<Tensor> inputs{x, w};
    if (c.bias) inputs.push_back(b);
    Tensor y = reg("conv3d", inputs, {{"strides", c.s}, {"padding", c.p}, {"dilations", c.d}, {"groups", c.g}});
    Ref want = naive_conv3d(xr, wr, c.s, c.p, c.d, c.g);
    if (c.bias)
      for (int64_t i = 0; i < numel(want.shape); ++i) want.v[size_t(i)] += br.v[size_t(want.unravel(i)[1])];
    expect_close(in.eval(y), want, 1e-4);
  }
}

TEST(SpatialNd, GroupNormMatchesNaiveLoops) {
  struct Case {
    Shape x;
    int64_t groups;
  };
  for (const Case& c : std::vector<Case>{{{2, 6, 5, 3}, 3}, {{3, 4, 17}, 4}, {{1, 8, 2, 3, 5}, 2}, {{2, 5}, 1}}) {
    SCOPED_TRACE(c.groups);
    Tensor x = ph(c.x, "x"), g = ph({c.x[1]}, "gamma"), b = ph({c.x[1]}, "beta");
    Inputs in;
    Ref xr = in.add(x, -3, 3), gr = in.add(g), br = in.add(b);
    const double eps = 1e-3;
    Tensor y = reg("group_norm", {x, g, b}, {{"groups", c.groups}, {"epsilon", eps}});
    const int64_t N = c.x[0], C = c.x[1], cpg = C / c.groups, inner = numel(c.x) / (N * C);
    Ref want(c.x);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t gi = 0; gi < c.groups; ++gi) {
        const int64_t begin = (n * C + gi * cpg) * inner, count = cpg * inner;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < count; ++i) mean += xr.v[size_t(begin + i)] / double(count);
        for (int64_t i = 0; i < count; ++i) var += std::pow(xr.v[size_t(begin + i)] - mean, 2) / double(count);
        for (int64_t i = 0; i < count; ++i) {
          const int64_t ch = gi * cpg + i / inner;
          want.v[size_t(begin + i)] = (xr.v[size_t(begin + i)] - mean) / std::sqrt(var + eps) * gr.v[size_t(ch)] +
                                      br.v[size_t(ch)];
        }
      }
    expect_close(in.eval(y), want, 1e-4);
  }
}

/// Col2Im by scattering each column entry into the image (the inverse walk of the operator).
Ref naive_col2im(const Ref& x, const Shape& image, const Win& w) {
  const size_t r = image.size();
  Shape grid = out_extents(image, w);
  const int64_t block = numel(w.kernel), C = x.shape[1] / block;
  Shape os{x.shape[0], C};
  os.insert(os.end(), image.begin(), image.end());
  Ref out(os);
  for (int64_t n = 0; n < x.shape[0]; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t b = 0; b < block; ++b)
        for (int64_t l = 0; l < x.shape[2]; ++l) {
          Shape k = Ref(w.kernel).unravel(b), g = Ref(grid).unravel(l), pos{n, c};
          bool inside = true;
          for (size_t d = 0; d < r; ++d) {
            int64_t p = g[d] * w.strides[d] + k[d] * w.dilations[d] - w.pads[d];
            inside = inside && p >= 0 && p < image[d];
            pos.push_back(p);
          }
          if (inside) out.v[size_t(out.ravel(pos))] += x({n, c * block + b, l});
        }
  return out;
}

TEST(SpatialNd, Col2ImMatchesScatterLoops) {
  struct Case {
    int64_t n, c;
    Shape image;
    Win w;
  };
  for (const Case& c : std::vector<Case>{
           {1, 1, {5, 5}, {{1, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}}},
           {2, 3, {5, 5}, {{3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}}},
           {1, 2, {6, 7}, {{2, 2}, {1, 3}, {1, 3}, {1, 0, 0, 2}}},
           {1, 2, {3, 4, 5}, {{1, 2, 3}, {1, 1, 2}, {1, 2, 1}, {0, 1, 1, 0, 0, 1}}},
           {2, 1, {13}, {{4}, {3}, {2}, {2, 1}}},
       }) {
    SCOPED_TRACE(c.image.size());
    const int64_t L = numel(out_extents(c.image, c.w));
    Tensor x = ph({c.n, c.c * numel(c.w.kernel), L});
    Inputs in;
    Ref xr = in.add(x);
    Tensor y = reg("col2im", {x}, {{"image_shape", c.image}, {"block_shape", c.w.kernel}, {"strides", c.w.strides},
                                   {"dilations", c.w.dilations}, {"padding", c.w.pads}});
    expect_close(in.eval(y), naive_col2im(xr, c.image, c.w), 1e-5);
  }
  expect_error([&] { reg("col2im", {ph({1, 6, 10})}, {{"image_shape", Shape{5, 5}}, {"block_shape", Shape{2, 2}}}); },
               {"6 rows, not a multiple of the block's 4"});
  expect_error([&] { reg("col2im", {ph({1, 4, 10})}, {{"image_shape", Shape{5, 5}}, {"block_shape", Shape{2, 2}}}); },
               {"10 columns", "holds 16 windows"});
}

TEST(SpatialNd, MaxUnpoolScattersByIndexLastWins) {
  // data [1,2,2,3] written into a [1,2,4,5] scatter shape, placed in a [1,2,5,6] output.
  const Shape ds{1, 2, 2, 3}, scatter{1, 2, 4, 5}, out{1, 2, 5, 6};
  Tensor x = ph(ds, "x"), idx = ph(ds, "i", DataType::Int(64));
  Inputs in;
  Ref xr = in.add(x);
  Ref ir(ds);
  // Two elements name position 7 (the later one wins); one names a position of the other
  // channel (20 + 3); the rest spread out.
  const double pos[] = {7, 0, 7, 19, 23, 5, 30, 39, 21, 11, 12, 33};
  for (size_t i = 0; i < 12; ++i) ir.v[i] = pos[i];
  in.set(idx, ir);
  Ref want(out);
  for (size_t i = 0; i < 12; ++i) {
    Shape at = Ref(scatter).unravel(int64_t(pos[i]));
    want.v[size_t(want.ravel(at))] = xr.v[i];
  }
  Tensor y = reg("max_unpool", {x, idx}, {{"scatter_shape", scatter}, {"output_shape", out}});
  expect_close(in.eval(y), want, 0);
  expect_error([&] { reg("max_unpool", {x, idx}, {{"scatter_shape", scatter}, {"output_shape", Shape{1, 2, 3, 6}}}); },
               {"must hold the scatter shape"});
  expect_error([&] { reg("max_unpool", {x, x}, {{"scatter_shape", scatter}, {"output_shape", out}}); },
               {"indices must be int64"});
}

TEST(SpatialNd, OutputExtentsAndCeilMode) {
  // ceil_mode rounds up, but a last window may not start in the end padding.
  EXPECT_EQ(ops::window_out_extents("t", {5}, {{2}, {2}, {1}, {0, 0}, true}), (Shape{3}));
  EXPECT_EQ(ops::window_out_extents("t", {5}, {{2}, {2}, {1}, {0, 0}, false}), (Shape{2}));
  EXPECT_EQ(ops::window_out_extents("t", {4}, {{2}, {2}, {1}, {0, 1}, true}), (Shape{2}));
  EXPECT_EQ(ops::window_out_extents("t", {9, 10}, {{3, 3}, {1, 1}, {2, 3}, {}, false}), (Shape{5, 4}));
}

TEST(SpatialNd, Errors) {
  Tensor x = ph({1, 2, 5, 5});
  expect_error([&] { reg("max_pool_nd", {x}, {{"pool_size", Shape{2}}}); }, {"kernel", "2 entries"});
  expect_error([&] { reg("avg_pool_nd", {x}, {{"pool_size", Shape{7, 2}}}); }, {"window spans 7", "spatial dim 0"});
  expect_error([&] { reg("max_pool_nd", {x}, {{"pool_size", Shape{2, 2}}, {"dilations", Shape{0, 1}}}); },
               {"must be positive"});
  expect_error([&] { reg("lp_pool_nd", {x}, {{"pool_size", Shape{2, 2}}, {"p", -1.0}}); }, {"p must be positive"});
  expect_error([&] { reg("avg_pool_nd", {ph({1, 2, 5}, "i", DataType::Int(32))}, {{"pool_size", Shape{2}}}); },
               {"floating-point"});
  expect_error([&] { reg("max_pool_nd", {ph({4, 5})}, {{"pool_size", Shape{2}}}); }, {"at least one spatial dim"});
  expect_error([&] { reg("conv3d", {ph({1, 4, 3, 3, 3}), ph({2, 3, 1, 1, 1}, "w")}, {{"groups", int64_t(2)}}); },
               {"groups=2"});
  expect_error([&] { reg("group_norm", {ph({2, 6, 3}), ph({6}, "g"), ph({6}, "b")}, {{"groups", int64_t(4)}}); },
               {"6 channels", "groups=4"});
  expect_error([&] { reg("group_norm", {ph({2, 6, 3}), ph({3}, "g"), ph({6}, "b")}, {{"groups", int64_t(3)}}); },
               {"gamma", "1-D of the 6 channels"});
}

}  // namespace
