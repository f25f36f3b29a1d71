// The CPU host side of CodeGenLLVM: function entries and their argument checks, the packed
// entry, parallel-loop outlining, and calls into the loom runtime.
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Support/Alignment.h>

#include "codegen_llvm_internal.h"
#include "loom/runtime/c_runtime_api.h"

namespace loom::codegen {

std::string packed_name(const std::string& name) { return "__loom_packed_" + name; }

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
  emit_packed_entry(f, fn);
}

void CodeGenLLVM::emit_packed_entry(const lowering::LoweredFunc& f, llvm::Function* fn) {
  size_t n = f.args.size();
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

// ------------------------------------------------------------------ checks and runtime calls

llvm::FunctionCallee CodeGenLLVM::rt_set_last_error() {
  return m_->getOrInsertFunction("loom_set_last_error", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
}

llvm::FunctionCallee CodeGenLLVM::rt_parallel_launch() {
  return m_->getOrInsertFunction("loom_parallel_launch", llvm::FunctionType::get(i32_, {ptr_, ptr_, i32_}, false));
}

llvm::FunctionCallee CodeGenLLVM::rt_workspace_alloc() {
  auto c = m_->getOrInsertFunction("loom_workspace_alloc", llvm::FunctionType::get(ptr_, {i64_}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) {
    f->addRetAttr(llvm::Attribute::NoAlias);
    f->addFnAttr(llvm::Attribute::NoUnwind);
  }
  return c;
}

llvm::FunctionCallee CodeGenLLVM::rt_workspace_free() {
  auto c = m_->getOrInsertFunction("loom_workspace_free", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) f->addFnAttr(llvm::Attribute::NoUnwind);
  return c;
}

void CodeGenLLVM::emit_return(llvm::Value* code) {
  for (auto it = cur_->workspaces.rbegin(); it != cur_->workspaces.rend(); ++it)
    b_.CreateCall(rt_workspace_free(), {*it});
  b_.CreateRet(code);
}

void CodeGenLLVM::emit_check(llvm::Value* ok, llvm::Value* msg, int32_t code, const char* name) {
  auto* fail_bb = llvm::BasicBlock::Create(ctx_, std::string(name) + "_fail", cur_->fn);
  auto* ok_bb = llvm::BasicBlock::Create(ctx_, std::string(name) + "_ok", cur_->fn);
  llvm::MDBuilder md(ctx_);
  b_.CreateCondBr(ok, ok_bb, fail_bb, md.createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fail_bb);
  if (msg) b_.CreateCall(rt_set_last_error(), {msg});
  emit_return(b_.getInt32(code));
  b_.SetInsertPoint(ok_bb);
}

void CodeGenLLVM::emit_pointer_checks(const lowering::LoweredFunc& f) {
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

void CodeGenLLVM::set_target_attrs(llvm::Function* f) {
  f->addFnAttr(llvm::Attribute::NoUnwind);
  if (!tm_->getTargetCPU().empty()) f->addFnAttr("target-cpu", tm_->getTargetCPU());
  if (!tm_->getTargetFeatureString().empty()) f->addFnAttr("target-features", tm_->getTargetFeatureString());
}
// ------------------------------------------------------------------ parallel loops

llvm::Value* CodeGenLLVM::capture(FnState* st, llvm::Value* parent_value, const std::string& name) {
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
  // 0: the pool's choice of tasks; -1 (LOOM_PARALLEL_TASK_PER_THREAD): one per thread.
  const int32_t num_tasks = op->annotations.count(lowering::attr::kParallelTaskPerThread) ? -1 : 0;
  llvm::Value* status = b_.CreateCall(rt_parallel_launch(), {task, closure, b_.getInt32(num_tasks)}, "status");
  auto* fail_bb = llvm::BasicBlock::Create(ctx_, "parallel_fail", cur_->fn);
  auto* ok_bb = llvm::BasicBlock::Create(ctx_, "parallel_ok", cur_->fn);
  llvm::MDBuilder md(ctx_);
  b_.CreateCondBr(b_.CreateICmpEQ(status, b_.getInt32(0)), ok_bb, fail_bb, md.createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fail_bb);
  emit_return(status);
  b_.SetInsertPoint(ok_bb);
}

}  // namespace loom::codegen
