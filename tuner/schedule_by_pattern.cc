// schedule_by_pattern: schedules derived from each stage's pattern (see the header).
#include "loom/tuner/schedule_by_pattern.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "loom/lower/stmt.h"
#include "loom/te/expr_functor.h"

namespace loom::tuner {
namespace {

using schedule::Stage;
using te::IterVar;
using te::Operation;

// Stages with less work than this (output elements x reduction extents) run on one thread:
// waking the pool costs more.
constexpr int64_t kParallelMinElements = 16384;
// Below this, a parallel stage runs as one contiguous task per thread, not the pool's 8
// dynamically taken ones: ResNet-18's global average pool (512 x 49) after a parallel producer
// took 5 us as 16 tasks, whose shared counter and scattered reads of the other core's cache
// cost more than the work, and 3 us as 2 (2 threads, measured in isolation).
constexpr int64_t kTaskPerThreadBelow = 1 << 20;

int64_t extent_of(const IterVar& iv) {
  auto e = te::as_const_int(iv->dom.extent);
  return e ? *e : 1;
}

bool has_transcendental(const Operation& op) {
  bool found = false;
  for (const te::Expr& b : op->body)
    te::post_order_visit(b, [&](const te::Expr& e) {
      if (const auto* c = e.as<te::CallNode>()) found |= c->name != "likely" && c->name != "fma" && c->name != "fabs";
    });
  return found;
}

/// Whether some tensor read of `op`'s body has `inner` (a reduce axis) and not `kept` (a
/// spatial axis, may be undefined) in its last index: the reduction runs along the
/// innermost dimension of what it reads.
bool reduces_innermost(const Operation& op, const IterVar& inner, const IterVar& kept) {
  bool yes = false;
  for (const te::Expr& b : op->body)
    te::post_order_visit(b, [&](const te::Expr& e) {
      const auto* load = e.as<te::ProducerLoadNode>();
      if (!load || load->indices.empty()) return;
      const te::Expr& last = load->indices.back();
      bool uses_inner = te::expr_uses_var(last, inner->var);
      bool uses_kept = kept.defined() && te::expr_uses_var(last, kept->var);
      yes |= uses_inner && !uses_kept;
    });
  return yes;
}

struct Scheduler {
  schedule::Schedule s;
  Target target;
  int lanes;
  std::string* why;
  /// Extents of the loops this scheduler made by split and fuse (whose domains are only
  /// known after bound inference).
  std::unordered_map<const void*, int64_t> made_extents = {};

  void note(const std::string& line) {
    if (why) *why += line + "\n";
  }

  int64_t extent_of(const IterVar& iv) const {
    auto it = made_extents.find(iv.get());
    return it != made_extents.end() ? it->second : ::loom::tuner::extent_of(iv);
  }

  /// The position of the innermost spatial axis of extent > 1, or -1.
  int vector_axis(const std::vector<IterVar>& axes) const {
    for (int i = int(axes.size()) - 1; i >= 0; --i)
      if (extent_of(axes[size_t(i)]) > 1) return i;
    return -1;
  }

  /// The vector width for an axis of `extent`: the whole axis when it fits the lanes, else
  /// the widest of lanes, lanes/2, … 4 that divides it (no tail), else the lanes with a tail.
  int64_t width_for(int64_t extent) const {
    if (extent <= lanes) return extent;
    for (int64_t w = lanes; w >= 4; w /= 2)
      if (extent % w == 0) return w;
    return lanes;
  }

  /// Splits `axis` of `st` for vectors: [outer, inner(vectorized)] (see width_for), or the
  /// axis vectorized whole. Returns the outer part (undefined when none); `tail` says whether
  /// the last part is partial (the caller keeps that outer loop out of fused loops, so that
  /// the partial-tile passes can peel it and the other tiles keep constant extents).
  IterVar vectorize_axis(Stage st, const IterVar& axis, bool* tail = nullptr) {
    const int64_t e = extent_of(axis), w = width_for(e);
    if (tail) *tail = e % w != 0;
    if (w < e) {
      auto [o, i] = st.split(axis, te::Expr(w));
      st.vectorize(i);
      made_extents[o.get()] = (e + w - 1) / w;
      return o;
    }
    st.vectorize(axis);
    return IterVar();
  }

  /// For a reduction vectorized across axis `v`: the spatial axis whose `tile` consecutive
  /// points get accumulators of their own, {-1, 0} for none. Only when axis v fits one
  /// vector, along the innermost other axis of extent > 1 that 4 or 2 divides.
  std::pair<int, int64_t> accumulator_tile(const std::vector<IterVar>& axes, int v) const {
    if (v < 0 || extent_of(axes[size_t(v)]) > lanes) return {-1, 0};
    for (int i = int(axes.size()) - 1; i >= 0; --i) {
      const int64_t e = extent_of(axes[size_t(i)]);
      if (i == v || e == 1) continue;
      for (int64_t k : {4, 2})
        if (e % k == 0) return {i, k};
      return {-1, 0};
    }
    return {-1, 0};
  }

  void parallel_outer(Stage st, std::vector<IterVar> outer, int64_t elements) {
    if (outer.empty()) return;
    int64_t iterations = 1;
    for (const IterVar& iv : outer) iterations *= extent_of(iv);
    IterVar f = outer.size() > 1 ? st.fuse(outer) : outer[0];
    made_extents[f.get()] = iterations;
    if (elements < kParallelMinElements || iterations <= 1) return;
    st.parallel(f);
    if (elements < kTaskPerThreadBelow) st.pragma(f, lowering::attr::kParallelTaskPerThread);
  }

  int64_t numel(const Stage& st) {
    int64_t n = 1;
    for (const IterVar& iv : st->op->axis) n *= extent_of(iv);
    return n;
  }

  void injective(Stage st) {
    std::vector<IterVar> axes = st->op->axis;
    const int v = vector_axis(axes);
    if (v < 0) {
      note(fmt::format("{}: injective, a single element", st->name()));
      return;
    }
    IterVar vec = axes[size_t(v)];
    std::vector<IterVar> outer;
    for (int i = 0; i < int(axes.size()); ++i)
      if (i != v) outer.push_back(axes[size_t(i)]);
    // The extent-1 axes after the vector axis move outside it (the order in memory is the same).
    st.reorder([&] {
      auto o = outer;
      o.push_back(vec);
      return o;
    }());
    bool tail = false;
    IterVar vo = vectorize_axis(st, vec, &tail);
    if (vo.defined() && !tail) outer.push_back(vo);
    parallel_outer(st, outer, numel(st));
    note(fmt::format("{}: injective, axis {} vectorized by {}", st->name(), vec.name(), width_for(extent_of(vec))));
  }

  void reduction(const te::Tensor& t) {
    Stage st = s[t];
    const Operation op = st->op;
    std::vector<IterVar> axes = op->axis, red = op->reduce_axis;
    const int v = vector_axis(axes);
    const IterVar kept = v >= 0 ? axes[size_t(v)] : IterVar();
    const IterVar inner = red.back();
    const bool along_inner = reduces_innermost(op, inner, kept);
    const int64_t rext = extent_of(inner);
    int64_t work = numel(st);
    for (const IterVar& r : red) work *= extent_of(r);
    const int64_t factor = rext >= lanes ? lanes : rext >= 8 ? 8 : rext >= 4 ? 4 : 0;
    if (along_inner && factor) {
      // rfactor: partial sums in one vector of `factor` lanes over the innermost input dim.
      auto [ko, ki] = st.split(inner, te::Expr(factor));
      te::Tensor rf = s.rfactor(t, ki, int(axes.size()));
      Stage srf = s[rf];
      std::vector<IterVar> st_axes;
      for (size_t i = 0; i < axes.size(); ++i) st_axes.push_back(st.axis(i));
      parallel_outer(st, st_axes, work);
      const auto& leaves = st.leaf_iter_vars();
      IterVar at = leaves[leaves.size() - 2];  // the last spatial loop; the lane sum is inside
      srf.compute_at(st, at);
      const auto& rl = srf.leaf_iter_vars();
      std::vector<IterVar> order;
      for (const IterVar& iv : rl)
        if (iv->type != te::IterVarType::kCommReduce && iv != srf.axis(axes.size())) order.push_back(iv);
      for (const IterVar& iv : rl)
        if (iv->type == te::IterVarType::kCommReduce) order.push_back(iv);
      order.push_back(srf.axis(axes.size()));
      srf.reorder(order);
      srf.vectorize(srf.axis(axes.size()));
      note(fmt::format("{}: reduction along the innermost input dim, '{}' rfactor'd by {} (vectorized partial sums)",
                       st->name(), inner.name(), factor));
      return;
    }
    if (kept.defined()) {
      // Vectorize across the kept axis: a register tile of accumulators inside the reduction
      // loops; when the kept axis fits one vector, `tile` vectors of it along the next spatial
      // axis, whose independent sums hide the add latency (a 7x7 global pool otherwise waits
      // on one chain of 49 adds per vector).
      te::Tensor local = s.cache_write(t, "local");
      Stage acc = s[local];
      const auto [ta, tile] = accumulator_tile(axes, v);
      std::vector<IterVar> outer;
      IterVar tile_inner;
      for (int i = 0; i < int(axes.size()); ++i) {
        if (i == v) continue;
        if (i != ta) {
          outer.push_back(st.axis(size_t(i)));
          continue;
        }
        auto [to, ti] = st.split(st.axis(size_t(i)), te::Expr(int(tile)));
        made_extents[to.get()] = extent_of(axes[size_t(i)]) / tile;
        outer.push_back(to);
        tile_inner = ti;
      }
      std::vector<IterVar> ord = outer;
      if (tile_inner.defined()) ord.push_back(tile_inner);
      ord.push_back(st.axis(size_t(v)));
      st.reorder(ord);
      bool tail = false;
      IterVar vo = vectorize_axis(st, st.axis(size_t(v)), &tail);
      const bool at_some_loop = vo.defined() || !outer.empty();
      if (vo.defined() && !tail) outer.push_back(vo);
      parallel_outer(st, outer, work);
      const auto& leaves = st.leaf_iter_vars();
      if (at_some_loop) acc.compute_at(st, leaves[leaves.size() - (tile_inner.defined() ? 3 : 2)]);
      if (tile_inner.defined()) st.unroll(tile_inner);
      std::vector<IterVar> aord;
      for (size_t i = 0; i < axes.size(); ++i)
        if (int(i) != v && int(i) != ta) aord.push_back(acc.axis(i));
      for (size_t i = 0; i < red.size(); ++i) aord.push_back(acc.reduce_axis(i));
      if (ta >= 0) aord.push_back(acc.axis(size_t(ta)));
      aord.push_back(acc.axis(size_t(v)));
      acc.reorder(aord);
      if (ta >= 0) acc.unroll(acc.axis(size_t(ta)));
      acc.vectorize(acc.axis(size_t(v)));
      note(fmt::format("{}: reduction vectorized across the kept axis {}{}", st->name(), kept.name(),
                       ta >= 0 ? fmt::format(", {} vectors of it along {}", tile, axes[size_t(ta)].name()) : ""));
      return;
    }
    std::vector<IterVar> outer;
    for (size_t i = 0; i < axes.size(); ++i) outer.push_back(st.axis(i));
    parallel_outer(st, outer, work);
    note(fmt::format("{}: reduction to a single element, serial", st->name()));
  }

  void cuda(Stage st) {
    std::vector<IterVar> axes = st->op->axis;
    int64_t n = 1;
    for (const IterVar& iv : axes) n *= extent_of(iv);
    IterVar f = axes.size() > 1 ? st.fuse(axes) : axes[0];
    const int64_t threads = std::min<int64_t>(256, n);
    auto [bx, tx] = st.split(f, te::Expr(threads));
    st.bind(bx, te::thread_axis("blockIdx.x"));
    st.bind(tx, te::thread_axis("threadIdx.x"));
    note(fmt::format("{}: {} threads per block", st->name(), threads));
  }
};

}  // namespace

schedule::Schedule schedule_by_pattern(const std::vector<te::Tensor>& outputs, const Target& target, std::string* why) {
  LOOM_CHECK(!outputs.empty(), "schedule_by_pattern: no outputs");
  Scheduler sc{schedule::create_schedule(outputs), target, 1, why};
  const DataType dt = outputs[0].dtype();
  sc.lanes = std::max(1, target.vector_bits() / std::max(8, dt.bits()));
  std::set<const te::OperationNode*> is_output;
  for (const te::Tensor& t : outputs) is_output.insert(t.op().get());
  std::map<const te::OperationNode*, int> readers;
  std::vector<Operation> order = te::post_dfs_order(outputs);
  for (const Operation& op : order)
    for (const te::Tensor& in : op->input_tensors()) ++readers[in.op().get()];
  std::vector<Operation> roots;
  for (const Operation& op : order) {
    if (op->kind != te::OpKind::kCompute) continue;
    const bool keep = is_output.count(op.get()) || !op->reduce_axis.empty() ||
                      (has_transcendental(op) && readers[op.get()] > 1);
    if (!keep) {
      sc.s[op].compute_inline();
      continue;
    }
    roots.push_back(op);
  }
  for (const Operation& op : roots) {
    if (target.is_cuda()) {
      sc.cuda(sc.s[op]);
    } else if (op->reduce_axis.empty()) {
      sc.injective(sc.s[op]);
    } else {
      sc.reduction(te::output(op));
    }
  }
  return sc.s;
}

}  // namespace loom::tuner
