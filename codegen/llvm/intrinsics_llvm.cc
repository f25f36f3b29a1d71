// How CodeGenLLVM lowers intrinsic calls (te::CallNode).
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen_llvm_internal.h"

namespace loom::codegen {

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

llvm::Value* CodeGenLLVM::emit_call(const te::CallNode* op) {
  const std::string& n = op->name;
  const auto& args = op->args;
  auto want = [&](size_t k) {
    LOOM_CHECK(args.size() == k, "codegen: intrinsic '{}' takes {} argument(s), got {} in function '{}'", n, k, args.size(), func_name_);
  };
  DataType t = op->dtype;
  static const std::unordered_map<std::string, llvm::Intrinsic::ID> unary = {
      {"exp", llvm::Intrinsic::exp},     {"log", llvm::Intrinsic::log},     {"sqrt", llvm::Intrinsic::sqrt},
      {"floor", llvm::Intrinsic::floor}, {"ceil", llvm::Intrinsic::ceil},   {"round", llvm::Intrinsic::round},
      {"trunc", llvm::Intrinsic::trunc}, {"exp2", llvm::Intrinsic::exp2},   {"log2", llvm::Intrinsic::log2},
      {"sin", llvm::Intrinsic::sin},     {"cos", llvm::Intrinsic::cos},
  };
  if (auto it = unary.find(n); it != unary.end()) {
    want(1);
    if (!t.is_float()) fail("codegen: {} of a non-float value ({}) in function '{}'", n, t.str(), func_name_);
    return b_.CreateUnaryIntrinsic(it->second, emit_as(args[0], t));
  }
  if (n == "fabs") {
    want(1);
    llvm::Value* x = emit_as(args[0], t);
    if (t.is_float()) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    if (t.is_uint() || t.is_bool()) return x;
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
  }
  if (n == "tanh" || n == "erf") {
    want(1);
    return emit_libm(n, t, emit_as(args[0], t));
  }
  if (n == "sigmoid") {
    want(1);
    LOOM_CHECK(t.is_float(), "codegen: sigmoid of a non-float value ({}) in function '{}'", t.str(), func_name_);
    llvm::Value* x = emit_as(args[0], t);
    llvm::Value* one = llvm::ConstantFP::get(llvm_type(t), 1.0);
    llvm::Value* e = b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b_.CreateFNeg(x));
    return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
  }
  if (n == "pow") {
    want(2);
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, emit_as(args[0], t), emit_as(args[1], t));
  }
  if (n == "fma") {
    want(3);
    if (!t.is_float()) return b_.CreateAdd(b_.CreateMul(emit_as(args[0], t), emit_as(args[1], t)), emit_as(args[2], t));
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {llvm_type(t)}, {emit_as(args[0], t), emit_as(args[1], t), emit_as(args[2], t)});
  }
  if (n == "likely") {
    want(1);
    return emit_as(args[0], t);
  }
  if (n == "isnan") {
    want(1);
    llvm::Value* x = emit(args[0]);
    return args[0].dtype().is_float() ? b_.CreateFCmpUNO(x, x) : llvm::ConstantInt::getFalse(llvm_type(t));
  }
  if (n == "bitwise_and" || n == "bitwise_or" || n == "bitwise_xor" || n == "shift_left" || n == "shift_right") {
    want(2);
    llvm::Value* a = emit_as(args[0], t);
    llvm::Value* b = emit_as(args[1], t);
    if (n == "bitwise_and") return b_.CreateAnd(a, b);
    if (n == "bitwise_or") return b_.CreateOr(a, b);
    if (n == "bitwise_xor") return b_.CreateXor(a, b);
    if (n == "shift_left") return b_.CreateShl(a, b);
    return t.is_int() ? b_.CreateAShr(a, b) : b_.CreateLShr(a, b);
  }
  if (n == "bitwise_not") {
    want(1);
    return b_.CreateNot(emit_as(args[0], t));
  }
  if (n == "reinterpret") {
    want(1);
    return b_.CreateBitCast(emit(args[0]), llvm_type(t));
  }

  // ---- packed-API intrinsics on DLTensor handles
  if (n.starts_with("loom.")) {
    auto handle = [&]() {
      llvm::Value* h = emit(args[0]);
      LOOM_CHECK(h->getType()->isPointerTy(), "codegen: {} expects a handle, got {} in function '{}'", n, args[0].dtype().str(), func_name_);
      return h;
    };
    auto result = [&](llvm::Value* v, bool is_signed) -> llvm::Value* {
      llvm::Type* rt = llvm_type(t);
      if (v->getType() == rt) return v;
      if (rt->isIntegerTy() && v->getType()->isIntegerTy()) return b_.CreateIntCast(v, rt, is_signed);
      fail("codegen: {} cannot return {} in function '{}'", n, t.str(), func_name_);
    };
    if (n == "loom.handle_is_null") {
      want(1);
      return result(b_.CreateIsNull(handle()), false);
    }
    if (n == "loom.handle_to_int") {
      want(1);
      return result(b_.CreatePtrToInt(handle(), i64_), false);
    }
    if (n == "loom.dltensor_data") {
      want(1);
      return emit_dltensor_field(handle(), {kData}, ptr_);
    }
    if (n == "loom.dltensor_ndim") {
      want(1);
      return result(emit_dltensor_field(handle(), {kNDim}, i32_), true);
    }
    if (n == "loom.dltensor_device_type") {
      want(1);
      return result(emit_dltensor_field(handle(), {kDevice, 0}, i32_), true);
    }
    if (n == "loom.dltensor_dtype_code") {
      want(1);
      return result(emit_dltensor_field(handle(), {kDType, 0}, i8_), false);
    }
    if (n == "loom.dltensor_dtype_bits") {
      want(1);
      return result(emit_dltensor_field(handle(), {kDType, 1}, i8_), false);
    }
    if (n == "loom.dltensor_dtype_lanes") {
      want(1);
      return result(emit_dltensor_field(handle(), {kDType, 2}, i16_), false);
    }
    if (n == "loom.dltensor_byte_offset") {
      want(1);
      return result(emit_dltensor_field(handle(), {kByteOffset}, i64_), false);
    }
    if (n == "loom.dltensor_strides_is_null") {
      want(1);
      return result(b_.CreateIsNull(emit_dltensor_field(handle(), {kStrides}, ptr_)), false);
    }
    if (n == "loom.dltensor_shape" || n == "loom.dltensor_stride") {
      want(2);
      llvm::Value* h = handle();
      llvm::Value* arr = emit_dltensor_field(h, {n == "loom.dltensor_shape" ? kShape : kStrides}, ptr_);
      llvm::Value* i = emit_as(args[1], DataType::Int(64));
      return result(b_.CreateLoad(i64_, b_.CreateInBoundsGEP(i64_, arr, i)), true);
    }
  }
  fail("codegen: unknown intrinsic '{}' in function '{}'", n, func_name_);
}

}  // namespace loom::codegen
