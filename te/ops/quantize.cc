// Linear quantization: quantize, dequantize and requantize (tag "broadcast").
#include "loom/te/ops/quantize.h"

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::shape_str;
using detail::to_exprs;

namespace {

/// The range of an integer quantized type; an error naming `op` for any other.
std::pair<double, double> quant_range(DataType t, const char* op) {
  if (t == DataType::UInt(8)) return {0, 255};
  if (t == DataType::Int(8)) return {-128, 127};
  if (t == DataType::UInt(16)) return {0, 65535};
  if (t == DataType::Int(16)) return {-32768, 32767};
  throw Error(fmt::format("{}: the quantized type must be int8, uint8, int16 or uint16, got {}", op, t.str()));
}

/// out[i] = f(data[i], p[bcast(i)], q[bcast(i)]) over data's shape; p and q broadcast to it.
Tensor with_params(const Tensor& data, const Tensor& p, const Tensor& q, const char* op, const std::string& name,
                   std::function<Expr(Expr, Expr, Expr)> f) {
  const auto sd = const_shape(data, op, "data");
  const auto sp = const_shape(p, op, "scale"), sq = const_shape(q, op, "zero_point");
  for (const auto* s : {&sp, &sq}) {
    bool ok = s->size() <= sd.size();
    for (size_t i = 0; ok && i < s->size(); ++i) {
      const int64_t e = (*s)[s->size() - 1 - i];
      ok = e == 1 || e == sd[sd.size() - 1 - i];
    }
    LOOM_CHECK(ok, "{}: {} {} does not broadcast to the data's shape {}", op, s == &sp ? "scale" : "zero_point",
               shape_str(*s), shape_str(sd));
  }
  auto index = [n = sd.size()](const std::vector<Var>& iv, const std::vector<int64_t>& s) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < s.size(); ++d) idx.push_back(s[d] == 1 ? Expr(0) : Expr(iv[n - s.size() + d]));
    return idx;
  };
  FCompute fc = [=](const std::vector<Var>& iv) -> Expr {
    return f(data(std::vector<Expr>(iv.begin(), iv.end())), p(index(iv, sp)), q(index(iv, sq)));
  };
  return compute(to_exprs(sd), fc, name, "broadcast");
}

/// clamp(v, range of t) in v's type, as t.
Expr saturate(Expr v, DataType t, const char* op) {
  auto [lo, hi] = quant_range(t, op);
  const DataType vt = v.dtype();
  return te::cast(t, te::min(te::max(v, detail::const_of(vt, lo)), detail::const_of(vt, hi)));
}

}  // namespace

Tensor quantize(const Tensor& data, const Tensor& scale, const Tensor& zero_point, DataType dtype,
                const std::string& name) {
  LOOM_CHECK(data.dtype().is_float(), "quantize: data must be floating point, got {}", data.dtype().str());
  LOOM_CHECK(scale.dtype().is_float(), "quantize: scale must be floating point, got {}", scale.dtype().str());
  quant_range(dtype, "quantize");
  const DataType t = data.dtype();
  return with_params(data, scale, zero_point, "quantize", name, [t, dtype](Expr x, Expr s, Expr z) {
    return saturate(te::round(x / te::cast(t, s)) + te::cast(t, z), dtype, "quantize");
  });
}

Tensor dequantize(const Tensor& data, const Tensor& scale, const Tensor& zero_point, DataType dtype,
                  const std::string& name) {
  LOOM_CHECK(!data.dtype().is_float(), "dequantize: data must be integers, got {}", data.dtype().str());
  LOOM_CHECK(scale.dtype().is_float(), "dequantize: scale must be floating point, got {}", scale.dtype().str());
  LOOM_CHECK(dtype.is_float(), "dequantize: the result type must be floating point, got {}", dtype.str());
  const DataType f32 = DataType::Float(32);
  return with_params(data, scale, zero_point, "dequantize", name, [f32, dtype](Expr x, Expr s, Expr z) {
    Expr y = (te::cast(f32, x) - te::cast(f32, z)) * te::cast(f32, s);
    return dtype == f32 ? y : te::cast(dtype, y);
  });
}

Tensor requantize(const Tensor& acc, const Tensor& multiplier, const Tensor& zero_point, DataType dtype,
                  const std::string& name) {
  LOOM_CHECK(acc.dtype() == DataType::Int(32), "requantize: the accumulator must be int32, got {}", acc.dtype().str());
  LOOM_CHECK(multiplier.dtype() == DataType::Float(32), "requantize: the multiplier must be float32, got {}",
             multiplier.dtype().str());
  quant_range(dtype, "requantize");
  const DataType f32 = DataType::Float(32);
  return with_params(acc, multiplier, zero_point, "requantize", name, [f32, dtype](Expr a, Expr m, Expr z) {
    return saturate(te::round(te::cast(f32, a) * m) + te::cast(f32, z), dtype, "requantize");
  });
}

}  // namespace loom::te::ops
