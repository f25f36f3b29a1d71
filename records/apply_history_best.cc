// ApplyHistoryBest: the best valid record per (workload, target), and target matching.
#include <iostream>
#include <sstream>

#include "loom/records/record.h"

namespace loom::records {

namespace {

std::string map_key(const std::string& workload_key, const std::string& target) {
  return workload_key + '\n' + target;
}

/// Kind, and the option that names the machine (-mcpu for CPUs, -arch for cuda); "" is the host.
std::pair<std::string, std::string> machine_of(const std::string& target) {
  std::istringstream in(target);
  std::string kind, tok, machine;
  in >> kind;
  std::string opt = kind == "cuda" ? "arch" : "mcpu";
  while (in >> tok) {
    size_t start = tok.rfind("--", 0) == 0 ? 2 : (tok.rfind("-", 0) == 0 ? 1 : 0);
    size_t eq = tok.find('=');
    if (start == 0 || eq == std::string::npos) continue;
    if (tok.substr(start, eq - start) == opt) machine = tok.substr(eq + 1);
  }
  if (machine == "native") machine.clear();
  return {kind, machine};
}

}  // namespace

bool target_compatible(const std::string& record_target, const std::string& target) {
  return machine_of(record_target) == machine_of(target);
}

ApplyHistoryBest::ApplyHistoryBest(const std::string& path) : ApplyHistoryBest(std::vector<std::string>{path}) {}

ApplyHistoryBest::ApplyHistoryBest(const std::vector<std::string>& paths) {
  for (const auto& p : paths)
    for (const auto& r : read_log(p, &std::cerr).records) add(r);
}

void ApplyHistoryBest::add(const Record& r) {
  if (!r.valid()) return;
  std::string k = map_key(r.workload.key(), r.target);
  auto it = best_.find(k);
  if (it == best_.end()) {
    best_.emplace(std::move(k), r);
  } else if (r.result.mean_cost() < it->second.result.mean_cost()) {
    it->second = r;
  }
}

std::optional<Record> ApplyHistoryBest::best(const Workload& w, const std::string& target) const {
  std::string wkey = w.key();
  auto it = best_.find(map_key(wkey, target));
  if (it != best_.end()) return it->second;
  // Entries of one workload are contiguous: the map key starts with the workload key and '\n'.
  std::string prefix = wkey + '\n';
  const Record* found = nullptr;
  for (auto i = best_.lower_bound(prefix); i != best_.end() && i->first.rfind(prefix, 0) == 0; ++i) {
    if (!target_compatible(i->second.target, target)) continue;
    if (!found || i->second.result.mean_cost() < found->result.mean_cost()) found = &i->second;
  }
  if (found) return *found;
  return std::nullopt;
}

std::vector<Record> ApplyHistoryBest::all() const {
  std::vector<Record> out;
  out.reserve(best_.size());
  for (const auto& [k, r] : best_) out.push_back(r);
  return out;
}

}  // namespace loom::records
