// Vector math: float32 exp, exp2, log, log2, sin, cos, pow, tanh and erf of vector
// expressions as calls into glibc's libmvec (x86 vector-function ABI), and sigmoid from its
// vector exp. Which variants a target can call follows its features (AVX-512F: 16 lanes a
// call, AVX2/AVX: 8, SSE2: 4); lanes beyond a multiple of the widest are one more, narrower
// or padded, call. Accuracy is libmvec's (glibc's manual lists each function's maximum ulp
// error; tests/codegen/vector_math_test.cc measures every function and width against a
// double-precision reference and asserts the bounds stated there).
//
// LLVM 19's own libmvec table (VecFuncs.def, VecLib::LIBMVEC_X86) maps only sin, cos, tan,
// pow, exp and log, at 4 and 8 lanes and for exactly those widths: no AVX-512 variant, no
// tanh, erf, exp2 or log2. So loom emits the calls itself from the table below, and gives
// LLVM's vectorizers the same table (add_vector_math_mappings) for loops left scalar.
#include "vector_math.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/TargetParser/Triple.h>

#include <dlfcn.h>

#include <mutex>
#include <set>
#include <unordered_map>

#include "codegen_llvm_internal.h"
#include "loom/lower/vector_access.h"
#include "target_machine.h"

namespace loom::codegen {

namespace {

// Every function libmvec has in float32 at all four widths (glibc 2.22: exp, log, sin, cos,
// pow; 2.35: exp2, log2, tanh, erf), with the LLVM intrinsic LLVM's vectorizers know it by.
struct TableEntry {
  VectorMathFunction f;
  const char* llvm_intrinsic;  // "llvm.exp.f32", or "" when LLVM has none (erf)
};
const TableEntry kFunctions[] = {
    {{"exp", "expf", 1}, "llvm.exp.f32"},    {{"exp2", "exp2f", 1}, "llvm.exp2.f32"},
    {{"log", "logf", 1}, "llvm.log.f32"},    {{"log2", "log2f", 1}, "llvm.log2.f32"},
    {{"sin", "sinf", 1}, "llvm.sin.f32"},    {{"cos", "cosf", 1}, "llvm.cos.f32"},
    {{"pow", "powf", 2}, "llvm.pow.f32"},    {{"tanh", "tanhf", 1}, "llvm.tanh.f32"},
    {{"erf", "erff", 1}, ""},
};

}  // namespace

std::vector<VectorMathVariant> vector_math_variants(const Target& target, llvm::TargetMachine* tm) {
  if (lowering::vector_math_library(target) != "libmvec") return {};
  const llvm::Triple& triple = tm->getTargetTriple();
  if (triple.getArch() != llvm::Triple::x86_64 || !triple.isOSLinux() || !triple.isGNUEnvironment()) return {};
  const llvm::MCSubtargetInfo* sti = tm->getMCSubtargetInfo();
  auto has = [&](const char* f) { return sti->checkFeatures(std::string("+") + f); };
  std::vector<VectorMathVariant> out;
  if (!has("sse2")) return out;
  if (has("avx512f")) out.push_back({'e', 16});
  if (has("avx2")) out.push_back({'d', 8});
  else if (has("avx")) out.push_back({'c', 8});
  out.push_back({'b', 4});
  return out;
}

const VectorMathFunction* find_vector_math_function(const std::string& name) {
  for (const TableEntry& e : kFunctions)
    if (name == e.f.intrinsic) return &e.f;
  return nullptr;
}

std::string vector_math_symbol(const VectorMathFunction& f, VectorMathVariant v) {
  return fmt::format("_ZGV{}N{}{}_{}", v.isa, v.lanes, std::string(size_t(f.num_args), 'v'), f.libm);
}

namespace {

void* host_libmvec() {
  static void* lib = dlopen(kLibmvecSoname, RTLD_NOW | RTLD_GLOBAL);
  return lib;
}

}  // namespace

bool host_has_libmvec() { return host_libmvec() != nullptr; }

bool host_has_vector_math_symbol(const std::string& symbol) {
  void* lib = host_libmvec();
  if (!lib) return false;
  static std::mutex mu;
  static std::unordered_map<std::string, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(symbol);
  if (it != known.end()) return it->second;
  return known[symbol] = dlsym(lib, symbol.c_str()) != nullptr;
}

void add_vector_math_mappings(llvm::TargetLibraryInfoImpl& tlii, const std::vector<VectorMathVariant>& variants,
                              bool check_host) {
  // VecDesc holds StringRefs: the names live as long as the process, each stored once (a
  // tuner builds thousands of modules).
  static std::mutex mu;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  auto keep = [&](std::string s) -> llvm::StringRef { return *names.insert(std::move(s)).first; };
  std::vector<llvm::VecDesc> descs;
  for (const TableEntry& e : kFunctions) {
    for (VectorMathVariant v : variants) {
      const std::string symbol = vector_math_symbol(e.f, v);
      if (check_host && !host_has_vector_math_symbol(symbol)) continue;
      llvm::StringRef vname = keep(symbol);
      llvm::StringRef prefix = keep(fmt::format("_ZGV_LLVM_N{}{}", v.lanes, std::string(size_t(e.f.num_args), 'v')));
      const auto vf = llvm::ElementCount::getFixed(unsigned(v.lanes));
      descs.emplace_back(e.f.libm, vname, vf, false, prefix);
      if (*e.llvm_intrinsic) descs.emplace_back(e.llvm_intrinsic, vname, vf, false, prefix);
    }
  }
  tlii.addVectorizableFunctions(descs);
}

bool calls_vector_math_library(const llvm::Module& m) {
  for (const llvm::Function& f : m.functions())
    if (f.isDeclaration() && f.getName().starts_with("_ZGV")) return true;
  return false;
}

// ------------------------------------------------------------------ code generation

void CodeGenLLVM::init_vector_math(const Target& target) {
  vector_math_ = vector_math_variants(target, tm_);
  vector_math_check_host_ = runs_on_host(target);
}

llvm::Value* CodeGenLLVM::emit_vector_math(const std::string& name, DataType t, const std::vector<llvm::Value*>& args) {
  const int lanes = t.lanes();
  if (lanes <= 1 || t.element_of() != DataType::Float(32) || vector_math_.empty()) return nullptr;
  const VectorMathFunction* f = find_vector_math_function(name);
  if (!f) return nullptr;
  LOOM_ICHECK(int(args.size()) == f->num_args);
  // Chunks: the widest variant while it fits, then the narrowest one that holds the rest
  // (padded with zeros): 12 lanes on AVX-512 are one 16-lane call, 20 are 16 + 4.
  struct Chunk {
    int begin, n;
    VectorMathVariant v;
  };
  std::vector<Chunk> chunks;
  for (int begin = 0; begin < lanes;) {
    const int rest = lanes - begin;
    VectorMathVariant v = vector_math_.front();
    if (rest < v.lanes)
      for (VectorMathVariant w : vector_math_)
        if (w.lanes >= rest) v = w;
    chunks.push_back({begin, std::min(rest, v.lanes), v});
    begin += chunks.back().n;
  }
  for (const Chunk& c : chunks)
    if (vector_math_check_host_ && !host_has_vector_math_symbol(vector_math_symbol(*f, c.v))) return nullptr;

  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* out = nullptr;
  for (const Chunk& c : chunks) {
    auto* vt = llvm::FixedVectorType::get(f32, unsigned(c.v.lanes));
    std::vector<llvm::Type*> params(args.size(), vt);
    llvm::FunctionCallee callee =
        m_->getOrInsertFunction(vector_math_symbol(*f, c.v), llvm::FunctionType::get(vt, params, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      fn->setDoesNotAccessMemory();
      fn->setDoesNotThrow();
      fn->setWillReturn();
    }
    std::vector<llvm::Value*> call_args;
    for (llvm::Value* a : args) {
      if (c.begin == 0 && c.n == lanes && c.v.lanes == lanes) {
        call_args.push_back(a);
        continue;
      }
      // Lanes [begin, begin + n) of `a`, then zeros up to the variant's width.
      std::vector<int> mask(static_cast<size_t>(c.v.lanes));
      for (int i = 0; i < c.v.lanes; ++i) mask[size_t(i)] = i < c.n ? c.begin + i : lanes;
      call_args.push_back(b_.CreateShuffleVector(a, llvm::Constant::getNullValue(a->getType()), mask));
    }
    llvm::Value* r = b_.CreateCall(callee, call_args);
    if (c.begin == 0 && c.n == lanes && c.v.lanes == lanes) return r;
    // Widen r to `lanes` (lanes of r past n unused) and put lanes [0, n) at begin.
    std::vector<int> widen(static_cast<size_t>(lanes));
    for (int i = 0; i < lanes; ++i) widen[size_t(i)] = i < c.v.lanes ? i : -1;
    llvm::Value* wide = c.v.lanes == lanes ? r : b_.CreateShuffleVector(r, widen);
    if (!out) {
      std::vector<int> place(static_cast<size_t>(lanes), -1);
      for (int i = 0; i < c.n; ++i) place[size_t(c.begin + i)] = i;
      out = b_.CreateShuffleVector(wide, place);
      continue;
    }
    std::vector<int> merge(static_cast<size_t>(lanes));
    for (int i = 0; i < lanes; ++i)
      merge[size_t(i)] = i >= c.begin && i < c.begin + c.n ? lanes + (i - c.begin) : i;
    out = b_.CreateShuffleVector(out, wide, merge);
  }
  return out;
}

llvm::Value* CodeGenLLVM::emit_exp(DataType t, llvm::Value* x) {
  if (llvm::Value* v = emit_vector_math("exp", t, {x})) return v;
  return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
}

// sigmoid(x) = 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) for x < 0, with e = exp(-|x|) in
// (0, 1]: e^-x never overflows, so a large negative x keeps its tiny result (down to the
// denormals) instead of 1/inf = 0. NaN stays NaN; ±inf give 1 and 0. Its error is exp's
// plus three roundings (add, divide, multiply).
llvm::Value* CodeGenLLVM::emit_sigmoid(DataType t, llvm::Value* x) {
  llvm::Type* ty = llvm_type(t);
  llvm::Value* one = llvm::ConstantFP::get(ty, 1.0);
  llvm::Value* e = emit_exp(t, b_.CreateFNeg(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
  llvm::Value* r = b_.CreateFDiv(one, b_.CreateFAdd(one, e));
  llvm::Value* negative = fcmp(llvm::CmpInst::FCMP_OLT, x, llvm::ConstantFP::get(ty, 0.0));
  return b_.CreateSelect(negative, b_.CreateFMul(e, r), r);
}

}  // namespace loom::codegen
