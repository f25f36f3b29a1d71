// The helpers of fragments.h.
#include "fragments.h"

#include "loom/te/arith.h"

namespace loom::te::fragments {

Expr tile_index(const BufferRegion& r, int rows, int cols) {
  auto row = as_const_int(simplify(r.strides[0]));
  LOOM_CHECK(row && *row % cols == 0 && is_const_int(simplify(r.strides[1]), 1),
             "fragment buffer '{}' must be row-major with rows a multiple of {} elements long, but its strides are {}",
             r.name, cols, r.strides_str());
  const Expr off = r.elem_offset;
  const DataType t = off.dtype();
  return simplify(floordiv(off, make_const(t, rows * *row)) * make_const(t, *row / cols) +
                  floordiv(floormod(off, make_const(t, *row)), make_const(t, cols)));
}

Expr row_stride(const BufferRegion& r, bool sixteen_byte_rows) {
  LOOM_CHECK(is_const_int(simplify(r.strides[1]), 1), "'{}' must be row-major (unit column stride), but its strides are {}",
             r.name, r.strides_str());
  Expr ld = simplify(r.strides[0]);
  if (auto c = as_const_int(ld); c && sixteen_byte_rows)
    LOOM_CHECK((*c * r.dtype.bytes()) % 16 == 0, "the rows of '{}' ({} elements) must be a multiple of 16 bytes long",
               r.name, *c);
  return ld;
}

Tensor f16_matmul_tile(int m, int n, int k, Tensor* a, Tensor* b) {
  *a = placeholder({m, k}, DataType::Float(16), "a");
  *b = placeholder({k, n}, DataType::Float(16), "b");
  Tensor A = *a, B = *b;
  IterVar r = reduce_axis({0, k}, "k");
  return compute(
      {m, n},
      [&](Var i, Var j) { return sum(cast(DataType::Float(32), A(i, r)) * cast(DataType::Float(32), B(r, j)), {r}); },
      "c");
}

}  // namespace loom::te::fragments
