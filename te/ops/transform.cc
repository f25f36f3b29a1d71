// Layout transforms: pad, transpose, reshape, concat. Pure index mappings (tag "injective").
#include <functional>
#include <numeric>

#include "loom/runtime/shape.h"
#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

Tensor pad(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after, Expr value,
           const std::string& name) {
  auto s = const_shape(x, "pad", "x");
  if (after.empty()) after = before;
  LOOM_CHECK(before.size() == s.size() && after.size() == s.size(),
             "pad: x is {}-D ({}) but got {} 'before' and {} 'after' paddings; give one per dim", s.size(),
             shape_str(s), before.size(), after.size());
  std::vector<int64_t> out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    LOOM_CHECK(before[d] >= 0 && after[d] >= 0, "pad: padding of dim {} is ({}, {}); it must be non-negative", d,
               before[d], after[d]);
    out[d] = s[d] + before[d] + after[d];
  }
  Expr fill = value.defined() ? detail::convert(x.dtype(), value) : make_zero(x.dtype());
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx;
    Expr inside;
    for (size_t d = 0; d < iv.size(); ++d) {
      if (before[d] == 0 && after[d] == 0) {
        idx.push_back(iv[d]);
        continue;
      }
      idx.push_back(before[d] ? iv[d] - int_const(before[d]) : Expr(iv[d]));
      std::vector<Expr> conds;
      if (before[d]) conds.push_back(iv[d] >= int_const(before[d]));
      if (after[d]) conds.push_back(iv[d] < int_const(before[d] + s[d]));
      for (auto& c : conds) inside = inside.defined() ? (inside && c) : c;
    }
    if (!inside.defined()) return x(idx);
    return select(inside, x(idx), fill);
  };
  return compute(to_exprs(out), f, name, "injective");
}

Tensor transpose(const Tensor& x, std::vector<int> axes, const std::string& name) {
  auto s = const_shape(x, "transpose", "x");
  size_t n = s.size();
  if (axes.empty()) {
    axes.resize(n);
    std::iota(axes.rbegin(), axes.rend(), 0);
  }
  LOOM_CHECK(axes.size() == n, "transpose: x is {}-D ({}) but {} axes were given", n, shape_str(s), axes.size());
  std::vector<int> src(n, -1);  // src[axes[i]] = i: which output dim reads input dim axes[i]
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int a = detail::normalize_axis(axes[i], n, "transpose");
    LOOM_CHECK(src[a] < 0, "transpose: axis {} appears twice in the permutation", a);
    src[a] = int(i);
    out[i] = s[a];
  }
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> idx(n);
    for (size_t d = 0; d < n; ++d) idx[d] = iv[src[d]];
    return x(idx);
  };
  return compute(to_exprs(out), f, name, "injective");
}

Tensor reshape(const Tensor& x, std::vector<int64_t> newshape, const std::string& name) {
  auto s = const_shape(x, "reshape", "x");
  const int64_t total = runtime::checked_element_count(s, "reshape: x");
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < newshape.size(); ++i) {
    if (newshape[i] == -1) {
      LOOM_CHECK(infer < 0, "reshape: newshape has more than one -1 (dims {} and {})", infer, i);
      infer = int(i);
      continue;
    }
    LOOM_CHECK(newshape[i] > 0, "reshape: newshape dim {} is {}; dims must be positive or -1", i, newshape[i]);
    LOOM_CHECK(!__builtin_mul_overflow(known, newshape[i], &known),
               "reshape: the new shape {} has more than 2^63-1 elements", shape_str(newshape));
  }
  if (infer >= 0) {
    LOOM_CHECK(known > 0 && total % known == 0, "reshape: cannot infer dim {}: x has {} elements ({}), not divisible by {}",
               infer, total, shape_str(s), known);
    newshape[infer] = total / known;
    known = total;
  }
  LOOM_CHECK(known == total, "reshape: x is {} ({} elements) but the new shape {} has {} elements", shape_str(s),
             total, shape_str(newshape), known);
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    Expr flat;
    for (size_t d = 0; d < iv.size(); ++d)
      flat = flat.defined() ? flat * int_const(newshape[d]) + iv[d] : Expr(iv[d]);
    if (!flat.defined()) flat = int_const(0);
    std::vector<Expr> idx(s.size());
    int64_t stride = 1;
    for (size_t d = s.size(); d-- > 0;) {
      Expr q = stride == 1 ? flat : floordiv(flat, int_const(stride));
      idx[d] = d == 0 ? q : floormod(q, int_const(s[d]));
      stride *= s[d];
    }
    return x(idx);
  };
  return compute(to_exprs(newshape), f, name, "injective");
}

Tensor concat(const std::vector<Tensor>& inputs, int axis, const std::string& name) {
  LOOM_CHECK(!inputs.empty(), "concat: no input tensors");
  auto s0 = const_shape(inputs[0], "concat", "input 0");
  LOOM_CHECK(!s0.empty(), "concat: inputs must have at least one dim");
  int ax = detail::normalize_axis(axis, s0.size(), "concat");
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (size_t t = 0; t < inputs.size(); ++t) {
    auto st = const_shape(inputs[t], "concat", fmt::format("input {}", t));
    LOOM_CHECK(st.size() == s0.size(), "concat: input 0 is {} but input {} is {}; ranks must match", shape_str(s0), t,
               shape_str(st));
    detail::check_same_dtype(inputs[0], inputs[t], "concat", "input 0", fmt::format("input {}", t));
    for (size_t d = 0; d < s0.size(); ++d)
      LOOM_CHECK(int(d) == ax || st[d] == s0[d],
                 "concat: input 0 is {} but input {} is {}; all dims but the concat axis {} must match", shape_str(s0),
                 t, shape_str(st), ax);
    offsets.push_back(total);
    total += st[ax];
  }
  std::vector<int64_t> out = s0;
  out[ax] = total;
  // Consecutive copies of one input are one run, read modulo its extent (a concat of copies is
  // a tile): one load for the run, not one per copy.
  struct Run {
    size_t input;
    int64_t offset, extent, copies;
  };
  std::vector<Run> runs;
  for (size_t t = 0; t < inputs.size(); ++t) {
    const int64_t extent = t + 1 < inputs.size() ? offsets[t + 1] - offsets[t] : total - offsets[t];
    if (!runs.empty() && inputs[runs.back().input] == inputs[t]) ++runs.back().copies;
    else runs.push_back({t, offsets[t], extent, 1});
  }
  // A balanced tree of selects on the runs' offsets, not a chain: a chain of n makes every
  // load depend on up to n conditions (n^2 guards once loads are predicated, n tests per
  // element when folded), which made a concat of a few thousand inputs take minutes and gigabytes.
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    auto read = [&](const Run& r) {
      std::vector<Expr> idx(iv.begin(), iv.end());
      if (r.offset) idx[ax] = iv[ax] - int_const(r.offset);
      if (r.copies > 1) idx[ax] = floormod(idx[ax], int_const(r.extent));
      return inputs[r.input](idx);
    };
    std::function<Expr(size_t, size_t)> pick = [&](size_t lo, size_t hi) -> Expr {
      if (hi - lo == 1) return read(runs[lo]);
      size_t mid = lo + (hi - lo) / 2;
      return select(iv[ax] < int_const(runs[mid].offset), pick(lo, mid), pick(mid, hi));
    };
    return pick(0, runs.size());
  };
  return compute(to_exprs(out), f, name, "injective");
}

Tensor flatten(const Tensor& x, int axis, const std::string& name) {
  auto s = const_shape(x, "flatten", "x");
  LOOM_CHECK(axis >= -int(s.size()) && axis <= int(s.size()), "flatten: axis {} is out of range for a {}-D tensor", axis,
             s.size());
  size_t ax = size_t(axis < 0 ? axis + int(s.size()) : axis);
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < s.size(); ++d) (d < ax ? rows : cols) *= s[d];
  return reshape(x, {rows, cols}, name);
}

Tensor squeeze(const Tensor& x, std::vector<int64_t> axes, const std::string& name) {
  auto s = const_shape(x, "squeeze", "x");
  std::vector<bool> drop(s.size(), false);
  if (axes.empty()) {
    for (size_t d = 0; d < s.size(); ++d) drop[d] = s[d] == 1;
  }
  for (int64_t a : axes) {
    LOOM_CHECK(a >= -int64_t(s.size()) && a < int64_t(s.size()), "squeeze: axis {} is out of range for x of shape {}",
               a, shape_str(s));
    size_t d = size_t(detail::normalize_axis(int(a), s.size(), "squeeze"));
    LOOM_CHECK(s[d] == 1, "squeeze: x is {}; dim {} has extent {}, not 1", shape_str(s), d, s[d]);
    drop[d] = true;
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < s.size(); ++d)
    if (!drop[d]) out.push_back(s[d]);
  if (out.empty()) out.push_back(1);
  return reshape(x, out, name);
}

Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes, const std::string& name) {
  auto s = const_shape(x, "unsqueeze", "x");
  LOOM_CHECK(!axes.empty(), "unsqueeze: no axes given");
  const int64_t n = int64_t(s.size() + axes.size());
  std::vector<bool> ins(size_t(n), false);
  for (int64_t a : axes) {
    LOOM_CHECK(a >= -n && a < n, "unsqueeze: axis {} is out of range for a {}-D result", a, n);
    size_t d = size_t(a < 0 ? a + n : a);
    LOOM_CHECK(!ins[d], "unsqueeze: axis {} is given twice", d);
    ins[d] = true;
  }
  std::vector<int64_t> out;
  size_t j = 0;
  for (size_t d = 0; d < size_t(n); ++d) out.push_back(ins[d] ? 1 : s[j++]);
  return reshape(x, out, name);
}

Tensor take(const Tensor& x, const Tensor& indices, int axis, const std::string& name) {
  auto s = const_shape(x, "take", "x");
  auto is = const_shape(indices, "take", "indices");
  LOOM_CHECK(indices.dtype().is_int() || indices.dtype().is_uint(), "take: indices must be integers, got {}",
             indices.dtype().str());
  LOOM_CHECK(!s.empty(), "take: x must have at least one dim");
  size_t ax = size_t(detail::normalize_axis(axis, s.size(), "take"));
  const int64_t n = s[ax];
  std::vector<int64_t> out(s.begin(), s.begin() + long(ax));
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), s.begin() + long(ax) + 1, s.end());
  const bool scalar_out = out.empty();
  if (scalar_out) out.push_back(1);
  FCompute f = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> iidx;
    for (size_t d = 0; d < is.size(); ++d) iidx.push_back(iv[ax + d]);
    Expr i = is.empty() ? indices(std::vector<Expr>{}) : indices(iidx);
    i = cast(DataType::Int(32), i);
    i = select(i < 0, i + int_const(n), i);
    i = max(min(i, int_const(n - 1)), int_const(0));
    std::vector<Expr> idx;
    for (size_t d = 0; d < ax; ++d) idx.push_back(iv[d]);
    idx.push_back(i);
    for (size_t d = ax + 1; d < s.size(); ++d) idx.push_back(iv[d - 1 + is.size()]);
    return x(idx);
  };
  return compute(to_exprs(out), f, name, "injective");
}

}  // namespace loom::te::ops
