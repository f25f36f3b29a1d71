// Static memory planning: lifetimes over the group order, best-fit offsets in one arena, and
// the validator that proves a plan free of aliasing.
#include "loom/graph_opt/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::graph_opt {

namespace {

int64_t align(int64_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool overlap_in_time(const StorageEntry& a, const StorageEntry& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

bool overlap_in_space(const StorageEntry& a, const StorageEntry& b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

struct Lifetimes {
  std::vector<StorageEntry> entries;
  std::map<ValueRef, ValueRef> views;
};

/// Every intermediate value with its lifetime (offsets unset), in the order groups write them,
/// and the views with their sources (whose lifetimes extend over the views' readers).
Lifetimes lifetimes(const Graph& g) {
  LOOM_CHECK(!g.groups.empty() || g.num_ops() == 0, "graph '{}' is not fused: plan memory after fuse_ops", g.name);
  std::set<ValueRef> graph_outputs(g.outputs.begin(), g.outputs.end());
  std::map<ValueRef, size_t> index;
  Lifetimes out;
  std::vector<StorageEntry>& entries = out.entries;
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    for (const ValueRef& v : g.groups[gi].inputs) {
      auto it = index.find(v);
      if (it != index.end()) entries[it->second].last_step = int(gi);
    }
    if (is_view_group(g, g.groups[gi])) {
      const ValueRef in = g.groups[gi].inputs[0], view = g.groups[gi].outputs[0];
      auto src = out.views.find(in);
      const ValueRef root = src != out.views.end() ? src->second : in;
      out.views[view] = root;
      if (auto it = index.find(in); it != index.end()) index[view] = it->second;
      else LOOM_ICHECK(g.node(root).is_input());
      continue;
    }
    for (const ValueRef& v : g.groups[gi].outputs) {
      if (graph_outputs.count(v)) continue;
      index[v] = entries.size();
      entries.push_back({v, 0, nbytes(g.type(v)), int(gi), int(gi)});
    }
  }
  return out;
}

bool is_reshape_op(const std::string& op) {
  return op == "reshape" || op == "flatten" || op == "squeeze" || op == "unsqueeze";
}

std::string mib(int64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / (1024.0 * 1024.0)); }

}  // namespace

bool is_view_group(const Graph& g, const FusedGroup& grp) {
  if (grp.inputs.size() != 1 || grp.outputs.size() != 1) return false;
  for (int n : grp.nodes)
    if (!is_reshape_op(g.nodes[size_t(n)].op)) return false;
  const ValueRef in = grp.inputs[0];
  const Node& src = g.node(in);
  if (!(src.is_op() || src.is_input()) || g.type(in).dtype != g.type(grp.outputs[0]).dtype) return false;
  for (const ValueRef& o : g.outputs)
    if (o == in && src.is_op()) return false;
  for (int n : grp.nodes)
    for (const ValueRef& o : g.outputs)
      if (o.node == n) return false;
  return true;
}

const StorageEntry* MemoryPlan::find(ValueRef v) const {
  if (auto it = views.find(v); it != views.end()) v = it->second;
  for (const StorageEntry& e : entries)
    if (e.value == v) return &e;
  return nullptr;
}

std::string MemoryPlan::summary() const {
  double pct = unshared_bytes ? 100.0 * double(arena_bytes) / double(unshared_bytes) : 0.0;
  return fmt::format("planned {} in one arena for {} intermediate values (one buffer each: {}; {:.1f}%)",
                     mib(arena_bytes), entries.size(), mib(unshared_bytes), pct);
}

std::string MemoryPlan::report(const Graph& g) const {
  std::ostringstream os;
  os << summary() << "\n";
  os << fmt::format("  {:<40} {:>12} {:>12} {:>6} {:>6}\n", "value", "bytes", "offset", "from", "to");
  for (const StorageEntry& e : entries)
    os << fmt::format("  {:<40} {:>12} {:>12} {:>6} {:>6}\n", g.value_name(e.value), e.bytes, e.offset, e.first_step,
                      e.last_step);
  return os.str();
}

MemoryPlan plan_memory(const Graph& g) {
  MemoryPlan plan;
  Lifetimes life = lifetimes(g);
  plan.entries = std::move(life.entries);
  plan.views = std::move(life.views);
  std::vector<size_t> order(plan.entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Largest first (then earliest), each at the lowest offset where it fits beside the
  // already placed values it is live with: the smallest gap that holds it, else the top.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.entries[a].bytes > plan.entries[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    StorageEntry& e = plan.entries[i];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of live neighbours
    for (size_t j : placed)
      if (overlap_in_time(e, plan.entries[j]))
        busy.push_back({plan.entries[j].offset, plan.entries[j].offset + align(plan.entries[j].bytes)});
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    int64_t need = align(e.bytes);
    for (const auto& [b, en] : busy) {
      if (b - cursor >= need && b - cursor < best_gap) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, en);
    }
    e.offset = best >= 0 ? best : cursor;
    placed.push_back(i);
    plan.arena_bytes = std::max(plan.arena_bytes, e.offset + need);
    plan.unshared_bytes += need;
  }
  validate_memory_plan(g, plan);
  return plan;
}

void validate_memory_plan(const Graph& g, const MemoryPlan& plan) {
  Lifetimes life = lifetimes(g);
  LOOM_CHECK(plan.views == life.views, "memory plan of '{}': {} views planned, the groups make {}", g.name,
             plan.views.size(), life.views.size());
  const std::vector<StorageEntry>& want = life.entries;
  std::map<ValueRef, const StorageEntry*> have;
  for (const StorageEntry& e : plan.entries) {
    LOOM_CHECK(have.emplace(e.value, &e).second, "memory plan of '{}': {} has two entries", g.name,
               g.value_name(e.value));
  }
  for (const StorageEntry& w : want) {
    auto it = have.find(w.value);
    LOOM_CHECK(it != have.end(), "memory plan of '{}': intermediate value {} has no storage", g.name,
               g.value_name(w.value));
    const StorageEntry& e = *it->second;
    LOOM_CHECK(e.bytes == w.bytes, "memory plan of '{}': {} is planned as {} bytes but holds {}", g.name,
               g.value_name(w.value), e.bytes, w.bytes);
    LOOM_CHECK(e.first_step == w.first_step && e.last_step == w.last_step,
               "memory plan of '{}': {} is planned live over groups {}..{} but is live over {}..{}", g.name,
               g.value_name(w.value), e.first_step, e.last_step, w.first_step, w.last_step);
    LOOM_CHECK(e.offset >= 0 && e.offset % kArenaAlignment == 0 && e.offset + e.bytes <= plan.arena_bytes,
               "memory plan of '{}': {} at offset {} ({} bytes) is misaligned or outside the {}-byte arena", g.name,
               g.value_name(w.value), e.offset, e.bytes, plan.arena_bytes);
  }
  LOOM_CHECK(plan.entries.size() == want.size(), "memory plan of '{}': {} entries for {} intermediate values", g.name,
             plan.entries.size(), want.size());
  // Sweep over entries by offset; any two live at once must not share a byte.
  std::vector<const StorageEntry*> by_offset;
  for (const StorageEntry& e : plan.entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const StorageEntry* a, const StorageEntry* b) { return a->offset < b->offset; });
  for (size_t i = 0; i < by_offset.size(); ++i)
    for (size_t j = i + 1; j < by_offset.size() && by_offset[j]->offset < by_offset[i]->offset + by_offset[i]->bytes;
         ++j) {
      const StorageEntry& a = *by_offset[i];
      const StorageEntry& b = *by_offset[j];
      LOOM_CHECK(!(overlap_in_time(a, b) && overlap_in_space(a, b)),
                 "memory plan of '{}': {} (bytes [{}, {}), groups {}..{}) and {} (bytes [{}, {}), groups {}..{}) are "
                 "live at the same time in overlapping storage",
                 g.name, g.value_name(a.value), a.offset, a.offset + a.bytes, a.first_step, a.last_step,
                 g.value_name(b.value), b.offset, b.offset + b.bytes, b.first_step, b.last_step);
    }
}

}  // namespace loom::graph_opt
