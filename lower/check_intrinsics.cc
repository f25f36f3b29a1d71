// check_intrinsics: every call in a function must be an intrinsic of te/intrinsics.h, with
// its declared arity and types, that the target's code generator lowers. Run on the stages'
// computes before anything else (so a user's bad call names its stage) and on the lowered
// function at the end (calls that passes and tensor intrinsics introduced).
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/intrinsics.h"

namespace loom::lowering {

namespace {

std::string backend_names(unsigned backends) {
  std::string s;
  if (backends & te::kBackendLLVM) s += "llvm";
  if (backends & te::kBackendCUDA) s += s.empty() ? "cuda" : ", cuda";
  return s.empty() ? "none: only te::evaluate computes it" : s;
}

/// Checks one call; `where` says where it is ("stage 'C'", "kernel 'f_kernel0'").
void check_call(const te::CallNode* op, unsigned backend, const std::string& func, const std::string& where) {
  std::string why = te::check_intrinsic_call(*op);
  if (!why.empty()) fail("lower '{}': {}: {}", func, where, why);
  if (backend == te::kBackendNone) return;
  const te::IntrinsicInfo* info = te::find_intrinsic(op->name);
  if (!(info->backends & backend))
    fail("lower '{}': {}: intrinsic '{}' in {} has no lowering for the {} code generator (code generators that lower "
         "it: {})",
         func, where, op->name, te::to_string(to_expr(op)), backend_names(backend), backend_names(info->backends));
}

class CallChecker : public IRVisitor {
 public:
  CallChecker(unsigned backend, std::string func, std::string where)
      : backend_(backend), func_(std::move(func)), where_(std::move(where)) {}

 protected:
  void visit_(const te::CallNode* op) override {
    check_call(op, backend_, func_, where_);
    IRVisitor::visit_(op);
  }

 private:
  unsigned backend_;
  std::string func_, where_;
};

}  // namespace

void check_stage_intrinsics(const schedule::Schedule& s, const std::string& func) {
  for (const schedule::Stage& st : s.stages()) {
    if (st->op->kind != te::OpKind::kCompute) continue;
    CallChecker c(te::kBackendNone, func, fmt::format("stage '{}'", st->op->name));
    for (const Expr& e : st->op->body) c.visit(e);
  }
}

void check_intrinsics(const LoweredFunc& f, const Target& target) {
  if (!target.is_cuda()) {
    CallChecker(te::kBackendLLVM, f.name, "function '" + f.name + "'").visit(f.body);
    return;
  }
  // The host part of a CUDA function is run by the CUDA module's launcher, not compiled.
  CallChecker(te::kBackendNone, f.name, "host code of '" + f.name + "'").visit(f.body);
  for (const DeviceFunc& k : f.device_funcs)
    CallChecker(te::kBackendCUDA, f.name, "kernel '" + k.name + "'").visit(k.body);
}

}  // namespace loom::lowering
