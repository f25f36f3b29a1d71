// Winograd convolution F(m×m, 3×3) on channel-blocked arrays: the transform matrices
// (Toom-Cook on small interpolation points), the weight transform U = G g Gᵀ and the
// convolution as input transform, batched GEMM over the tiles and output transform.
//
// Every transform is written as explicit sums of its nonzero terms, one per row of the
// matrix, picked by a select on the row index: once a schedule unrolls that index the
// select folds and only the nonzero multiply-adds remain (the simplifier does not fold
// x * 0.0f, which is not 0 for an infinite or NaN x).
#include <fmt/format.h>

#include <cmath>

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// The finite interpolation points, in the order they are taken.
constexpr double kPoints[] = {0, 1, -1, 2, -2, 0.5, -0.5};

/// Coefficients (x^0 first) of prod over l != skip of (x - a_l), l < n.
std::vector<double> poly_without(const double* a, int64_t n, int64_t skip) {
  std::vector<double> c{1.0};
  for (int64_t l = 0; l < n; ++l) {
    if (l == skip) continue;
    std::vector<double> next(c.size() + 1, 0.0);
    for (size_t k = 0; k < c.size(); ++k) {
      next[k + 1] += c[k];
      next[k] -= a[l] * c[k];
    }
    c = std::move(next);
  }
  return c;
}

/// sum_k coef[k] * term(k) over the nonzero coefficients (±1 as additions and subtractions),
/// in dtype `t`.
Expr combination(DataType t, const std::vector<double>& coef, const std::function<Expr(int64_t)>& term) {
  Expr sum;
  for (size_t k = 0; k < coef.size(); ++k) {
    const double c = coef[k];
    if (c == 0) continue;
    Expr x = term(int64_t(k));
    const double mag = std::abs(c);
    if (mag != 1) x = x * detail::const_of(t, mag);
    if (!sum.defined()) sum = c < 0 ? -x : x;
    else sum = c < 0 ? sum - x : sum + x;
  }
  return sum.defined() ? sum : detail::const_of(t, 0.0);
}

/// value(0) if index == 0, value(1) if index == 1, …, value(n-1) otherwise.
Expr select_row(const Expr& index, int64_t n, const std::function<Expr(int64_t)>& value) {
  Expr e = value(n - 1);
  for (int64_t i = n - 2; i >= 0; --i) e = select(index == int_const(i), value(i), e);
  return e;
}

/// Row `i` of a row-major matrix with `cols` columns.
std::vector<double> row(const std::vector<double>& m, int64_t cols, int64_t i) {
  return {m.begin() + i * cols, m.begin() + (i + 1) * cols};
}

}  // namespace

WinogradMatrices winograd_matrices(int64_t m, int64_t r) {
  const int64_t alpha = m + r - 1, n = alpha - 1;
  LOOM_CHECK(m >= 1 && r >= 2 && n <= int64_t(std::size(kPoints)),
             "winograd: F({0}x{0}, {1}x{1}) needs {2} interpolation points; 1 <= m, 2 <= r and m + r - 2 <= {3}", m,
             r, n, std::size(kPoints));
  WinogradMatrices w{m, r, alpha, std::vector<double>(size_t(m * alpha), 0.0), std::vector<double>(size_t(alpha * r), 0.0),
                     std::vector<double>(size_t(alpha * alpha), 0.0)};
  const double* a = kPoints;
  for (int64_t j = 0; j < n; ++j) {
    double f = 1;  // prod over l != j of (a_j - a_l)
    for (int64_t l = 0; l < n; ++l)
      if (l != j) f *= a[j] - a[l];
    for (int64_t i = 0; i < m; ++i) w.AT[size_t(i * alpha + j)] = std::pow(a[j], double(i));
    for (int64_t k = 0; k < r; ++k) w.G[size_t(j * r + k)] = std::pow(a[j], double(k)) / f;
    std::vector<double> p = poly_without(a, n, j);
    for (size_t k = 0; k < p.size(); ++k) w.BT[size_t(j * alpha) + k] = p[k];
  }
  // The point at infinity: the leading coefficients.
  w.AT[size_t((m - 1) * alpha + n)] = 1;
  w.G[size_t(n * r + r - 1)] = 1;
  std::vector<double> p = poly_without(a, n, -1);
  for (size_t k = 0; k < p.size(); ++k) w.BT[size_t(n * alpha) + k] = p[k];
  return w;
}

Tensor winograd_weight_transform(const Tensor& kernel, int64_t tile_size, const std::string& name) {
  const char* op = "winograd_weight_transform";
  auto k = const_shape(kernel, 6, op, "kernel", "[K/ob,C/ib,3,3,ib,ob]");
  LOOM_CHECK(k[2] == 3 && k[3] == 3, "{}: the kernel is {}; only 3x3 kernels have a Winograd transform here", op,
             shape_str(k));
  LOOM_CHECK(kernel.dtype().is_float(), "{}: the kernel must be floating point, got {}", op, kernel.dtype().str());
  LOOM_CHECK(tile_size >= 2 && tile_size <= 6, "{}: tile_size must be in [2, 6], got {}", op, tile_size);
  const WinogradMatrices w = winograd_matrices(tile_size, 3);
  const int64_t alpha = w.alpha;
  const DataType dt = kernel.dtype();
  // rows[e, kb, cb, s, ci, co] = sum_r G[e][r] g[kb, cb, r, s, ci, co]
  Tensor rows = compute(to_exprs({alpha, k[0], k[1], 3, k[4], k[5]}), [&](const std::vector<Var>& i) -> Expr {
    return select_row(i[0], alpha, [&](int64_t e) {
      return combination(dt, row(w.G, 3, e), [&](int64_t r) { return kernel(i[1], i[2], int_const(r), i[3], i[4], i[5]); });
    });
  }, name + "_rows", "winograd_weight");
  // U[e, nu, kb, cb, ci, co] = sum_s rows[e, kb, cb, s, ci, co] G[nu][s]
  return compute(to_exprs({alpha, alpha, k[0], k[1], k[4], k[5]}), [&](const std::vector<Var>& i) -> Expr {
    return select_row(i[1], alpha, [&](int64_t nu) {
      return combination(dt, row(w.G, 3, nu), [&](int64_t s) { return rows(i[0], i[2], i[3], int_const(s), i[4], i[5]); });
    });
  }, name, "winograd_weight");
}

Tensor conv2d_nchwc_winograd(const Tensor& data, const Tensor& weight, Pair padding, const std::string& name) {
  const char* op = "conv2d_nchwc_winograd";
  auto d = const_shape(data, 5, op, "data", "[N,C/ib,H,W,ib]");
  auto u = const_shape(weight, 6, op, "weight", "[alpha,alpha,K/ob,C/ib,ib,ob]");
  detail::check_same_dtype(data, weight, op, "data", "weight");
  LOOM_CHECK(data.dtype().is_float(), "{}: data must be floating point, got {}", op, data.dtype().str());
  const int64_t alpha = u[0], m = alpha - 2;
  LOOM_CHECK(u[1] == alpha && m >= 2 && m <= 6,
             "{}: the weight is {}; a Winograd weight of F(m x m, 3x3) is [m+2, m+2, K/ob, C/ib, ib, ob], m in [2, 6] "
             "(winograd_weight_transform)",
             op, shape_str(u));
  LOOM_CHECK(u[3] == d[1] && u[4] == d[4],
             "{}: data is {} but the weight is {}; its input channels (dims 3 and 4) must match the data's", op,
             shape_str(d), shape_str(u));
  LOOM_CHECK(padding[0] >= 0 && padding[1] >= 0 && padding[0] <= 2 && padding[1] <= 2,
             "{}: padding {{{}, {}}} must be in [0, 2] (a 3x3 window)", op, padding[0], padding[1]);
  const int64_t N = d[0], CB = d[1], H = d[2], W = d[3], ib = d[4], KB = u[2], ob = u[5];
  const int64_t OH = H + 2 * padding[0] - 2, OW = W + 2 * padding[1] - 2;
  LOOM_CHECK(OH >= 1 && OW >= 1, "{}: the 3x3 window does not fit the padded input {}x{}", op, H + 2 * padding[0],
             W + 2 * padding[1]);
  const int64_t nH = (OH + m - 1) / m, nW = (OW + m - 1) / m, P = N * nH * nW;
  const WinogradMatrices w = winograd_matrices(m, 3);
  const DataType dt = data.dtype();

  // Padded so that every tile's alpha x alpha inputs exist: nH*m + 2 rows, nW*m + 2 columns.
  const int64_t after_h = nH * m + 2 - H - padding[0], after_w = nW * m + 2 - W - padding[1];
  Tensor p = padding[0] || padding[1] || after_h || after_w
                 ? pad(data, {0, 0, padding[0], padding[1], 0}, {0, 0, after_h, after_w, 0}, Expr(), "pad")
                 : data;
  const Expr nHW = int_const(nH * nW), nWe = int_const(nW), nHe = int_const(nH), me = int_const(m);

  // Input transform V = Bᵀ d B per tile, rows first: rows[cb, p, e, c, ci] = sum_r BT[e][r] d[r][c].
  Tensor in_rows = compute(to_exprs({CB, P, alpha, alpha, ib}), [&](const std::vector<Var>& i) -> Expr {
    Expr n = floordiv(i[1], nHW), th = floormod(floordiv(i[1], nWe), nHe), tw = floormod(i[1], nWe);
    return select_row(i[2], alpha, [&](int64_t e) {
      return combination(dt, row(w.BT, alpha, e), [&](int64_t r) {
        return p(n, i[0], th * me + int_const(r), tw * me + i[3], i[4]);
      });
    });
  }, "winograd_input_rows", "winograd_input");
  Tensor V = compute(to_exprs({alpha, alpha, CB, P, ib}), [&](const std::vector<Var>& i) -> Expr {
    return select_row(i[1], alpha, [&](int64_t nu) {
      return combination(dt, row(w.BT, alpha, nu), [&](int64_t c) { return in_rows(i[2], i[3], i[0], int_const(c), i[4]); });
    });
  }, "winograd_input", "winograd_input");

  // The batched GEMM: for each of the alpha x alpha points, M[kb, p, co] = sum_c U[kb, c, co] V[c, p].
  IterVar rco = reduce_axis(Range(0, int_const(CB)), "rco");
  IterVar rci = reduce_axis(Range(0, int_const(ib)), "rci");
  Tensor M = compute(to_exprs({alpha, alpha, KB, P, ob}), [&](Var e, Var nu, Var kb, Var t, Var co) {
    return sum(V(e, nu, rco, t, rci) * weight(e, nu, kb, rco, rci, co), {rco, rci});
  }, "winograd_gemm", "winograd_gemm");

  // Output transform Y = Aᵀ M A per tile, rows first: rows[kb, p, i, nu, co] = sum_e AT[i][e] M[e][nu].
  Tensor out_rows = compute(to_exprs({KB, P, m, alpha, ob}), [&](const std::vector<Var>& i) -> Expr {
    return select_row(i[2], m, [&](int64_t r) {
      return combination(dt, row(w.AT, alpha, r), [&](int64_t e) { return M(int_const(e), i[3], i[0], i[1], i[4]); });
    });
  }, "winograd_output_rows", "winograd_output");
  return compute(to_exprs({N, KB, OH, OW, ob}), [&](Var n, Var kb, Var y, Var x, Var co) {
    Expr t = (n * nHe + floordiv(y, me)) * nWe + floordiv(x, me);
    Expr yi = floormod(y, me);
    return select_row(floormod(x, me), m, [&](int64_t c) {
      return combination(dt, row(w.AT, alpha, c), [&](int64_t nu) { return out_rows(kb, t, yi, int_const(nu), co); });
    });
  }, name, "conv2d_nchwc_winograd");
}

}  // namespace loom::te::ops
