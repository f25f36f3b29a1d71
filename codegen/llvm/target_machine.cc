// LLVM target set-up: one-time initialization and cached TargetMachines per loom Target.
#include "target_machine.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "loom/codegen/check_target.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

namespace {

std::string triple_of(const Target& target) {
  return target.has("mtriple") ? llvm::Triple::normalize(target.get("mtriple")) : llvm::sys::getProcessTriple();
}

std::string host_features() {
  std::string out;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) {
    if (!out.empty()) out += ',';
    out += (f.second ? "+" : "-");
    out += f.first().str();
  }
  return out;
}

/// Names in `valid` closest to `name` by edit distance, at most `n` of them.
std::vector<std::string> closest_names(const std::string& name, std::vector<std::string> valid, size_t n) {
  llvm::StringRef want(name);
  std::stable_sort(valid.begin(), valid.end(), [&](const std::string& a, const std::string& b) {
    return want.edit_distance(a) < want.edit_distance(b);
  });
  valid.resize(std::min(valid.size(), n));
  return valid;
}

/// Throws loom::Error unless LLVM's subtarget tables for `triple` know `cpu` and every
/// feature of -mattr; LLVM itself only warns and may then abort (x86-64 code for a
/// subtarget without 64-bit mode).
void check_cpu_and_features(const Target& target, const llvm::Target& t, const std::string& triple,
                            const std::string& cpu) {
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t.createMCSubtargetInfo(triple, "", ""));
  if (!sti) return;
  std::string list_hint = fmt::format("(the valid names are listed by `llc -mtriple={} -mcpu=help`)", triple);
  if (!cpu.empty() && !sti->isCPUStringValid(cpu)) {
    std::vector<std::string> cpus;
    for (const auto& d : sti->getAllProcessorDescriptions()) cpus.emplace_back(d.Key);
    fail("target \"{}\": unknown CPU '{}' for triple '{}'; closest valid CPUs: {} {}", target.str(), cpu, triple,
         fmt::join(closest_names(cpu, cpus, 5), ", "), list_hint);
  }
  std::vector<std::string> features;
  for (const auto& f : sti->getAllProcessorFeatures()) features.emplace_back(f.Key);
  std::string mattr = target.get("mattr");
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(mattr).split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts) {
    if (part[0] != '+' && part[0] != '-')
      fail("target \"{}\": -mattr entry '{}' must start with '+' (enable) or '-' (disable), e.g. +avx2", target.str(),
           part.str());
    std::string name = part.drop_front().str();
    if (std::find(features.begin(), features.end(), name) == features.end())
      fail("target \"{}\": unknown CPU feature '{}' for triple '{}'; closest valid features: {} (the valid names "
           "are listed by `llc -mtriple={} -mattr=help`)",
           target.str(), name, triple, fmt::join(closest_names(name, features, 5), ", "), triple);
  }
  llvm::Triple tt(triple);
  if (tt.getArch() == llvm::Triple::x86_64) {
    std::unique_ptr<llvm::MCSubtargetInfo> chosen(
        t.createMCSubtargetInfo(triple, cpu.empty() ? "generic" : cpu, mattr));
    if (chosen && !chosen->checkFeatures("+64bit"))
      fail("target \"{}\": CPU '{}' (with -mattr '{}') has no 64-bit mode, which triple '{}' needs", target.str(),
           cpu.empty() ? "generic" : cpu, mattr, triple);
  }
}

std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target) {
  init_llvm();
  std::string triple = triple_of(target);
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t) fail("target \"{}\": LLVM has no backend for triple '{}': {}", target.str(), triple, err);

  bool host = runs_on_host(target);
  std::string cpu = target.get("mcpu");
  check_cpu_and_features(target, *t, triple, cpu == "native" ? "" : cpu);
  std::string features = target.get("mattr");
  if (cpu.empty() || cpu == "native") {
    if (host) {
      cpu = llvm::sys::getHostCPUName().str();
      std::string hf = host_features();
      features = features.empty() ? hf : hf + "," + features;
    } else {
      cpu = "generic";
    }
  }

  // SSE4a's insertq and extrq have no VEX form: LLVM uses them for some shuffles of vectors
  // that do not fill a register (12 lanes), in the middle of 256-bit AVX code, and on the AMD
  // EPYC hosts measured each costs a state transition. A depthwise convolution spent 80% of
  // its time next to them and ran 11x slower than without (docs/benchmarks.md).
  if (llvm::Triple(triple).isX86() && target.get("mattr").find("sse4a") == std::string::npos)
    features += features.empty() ? "-sse4a" : ",-sse4a";

  llvm::TargetOptions opts;
  opts.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      triple, cpu, features, opts, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) fail("target \"{}\": LLVM could not create a target machine for cpu '{}' on '{}'", target.str(), cpu, triple);
  return tm;
}

}  // namespace

bool runs_on_host(const Target& target) {
  if (!target.has("mtriple")) return true;
  llvm::Triple want(llvm::Triple::normalize(target.get("mtriple")));
  llvm::Triple host(llvm::sys::getProcessTriple());
  return want.getArch() == host.getArch() && want.getOS() == host.getOS();
}

std::string host_incompatibility(const Target& target) {
  if (!runs_on_host(target))
    return fmt::format("target \"{}\" is for triple '{}', this host is '{}'", target.str(), triple_of(target),
                       llvm::sys::getProcessTriple());
  if (!target.has("mattr") && (target.mcpu().empty() || target.mcpu() == "native")) return "";
  thread_local std::unordered_map<std::string, std::string> cache;
  auto it = cache.find(target.str());
  if (it != cache.end()) return it->second;
  const llvm::MCSubtargetInfo* sti = get_target_machine(target)->getMCSubtargetInfo();
  std::string why;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) {
    std::string plus(1, '+');
    plus.append(f.first().data(), f.first().size());
    if (f.second || !sti->checkFeatures(plus)) continue;
    why = fmt::format("target \"{}\" uses CPU feature '{}', which this host ({}) lacks", target.str(), f.first().str(),
                      llvm::sys::getHostCPUName().str());
    break;
  }
  return cache[target.str()] = why;
}

HostCpu host_cpu() {
  std::vector<std::string> on;
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    if (f.second) on.push_back("+" + f.first().str());
  std::sort(on.begin(), on.end());
  return HostCpu{llvm::sys::getHostCPUName().str(), fmt::format("{}", fmt::join(on, ","))};
}

llvm::TargetMachine* get_target_machine(const Target& target) {
  thread_local std::unordered_map<std::string, std::unique_ptr<llvm::TargetMachine>> cache;
  std::string key = target.str();
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  auto tm = create_target_machine(target);
  return cache.emplace(key, std::move(tm)).first->second.get();
}

}  // namespace loom::codegen
