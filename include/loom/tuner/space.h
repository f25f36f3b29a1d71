// Config spaces in the style of AutoTVM: a template defines knobs, a config picks one value
// per knob, and a config's index enumerates the space (mixed radix over the knobs, the
// first-defined knob varying fastest: index = c0 + n0 * (c1 + n1 * (c2 + …))).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/schedule/schedule.h"

namespace loom::tuner {

enum class KnobKind : uint8_t { kSplit, kReorder, kAnnotate, kChoice };

/// How a split knob enumerates its factors. A value is [-1, f1, …, f_{n-1}]: the inner
/// parts f1…f_{n-1} and -1 for the outermost part, which takes the rest
/// (ceil(extent / (f1 * … * f_{n-1}))).
struct SplitOptions {
  enum Policy : uint8_t {
    kFactors,      // inner parts whose product divides the extent
    kPowerOfTwo,   // inner parts powers of two, their product at most the extent rounded up to a power of two
    kCandidates,   // the explicit `candidates` lists (n inner-to-outer parts, or the n-1 inner parts)
  };
  Policy policy = kFactors;
  int num_outputs = 2;         // number of parts: outer … inner
  int64_t max_factor = 1 << 30;  // largest allowed innermost part
  std::vector<std::vector<int64_t>> candidates;
};

/// One knob: a name, a kind and its values. Each value is a vector of integers (split
/// factors outer…inner with -1 for "the rest", an annotation or choice index, a permutation).
struct Knob {
  std::string name;
  KnobKind kind;
  std::vector<std::vector<int64_t>> values;
  std::vector<std::string> labels;  // for annotate knobs: "none", "unroll", "vec"
  int64_t extent = 0;                // for split knobs: the extent split
  /// A knob a template added after records were written: a record without it takes the
  /// knob's first value (the schedule those records measured) instead of failing.
  bool absent_means_first = false;
  size_t size() const { return values.size(); }
};

class ConfigSpace;

/// A point of a space: which value each knob takes.
class ConfigEntity {
 public:
  ConfigEntity() = default;
  /// Throws loom::Error if `index` is outside [0, space->size()).
  ConfigEntity(const ConfigSpace* space, int64_t index);
  bool defined() const { return space_ != nullptr; }
  const ConfigSpace* space() const { return space_; }
  int64_t index() const { return index_; }
  /// Value index chosen for each knob, in knob order.
  const std::vector<int>& choices() const { return choices_; }
  const std::vector<int64_t>& value(const std::string& knob) const;
  /// The label of an annotate knob's value; "" for other kinds.
  std::string label(const std::string& knob) const;
  records::ConfigRecord to_record() const;
  std::string str() const;  // "tile_x=[-1, 8, 4] vec=vec …"

 private:
  const ConfigSpace* space_ = nullptr;
  int64_t index_ = -1;
  std::vector<int> choices_;
};

/// The knobs a template defined, in definition order.
class ConfigSpace {
 public:
  const Knob& define_split(const std::string& name, int64_t extent, const SplitOptions& opt = {});
  const Knob& define_reorder(const std::string& name, std::vector<std::vector<int64_t>> permutations);
  const Knob& define_annotate(const std::string& name, std::vector<std::string> options);
  const Knob& define_choice(const std::string& name, std::vector<int64_t> values, bool absent_means_first = false);

  const std::vector<Knob>& knobs() const { return knobs_; }
  /// Throws loom::Error naming the knobs there are if there is no such knob.
  const Knob& knob(const std::string& name) const;
  /// -1 if there is no such knob.
  int knob_index(const std::string& name) const;
  /// Number of configs (product of knob sizes).
  int64_t size() const;
  ConfigEntity get(int64_t index) const { return ConfigEntity(this, index); }
  /// Inverse of ConfigEntity::choices().
  int64_t index_of(const std::vector<int>& choices) const;
  /// Value indices of config `index`, in knob order.
  std::vector<int> choices_of(int64_t index) const;
  /// Every split value policy `opt` gives for `extent` (what define_split enumerates).
  static std::vector<std::vector<int64_t>> split_values(int64_t extent, const SplitOptions& opt);
  /// "tile_x: split of 1024 into 3 (55 values)", one knob a line.
  std::string str() const;
  /// The config a record describes; throws if its knobs do not fit this space.
  ConfigEntity from_record(const records::ConfigRecord& r) const;

 private:
  std::vector<Knob> knobs_;
};

/// What a template sees: while the space is being defined, `define_*` adds a knob and
/// returns its first value; when a config is applied, it returns the config's value.
class ConfigContext {
 public:
  /// Defining mode: knobs go into `space`.
  explicit ConfigContext(ConfigSpace* space);
  /// Applying mode: values come from `entity` (knobs must be defined in the same order).
  explicit ConfigContext(const ConfigEntity& entity);

  bool defining() const { return space_ != nullptr; }
  std::vector<int64_t> split(const std::string& name, int64_t extent, const SplitOptions& opt = {});
  std::vector<int64_t> reorder(const std::string& name, std::vector<std::vector<int64_t>> permutations);
  std::string annotate(const std::string& name, std::vector<std::string> options);
  /// `absent_means_first`: see Knob (a choice added to a template that already had records;
  /// its first value must be what the template did before).
  int64_t choice(const std::string& name, std::vector<int64_t> values, bool absent_means_first = false);

  /// Splits `axis` of `stage` by the factors of split knob `name`: for [-1, f1, f2] it splits
  /// by f2 and then the outer part by f1. Returns the parts, outermost first.
  std::vector<te::IterVar> apply_split(const std::string& name, schedule::Stage stage, const te::IterVar& axis);
  /// Applies annotate knob `name` ("none", "unroll", "vec", "parallel") to `axis`.
  void apply_annotate(const std::string& name, schedule::Stage stage, const te::IterVar& axis);

  /// The current value of knob `name` (its first value while defining).
  const std::vector<int64_t>& value(const std::string& name) const;
  /// The current label of annotate knob `name`.
  std::string label(const std::string& name) const;
  /// The config being applied (undefined while defining).
  const ConfigEntity& entity() const { return entity_; }

 private:
  const Knob& lookup(const std::string& name, KnobKind kind) const;
  ConfigSpace* space_ = nullptr;
  ConfigEntity entity_;
};

/// Thrown by a template that rejects a config (recorded as an instantiation error).
class InstantiationError : public Error {
 public:
  using Error::Error;
};

}  // namespace loom::tuner
