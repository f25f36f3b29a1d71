// The intrinsic table: every intrinsic loom knows (te::CallNode names), declared once with
// its arity, argument and result types, purity and whether it may be speculated. Each code
// generator has its own lowering table beside it (codegen/llvm/intrinsics_llvm.cc,
// codegen/cuda/intrinsics_cuda.cc); `lower()` rejects a call that is not declared here, or
// that the target's code generator does not lower, naming the call.
#pragma once
#include <string>
#include <vector>

#include "loom/te/expr.h"

namespace loom::te {

/// What an argument or the result of an intrinsic may be.
enum class IntrinsicType : uint8_t {
  kAny,      // any type
  kFloat,    // a float type
  kNumeric,  // int, uint or float
  kInteger,  // int or uint
  kBool,
  kHandle,
  kString,   // a StringImm
  kIndex,    // a scalar int32 or int64
  kSame,     // the same element type as the call's result
  kVoid,     // (result only) nothing: the call is evaluated for its effect
};

/// Code generators that lower an intrinsic (a bit set).
enum IntrinsicBackend : unsigned {
  kBackendNone = 0,
  kBackendLLVM = 1,  // CPU code (LLVM)
  kBackendCUDA = 2,  // CUDA C device code
};

/// The declaration of one intrinsic.
struct IntrinsicInfo {
  std::string name;
  /// Exact argument count; -1 for any number (each then of type args.back()).
  int num_args = 0;
  std::vector<IntrinsicType> args;
  IntrinsicType result = IntrinsicType::kSame;
  /// No effect, and reads nothing but its arguments: may be folded, hoisted, or dropped
  /// when its value is unused.
  bool pure = true;
  /// May be executed where the program would not have executed it: it cannot trap or read
  /// memory that might not exist, on any argument values.
  bool speculatable = true;
  /// On vectors it applies lane by lane, so vectorize_loops may widen it.
  bool elementwise = true;
  /// The code generators that lower it.
  unsigned backends = kBackendLLVM | kBackendCUDA;
  /// One line on what it computes.
  std::string doc;
};

/// Every declared intrinsic, sorted by name.
const std::vector<IntrinsicInfo>& intrinsic_table();
/// The declaration of `name`, or nullptr.
const IntrinsicInfo* find_intrinsic(const std::string& name);
/// "" when `call` matches its declaration (known name, argument count and types, result
/// type); else what is wrong, naming the call.
std::string check_intrinsic_call(const CallNode& call);

/// Intrinsics that passes and code generators refer to by name.
namespace intrin {
inline constexpr const char* kLikely = "likely";
/// address_of(Load(buf, index)): a handle to element `index` of `buf`.
inline constexpr const char* kAddressOf = "loom.address_of";
/// dot_u8s8s32(acc int32xL, a uint8x4L, b int8x4L) → int32xL: lane l is acc[l] + Σ_{j<4}
/// a[4l+j]·b[4l+j] with a unsigned and b signed, in exact int32 arithmetic (what AVX-512
/// VNNI's vpdpbusd computes; no intermediate saturates on any code path).
inline constexpr const char* kDotU8S8S32 = "loom.dot_u8s8s32";
/// warp_shuffle_xor(x, mask) → the x of the lane whose index is this lane's xor mask, in the
/// warp (CUDA's __shfl_xor_sync over the full warp): the step of a warp's butterfly
/// reduction. Every lane of the warp must execute it.
inline constexpr const char* kWarpShuffleXor = "loom.warp_shuffle_xor";
}  // namespace intrin

/// address_of(Load(buffer, offset)): a handle to element `offset` of `buffer` (of `dtype`).
Expr address_of(const Var& buffer, DataType dtype, Expr offset);

}  // namespace loom::te
