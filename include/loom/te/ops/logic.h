// Comparison, logical, bitwise and selection operators, the remaining elementwise math
// (inverse and hyperbolic trigonometry, remainders, NaN and infinity tests) and the
// activations PRelu, Shrink and Swish. Binary and ternary operators broadcast numpy-style
// (tag "broadcast"), unary ones keep the shape (tag "elemwise").
#pragma once
#include <string>

#include "loom/te/tensor.h"

namespace loom::te::ops {

/// a == b, a != b, a < b, a <= b, a > b, a >= b elementwise (inputs of one dtype) -> bool.
Tensor equal(const Tensor& a, const Tensor& b, const std::string& name = "equal");
Tensor not_equal(const Tensor& a, const Tensor& b, const std::string& name = "not_equal");
Tensor less(const Tensor& a, const Tensor& b, const std::string& name = "less");
Tensor less_equal(const Tensor& a, const Tensor& b, const std::string& name = "less_equal");
Tensor greater(const Tensor& a, const Tensor& b, const std::string& name = "greater");
Tensor greater_equal(const Tensor& a, const Tensor& b, const std::string& name = "greater_equal");

/// Logical and, or, xor of bool tensors; logical_not of one.
Tensor logical_and(const Tensor& a, const Tensor& b, const std::string& name = "logical_and");
Tensor logical_or(const Tensor& a, const Tensor& b, const std::string& name = "logical_or");
Tensor logical_xor(const Tensor& a, const Tensor& b, const std::string& name = "logical_xor");
Tensor logical_not(const Tensor& x, const std::string& name = "logical_not");

/// Bitwise and, or, xor, not of integer tensors (bool too: then logical).
Tensor bitwise_and(const Tensor& a, const Tensor& b, const std::string& name = "bitwise_and");
Tensor bitwise_or(const Tensor& a, const Tensor& b, const std::string& name = "bitwise_or");
Tensor bitwise_xor(const Tensor& a, const Tensor& b, const std::string& name = "bitwise_xor");
Tensor bitwise_not(const Tensor& x, const std::string& name = "bitwise_not");
/// a << b and a >> b of integers (arithmetic right shift for signed ones); a shift amount
/// below 0 or of the bit width or more gives 0 (a right shift of a negative value: -1).
Tensor left_shift(const Tensor& a, const Tensor& b, const std::string& name = "left_shift");
Tensor right_shift(const Tensor& a, const Tensor& b, const std::string& name = "right_shift");

/// cond ? x : y with cond bool and x, y of one dtype, all three broadcast.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y, const std::string& name = "where");

/// The remainder of a / b. Integers: with `fmod` false the sign of b (Python's %), with
/// `fmod` true the sign of a (C's %). Floating point likewise: fmod (sign of a), or with
/// `fmod` false fmod moved by b where the signs differ (so x mod inf is x for x >= 0, inf below).
/// An integer x mod 0 is 0, as numpy gives.
Tensor mod(const Tensor& a, const Tensor& b, bool fmod, const std::string& name = "mod");

/// true where x is NaN (floating point; false for integers).
Tensor isnan(const Tensor& x, const std::string& name = "isnan");
/// true where x is +inf (when `positive`) or -inf (when `negative`).
Tensor isinf(const Tensor& x, bool positive = true, bool negative = true, const std::string& name = "isinf");

/// Floating-point trigonometry: tangent, inverse sine, cosine and tangent; hyperbolic sine
/// and cosine and the inverse hyperbolic functions.
Tensor tan(const Tensor& x, const std::string& name = "tan");
Tensor asin(const Tensor& x, const std::string& name = "asin");
Tensor acos(const Tensor& x, const std::string& name = "acos");
Tensor atan(const Tensor& x, const std::string& name = "atan");
Tensor sinh(const Tensor& x, const std::string& name = "sinh");
Tensor cosh(const Tensor& x, const std::string& name = "cosh");
Tensor asinh(const Tensor& x, const std::string& name = "asinh");
Tensor acosh(const Tensor& x, const std::string& name = "acosh");
Tensor atanh(const Tensor& x, const std::string& name = "atanh");

/// x for x >= 0, slope * x below; slope broadcasts against x (one dtype).
Tensor prelu(const Tensor& x, const Tensor& slope, const std::string& name = "prelu");
/// x + bias for x < -lambd, x - bias for x > lambd, 0 otherwise (any numeric dtype; integers
/// compare in float64 and the result truncates back).
Tensor shrink(const Tensor& x, double lambd = 0.5, double bias = 0.0, const std::string& name = "shrink");
/// x * sigmoid(alpha x), floating point.
Tensor swish(const Tensor& x, double alpha = 1.0, const std::string& name = "swish");

}  // namespace loom::te::ops
