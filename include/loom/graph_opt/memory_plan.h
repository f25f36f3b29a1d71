// Static memory planning of a fused graph: every intermediate value (an output of a group
// that is not a graph output) gets an offset in one arena, values whose lifetimes overlap
// never share bytes, and the arena is far smaller than one buffer per value.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/graph_opt/graph.h"

namespace loom::graph_opt {

/// Offsets in the arena are multiples of this.
inline constexpr int64_t kArenaAlignment = 64;

/// Where one intermediate value lives and when.
struct StorageEntry {
  ValueRef value;
  int64_t offset = 0;     // bytes from the arena's start
  int64_t bytes = 0;      // the value's size
  int first_step = 0;     // the group (execution step) that writes it
  int last_step = 0;      // the last group that reads it (first_step if none does)
};

/// Whether group `grp` of `g` is a view: its members only reshape (reshape, flatten, squeeze,
/// unsqueeze) a graph input or an intermediate value (an operator's that the graph does not
/// return) into a value the graph does not return. A view runs no kernel; its value lives in
/// its source's storage (the arena, or the caller's input buffer). A reshape into a graph
/// output, or of a value the graph returns, stays a kernel (a copy into the caller's buffer).
bool is_view_group(const Graph& g, const FusedGroup& grp);

/// The plan: one arena, every intermediate value in it. Graph inputs and outputs live in the
/// caller's arrays, constants in the module; none of them are planned.
struct MemoryPlan {
  std::vector<StorageEntry> entries;  // in the order the groups write them
  /// The values of view groups, each with the value whose storage it shares (its source,
  /// through chains of views: an intermediate, whose lifetime covers the view's readers, or
  /// a graph input).
  std::map<ValueRef, ValueRef> views;
  int64_t arena_bytes = 0;            // the arena's size
  int64_t unshared_bytes = 0;         // one buffer per value: the entries' sizes, aligned, summed
  /// The entry of value `v` (of its source for a view), or null if it is not planned.
  const StorageEntry* find(ValueRef v) const;
  /// "planned 4.0 MiB in one arena for 27 intermediate values (one buffer each: 11.2 MiB, 35.7%)".
  std::string summary() const;
  /// The summary and a table: value, bytes, offset, steps.
  std::string report(const Graph& g) const;
};

/// Plans the fused graph `g` (groups set by fuse_ops): lifetimes in group order, then
/// best-fit offsets, largest values first (each at the lowest offset that clears every
/// value it is live with).
MemoryPlan plan_memory(const Graph& g);

/// Proves `plan` safe for `g`: every intermediate value of `g` has exactly one entry with its
/// size and the lifetime the groups imply; offsets are aligned and inside the arena; no two
/// entries whose lifetimes overlap share a byte. Throws loom::Error naming the two values
/// (or the value) otherwise.
void validate_memory_plan(const Graph& g, const MemoryPlan& plan);

}  // namespace loom::graph_opt
