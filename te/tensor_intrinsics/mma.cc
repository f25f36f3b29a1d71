// CUDA tensor-core tensor intrinsics on mma.sync.m16n8k16 (sm_80 and later): fp16 inputs,
// fp32 accumulation, fragments held in registers by the 32 lanes of a warp. Fragment buffers
// have the scopes "mma.matrix_a" (16×16 tiles of A, row major: 4 registers a lane),
// "mma.matrix_b" (16×8 tiles of B, k × n: 2 registers) and "mma.accumulator" (16×8 tiles of
// C: 4 floats); a fragment buffer's tiles are numbered row-major over its [rows, cols] index
// space, as in te/tensor_intrinsics/wmma.cc. Loads read shared memory with ldmatrix (A's
// tile as four 8×8 matrices, B's with .trans), so their source must be in shared memory
// with 16-byte aligned rows.
#include <fmt/format.h>

#include "loom/te/arith.h"
#include "loom/te/intrinsics.h"
#include "loom/te/tensor_intrinsics.h"
#include "fragments.h"

namespace loom::te {

namespace {

constexpr int kM = 16, kN = 8, kK = 16;

TensorIntrin load(const char* name, const char* call_name, int rows, int cols, const char* doc) {
  Tensor src = placeholder({rows, cols}, DataType::Float(16), "src");
  Tensor dst = compute({rows, cols}, [&](Var i, Var j) { return src(i, j); }, "dst");
  auto body = [call_name, rows, cols](const std::vector<BufferRegion>& in, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), call_name,
                {out.data, fragments::tile_index(out, rows, cols), in[0].access_ptr(), fragments::row_stride(in[0], true)});
  };
  return decl_tensor_intrin(name, dst, {src}, body, {}, {}, doc);
}

}  // namespace

TensorIntrin mma_load_a() {
  return load("mma_load_a", "loom.mma_ldmatrix_a", kM, kK,
              "load a 16x16 fp16 tile of A (row major, shared memory) into an mma fragment: ldmatrix.x4");
}

TensorIntrin mma_load_b() {
  return load("mma_load_b", "loom.mma_ldmatrix_b", kK, kN,
              "load a 16x8 fp16 tile of B (k x n, row major, shared memory) into an mma fragment: ldmatrix.x2.trans");
}

TensorIntrin mma_m16n8k16() {
  Tensor a, b;
  Tensor c = fragments::f16_matmul_tile(kM, kN, kK, &a, &b);
  auto reset = [](const std::vector<BufferRegion>&, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), "loom.mma_fill", {out.data, fragments::tile_index(out, kM, kN)});
  };
  auto update = [](const std::vector<BufferRegion>& in, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), "loom.mma_m16n8k16",
                {out.data, fragments::tile_index(out, kM, kN), in[0].data, fragments::tile_index(in[0], kM, kK), in[1].data,
                 fragments::tile_index(in[1], kK, kN)});
  };
  return decl_tensor_intrin("mma_m16n8k16", c, {a, b}, {}, reset, update,
                            "c += a*b on 16x8x16 register fragments, fp16 x fp16 -> fp32: mma.sync.m16n8k16");
}

TensorIntrin mma_store() {
  Tensor src = placeholder({kM, kN}, DataType::Float(32), "src");
  Tensor dst = compute({kM, kN}, [&](Var i, Var j) { return src(i, j); }, "dst");
  auto body = [](const std::vector<BufferRegion>& in, const BufferRegion& out) -> Expr {
    return call(DataType::Void(), "loom.mma_store",
                {out.access_ptr(), fragments::row_stride(out, false), in[0].data, fragments::tile_index(in[0], kM, kN)});
  };
  return decl_tensor_intrin("mma_store", dst, {src}, body, {}, {},
                            "store a 16x8 fp32 accumulator fragment to memory (row major), 2+2 floats a lane");
}

}  // namespace loom::te
