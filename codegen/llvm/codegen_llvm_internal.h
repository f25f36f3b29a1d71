// CodeGenLLVM, the loop IR → LLVM IR code generator for CPUs, shared by its three files:
// codegen_llvm.cc (expressions, statements, loads and stores), codegen_llvm_host.cc (function
// entries, the packed entry, parallel-loop outlining, runtime calls) and intrinsics_llvm.cc
// (the intrinsic lowering table).
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen_llvm.h"
#include "loom/runtime/error.h"
#include "vector_math.h"

namespace loom::codegen {

using lowering::Stmt;
using lowering::StmtKind;
using te::Expr;
using te::ExprKind;
using te::VarNode;

/// DLTensor field numbers (see <dlpack/dlpack.h>).
enum DLField : unsigned { kData = 0, kDevice = 1, kNDim = 2, kDType = 3, kShape = 4, kStrides = 5, kByteOffset = 6 };

inline std::optional<int64_t> const_int(const Expr& e) {
  if (auto* imm = e.as<te::IntImmNode>()) return imm->value;
  return std::nullopt;
}

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::LLVMContext& ctx, llvm::TargetMachine* tm, llvm::Module* m)
      : ctx_(ctx), tm_(tm), m_(m), dl_(m->getDataLayout()), b_(ctx) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    fmf.setAllowContract();
    fmf.setNoSignedZeros();
    b_.setFastMathFlags(fmf);
    i1_ = b_.getInt1Ty();
    i8_ = b_.getInt8Ty();
    i16_ = b_.getInt16Ty();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    ptr_ = b_.getPtrTy();
    dltensor_ = llvm::StructType::create(
        ctx, {ptr_, llvm::StructType::get(ctx, {i32_, i32_}), i32_, llvm::StructType::get(ctx, {i8_, i8_, i16_}), ptr_, ptr_, i64_},
        "DLTensor");
  }

  /// Chooses the libmvec variants `target` can call (none: every lane calls libm).
  void init_vector_math(const Target& target);
  void add_function(const lowering::LoweredFunc& f);
  /// Names of the intrinsics intrinsic_table() lowers.
  static std::vector<std::string> lowered_intrinsic_names() {
    std::vector<std::string> names;
    for (const auto& [name, lowering] : intrinsic_table()) names.push_back(name);
    return names;
  }

 private:
  /// Per-LLVM-function emission state. Outlined parallel bodies have a parent from which
  /// they capture free variables through the closure.
  struct FnState {
    llvm::Function* fn = nullptr;
    llvm::BasicBlock* entry = nullptr;  // allocas and closure loads go before its terminator
    std::unordered_map<const VarNode*, llvm::Value*> vars;
    FnState* parent = nullptr;
    llvm::Value* closure = nullptr;
    uint64_t closure_size = 0;
    uint64_t closure_align = 8;
    std::vector<std::pair<llvm::Value*, uint64_t>> captures;  // parent value, closure offset
    std::vector<llvm::Value*> workspaces;                      // live loom_workspace_alloc results
    bool in_parallel = false;
  };

  // ---- types
  llvm::Type* scalar_type(DataType t) {
    if (t.is_handle()) return ptr_;
    if (t.is_void()) return b_.getVoidTy();
    if (t.is_bool()) return i1_;
    if (t.is_float()) {
      switch (t.bits()) {
        case 16: return b_.getHalfTy();
        case 32: return b_.getFloatTy();
        case 64: return b_.getDoubleTy();
      }
      fail("codegen: unsupported float width {} (float16/32/64 are supported)", t.bits());
    }
    return llvm::IntegerType::get(ctx_, t.bits());
  }
  llvm::Type* llvm_type(DataType t) {
    llvm::Type* s = scalar_type(t.element_of());
    return t.lanes() > 1 ? llvm::FixedVectorType::get(s, t.lanes()) : s;
  }
  /// Type of a value in memory: bool is one byte.
  llvm::Type* mem_type(DataType t) {
    if (!t.is_bool()) return llvm_type(t);
    return t.lanes() > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i8_, t.lanes())) : i8_;
  }
  /// Alignment of loads and stores of `t`'s elements: vectors are only element-aligned.
  llvm::Align element_align(DataType t) { return dl_.getABITypeAlign(mem_type(t.element_of())); }

  // ---- variables and scopes
  void bind(const VarNode* v, llvm::Value* val, std::vector<std::pair<const VarNode*, llvm::Value*>>* saved) {
    auto it = cur_->vars.find(v);
    saved->push_back({v, it == cur_->vars.end() ? nullptr : it->second});
    cur_->vars[v] = val;
  }
  void unbind(std::vector<std::pair<const VarNode*, llvm::Value*>>* saved) {
    for (auto it = saved->rbegin(); it != saved->rend(); ++it) {
      if (it->second) cur_->vars[it->first] = it->second;
      else cur_->vars.erase(it->first);
    }
    saved->clear();
  }
  llvm::Value* lookup_var(FnState* st, const VarNode* v) {
    auto it = st->vars.find(v);
    if (it != st->vars.end()) return it->second;
    if (!st->parent) fail("codegen: variable '{}' is used outside of its scope in function '{}'", v->name, func_name_);
    llvm::Value* pv = lookup_var(st->parent, v);
    llvm::Value* val = capture(st, pv, v->name);
    st->vars[v] = val;
    return val;
  }
  /// Passes a value of the parent function into an outlined function through its closure.
  llvm::Value* capture(FnState* st, llvm::Value* parent_value, const std::string& name);
  llvm::Value* var_value(const VarNode* v) { return lookup_var(cur_, v); }

  llvm::AllocaInst* entry_alloca(llvm::Type* ty, uint64_t align, const std::string& name) {
    llvm::IRBuilder<> eb(cur_->entry->getTerminator());
    auto* a = eb.CreateAlloca(ty, nullptr, name);
    a->setAlignment(llvm::Align(align));
    return a;
  }

  // ---- runtime functions
  llvm::FunctionCallee rt_set_last_error();
  llvm::FunctionCallee rt_parallel_launch();
  llvm::FunctionCallee rt_workspace_alloc();
  llvm::FunctionCallee rt_workspace_free();

  /// Frees the live workspaces of the current function and returns `code` from it.
  void emit_return(llvm::Value* code);
  /// if (!ok) { set_last_error(msg); return code; } and continues on the ok path.
  void emit_check(llvm::Value* ok, llvm::Value* msg, int32_t code, const char* name);

  /// The checks make_packed_api's asserts rely on but cannot express: a non-null handle
  /// has a non-null data pointer (unless the tensor is empty) and a non-null shape array.
  /// A null handle falls through to make_packed_api's own check.
  void emit_pointer_checks(const lowering::LoweredFunc& f);

  void set_target_attrs(llvm::Function* f);

  /// `int32_t __loom_packed_f(DLTensor** args, int32_t num_args)`: checks the argument count
  /// and calls `fn`.
  void emit_packed_entry(const lowering::LoweredFunc& f, llvm::Function* fn);

  // ---- alias information
  void annotate(llvm::Instruction* inst, const VarNode* buf) {
    auto it = alias_scope_.find(buf);
    if (it == alias_scope_.end()) return;
    inst->setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx_, {it->second}));
    auto nit = noalias_.find(buf);
    if (nit != noalias_.end()) inst->setMetadata(llvm::LLVMContext::MD_noalias, nit->second);
  }
  void make_alias_scopes(const lowering::LoweredFunc& f);

  // ---- expressions
  llvm::Value* emit(const Expr& e);
  llvm::Value* emit_as(const Expr& e, DataType t) { return cast(e.dtype(), t, emit(e)); }
  llvm::Value* cast(DataType from, DataType to, llvm::Value* v);
  llvm::Value* emit_binary(ExprKind k, DataType t, const Expr& a, const Expr& b);
  llvm::Value* emit_compare(ExprKind k, const Expr& a, const Expr& b);
  /// A floating-point comparison. float16 operands are compared as float32 (exact), behind
  /// llvm.arithmetic.fence so no pass narrows them back: LLVM 19's x86 backend miscompiles
  /// masked float16 vector compares (VCMPPH*rrik, llvm-project #159723): folding a load into
  /// the first operand swaps the operands but not the predicate. Any mask merged into the
  /// compare triggers it, as the lane mask of a non-power-of-two vector does.
  llvm::Value* fcmp(llvm::CmpInst::Predicate p, llvm::Value* a, llvm::Value* b);
  /// Lowers an intrinsic call through intrinsic_table().
  llvm::Value* emit_call(const te::CallNode* op);
  /// How an intrinsic lowers: its argument count and its emitter.
  struct IntrinsicLowering {
    size_t num_args;
    std::function<llvm::Value*(CodeGenLLVM& cg, const te::CallNode* op)> emit;
  };
  /// Every intrinsic the CPU code generator lowers, by name (intrinsics_llvm.cc).
  static const std::unordered_map<std::string, IntrinsicLowering>& intrinsic_table();
  llvm::Value* emit_dltensor_field(llvm::Value* h, std::initializer_list<unsigned> path, llvm::Type* ty);
  llvm::Value* emit_libm(const std::string& base, DataType t, llvm::Value* x);

  // ---- vector math (vector_math.cc)
  /// Intrinsic `name` (exp, log, tanh, erf, pow, …) of float32 vector arguments as libmvec
  /// calls of the target's widths; null where there is none (scalars, other types, targets
  /// without vector math, a symbol this host's glibc lacks), for the caller's scalar path.
  llvm::Value* emit_vector_math(const std::string& name, DataType t, const std::vector<llvm::Value*>& args);
  /// e^x: libmvec for float32 vectors, else llvm.exp.
  llvm::Value* emit_exp(DataType t, llvm::Value* x);
  /// 1/(1 + e^-x), computed from e^-|x| so that no intermediate overflows.
  llvm::Value* emit_sigmoid(DataType t, llvm::Value* x);
  /// te::intrin::kDotU8S8S32, with the best instructions the target's features allow.
  llvm::Value* emit_dot_u8s8s32(const te::CallNode* op);
  /// True if the target machine has CPU feature `feature` ("avx512vnni").
  bool has_feature(const char* feature) const;
  /// Elements [begin, begin + n) of vector `v`.
  llvm::Value* subvector(llvm::Value* v, int begin, int n);
  /// The vectors `parts` (of equal length) one after another.
  llvm::Value* concat(std::vector<llvm::Value*> parts);
  llvm::Value* emit_load(const te::LoadNode* op);
  /// `cond ? then() : otherwise()` with only the taken side executed: a branch to two blocks
  /// named `name`.then / .else, joined by a PHI.
  llvm::Value* emit_branches(llvm::Value* cond, const std::function<llvm::Value*()>& then,
                             const std::function<llvm::Value*()>& otherwise, const char* name);
  /// A vector load with a constant stride of 2..kMaxDenseLoadStride, every lane loaded:
  /// lane-wide loads covering the span the lanes touch and a shuffle picking every stride-th
  /// element (far faster than a gather on x86). The last load is moved back to end at the last
  /// lane's element, so nothing is read that a gather would not.
  llvm::Value* emit_strided_dense_load(const te::LoadNode* op, const te::RampNode* ramp, int64_t stride);
  /// A masked gather of op's lanes at the addresses of its (vector) index.
  llvm::Instruction* emit_gather(const te::LoadNode* op, llvm::Value* mask);
  llvm::Value* splat(int lanes, llvm::Value* v) { return lanes > 1 ? b_.CreateVectorSplat(lanes, v) : v; }
  llvm::Value* all_true(int lanes) { return llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(i1_, lanes)); }
  /// Converts a loaded memory value to its register form (bool: i8 → i1) and back.
  llvm::Value* from_mem(DataType t, llvm::Value* v) { return t.is_bool() ? b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v; }
  llvm::Value* to_mem(DataType t, llvm::Value* v) { return t.is_bool() ? b_.CreateZExt(v, mem_type(t)) : v; }
  llvm::Value* buffer_ptr(const te::Var& buf) {
    llvm::Value* p = var_value(buf.get());
    if (!p->getType()->isPointerTy())
      fail("codegen: buffer '{}' in function '{}' is not a handle (its type is {})", buf.name(), func_name_, buf.dtype().str());
    return p;
  }

  // ---- statements
  void emit(const Stmt& s);
  void emit_store(const lowering::StoreNode* op);
  void emit_allocate(const lowering::AllocateNode* op);
  void emit_for(const lowering::ForNode* op);
  void emit_serial_loop(const te::Var& var, llvm::Value* begin, llvm::Value* end, const Stmt& body);
  void emit_parallel_for(const lowering::ForNode* op);

  llvm::LLVMContext& ctx_;
  llvm::TargetMachine* tm_;
  llvm::Module* m_;
  const llvm::DataLayout& dl_;
  llvm::IRBuilder<> b_;
  llvm::Type *i1_, *i8_, *i16_, *i32_, *i64_, *ptr_;
  llvm::StructType* dltensor_;
  FnState* cur_ = nullptr;
  std::string func_name_;
  int parallel_count_ = 0;
  std::unordered_map<const VarNode*, llvm::MDNode*> alias_scope_;
  std::unordered_map<const VarNode*, llvm::MDNode*> noalias_;
  std::vector<VectorMathVariant> vector_math_;  // widest first; empty: no vector math
  bool vector_math_check_host_ = false;         // the JIT runs the code: ask this host's libmvec
};

}  // namespace loom::codegen
