// How CodeGenLLVM lowers intrinsic calls (te::CallNode): one table, keyed by the intrinsic's
// name, giving its argument count and its emitter.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen_llvm_internal.h"
#include "loom/codegen/intrinsics.h"
#include "loom/te/intrinsics.h"

namespace loom::codegen {

llvm::Value* CodeGenLLVM::emit_call(const te::CallNode* op) {
  const std::string& n = op->name;
  const auto& table = intrinsic_table();
  auto it = table.find(n);
  if (it == table.end()) fail("codegen: unknown intrinsic '{}' in function '{}'", n, func_name_);
  LOOM_CHECK(op->args.size() == it->second.num_args, "codegen: intrinsic '{}' takes {} argument(s), got {} in function '{}'", n,
             it->second.num_args, op->args.size(), func_name_);
  return it->second.emit(*this, op);
}

llvm::Value* CodeGenLLVM::emit_libm(const std::string& base, DataType t, llvm::Value* x) {
  DataType et = t.element_of();
  LOOM_CHECK(et.is_float(), "codegen: {} of a non-float value ({}) in function '{}'", base, t.str(), func_name_);
  bool dbl = et.bits() == 64;
  llvm::Type* ct = dbl ? b_.getDoubleTy() : b_.getFloatTy();
  auto callee = m_->getOrInsertFunction(dbl ? base : base + "f", llvm::FunctionType::get(ct, {ct}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  llvm::Type* st = scalar_type(et);
  auto one = [&](llvm::Value* v) {
    llvm::Value* arg = st == ct ? v : b_.CreateFPExt(v, ct);
    llvm::Value* r = b_.CreateCall(callee, {arg});
    return st == ct ? r : b_.CreateFPTrunc(r, st);
  };
  if (t.lanes() == 1) return one(x);
  llvm::Value* out = llvm::PoisonValue::get(llvm_type(t));
  for (int i = 0; i < t.lanes(); ++i)
    out = b_.CreateInsertElement(out, one(b_.CreateExtractElement(x, uint64_t(i))), uint64_t(i));
  return out;
}

bool CodeGenLLVM::has_feature(const char* feature) const {
  return tm_->getMCSubtargetInfo()->checkFeatures(std::string("+") + feature);
}

llvm::Value* CodeGenLLVM::subvector(llvm::Value* v, int begin, int n) {
  std::vector<int> mask(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) mask[size_t(i)] = begin + i;
  return b_.CreateShuffleVector(v, mask);
}

llvm::Value* CodeGenLLVM::concat(std::vector<llvm::Value*> parts) {
  while (parts.size() > 1) {
    std::vector<llvm::Value*> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      int na = int(llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements());
      int nb = int(llvm::cast<llvm::FixedVectorType>(parts[i + 1]->getType())->getNumElements());
      LOOM_ICHECK(na == nb);
      std::vector<int> mask(static_cast<size_t>(na + nb));
      for (int j = 0; j < na + nb; ++j) mask[size_t(j)] = j;
      next.push_back(b_.CreateShuffleVector(parts[i], parts[i + 1], mask));
    }
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts[0];
}

// acc[l] + Σ_{j<4} a[4l+j]·b[4l+j], a unsigned and b signed bytes, exactly. With AVX-512 VNNI
// (or AVX-VNNI) one vpdpbusd per vector. Without, vpmaddubsw would saturate its int16 pair
// sums (255·127·2 > 32767), so a is split into its low 7 bits and its top bit: the two
// vpmaddubsw on them cannot saturate (127·128·2 and 1·128·2 fit), and vpmaddwd by 1 and by
// 128 widens and adds their pairs into int32. Without AVX2, plain widening IR.
llvm::Value* CodeGenLLVM::emit_dot_u8s8s32(const te::CallNode* op) {
  const DataType t = op->dtype;
  const int lanes = t.lanes();
  const DataType ta = op->args[1].dtype(), tb = op->args[2].dtype();
  LOOM_CHECK(t.element_of() == DataType::Int(32) && op->args[0].dtype() == t && ta == DataType::UInt(8, 4 * lanes) &&
                 tb == DataType::Int(8, 4 * lanes),
             "codegen: {} takes (int32xL, uint8x4L, int8x4L) and returns int32xL; got ({}, {}, {}) -> {} in function "
             "'{}'",
             op->name, op->args[0].dtype().str(), ta.str(), tb.str(), t.str(), func_name_);
  llvm::Value* acc = emit(op->args[0]);
  llvm::Value* a = emit(op->args[1]);
  llvm::Value* b = emit(op->args[2]);
  if (lanes == 1) {  // scalars: one 32-bit group
    acc = b_.CreateVectorSplat(1, acc);
  }
  const bool avx512 = has_feature("avx512f");
  enum class Path { kVnni512, kVnni256, kSplit512, kSplit256, kGeneric } path = Path::kGeneric;
  if (has_feature("avx512vnni") && avx512 && lanes % 16 == 0) path = Path::kVnni512;
  else if (((has_feature("avx512vnni") && has_feature("avx512vl")) || has_feature("avxvnni")) && lanes % 8 == 0)
    path = Path::kVnni256;
  else if (has_feature("avx512bw") && lanes % 16 == 0) path = Path::kSplit512;
  else if (has_feature("avx2") && lanes % 8 == 0) path = Path::kSplit256;

  llvm::Value* result = nullptr;
  if (path == Path::kGeneric) {
    auto* wide = llvm::FixedVectorType::get(i32_, unsigned(4 * lanes));
    llvm::Value* p = b_.CreateMul(b_.CreateZExt(a, wide), b_.CreateSExt(b, wide));
    result = acc;
    for (int j = 0; j < 4; ++j) {
      std::vector<int> mask(static_cast<size_t>(lanes));
      for (int l = 0; l < lanes; ++l) mask[size_t(l)] = 4 * l + j;
      result = b_.CreateAdd(result, b_.CreateShuffleVector(p, mask));
    }
  } else {
    const int chunk = path == Path::kVnni512 || path == Path::kSplit512 ? 16 : 8;
    std::vector<llvm::Value*> parts;
    for (int c = 0; c < lanes; c += chunk) {
      llvm::Value* acc_c = lanes == chunk ? acc : subvector(acc, c, chunk);
      llvm::Value* a_c = lanes == chunk ? a : subvector(a, 4 * c, 4 * chunk);
      llvm::Value* b_c = lanes == chunk ? b : subvector(b, 4 * c, 4 * chunk);
      auto* words = llvm::FixedVectorType::get(i32_, unsigned(chunk));
      if (path == Path::kVnni512 || path == Path::kVnni256) {
        auto id = path == Path::kVnni512 ? llvm::Intrinsic::x86_avx512_vpdpbusd_512 : llvm::Intrinsic::x86_avx512_vpdpbusd_256;
        parts.push_back(b_.CreateIntrinsic(id, {}, {acc_c, b_.CreateBitCast(a_c, words), b_.CreateBitCast(b_c, words)}));
        continue;
      }
      const bool w512 = path == Path::kSplit512;
      auto maddubs = w512 ? llvm::Intrinsic::x86_avx512_pmaddubs_w_512 : llvm::Intrinsic::x86_avx2_pmadd_ub_sw;
      auto maddwd = w512 ? llvm::Intrinsic::x86_avx512_pmaddw_d_512 : llvm::Intrinsic::x86_avx2_pmadd_wd;
      auto* bytes = llvm::FixedVectorType::get(i8_, unsigned(4 * chunk));
      auto* halves = llvm::FixedVectorType::get(i16_, unsigned(2 * chunk));
      llvm::Value* a_lo = b_.CreateAnd(a_c, llvm::ConstantInt::get(bytes, 0x7f));
      llvm::Value* a_hi = b_.CreateLShr(a_c, llvm::ConstantInt::get(bytes, 7));
      llvm::Value* p_lo = b_.CreateIntrinsic(maddubs, {}, {a_lo, b_c});
      llvm::Value* p_hi = b_.CreateIntrinsic(maddubs, {}, {a_hi, b_c});
      llvm::Value* s_lo = b_.CreateIntrinsic(maddwd, {}, {p_lo, llvm::ConstantInt::get(halves, 1)});
      llvm::Value* s_hi = b_.CreateIntrinsic(maddwd, {}, {p_hi, llvm::ConstantInt::get(halves, 128)});
      parts.push_back(b_.CreateAdd(acc_c, b_.CreateAdd(s_lo, s_hi)));
    }
    result = concat(std::move(parts));
  }
  if (lanes == 1) result = b_.CreateExtractElement(result, uint64_t(0));
  return result;
}

const std::unordered_map<std::string, CodeGenLLVM::IntrinsicLowering>& CodeGenLLVM::intrinsic_table() {
  using Lowering = CodeGenLLVM::IntrinsicLowering;
  static const std::unordered_map<std::string, Lowering> table = [] {
    std::unordered_map<std::string, Lowering> t;
    // Float intrinsics LLVM has a unary intrinsic for.
    static const std::pair<const char*, llvm::Intrinsic::ID> unary[] = {
        {"exp", llvm::Intrinsic::exp},     {"log", llvm::Intrinsic::log},     {"sqrt", llvm::Intrinsic::sqrt},
        {"floor", llvm::Intrinsic::floor}, {"ceil", llvm::Intrinsic::ceil},   {"round", llvm::Intrinsic::roundeven},
        {"trunc", llvm::Intrinsic::trunc}, {"exp2", llvm::Intrinsic::exp2},   {"log2", llvm::Intrinsic::log2},
        {"sin", llvm::Intrinsic::sin},     {"cos", llvm::Intrinsic::cos},
    };
    // Float32 vectors of the transcendental ones are libmvec calls where the target has it.
    for (const auto& [name, id] : unary) {
      t[name] = {1, [n = std::string(name), id = id](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                   DataType dt = op->dtype;
                   if (!dt.is_float()) fail("codegen: {} of a non-float value ({}) in function '{}'", n, dt.str(), cg.func_name_);
                   llvm::Value* x = cg.emit_as(op->args[0], dt);
                   if (llvm::Value* v = cg.emit_vector_math(n, dt, {x})) return v;
                   return cg.b_.CreateUnaryIntrinsic(id, x);
                 }};
    }
    t["fabs"] = {1, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                   DataType dt = op->dtype;
                   llvm::Value* x = cg.emit_as(op->args[0], dt);
                   if (dt.is_float()) return cg.b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
                   if (dt.is_uint() || dt.is_bool()) return x;
                   return cg.b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, cg.b_.getFalse());
                 }};
    for (const char* name : {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}) {
      t[name] = {1, [n = std::string(name)](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                   return cg.emit_libm(n, op->dtype, cg.emit_as(op->args[0], op->dtype));
                 }};
    }
    for (const char* name : {"tanh", "erf"}) {
      t[name] = {1, [n = std::string(name)](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                   llvm::Value* x = cg.emit_as(op->args[0], op->dtype);
                   if (llvm::Value* v = cg.emit_vector_math(n, op->dtype, {x})) return v;
                   return cg.emit_libm(n, op->dtype, x);
                 }};
    }
    t["sigmoid"] = {1, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                      DataType dt = op->dtype;
                      LOOM_CHECK(dt.is_float(), "codegen: sigmoid of a non-float value ({}) in function '{}'", dt.str(), cg.func_name_);
                      return cg.emit_sigmoid(dt, cg.emit_as(op->args[0], dt));
                    }};
    t["pow"] = {2, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                  DataType dt = op->dtype;
                  llvm::Value* x = cg.emit_as(op->args[0], dt);
                  llvm::Value* y = cg.emit_as(op->args[1], dt);
                  if (llvm::Value* v = cg.emit_vector_math("pow", dt, {x, y})) return v;
                  return cg.b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
                }};
    t["fma"] = {3, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                  DataType dt = op->dtype;
                  const auto& args = op->args;
                  if (!dt.is_float())
                    return cg.b_.CreateAdd(cg.b_.CreateMul(cg.emit_as(args[0], dt), cg.emit_as(args[1], dt)), cg.emit_as(args[2], dt));
                  return cg.b_.CreateIntrinsic(llvm::Intrinsic::fma, {cg.llvm_type(dt)},
                                               {cg.emit_as(args[0], dt), cg.emit_as(args[1], dt), cg.emit_as(args[2], dt)});
                }};
    t["likely"] = {1, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* { return cg.emit_as(op->args[0], op->dtype); }};
    t["isnan"] = {1, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                    llvm::Value* x = cg.emit(op->args[0]);
                    return op->args[0].dtype().is_float() ? cg.fcmp(llvm::CmpInst::FCMP_UNO, x, x)
                                                          : llvm::ConstantInt::getFalse(cg.llvm_type(op->dtype));
                  }};
    for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"}) {
      t[name] = {2, [n = std::string(name)](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                   DataType dt = op->dtype;
                   llvm::Value* a = cg.emit_as(op->args[0], dt);
                   llvm::Value* b = cg.emit_as(op->args[1], dt);
                   if (n == "bitwise_and") return cg.b_.CreateAnd(a, b);
                   if (n == "bitwise_or") return cg.b_.CreateOr(a, b);
                   if (n == "bitwise_xor") return cg.b_.CreateXor(a, b);
                   if (n == "shift_left") return cg.b_.CreateShl(a, b);
                   return dt.is_int() ? cg.b_.CreateAShr(a, b) : cg.b_.CreateLShr(a, b);
                 }};
    }
    t["bitwise_not"] = {1, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                          return cg.b_.CreateNot(cg.emit_as(op->args[0], op->dtype));
                        }};
    t["reinterpret"] = {1, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                          return cg.b_.CreateBitCast(cg.emit(op->args[0]), cg.llvm_type(op->dtype));
                        }};
    t[te::intrin::kAddressOf] = {1, [](CodeGenLLVM& cg, const te::CallNode* op) -> llvm::Value* {
                                   const auto* load = op->args[0].as<te::LoadNode>();
                                   LOOM_CHECK(load && load->index.dtype().is_scalar(),
                                              "codegen: {} takes one scalar load, got {} in function '{}'", op->name,
                                              te::to_string(op->args[0]), cg.func_name_);
                                   llvm::Value* base = cg.buffer_ptr(load->buffer_var);
                                   llvm::Value* i = cg.emit_as(load->index, DataType::Int(64));
                                   return cg.b_.CreateInBoundsGEP(cg.mem_type(load->dtype.element_of()), base, i);
                                 }};
    t[te::intrin::kDotU8S8S32] = {3, [](CodeGenLLVM& cg, const te::CallNode* op) { return cg.emit_dot_u8s8s32(op); }};

    // ---- packed-API intrinsics on DLTensor handles
    auto handle = [](CodeGenLLVM& cg, const te::CallNode* op) {
      llvm::Value* h = cg.emit(op->args[0]);
      LOOM_CHECK(h->getType()->isPointerTy(), "codegen: {} expects a handle, got {} in function '{}'", op->name,
                 op->args[0].dtype().str(), cg.func_name_);
      return h;
    };
    auto result = [](CodeGenLLVM& cg, const te::CallNode* op, llvm::Value* v, bool is_signed) -> llvm::Value* {
      llvm::Type* rt = cg.llvm_type(op->dtype);
      if (v->getType() == rt) return v;
      if (rt->isIntegerTy() && v->getType()->isIntegerTy()) return cg.b_.CreateIntCast(v, rt, is_signed);
      fail("codegen: {} cannot return {} in function '{}'", op->name, op->dtype.str(), cg.func_name_);
    };
    t["loom.handle_is_null"] = {1, [=](CodeGenLLVM& cg, const te::CallNode* op) {
                                  return result(cg, op, cg.b_.CreateIsNull(handle(cg, op)), false);
                                }};
    t["loom.handle_to_int"] = {1, [=](CodeGenLLVM& cg, const te::CallNode* op) {
                                 return result(cg, op, cg.b_.CreatePtrToInt(handle(cg, op), cg.i64_), false);
                               }};
    t["loom.dltensor_data"] = {1, [=](CodeGenLLVM& cg, const te::CallNode* op) {
                                 return cg.emit_dltensor_field(handle(cg, op), {kData}, cg.ptr_);
                               }};
    // Integer fields of the DLTensor: (name, field, sub-field or -1, width in memory, signed).
    struct Field {
      const char* name;
      unsigned field;
      int sub;
      unsigned bits;
      bool is_signed;
    };
    static const Field fields[] = {
        {"loom.dltensor_ndim", kNDim, -1, 32, true},
        {"loom.dltensor_device_type", kDevice, 0, 32, true},
        {"loom.dltensor_dtype_code", kDType, 0, 8, false},
        {"loom.dltensor_dtype_bits", kDType, 1, 8, false},
        {"loom.dltensor_dtype_lanes", kDType, 2, 16, false},
        {"loom.dltensor_byte_offset", kByteOffset, -1, 64, false},
    };
    for (const Field& f : fields) {
      t[f.name] = {1, [=](CodeGenLLVM& cg, const te::CallNode* op) {
                     llvm::Value* h = handle(cg, op);
                     llvm::Type* ty = llvm::IntegerType::get(cg.ctx_, f.bits);
                     llvm::Value* v = f.sub < 0 ? cg.emit_dltensor_field(h, {f.field}, ty)
                                                : cg.emit_dltensor_field(h, {f.field, unsigned(f.sub)}, ty);
                     return result(cg, op, v, f.is_signed);
                   }};
    }
    t["loom.dltensor_strides_is_null"] = {1, [=](CodeGenLLVM& cg, const te::CallNode* op) {
                                            llvm::Value* s = cg.emit_dltensor_field(handle(cg, op), {kStrides}, cg.ptr_);
                                            return result(cg, op, cg.b_.CreateIsNull(s), false);
                                          }};
    for (const char* name : {"loom.dltensor_shape", "loom.dltensor_stride"}) {
      t[name] = {2, [=](CodeGenLLVM& cg, const te::CallNode* op) {
                   llvm::Value* h = handle(cg, op);
                   llvm::Value* arr = cg.emit_dltensor_field(h, {op->name == "loom.dltensor_shape" ? kShape : kStrides}, cg.ptr_);
                   llvm::Value* i = cg.emit_as(op->args[1], DataType::Int(64));
                   return result(cg, op, cg.b_.CreateLoad(cg.i64_, cg.b_.CreateInBoundsGEP(cg.i64_, arr, i)), true);
                 }};
    }
    return t;
  }();
  return table;
}

}  // namespace loom::codegen

namespace loom::codegen {

std::vector<std::string> llvm_lowered_intrinsics() { return CodeGenLLVM::lowered_intrinsic_names(); }

}  // namespace loom::codegen
