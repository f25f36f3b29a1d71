// Layout strings ("NCHW16c") and layout_transform between them.
#include <algorithm>
#include <cctype>

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

Layout Layout::parse(const std::string& s) {
  Layout l;
  LOOM_CHECK(!s.empty(), "layout: the layout string is empty");
  size_t i = 0;
  while (i < s.size()) {
    int64_t factor = 0;
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      LOOM_CHECK(factor < (int64_t(1) << 31), "layout '{}': the factor at position {} is too large", s, start);
      factor = factor * 10 + (s[i++] - '0');
    }
    LOOM_CHECK(i < s.size(), "layout '{}': the number at position {} names no axis", s, start);
    char c = s[i++];
    bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    LOOM_CHECK(upper || lower, "layout '{}': '{}' at position {} is not an axis letter", s, c, i - 1);
    if (upper) {
      LOOM_CHECK(i - 1 == start, "layout '{}': the primal axis '{}' takes no factor", s, c);
    } else {
      LOOM_CHECK(i - 1 > start, "layout '{}': the sub-axis '{}' needs a factor (as in 16{})", s, c, c);
      LOOM_CHECK(factor > 0, "layout '{}': the sub-axis '{}' has factor 0", s, c);
    }
    LOOM_CHECK(l.index_of(c) < 0, "layout '{}': axis '{}' appears twice", s, c);
    l.axes.push_back({c, upper ? 0 : factor});
  }
  for (const Axis& a : l.axes)
    if (a.factor)
      LOOM_CHECK(l.index_of(char(a.name - 'a' + 'A')) >= 0, "layout '{}': the sub-axis '{}' has no primal axis '{}'",
                 s, a.name, char(a.name - 'a' + 'A'));
  return l;
}

std::string Layout::str() const {
  std::string s;
  for (const Axis& a : axes) {
    if (a.factor) s += std::to_string(a.factor);
    s += a.name;
  }
  return s;
}

int Layout::index_of(char name) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == name) return int(i);
  return -1;
}

int64_t Layout::block_of(char primal) const {
  int i = index_of(char(primal - 'A' + 'a'));
  return i < 0 ? 0 : axes[size_t(i)].factor;
}

bool Layout::blocked() const {
  return std::any_of(axes.begin(), axes.end(), [](const Axis& a) { return a.factor != 0; });
}

Tensor layout_transform(const Tensor& x, const std::string& src, const std::string& dst,
                        std::vector<int64_t> dst_shape, const std::string& name) {
  const char* op = "layout_transform";
  auto s = const_shape(x, op, "x");
  Layout ls = Layout::parse(src), ld = Layout::parse(dst);
  LOOM_CHECK(ls.ndim() == s.size(), "layout_transform: x is {} ({}-D) but the source layout '{}' has {} axes",
             shape_str(s), s.size(), src, ls.ndim());
  // Primal axes and their (logical) extents, from the source.
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < ls.ndim(); ++i) {
    const auto& a = ls.axes[i];
    if (a.factor) {
      LOOM_CHECK(s[i] == a.factor, "layout_transform: x is {} but layout '{}' says dim {} ('{}') has {} elements",
                 shape_str(s), src, i, a.name, a.factor);
      continue;
    }
    int64_t b = ls.block_of(a.name);
    extent[a.name] = s[i] * (b ? b : 1);
  }
  for (const auto& a : ld.axes)
    if (!a.factor)
      LOOM_CHECK(extent.count(a.name), "layout_transform: '{}' has the axis '{}', which '{}' lacks", dst, a.name, src);
  LOOM_CHECK(extent.size() == size_t(std::count_if(ld.axes.begin(), ld.axes.end(), [](auto& a) { return !a.factor; })),
             "layout_transform: '{}' and '{}' do not have the same primal axes", src, dst);
  std::vector<int64_t> out(ld.ndim());
  for (size_t i = 0; i < ld.ndim(); ++i) {
    const auto& a = ld.axes[i];
    int64_t b = a.factor ? 0 : ld.block_of(a.name);
    out[i] = a.factor ? a.factor : b ? (extent[a.name] + b - 1) / b : extent[a.name];
  }
  if (!dst_shape.empty()) {
    LOOM_CHECK(dst_shape.size() == out.size(), "layout_transform: dst_shape {} has {} dims but '{}' has {}",
               shape_str(dst_shape), dst_shape.size(), dst, out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      bool croppable = !ld.axes[i].factor && !ld.block_of(ld.axes[i].name);
      LOOM_CHECK(dst_shape[i] == out[i] || (croppable && dst_shape[i] > 0 && dst_shape[i] < out[i]),
                 "layout_transform: dst_shape {} does not fit {} -> '{}' ({}): only unsplit axes may shrink (crop)",
                 shape_str(dst_shape), shape_str(s), dst, shape_str(out));
      out[i] = dst_shape[i];
    }
  }
  FCompute f = [=](const std::vector<Var>& iv) mutable -> Expr {
    // The logical index of each primal axis, and whether it can exceed the source extent.
    std::map<char, Expr> value;
    std::map<char, bool> may_pad;
    for (size_t i = 0; i < ld.ndim(); ++i) {
      const auto& a = ld.axes[i];
      if (a.factor) continue;
      int64_t b = ld.block_of(a.name);
      if (b) {
        int inner = ld.index_of(char(a.name - 'A' + 'a'));
        value[a.name] = iv[i] * int_const(b) + iv[size_t(inner)];
        may_pad[a.name] = out[i] * b > extent[a.name];
      } else {
        value[a.name] = iv[i];
        may_pad[a.name] = out[i] > extent[a.name];
      }
    }
    Expr inside;
    for (auto& [c, v] : value) {
      if (!may_pad[c]) continue;
      Expr cond = v < int_const(extent[c]);
      inside = inside.defined() ? (inside && cond) : cond;
      v = min(v, int_const(extent[c] - 1));
    }
    std::vector<Expr> idx(ls.ndim());
    for (size_t i = 0; i < ls.ndim(); ++i) {
      const auto& a = ls.axes[i];
      char primal = a.factor ? char(a.name - 'a' + 'A') : a.name;
      int64_t b = ls.block_of(primal);
      const Expr& v = value[primal];
      if (a.factor) idx[i] = floormod(v, int_const(a.factor));
      else idx[i] = b ? floordiv(v, int_const(b)) : v;
    }
    Expr e = x(idx);
    return inside.defined() ? select(inside, e, make_zero(x.dtype())) : e;
  };
  return compute(to_exprs(out), f, name, "injective");
}

}  // namespace loom::te::ops
