// Arithmetic analysis: simplification, constant integer bounds, symbolic interval sets.
// Bound inference, loop partitioning and the simplify pass stand on these.
#pragma once
#include <limits>
#include <unordered_map>

#include "loom/te/expr.h"

namespace loom::te {

/// Inclusive constant bounds of an integer expression; kNegInf/kPosInf when unknown.
struct ConstIntBound {
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  int64_t min_value = kNegInf;
  int64_t max_value = kPosInf;
  bool is_const() const { return min_value == max_value; }
};

/// A symbolic inclusive interval [min, max]; an undefined end is unbounded.
struct IntSet {
  Expr min, max;
  static IntSet single_point(Expr e) { return {e, e}; }
  static IntSet from_range(const Range& r);
  static IntSet everything() { return {}; }
  bool is_everything() const { return !min.defined() && !max.defined(); }
  bool is_bounded() const { return min.defined() && max.defined(); }
  bool is_single_point() const;
  /// [min, max] as a Range (min, max - min + 1), simplified.
  Range to_range() const;
};
using IntSetMap = std::unordered_map<const VarNode*, IntSet>;

/// Smallest interval containing all inputs.
IntSet union_sets(const std::vector<IntSet>& sets);
/// The set of values `e` takes when each variable of `dom` ranges over its set; variables
/// not in `dom` stay symbolic.
IntSet eval_set(const Expr& e, const IntSetMap& dom);

/// Holds facts about variables (ranges from loops, values from lets) and answers
/// questions about expressions under them.
class Analyzer {
 public:
  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  /// `v` lies in `r` (from a loop).
  void bind(const Var& v, const Range& r);
  /// `v` equals `value` (from a let); simplification substitutes it where that helps.
  void bind(const Var& v, const Expr& value);
  /// Constant bounds of `e` under the known facts.
  ConstIntBound const_int_bound(const Expr& e);
  /// Simplified form: constants folded, linear integer terms collected and ordered,
  /// div/mod/min/max/comparisons resolved where bounds decide them.
  Expr simplify(const Expr& e);
  /// True only if `cond` holds for every value of the bound variables.
  bool can_prove(const Expr& cond);
  bool can_prove_equal(const Expr& a, const Expr& b) { return can_prove(a == b); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Simplifies `e` with no facts about its variables.
Expr simplify(const Expr& e);

}  // namespace loom::te
