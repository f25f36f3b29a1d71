// MachineInfo and the rule that lets a machine's timings stand for a target.
#include "loom/tuner/machine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>
#include <thread>
#include <vector>

#include "loom/codegen/check_target.h"
#include "loom/tuner/measure.h"

namespace loom::tuner {
namespace {

std::vector<std::string> split_features(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string f;
  while (std::getline(in, f, ','))
    if (!f.empty()) out.push_back(f);
  std::sort(out.begin(), out.end());
  return out;
}

/// Up to 6 names of `a` not in `b` (both sorted), then "…" when there are more.
std::string missing_from(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> d;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(d));
  if (d.size() > 6) {
    d.resize(6);
    d.push_back("…");
  }
  return fmt::format("{}", fmt::join(d, ","));
}

bool names_the_host(const std::string& mcpu) {
  return mcpu.empty() || mcpu == "native" || mcpu == "generic" || mcpu.rfind("x86-64", 0) == 0;
}

}  // namespace

MachineInfo MachineInfo::local() {
  codegen::HostCpu c = codegen::host_cpu();
  MachineInfo m;
  m.host = host_name();
  m.cpu_model = host_cpu_name();
  m.cpu = c.name;
  m.features = c.features;
  m.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return m;
}

std::string MachineInfo::describe() const { return fmt::format("{} ({}, {})", host, cpu_model, cpu); }

std::string measure_mismatch(const Target& target, const MachineInfo& self, const MachineInfo& reference) {
  if (!target.is_cpu()) return "";
  const std::string mcpu = target.mcpu();
  if (!names_the_host(mcpu)) {
    if (self.cpu == mcpu) return "";
    return fmt::format("target \"{}\" names CPU '{}', this machine's is '{}'", target.str(), mcpu, self.cpu);
  }
  if (self.cpu != reference.cpu)
    return fmt::format("this machine's CPU is '{}', the reference machine's ({}) is '{}'", self.cpu, reference.host,
                       reference.cpu);
  if (self.features != reference.features) {
    std::vector<std::string> mine = split_features(self.features), ref = split_features(reference.features);
    std::string lacks = missing_from(ref, mine), extra = missing_from(mine, ref);
    return fmt::format("this machine's CPU '{}' has other features than the reference machine's ({}){}{}", self.cpu,
                       reference.host, lacks.empty() ? "" : ": it lacks " + lacks,
                       extra.empty() ? "" : (lacks.empty() ? ": it also has " : ", and also has ") + extra);
  }
  return "";
}

std::string local_measure_mismatch(const Target& target, const MachineInfo& self, const MachineInfo& reference) {
  if (target.is_cpu()) {
    std::string why = codegen::host_incompatibility(target);
    if (!why.empty()) return why;
  }
  return measure_mismatch(target, self, reference);
}

}  // namespace loom::tuner
