// Comparison, logical, bitwise and selection operators, remainders, NaN and infinity tests,
// the trigonometric functions beyond sin and cos, and PRelu, Shrink, Swish.
#include <cmath>
#include <functional>
#include <limits>

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// out = f(inputs[k][broadcast index]...) over the numpy-style broadcast of the inputs' shapes.
Tensor broadcast_compute(const std::vector<const Tensor*>& in, const std::vector<const char*>& what, const char* op,
                         const std::string& name, std::function<Expr(const std::vector<Expr>&)> f) {
  std::vector<std::vector<int64_t>> shapes;
  size_t n = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    shapes.push_back(const_shape(*in[k], op, what[k]));
    n = std::max(n, shapes.back().size());
  }
  std::vector<int64_t> out(n, 1);
  for (size_t i = 0; i < n; ++i) {  // i counts dims from the right
    for (size_t k = 0; k < in.size(); ++k) {
      const std::vector<int64_t>& s = shapes[k];
      int64_t d = i < s.size() ? s[s.size() - 1 - i] : 1;
      int64_t& o = out[n - 1 - i];
      LOOM_CHECK(d == o || d == 1 || o == 1,
                 "{}: {} is {}, which does not broadcast with the other inputs: dim {} from the right has extent {} "
                 "where another has {} (one must be 1)",
                 op, what[k], shape_str(s), i, d, o);
      o = std::max(o, d);
    }
  }
  std::vector<Tensor> ts;
  for (const Tensor* t : in) ts.push_back(*t);
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr {
    std::vector<Expr> vals;
    for (size_t k = 0; k < ts.size(); ++k) {
      const std::vector<int64_t>& s = shapes[k];
      std::vector<Expr> idx;
      for (size_t d = 0; d < s.size(); ++d) idx.push_back(s[d] == 1 ? Expr(0) : Expr(iv[n - s.size() + d]));
      vals.push_back(ts[k](idx));
    }
    return f(vals);
  };
  return compute(to_exprs(out), fc, name, "broadcast");
}

Tensor binary(const Tensor& a, const Tensor& b, const char* op, const std::string& name, Expr (*f)(Expr, Expr)) {
  detail::check_same_dtype(a, b, op, "a", "b");
  return broadcast_compute({&a, &b}, {"a", "b"}, op, name, [f](const std::vector<Expr>& v) { return f(v[0], v[1]); });
}

template <typename F>
Tensor unary(const Tensor& x, const char* op, const std::string& name, F f) {
  auto s = const_shape(x, op, "x");
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr { return f(x(std::vector<Expr>(iv.begin(), iv.end()))); };
  return compute(to_exprs(s), fc, name, "elemwise");
}

void check_dtype(const Tensor& x, bool ok, const char* op, const char* what, const char* expected) {
  LOOM_CHECK(ok, "{}: {} must be {}, got {}", op, what, expected, x.dtype().str());
}
void check_bool(const Tensor& x, const char* op, const char* what) {
  check_dtype(x, x.dtype().is_bool(), op, what, "bool");
}
void check_integer(const Tensor& x, const char* op, const char* what) {
  check_dtype(x, x.dtype().is_integer(), op, what, "an integer type");
}
void check_float(const Tensor& x, const char* op) { check_dtype(x, x.dtype().is_float(), op, "x", "floating point"); }

Expr eq_e(Expr a, Expr b) { return a == b; }
Expr ne_e(Expr a, Expr b) { return a != b; }
Expr lt_e(Expr a, Expr b) { return a < b; }
Expr le_e(Expr a, Expr b) { return a <= b; }
Expr gt_e(Expr a, Expr b) { return a > b; }
Expr ge_e(Expr a, Expr b) { return a >= b; }
Expr and_e(Expr a, Expr b) { return a && b; }
Expr or_e(Expr a, Expr b) { return a || b; }
Expr xor_e(Expr a, Expr b) { return a != b; }

Tensor bitwise(const Tensor& a, const Tensor& b, const char* op, const char* intrinsic, const std::string& name) {
  check_integer(a, op, "a");
  detail::check_same_dtype(a, b, op, "a", "b");
  DataType t = a.dtype();
  return broadcast_compute({&a, &b}, {"a", "b"}, op, name, [t, intrinsic](const std::vector<Expr>& v) {
    return te::call(t, intrinsic, {v[0], v[1]});
  });
}

/// a << b or a >> b (arithmetic for signed a); a shift by a negative amount or by the bit width or more gives 0
/// (a right shift of a negative signed value: -1), as ONNX's BitShift defines it.
Tensor shift(const Tensor& a, const Tensor& b, bool left, const char* op, const std::string& name) {
  check_integer(a, op, "a");
  detail::check_same_dtype(a, b, op, "a", "b");
  DataType t = a.dtype();
  const char* intrinsic = left ? "shift_left" : "shift_right";
  return broadcast_compute({&a, &b}, {"a", "b"}, op, name, [t, left, intrinsic](const std::vector<Expr>& v) {
    Expr zero = make_zero(t);
    Expr in_range = v[1] < make_const(t, int64_t(t.bits()));
    if (t.is_int()) in_range = in_range && v[1] >= zero;
    Expr shifted = te::call(t, intrinsic, {v[0], te::select(in_range, v[1], zero)});
    Expr fill = !left && t.is_int() ? te::select(v[0] < zero, make_const(t, int64_t(-1)), zero) : zero;
    return te::select(in_range, shifted, fill);
  });
}

Tensor float_math(const Tensor& x, const char* op, const std::string& name) {
  check_float(x, op);
  DataType t = x.dtype();
  std::string fn = op;
  return unary(x, op, name, [t, fn](Expr v) { return te::call(t, fn, {v}); });
}

}  // namespace

Tensor equal(const Tensor& a, const Tensor& b, const std::string& name) { return binary(a, b, "equal", name, eq_e); }
Tensor not_equal(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(a, b, "not_equal", name, ne_e);
}
Tensor less(const Tensor& a, const Tensor& b, const std::string& name) { return binary(a, b, "less", name, lt_e); }
Tensor less_equal(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(a, b, "less_equal", name, le_e);
}
Tensor greater(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(a, b, "greater", name, gt_e);
}
Tensor greater_equal(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(a, b, "greater_equal", name, ge_e);
}

Tensor logical_and(const Tensor& a, const Tensor& b, const std::string& name) {
  check_bool(a, "logical_and", "a");
  return binary(a, b, "logical_and", name, and_e);
}
Tensor logical_or(const Tensor& a, const Tensor& b, const std::string& name) {
  check_bool(a, "logical_or", "a");
  return binary(a, b, "logical_or", name, or_e);
}
Tensor logical_xor(const Tensor& a, const Tensor& b, const std::string& name) {
  check_bool(a, "logical_xor", "a");
  return binary(a, b, "logical_xor", name, xor_e);
}
Tensor logical_not(const Tensor& x, const std::string& name) {
  check_bool(x, "logical_not", "x");
  return unary(x, "logical_not", name, [](Expr v) { return !v; });
}

Tensor bitwise_and(const Tensor& a, const Tensor& b, const std::string& name) {
  return bitwise(a, b, "bitwise_and", "bitwise_and", name);
}
Tensor bitwise_or(const Tensor& a, const Tensor& b, const std::string& name) {
  return bitwise(a, b, "bitwise_or", "bitwise_or", name);
}
Tensor bitwise_xor(const Tensor& a, const Tensor& b, const std::string& name) {
  return bitwise(a, b, "bitwise_xor", "bitwise_xor", name);
}
Tensor bitwise_not(const Tensor& x, const std::string& name) {
  check_integer(x, "bitwise_not", "x");
  DataType t = x.dtype();
  return unary(x, "bitwise_not", name, [t](Expr v) { return te::call(t, "bitwise_not", {v}); });
}
Tensor left_shift(const Tensor& a, const Tensor& b, const std::string& name) {
  return shift(a, b, true, "left_shift", name);
}
Tensor right_shift(const Tensor& a, const Tensor& b, const std::string& name) {
  return shift(a, b, false, "right_shift", name);
}

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y, const std::string& name) {
  check_bool(cond, "where", "cond");
  detail::check_same_dtype(x, y, "where", "x", "y");
  return broadcast_compute({&cond, &x, &y}, {"cond", "x", "y"}, "where", name,
                           [](const std::vector<Expr>& v) { return te::select(v[0], v[1], v[2]); });
}

Tensor mod(const Tensor& a, const Tensor& b, bool fmod, const std::string& name) {
  detail::check_same_dtype(a, b, "mod", "a", "b");
  const DataType t = a.dtype();
  LOOM_CHECK(!t.is_bool(), "mod: a must be numeric, got bool");
  Expr zero = make_zero(t);
  return broadcast_compute({&a, &b}, {"a", "b"}, "mod", name, [fmod, t, zero](const std::vector<Expr>& v) -> Expr {
    if (!t.is_float()) {
      // x mod 0 is 0 (numpy's result) and x mod -1 is 0: neither divisor reaches the division, which traps on
      // them (INT_MIN % -1 overflows).
      Expr trivial = v[1] == zero;
      if (t.is_int()) trivial = trivial || v[1] == make_const(t, int64_t(-1));
      Expr b = te::select(trivial, make_const(t, int64_t(1)), v[1]);
      return te::select(trivial, zero, fmod ? te::truncmod(v[0], b) : te::floormod(v[0], b));
    }
    Expr r = te::truncmod(v[0], v[1]);
    if (fmod) return r;
    // fmod moved by b when its sign differs from b's: exact, and x mod ±inf is x or ±inf as in Python.
    return te::select(r != zero && ((r < zero) != (v[1] < zero)), r + v[1], r);
  });
}

Tensor isnan(const Tensor& x, const std::string& name) {
  return unary(x, "isnan", name, [](Expr v) { return te::call(DataType::Bool(), "isnan", {v}); });
}

Tensor isinf(const Tensor& x, bool positive, bool negative, const std::string& name) {
  DataType t = x.dtype();
  return unary(x, "isinf", name, [t, positive, negative](Expr v) -> Expr {
    Expr no = make_const(DataType::Bool(), int64_t(0));
    if (!t.is_float()) return no;
    const double inf = std::numeric_limits<double>::infinity();
    Expr pos = positive ? v == make_const(t, inf) : no;
    Expr neg = negative ? v == make_const(t, -inf) : no;
    return positive && negative ? (pos || neg) : positive ? pos : neg;
  });
}

Tensor tan(const Tensor& x, const std::string& name) { return float_math(x, "tan", name); }
Tensor asin(const Tensor& x, const std::string& name) { return float_math(x, "asin", name); }
Tensor acos(const Tensor& x, const std::string& name) { return float_math(x, "acos", name); }
Tensor atan(const Tensor& x, const std::string& name) { return float_math(x, "atan", name); }
Tensor sinh(const Tensor& x, const std::string& name) { return float_math(x, "sinh", name); }
Tensor cosh(const Tensor& x, const std::string& name) { return float_math(x, "cosh", name); }
Tensor asinh(const Tensor& x, const std::string& name) { return float_math(x, "asinh", name); }
Tensor acosh(const Tensor& x, const std::string& name) { return float_math(x, "acosh", name); }
Tensor atanh(const Tensor& x, const std::string& name) { return float_math(x, "atanh", name); }

Tensor prelu(const Tensor& x, const Tensor& slope, const std::string& name) {
  detail::check_same_dtype(x, slope, "prelu", "x", "slope");
  LOOM_CHECK(!x.dtype().is_bool() && !x.dtype().is_uint(), "prelu: x must be signed, got {}", x.dtype().str());
  Expr zero = make_zero(x.dtype());
  return broadcast_compute({&x, &slope}, {"x", "slope"}, "prelu", name,
                           [zero](const std::vector<Expr>& v) { return te::select(v[0] < zero, v[0] * v[1], v[0]); });
}

Tensor shrink(const Tensor& x, double lambd, double bias, const std::string& name) {
  DataType t = x.dtype();
  LOOM_CHECK(!t.is_bool(), "shrink: x must be numeric, got bool");
  DataType w = t.is_float() ? t : DataType::Float(64);
  Expr lo = detail::const_of(w, -lambd), hi = detail::const_of(w, lambd), b = detail::const_of(w, bias);
  return unary(x, "shrink", name, [=](Expr v) {
    Expr u = detail::convert(w, v);
    Expr r = te::select(u < lo, u + b, te::select(u > hi, u - b, make_zero(w)));
    return detail::convert(t, r);
  });
}

Tensor swish(const Tensor& x, double alpha, const std::string& name) {
  check_float(x, "swish");
  Expr a = detail::const_of(x.dtype(), alpha);
  return unary(x, "swish", name, [a](Expr v) { return v * te::sigmoid(a * v); });
}

}  // namespace loom::te::ops
