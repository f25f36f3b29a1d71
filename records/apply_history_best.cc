// ApplyHistoryBest: the best config per (workload, target) by the median of its records, and
// target matching.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
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

double median_cost(std::vector<double> mean_costs) {
  if (mean_costs.empty()) return std::numeric_limits<double>::infinity();
  const size_t mid = mean_costs.size() / 2;
  std::nth_element(mean_costs.begin(), mean_costs.begin() + ptrdiff_t(mid), mean_costs.end());
  return mean_costs[mid];
}

const Record& median_record(const std::vector<const Record*>& records) {
  LOOM_CHECK(!records.empty(), "median_record: no records");
  std::vector<const Record*> by_cost = records;
  std::stable_sort(by_cost.begin(), by_cost.end(),
                   [](const Record* a, const Record* b) { return a->result.mean_cost() < b->result.mean_cost(); });
  return *by_cost[by_cost.size() / 2];
}

const Record& ApplyHistoryBest::Config::median_record() const {
  std::vector<const Record*> rs;
  for (const Record& r : records) rs.push_back(&r);
  return loom::records::median_record(rs);
}

ApplyHistoryBest::ApplyHistoryBest(const std::string& path) : ApplyHistoryBest(std::vector<std::string>{path}) {}

ApplyHistoryBest::ApplyHistoryBest(const std::vector<std::string>& paths) {
  for (const auto& p : paths)
    for (auto& r : read_log(p, &std::cerr).records) add(std::move(r));
}

void ApplyHistoryBest::add(Record r) {
  Entry& e = entries_[map_key(r.workload.key(), r.target)];
  const int64_t index = r.config.index;
  Config& c = e.configs[index];
  c.records.push_back(std::move(r));
  const double before = c.median;
  c.median = c.median_record().result.mean_cost();
  if (e.best != index) {
    if (std::isfinite(c.median) && (!e.best || c.median < e.configs.at(*e.best).median)) e.best = index;
    return;
  }
  if (std::isfinite(c.median) && c.median <= before) return;
  // The best config got slower (or failed): another may be ahead now.
  e.best.reset();
  for (const auto& [i, other] : e.configs)
    if (std::isfinite(other.median) && (!e.best || other.median < e.configs.at(*e.best).median)) e.best = i;
}

std::optional<Record> ApplyHistoryBest::best(const Workload& w, const std::string& target) const {
  std::string wkey = w.key();
  auto it = entries_.find(map_key(wkey, target));
  if (it != entries_.end() && it->second.best) return it->second.configs.at(*it->second.best).median_record();
  // Entries of one workload are contiguous: the map key starts with the workload key and '\n'.
  std::string prefix = wkey + '\n';
  const Config* found = nullptr;
  for (auto i = entries_.lower_bound(prefix); i != entries_.end() && i->first.rfind(prefix, 0) == 0; ++i) {
    const Entry& e = i->second;
    if (!e.best || !target_compatible(e.configs.at(*e.best).records.front().target, target)) continue;
    const Config& c = e.configs.at(*e.best);
    if (!found || c.median < found->median) found = &c;
  }
  if (found) return found->median_record();
  return std::nullopt;
}

std::vector<double> ApplyHistoryBest::measurements(const Workload& w, const std::string& target,
                                                   int64_t index) const {
  std::vector<double> out;
  auto it = entries_.find(map_key(w.key(), target));
  if (it == entries_.end()) return out;
  auto c = it->second.configs.find(index);
  if (c == it->second.configs.end()) return out;
  for (const Record& r : c->second.records) out.push_back(r.result.mean_cost());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> ApplyHistoryBest::top(const Workload& w, const std::string& target, size_t n) const {
  std::vector<std::pair<double, int64_t>> ranked;
  auto it = entries_.find(map_key(w.key(), target));
  if (it != entries_.end())
    for (const auto& [i, c] : it->second.configs)
      if (std::isfinite(c.median)) ranked.emplace_back(c.median, i);
  std::sort(ranked.begin(), ranked.end());
  std::vector<int64_t> out;
  for (size_t k = 0; k < ranked.size() && k < n; ++k) out.push_back(ranked[k].second);
  return out;
}

std::vector<Record> ApplyHistoryBest::all() const {
  std::vector<Record> out;
  for (const auto& [k, e] : entries_)
    if (e.best) out.push_back(e.configs.at(*e.best).median_record());
  return out;
}

size_t ApplyHistoryBest::size() const {
  size_t n = 0;
  for (const auto& [k, e] : entries_) n += e.best.has_value();
  return n;
}

}  // namespace loom::records
