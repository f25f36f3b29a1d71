// What the CUDA tensor-core intrinsics (wmma.cc, mma.cc) share: numbering the tiles of a
// fragment buffer, the row stride of a memory tile, the float16 matmul tile they declare.
#pragma once
#include "loom/te/tensor_intrin.h"

namespace loom::te::fragments {

/// The number of the `rows` × `cols` tile a fragment buffer's region starts, tiles numbered
/// row-major over the buffer's [rows, cols] index space (row-major, rows a multiple of
/// `cols` long; loom::Error otherwise).
Expr tile_index(const BufferRegion& r, int rows, int cols);

/// The row stride of a row-major memory region; with `sixteen_byte_rows`, checked to be a
/// multiple of 16 bytes where it is constant (load_matrix_sync and ldmatrix need it).
Expr row_stride(const BufferRegion& r, bool sixteen_byte_rows);

/// c[i, j] = Σ_k float32(a[i, k]) · float32(b[k, j]) on an m × n × k tile, a and b float16
/// placeholders (returned through `a` and `b`).
Tensor f16_matmul_tile(int m, int n, int k, Tensor* a, Tensor* b);

}  // namespace loom::te::fragments
