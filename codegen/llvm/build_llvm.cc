// The LLVM CPU backend: loop IR → LLVM IR → O3 → object file → JIT-linked module.
#include "build_llvm.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <time.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "codegen_llvm.h"
#include "jit_module.h"
#include "loom/runtime/error.h"
#include "optimize.h"
#include "target_machine.h"

namespace loom::codegen {

namespace {

/// Per-phase CPU time of one build, printed to stderr when LOOM_CODEGEN_TIMING is set.
class PhaseTimer {
 public:
  PhaseTimer() : on_(std::getenv("LOOM_CODEGEN_TIMING") != nullptr), last_(now()) {}
  void mark(const char* phase) {
    if (!on_) return;
    double t = now();
    report_ += fmt::format(" {} {:.2f}ms", phase, (t - last_) * 1e3);
    total_ += t - last_;
    last_ = t;
  }
  void print(const std::string& name) const {
    if (on_) std::fprintf(stderr, "[loom codegen] %s: total %.2fms cpu:%s\n", name.c_str(), total_ * 1e3, report_.c_str());
  }

 private:
  static double now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  }
  bool on_;
  double last_, total_ = 0;
  std::string report_;
};

}  // namespace

runtime::Module build_llvm(const std::vector<lowering::LoweredFunc>& funcs, const Target& target) {
  std::set<std::string> names;
  std::vector<FunctionInfo> infos;
  for (const auto& f : funcs) {
    bool ident = !f.name.empty() && !std::isdigit(static_cast<unsigned char>(f.name[0]));
    for (char c : f.name) ident &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    LOOM_CHECK(ident, "build: function name '{}' is not a C identifier (letters, digits and '_', not starting with a digit)",
               f.name);
    LOOM_CHECK(names.insert(f.name).second, "build: two functions are named '{}'", f.name);
    infos.push_back(FunctionInfo::of(f));
  }
  PhaseTimer timer;
  llvm::TargetMachine* tm = get_target_machine(target);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = emit_llvm_module(funcs, ctx, tm, target);
  timer.mark("emit");
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*m, &os)) {
    os.flush();
    fail("internal error: codegen produced invalid LLVM IR for '{}': {}", funcs[0].name, problems);
  }
  timer.mark("verify");
  optimize_module(*m, tm, target);
  timer.mark("O3");
  auto node = std::make_shared<LLVMModuleNode>(target, to_bitcode(*m), std::move(infos));
  timer.mark("bitcode");
  node->set_host_incompatibility(host_incompatibility(target));
  if (node->host_incompatibility().empty()) {
    std::string object = emit_machine_code(*m, tm, llvm::CodeGenFileType::ObjectFile);
    timer.mark("codegen");
    node->link(object);
    timer.mark("link");
  }
  timer.print(funcs[0].name);
  return runtime::Module(node);
}

void check_llvm_target(const Target& target) { get_target_machine(target); }

}  // namespace loom::codegen
