// How the CUDA C code generator prints intrinsic calls (te::CallNode): one table, keyed by
// the intrinsic's name. Argument counts and types were checked against te/intrinsics.h by
// lower(); the lowerings here only choose the C spelling.
#include <fmt/format.h>

#include "codegen_cuda_internal.h"
#include "loom/runtime/error.h"
#include "loom/codegen/intrinsics.h"
#include "loom/te/intrinsics.h"

namespace loom::codegen {

namespace {

/// A math function: name##f for float, name for double, through float for __half; `fast`
/// when fast math is on (float only).
CudaIntrinsicLowering math(std::string name, std::string fast = "") {
  return [name, fast](const CudaCall& c) {
    std::string args;
    const bool f16 = c.type.is_float() && c.type.bits() == 16;
    for (size_t i = 0; i < c.args.size(); ++i)
      args += (i ? ", " : "") + (f16 ? fmt::format("__half2float({})", c.args[i]) : c.args[i]);
    if (f16) return fmt::format("__float2half({}f({}))", name, args);
    if (c.type.is_float() && c.type.bits() == 64) return fmt::format("{}({})", name, args);
    if (!fast.empty() && c.fast_math) return fmt::format("{}({})", fast, args);
    return fmt::format("{}f({})", name, args);
  };
}

CudaIntrinsicLowering binary_op(const char* op) {
  return [op](const CudaCall& c) { return fmt::format("({} {} {})", c.args[0], op, c.args[1]); };
}

}  // namespace

const std::unordered_map<std::string, CudaIntrinsicLowering>& cuda_intrinsic_table() {
  static const std::unordered_map<std::string, CudaIntrinsicLowering> table = [] {
    std::unordered_map<std::string, CudaIntrinsicLowering> t;
    t["likely"] = [](const CudaCall& c) { return c.args[0]; };
    t["exp"] = math("exp", "__expf");
    t["exp2"] = math("exp2", "exp2f");
    t["log"] = math("log", "__logf");
    t["log2"] = math("log2", "__log2f");
    t["sin"] = math("sin", "__sinf");
    t["cos"] = math("cos", "__cosf");
    t["pow"] = math("pow", "__powf");
    for (const char* n : {"sqrt", "tanh", "erf", "floor", "ceil", "trunc", "fma", "tan", "asin", "acos", "atan",
                          "sinh", "cosh", "asinh", "acosh", "atanh"}) t[n] = math(n);
    t["round"] = math("rint");  // ties to even, as the intrinsic table declares (roundf: away from zero)
    t["fabs"] = [](const CudaCall& c) {
      if (c.type.is_integer()) return fmt::format("(({0}) < 0 ? -({0}) : ({0}))", c.args[0]);
      return math("fabs")(c);
    };
    t["sigmoid"] = [](const CudaCall& c) {
      const bool f16 = c.type.is_float() && c.type.bits() == 16;
      if (c.type.is_float() && c.type.bits() == 64) return fmt::format("(1.0 / (1.0 + exp(-({}))))", c.args[0]);
      std::string x = f16 ? fmt::format("__half2float({})", c.args[0]) : c.args[0];
      std::string s = fmt::format("(1.0f / (1.0f + {}(-({}))))", c.fast_math ? "__expf" : "expf", x);
      return f16 ? fmt::format("__float2half({})", s) : s;
    };
    t["isnan"] = [](const CudaCall& c) {
      DataType at = c.call->args[0].dtype();
      if (!at.is_float()) return std::string("false");
      if (at.bits() == 16) return fmt::format("__hisnan({})", c.args[0]);
      return fmt::format("isnan({})", c.args[0]);
    };
    t["bitwise_and"] = binary_op("&");
    t["bitwise_or"] = binary_op("|");
    t["bitwise_xor"] = binary_op("^");
    t["shift_left"] = binary_op("<<");
    t["shift_right"] = binary_op(">>");
    t["bitwise_not"] = [](const CudaCall& c) { return fmt::format("(~{})", c.args[0]); };
    t[te::intrin::kAddressOf] = [](const CudaCall& c) {
      LOOM_CHECK(c.call->args[0].as<te::LoadNode>(), "CUDA codegen: kernel {}: {} takes a load, got {}", c.kernel,
                 c.call->name, te::to_string(c.call->args[0]));
      return fmt::format("(&{})", c.args[0]);
    };
    t["loom.sync_threads"] = [](const CudaCall&) { return std::string("__syncthreads()"); };
    t[te::intrin::kWarpShuffleXor] = [](const CudaCall& c) {
      return fmt::format("__shfl_xor_sync(0xffffffffu, {}, {})", c.args[0], c.args[1]);
    };
    // WMMA fragments: arrays of nvcuda::wmma::fragment declared for the wmma.* scopes.
    t["loom.wmma_fill"] = [](const CudaCall& c) {
      return fmt::format("nvcuda::wmma::fill_fragment({}[{}], {})", c.args[0], c.args[1], c.args[2]);
    };
    t["loom.wmma_load"] = [](const CudaCall& c) {
      return fmt::format("nvcuda::wmma::load_matrix_sync({}[{}], {}, {})", c.args[0], c.args[1], c.args[2], c.args[3]);
    };
    t["loom.wmma_mma"] = [](const CudaCall& c) {
      return fmt::format("nvcuda::wmma::mma_sync({0}[{1}], {2}[{3}], {4}[{5}], {0}[{1}])", c.args[0], c.args[1],
                         c.args[2], c.args[3], c.args[4], c.args[5]);
    };
    t["loom.wmma_store"] = [](const CudaCall& c) {
      return fmt::format("nvcuda::wmma::store_matrix_sync({}, {}[{}], {}, nvcuda::wmma::mem_row_major)", c.args[0],
                         c.args[2], c.args[3], c.args[1]);
    };
    // mma.sync fragments: per-lane register arrays declared for the mma.* scopes; the
    // loom_* device functions are codegen_cuda.cc's kMmaPrelude.
    t["loom.mma_fill"] = [](const CudaCall& c) { return fmt::format("loom_mma_fill({} + ({}) * 4)", c.args[0], c.args[1]); };
    t["loom.mma_ldmatrix_a"] = [](const CudaCall& c) {
      return fmt::format("loom_ldmatrix_x4({} + ({}) * 4, {}, {})", c.args[0], c.args[1], c.args[2], c.args[3]);
    };
    t["loom.mma_ldmatrix_b"] = [](const CudaCall& c) {
      return fmt::format("loom_ldmatrix_x2_trans({} + ({}) * 2, {}, {})", c.args[0], c.args[1], c.args[2], c.args[3]);
    };
    t["loom.mma_m16n8k16"] = [](const CudaCall& c) {
      return fmt::format("loom_mma_m16n8k16({} + ({}) * 4, {} + ({}) * 4, {} + ({}) * 2)", c.args[0], c.args[1],
                         c.args[2], c.args[3], c.args[4], c.args[5]);
    };
    t["loom.mma_store"] = [](const CudaCall& c) {
      return fmt::format("loom_mma_store({}, {}, {} + ({}) * 4)", c.args[0], c.args[1], c.args[2], c.args[3]);
    };
    return t;
  }();
  return table;
}

}  // namespace loom::codegen

namespace loom::codegen {

std::vector<std::string> cuda_lowered_intrinsics() {
  std::vector<std::string> names;
  for (const auto& [name, lowering] : cuda_intrinsic_table()) names.push_back(name);
  return names;
}

}  // namespace loom::codegen
