// Machines that measure candidates, and whether one's timings stand for a target.
#pragma once
#include <string>

#include "loom/runtime/target.h"

namespace loom::tuner {

/// A machine that may build and measure candidates, as distributed tuning compares them.
struct MachineInfo {
  std::string host;       // host name
  std::string cpu_model;  // /proc/cpuinfo's model name (what records call "cpu")
  std::string cpu;        // LLVM's name of its CPU (codegen::HostCpu::name)
  std::string features;   // LLVM's sorted feature list (codegen::HostCpu::features)
  int cores = 1;

  /// This machine.
  static MachineInfo local();
  /// "host (cpu_model, cpu)" for messages.
  std::string describe() const;
};

/// Why timings taken on `self` do not stand for `target` ("" if they do), in a job whose
/// search runs on `reference`. An "llvm" target without -mcpu (or with native, generic or an
/// x86-64 level) means the reference machine's CPU: `self` must have LLVM's same CPU name and
/// the same features. With -mcpu naming a CPU model, `self`'s CPU must be that model. Other
/// target kinds (cuda) are not compared here ("").
std::string measure_mismatch(const Target& target, const MachineInfo& self, const MachineInfo& reference);

/// measure_mismatch(target, self, reference) for this machine, described by `self` (normally
/// MachineInfo::local()), after checking that code for `target` runs here at all
/// (codegen::host_incompatibility).
std::string local_measure_mismatch(const Target& target, const MachineInfo& self, const MachineInfo& reference);

}  // namespace loom::tuner
