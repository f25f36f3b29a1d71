// Loop IR → LLVM IR for CPUs: expressions, statements, loads and stores. The host side
// (function entries, packed entry, parallel outlining, runtime calls) is in
// codegen_llvm_host.cc, the intrinsics in intrinsics_llvm.cc.
#include "codegen_llvm.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Attributes.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Support/Alignment.h>

#include "codegen_llvm_internal.h"
#include "loom/runtime/c_runtime_api.h"

namespace loom::codegen {

namespace {

/// Collects the buffer variables of every Allocate in a statement.
void collect_allocations(const Stmt& s, std::vector<const VarNode*>* out) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::LetStmt: return collect_allocations(s.as<lowering::LetStmtNode>()->body, out);
    case StmtKind::AttrStmt: return collect_allocations(s.as<lowering::AttrStmtNode>()->body, out);
    case StmtKind::AssertStmt: return collect_allocations(s.as<lowering::AssertStmtNode>()->body, out);
    case StmtKind::Allocate: {
      auto* op = s.as<lowering::AllocateNode>();
      out->push_back(op->buffer_var.get());
      return collect_allocations(op->body, out);
    }
    case StmtKind::For: return collect_allocations(s.as<lowering::ForNode>()->body, out);
    case StmtKind::While: return collect_allocations(s.as<lowering::WhileNode>()->body, out);
    case StmtKind::IfThenElse: {
      auto* op = s.as<lowering::IfThenElseNode>();
      collect_allocations(op->then_case, out);
      return collect_allocations(op->else_case, out);
    }
    case StmtKind::Seq:
      for (const auto& c : s.as<lowering::SeqStmtNode>()->seq) collect_allocations(c, out);
      return;
    default: return;
  }
}

}  // namespace

void CodeGenLLVM::make_alias_scopes(const lowering::LoweredFunc& f) {
  alias_scope_.clear();
  noalias_.clear();
  std::vector<const VarNode*> bufs;
  for (const auto& a : f.args)
    if (a.data.defined()) bufs.push_back(a.data.get());
  collect_allocations(f.body, &bufs);
  if (bufs.size() < 2) return;
  llvm::MDBuilder md(ctx_);
  llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(f.name);
  std::vector<std::pair<const VarNode*, llvm::MDNode*>> scopes;
  for (const VarNode* v : bufs) {
    if (alias_scope_.count(v)) continue;
    llvm::MDNode* s = md.createAnonymousAliasScope(domain, v->name);
    alias_scope_[v] = s;
    scopes.push_back({v, s});
  }
  for (const auto& [v, s] : scopes) {
    std::vector<llvm::Metadata*> others;
    for (const auto& [w, t] : scopes)
      if (w != v) others.push_back(t);
    noalias_[v] = llvm::MDNode::get(ctx_, others);
  }
}

// ------------------------------------------------------------------ expressions

llvm::Value* CodeGenLLVM::cast(DataType from, DataType to, llvm::Value* v) {
  if (from == to) return v;
  if (from.lanes() != to.lanes()) {
    LOOM_CHECK(from.lanes() == 1, "codegen: cannot cast {} to {} in function '{}' (lane counts differ)", from.str(), to.str(), func_name_);
    return splat(to.lanes(), cast(from, to.element_of(), v));
  }
  llvm::Type* t = llvm_type(to);
  if (to.is_bool()) {
    if (from.is_float()) return fcmp(llvm::CmpInst::FCMP_UNE, v, llvm::Constant::getNullValue(v->getType()));
    if (from.is_handle()) return b_.CreateIsNotNull(v);
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_bool()) {
    if (to.is_float()) return b_.CreateUIToFP(v, t);
    if (to.is_handle()) return b_.CreateIntToPtr(b_.CreateZExt(v, i64_), t);
    return b_.CreateZExt(v, t);
  }
  if (from.is_handle() || to.is_handle()) {
    if (from.is_handle() && to.is_handle()) return v;
    if (from.is_handle()) return b_.CreatePtrToInt(v, t);
    LOOM_CHECK(from.is_integer(), "codegen: cannot cast {} to a handle in function '{}'", from.str(), func_name_);
    return b_.CreateIntToPtr(v, t);
  }
  if (from.is_integer() && to.is_integer()) return b_.CreateIntCast(v, t, from.is_int());
  if (from.is_integer() && to.is_float()) return from.is_int() ? b_.CreateSIToFP(v, t) : b_.CreateUIToFP(v, t);
  if (from.is_float() && to.is_integer()) return to.is_int() ? b_.CreateFPToSI(v, t) : b_.CreateFPToUI(v, t);
  if (from.is_float() && to.is_float()) return b_.CreateFPCast(v, t);
  fail("codegen: cannot cast {} to {} in function '{}'", from.str(), to.str(), func_name_);
}

llvm::Value* CodeGenLLVM::emit_binary(ExprKind k, DataType t, const Expr& ea, const Expr& eb) {
  llvm::Value* a = emit_as(ea, t);
  llvm::Value* b = emit_as(eb, t);
  bool fl = t.is_float();
  bool sgn = t.is_int();
  switch (k) {
    case ExprKind::Add: return fl ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, sgn);
    case ExprKind::Sub: return fl ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, sgn);
    case ExprKind::Mul: return fl ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, sgn);
    case ExprKind::Div: return fl ? b_.CreateFDiv(a, b) : sgn ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
    case ExprKind::Mod: return fl ? b_.CreateFRem(a, b) : sgn ? b_.CreateSRem(a, b) : b_.CreateURem(a, b);
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: {
      if (fl) {
        llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
        return k == ExprKind::FloorDiv ? q : b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      if (!sgn) return k == ExprKind::FloorDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
      // Truncating quotient and remainder, corrected when the remainder is non-zero and
      // its sign differs from the divisor's.
      llvm::Value* q = b_.CreateSDiv(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
      llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
      if (k == ExprKind::FloorDiv) return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
      return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
    }
    case ExprKind::Min:
      if (fl) return b_.CreateSelect(fcmp(llvm::CmpInst::FCMP_OLT, a, b), a, b);
      return b_.CreateBinaryIntrinsic(sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case ExprKind::Max:
      if (fl) return b_.CreateSelect(fcmp(llvm::CmpInst::FCMP_OGT, a, b), a, b);
      return b_.CreateBinaryIntrinsic(sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    case ExprKind::And: return b_.CreateAnd(a, b);
    case ExprKind::Or: return b_.CreateOr(a, b);
    default: break;
  }
  LOOM_ICHECK(false);
}

llvm::Value* CodeGenLLVM::fcmp(llvm::CmpInst::Predicate p, llvm::Value* a, llvm::Value* b) {
  if (a->getType()->getScalarType()->isHalfTy()) {
    llvm::Type* ft = a->getType()->getWithNewType(b_.getFloatTy());
    auto widen = [&](llvm::Value* v) {
      return b_.CreateUnaryIntrinsic(llvm::Intrinsic::arithmetic_fence, b_.CreateFPExt(v, ft));
    };
    a = widen(a);
    b = widen(b);
  }
  return b_.CreateFCmp(p, a, b);
}

llvm::Value* CodeGenLLVM::emit_compare(ExprKind k, const Expr& ea, const Expr& eb) {
  DataType t = ea.dtype();
  if (eb.dtype().lanes() > t.lanes()) t = t.with_lanes(eb.dtype().lanes());
  llvm::Value* a = emit_as(ea, t);
  llvm::Value* b = emit_as(eb, t);
  if (t.is_float()) {
    switch (k) {
      case ExprKind::EQ: return fcmp(llvm::CmpInst::FCMP_OEQ, a, b);
      case ExprKind::NE: return fcmp(llvm::CmpInst::FCMP_UNE, a, b);
      case ExprKind::LT: return fcmp(llvm::CmpInst::FCMP_OLT, a, b);
      case ExprKind::LE: return fcmp(llvm::CmpInst::FCMP_OLE, a, b);
      case ExprKind::GT: return fcmp(llvm::CmpInst::FCMP_OGT, a, b);
      case ExprKind::GE: return fcmp(llvm::CmpInst::FCMP_OGE, a, b);
      default: break;
    }
  }
  bool sgn = t.is_int();
  switch (k) {
    case ExprKind::EQ: return b_.CreateICmpEQ(a, b);
    case ExprKind::NE: return b_.CreateICmpNE(a, b);
    case ExprKind::LT: return sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case ExprKind::LE: return sgn ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case ExprKind::GT: return sgn ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case ExprKind::GE: return sgn ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    default: break;
  }
  LOOM_ICHECK(false);
}

llvm::Value* CodeGenLLVM::emit_dltensor_field(llvm::Value* h, std::initializer_list<unsigned> path, llvm::Type* ty) {
  std::vector<llvm::Value*> idx{b_.getInt32(0)};
  for (unsigned p : path) idx.push_back(b_.getInt32(p));
  llvm::Value* p = b_.CreateInBoundsGEP(dltensor_, h, idx);
  return b_.CreateLoad(ty, p);
}

llvm::Value* CodeGenLLVM::emit_branches(llvm::Value* cond, const std::function<llvm::Value*()>& then,
                                        const std::function<llvm::Value*()>& otherwise, const char* name) {
  auto* then_bb = llvm::BasicBlock::Create(ctx_, std::string(name) + ".then", cur_->fn);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, std::string(name) + ".else", cur_->fn);
  auto* end_bb = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", cur_->fn);
  b_.CreateCondBr(cond, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  llvm::Value* a = then();
  llvm::BasicBlock* a_end = b_.GetInsertBlock();
  b_.CreateBr(end_bb);
  b_.SetInsertPoint(else_bb);
  llvm::Value* b = otherwise();
  llvm::BasicBlock* b_end = b_.GetInsertBlock();
  b_.CreateBr(end_bb);
  b_.SetInsertPoint(end_bb);
  llvm::PHINode* phi = b_.CreatePHI(a->getType(), 2);
  phi->addIncoming(a, a_end);
  phi->addIncoming(b, b_end);
  return phi;
}

llvm::Value* CodeGenLLVM::emit_strided_dense_load(const te::LoadNode* op, const te::RampNode* ramp, int64_t stride) {
  llvm::Type* mt = mem_type(op->dtype.element_of());
  llvm::Type* vt = mem_type(op->dtype);
  const llvm::Align align = element_align(op->dtype);
  const int64_t lanes = op->dtype.lanes();
  const int64_t span = (lanes - 1) * stride + 1;
  const int64_t chunks = (span + lanes - 1) / lanes;
  llvm::Value* p = b_.CreateInBoundsGEP(mt, buffer_ptr(op->buffer_var), emit(ramp->base));
  llvm::SmallVector<llvm::Value*, 4> parts;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t at = c + 1 < chunks ? c * lanes : span - lanes;
    llvm::Instruction* l = b_.CreateAlignedLoad(vt, b_.CreateConstInBoundsGEP1_64(mt, p, uint64_t(at)), align);
    annotate(l, op->buffer_var.get());
    parts.push_back(l);
  }
  llvm::SmallVector<int, 16> pick;
  for (int64_t i = 0; i < lanes; ++i) {
    const int64_t e = i * stride;
    pick.push_back(int(e < (chunks - 1) * lanes ? e : (chunks - 1) * lanes + e - (span - lanes)));
  }
  return b_.CreateShuffleVector(llvm::concatenateVectors(b_, parts), pick);
}

llvm::Instruction* CodeGenLLVM::emit_gather(const te::LoadNode* op, llvm::Value* mask) {
  llvm::Type* mt = mem_type(op->dtype.element_of());
  llvm::Type* vt = mem_type(op->dtype);
  const llvm::Align align = element_align(op->dtype);
  llvm::Value* idx = emit(op->index);
  LOOM_CHECK(idx->getType()->isVectorTy(), "codegen: vector load of {} from '{}' with a scalar index in function '{}'",
             op->dtype.str(), op->buffer_var.name(), func_name_);
  llvm::Value* ptrs = b_.CreateInBoundsGEP(mt, buffer_ptr(op->buffer_var), idx);
  llvm::Instruction* g = b_.CreateMaskedGather(vt, ptrs, align, mask, llvm::Constant::getNullValue(vt));
  annotate(g, op->buffer_var.get());
  return g;
}

llvm::Value* CodeGenLLVM::emit_load(const te::LoadNode* op) {
  DataType t = op->dtype;
  DataType et = t.element_of();
  llvm::Type* mt = mem_type(et);
  llvm::Value* base = buffer_ptr(op->buffer_var);
  const llvm::Align align = element_align(t);
  int lanes = t.lanes();
  if (lanes == 1) {
    auto load = [&] {
      llvm::Instruction* l = b_.CreateAlignedLoad(mt, b_.CreateInBoundsGEP(mt, base, emit(op->index)), align);
      annotate(l, op->buffer_var.get());
      return l;
    };
    if (!op->predicate.defined()) return from_mem(t, load());
    // A predicated scalar: load only when the predicate holds, else zero.
    return from_mem(t, emit_branches(emit_as(op->predicate, DataType::Bool()), load,
                                     [&] { return llvm::Constant::getNullValue(mt); }, "pred_load"));
  }
  llvm::Type* vt = mem_type(t);
  llvm::Value* mask = op->predicate.defined() ? emit(op->predicate) : nullptr;
  const auto* ramp = op->index.as<te::RampNode>();
  const std::optional<int64_t> stride = ramp ? const_int(ramp->stride) : std::nullopt;
  const lowering::VectorAccess access = lowering::classify_vector_load(*op);
  if (access == lowering::VectorAccess::kDense) {
    llvm::Value* p = b_.CreateInBoundsGEP(mt, base, emit(ramp->base));
    llvm::Instruction* l = nullptr;
    if (mask) l = b_.CreateMaskedLoad(vt, p, align, mask, llvm::Constant::getNullValue(vt));
    else l = b_.CreateAlignedLoad(vt, p, align);
    annotate(l, op->buffer_var.get());
    return from_mem(t, l);
  }
  if (access == lowering::VectorAccess::kStrided) {
    auto dense = [&] { return emit_strided_dense_load(op, ramp, *stride); };
    if (!mask) return from_mem(t, dense());
    // Predicated (a padded border, a partial tile): the dense loads where every lane holds,
    // as in the interior of an image; a masked gather where some lane does not.
    return from_mem(t, emit_branches(b_.CreateAndReduce(mask), dense, [&] { return emit_gather(op, mask); },
                                     "strided"));
  }
  if (const auto* bc = op->index.as<te::BroadcastNode>(); access == lowering::VectorAccess::kBroadcast) {
    llvm::Instruction* l = b_.CreateAlignedLoad(mt, b_.CreateInBoundsGEP(mt, base, emit(bc->value)), align);
    annotate(l, op->buffer_var.get());
    return from_mem(t, splat(lanes, l));
  }
  return from_mem(t, emit_gather(op, mask ? mask : all_true(lanes)));
}

llvm::Value* CodeGenLLVM::emit(const Expr& e) {
  LOOM_CHECK(e.defined(), "codegen: undefined expression in function '{}'", func_name_);
  DataType t = e.dtype();
  switch (e.kind()) {
    case ExprKind::IntImm: {
      auto* op = e.as<te::IntImmNode>();
      if (t.is_bool()) return llvm::ConstantInt::get(llvm_type(t), op->value != 0);
      if (t.is_handle())
        return op->value == 0 ? llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr_))
                              : b_.CreateIntToPtr(b_.getInt64(uint64_t(op->value)), ptr_);
      if (t.is_float()) return llvm::ConstantFP::get(llvm_type(t), double(op->value));
      return llvm::ConstantInt::get(llvm_type(t), uint64_t(op->value), t.is_int());
    }
    case ExprKind::FloatImm: {
      auto* op = e.as<te::FloatImmNode>();
      if (!t.is_float()) return cast(DataType::Float(64), t, llvm::ConstantFP::get(b_.getDoubleTy(), op->value));
      return llvm::ConstantFP::get(llvm_type(t), op->value);
    }
    case ExprKind::StringImm: return b_.CreateGlobalString(e.as<te::StringImmNode>()->value, "str");
    case ExprKind::Var: return var_value(e.as<VarNode>());
#define LOOM_BIN(K)                                                   \
  case ExprKind::K: {                                                 \
    auto* op = static_cast<const te::BinaryNode<ExprKind::K>*>(e.get()); \
    return emit_binary(ExprKind::K, t, op->a, op->b);                 \
  }
      LOOM_BIN(Add) LOOM_BIN(Sub) LOOM_BIN(Mul) LOOM_BIN(Div) LOOM_BIN(Mod) LOOM_BIN(FloorDiv) LOOM_BIN(FloorMod)
      LOOM_BIN(Min) LOOM_BIN(Max) LOOM_BIN(And) LOOM_BIN(Or)
#undef LOOM_BIN
#define LOOM_CMP(K)                                                   \
  case ExprKind::K: {                                                 \
    auto* op = static_cast<const te::BinaryNode<ExprKind::K>*>(e.get()); \
    return emit_compare(ExprKind::K, op->a, op->b);                   \
  }
      LOOM_CMP(EQ) LOOM_CMP(NE) LOOM_CMP(LT) LOOM_CMP(LE) LOOM_CMP(GT) LOOM_CMP(GE)
#undef LOOM_CMP
    case ExprKind::Not: return b_.CreateNot(emit_as(e.as<te::NotNode>()->a, t));
    case ExprKind::Select: {
      auto* op = e.as<te::SelectNode>();
      llvm::Value* c = emit(op->cond);
      if (!op->cond.dtype().is_bool()) c = cast(op->cond.dtype(), DataType::Bool(op->cond.dtype().lanes()), c);
      return b_.CreateSelect(c, emit_as(op->true_value, t), emit_as(op->false_value, t));
    }
    case ExprKind::Cast: {
      auto* op = e.as<te::CastNode>();
      return cast(op->value.dtype(), t, emit(op->value));
    }
    case ExprKind::Call: return emit_call(e.as<te::CallNode>());
    case ExprKind::Let: {
      auto* op = e.as<te::LetNode>();
      std::vector<std::pair<const VarNode*, llvm::Value*>> saved;
      bind(op->var.get(), emit(op->value), &saved);
      llvm::Value* v = emit(op->body);
      unbind(&saved);
      return v;
    }
    case ExprKind::Load: return emit_load(e.as<te::LoadNode>());
    case ExprKind::Ramp: {
      auto* op = e.as<te::RampNode>();
      DataType et = t.element_of();
      llvm::Value* base = emit_as(op->base, et);
      llvm::Value* stride = emit_as(op->stride, et);
      std::vector<llvm::Constant*> steps;
      for (int i = 0; i < op->lanes; ++i)
        steps.push_back(et.is_float() ? llvm::ConstantFP::get(scalar_type(et), double(i))
                                      : llvm::ConstantInt::get(scalar_type(et), uint64_t(i)));
      llvm::Value* iota = llvm::ConstantVector::get(steps);
      if (et.is_float())
        return b_.CreateFAdd(splat(op->lanes, base), b_.CreateFMul(splat(op->lanes, stride), iota));
      return b_.CreateAdd(splat(op->lanes, base), b_.CreateMul(splat(op->lanes, stride), iota));
    }
    case ExprKind::Broadcast: {
      auto* op = e.as<te::BroadcastNode>();
      return splat(op->lanes, emit_as(op->value, t.element_of()));
    }
    case ExprKind::ProducerLoad:
      fail("codegen: function '{}' still reads a tensor through ProducerLoad (storage_flatten has not run)", func_name_);
    case ExprKind::Reduce:
      fail("codegen: function '{}' still contains a Reduce expression (it was not lowered)", func_name_);
  }
  LOOM_ICHECK(false);
}

// ------------------------------------------------------------------ statements

void CodeGenLLVM::emit_store(const lowering::StoreNode* op) {
  DataType t = op->value.dtype();
  DataType et = t.element_of();
  llvm::Type* mt = mem_type(et);
  llvm::Value* base = buffer_ptr(op->buffer_var);
  llvm::Value* v = to_mem(t, emit(op->value));
  const llvm::Align align = element_align(t);
  int lanes = t.lanes();
  llvm::Instruction* inst = nullptr;
  if (lanes == 1 && op->predicate.defined()) {
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "pred_store", cur_->fn);
    auto* end_bb = llvm::BasicBlock::Create(ctx_, "pred_store_end", cur_->fn);
    b_.CreateCondBr(emit_as(op->predicate, DataType::Bool()), then_bb, end_bb);
    b_.SetInsertPoint(then_bb);
    inst = b_.CreateAlignedStore(v, b_.CreateInBoundsGEP(mt, base, emit(op->index)), align);
    annotate(inst, op->buffer_var.get());
    b_.CreateBr(end_bb);
    b_.SetInsertPoint(end_bb);
    return;
  }
  if (lanes == 1) {
    llvm::Value* p = b_.CreateInBoundsGEP(mt, base, emit(op->index));
    inst = b_.CreateAlignedStore(v, p, align);
  } else {
    const auto* ramp = op->index.as<te::RampNode>();
    if (lowering::classify_vector_store(*op) == lowering::VectorAccess::kDense) {
      llvm::Value* p = b_.CreateInBoundsGEP(mt, base, emit(ramp->base));
      if (op->predicate.defined()) inst = b_.CreateMaskedStore(v, p, align, emit(op->predicate));
      else inst = b_.CreateAlignedStore(v, p, align);
    } else {
      llvm::Value* idx = emit(op->index);
      LOOM_CHECK(idx->getType()->isVectorTy(), "codegen: vector store of {} to '{}' with a scalar index in function '{}'", t.str(), op->buffer_var.name(), func_name_);
      llvm::Value* ptrs = b_.CreateInBoundsGEP(mt, base, idx);
      llvm::Value* mask = op->predicate.defined() ? emit(op->predicate) : all_true(lanes);
      inst = b_.CreateMaskedScatter(v, ptrs, align, mask);
    }
  }
  annotate(inst, op->buffer_var.get());
}

void CodeGenLLVM::emit_allocate(const lowering::AllocateNode* op) {
  llvm::Type* et = mem_type(op->dtype);
  uint64_t esize = dl_.getTypeAllocSize(et);
  std::optional<int64_t> count = 1;
  for (const auto& e : op->extents) {
    auto c = const_int(e);
    if (!c) { count.reset(); break; }
    *count *= *c;
  }
  LOOM_CHECK(!count || *count >= 0, "codegen: buffer '{}' in function '{}' has a negative size", op->buffer_var.name(), func_name_);
  std::vector<std::pair<const VarNode*, llvm::Value*>> saved;
  if (count && uint64_t(*count) * esize <= kMaxStackAllocBytes) {
    llvm::AllocaInst* a = entry_alloca(llvm::ArrayType::get(et, uint64_t(*count)), 64, op->buffer_var.name());
    bind(op->buffer_var.get(), a, &saved);
    emit(op->body);
    unbind(&saved);
    return;
  }
  llvm::Value* n = b_.getInt64(1);
  for (const auto& e : op->extents) n = b_.CreateMul(n, emit_as(e, DataType::Int(64)));
  llvm::Value* bytes = b_.CreateMul(n, b_.getInt64(esize));
  llvm::Value* p = b_.CreateCall(rt_workspace_alloc(), {bytes}, op->buffer_var.name());
  std::string msg = fmt::format("{}: could not allocate the workspace of buffer '{}'", func_name_, op->buffer_var.name());
  emit_check(b_.CreateIsNotNull(p), b_.CreateGlobalString(msg, "alloc_msg"), LOOM_ERR_RUNTIME, "alloc");
  cur_->workspaces.push_back(p);
  bind(op->buffer_var.get(), p, &saved);
  emit(op->body);
  unbind(&saved);
  cur_->workspaces.pop_back();
  b_.CreateCall(rt_workspace_free(), {p});
}

void CodeGenLLVM::emit_serial_loop(const te::Var& var, llvm::Value* begin, llvm::Value* end, const Stmt& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for_" + var.name(), cur_->fn);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "for_body_" + var.name(), cur_->fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for_end_" + var.name(), cur_->fn);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* phi = b_.CreatePHI(begin->getType(), 2, var.name());
  phi->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(phi, end), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  std::vector<std::pair<const VarNode*, llvm::Value*>> saved;
  bind(var.get(), phi, &saved);
  emit(body);
  unbind(&saved);
  llvm::Value* next = b_.CreateAdd(phi, llvm::ConstantInt::get(phi->getType(), 1), "", false, true);
  phi->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

void CodeGenLLVM::emit_for(const lowering::ForNode* op) {
  DataType vt = op->loop_var.dtype();
  LOOM_CHECK(vt.is_integer() && vt.is_scalar(), "codegen: loop variable '{}' in function '{}' has type {} (expected an integer)",
             op->loop_var.name(), func_name_, vt.str());
  if (op->for_kind == lowering::ForKind::kThreadBinding)
    fail("codegen: loop '{}' in function '{}' is bound to GPU thread '{}', which a CPU target cannot run", op->loop_var.name(),
         func_name_, op->thread_tag);
  if (op->for_kind == lowering::ForKind::kParallel && !cur_->in_parallel) return emit_parallel_for(op);
  llvm::Value* begin = emit_as(op->min, vt);
  llvm::Value* end = b_.CreateAdd(begin, emit_as(op->extent, vt), "", false, vt.is_int());
  emit_serial_loop(op->loop_var, begin, end, op->body);
}

void CodeGenLLVM::emit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::LetStmt: {
      auto* op = s.as<lowering::LetStmtNode>();
      std::vector<std::pair<const VarNode*, llvm::Value*>> saved;
      llvm::Value* v = cast(op->value.dtype(), op->var.dtype(), emit(op->value));
      if (llvm::isa<llvm::Instruction>(v) && !v->hasName()) v->setName(op->var.name());
      bind(op->var.get(), v, &saved);
      emit(op->body);
      unbind(&saved);
      return;
    }
    case StmtKind::AttrStmt: return emit(s.as<lowering::AttrStmtNode>()->body);
    case StmtKind::AssertStmt: {
      auto* op = s.as<lowering::AssertStmtNode>();
      llvm::Value* c = emit(op->condition);
      if (!op->condition.dtype().is_bool()) c = cast(op->condition.dtype(), DataType::Bool(op->condition.dtype().lanes()), c);
      if (c->getType()->isVectorTy()) c = b_.CreateAndReduce(c);
      emit_check(c, b_.CreateGlobalString(op->message, "assert_msg"), LOOM_ERR_ARGUMENT, "assert");
      return emit(op->body);
    }
    case StmtKind::Store: return emit_store(s.as<lowering::StoreNode>());
    case StmtKind::Allocate: return emit_allocate(s.as<lowering::AllocateNode>());
    case StmtKind::For: return emit_for(s.as<lowering::ForNode>());
    case StmtKind::While: {
      auto* op = s.as<lowering::WhileNode>();
      auto* header = llvm::BasicBlock::Create(ctx_, "while_cond", cur_->fn);
      auto* body_bb = llvm::BasicBlock::Create(ctx_, "while_body", cur_->fn);
      auto* exit = llvm::BasicBlock::Create(ctx_, "while_end", cur_->fn);
      b_.CreateBr(header);
      b_.SetInsertPoint(header);
      b_.CreateCondBr(emit_as(op->condition, DataType::Bool()), body_bb, exit);
      b_.SetInsertPoint(body_bb);
      emit(op->body);
      b_.CreateBr(header);
      b_.SetInsertPoint(exit);
      return;
    }
    case StmtKind::IfThenElse: {
      auto* op = s.as<lowering::IfThenElseNode>();
      llvm::Value* c = emit_as(op->condition, DataType::Bool());
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "if_then", cur_->fn);
      auto* end_bb = llvm::BasicBlock::Create(ctx_, "if_end", cur_->fn);
      auto* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if_else", cur_->fn) : end_bb;
      b_.CreateCondBr(c, then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      emit(op->then_case);
      b_.CreateBr(end_bb);
      if (op->else_case.defined()) {
        b_.SetInsertPoint(else_bb);
        emit(op->else_case);
        b_.CreateBr(end_bb);
      }
      b_.SetInsertPoint(end_bb);
      return;
    }
    case StmtKind::Seq:
      for (const auto& c : s.as<lowering::SeqStmtNode>()->seq) emit(c);
      return;
    case StmtKind::Evaluate: {
      auto* op = s.as<lowering::EvaluateNode>();
      if (op->value.defined() && !op->value.as<te::IntImmNode>()) emit(op->value);
      return;
    }
    case StmtKind::ProducerStore:
    case StmtKind::ProducerRealize:
      fail("codegen: function '{}' still contains multi-dimensional tensor statements (storage_flatten has not run)", func_name_);
  }
  LOOM_ICHECK(false);
}

std::unique_ptr<llvm::Module> emit_llvm_module(const std::vector<lowering::LoweredFunc>& funcs, llvm::LLVMContext& ctx,
                                               llvm::TargetMachine* tm, const Target& target) {
  auto m = std::make_unique<llvm::Module>("loom", ctx);
  m->setTargetTriple(tm->getTargetTriple().str());
  m->setDataLayout(tm->createDataLayout());
  CodeGenLLVM cg(ctx, tm, m.get());
  cg.init_vector_math(target);
  for (const auto& f : funcs) cg.add_function(f);
  return m;
}

}  // namespace loom::codegen
