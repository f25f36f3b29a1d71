// The declaration of every intrinsic loom knows. The code generators' lowering tables
// (codegen/llvm/intrinsics_llvm.cc, codegen/cuda/intrinsics_cuda.cc) must agree with the
// `backends` given here; tests/codegen/intrinsic_tables_test.cc holds them to it.
#include "loom/te/intrinsics.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace loom::te {

namespace {

using T = IntrinsicType;
constexpr unsigned kBoth = kBackendLLVM | kBackendCUDA;

IntrinsicInfo elementwise(std::string name, std::vector<T> args, T result, unsigned backends, std::string doc) {
  IntrinsicInfo i;
  i.name = std::move(name);
  i.num_args = int(args.size());
  i.args = std::move(args);
  i.result = result;
  i.backends = backends;
  i.doc = std::move(doc);
  return i;
}

/// Reads memory or has an effect: never hoisted, folded or speculated.
IntrinsicInfo effect(std::string name, int num_args, std::vector<T> args, T result, unsigned backends, std::string doc) {
  IntrinsicInfo i;
  i.name = std::move(name);
  i.num_args = num_args;
  i.args = std::move(args);
  i.result = result;
  i.pure = false;
  i.speculatable = false;
  i.elementwise = false;
  i.backends = backends;
  i.doc = std::move(doc);
  return i;
}

std::vector<IntrinsicInfo> make_table() {
  std::vector<IntrinsicInfo> t;
  // Float math, lane by lane; the result has the argument's type.
  const std::pair<const char*, const char*> unary_float[] = {
      {"exp", "e^x"},          {"exp2", "2^x"},       {"log", "natural logarithm"}, {"log2", "base-2 logarithm"},
      {"sqrt", "square root"}, {"tanh", "tanh"},      {"sigmoid", "1/(1+e^-x)"},    {"erf", "error function"},
      {"sin", "sine"},         {"cos", "cosine"},     {"floor", "round down"},      {"ceil", "round up"},
      {"round", "round to nearest, ties to even"},   {"trunc", "round toward zero"},
      {"tan", "tangent"},      {"asin", "arc sine"},  {"acos", "arc cosine"},       {"atan", "arc tangent"},
      {"sinh", "hyperbolic sine"}, {"cosh", "hyperbolic cosine"}, {"asinh", "inverse hyperbolic sine"},
      {"acosh", "inverse hyperbolic cosine"}, {"atanh", "inverse hyperbolic tangent"},
  };
  for (const auto& [name, doc] : unary_float) t.push_back(elementwise(name, {T::kSame}, T::kFloat, kBoth, doc));
  // Only the reference evaluator knows these; no code generator lowers them.
  const std::pair<const char*, const char*> evaluate_only[] = {
      {"exp10", "10^x"}, {"expm1", "e^x - 1"}, {"log10", "base-10 logarithm"}, {"log1p", "log(1 + x)"},
      {"rsqrt", "1/sqrt(x)"}, {"nearbyint", "round to nearest"},
  };
  for (const auto& [name, doc] : evaluate_only)
    t.push_back(elementwise(name, {T::kSame}, T::kFloat, kBackendNone, doc));
  for (const char* name : {"fmod", "atan2", "hypot"})
    t.push_back(elementwise(name, {T::kSame, T::kSame}, T::kFloat, kBackendNone, name));
  t.push_back(elementwise("fabs", {T::kSame}, T::kNumeric, kBoth, "absolute value"));
  t.push_back(elementwise("pow", {T::kSame, T::kSame}, T::kFloat, kBoth, "x^y"));
  t.push_back(elementwise("fma", {T::kSame, T::kSame, T::kSame}, T::kNumeric, kBoth, "x*y + z, one rounding for floats"));
  t.push_back(elementwise("likely", {T::kSame}, T::kBool, kBoth, "its argument; marks a condition as usually true"));
  t.push_back(elementwise("isnan", {T::kNumeric}, T::kBool, kBoth, "true for a NaN"));
  for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"})
    t.push_back(elementwise(name, {T::kSame, T::kSame}, T::kInteger, kBoth, name));
  t.push_back(elementwise("bitwise_not", {T::kSame}, T::kInteger, kBoth, "~x"));
  t.push_back(elementwise("reinterpret", {T::kAny}, T::kAny, kBackendLLVM,
                          "the argument's bits as the result type (of equal total width; lane by lane when the "
                          "element widths are equal)"));
  {
    IntrinsicInfo r = elementwise("if_then_else", {T::kBool, T::kSame, T::kSame}, T::kAny, kBackendNone,
                                  "the second argument if the first is true, else the third; only the taken one "
                                  "is evaluated");
    r.speculatable = false;
    t.push_back(r);
  }

  // Sub-buffers and tensor intrinsics.
  {
    IntrinsicInfo a = elementwise(intrin::kAddressOf, {T::kAny}, T::kHandle, kBoth,
                                  "address_of(Load(buf, i)): a handle to element i of buf");
    a.elementwise = false;
    t.push_back(a);
  }
  {
    IntrinsicInfo d = elementwise(intrin::kDotU8S8S32, {T::kSame, T::kInteger, T::kInteger}, T::kInteger,
                                  kBackendLLVM,
                                  "(acc int32xL, a uint8x4L, b int8x4L): acc[l] + sum_j<4 a[4l+j]*b[4l+j], exact "
                                  "(vpdpbusd with VNNI; an exact vpmaddubsw/vpmaddwd sequence without)");
    d.elementwise = false;
    t.push_back(d);
  }
  // Warp-level data exchange (CUDA): convergent, so never hoisted, dropped or speculated.
  t.push_back(effect(intrin::kWarpShuffleXor, 2, {T::kSame, T::kIndex}, T::kNumeric, kBackendCUDA,
                     "(x, lane mask): x of lane (this lane xor mask) in the warp, __shfl_xor_sync"));
  // WMMA fragments (CUDA tensor cores); see te/tensor_intrinsics/wmma.cc.
  t.push_back(effect("loom.wmma_fill", 3, {T::kHandle, T::kIndex, T::kFloat}, T::kVoid, kBackendCUDA,
                     "(fragment buffer, fragment index, value): every element of the fragment = value"));
  t.push_back(effect("loom.wmma_load", 4, {T::kHandle, T::kIndex, T::kHandle, T::kIndex}, T::kVoid, kBackendCUDA,
                     "(matrix_a/matrix_b fragment buffer, index, source pointer, leading dimension): "
                     "wmma::load_matrix_sync, row major"));
  t.push_back(effect("loom.wmma_mma", 6, {T::kHandle, T::kIndex, T::kHandle, T::kIndex, T::kHandle, T::kIndex},
                     T::kVoid, kBackendCUDA,
                     "(acc, acc index, a, a index, b, b index): acc += a*b, wmma::mma_sync"));
  t.push_back(effect("loom.wmma_store", 4, {T::kHandle, T::kIndex, T::kHandle, T::kIndex}, T::kVoid, kBackendCUDA,
                     "(destination pointer, leading dimension, fragment buffer, index): "
                     "wmma::store_matrix_sync, row major"));

  // mma.sync fragments (CUDA tensor cores, sm_80+); see te/tensor_intrinsics/mma.cc.
  t.push_back(effect("loom.mma_fill", 2, {T::kHandle, T::kIndex}, T::kVoid, kBackendCUDA,
                     "(accumulator fragment buffer, fragment index): the fragment's 4 floats per lane = 0"));
  t.push_back(effect("loom.mma_ldmatrix_a", 4, {T::kHandle, T::kIndex, T::kHandle, T::kIndex}, T::kVoid, kBackendCUDA,
                     "(mma.matrix_a fragment buffer, index, shared source pointer, leading dimension): a 16x16 "
                     "fp16 tile, row major, ldmatrix.x4"));
  t.push_back(effect("loom.mma_ldmatrix_b", 4, {T::kHandle, T::kIndex, T::kHandle, T::kIndex}, T::kVoid, kBackendCUDA,
                     "(mma.matrix_b fragment buffer, index, shared source pointer, leading dimension): a 16x8 (k x n) "
                     "fp16 tile, row major, ldmatrix.x2.trans"));
  t.push_back(effect("loom.mma_m16n8k16", 6, {T::kHandle, T::kIndex, T::kHandle, T::kIndex, T::kHandle, T::kIndex},
                     T::kVoid, kBackendCUDA,
                     "(acc, acc index, a, a index, b, b index): acc += a*b, mma.sync.m16n8k16 fp16 x fp16 -> fp32"));
  t.push_back(effect("loom.mma_store", 4, {T::kHandle, T::kIndex, T::kHandle, T::kIndex}, T::kVoid, kBackendCUDA,
                     "(destination pointer, leading dimension, accumulator fragment buffer, index): a 16x8 fp32 "
                     "tile, row major, each lane its 4 elements"));

  // The packed-call ABI: fields of a DLTensor handle (reads memory through the handle).
  t.push_back(effect("loom.handle_is_null", 1, {T::kHandle}, T::kBool, kBackendLLVM, "true for a null handle"));
  t.back().pure = true;
  t.push_back(effect("loom.handle_to_int", 1, {T::kHandle}, T::kInteger, kBackendLLVM, "the handle's address"));
  t.back().pure = true;
  t.push_back(effect("loom.dltensor_data", 1, {T::kHandle}, T::kHandle, kBackendLLVM, "DLTensor::data"));
  const char* int_fields[] = {"loom.dltensor_ndim",        "loom.dltensor_device_type", "loom.dltensor_dtype_code",
                              "loom.dltensor_dtype_bits",  "loom.dltensor_dtype_lanes", "loom.dltensor_byte_offset"};
  for (const char* f : int_fields) t.push_back(effect(f, 1, {T::kHandle}, T::kInteger, kBackendLLVM, f + 5));
  t.push_back(effect("loom.dltensor_strides_is_null", 1, {T::kHandle}, T::kBool, kBackendLLVM,
                     "DLTensor::strides == NULL"));
  t.push_back(effect("loom.dltensor_shape", 2, {T::kHandle, T::kIndex}, T::kInteger, kBackendLLVM, "DLTensor::shape[i]"));
  t.push_back(effect("loom.dltensor_stride", 2, {T::kHandle, T::kIndex}, T::kInteger, kBackendLLVM,
                     "DLTensor::strides[i]"));
  // GPU kernels.
  t.push_back(effect("loom.sync_threads", 0, {}, T::kInteger, kBackendCUDA, "__syncthreads()"));
  t.push_back(effect("loom.launch_kernel", -1, {T::kAny}, T::kInteger, kBackendNone,
                     "(kernel name, buffers…, scalars…): launches a kernel (the CUDA host module runs it)"));

  std::sort(t.begin(), t.end(), [](const IntrinsicInfo& a, const IntrinsicInfo& b) { return a.name < b.name; });
  return t;
}

bool matches(IntrinsicType want, DataType got, DataType result) {
  switch (want) {
    case T::kAny: return true;
    case T::kFloat: return got.is_float();
    case T::kNumeric: return got.is_integer() || got.is_float();
    case T::kInteger: return got.is_integer();
    case T::kBool: return got.is_bool();
    case T::kHandle: return got.is_handle();
    case T::kString: return got.is_handle();
    case T::kIndex: return got.is_scalar() && got.is_int() && (got.bits() == 32 || got.bits() == 64);
    case T::kSame: return got.element_of() == result.element_of();
    case T::kVoid: return got.is_void();
  }
  return false;
}

const char* describe(IntrinsicType t) {
  switch (t) {
    case T::kAny: return "any type";
    case T::kFloat: return "a float";
    case T::kNumeric: return "a number";
    case T::kInteger: return "an integer";
    case T::kBool: return "bool";
    case T::kHandle: return "a handle";
    case T::kString: return "a string";
    case T::kIndex: return "an int32 or int64 scalar";
    case T::kSame: return "the result's element type";
    case T::kVoid: return "void";
  }
  return "?";
}

}  // namespace

const std::vector<IntrinsicInfo>& intrinsic_table() {
  static const std::vector<IntrinsicInfo> table = make_table();
  return table;
}

const IntrinsicInfo* find_intrinsic(const std::string& name) {
  static const std::unordered_map<std::string, const IntrinsicInfo*> index = [] {
    std::unordered_map<std::string, const IntrinsicInfo*> m;
    for (const IntrinsicInfo& i : intrinsic_table()) m[i.name] = &i;
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

std::string check_intrinsic_call(const CallNode& call) {
  const std::string text = to_string(to_expr(&call));
  const IntrinsicInfo* info = find_intrinsic(call.name);
  if (!info) return fmt::format("unknown intrinsic '{}' in {}", call.name, text);
  const size_t n = call.args.size();
  if (info->num_args >= 0 && n != size_t(info->num_args))
    return fmt::format("intrinsic '{}' takes {} argument(s), got {} in {}", call.name, info->num_args, n, text);
  for (size_t i = 0; i < n; ++i) {
    IntrinsicType want = info->args.empty() ? T::kAny : info->args[std::min(i, info->args.size() - 1)];
    const Expr& a = call.args[i];
    if (!a.defined()) return fmt::format("intrinsic '{}': argument {} is undefined", call.name, i);
    if (want == T::kString && !a.as<StringImmNode>())
      return fmt::format("intrinsic '{}': argument {} must be a string constant, got {} in {}", call.name, i,
                         to_string(a), text);
    if (!matches(want, a.dtype(), call.dtype))
      return fmt::format("intrinsic '{}': argument {} must be {}, got {} ({}) in {}", call.name, i, describe(want),
                         to_string(a), a.dtype().str(), text);
  }
  if (info->result != T::kSame && !matches(info->result, call.dtype, call.dtype))
    return fmt::format("intrinsic '{}' returns {}, but the call has type {} in {}", call.name, describe(info->result),
                       call.dtype.str(), text);
  return "";
}

Expr address_of(const Var& buffer, DataType dtype, Expr offset) {
  return call(DataType::Handle(), intrin::kAddressOf, {make<LoadNode>(dtype, buffer, std::move(offset), Expr())});
}

}  // namespace loom::te
