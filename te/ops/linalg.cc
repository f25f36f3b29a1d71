// det (Gaussian elimination with partial pivoting, one group of stages per column) and bitcast.
#include "loom/te/ops/linalg.h"

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// The first `batch` index vars of `iv` followed by `rest`.
std::vector<Expr> at(const std::vector<Var>& iv, size_t batch, std::vector<Expr> rest) {
  std::vector<Expr> idx(iv.begin(), iv.begin() + long(batch));
  idx.insert(idx.end(), rest.begin(), rest.end());
  return idx;
}

}  // namespace

Tensor det(const Tensor& x, const std::string& name) {
  const std::vector<int64_t> xs = const_shape(x, "det", "x");
  LOOM_CHECK(xs.size() >= 2 && xs[xs.size() - 1] == xs[xs.size() - 2], "det: x must be [..., M, M], got {}",
             shape_str(xs));
  const DataType t = x.dtype();
  LOOM_CHECK(t.is_float(), "det: x must be floating point, got {}", t.str());
  const size_t nb = xs.size() - 2;
  const int64_t M = xs.back();
  std::vector<int64_t> bs(xs.begin(), xs.begin() + long(nb));
  const bool flat = bs.empty();
  const std::vector<int64_t> out_shape = flat ? std::vector<int64_t>{1} : bs;
  // Index vars of a batch-shaped stage: the batch ones (none for a 2-D x).
  auto batch_of = [flat](const std::vector<Var>& iv) {
    return flat ? std::vector<Var>{} : iv;
  };
  Tensor a = x;
  Tensor sign = compute(to_exprs(out_shape), [&](const std::vector<Var>&) { return make_const(t, 1.0); },
                        name + "_sign", "injective");
  const Expr zero = make_const(t, 0.0);
  for (int64_t k = 0; k < M; ++k) {
    const Expr kk = Expr(int(k));
    Tensor pmax = compute(
        to_exprs(out_shape),
        [&](const std::vector<Var>& iv) {
          IterVar r = reduce_axis(Range(kk, Expr(int(M - k))), "r");
          return max_reduce(abs(a(at(batch_of(iv), nb, {r->var, kk}))), {r});
        },
        fmt::format("{}_pivot_max_{}", name, k), "det_pivot");
    Tensor piv = compute(
        to_exprs(out_shape),
        [&](const std::vector<Var>& iv) {
          IterVar r = reduce_axis(Range(kk, Expr(int(M - k))), "r");
          std::vector<Var> b = batch_of(iv);
          Expr is_max = abs(a(at(b, nb, {r->var, kk}))) == pmax(flat ? std::vector<Expr>{0} : at(b, nb, {}));
          return min_reduce(select(is_max, Expr(r->var), Expr(int(M))), {r});
        },
        fmt::format("{}_pivot_{}", name, k), "det_pivot");
    auto piv_of = [&](const std::vector<Var>& b) {
      return min(piv(flat ? std::vector<Expr>{0} : at(b, nb, {})), Expr(int(M - 1)));
    };
    Tensor swapped = compute(
        to_exprs(xs),
        [&](const std::vector<Var>& iv) {
          std::vector<Var> b(iv.begin(), iv.begin() + long(nb));
          Var i = iv[nb], j = iv[nb + 1];
          Expr p = piv_of(b);
          Expr row = select(i == kk, p, select(Expr(i) == p, kk, Expr(i)));
          return a(at(b, nb, {row, j}));
        },
        fmt::format("{}_swap_{}", name, k), "injective");
    Tensor prev_sign = sign;
    sign = compute(
        to_exprs(out_shape),
        [&](const std::vector<Var>& iv) {
          std::vector<Var> b = batch_of(iv);
          std::vector<Expr> bi = flat ? std::vector<Expr>{0} : at(b, nb, {});
          return select(piv_of(b) != kk, -prev_sign(bi), prev_sign(bi));
        },
        fmt::format("{}_sign_{}", name, k), "injective");
    if (k + 1 == M) {
      a = swapped;
      break;
    }
    a = compute(
        to_exprs(xs),
        [&](const std::vector<Var>& iv) {
          std::vector<Var> b(iv.begin(), iv.begin() + long(nb));
          Var i = iv[nb], j = iv[nb + 1];
          Expr pivot = swapped(at(b, nb, {kk, kk}));
          Expr factor = select(pivot == zero, zero, swapped(at(b, nb, {i, kk})) / pivot);
          Expr v = swapped(at(b, nb, {i, j}));
          return select(Expr(i) > kk, v - factor * swapped(at(b, nb, {kk, j})), v);
        },
        fmt::format("{}_eliminate_{}", name, k), "injective");
  }
  return compute(
      to_exprs(out_shape),
      [&](const std::vector<Var>& iv) {
        std::vector<Var> b = batch_of(iv);
        Expr d = sign(flat ? std::vector<Expr>{0} : at(b, nb, {}));
        for (int64_t r = 0; r < M; ++r) d = d * a(at(b, nb, {Expr(int(r)), Expr(int(r))}));
        return d;
      },
      name, "det");
}

Tensor bitcast(const Tensor& x, DataType dtype, const std::string& name) {
  const DataType from = x.dtype();
  LOOM_CHECK(from.lanes() == 1 && dtype.lanes() == 1, "bitcast: vector types are not supported ({} to {})", from.str(),
             dtype.str());
  const bool bools = from.is_bool() || dtype.is_bool();
  LOOM_CHECK(bools ? (from.is_bool() ? dtype.bits() : from.bits()) == 8 : from.bits() == dtype.bits(),
             "bitcast: {} and {} do not have one element width", from.str(), dtype.str());
  const std::vector<int64_t> xs = const_shape(x, "bitcast", "x");
  return compute(
      to_exprs(xs),
      [&](const std::vector<Var>& iv) -> Expr {
        Expr v = x(std::vector<Expr>(iv.begin(), iv.end()));
        if (from == dtype) return v;
        if (bools || (!from.is_float() && !dtype.is_float())) return cast(dtype, v);
        return call(dtype, "reinterpret", {v});
      },
      name, "elemwise");
}

}  // namespace loom::te::ops
