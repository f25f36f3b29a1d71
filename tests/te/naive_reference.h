// Naive references for the operator tests: row-major arrays of doubles (Ref), random inputs
// evaluated with te::evaluate (Inputs), and direct C++ loops for the operators.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "loom/runtime/ndarray.h"
#include "loom/te/evaluate.h"
#include "loom/te/op_registry.h"
#include "loom/te/ops.h"

namespace loom::test::naive {

using loom::DataType;
using loom::runtime::NDArray;
using loom::te::Tensor;
namespace te = loom::te;
namespace ops = loom::te::ops;

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>()); }

inline Shape shape_of(const Tensor& t) {
  Shape s;
  for (const auto& e : t.shape()) {
    auto c = te::as_const_int(e);
    EXPECT_TRUE(c.has_value());
    s.push_back(c.value_or(0));
  }
  return s;
}

/// A row-major array of doubles: the naive references compute on these.
struct Ref {
  Shape shape;
  std::vector<double> v;
  Ref() = default;
  explicit Ref(Shape s) : shape(std::move(s)), v(size_t(numel(shape)), 0.0) {}
  int64_t offset(std::initializer_list<int64_t> idx) const {
    EXPECT_EQ(idx.size(), shape.size());
    int64_t o = 0;
    size_t d = 0;
    for (int64_t i : idx) {
      EXPECT_TRUE(i >= 0 && i < shape[d]) << "naive reference indexes dim " << d << " at " << i;
      o = o * shape[d++] + i;
    }
    return o;
  }
  double& operator()(std::initializer_list<int64_t> idx) { return v[size_t(offset(idx))]; }
  double operator()(std::initializer_list<int64_t> idx) const { return v[size_t(offset(idx))]; }
  /// Multi-index of flat position `f`.
  Shape unravel(int64_t f) const {
    Shape idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = f % shape[d];
      f /= shape[d];
    }
    return idx;
  }
  int64_t ravel(const Shape& idx) const {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + idx[d];
    return o;
  }
};

/// Collects random inputs for placeholders and evaluates outputs against them.
class Inputs {
 public:
  Ref add(const Tensor& t, double lo = -1.0, double hi = 1.0) {
    Shape s = shape_of(t);
    NDArray a = NDArray::empty(s, t.dtype());
    a.fill_random(seed_++, lo, hi);
    arrays_[t] = a;
    Ref r(s);
    for (int64_t i = 0; i < a.numel(); ++i) r.v[size_t(i)] = a.get(i);
    return r;
  }
  /// Gives `t` the values of `r` (converted to t's dtype).
  void set(const Tensor& t, const Ref& r) {
    EXPECT_EQ(shape_of(t), r.shape);
    arrays_[t] = NDArray::from_vector(r.v, r.shape, t.dtype());
  }
  NDArray eval(const Tensor& out) const { return te::evaluate({out}, arrays_).at(0); }

 private:
  std::map<Tensor, NDArray> arrays_;
  uint64_t seed_ = 17;
};

inline void expect_close(const NDArray& got, const Ref& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape);
  int bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.v[size_t(i)];
    if (!(std::abs(g - w) <= tol * (1.0 + std::abs(w)))) {
      if (bad++ < 5) ADD_FAILURE() << "element " << i << ": got " << g << ", expected " << w;
    }
  }
  EXPECT_EQ(bad, 0) << "mismatching elements";
}

/// Runs `f`, expecting loom::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected loom::Error";
  } catch (const loom::Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message '" << msg << "' lacks '" << p << "'";
  }
}

/// The one output of registry operator `op` on `inputs`, its attributes normalized as the graph does.
inline Tensor reg(const std::string& op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs = {}) {
  const ops::OpDef& d = ops::get_op(op);
  auto out = d.compute(inputs, ops::normalize_attrs(d, attrs));
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

inline Tensor ph(Shape s, const std::string& name = "x", DataType t = DataType::Float(32)) {
  std::vector<te::Expr> e;
  for (int64_t v : s) e.push_back(te::Expr(int(v)));
  return te::placeholder(e, t, name);
}

// ---------------------------------------------------------------- naive references

inline Ref naive_matmul(const Ref& a, const Ref& b, bool ta, bool tb) {
  int64_t M = ta ? a.shape[1] : a.shape[0], K = ta ? a.shape[0] : a.shape[1];
  int64_t N = tb ? b.shape[0] : b.shape[1];
  Ref c({M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) c({i, j}) += (ta ? a({k, i}) : a({i, k})) * (tb ? b({j, k}) : b({k, j}));
  return c;
}

/// out[i] = in[idx] where out dim d = in dim perm[d].
inline Ref naive_transpose(const Ref& x, const std::vector<int>& perm) {
  Shape s;
  for (int p : perm) s.push_back(x.shape[size_t(p)]);
  Ref out(s);
  for (int64_t f = 0; f < numel(s); ++f) {
    Shape oi = out.unravel(f), ii(oi.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[size_t(perm[d])] = oi[d];
    out.v[size_t(f)] = x.v[size_t(x.ravel(ii))];
  }
  return out;
}

inline Ref naive_conv2d_nchw(const Ref& x, const Ref& w, ops::Pair st, ops::Pair pd, ops::Pair dl, int64_t groups) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t K = w.shape[0], CG = w.shape[1], R = w.shape[2], S = w.shape[3];
  int64_t OH = (H + 2 * pd[0] - dl[0] * (R - 1) - 1) / st[0] + 1;
  int64_t OW = (W + 2 * pd[1] - dl[1] * (S - 1) - 1) / st[1] + 1;
  EXPECT_EQ(CG * groups, C);
  Ref out({N, K, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx) {
          double acc = 0;
          int64_t g = k / (K / groups);
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                int64_t h = y * st[0] - pd[0] + r * dl[0], ww = xx * st[1] - pd[1] + s * dl[1];
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                acc += x({n, g * CG + c, h, ww}) * w({k, c, r, s});
              }
          out({n, k, y, xx}) = acc;
        }
  return out;
}

inline Ref naive_depthwise(const Ref& x, const Ref& w, ops::Pair st, ops::Pair pd, ops::Pair dl) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t M = w.shape[1], R = w.shape[2], S = w.shape[3];
  int64_t OH = (H + 2 * pd[0] - dl[0] * (R - 1) - 1) / st[0] + 1;
  int64_t OW = (W + 2 * pd[1] - dl[1] * (S - 1) - 1) / st[1] + 1;
  Ref out({N, C * M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t xx = 0; xx < OW; ++xx) {
            double acc = 0;
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                int64_t h = y * st[0] - pd[0] + r * dl[0], ww = xx * st[1] - pd[1] + s * dl[1];
                if (h >= 0 && h < H && ww >= 0 && ww < W) acc += x({n, c, h, ww}) * w({c, m, r, s});
              }
            out({n, c * M + m, y, xx}) = acc;
          }
  return out;
}

enum class PoolKind { kMax, kAvgInclude, kAvgExclude };

inline Ref naive_pool(const Ref& x, ops::Pair k, ops::Pair st, ops::Pair pd, PoolKind kind) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t OH = (H + 2 * pd[0] - k[0]) / st[0] + 1, OW = (W + 2 * pd[1] - k[1]) / st[1] + 1;
  Ref out({N, C, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx) {
          double mx = -INFINITY, sum = 0;
          int64_t count = 0;
          for (int64_t r = 0; r < k[0]; ++r)
            for (int64_t s = 0; s < k[1]; ++s) {
              int64_t h = y * st[0] - pd[0] + r, w = xx * st[1] - pd[1] + s;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              mx = std::max(mx, x({n, c, h, w}));
              sum += x({n, c, h, w});
              ++count;
            }
          out({n, c, y, xx}) = kind == PoolKind::kMax          ? mx
                               : kind == PoolKind::kAvgInclude ? sum / double(k[0] * k[1])
                                                               : sum / double(count);
        }
  return out;
}

/// Calls f(outer, inner) for each line along `axis`; elements of a line are at
/// (outer * n + i) * inner_size + inner.
inline void for_each_line(const Shape& s, int axis, const std::function<void(std::function<double&(int64_t)>)>& f,
                   std::vector<double>& v) {
  int64_t outer = 1, inner = 1, n = s[size_t(axis)];
  for (int d = 0; d < axis; ++d) outer *= s[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < s.size(); ++d) inner *= s[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in)
      f([&, o, in](int64_t i) -> double& {
        EXPECT_LT(i, n);
        return v[size_t((o * n + i) * inner + in)];
      });
}

inline Ref naive_softmax(const Ref& x, int axis) {
  Ref out = x;
  int64_t n = x.shape[size_t(axis)];
  for_each_line(x.shape, axis, [&](auto at) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, at(i));
    for (int64_t i = 0; i < n; ++i) sum += std::exp(at(i) - mx);
    for (int64_t i = 0; i < n; ++i) at(i) = std::exp(at(i) - mx) / sum;
  }, out.v);
  return out;
}

inline Ref naive_layer_norm(const Ref& x, const Ref& g, const Ref& b, int axis, double eps) {
  Ref out = x;
  int64_t n = x.shape[size_t(axis)];
  for_each_line(x.shape, axis, [&](auto at) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += at(i);
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (at(i) - mean) * (at(i) - mean);
    var /= double(n);
    for (int64_t i = 0; i < n; ++i) at(i) = (at(i) - mean) / std::sqrt(var + eps) * g.v[size_t(i)] + b.v[size_t(i)];
  }, out.v);
  return out;
}

inline Ref naive_broadcast(const Ref& a, const Ref& b, const Shape& out_shape, const std::function<double(double, double)>& f) {
  Ref out(out_shape);
  auto pick = [&](const Ref& r, const Shape& oi) {
    Shape ii(r.shape.size());
    size_t lead = oi.size() - r.shape.size();
    for (size_t d = 0; d < r.shape.size(); ++d) ii[d] = r.shape[d] == 1 ? 0 : oi[lead + d];
    return r.v[size_t(r.ravel(ii))];
  };
  for (int64_t i = 0; i < numel(out_shape); ++i) {
    Shape oi = out.unravel(i);
    out.v[size_t(i)] = f(pick(a, oi), pick(b, oi));
  }
  return out;
}

inline Ref naive_unary(const Ref& x, const std::function<double(double)>& f) {
  Ref out = x;
  for (auto& v : out.v) v = f(v);
  return out;
}

}  // namespace loom::test::naive
