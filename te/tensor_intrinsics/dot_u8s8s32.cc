// The u8·s8 → s32 dot-product tensor intrinsic (AVX-512 VNNI's vpdpbusd and its stand-ins).
#include <fmt/format.h>

#include "loom/te/arith.h"
#include "loom/te/intrinsics.h"
#include "loom/te/tensor_intrinsics.h"

namespace loom::te {

TensorIntrin dot_u8s8s32(int lanes) {
  LOOM_CHECK(lanes >= 2 && lanes <= 64, "dot_u8s8s32: lanes must lie in [2, 64], got {}", lanes);
  Tensor a = placeholder({4}, DataType::UInt(8), "a");
  Tensor b = placeholder({lanes, 4}, DataType::Int(8), "b");
  IterVar k = reduce_axis({0, 4}, "k");
  Tensor c = compute(
      {lanes}, [&](Var i) { return sum(cast(DataType::Int(32), a(k)) * cast(DataType::Int(32), b(i, k)), {k}); }, "c");
  auto reset = [lanes](const std::vector<BufferRegion>&, const BufferRegion&) -> Expr {
    return make<BroadcastNode>(make_const(DataType::Int(32), 0), lanes);
  };
  auto update = [lanes](const std::vector<BufferRegion>& in, const BufferRegion& out) -> Expr {
    const BufferRegion &ra = in[0], &rb = in[1];
    LOOM_CHECK(is_const_int(simplify(ra.strides[0]), 1),
               "the 4 bytes of 'a' (buffer '{}') must be consecutive, but they are {} apart", ra.name,
               to_string(ra.strides[0]));
    LOOM_CHECK(rb.is_dense(),
               "'b' (buffer '{}') must be one dense block of {}x4 bytes (a layout packed [.., {}, 4]), but its strides "
               "are {}",
               rb.name, lanes, lanes, rb.strides_str());
    Expr group = call(DataType::Int(32), "reinterpret", {ra.vload(0, 4)});
    Expr a_bytes = call(DataType::UInt(8, 4 * lanes), "reinterpret", {make<BroadcastNode>(group, lanes)});
    return call(DataType::Int(32, lanes), intrin::kDotU8S8S32, {out.vload(0, lanes), a_bytes, rb.vload(0, 4 * lanes)});
  };
  return decl_tensor_intrin(fmt::format("dot_u8s8s32_{}x4", lanes), c, {a, b}, {}, reset, update,
                            fmt::format("{} int32 lanes += 4-deep u8·s8 dot products (vpdpbusd)", lanes));
}

}  // namespace loom::te
