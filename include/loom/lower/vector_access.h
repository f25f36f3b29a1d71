// How the LLVM CPU code generator emits vector memory accesses and vector operations. One
// classification, used both by codegen/llvm (to choose the instructions) and by the
// vectorization report (to tell a user which accesses are not dense).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "loom/lower/stmt.h"
#include "loom/runtime/target.h"

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

/// The vector math library the LLVM code generator calls for `target`: "libmvec" (glibc's,
/// with its x86 vector-function ABI) on x86-64 GNU/Linux unless -vector_math=none or -mattr
/// disables SSE2; "" otherwise (one libm call per lane).
std::string vector_math_library(const Target& target);

/// Whether `name` is one of the float math intrinsics that the code generator computes with
/// the vector math library when their lanes are float32: exp, exp2, log, log2, sin, cos, pow,
/// tanh, erf, and sigmoid (from the vector exp; codegen/llvm/vector_math.cc).
bool is_vector_math_intrinsic(const std::string& name);

/// Why the CPU code for `target` computes vector expression `e` (this node, not its
/// operands) one lane at a time, or nullopt when it stays vector code: a transcendental
/// (exp, log, exp2, log2, sin, cos, pow, tanh, erf, sigmoid) that is not float32 or whose
/// target has no vector math library (vector_math_library), one libm call per lane; or an
/// integer division or remainder that x86 has no vector instruction for (a divisor that is
/// not a constant, or 64-bit lanes and a constant not a power of two).
std::optional<std::string> scalarized_vector_op(const Expr& e, const Target& target);

}  // namespace loom::lowering
