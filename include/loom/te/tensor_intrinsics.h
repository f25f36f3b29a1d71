// The tensor intrinsics loom ships (te/tensor_intrinsics/): declarations to tensorize with
// (Stage::tensorize), each a te computation plus the implementation the code generators
// understand.
#pragma once
#include "loom/te/tensor_intrin.h"

namespace loom::te {

/// u8·s8 → s32 dot products, `lanes` of them, each 4 deep:
///   c[i] += Σ_{k<4} int32(a[k]) · int32(b[i, k]),  a uint8 [4], b int8 [lanes, 4], c int32 [lanes]
/// as AVX-512 VNNI's vpdpbusd computes it (lanes 16), with one broadcast of a's 4 bytes. The
/// code generator picks vpdpbusd where the target has AVX-512 VNNI or AVX-VNNI, else an exact
/// vpmaddubsw/vpmaddwd sequence (AVX-512BW, AVX2), else plain vector code
/// (te::intrin::kDotU8S8S32). a's 4 bytes must be consecutive and b one dense block of
/// lanes × 4 bytes (the [.., 16, 4] packed layouts); c's lanes consecutive. `lanes` >= 2.
TensorIntrin dot_u8s8s32(int lanes = 16);

/// Tensor cores (CUDA WMMA) on 16×16×16 tiles, fp16 inputs and fp32 accumulation. The
/// fragments live in buffers of scope "wmma.matrix_a", "wmma.matrix_b" and
/// "wmma.accumulator" (a cache_read/cache_write into that scope), which the CUDA code
/// generator declares as arrays of nvcuda::wmma::fragment, one per 16×16 tile of the
/// buffer's row-major index space. The loops of a fragment stage must all be tensorized.
/// A warp runs each of them together: the stages using them must not bind threadIdx.x.
///
/// dst[i, j] = src[i, j], a 16×16 fp16 tile of memory (row major, rows a multiple of 16
/// bytes long) into a matrix_a fragment: wmma::load_matrix_sync.
TensorIntrin wmma_load_a();
/// The same into a matrix_b fragment.
TensorIntrin wmma_load_b();
/// c[i, j] += Σ_k float32(a[i, k]) · float32(b[k, j]) on fragments (reset: fill with 0):
/// wmma::mma_sync.
TensorIntrin wmma_mma();
/// dst[i, j] = src[i, j] from an accumulator fragment into memory (row major):
/// wmma::store_matrix_sync.
TensorIntrin wmma_store();

/// Tensor cores through PTX mma.sync.m16n8k16 (sm_80 and later; Hopper runs it too): fp16
/// inputs, fp32 accumulation, fragments in registers. Fragment buffers have the scopes
/// "mma.matrix_a" (16×16 tiles), "mma.matrix_b" (16×8 tiles, k × n) and "mma.accumulator"
/// (16×8 tiles), numbered row-major like the WMMA ones; the CUDA code generator declares them
/// as register arrays (4, 2 and 4 per tile and lane). The stages using them run a warp
/// together: they must not bind threadIdx.x, which must be the 32 lanes of a warp.
///
/// dst = src, a 16×16 fp16 tile of shared memory (row major, rows a multiple of 16 bytes,
/// 16-byte aligned) into an mma.matrix_a fragment: ldmatrix.x4.
TensorIntrin mma_load_a();
/// dst = src, a 16×8 (k × n) fp16 tile of shared memory into an mma.matrix_b fragment:
/// ldmatrix.x2.trans.
TensorIntrin mma_load_b();
/// c[i, j] += Σ_k float32(a[i, k]) · float32(b[k, j]), 16×8×16 (reset: 0): mma.sync.
TensorIntrin mma_m16n8k16();
/// dst = src from a 16×8 accumulator fragment into memory (row major).
TensorIntrin mma_store();

}  // namespace loom::te
