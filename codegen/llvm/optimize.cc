// The O3 pipeline and machine-code emission for one LLVM module.
#include "optimize.h"

#include <llvm/Analysis/AliasAnalysis.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include "loom/runtime/error.h"
#include "target_machine.h"
#include "vector_math.h"

namespace loom::codegen {

void optimize_module(llvm::Module& m, llvm::TargetMachine* tm, const Target& target) {
  llvm::TargetLibraryInfoImpl tlii(tm->getTargetTriple());
  add_vector_math_mappings(tlii, vector_math_variants(target, tm), runs_on_host(target));
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  pto.LoopInterleaving = true;
  llvm::PassBuilder pb(tm, pto);
  fam.registerPass([&] { return pb.buildDefaultAAPipeline(); });
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::string emit_machine_code(llvm::Module& m, llvm::TargetMachine* tm, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, type))
    fail("codegen: LLVM target '{}' cannot emit this kind of file", tm->getTargetTriple().str());
  pm.run(m);
  return std::string(buf.begin(), buf.end());
}

std::string to_bitcode(const llvm::Module& m) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  return out;
}

std::unique_ptr<llvm::Module> from_bitcode(const std::string& bitcode, llvm::LLVMContext& ctx) {
  auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "loom"), ctx);
  if (!m) fail("internal error: cannot read back a module's bitcode: {}", llvm::toString(m.takeError()));
  return std::move(*m);
}

}  // namespace loom::codegen
