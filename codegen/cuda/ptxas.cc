// ptxas_check: PTX assembled to machine code by the CUDA toolkit's ptxas, which NVRTC does
// not do: it rejects instructions the architecture lacks (wgmma outside sm_90a, cp.async
// before sm_80) and reports each kernel's registers, spills and shared memory.
#include <cstdlib>
#include <regex>
#include <sstream>

#include "../llvm/toolchain.h"
#include "loom/codegen/cuda.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

std::string ptxas_path() {
  if (const char* env = std::getenv("LOOM_PTXAS"); env && *env) return find_program(env);
  if (std::string p = find_program("ptxas"); !p.empty()) return p;
  return find_program("/usr/local/cuda/bin/ptxas");
}

std::vector<PtxasKernelInfo> ptxas_check(const std::string& ptx, const std::string& arch) {
  const std::string exe = ptxas_path();
  LOOM_CHECK(!exe.empty(), "ptxas: not found (set LOOM_PTXAS, or put the CUDA toolkit's bin on PATH)");
  std::string sm = arch.rfind("sm_", 0) == 0 ? arch : "sm_" + arch;
  TempDir tmp;
  write_file(tmp.path() / "kernels.ptx", ptx, "ptxas");
  std::vector<std::string> cmd = {exe, "-arch=" + sm, "-v", (tmp.path() / "kernels.ptx").string(), "-o",
                                  (tmp.path() / "kernels.cubin").string()};
  std::string log;
  int status = run_command(cmd, tmp.path() / "ptxas.log", &log);
  LOOM_CHECK(status == 0, "ptxas rejected the PTX for {} (status {}):\n{}", sm, status, log);

  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<PtxasKernelInfo> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      out.push_back(PtxasKernelInfo{});
      out.back().name = m[1].str();
      continue;
    }
    if (out.empty()) continue;
    PtxasKernelInfo& k = out.back();
    if (std::regex_search(line, m, frame)) {
      k.stack_frame_bytes = std::stoll(m[1].str());
      k.spill_store_bytes = std::stoll(m[2].str());
      k.spill_load_bytes = std::stoll(m[3].str());
    }
    if (std::regex_search(line, m, used)) k.registers = std::stoi(m[1].str());
    if (std::regex_search(line, m, barriers)) k.barriers = std::stoi(m[1].str());
    if (std::regex_search(line, m, smem)) k.shared_bytes = std::stoll(m[1].str());
  }
  return out;
}

std::string PtxasKernelInfo::str() const {
  return fmt::format("{}: {} registers, {} bytes stack frame, {} bytes spill stores, {} bytes spill loads, {} bytes "
                     "shared memory",
                     name, registers, stack_frame_bytes, spill_store_bytes, spill_load_bytes, shared_bytes);
}

}  // namespace loom::codegen
