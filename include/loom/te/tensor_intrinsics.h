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

}  // namespace loom::te
