// Slicing, tiling, broadcasting, padding modes, gathers, scatters, one-hot, triangles,
// cumulative sums and sequence reversal (include/loom/te/ops/shape.h).
#include "loom/te/ops/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// A run-time index into an axis of extent n: int32, negative counting from the end, clamped
/// into [0, n).
Expr wrap_index(const Expr& i, int64_t n) {
  Expr v = cast(DataType::Int(32), i);
  v = select(v < 0, v + int_const(n), v);
  return max(min(v, int_const(n - 1)), int_const(0));
}

void check_index_dtype(const Tensor& t, std::string_view op, std::string_view what) {
  LOOM_CHECK(t.dtype().is_integer(), "{}: {} must be integers, got {}", op, what, t.dtype().str());
}

Expr all_of(const std::vector<Expr>& conds) {
  Expr r;
  for (const Expr& c : conds) r = r.defined() ? (r && c) : c;
  return r;
}

}  // namespace

int64_t slice_extent(int64_t n, int64_t begin, int64_t end, int64_t stride, int64_t* first) {
  LOOM_CHECK(stride != 0, "strided_slice: a stride is 0");
  if (begin < 0) begin += n;
  if (end < 0) end += n;
  int64_t ext = 0;
  if (stride > 0) {
    begin = std::clamp(begin, int64_t(0), n);
    end = std::clamp(end, int64_t(0), n);
    if (end > begin) ext = (end - begin - 1) / stride + 1;
  } else {
    begin = std::clamp(begin, int64_t(-1), n - 1);
    end = std::clamp(end, int64_t(-1), n - 1);
    if (begin > end) ext = (begin - end - 1) / -stride + 1;
  }
  if (first) *first = begin;
  return ext;
}

Tensor strided_slice(const Tensor& x, std::vector<int64_t> begin, std::vector<int64_t> end,
                     std::vector<int64_t> strides, const std::string& name) {
  auto s = const_shape(x, "strided_slice", "x");
  if (strides.empty()) strides.assign(s.size(), 1);
  LOOM_CHECK(begin.size() == s.size() && end.size() == s.size() && strides.size() == s.size(),
             "strided_slice: x is {}-D ({}) but got {} begins, {} ends and {} strides; give one per dim", s.size(),
             shape_str(s), begin.size(), end.size(), strides.size());
  std::vector<int64_t> out(s.size()), first(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    LOOM_CHECK(strides[d] != 0, "strided_slice: the stride of dim {} is 0", d);
    out[d] = slice_extent(s[d], begin[d], end[d], strides[d], &first[d]);
    LOOM_CHECK(out[d] > 0, "strided_slice: dim {} of x ({}) sliced [{}:{}:{}] is empty; loom has no empty tensors", d,
               shape_str(s), begin[d], end[d], strides[d]);
  }
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx;
    for (size_t d = 0; d < iv.size(); ++d) {
      Expr i = strides[d] == 1 ? Expr(iv[d]) : iv[d] * int_const(strides[d]);
      idx.push_back(first[d] ? i + int_const(first[d]) : i);
    }
    return x(idx);
  };
  return compute(to_exprs(out), f, name, "injective");
}

Tensor tile(const Tensor& x, std::vector<int64_t> reps, const std::string& name) {
  auto s = const_shape(x, "tile", "x");
  LOOM_CHECK(reps.size() == s.size(), "tile: x is {}-D ({}) but got {} repeats", s.size(), shape_str(s), reps.size());
  std::vector<int64_t> out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    LOOM_CHECK(reps[d] > 0, "tile: the repeat count of dim {} is {}; it must be positive", d, reps[d]);
    LOOM_CHECK(!__builtin_mul_overflow(s[d], reps[d], &out[d]) && out[d] <= INT32_MAX,
               "tile: dim {} of {} repeated {} times exceeds 2^31-1", d, shape_str(s), reps[d]);
  }
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx;
    for (size_t d = 0; d < iv.size(); ++d)
      idx.push_back(reps[d] == 1 ? Expr(iv[d]) : s[d] == 1 ? int_const(0) : floormod(iv[d], int_const(s[d])));
    return x(idx);
  };
  return compute(to_exprs(out), f, name, "injective");
}

Tensor broadcast_to(const Tensor& x, std::vector<int64_t> shape, const std::string& name) {
  auto s = const_shape(x, "broadcast_to", "x");
  LOOM_CHECK(shape.size() >= s.size(), "broadcast_to: x is {} but the target shape {} has fewer dims", shape_str(s),
             shape_str(shape));
  const size_t lead = shape.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d)
    LOOM_CHECK(s[d] == shape[lead + d] || s[d] == 1, "broadcast_to: x is {}; its dim {} ({}) cannot broadcast to {}",
               shape_str(s), d, s[d], shape_str(shape));
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx;
    for (size_t d = 0; d < s.size(); ++d) idx.push_back(s[d] == 1 ? int_const(0) : Expr(iv[lead + d]));
    return x(idx);
  };
  return compute(to_exprs(shape), f, name, "broadcast");
}

PadMode parse_pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "wrap") return PadMode::kWrap;
  fail("pad: mode \"{}\" is not one of \"constant\", \"edge\", \"reflect\", \"wrap\"", mode);
}

Tensor pad_mode(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after, PadMode mode, Expr value,
                const std::string& name) {
  auto s = const_shape(x, "pad", "x");
  LOOM_CHECK(before.size() == s.size() && after.size() == s.size(),
             "pad: x is {}-D ({}) but got {} 'before' and {} 'after' paddings; give one per dim", s.size(),
             shape_str(s), before.size(), after.size());
  std::vector<int64_t> out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    out[d] = s[d] + before[d] + after[d];
    LOOM_CHECK(out[d] > 0, "pad: dim {} of {} padded by ({}, {}) is empty; loom has no empty tensors", d, shape_str(s),
               before[d], after[d]);
    LOOM_CHECK(out[d] <= INT32_MAX, "pad: dim {} of {} padded by ({}, {}) exceeds 2^31-1", d, shape_str(s), before[d],
               after[d]);
  }
  Expr fill = value.defined() ? detail::convert(x.dtype(), value) : make_zero(x.dtype());
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx, inside;
    for (size_t d = 0; d < iv.size(); ++d) {
      const bool grows = before[d] > 0 || after[d] > 0;
      Expr src = before[d] ? iv[d] - int_const(before[d]) : Expr(iv[d]);
      const int64_t n = s[d];
      if (!grows) {
        idx.push_back(src);
        continue;
      }
      switch (mode) {
        case PadMode::kConstant:
          if (before[d] > 0) inside.push_back(iv[d] >= int_const(before[d]));
          if (after[d] > 0) inside.push_back(iv[d] < int_const(before[d] + n));
          break;
        case PadMode::kEdge: src = max(min(src, int_const(n - 1)), int_const(0)); break;
        case PadMode::kReflect:
          if (n == 1) {
            src = int_const(0);
          } else {
            // m in [0, 2(n-1)) folds back at n-1; clamped so that bound inference sees [0, n).
            Expr m = floormod(src, int_const(2 * (n - 1)));
            src = max(min(select(m < int_const(n), m, int_const(2 * (n - 1)) - m), int_const(n - 1)), int_const(0));
          }
          break;
        case PadMode::kWrap: src = n == 1 ? int_const(0) : floormod(src, int_const(n)); break;
      }
      idx.push_back(src);
    }
    if (inside.empty()) return x(idx);
    return select(all_of(inside), x(idx), fill);
  };
  return compute(to_exprs(out), f, name, "injective");
}

Tensor gather_elements(const Tensor& data, const Tensor& indices, int axis, const std::string& name) {
  auto s = const_shape(data, "gather_elements", "data");
  auto is = const_shape(indices, "gather_elements", "indices");
  check_index_dtype(indices, "gather_elements", "indices");
  LOOM_CHECK(is.size() == s.size(), "gather_elements: data is {} but indices is {}; their ranks must match",
             shape_str(s), shape_str(is));
  const size_t ax = size_t(detail::normalize_axis(axis, s.size(), "gather_elements"));
  for (size_t d = 0; d < s.size(); ++d)
    LOOM_CHECK(d == ax || is[d] <= s[d], "gather_elements: indices {} exceeds data {} on dim {} (not the axis {})",
               shape_str(is), shape_str(s), d, ax);
  const int64_t n = s[ax];
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx(iv.begin(), iv.end());
    idx[ax] = wrap_index(indices(std::vector<Expr>(iv.begin(), iv.end())), n);
    return data(idx);
  };
  return compute(to_exprs(is), f, name, "injective");
}

Tensor gather_nd(const Tensor& data, const Tensor& indices, int batch_dims, const std::string& name) {
  auto s = const_shape(data, "gather_nd", "data");
  auto is = const_shape(indices, "gather_nd", "indices");
  check_index_dtype(indices, "gather_nd", "indices");
  LOOM_CHECK(!is.empty(), "gather_nd: indices must have at least one dim");
  const size_t b = size_t(batch_dims), q = is.size(), k = size_t(is.back());
  LOOM_CHECK(batch_dims >= 0 && b < q && b < s.size(), "gather_nd: batch_dims {} must be below the ranks of data ({}) "
             "and indices ({})", batch_dims, shape_str(s), shape_str(is));
  for (size_t d = 0; d < b; ++d)
    LOOM_CHECK(s[d] == is[d], "gather_nd: data {} and indices {} differ on batch dim {}", shape_str(s), shape_str(is),
               d);
  LOOM_CHECK(k >= 1 && b + k <= s.size(), "gather_nd: indices {} address {} dims but data {} has {} after {} batch dims",
             shape_str(is), k, shape_str(s), s.size() - b, b);
  std::vector<int64_t> out(is.begin(), is.end() - 1);
  out.insert(out.end(), s.begin() + long(b + k), s.end());
  const bool scalar_out = out.empty();
  if (scalar_out) out.push_back(1);
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> prefix;
    for (size_t d = 0; d + 1 < q; ++d) prefix.push_back(iv[d]);
    std::vector<Expr> idx(iv.begin(), iv.begin() + long(b));
    for (size_t j = 0; j < k; ++j) {
      std::vector<Expr> ii = prefix;
      ii.push_back(int_const(int64_t(j)));
      idx.push_back(wrap_index(indices(ii), s[b + j]));
    }
    for (size_t d = b + k; d < s.size(); ++d) idx.push_back(iv[q - 1 + d - b - k]);
    return data(idx);
  };
  return compute(to_exprs(out), f, name, "injective");
}

ScatterReduce parse_scatter_reduce(const std::string& reduction) {
  if (reduction == "none") return ScatterReduce::kNone;
  if (reduction == "add") return ScatterReduce::kAdd;
  if (reduction == "mul") return ScatterReduce::kMul;
  if (reduction == "max") return ScatterReduce::kMax;
  if (reduction == "min") return ScatterReduce::kMin;
  fail("scatter: reduction \"{}\" is not one of \"none\", \"add\", \"mul\", \"max\", \"min\"", reduction);
}

namespace {

/// What a scatter's output element i sees: whether update position `pos` (its reduce axes'
/// values) targets i, and the update there.
struct ScatterSearch {
  std::vector<IterVar> axes;                                         // over the update positions
  std::function<Expr(const std::vector<Var>&)> match;                // over iv and `axes`
  std::function<std::vector<Expr>(const std::vector<Var>&, const std::vector<Expr>&)> update_index;  // iv, pos
  std::vector<int64_t> extents;                                      // of `axes`
};

/// The scatter's output from a search: the last matching position's update (kNone) or the
/// combination of every matching update with data.
Tensor scatter_from(const Tensor& data, const Tensor& updates, const ScatterSearch& search, ScatterReduce reduce,
                    const std::string& name) {
  auto s = const_shape(data, name, "data");
  std::vector<Expr> pos;
  for (const IterVar& a : search.axes) pos.push_back(a);
  if (reduce == ScatterReduce::kNone) {
    // The flat position of the last matching update (-1: none).
    Expr flat;
    for (size_t j = 0; j < pos.size(); ++j)
      flat = flat.defined() ? flat * int_const(search.extents[j]) + pos[j] : pos[j];
    Tensor pick = compute(
        to_exprs(s), [&](const std::vector<Var>& iv) { return max_reduce(flat, search.axes, search.match(iv)); },
        name + "_pick", "scatter_pick");
    FCompute f = [=](const std::vector<Var>& iv) -> Expr {
      Expr p = pick(std::vector<Expr>(iv.begin(), iv.end()));
      Expr c = max(p, int_const(0));
      std::vector<Expr> at(search.extents.size());
      for (size_t j = search.extents.size(); j-- > 0;) {
        at[j] = j == 0 ? c : floormod(c, int_const(search.extents[j]));
        if (j > 0) c = floordiv(c, int_const(search.extents[j]));
      }
      return select(p >= 0, updates(search.update_index(iv, at)), data(std::vector<Expr>(iv.begin(), iv.end())));
    };
    return compute(to_exprs(s), f, name, "injective");
  }
  Tensor combined = compute(
      to_exprs(s),
      [&](const std::vector<Var>& iv) -> Expr {
        Expr u = updates(search.update_index(iv, pos));
        Expr m = search.match(iv);
        switch (reduce) {
          case ScatterReduce::kAdd: return sum(u, search.axes, m);
          case ScatterReduce::kMul: return prod(u, search.axes, m);
          case ScatterReduce::kMax: return max_reduce(u, search.axes, m);
          default: return min_reduce(u, search.axes, m);
        }
      },
      name + "_combine", "scatter_combine");
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> i(iv.begin(), iv.end());
    Expr d = data(i), c = combined(i);
    switch (reduce) {
      case ScatterReduce::kAdd: return d + c;
      case ScatterReduce::kMul: return d * c;
      case ScatterReduce::kMax: return max(d, c);
      default: return min(d, c);
    }
  };
  return compute(to_exprs(s), f, name, "injective");
}

}  // namespace

Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int axis,
                        ScatterReduce reduce, const std::string& name) {
  auto s = const_shape(data, "scatter_elements", "data");
  auto is = const_shape(indices, "scatter_elements", "indices");
  auto us = const_shape(updates, "scatter_elements", "updates");
  check_index_dtype(indices, "scatter_elements", "indices");
  detail::check_same_dtype(data, updates, "scatter_elements", "data", "updates");
  LOOM_CHECK(is == us, "scatter_elements: indices {} and updates {} must have the same shape", shape_str(is),
             shape_str(us));
  LOOM_CHECK(is.size() == s.size(), "scatter_elements: data is {} but indices is {}; their ranks must match",
             shape_str(s), shape_str(is));
  const size_t ax = size_t(detail::normalize_axis(axis, s.size(), "scatter_elements"));
  for (size_t d = 0; d < s.size(); ++d)
    LOOM_CHECK(d == ax || is[d] <= s[d], "scatter_elements: indices {} exceeds data {} on dim {} (not the axis {})",
               shape_str(is), shape_str(s), d, ax);
  ScatterSearch search;
  search.axes = {reduce_axis(Range(0, int_const(is[ax])), "ru")};
  search.extents = {is[ax]};
  // Positions of updates along the non-axis dims are the output's; beyond the updates' extent
  // nothing matches (the clamped read is not used).
  auto update_index = [=](const std::vector<Var>& iv, const std::vector<Expr>& pos) {
    std::vector<Expr> u;
    for (size_t d = 0; d < s.size(); ++d)
      u.push_back(d == ax ? pos[0] : is[d] < s[d] ? min(Expr(iv[d]), int_const(is[d] - 1)) : Expr(iv[d]));
    return u;
  };
  search.update_index = update_index;
  const IterVar r = search.axes[0];
  search.match = [=](const std::vector<Var>& iv) {
    std::vector<Expr> conds;
    for (size_t d = 0; d < s.size(); ++d)
      if (d != ax && is[d] < s[d]) conds.push_back(iv[d] < int_const(is[d]));
    conds.push_back(wrap_index(indices(update_index(iv, {Expr(r)})), s[ax]) == iv[ax]);
    return all_of(conds);
  };
  return scatter_from(data, updates, search, reduce, name);
}

Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, ScatterReduce reduce,
                  const std::string& name) {
  auto s = const_shape(data, "scatter_nd", "data");
  auto is = const_shape(indices, "scatter_nd", "indices");
  auto us = const_shape(updates, "scatter_nd", "updates");
  check_index_dtype(indices, "scatter_nd", "indices");
  detail::check_same_dtype(data, updates, "scatter_nd", "data", "updates");
  LOOM_CHECK(!is.empty(), "scatter_nd: indices must have at least one dim");
  const size_t q = is.size(), k = size_t(is.back());
  LOOM_CHECK(k >= 1 && k <= s.size(), "scatter_nd: indices {} address {} dims but data {} has {}", shape_str(is), k,
             shape_str(s), s.size());
  std::vector<int64_t> want(is.begin(), is.end() - 1);
  want.insert(want.end(), s.begin() + long(k), s.end());
  // indices of shape [k] (no M dims): loom holds a rank-0 updates as [1].
  const bool single = q == 1;
  LOOM_CHECK(us == want || (single && k == s.size() && us == std::vector<int64_t>{1}),
             "scatter_nd: data {} and indices {} need updates of shape {}, got {}", shape_str(s), shape_str(is),
             shape_str(want), shape_str(us));
  ScatterSearch search;
  std::vector<int64_t> m(is.begin(), is.end() - 1);
  if (single) m = {1};
  for (size_t j = 0; j < m.size(); ++j) {
    search.axes.push_back(reduce_axis(Range(0, int_const(m[j])), fmt::format("ru{}", j)));
    search.extents.push_back(m[j]);
  }
  const std::vector<int64_t> ushape = us;
  search.update_index = [=](const std::vector<Var>& iv, const std::vector<Expr>& pos) {
    std::vector<Expr> u;
    if (!single) u = pos;
    for (size_t d = k; d < s.size(); ++d) u.push_back(iv[d]);
    if (u.empty()) u.push_back(int_const(0));
    return u;
  };
  const std::vector<IterVar> axes = search.axes;
  search.match = [=](const std::vector<Var>& iv) {
    std::vector<Expr> conds;
    for (size_t j = 0; j < k; ++j) {
      std::vector<Expr> ii;
      if (!single)
        for (const IterVar& a : axes) ii.push_back(a);
      ii.push_back(int_const(int64_t(j)));
      conds.push_back(wrap_index(indices(ii), s[j]) == iv[j]);
    }
    return all_of(conds);
  };
  return scatter_from(data, updates, search, reduce, name);
}

Tensor one_hot(const Tensor& indices, const Tensor& values, int64_t depth, int axis, const std::string& name) {
  auto is = const_shape(indices, "one_hot", "indices");
  auto vs = const_shape(values, "one_hot", "values");
  LOOM_CHECK(vs.size() == 1 && vs[0] == 2, "one_hot: values must hold 2 elements (off, on), got {}", shape_str(vs));
  LOOM_CHECK(depth > 0 && depth <= INT32_MAX, "one_hot: depth {} must be positive and below 2^31", depth);
  const size_t n = is.size() + 1;
  const size_t ax = size_t(detail::normalize_axis(axis, n, "one_hot"));
  std::vector<int64_t> out = is;
  out.insert(out.begin() + long(ax), depth);
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> ii;
    for (size_t d = 0; d < n; ++d)
      if (d != ax) ii.push_back(iv[d]);
    Expr i = indices(ii);
    // Float indices truncate as ONNX's cast to int64 does; out-of-range ones stay out of range.
    if (!indices.dtype().is_int() || indices.dtype().bits() != 64) i = cast(DataType::Int(64), i);
    i = select(i < make_const(i.dtype(), int64_t(0)), i + make_const(i.dtype(), depth), i);
    return select(i == cast(i.dtype(), Expr(iv[ax])), values(std::vector<Expr>{int_const(1)}),
                  values(std::vector<Expr>{int_const(0)}));
  };
  return compute(to_exprs(out), f, name, "injective");
}

Tensor trilu(const Tensor& x, bool upper, int64_t k, const std::string& name) {
  auto s = const_shape(x, "trilu", "x");
  LOOM_CHECK(s.size() >= 2, "trilu: x must have at least 2 dims, got {}", shape_str(s));
  const size_t n = s.size();
  const int64_t rows = s[n - 2], cols = s[n - 1];
  k = std::clamp(k, -rows - 1, cols + 1);
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    Expr diff = iv[n - 1] - iv[n - 2];
    Expr keep = upper ? diff >= int_const(k) : diff <= int_const(k);
    return select(keep, x(std::vector<Expr>(iv.begin(), iv.end())), make_zero(x.dtype()));
  };
  return compute(to_exprs(s), f, name, "injective");
}

Tensor cumulative(const Tensor& x, int axis, bool product, bool exclusive, bool reverse, const std::string& name) {
  const char* op = product ? "cumprod" : "cumsum";
  auto s = const_shape(x, op, "x");
  LOOM_CHECK(!s.empty(), "{}: x must have at least one dim", op);
  const size_t ax = size_t(detail::normalize_axis(axis, s.size(), op));
  IterVar r = reduce_axis(Range(0, int_const(s[ax])), "rc");
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx(iv.begin(), iv.end());
    idx[ax] = r;
    Expr i = iv[ax], j = r;
    Expr cond = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
    return product ? prod(x(idx), {r}, cond) : sum(x(idx), {r}, cond);
  };
  return compute(to_exprs(s), f, name, "cumulative");
}

Tensor reverse_sequence(const Tensor& x, const Tensor& seq_lens, int batch_axis, int time_axis,
                        const std::string& name) {
  auto s = const_shape(x, "reverse_sequence", "x");
  auto ls = const_shape(seq_lens, "reverse_sequence", "seq_lens");
  check_index_dtype(seq_lens, "reverse_sequence", "seq_lens");
  LOOM_CHECK(s.size() >= 2, "reverse_sequence: x must have at least 2 dims, got {}", shape_str(s));
  const size_t b = size_t(detail::normalize_axis(batch_axis, s.size(), "reverse_sequence"));
  const size_t t = size_t(detail::normalize_axis(time_axis, s.size(), "reverse_sequence"));
  LOOM_CHECK(b != t, "reverse_sequence: batch_axis and time_axis are both {}", b);
  LOOM_CHECK(ls.size() == 1 && ls[0] == s[b], "reverse_sequence: seq_lens must be 1-D of the batch extent {}, got {}",
             s[b], shape_str(ls));
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    Expr len = cast(DataType::Int(32), seq_lens(std::vector<Expr>{iv[b]}));
    len = max(min(len, int_const(s[t])), int_const(0));
    std::vector<Expr> idx(iv.begin(), iv.end());
    // max(…, 0) changes nothing where the select takes it; it lets bound inference see [0, n).
    idx[t] = select(iv[t] < len, max(len - 1 - iv[t], int_const(0)), Expr(iv[t]));
    return x(idx);
  };
  return compute(to_exprs(s), f, name, "injective");
}

}  // namespace loom::te::ops
