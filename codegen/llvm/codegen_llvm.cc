// Loop IR → LLVM IR for CPUs: expressions, statements, parallel-loop outlining and the
// packed-call entries.
#include "codegen_llvm.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Attributes.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/Support/Alignment.h>

#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

using lowering::Stmt;
using lowering::StmtKind;
using te::Expr;
using te::ExprKind;
using te::VarNode;

std::string packed_name(const std::string& name) { return "__loom_packed_" + name; }

namespace {

/// DLTensor field numbers (see <dlpack/dlpack.h>).
enum DLField : unsigned { kData = 0, kDevice = 1, kNDim = 2, kDType = 3, kShape = 4, kStrides = 5, kByteOffset = 6 };

std::optional<int64_t> const_int(const Expr& e) {
  if (auto* imm = e.as<te::IntImmNode>()) return imm->value;
  return std::nullopt;
}

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

  void add_function(const lowering::LoweredFunc& f);

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
  llvm::Value* capture(FnState* st, llvm::Value* parent_value, const std::string& name) {
    llvm::Type* ty = parent_value->getType();
    uint64_t align = dl_.getABITypeAlign(ty).value();
    uint64_t off = llvm::alignTo(st->closure_size, align);
    st->closure_size = off + dl_.getTypeAllocSize(ty);
    st->closure_align = std::max(st->closure_align, align);
    st->captures.push_back({parent_value, off});
    llvm::IRBuilder<> eb(st->entry->getTerminator());
    llvm::Value* p = eb.CreateConstInBoundsGEP1_64(i8_, st->closure, off);
    return eb.CreateAlignedLoad(ty, p, llvm::Align(align), name);
  }
  llvm::Value* var_value(const VarNode* v) { return lookup_var(cur_, v); }

  llvm::AllocaInst* entry_alloca(llvm::Type* ty, uint64_t align, const std::string& name) {
    llvm::IRBuilder<> eb(cur_->entry->getTerminator());
    auto* a = eb.CreateAlloca(ty, nullptr, name);
    a->setAlignment(llvm::Align(align));
    return a;
  }

  // ---- runtime functions
  llvm::FunctionCallee rt_set_last_error() {
    return m_->getOrInsertFunction("loom_set_last_error", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
  }
  llvm::FunctionCallee rt_parallel_launch() {
    return m_->getOrInsertFunction("loom_parallel_launch", llvm::FunctionType::get(i32_, {ptr_, ptr_, i32_}, false));
  }
  llvm::FunctionCallee rt_workspace_alloc() {
    auto c = m_->getOrInsertFunction("loom_workspace_alloc", llvm::FunctionType::get(ptr_, {i64_}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) {
      f->addRetAttr(llvm::Attribute::NoAlias);
      f->addFnAttr(llvm::Attribute::NoUnwind);
    }
    return c;
  }
  llvm::FunctionCallee rt_workspace_free() {
    auto c = m_->getOrInsertFunction("loom_workspace_free", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) f->addFnAttr(llvm::Attribute::NoUnwind);
    return c;
  }

  /// Frees the live workspaces of the current function and returns `code` from it.
  void emit_return(llvm::Value* code) {
    for (auto it = cur_->workspaces.rbegin(); it != cur_->workspaces.rend(); ++it)
      b_.CreateCall(rt_workspace_free(), {*it});
    b_.CreateRet(code);
  }
  /// if (!ok) { set_last_error(msg); return code; } and continues on the ok path.
  void emit_check(llvm::Value* ok, llvm::Value* msg, int32_t code, const char* name) {
    auto* fail_bb = llvm::BasicBlock::Create(ctx_, std::string(name) + "_fail", cur_->fn);
    auto* ok_bb = llvm::BasicBlock::Create(ctx_, std::string(name) + "_ok", cur_->fn);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(ok, ok_bb, fail_bb, md.createBranchWeights(1 << 20, 1));
    b_.SetInsertPoint(fail_bb);
    if (msg) b_.CreateCall(rt_set_last_error(), {msg});
    emit_return(b_.getInt32(code));
    b_.SetInsertPoint(ok_bb);
  }

  /// The checks make_packed_api's asserts rely on but cannot express: a non-null handle
  /// has a non-null data pointer (unless the tensor is empty) and a non-null shape array.
  /// A null handle falls through to make_packed_api's own check.
  void emit_pointer_checks(const lowering::LoweredFunc& f) {
    for (size_t i = 0; i < f.args.size(); ++i) {
      const auto& a = f.args[i];
      llvm::Value* h = cur_->fn->getArg(unsigned(i));
      auto* check_bb = llvm::BasicBlock::Create(ctx_, a.name + "_ptrs", cur_->fn);
      auto* done_bb = llvm::BasicBlock::Create(ctx_, a.name + "_ptrs_done", cur_->fn);
      b_.CreateCondBr(b_.CreateIsNull(h), done_bb, check_bb);
      b_.SetInsertPoint(check_bb);
      std::string who = fmt::format("{}: argument {} ('{}')", f.name, i, a.name);
      std::optional<int64_t> numel = 1;
      for (const auto& e : a.shape) {
        auto c = const_int(e);
        if (!c) { numel.reset(); break; }
        *numel *= *c;
      }
      if (!numel || *numel != 0)
        emit_check(b_.CreateIsNotNull(emit_dltensor_field(h, {kData}, ptr_)),
                   b_.CreateGlobalString(who + " has a null data pointer", "assert_msg"), LOOM_ERR_ARGUMENT, "data_null");
      if (!a.shape.empty()) {
        // A wrong ndim is reported by make_packed_api's check, with its own message.
        llvm::Value* ndim_ok = b_.CreateICmpEQ(emit_dltensor_field(h, {kNDim}, i32_), b_.getInt32(int32_t(a.shape.size())));
        llvm::Value* shape_ok = b_.CreateIsNotNull(emit_dltensor_field(h, {kShape}, ptr_));
        emit_check(b_.CreateOr(b_.CreateNot(ndim_ok), shape_ok),
                   b_.CreateGlobalString(who + " has a null shape array", "assert_msg"), LOOM_ERR_ARGUMENT, "shape_null");
      }
      b_.CreateBr(done_bb);
      b_.SetInsertPoint(done_bb);
    }
  }

  void set_target_attrs(llvm::Function* f) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
    if (!tm_->getTargetCPU().empty()) f->addFnAttr("target-cpu", tm_->getTargetCPU());
    if (!tm_->getTargetFeatureString().empty()) f->addFnAttr("target-features", tm_->getTargetFeatureString());
  }

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
  llvm::Value* emit_call(const te::CallNode* op);
  llvm::Value* emit_dltensor_field(llvm::Value* h, std::initializer_list<unsigned> path, llvm::Type* ty);
  llvm::Value* emit_libm(const std::string& base, DataType t, llvm::Value* x);
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
};

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

// ------------------------------------------------------------------ functions

void CodeGenLLVM::add_function(const lowering::LoweredFunc& f) {
  func_name_ = f.name;
  parallel_count_ = 0;
  make_alias_scopes(f);
  size_t n = f.args.size();
  std::vector<llvm::Type*> params(n, ptr_);
  auto* fty = llvm::FunctionType::get(i32_, params, false);
  if (m_->getFunction(f.name)) fail("build: two functions are named '{}'", f.name);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f.name, m_);
  set_target_attrs(fn);

  FnState st;
  st.fn = fn;
  st.entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "body", fn);
  llvm::BranchInst::Create(body_bb, st.entry);
  cur_ = &st;
  b_.SetInsertPoint(body_bb);
  for (size_t i = 0; i < n; ++i) {
    const auto& a = f.args[i];
    LOOM_CHECK(a.handle.defined(), "build: argument {} ('{}') of function '{}' has no handle variable", i, a.name, f.name);
    llvm::Argument* arg = fn->getArg(unsigned(i));
    arg->setName(a.name);
    st.vars[a.handle.get()] = arg;
    if (!f.packed && a.data.defined()) {
      // No make_packed_api: bind the data pointers directly (data + byte_offset), unchecked.
      llvm::Value* data = emit_dltensor_field(arg, {kData}, ptr_);
      llvm::Value* off = emit_dltensor_field(arg, {kByteOffset}, i64_);
      st.vars[a.data.get()] = b_.CreateInBoundsGEP(i8_, data, off, a.name + "_data");
    }
  }
  if (f.packed) emit_pointer_checks(f);
  emit(f.body);
  emit_return(b_.getInt32(0));
  cur_ = nullptr;

  // The packed entry: checks the argument count and array and forwards.
  auto* pty = llvm::FunctionType::get(i32_, {ptr_, i32_}, false);
  auto* pfn = llvm::Function::Create(pty, llvm::Function::ExternalLinkage, packed_name(f.name), m_);
  set_target_attrs(pfn);
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", pfn);
  auto* bad = llvm::BasicBlock::Create(ctx_, "bad_num_args", pfn);
  auto* good = llvm::BasicBlock::Create(ctx_, "call", pfn);
  b_.SetInsertPoint(entry);
  llvm::Value* args = pfn->getArg(0);
  llvm::Value* num = pfn->getArg(1);
  args->setName("args");
  num->setName("num_args");
  b_.CreateCondBr(b_.CreateICmpEQ(num, b_.getInt32(int32_t(n))), good, bad);
  b_.SetInsertPoint(bad);
  {
    std::string escaped;
    for (char c : f.name) escaped += (c == '%') ? std::string("%%") : std::string(1, c);
    std::string fmtstr = fmt::format("{}: expected {} arguments, got %d", escaped, n);
    auto snprintf_fn = m_->getOrInsertFunction("snprintf", llvm::FunctionType::get(i32_, {ptr_, i64_, ptr_}, true));
    constexpr uint64_t kBuf = 256;
    llvm::AllocaInst* buf = b_.CreateAlloca(llvm::ArrayType::get(i8_, kBuf), nullptr, "msg");
    b_.CreateCall(snprintf_fn, {buf, b_.getInt64(kBuf), b_.CreateGlobalString(fmtstr, "num_args_fmt"), num});
    b_.CreateCall(rt_set_last_error(), {buf});
    b_.CreateRet(b_.getInt32(LOOM_ERR_ARGUMENT));
  }
  b_.SetInsertPoint(good);
  if (n > 0) {
    // A null argument array with the right count: report it rather than load through it.
    auto* null_args = llvm::BasicBlock::Create(ctx_, "null_args", pfn);
    auto* load = llvm::BasicBlock::Create(ctx_, "load_args", pfn);
    b_.CreateCondBr(b_.CreateIsNull(args), null_args, load);
    b_.SetInsertPoint(null_args);
    std::string msg = fmt::format("{}: the argument array is null ({} arguments expected)", f.name, n);
    b_.CreateCall(rt_set_last_error(), {b_.CreateGlobalString(msg, "null_args_msg")});
    b_.CreateRet(b_.getInt32(LOOM_ERR_ARGUMENT));
    b_.SetInsertPoint(load);
  }
  std::vector<llvm::Value*> call_args;
  for (size_t i = 0; i < n; ++i) {
    llvm::Value* p = b_.CreateConstInBoundsGEP1_64(ptr_, args, i);
    call_args.push_back(b_.CreateLoad(ptr_, p));
  }
  b_.CreateRet(b_.CreateCall(fn, call_args));
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
    if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
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
      if (fl) return b_.CreateSelect(b_.CreateFCmpOLT(a, b), a, b);
      return b_.CreateBinaryIntrinsic(sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case ExprKind::Max:
      if (fl) return b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b);
      return b_.CreateBinaryIntrinsic(sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    case ExprKind::And: return b_.CreateAnd(a, b);
    case ExprKind::Or: return b_.CreateOr(a, b);
    default: break;
  }
  LOOM_ICHECK(false);
}

llvm::Value* CodeGenLLVM::emit_compare(ExprKind k, const Expr& ea, const Expr& eb) {
  DataType t = ea.dtype();
  if (eb.dtype().lanes() > t.lanes()) t = t.with_lanes(eb.dtype().lanes());
  llvm::Value* a = emit_as(ea, t);
  llvm::Value* b = emit_as(eb, t);
  if (t.is_float()) {
    switch (k) {
      case ExprKind::EQ: return b_.CreateFCmpOEQ(a, b);
      case ExprKind::NE: return b_.CreateFCmpUNE(a, b);
      case ExprKind::LT: return b_.CreateFCmpOLT(a, b);
      case ExprKind::LE: return b_.CreateFCmpOLE(a, b);
      case ExprKind::GT: return b_.CreateFCmpOGT(a, b);
      case ExprKind::GE: return b_.CreateFCmpOGE(a, b);
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
  if (stride == 1) {
    llvm::Value* p = b_.CreateInBoundsGEP(mt, base, emit(ramp->base));
    llvm::Instruction* l = nullptr;
    if (mask) l = b_.CreateMaskedLoad(vt, p, align, mask, llvm::Constant::getNullValue(vt));
    else l = b_.CreateAlignedLoad(vt, p, align);
    annotate(l, op->buffer_var.get());
    return from_mem(t, l);
  }
  if (stride && *stride >= 2 && *stride <= kMaxDenseLoadStride) {
    auto dense = [&] { return emit_strided_dense_load(op, ramp, *stride); };
    if (!mask) return from_mem(t, dense());
    // Predicated (a padded border, a partial tile): the dense loads where every lane holds,
    // as in the interior of an image; a masked gather where some lane does not.
    return from_mem(t, emit_branches(b_.CreateAndReduce(mask), dense, [&] { return emit_gather(op, mask); },
                                     "strided"));
  }
  if (const auto* bc = op->index.as<te::BroadcastNode>(); bc && !mask) {
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
    if (ramp && const_int(ramp->stride) == 1) {
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

void CodeGenLLVM::emit_parallel_for(const lowering::ForNode* op) {
  DataType vt = op->loop_var.dtype();
  llvm::Type* ty = llvm_type(vt);
  llvm::Value* min = emit_as(op->min, vt);
  llvm::Value* extent = emit_as(op->extent, vt);

  auto* fty = llvm::FunctionType::get(i32_, {i32_, i32_, ptr_}, false);
  std::string name = fmt::format("{}_parallel_{}", func_name_, parallel_count_++);
  auto* task = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name, m_);
  set_target_attrs(task);
  FnState st;
  st.fn = task;
  st.parent = cur_;
  st.in_parallel = true;
  st.closure = task->getArg(2);
  task->getArg(0)->setName("task_id");
  task->getArg(1)->setName("num_tasks");
  task->getArg(2)->setName("closure");
  task->addParamAttr(2, llvm::Attribute::NoAlias);
  st.entry = llvm::BasicBlock::Create(ctx_, "entry", task);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "body", task);
  llvm::BranchInst::Create(body_bb, st.entry);

  llvm::IRBuilderBase::InsertPoint parent_ip = b_.saveIP();
  FnState* parent = cur_;
  cur_ = &st;
  b_.SetInsertPoint(body_bb);
  {
    // Task k of n runs the k-th contiguous chunk of ceil(extent / n) iterations.
    llvm::Value* cmin = capture(&st, min, "min");
    llvm::Value* cext = capture(&st, extent, "extent");
    llvm::Value* tid = b_.CreateSExt(task->getArg(0), ty);
    llvm::Value* nt = b_.CreateSExt(task->getArg(1), ty);
    llvm::Value* one = llvm::ConstantInt::get(ty, 1);
    llvm::Value* chunk = b_.CreateSDiv(b_.CreateSub(b_.CreateAdd(cext, nt), one), nt);
    llvm::Value* lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateMul(tid, chunk), cext);
    llvm::Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(lo, chunk), cext);
    emit_serial_loop(op->loop_var, b_.CreateAdd(cmin, lo), b_.CreateAdd(cmin, hi), op->body);
    emit_return(b_.getInt32(0));
  }
  cur_ = parent;
  b_.restoreIP(parent_ip);

  llvm::AllocaInst* closure =
      entry_alloca(llvm::ArrayType::get(i8_, std::max<uint64_t>(st.closure_size, 8)), std::max<uint64_t>(st.closure_align, 16), name + "_closure");
  for (const auto& [v, off] : st.captures) {
    llvm::Value* p = b_.CreateConstInBoundsGEP1_64(i8_, closure, off);
    b_.CreateAlignedStore(v, p, dl_.getABITypeAlign(v->getType()));
  }
  llvm::Value* status = b_.CreateCall(rt_parallel_launch(), {task, closure, b_.getInt32(0)}, "status");
  auto* fail_bb = llvm::BasicBlock::Create(ctx_, "parallel_fail", cur_->fn);
  auto* ok_bb = llvm::BasicBlock::Create(ctx_, "parallel_ok", cur_->fn);
  llvm::MDBuilder md(ctx_);
  b_.CreateCondBr(b_.CreateICmpEQ(status, b_.getInt32(0)), ok_bb, fail_bb, md.createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fail_bb);
  emit_return(status);
  b_.SetInsertPoint(ok_bb);
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

}  // namespace

std::unique_ptr<llvm::Module> emit_llvm_module(const std::vector<lowering::LoweredFunc>& funcs, llvm::LLVMContext& ctx,
                                               llvm::TargetMachine* tm) {
  auto m = std::make_unique<llvm::Module>("loom", ctx);
  m->setTargetTriple(tm->getTargetTriple().str());
  m->setDataLayout(tm->createDataLayout());
  CodeGenLLVM cg(ctx, tm, m.get());
  for (const auto& f : funcs) cg.add_function(f);
  return m;
}

}  // namespace loom::codegen
