// What the int8 templates (matmul_int8, conv2d_nchwc_int8) share: the workload's dtype and
// attributes, the requantization epilogue and the register-tile limits of the u8·s8 → s32
// dot-product intrinsic (te::dot_u8s8s32) they tensorize with.
//
// Data is uint8, weights int8, accumulation int32 (oneDNN's u8s8s32). Every code path of
// the intrinsic is exact on all inputs: vpdpbusd with AVX-512 VNNI; without it a
// vpmaddubsw/vpmaddwd sequence that splits the data's top bit off so that no int16 sum
// saturates (codegen/llvm/intrinsics_llvm.cc), so the tuner's correctness check of every
// candidate is exact.
#pragma once
#include <string>

#include "templates.h"

namespace loom::tuner::int8 {

/// Output columns (matmul) or channels (conv) per dot product: 16 int32 lanes, one AVX-512
/// register.
inline constexpr int64_t kLanes = 16;
/// Reduction depth of one dot product.
inline constexpr int64_t kDepth = 4;

/// The requantization of the int32 accumulator into the output type, from the workload's
/// attributes out_dtype ("int32", the default: none; "int8" or "uint8"), scale (a positive
/// float) and zero_point (an integer):
///   out = clamp(round((acc + bias) · scale) + zero_point, type's range)
/// computed in integer arithmetic as gemmlowp does: scale = multiplier · 2^-shift with a
/// 31-bit multiplier, the product rounded half up by an arithmetic shift, so that the
/// compiled kernel and te::evaluate agree exactly.
struct Requant {
  DataType out = DataType::Int(32);
  double scale = 1.0;
  int64_t zero_point = 0;
  int64_t multiplier = 0;
  int shift = 0;
  bool enabled() const { return out != DataType::Int(32); }
};

/// Checks dtype "int8", `names.size()` sizes in [1, 2^31-1], and that the attributes are
/// among `attrs` or the requantization ones; returns the requantization.
Requant check_workload(const records::Workload& w, const std::vector<std::string>& names,
                       const std::vector<std::string>& attrs = {});
/// tmpl::row_split_options / block_split_options without the candidates whose innermost
/// part leaves a tail (unless every one does): a partial register tile's rows or column
/// blocks are not unrolled, and its accumulators then live in memory.
SplitOptions row_options(int64_t extent);
SplitOptions block_options(int64_t extent);
/// tmpl::tile_options likewise: the divisors of `extent` up to `max`.
SplitOptions tile_options(int64_t extent, int64_t max);
/// The requantization of an int32 value (the accumulator plus the bias).
te::Expr requantize(const Requant& q, const te::Expr& acc);
/// The most int32x16 accumulators a register tile may hold: 28 of AVX-512's 32 vector
/// registers (the rest hold weights and the broadcast data). On AVX2, where each takes two
/// of 16 registers, tiles above 6 spill; the tuner finds the smaller ones faster there.
inline constexpr int64_t kMaxAccumulators = 28;

}  // namespace loom::tuner::int8
