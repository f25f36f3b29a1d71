// The shared classification of vector accesses and operations (vector_access.h).
#include "loom/lower/vector_access.h"

#include <fmt/format.h>

namespace loom::lowering {

std::optional<int64_t> constant_ramp_stride(const Expr& index) {
  const auto* ramp = index.as<te::RampNode>();
  if (!ramp) return std::nullopt;
  if (const auto* imm = ramp->stride.as<te::IntImmNode>()) return imm->value;
  return std::nullopt;
}

VectorAccess classify_vector_load(const te::LoadNode& op) {
  const std::optional<int64_t> stride = constant_ramp_stride(op.index);
  if (stride == 1) return VectorAccess::kDense;
  if (stride && *stride >= 2 && *stride <= kMaxDenseLoadStride) return VectorAccess::kStrided;
  if (op.index.as<te::BroadcastNode>() && !op.predicate.defined()) return VectorAccess::kBroadcast;
  return VectorAccess::kGather;
}

VectorAccess classify_vector_store(const StoreNode& op) {
  return constant_ramp_stride(op.index) == 1 ? VectorAccess::kDense : VectorAccess::kScatter;
}

namespace {

std::optional<int64_t> constant_divisor(const Expr& b) {
  if (const auto* imm = b.as<te::IntImmNode>()) return imm->value;
  const auto* bc = b.as<te::BroadcastNode>();
  if (const auto* imm = bc ? bc->value.as<te::IntImmNode>() : nullptr) return imm->value;
  return std::nullopt;
}

/// LLVM turns a vector integer division by a constant into multiplies and shifts; by
/// anything else it divides lane by lane. With 64-bit lanes only powers of two stay vector
/// operations (x86 has no 64-bit vector multiply-high).
std::optional<std::string> scalarized_division(const Expr& e, const Expr& divisor, const char* what) {
  const DataType t = e.dtype();
  if (!t.is_integer()) return std::nullopt;
  const std::optional<int64_t> c = constant_divisor(divisor);
  if (!c) return fmt::format("integer {} by a non-constant: one lane at a time", what);
  const bool power_of_two = *c > 0 && (*c & (*c - 1)) == 0;
  if (t.bits() == 64 && !power_of_two)
    return fmt::format("64-bit integer {} by {}: one lane at a time", what, *c);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> scalarized_vector_op(const Expr& e) {
  if (!e.defined() || e.dtype().lanes() <= 1) return std::nullopt;
  switch (e.kind()) {
    case te::ExprKind::Call: {
      const std::string& n = e.as<te::CallNode>()->name;
      if (n == "tanh" || n == "erf") return fmt::format("{}: the code generator calls libm once per lane", n);
      if (n == "exp" || n == "log" || n == "exp2" || n == "log2" || n == "sin" || n == "cos" || n == "pow")
        return fmt::format("{}: LLVM calls libm once per lane (no vector math library)", n);
      if (n == "sigmoid") return "sigmoid: its exp is one libm call per lane (no vector math library)";
      return std::nullopt;
    }
    case te::ExprKind::Div: return scalarized_division(e, e.as<te::DivNode>()->b, "division");
    case te::ExprKind::Mod: return scalarized_division(e, e.as<te::ModNode>()->b, "remainder");
    case te::ExprKind::FloorDiv: return scalarized_division(e, e.as<te::FloorDivNode>()->b, "floor division");
    case te::ExprKind::FloorMod: return scalarized_division(e, e.as<te::FloorModNode>()->b, "floor remainder");
    default: return std::nullopt;
  }
}

}  // namespace loom::lowering
