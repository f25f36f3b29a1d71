// CUDA tensor-core (WMMA) tensor intrinsics on 16×16×16 tiles: fp16 inputs, fp32
// accumulation, on fragments stored in the scopes "wmma.matrix_a", "wmma.matrix_b" and
// "wmma.accumulator". A fragment buffer holds its 16×16 tiles in a row-major [rows, cols]
// index space (both multiples of 16); the CUDA code generator declares it as an array of
// nvcuda::wmma::fragment, one per tile, tile (r, c) being fragment r·(cols/16) + c.
#include <fmt/format.h>

#include "loom/te/arith.h"
#include "loom/te/intrinsics.h"
#include "loom/te/tensor_intrinsics.h"
#include "fragments.h"

namespace loom::te {

namespace {

constexpr int kTile = 16;

/// The fragment of a fragment buffer's region: its 16×16 tile's number.
Expr fragment_index(const BufferRegion& r) { return fragments::tile_index(r, kTile, kTile); }

/// The leading dimension of a row-major memory region (its row stride), checked to suit
/// load/store_matrix_sync (a multiple of 16 bytes).
Expr leading_dim(const BufferRegion& r) { return fragments::row_stride(r, true); }

/// A 16×16 copy, `from` → `to`.
Tensor copy_tile(DataType t, Tensor* from) {
  *from = placeholder({kTile, kTile}, t, "src");
  Tensor src = *from;
  return compute({kTile, kTile}, [&](Var i, Var j) { return src(i, j); }, "dst");
}

TensorIntrin load(const char* name) {
  Tensor src;
  Tensor dst = copy_tile(DataType::Float(16), &src);
  auto body = [](const std::vector<BufferRegion>& in, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), "loom.wmma_load", {out.data, fragment_index(out), in[0].access_ptr(), leading_dim(in[0])});
  };
  return decl_tensor_intrin(name, dst, {src}, body, {}, {},
                            "load a 16x16 fp16 tile (row major) into a fragment: wmma::load_matrix_sync");
}

}  // namespace

TensorIntrin wmma_load_a() { return load("wmma_load_a"); }
TensorIntrin wmma_load_b() { return load("wmma_load_b"); }

TensorIntrin wmma_mma() {
  Tensor a, b;
  Tensor c = fragments::f16_matmul_tile(kTile, kTile, kTile, &a, &b);
  auto reset = [](const std::vector<BufferRegion>&, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), "loom.wmma_fill", {out.data, fragment_index(out), make_const(DataType::Float(32), 0.0)});
  };
  auto update = [](const std::vector<BufferRegion>& in, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), "loom.wmma_mma",
                {out.data, fragment_index(out), in[0].data, fragment_index(in[0]), in[1].data, fragment_index(in[1])});
  };
  return decl_tensor_intrin("wmma_mma_16x16x16", c, {a, b}, {}, reset, update,
                            "c += a*b on 16x16x16 fragments, fp16 x fp16 -> fp32: wmma::mma_sync");
}

TensorIntrin wmma_store() {
  Tensor src;
  Tensor dst = [&] {
    src = placeholder({kTile, kTile}, DataType::Float(32), "src");
    Tensor s = src;
    return compute({kTile, kTile}, [&](Var i, Var j) { return s(i, j); }, "dst");
  }();
  auto body = [](const std::vector<BufferRegion>& in, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), "loom.wmma_store", {out.access_ptr(), leading_dim(out), in[0].data, fragment_index(in[0])});
  };
  return decl_tensor_intrin("wmma_store", dst, {src}, body, {}, {},
                            "store a 16x16 fp32 accumulator fragment to memory (row major): wmma::store_matrix_sync");
}

}  // namespace loom::te
