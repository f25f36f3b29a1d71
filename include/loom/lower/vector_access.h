// How the LLVM CPU code generator emits vector memory accesses and vector operations. One
// classification, used both by codegen/llvm (to choose the instructions) and by the
// vectorization report (to tell a user which accesses are not dense).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "loom/lower/stmt.h"

namespace loom::lowering {

/// Vector loads with a constant stride up to this one are lane-wide loads over the span the
/// lanes cover and a shuffle (predicated ones only when every lane holds); larger strides
/// are gathers.
inline constexpr int64_t kMaxDenseLoadStride = 4;

/// The instructions a vector (lanes > 1) load or store becomes.
enum class VectorAccess {
  kDense,      // index ramp(b, 1, n): one vector load/store, masked when predicated
  kBroadcast,  // unpredicated load at broadcast(x): one scalar load, splat to every lane
  kStrided,    // load at ramp(b, s, n) with 2 <= s <= kMaxDenseLoadStride: lane-wide loads and
               // a shuffle; when predicated, those where every lane holds, else a masked gather
  kGather,     // any other load: a masked gather of the lanes' addresses
  kScatter,    // a store at anything but a stride-1 ramp: a masked scatter
};

/// The constant stride of `index` when it is a ramp with an integer-immediate stride.
std::optional<int64_t> constant_ramp_stride(const Expr& index);

/// How codegen emits a load of more than one lane.
VectorAccess classify_vector_load(const te::LoadNode& op);
/// How codegen emits a store of more than one lane.
VectorAccess classify_vector_store(const StoreNode& op);

/// Why the CPU code computes vector expression `e` (this node, not its operands) one lane
/// at a time, or nullopt when it stays a vector operation: an intrinsic call that loom's
/// code generator splits into lanes itself (tanh, erf) or that LLVM lowers to one libm call
/// per lane (exp, log, exp2, log2, sin, cos, pow, sigmoid's exp: no vector math library is
/// linked), or an integer division or remainder that x86 has no vector instruction for
/// (a divisor that is not a constant, or 64-bit lanes and a constant not a power of two).
std::optional<std::string> scalarized_vector_op(const Expr& e);

}  // namespace loom::lowering
