// The shared classification of vector accesses and operations (vector_access.h).
#include "loom/lower/vector_access.h"

#include <fmt/format.h>

#include <set>
#include <sstream>
#include <vector>

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

std::string vector_math_library(const Target& target) {
  if (!target.is_cpu() || target.get("vector_math", "libmvec") == "none") return "";
  // The triple's components: arch, then vendor/OS/environment in any of LLVM's spellings
  // ("x86_64-linux-gnu", "x86_64-unknown-linux-gnu"); x32 (gnux32) has another ABI.
  std::vector<std::string> parts;
  std::istringstream triple(target.mtriple());
  for (std::string p; std::getline(triple, p, '-');) parts.push_back(p);
  if (parts.empty() || (parts[0] != "x86_64" && parts[0] != "amd64")) return "";
  bool on_linux = false, gnu = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    on_linux |= parts[i] == "linux";
    gnu |= parts[i] == "gnu";
  }
  if (!on_linux || !gnu) return "";
  std::istringstream attrs(target.get("mattr"));
  for (std::string f; std::getline(attrs, f, ',');)
    if (f == "-sse" || f == "-sse2") return "";
  return "libmvec";
}

bool is_vector_math_intrinsic(const std::string& name) {
  static const std::set<std::string> names = {"exp", "exp2", "log", "log2", "sin", "cos", "pow", "tanh", "erf", "sigmoid"};
  return names.count(name) != 0;
}

std::optional<std::string> scalarized_vector_op(const Expr& e, const Target& target) {
  if (!e.defined() || e.dtype().lanes() <= 1) return std::nullopt;
  switch (e.kind()) {
    case te::ExprKind::Call: {
      const std::string& n = e.as<te::CallNode>()->name;
      if (!is_vector_math_intrinsic(n)) return std::nullopt;
      const std::string lib = vector_math_library(target);
      if (!lib.empty() && e.dtype().element_of() == DataType::Float(32)) return std::nullopt;
      if (!lib.empty())
        return fmt::format("{}: one libm call per lane (loom calls {} for float32 only; this is {})", n, lib,
                           e.dtype().element_of().str());
      return fmt::format("{}: one libm call per lane (no vector math library for target \"{}\")", n, target.str());
    }
    case te::ExprKind::Div: return scalarized_division(e, e.as<te::DivNode>()->b, "division");
    case te::ExprKind::Mod: return scalarized_division(e, e.as<te::ModNode>()->b, "remainder");
    case te::ExprKind::FloorDiv: return scalarized_division(e, e.as<te::FloorDivNode>()->b, "floor division");
    case te::ExprKind::FloorMod: return scalarized_division(e, e.as<te::FloorModNode>()->b, "floor remainder");
    default: return std::nullopt;
  }
}

}  // namespace loom::lowering
