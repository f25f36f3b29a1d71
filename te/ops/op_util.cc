#include "op_util.h"

#include <array>
#include <limits>

namespace loom::te::ops::detail {

std::vector<int64_t> const_shape(const Tensor& t, std::string_view op, std::string_view what) {
  LOOM_CHECK(t.defined(), "{}: {} is an undefined tensor", op, what);
  std::vector<int64_t> out;
  out.reserve(t.ndim());
  for (size_t i = 0; i < t.ndim(); ++i) {
    auto c = as_const_int(t.shape()[i]);
    LOOM_CHECK(c.has_value(), "{}: {} ('{}') has a non-constant extent {} in dim {}; only constant shapes are supported",
               op, what, t.name(), to_string(t.shape()[i]), i);
    out.push_back(*c);
  }
  return out;
}

std::vector<int64_t> const_shape(const Tensor& t, size_t ndim, std::string_view op, std::string_view what,
                                 std::string_view layout) {
  auto s = const_shape(t, op, what);
  LOOM_CHECK(s.size() == ndim, "{}: {} must be {}-D ({}) but is {}-D with shape {}", op, what, ndim, layout, s.size(),
             shape_str(s));
  return s;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

Expr int_const(int64_t v) {
  LOOM_CHECK(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
             "extent {} does not fit in int32", v);
  return make_const(DataType::Int(32), v);
}

std::vector<Expr> to_exprs(const std::vector<int64_t>& shape) {
  std::vector<Expr> out;
  out.reserve(shape.size());
  for (int64_t v : shape) out.push_back(int_const(v));
  return out;
}

int normalize_axis(int axis, size_t ndim, std::string_view op) {
  int n = int(ndim);
  LOOM_CHECK(axis >= -n && axis < n, "{}: axis {} is out of range for a {}-D tensor (expected [{}, {}))", op, axis,
             n, -n, n);
  return axis < 0 ? axis + n : axis;
}

void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view op, std::string_view an,
                      std::string_view bn) {
  LOOM_CHECK(a.dtype() == b.dtype(), "{}: {} is {} but {} is {}; dtypes must match", op, an, a.dtype().str(), bn,
             b.dtype().str());
}

void check_pairs(std::string_view op, const std::array<int64_t, 2>& stride, const std::array<int64_t, 2>& padding,
                 const std::array<int64_t, 2>& dilation) {
  LOOM_CHECK(stride[0] > 0 && stride[1] > 0, "{}: stride must be positive, got {{{}, {}}}", op, stride[0], stride[1]);
  LOOM_CHECK(padding[0] >= 0 && padding[1] >= 0, "{}: padding must be non-negative, got {{{}, {}}}", op, padding[0],
             padding[1]);
  LOOM_CHECK(dilation[0] > 0 && dilation[1] > 0, "{}: dilation must be positive, got {{{}, {}}}", op, dilation[0],
             dilation[1]);
}

Expr const_of(DataType t, double v) {
  if (t.is_float()) return make_const(t, v);
  return make_const(t, int64_t(v));
}

Expr convert(DataType t, const Expr& v) {
  if (v.dtype() == t) return v;
  if (auto c = as_const_int(v)) return make_const(t, *c);
  if (auto c = as_const_float(v)) return const_of(t, *c);
  return cast(t, v);
}

}  // namespace loom::te::ops::detail
