// nll_loss and nll_loss_weight: the per-element negative log-likelihood and its weight.
#include "loom/te/ops/loss.h"

#include <limits>

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// Per element of target: its class (clamped into [0, C), int32) and whether it is ignored.
struct Classes {
  std::vector<int64_t> target_shape;
  std::function<Expr(const std::vector<Expr>&)> class_at;    // target index -> int32 class
  std::function<Expr(const std::vector<Expr>&)> ignored_at;  // target index -> bool, or undefined
};

/// Checks target (and weight [C] of `dtype`, when given; C = `c`, or weight's extent when
/// `c` is 0) and reads its classes.
Classes read_classes(const char* op, const Tensor& target, const std::optional<Tensor>& weight, int64_t c,
                     DataType dtype, std::optional<int64_t> ignore_index) {
  Classes r;
  r.target_shape = const_shape(target, op, "target");
  LOOM_CHECK(target.dtype().is_integer(), "{}: target must be integers, got {}", op, target.dtype().str());
  LOOM_CHECK(!r.target_shape.empty(), "{}: target must have at least one dim (N)", op);
  if (weight) {
    const std::vector<int64_t> ws = const_shape(*weight, op, "weight");
    if (c == 0) {
      LOOM_CHECK(ws.size() == 1 && ws[0] >= 1, "{}: weight {} must be [C], one weight per class", op, shape_str(ws));
      c = ws[0];
    }
    LOOM_CHECK(ws == std::vector<int64_t>{c}, "{}: weight {} must be [C] = [{}]", op, shape_str(ws), c);
    LOOM_CHECK(weight->dtype() == dtype, "{}: weight is {} but the loss {}", op, weight->dtype().str(), dtype.str());
  }
  r.class_at = [target, c](const std::vector<Expr>& idx) {
    const DataType i64 = DataType::Int(64);
    Expr t = detail::convert(i64, target(idx));
    return cast(DataType::Int(32), max(min(t, make_const(i64, c - 1)), make_zero(i64)));
  };
  // An ignore_index the target's type cannot hold matches nothing.
  const DataType tt = target.dtype();
  if (ignore_index) {
    const int b = tt.bits();
    const int64_t lo = tt.is_uint() ? 0 : b >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (b - 1));
    const int64_t hi = b >= 63 ? std::numeric_limits<int64_t>::max()
                               : tt.is_uint() ? (int64_t(1) << b) - 1 : (int64_t(1) << (b - 1)) - 1;
    const int64_t ii = *ignore_index;
    if (ii >= lo && ii <= hi)
      r.ignored_at = [target, tt, ii](const std::vector<Expr>& idx) { return target(idx) == make_const(tt, ii); };
  }
  return r;
}

/// `v` at target index `idx`, 0 where the element is ignored.
Expr unless_ignored(const Classes& k, const std::vector<Expr>& idx, Expr v) {
  return k.ignored_at ? select(k.ignored_at(idx), make_zero(v.dtype()), v) : v;
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                std::optional<int64_t> ignore_index, const std::string& name) {
  const char* op = "nll_loss";
  const std::vector<int64_t> xs = const_shape(input, op, "input"), ts = const_shape(target, op, "target");
  LOOM_CHECK(input.dtype().is_float(), "{}: input must be floating point, got {}", op, input.dtype().str());
  LOOM_CHECK(xs.size() >= 2 && ts.size() == xs.size() - 1, "{}: input {} must be [N, C, d1, ...] and target {} "
             "[N, d1, ...]", op, shape_str(xs), shape_str(ts));
  for (size_t d = 0; d < ts.size(); ++d)
    LOOM_CHECK(ts[d] == xs[d == 0 ? 0 : d + 1], "{}: target {} does not match input {} on dim {}", op, shape_str(ts),
               shape_str(xs), d);
  LOOM_CHECK(xs[1] >= 1, "{}: input {} has no classes", op, shape_str(xs));
  const Classes k = read_classes(op, target, weight, xs[1], input.dtype(), ignore_index);
  return compute(
      to_exprs(k.target_shape),
      [&](const std::vector<Var>& iv) -> Expr {
        const std::vector<Expr> idx(iv.begin(), iv.end());
        std::vector<Expr> at = idx;
        at.insert(at.begin() + 1, k.class_at(idx));
        Expr loss = -input(at);
        if (weight) loss = loss * (*weight)({k.class_at(idx)});
        return unless_ignored(k, idx, loss);
      },
      name, "injective");
}

Tensor nll_loss_weight(const Tensor& target, const std::optional<Tensor>& weight, std::optional<int64_t> ignore_index,
                       DataType dtype, const std::string& name) {
  const char* op = "nll_loss_weight";
  LOOM_CHECK(dtype.is_float(), "{}: dtype must be floating point, got {}", op, dtype.str());
  const Classes k = read_classes(op, target, weight, 0, dtype, ignore_index);
  return compute(
      to_exprs(k.target_shape),
      [&](const std::vector<Var>& iv) -> Expr {
        const std::vector<Expr> idx(iv.begin(), iv.end());
        return unless_ignored(k, idx, weight ? (*weight)({k.class_at(idx)}) : make_const(dtype, 1.0));
      },
      name, "injective");
}

}  // namespace loom::te::ops
