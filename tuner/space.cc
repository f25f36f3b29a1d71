// Config spaces: knob definition, mixed-radix indexing, records, and the context templates use.
#include "loom/tuner/space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <set>

namespace loom::tuner {
namespace {

const char* kind_name(KnobKind k) {
  switch (k) {
    case KnobKind::kSplit: return "split";
    case KnobKind::kReorder: return "reorder";
    case KnobKind::kAnnotate: return "annotate";
    case KnobKind::kChoice: return "choice";
  }
  return "?";
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i) {
    if (n % i) continue;
    d.push_back(i);
    if (i != n / i) d.push_back(n / i);
  }
  std::sort(d.begin(), d.end());
  return d;
}

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Inner parts f1 … f_{n-1}, outer-to-inner, lexicographically ascending.
void enumerate_factors(int64_t rest, int parts_left, int64_t max_factor, std::vector<int64_t>& cur,
                       std::vector<std::vector<int64_t>>& out) {
  if (parts_left == 0) {
    out.push_back(cur);
    return;
  }
  for (int64_t d : divisors(rest)) {
    if (parts_left == 1 && d > max_factor) break;
    cur.push_back(d);
    enumerate_factors(rest / d, parts_left - 1, max_factor, cur, out);
    cur.pop_back();
  }
}

void enumerate_pow2(int64_t cap, int parts_left, int64_t max_factor, std::vector<int64_t>& cur,
                    std::vector<std::vector<int64_t>>& out) {
  if (parts_left == 0) {
    out.push_back(cur);
    return;
  }
  for (int64_t p = 1; p <= cap && (parts_left > 1 || p <= max_factor); p <<= 1) {
    cur.push_back(p);
    enumerate_pow2(cap / p, parts_left - 1, max_factor, cur, out);
    cur.pop_back();
  }
}

void check_new_name(const std::vector<Knob>& knobs, const std::string& name) {
  LOOM_CHECK(!name.empty(), "config space: a knob needs a name");
  for (const Knob& k : knobs) LOOM_CHECK(k.name != name, "config space: knob '{}' is defined twice", name);
}

std::string value_str(const Knob& k, size_t i) {
  if (k.kind == KnobKind::kAnnotate) return k.labels[i];
  if (k.kind == KnobKind::kChoice) return std::to_string(k.values[i][0]);
  return fmt::format("[{}]", fmt::join(k.values[i], ", "));
}

}  // namespace

// ---------------------------------------------------------------- ConfigSpace

std::vector<std::vector<int64_t>> ConfigSpace::split_values(int64_t extent, const SplitOptions& opt) {
  LOOM_CHECK(extent >= 1, "split knob: extent must be positive, got {}", extent);
  LOOM_CHECK(opt.num_outputs >= 2, "split knob: num_outputs must be at least 2, got {}", opt.num_outputs);
  LOOM_CHECK(opt.max_factor >= 1, "split knob: max_factor must be positive, got {}", opt.max_factor);
  const int inner = opt.num_outputs - 1;
  std::vector<std::vector<int64_t>> parts;
  std::vector<int64_t> cur;
  switch (opt.policy) {
    case SplitOptions::kFactors: enumerate_factors(extent, inner, opt.max_factor, cur, parts); break;
    case SplitOptions::kPowerOfTwo: enumerate_pow2(next_pow2(extent), inner, opt.max_factor, cur, parts); break;
    case SplitOptions::kCandidates: {
      std::set<std::vector<int64_t>> seen;
      for (const auto& c : opt.candidates) {
        LOOM_CHECK(int(c.size()) == opt.num_outputs || int(c.size()) == inner,
                   "split knob: candidate [{}] has {} parts; expected {} (or the {} inner parts)", fmt::join(c, ", "),
                   c.size(), opt.num_outputs, inner);
        std::vector<int64_t> in(c.end() - inner, c.end());
        for (int64_t f : in) LOOM_CHECK(f >= 1, "split knob: candidate [{}] has a non-positive inner part", fmt::join(c, ", "));
        if (in.back() > opt.max_factor) continue;
        if (seen.insert(in).second) parts.push_back(in);
      }
      break;
    }
  }
  LOOM_CHECK(!parts.empty(), "split knob: no value fits extent {} with max_factor {}", extent, opt.max_factor);
  std::vector<std::vector<int64_t>> values;
  values.reserve(parts.size());
  for (auto& p : parts) {
    std::vector<int64_t> v{-1};
    v.insert(v.end(), p.begin(), p.end());
    values.push_back(std::move(v));
  }
  return values;
}

const Knob& ConfigSpace::define_split(const std::string& name, int64_t extent, const SplitOptions& opt) {
  check_new_name(knobs_, name);
  Knob k{name, KnobKind::kSplit, split_values(extent, opt), {}, extent};
  knobs_.push_back(std::move(k));
  return knobs_.back();
}

const Knob& ConfigSpace::define_reorder(const std::string& name, std::vector<std::vector<int64_t>> permutations) {
  check_new_name(knobs_, name);
  LOOM_CHECK(!permutations.empty(), "reorder knob '{}': needs at least one permutation", name);
  const size_t n = permutations[0].size();
  for (const auto& p : permutations) {
    std::vector<int64_t> s = p;
    std::sort(s.begin(), s.end());
    bool ok = p.size() == n;
    for (size_t i = 0; ok && i < s.size(); ++i) ok = s[i] == int64_t(i);
    LOOM_CHECK(ok, "reorder knob '{}': [{}] is not a permutation of 0..{}", name, fmt::join(p, ", "), int64_t(n) - 1);
  }
  knobs_.push_back(Knob{name, KnobKind::kReorder, std::move(permutations), {}, 0});
  return knobs_.back();
}

const Knob& ConfigSpace::define_annotate(const std::string& name, std::vector<std::string> options) {
  check_new_name(knobs_, name);
  LOOM_CHECK(!options.empty(), "annotate knob '{}': needs at least one option", name);
  static const std::set<std::string> known{"none", "unroll", "vec", "parallel"};
  for (const auto& o : options)
    LOOM_CHECK(known.count(o), "annotate knob '{}': unknown option '{}' (expected none, unroll, vec or parallel)", name, o);
  Knob k{name, KnobKind::kAnnotate, {}, std::move(options), 0};
  for (size_t i = 0; i < k.labels.size(); ++i) k.values.push_back({int64_t(i)});
  knobs_.push_back(std::move(k));
  return knobs_.back();
}

const Knob& ConfigSpace::define_choice(const std::string& name, std::vector<int64_t> values,
                                       bool absent_means_first) {
  check_new_name(knobs_, name);
  LOOM_CHECK(!values.empty(), "choice knob '{}': needs at least one value", name);
  Knob k{name, KnobKind::kChoice, {}, {}, 0};
  k.absent_means_first = absent_means_first;
  for (int64_t v : values) k.values.push_back({v});
  knobs_.push_back(std::move(k));
  return knobs_.back();
}

int ConfigSpace::knob_index(const std::string& name) const {
  for (size_t i = 0; i < knobs_.size(); ++i)
    if (knobs_[i].name == name) return int(i);
  return -1;
}

const Knob& ConfigSpace::knob(const std::string& name) const {
  int i = knob_index(name);
  if (i < 0) {
    std::vector<std::string> names;
    for (const Knob& k : knobs_) names.push_back(k.name);
    fail("config space: no knob '{}' (knobs: {})", name, fmt::join(names, ", "));
  }
  return knobs_[i];
}

int64_t ConfigSpace::size() const {
  int64_t n = 1;
  for (const Knob& k : knobs_) {
    LOOM_CHECK(n <= std::numeric_limits<int64_t>::max() / int64_t(k.size()), "config space: more than 2^63 configs");
    n *= int64_t(k.size());
  }
  return n;
}

int64_t ConfigSpace::index_of(const std::vector<int>& choices) const {
  LOOM_CHECK(choices.size() == knobs_.size(), "config space: {} choices given for {} knobs", choices.size(), knobs_.size());
  int64_t index = 0;
  for (size_t i = knobs_.size(); i-- > 0;) {
    LOOM_CHECK(choices[i] >= 0 && size_t(choices[i]) < knobs_[i].size(),
               "config space: choice {} of knob '{}' is out of range [0, {})", choices[i], knobs_[i].name, knobs_[i].size());
    index = index * int64_t(knobs_[i].size()) + choices[i];
  }
  return index;
}

std::vector<int> ConfigSpace::choices_of(int64_t index) const {
  const int64_t n = size();
  LOOM_CHECK(index >= 0 && index < n, "config index {} is out of range [0, {})", index, n);
  std::vector<int> c(knobs_.size());
  for (size_t i = 0; i < knobs_.size(); ++i) {
    c[i] = int(index % int64_t(knobs_[i].size()));
    index /= int64_t(knobs_[i].size());
  }
  return c;
}

ConfigEntity ConfigSpace::from_record(const records::ConfigRecord& r) const {
  std::vector<int> choices(knobs_.size());
  for (const auto& [name, _] : r.knobs)
    LOOM_CHECK(knob_index(name) >= 0, "config record: knob '{}' is not in this config space", name);
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const Knob& k = knobs_[i];
    auto it = r.knobs.find(k.name);
    if (it == r.knobs.end() && k.absent_means_first) {
      choices[i] = 0;
      continue;
    }
    LOOM_CHECK(it != r.knobs.end(), "config record: knob '{}' is missing", k.name);
    int found = -1;
    if (k.kind == KnobKind::kAnnotate) {
      auto lt = r.labels.find(k.name);
      if (lt != r.labels.end()) {
        auto pos = std::find(k.labels.begin(), k.labels.end(), lt->second);
        LOOM_CHECK(pos != k.labels.end(), "config record: knob '{}' has no option '{}'", k.name, lt->second);
        found = int(pos - k.labels.begin());
      }
    }
    if (found < 0) {
      auto pos = std::find(k.values.begin(), k.values.end(), it->second);
      LOOM_CHECK(pos != k.values.end(), "config record: value [{}] is not a value of {} knob '{}' ({} values)",
                 fmt::join(it->second, ", "), kind_name(k.kind), k.name, k.size());
      found = int(pos - k.values.begin());
    }
    choices[i] = found;
  }
  return ConfigEntity(this, index_of(choices));
}

std::string ConfigSpace::str() const {
  std::string s;
  for (const Knob& k : knobs_) {
    if (k.kind == KnobKind::kSplit)
      s += fmt::format("{}: split of {} into {} ({} values)\n", k.name, k.extent, k.values[0].size(), k.size());
    else
      s += fmt::format("{}: {} ({} values)\n", k.name, kind_name(k.kind), k.size());
  }
  s += fmt::format("total: {} configs\n", size());
  return s;
}

// ---------------------------------------------------------------- ConfigEntity

ConfigEntity::ConfigEntity(const ConfigSpace* space, int64_t index) : space_(space), index_(index) {
  LOOM_ICHECK(space != nullptr);
  choices_ = space->choices_of(index);
}

const std::vector<int64_t>& ConfigEntity::value(const std::string& knob) const {
  LOOM_CHECK(space_, "config: undefined config entity");
  int i = space_->knob_index(knob);
  if (i < 0) space_->knob(knob);  // throws, naming the knobs
  return space_->knobs()[i].values[choices_[i]];
}

std::string ConfigEntity::label(const std::string& knob) const {
  LOOM_CHECK(space_, "config: undefined config entity");
  const Knob& k = space_->knob(knob);
  if (k.kind != KnobKind::kAnnotate) return "";
  return k.labels[choices_[space_->knob_index(knob)]];
}

records::ConfigRecord ConfigEntity::to_record() const {
  LOOM_CHECK(space_, "config: undefined config entity");
  records::ConfigRecord r;
  r.index = index_;
  const auto& knobs = space_->knobs();
  for (size_t i = 0; i < knobs.size(); ++i) {
    r.knobs[knobs[i].name] = knobs[i].values[choices_[i]];
    if (knobs[i].kind == KnobKind::kAnnotate) r.labels[knobs[i].name] = knobs[i].labels[choices_[i]];
  }
  return r;
}

std::string ConfigEntity::str() const {
  if (!space_) return "<undefined config>";
  std::string s;
  const auto& knobs = space_->knobs();
  for (size_t i = 0; i < knobs.size(); ++i) {
    if (i) s += ' ';
    s += knobs[i].name + '=' + value_str(knobs[i], choices_[i]);
  }
  return s;
}

// ---------------------------------------------------------------- ConfigContext

ConfigContext::ConfigContext(ConfigSpace* space) : space_(space) { LOOM_ICHECK(space != nullptr); }

ConfigContext::ConfigContext(const ConfigEntity& entity) : entity_(entity) {
  LOOM_CHECK(entity.defined(), "config context: undefined config entity");
}

const Knob& ConfigContext::lookup(const std::string& name, KnobKind kind) const {
  const ConfigSpace* sp = space_ ? space_ : entity_.space();
  const Knob& k = sp->knob(name);
  LOOM_CHECK(k.kind == kind, "config: knob '{}' is a {} knob, used as a {} knob", name, kind_name(k.kind), kind_name(kind));
  return k;
}

const std::vector<int64_t>& ConfigContext::value(const std::string& name) const {
  if (space_) return space_->knob(name).values[0];
  return entity_.value(name);
}

std::string ConfigContext::label(const std::string& name) const {
  const Knob& k = lookup(name, KnobKind::kAnnotate);
  if (space_) return k.labels[0];
  return entity_.label(name);
}

std::vector<int64_t> ConfigContext::split(const std::string& name, int64_t extent, const SplitOptions& opt) {
  if (space_) return space_->define_split(name, extent, opt).values[0];
  const Knob& k = lookup(name, KnobKind::kSplit);
  LOOM_CHECK(k.extent == extent, "config: split knob '{}' was defined for extent {}, now used for {}", name, k.extent, extent);
  return entity_.value(name);
}

std::vector<int64_t> ConfigContext::reorder(const std::string& name, std::vector<std::vector<int64_t>> permutations) {
  if (space_) return space_->define_reorder(name, std::move(permutations)).values[0];
  lookup(name, KnobKind::kReorder);
  return entity_.value(name);
}

std::string ConfigContext::annotate(const std::string& name, std::vector<std::string> options) {
  if (space_) return space_->define_annotate(name, std::move(options)).labels[0];
  return label(name);
}

int64_t ConfigContext::choice(const std::string& name, std::vector<int64_t> values, bool absent_means_first) {
  if (space_) return space_->define_choice(name, std::move(values), absent_means_first).values[0][0];
  lookup(name, KnobKind::kChoice);
  return entity_.value(name)[0];
}

std::vector<te::IterVar> ConfigContext::apply_split(const std::string& name, schedule::Stage stage,
                                                    const te::IterVar& axis) {
  lookup(name, KnobKind::kSplit);
  const std::vector<int64_t>& f = value(name);
  std::vector<te::IterVar> parts(f.size());
  te::IterVar rest = axis;
  for (size_t i = f.size() - 1; i >= 1; --i) {
    auto [outer, inner] = stage.split(rest, te::Expr(f[i]));
    parts[i] = inner;
    rest = outer;
  }
  parts[0] = rest;
  return parts;
}

void ConfigContext::apply_annotate(const std::string& name, schedule::Stage stage, const te::IterVar& axis) {
  const std::string a = label(name);
  if (a == "unroll") stage.unroll(axis);
  else if (a == "vec") stage.vectorize(axis);
  else if (a == "parallel") stage.parallel(axis);
  else LOOM_CHECK(a == "none", "config: annotate knob '{}' has unknown option '{}'", name, a);
}

}  // namespace loom::tuner
