// Integer convolutions (uint8 data, int8 weights, int32 accumulation).
#include "loom/te/ops/qnn.h"

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::int_const;
using detail::shape_str;
using detail::to_exprs;

namespace {

void check_operands(const Tensor& data, const Tensor& kernel, const char* op) {
  LOOM_CHECK(data.dtype() == DataType::UInt(8), "{}: data must be uint8, got {}", op, data.dtype().str());
  LOOM_CHECK(kernel.dtype() == DataType::Int(8), "{}: kernel must be int8, got {}", op, kernel.dtype().str());
}

}  // namespace

Tensor conv2d_int8(const Tensor& data, const Tensor& kernel, Pair stride, Pair padding, Pair dilation, int64_t groups,
                   const std::string& name) {
  check_operands(data, kernel, "conv2d_int8");
  const DataType i32 = DataType::Int(32);
  Tensor x = cast(data, i32, name + ".data"), w = cast(kernel, i32, name + ".kernel");
  auto ds = const_shape(data, 4, "conv2d_int8", "data", "[N,C,H,W]");
  auto ws = const_shape(kernel, 4, "conv2d_int8", "kernel", "[K,C/groups,R,S]");
  if (groups > 1 && groups == ds[1] && ws[0] == ds[1] && ws[1] == 1)
    return depthwise_conv2d_nchw(x, w, stride, padding, dilation, name);
  return conv2d_nchw(x, w, stride, padding, dilation, groups, name);
}

Tensor conv2d_nchwc_int8(const Tensor& data, const Tensor& kernel, Pair stride, Pair padding, const std::string& name) {
  const char* op = "conv2d_nchwc_int8";
  check_operands(data, kernel, op);
  const int64_t L = kInt8Block, D = kInt8Depth;
  auto d = const_shape(data, 5, op, "data", "[N,C/16,H,W,16]");
  auto k = const_shape(kernel, 7, op, "kernel", "[K/16,C/16,R,S,4,16,4]");
  LOOM_CHECK(d[4] == L && k[1] == d[1] && k[4] == L / D && k[5] == L && k[6] == D,
             "{}: data {} and kernel {} are not [N,C/16,H,W,16] and [K/16,C/16,R,S,4,16,4]", op, shape_str(d),
             shape_str(k));
  LOOM_CHECK(stride[0] >= 1 && stride[1] >= 1 && padding[0] >= 0 && padding[1] >= 0,
             "{}: strides ({}, {}) must be positive and padding ({}, {}) non-negative", op, stride[0], stride[1],
             padding[0], padding[1]);
  const int64_t R = k[2], S = k[3];
  const int64_t OH = (d[2] + 2 * padding[0] - R) / stride[0] + 1, OW = (d[3] + 2 * padding[1] - S) / stride[1] + 1;
  LOOM_CHECK(d[2] + 2 * padding[0] >= R && d[3] + 2 * padding[1] >= S,
             "{}: kernel {}x{} is larger than the padded input {}x{}", op, R, S, d[2] + 2 * padding[0],
             d[3] + 2 * padding[1]);
  Tensor in = padding[0] || padding[1] ? pad(data, {0, 0, padding[0], padding[1], 0}) : data;
  IterVar rco = reduce_axis(Range(0, int_const(d[1])), "rco");
  IterVar ry = reduce_axis(Range(0, int_const(R)), "ry");
  IterVar rx = reduce_axis(Range(0, int_const(S)), "rx");
  IterVar rc4 = reduce_axis(Range(0, int_const(L / D)), "rc4");
  IterVar rc1 = reduce_axis(Range(0, int_const(D)), "rc1");
  const DataType i32 = DataType::Int(32);
  return compute(
      to_exprs({d[0], k[0], OH, OW, L}),
      [&](Var n, Var kb, Var oh, Var ow, Var v) {
        Expr x = in(n, rco, oh * int_const(stride[0]) + ry, ow * int_const(stride[1]) + rx, rc4 * int_const(D) + rc1);
        Expr w = kernel(kb, rco, ry, rx, rc4, v, rc1);
        return sum(cast(i32, x) * cast(i32, w), {rco, ry, rx, rc4, rc1});
      },
      name, "conv2d_nchwc_int8");
}

Tensor pack_int8_kernel(const Tensor& kernel, const std::string& name) {
  const int64_t L = kInt8Block, D = kInt8Depth;
  auto k = const_shape(kernel, 4, "pack_int8_kernel", "kernel", "[K,C,R,S]");
  LOOM_CHECK(k[0] % L == 0 && k[1] % L == 0, "pack_int8_kernel: K={} and C={} must be multiples of {}", k[0], k[1], L);
  return compute(
      to_exprs({k[0] / L, k[1] / L, k[2], k[3], L / D, L, D}),
      [&](const std::vector<Var>& i) {
        return kernel(i[0] * int_const(L) + i[5], i[1] * int_const(L) + i[4] * int_const(D) + i[6], i[2], i[3]);
      },
      name, "injective");
}

}  // namespace loom::te::ops
