// SketchBuilder and Generator: what the sketch rules share (see sketch.h).
#include "sketch.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>

#include "loom/lower/stmt.h"

namespace loom::tuner::autosched {

const char* to_string(Role r) {
  switch (r) {
    case Role::kInput: return "input";
    case Role::kInline: return "inline";
    case Role::kPlaced: return "placed";
    case Role::kTiled: return "multi-level tiled";
    case Role::kEpilogue: return "epilogue";
    case Role::kReduction: return "reduction";
    case Role::kInjective: return "injective";
  }
  return "?";
}

// ---------------------------------------------------------------- split values

namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

/// Powers of two and divisors of `extent`, from 1 up to min(extent, max_factor).
std::vector<int64_t> factors(int64_t extent, int64_t max_factor) {
  std::set<int64_t> f;
  const int64_t cap = std::min(extent, max_factor);
  for (int64_t p = 1; p <= cap; p <<= 1) f.insert(p);
  for (int64_t d : divisors(extent))
    if (d <= cap) f.insert(d);
  return {f.begin(), f.end()};
}

constexpr int64_t kMaxInnerFactor = 64;

}  // namespace

std::vector<std::vector<int64_t>> tile_values(int64_t extent, int parts, int64_t max_innermost) {
  LOOM_CHECK(parts >= 2 && parts <= 4, "tile_values: {} parts", parts);
  const std::vector<int64_t> inner = factors(extent, kMaxInnerFactor);
  const std::vector<int64_t> innermost =
      max_innermost > 0 ? factors(extent, std::min(kMaxInnerFactor, max_innermost)) : inner;
  const std::vector<int64_t> outer = factors(extent, extent);
  std::vector<std::vector<int64_t>> out;
  if (parts == 2) {
    for (int64_t f : innermost) out.push_back({-1, f});
    return out;
  }
  for (int64_t f1 : parts == 4 ? outer : std::vector<int64_t>{1})
    for (int64_t f2 : parts == 4 ? inner : outer)
      for (int64_t f3 : innermost) {
        if (f1 * f2 > extent || f1 * f2 * f3 > extent) continue;
        if (parts == 4) out.push_back({-1, f1, f2, f3});
        else out.push_back({-1, f2, f3});
      }
  return out;
}

std::vector<std::vector<int64_t>> factor_values(int64_t extent, int64_t max_factor) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t f : factors(extent, max_factor)) out.push_back({-1, f});
  return out;
}

size_t closest_value(const std::vector<std::vector<int64_t>>& values, const std::vector<int64_t>& want) {
  size_t best = 0;
  double best_d = INFINITY;
  for (size_t i = 0; i < values.size(); ++i) {
    double d = 0;
    for (size_t k = 0; k < want.size() && k + 1 < values[i].size(); ++k)
      d += std::abs(std::log2(double(values[i][k + 1])) - std::log2(double(want[k])));
    if (d < best_d) best_d = d, best = i;
  }
  return best;
}

// ---------------------------------------------------------------- SketchBuilder

SketchBuilder::SketchBuilder(const ComputeDag& d, const Target& t, ConfigSpace* space)
    : dag(d), target(t), plans(d.stages().size()), space_(*space) {
  lanes = std::max(1, target.vector_bits() / std::max(8, dag.outputs()[0].dtype().bits()));
}

std::vector<int> SketchBuilder::effective_consumers(int i) const {
  std::set<int> out;
  std::vector<int> todo = dag.stages()[size_t(i)].consumers;
  std::set<int> seen;
  while (!todo.empty()) {
    int c = todo.back();
    todo.pop_back();
    if (!seen.insert(c).second) continue;
    if (plans[size_t(c)].role == Role::kInline) {
      for (int cc : dag.stages()[size_t(c)].consumers) todo.push_back(cc);
    } else {
      out.insert(c);
    }
  }
  return {out.begin(), out.end()};
}

namespace {

/// Keeps `n` of `values`: `*preferred`, then evenly spaced others from the first on
/// (`*preferred` is updated to its new index).
template <typename T>
std::vector<T> thin(std::vector<T> values, size_t n, size_t* preferred) {
  if (values.size() <= n) return values;
  *preferred = std::min(*preferred, values.size() - 1);
  std::set<size_t> keep{*preferred};
  for (size_t k = 0; keep.size() < n && k < n; ++k) keep.insert(k * (values.size() - 1) / std::max<size_t>(1, n - 1));
  std::vector<T> out;
  for (size_t k : keep) {
    if (k == *preferred) *preferred = out.size();
    out.push_back(values[k]);
  }
  return out;
}

}  // namespace

size_t SketchBuilder::budget(size_t n) {
  // Spaces stay below 2^kMaxLog2Configs configs (int64 indices, with room to spare): a knob
  // that would cross the bound keeps fewer values.
  const double left = kMaxLog2Configs - log2_size_;
  const size_t allowed = left >= 62 ? n : size_t(std::max(1.0, std::floor(std::exp2(std::max(0.0, left)))));
  const size_t kept = std::min(n, allowed);
  log2_size_ += std::log2(double(std::max<size_t>(1, kept)));
  return kept;
}

void SketchBuilder::define_split(int i, const std::string& what, int64_t extent,
                                 std::vector<std::vector<int64_t>> values, size_t preferred) {
  const size_t kept = budget(values.size());
  values = thin(std::move(values), kept, &preferred);
  SplitOptions opt;
  opt.policy = SplitOptions::kCandidates;
  opt.num_outputs = int(values.at(0).size());
  opt.candidates = std::move(values);
  const std::string name = dag.stages()[size_t(i)].label + "." + what;
  space_.define_split(name, extent, opt);
  plans[size_t(i)].knobs[what] = int(space_.knobs().size()) - 1;
  preferred_.push_back(int(std::min(preferred, space_.knobs().back().size() - 1)));
}

void SketchBuilder::define_choice(int i, const std::string& what, std::vector<int64_t> values, size_t preferred) {
  const size_t kept = budget(values.size());
  values = thin(std::move(values), kept, &preferred);
  const std::string name = (i >= 0 ? dag.stages()[size_t(i)].label + "." : std::string()) + what;
  space_.define_choice(name, std::move(values));
  if (i >= 0) plans[size_t(i)].knobs[what] = int(space_.knobs().size()) - 1;
  preferred_.push_back(int(std::min(preferred, space_.knobs().back().size() - 1)));
}

// ---------------------------------------------------------------- Generator

Generator::Generator(const ComputeDag& d, const std::vector<StagePlan>& p, const Target& t, int l,
                     const ConfigEntity& config)
    : dag(d), plans(p), target(t), lanes(l), space_(*config.space()), choices_(config.choices()) {
  read_.assign(choices_.size(), false);
  normalized_.assign(choices_.size(), -1);
  s = schedule::create_schedule(dag.outputs());
  place.resize(dag.stages().size());
  for (size_t i = 0; i < dag.stages().size(); ++i) {
    if (dag.stages()[i].placeholder) continue;
    place[i].top = place[i].body = s[dag.stages()[i].op];
  }
}

int Generator::knob(int k) {
  read_[size_t(k)] = true;
  return choices_[size_t(k)];
}

int Generator::choice_index(int i, const std::string& what) {
  auto it = plans[size_t(i)].knobs.find(what);
  LOOM_CHECK(it != plans[size_t(i)].knobs.end(), "auto-scheduler: stage '{}' has no knob '{}'",
             dag.stages()[size_t(i)].label, what);
  return knob(it->second);
}

int64_t Generator::choice(int i, const std::string& what) {
  const int k = plans[size_t(i)].knobs.at(what);
  return space_.knobs()[size_t(k)].values[size_t(choice_index(i, what))][0];
}

const std::vector<int64_t>& Generator::split(int i, const std::string& what) {
  const int k = plans[size_t(i)].knobs.at(what);
  return space_.knobs()[size_t(k)].values[size_t(choice_index(i, what))];
}

void Generator::normalize(int i, const std::string& what, int64_t value) {
  const int k = plans[size_t(i)].knobs.at(what);
  const auto& values = space_.knobs()[size_t(k)].values;
  for (size_t v = 0; v < values.size(); ++v)  // a thinned knob may lack the value: then left as is
    if (values[v][0] == value && int(v) != choices_[size_t(k)]) normalized_[size_t(k)] = int(v);
}

std::vector<int> Generator::canonical_choices() const {
  std::vector<int> c(choices_.size(), 0);
  for (size_t k = 0; k < c.size(); ++k)
    if (read_[k]) c[k] = normalized_[k] >= 0 ? normalized_[k] : choices_[k];
  return c;
}

te::Tensor Generator::tensor(int i, int value) const { return te::output(dag.stages()[size_t(i)].op, value); }

void Generator::check_vector(int64_t n, DataType t) const {
  const int64_t limit = int64_t(kMaxVectorRegisters) * target.vector_bits();
  if (n > 1 && n * t.bits() > limit)
    throw InstantiationError(fmt::format("a vector of {} x {} is wider than {} registers of {} bits of target '{}'", n,
                                         t.str(), kMaxVectorRegisters, target.vector_bits(), target.str()));
}

std::vector<te::IterVar> Generator::split_by(schedule::Stage st, const te::IterVar& axis,
                                             const std::vector<int64_t>& f) {
  std::vector<te::IterVar> parts(f.size());
  te::IterVar rest = axis;
  for (size_t k = f.size() - 1; k >= 1; --k) {
    auto [o, in] = st.split(rest, te::Expr(f[k]));
    parts[k] = in;
    rest = o;
  }
  parts[0] = rest;
  return parts;
}

te::IterVar Generator::parallelize(schedule::Stage st, const std::vector<te::IterVar>& loops, int64_t work,
                                   int64_t iterations) {
  if (loops.empty()) return te::IterVar();
  te::IterVar f = loops.size() > 1 ? st.fuse(loops) : loops[0];
  if (work >= kParallelMinWork && iterations >= 2) {
    st.parallel(f);
    if (work < kTaskPerThreadBelow) st.pragma(f, lowering::attr::kParallelTaskPerThread);
  }
  return f;
}

void Generator::set_loops(int i, schedule::Stage top, std::vector<te::IterVar> top_loops, schedule::Stage body,
                          std::vector<te::IterVar> body_loops, te::IterVar body_at) {
  Placement& p = place[size_t(i)];
  p.top = top;
  p.top_loops = std::move(top_loops);
  if (!body.defined()) {
    p.body = top;
    p.body_loops = p.top_loops;
    p.body_at = te::IterVar();
  } else {
    p.body = body;
    p.body_loops = std::move(body_loops);
    p.body_at = body_at;
  }
}

namespace {
int leaf_pos(const schedule::Stage& st, const te::IterVar& iv) {
  const auto& leaves = st->leaf_iter_vars;
  auto it = std::find(leaves.begin(), leaves.end(), iv);
  return it == leaves.end() ? INT_MAX : int(it - leaves.begin());
}
}  // namespace

std::pair<int, int> Generator::entry(int c) const {
  const Placement* p = &place[size_t(c)];
  int e = p->body == p->top ? INT_MAX : leaf_pos(p->top, p->body_at);
  int y = c;
  while (p->host >= 0) {
    const Placement& h = place[size_t(p->host)];
    e = p->at_stage == h.top ? leaf_pos(h.top, p->at) : leaf_pos(h.top, h.body_at);
    y = p->host;
    p = &h;
  }
  return {y, e};
}

std::vector<Generator::Location> Generator::locations(int i) const {
  // Consumers as the schedule has them: inlined ones replaced by theirs.
  std::set<int> consumers, seen;
  std::vector<int> todo = dag.stages()[size_t(i)].consumers;
  while (!todo.empty()) {
    int c = todo.back();
    todo.pop_back();
    if (!seen.insert(c).second) continue;
    if (place[size_t(c)].inlined) {
      for (int cc : dag.stages()[size_t(c)].consumers) todo.push_back(cc);
    } else {
      consumers.insert(c);
    }
  }
  if (consumers.empty()) return {};
  std::vector<Location> inner, outer;
  if (consumers.size() == 1) {
    const int c = *consumers.begin();
    for (const te::IterVar& l : place[size_t(c)].body_loops) inner.push_back({c, place[size_t(c)].body, l});
  }
  int root = -1, limit = INT_MAX;
  for (int c : consumers) {
    auto [r, e] = entry(c);
    if (root >= 0 && r != root) return inner;  // consumers in different roots: only inside the one
    root = r;
    limit = std::min(limit, e);
  }
  const Placement& r = place[size_t(root)];
  const bool same = !inner.empty() && inner[0].stage == r.top;
  if (!same)
    for (const te::IterVar& l : r.top_loops)
      if (leaf_pos(r.top, l) <= limit) outer.push_back({root, r.top, l});
  // At most kMaxLocations: the innermost half of the consumer's loops, the outer ones of the root.
  const size_t n_inner = std::min(inner.size(), outer.empty() ? size_t(kMaxLocations) : size_t(kMaxLocations / 2));
  std::vector<Location> out(inner.end() - std::ptrdiff_t(n_inner), inner.end());
  for (size_t k = 0; k < outer.size() && out.size() < size_t(kMaxLocations); ++k) out.push_back(outer[k]);
  return out;
}

void Generator::compute_at(int i, const Location& loc) {
  Placement& p = place[size_t(i)];
  p.top.compute_at(loc.stage, loc.loop);
  p.host = loc.host;
  p.at_stage = loc.stage;
  p.at = loc.loop;
}

}  // namespace loom::tuner::autosched
