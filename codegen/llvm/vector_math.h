// Vector math for the LLVM CPU code generator: float32 transcendentals of vector
// expressions as calls into glibc's libmvec, chosen by the target's features.
#pragma once
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <string>
#include <vector>

#include "loom/runtime/target.h"

namespace loom::codegen {

/// The library the JIT loads and an exported library links (-lmvec) when code calls it.
inline constexpr const char* kLibmvecSoname = "libmvec.so.1";

/// One variant of glibc's x86 vector-function ABI: its ISA letter in the mangled name and its
/// lanes. 'e': AVX-512 (zmm), 'd': AVX2 (ymm), 'c': AVX (ymm), 'b': SSE (xmm).
struct VectorMathVariant {
  char isa;
  int lanes;
};

/// A float32 function of libmvec: loom's intrinsic name, the scalar libm name, its arity.
struct VectorMathFunction {
  const char* intrinsic;  // "exp"
  const char* libm;       // "expf"
  int num_args;
};

/// The libmvec variants that code for `target` (compiled by `tm`) can call, widest first:
/// AVX-512F → 16 lanes, AVX2 → 8 ('d'), else AVX → 8 ('c'), SSE2 → 4. Empty where the target
/// has no vector math library (lowering::vector_math_library: not x86-64 GNU/Linux, or
/// -vector_math=none).
std::vector<VectorMathVariant> vector_math_variants(const Target& target, llvm::TargetMachine* tm);

/// The libmvec function computing loom intrinsic `name`, or null (sigmoid is built from
/// exp by the code generator and has none).
const VectorMathFunction* find_vector_math_function(const std::string& name);

/// The mangled name of `f`'s variant `v`: `_ZGV<isa>N<lanes><v per argument>_<libm name>`.
std::string vector_math_symbol(const VectorMathFunction& f, VectorMathVariant v);

/// True if libmvec loads in this process (loaded once, RTLD_GLOBAL).
bool host_has_libmvec();

/// True if this process can call `symbol` of libmvec (the library loads and exports it:
/// tanhf and erff need glibc 2.35). What the code generator asks for code the JIT runs here.
bool host_has_vector_math_symbol(const std::string& symbol);

/// Adds the float32 libmvec variants `variants` of every function (scalar libm name and
/// LLVM intrinsic) to `tlii`, so that LLVM's loop and SLP vectorizers can vectorize scalar
/// libm calls in loops a schedule left scalar, at the widths the target can call.
void add_vector_math_mappings(llvm::TargetLibraryInfoImpl& tlii, const std::vector<VectorMathVariant>& variants,
                              bool check_host);

/// True if `m` calls a libmvec function (its name begins with "_ZGV").
bool calls_vector_math_library(const llvm::Module& m);

}  // namespace loom::codegen
