// build(): lowered functions to a runnable Module, dispatched on the target kind.
#include "loom/codegen/build.h"

#include "llvm/build_llvm.h"
#include "loom/codegen/check_target.h"
#include "loom/codegen/cuda.h"
#include "loom/runtime/error.h"

#include <cctype>
#include <set>

namespace loom::codegen {

std::string export_name_problem(const std::string& name) {
  bool ident = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ident &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  if (!ident)
    return fmt::format("'{}' is not a C identifier (letters, digits and '_', not starting with a digit)", name);
  static const std::set<std::string> keywords = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
      "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
      "true", "false", "nullptr", "alignas", "alignof", "static_assert", "thread_local", "typeof", "constexpr"};
  if (keywords.count(name)) return fmt::format("'{}' is a C keyword", name);
  if (name == "main") return "'main' is the C program's entry point";
  if (name.rfind("loom_", 0) == 0 || name.rfind("__", 0) == 0 ||
      (name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1]))))
    return fmt::format("'{}' is reserved: names starting with 'loom_' are loom's runtime ABI (loom_get_last_error, "
                       "…), names starting with '__' or '_' and a capital letter belong to the library's own "
                       "symbols and the C implementation",
                       name);
  // What libloom's runtime (runtime/c_runtime.c) and compiled kernels call from the C library.
  static const std::set<std::string> libc = {
      "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memcpy", "memmove", "memset",
      "memcmp", "strlen", "strcmp", "strncpy", "snprintf", "vsnprintf", "printf", "fprintf", "abort", "exit",
      "getenv", "sysconf", "atoi", "strtol", "clock_gettime", "pthread_create", "pthread_join", "pthread_once",
      "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_wait", "pthread_cond_signal",
      "pthread_cond_broadcast", "pthread_key_create", "pthread_getspecific", "pthread_setspecific", "sched_yield",
      "dlopen", "dlsym", "dlclose", "dlerror", "exp", "expf", "exp2", "exp2f", "expm1f", "log", "logf", "log2f",
      "log10f", "log1pf", "pow", "powf", "sqrt", "sqrtf", "tanh", "tanhf", "sin", "sinf", "cos", "cosf", "tan",
      "tanf", "erf", "erff", "fabs", "fabsf", "floor", "floorf", "ceil", "ceilf", "round", "roundf", "fmod",
      "fmodf", "fmin", "fminf", "fmax", "fmaxf", "atan", "atanf", "atan2f", "asin", "asinf", "acos", "acosf", "sinh",
      "sinhf", "cosh", "coshf", "asinh", "asinhf", "acosh", "acoshf", "atanh", "atanhf",
      "fma", "fmaf", "nearbyintf", "rintf", "truncf", "lrintf"};
  if (libc.count(name))
    return fmt::format("'{}' is a C library function the runtime or compiled code calls; the library would "
                       "replace it",
                       name);
  return "";
}

runtime::Module build(const std::vector<lowering::LoweredFunc>& funcs, const Target& target) {
  if (target.is_cuda()) return build_cuda(funcs, target);
  LOOM_CHECK(target.is_cpu(), "build: target \"{}\" has no code generator", target.str());
  LOOM_CHECK(!funcs.empty(), "build: no functions to compile for target \"{}\"", target.str());
  for (const auto& f : funcs)
    LOOM_CHECK(f.body.defined(), "build: function '{}' has no body", f.name);
  return build_llvm(funcs, target);
}

void check_target(const Target& target) {
  if (target.is_cpu()) check_llvm_target(target);
  else LOOM_CHECK(target.is_cuda(), "target \"{}\" has no code generator", target.str());
}

runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const Target& target,
                      const std::string& name) {
  lowering::LowerOptions opts;
  opts.target = target;
  return build(s, args, name, opts);
}

runtime::Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& name,
                      const lowering::LowerOptions& opts) {
  check_target(opts.target);
  return build({lowering::lower(s, args, name, opts)}, opts.target);
}

}  // namespace loom::codegen
