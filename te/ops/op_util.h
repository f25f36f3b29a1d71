// Helpers shared by the operator library: constant shapes, axis normalization, messages.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te::ops::detail {

/// The constant extents of `t`'s shape; throws naming `op` and `what` if one is not constant.
std::vector<int64_t> const_shape(const Tensor& t, std::string_view op, std::string_view what);
/// Like const_shape, and also checks the number of dims.
std::vector<int64_t> const_shape(const Tensor& t, size_t ndim, std::string_view op, std::string_view what,
                                 std::string_view layout);
/// "1024x512" ("scalar" for no dims).
std::string shape_str(const std::vector<int64_t>& shape);
/// Shape as int32 constant expressions.
std::vector<Expr> to_exprs(const std::vector<int64_t>& shape);
/// An int32 constant, checked to fit.
Expr int_const(int64_t v);
/// `axis` in [-ndim, ndim) made non-negative.
int normalize_axis(int axis, size_t ndim, std::string_view op);
/// Throws unless a and b have the same dtype.
void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view op, std::string_view an,
                      std::string_view bn);
/// Checks a stride/dilation pair is positive and a padding pair non-negative.
void check_pairs(std::string_view op, const std::array<int64_t, 2>& stride, const std::array<int64_t, 2>& padding,
                 const std::array<int64_t, 2>& dilation);
/// `v` as an Expr of dtype `t` (folded when constant).
Expr const_of(DataType t, double v);
Expr convert(DataType t, const Expr& v);

}  // namespace loom::te::ops::detail
