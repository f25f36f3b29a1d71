// Constant folding of operators, casts and pure math intrinsics.
#include <cmath>

#include "arith_internal.h"

namespace loom::te::arith {
namespace {

Expr int_const(DataType t, int64_t v) { return make<IntImmNode>(t, wrap_int(t, v)); }
Expr bool_const(DataType t, bool v) { return make<IntImmNode>(t, int64_t(v)); }

double round_to(DataType t, double v) { return t.bits() <= 32 ? double(float(v)) : v; }
Expr float_const(DataType t, double v) { return make<FloatImmNode>(t, round_to(t, v)); }

std::optional<Expr> fold_int(ExprKind k, DataType t, DataType ot, int64_t x, int64_t y) {
  bool u64 = ot.is_uint() && ot.bits() == 64;
  uint64_t ux = uint64_t(x), uy = uint64_t(y);
  switch (k) {
    case ExprKind::Add: return int_const(t, int64_t(ux + uy));
    case ExprKind::Sub: return int_const(t, int64_t(ux - uy));
    case ExprKind::Mul: return int_const(t, int64_t(ux * uy));
    case ExprKind::Div:
    case ExprKind::FloorDiv:
      if (y == 0) return std::nullopt;
      if (u64) return int_const(t, int64_t(ux / uy));
      if (y == -1) return int_const(t, int64_t(0 - ux));
      return int_const(t, k == ExprKind::Div ? x / y : floordiv_i64(x, y));
    case ExprKind::Mod:
    case ExprKind::FloorMod:
      if (y == 0) return std::nullopt;
      if (u64) return int_const(t, int64_t(ux % uy));
      if (y == -1) return int_const(t, 0);
      return int_const(t, k == ExprKind::Mod ? x % y : floormod_i64(x, y));
    case ExprKind::Min: return int_const(t, u64 ? int64_t(std::min(ux, uy)) : std::min(x, y));
    case ExprKind::Max: return int_const(t, u64 ? int64_t(std::max(ux, uy)) : std::max(x, y));
    case ExprKind::EQ: return bool_const(t, x == y);
    case ExprKind::NE: return bool_const(t, x != y);
    case ExprKind::LT: return bool_const(t, u64 ? ux < uy : x < y);
    case ExprKind::LE: return bool_const(t, u64 ? ux <= uy : x <= y);
    case ExprKind::GT: return bool_const(t, u64 ? ux > uy : x > y);
    case ExprKind::GE: return bool_const(t, u64 ? ux >= uy : x >= y);
    case ExprKind::And: return bool_const(t, x && y);
    case ExprKind::Or: return bool_const(t, x || y);
    default: return std::nullopt;
  }
}

std::optional<Expr> fold_float(ExprKind k, DataType t, double x, double y) {
  switch (k) {
    case ExprKind::Add: return float_const(t, x + y);
    case ExprKind::Sub: return float_const(t, x - y);
    case ExprKind::Mul: return float_const(t, x * y);
    case ExprKind::Div: return float_const(t, x / y);
    case ExprKind::FloorDiv: return float_const(t, std::floor(x / y));
    case ExprKind::FloorMod: return float_const(t, x - std::floor(x / y) * y);
    case ExprKind::Mod: return float_const(t, std::fmod(x, y));
    case ExprKind::Min: return float_const(t, std::fmin(x, y));
    case ExprKind::Max: return float_const(t, std::fmax(x, y));
    case ExprKind::EQ: return bool_const(t, x == y);
    case ExprKind::NE: return bool_const(t, x != y);
    case ExprKind::LT: return bool_const(t, x < y);
    case ExprKind::LE: return bool_const(t, x <= y);
    case ExprKind::GT: return bool_const(t, x > y);
    case ExprKind::GE: return bool_const(t, x >= y);
    default: return std::nullopt;
  }
}

}  // namespace

int64_t wrap_int(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (!(t.is_int() || t.is_uint()) || t.bits() >= 64) return v;
  uint64_t mask = (uint64_t(1) << t.bits()) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (t.is_int() && (u >> (t.bits() - 1)) & 1) u |= ~mask;
  return int64_t(u);
}

std::optional<Expr> fold_binary(ExprKind k, DataType t, const Expr& a, const Expr& b) {
  if (!t.is_scalar()) return std::nullopt;
  if (auto* x = a.as<IntImmNode>()) {
    if (auto* y = b.as<IntImmNode>()) return fold_int(k, t, a.dtype(), x->value, y->value);
    return std::nullopt;
  }
  if (auto* x = a.as<FloatImmNode>()) {
    if (auto* y = b.as<FloatImmNode>()) return fold_float(k, t, x->value, y->value);
  }
  return std::nullopt;
}

std::optional<Expr> fold_cast(DataType t, const Expr& v) {
  if (!t.is_scalar() || !v.dtype().is_scalar()) return std::nullopt;
  if (auto* i = v.as<IntImmNode>()) {
    bool u64 = v.dtype().is_uint() && v.dtype().bits() == 64;
    if (t.is_int() || t.is_uint() || t.is_bool()) return int_const(t, i->value);
    if (t.is_float()) return float_const(t, u64 ? double(uint64_t(i->value)) : double(i->value));
    return std::nullopt;
  }
  if (auto* f = v.as<FloatImmNode>()) {
    if (t.is_float()) return float_const(t, f->value);
    if (t.is_bool()) return bool_const(t, f->value != 0.0);
    if (t.is_int() || t.is_uint()) {
      double x = std::trunc(f->value);
      if (!std::isfinite(x) || x < -9.2e18 || x > 9.2e18) return std::nullopt;
      if (t.is_uint() && x < 0) return std::nullopt;
      return int_const(t, int64_t(x));
    }
  }
  return std::nullopt;
}

std::optional<Expr> fold_call(DataType t, const std::string& name, const std::vector<Expr>& args) {
  if (!t.is_float() || !t.is_scalar() || args.empty()) return std::nullopt;
  std::vector<double> v;
  for (const Expr& a : args) {
    auto* f = a.as<FloatImmNode>();
    if (!f) return std::nullopt;
    v.push_back(f->value);
  }
  if (v.size() == 1) {
    double x = v[0];
    if (name == "exp") return float_const(t, std::exp(x));
    if (name == "log") return float_const(t, std::log(x));
    if (name == "sqrt") return float_const(t, std::sqrt(x));
    if (name == "tanh") return float_const(t, std::tanh(x));
    if (name == "sigmoid") return float_const(t, 1.0 / (1.0 + std::exp(-x)));
    if (name == "fabs") return float_const(t, std::fabs(x));
    if (name == "floor") return float_const(t, std::floor(x));
    if (name == "ceil") return float_const(t, std::ceil(x));
    if (name == "trunc") return float_const(t, std::trunc(x));
    if (name == "erf") return float_const(t, std::erf(x));
  } else if (v.size() == 2 && name == "pow") {
    return float_const(t, std::pow(v[0], v[1]));
  } else if (v.size() == 3 && name == "fma") {
    return float_const(t, std::fma(v[0], v[1], v[2]));
  }
  return std::nullopt;
}

}  // namespace loom::te::arith
