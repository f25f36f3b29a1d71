// Internal pieces of the arithmetic analysis shared by te/arith/*.cc: interval arithmetic on
// constant bounds, the bound analyzer, linear sums and the rewriting simplifier.
#pragma once
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/te/arith.h"
#include "loom/te/expr_functor.h"

namespace loom::te::arith {

// ---------------------------------------------------------------- constant bounds
using Bound = ConstIntBound;

Bound bound_const(int64_t v);
Bound bound_everything(DataType t);
Bound bound_add(const Bound& a, const Bound& b);
Bound bound_neg(const Bound& a);
Bound bound_sub(const Bound& a, const Bound& b);
Bound bound_mul(const Bound& a, const Bound& b);
Bound bound_mul_const(const Bound& a, int64_t c);
Bound bound_union(const Bound& a, const Bound& b);
Bound bound_intersect(const Bound& a, const Bound& b);
/// Truncating (C) division, floor division, remainders; `b` must not contain zero for a
/// finite answer.
Bound bound_truncdiv(const Bound& a, const Bound& b);
Bound bound_floordiv(const Bound& a, const Bound& b);
Bound bound_truncmod(const Bound& a, const Bound& b);
Bound bound_floormod(const Bound& a, const Bound& b);

int64_t floordiv_i64(int64_t a, int64_t b);
int64_t floormod_i64(int64_t a, int64_t b);

/// Constant bounds of integer expressions under bounds of variables.
class BoundAnalyzer {
 public:
  void bind(const Var& v, const Bound& b);
  void unbind(const VarNode* v);
  std::optional<Bound> lookup(const VarNode* v) const;
  Bound bound(const Expr& e);

 private:
  Bound visit(const Expr& e);
  std::unordered_map<const VarNode*, std::pair<Var, Bound>> vars_;
};

// ---------------------------------------------------------------- constant folding
/// Wraps `v` to the range of integer type `t` (two's complement), or 0/1 for bool.
int64_t wrap_int(DataType t, int64_t v);
/// Folds a binary operator over two constant operands; nullopt when not constants or when
/// the result is undefined (division by zero).
std::optional<Expr> fold_binary(ExprKind k, DataType t, const Expr& a, const Expr& b);
std::optional<Expr> fold_cast(DataType t, const Expr& v);
std::optional<Expr> fold_call(DataType t, const std::string& name, const std::vector<Expr>& args);

// ---------------------------------------------------------------- linear sums
/// A total order on expressions used to order terms and operands deterministically
/// (variables compare by name).
int expr_compare(const Expr& a, const Expr& b);

/// sum(coeff_i * term_i) + base over a signed scalar integer type.
class LinearSum {
 public:
  struct Term {
    Expr expr;
    int64_t coeff;
    size_t hash;
  };
  explicit LinearSum(DataType t) : dtype_(t) {}
  /// Adds coeff * e, flattening Add/Sub/Mul-by-constant; false on coefficient overflow.
  bool add(const Expr& e, int64_t coeff);
  bool add_const(int64_t c);
  bool add_term(const Expr& e, int64_t coeff);
  /// Rewrites floordiv(x, c)*k*c + floormod(x, c)*k (and the truncating pair) into x*k.
  bool merge_div_mod();
  /// Terms with a zero coefficient dropped, ordered deterministically.
  void normalize();
  Expr to_expr() const;

  DataType dtype() const { return dtype_; }
  int64_t base = 0;
  std::vector<Term> terms;

 private:
  DataType dtype_;
};

/// True if linear sums apply to expressions of type `t` (scalar signed integers).
inline bool is_linear_type(DataType t) { return t.is_int() && t.is_scalar(); }

/// Bound of a linear sum, each term bounded independently.
Bound bound_of(const LinearSum& s, BoundAnalyzer& ba);

// ---------------------------------------------------------------- simplifier
struct AnalyzerState {
  BoundAnalyzer bounds;
  std::unordered_map<const VarNode*, std::pair<Var, Expr>> values;
};

/// One bottom-up rewriting pass; each rule sees simplified operands and produces
/// simplified results.
class Simplifier : public ExprMutator {
 public:
  explicit Simplifier(AnalyzerState& st) : st_(st) {}

  Expr add(DataType t, const Expr& a, const Expr& b);
  Expr sub(DataType t, const Expr& a, const Expr& b);
  Expr mul(DataType t, const Expr& a, const Expr& b);
  Expr div(ExprKind k, DataType t, const Expr& a, const Expr& b);
  Expr mod(ExprKind k, DataType t, const Expr& a, const Expr& b);
  Expr min_max(ExprKind k, DataType t, const Expr& a, const Expr& b);
  Expr compare(ExprKind k, DataType t, const Expr& a, const Expr& b);
  Expr logic_and(DataType t, const Expr& a, const Expr& b);
  Expr logic_or(DataType t, const Expr& a, const Expr& b);
  Expr logic_not(const Expr& a);
  Expr select(const Expr& c, const Expr& t, const Expr& f);
  Expr cast(DataType t, const Expr& v);

 protected:
  Expr mutate_(const VarNode* op) override;
  Expr mutate_(const AddNode* op) override;
  Expr mutate_(const SubNode* op) override;
  Expr mutate_(const MulNode* op) override;
  Expr mutate_(const DivNode* op) override;
  Expr mutate_(const ModNode* op) override;
  Expr mutate_(const FloorDivNode* op) override;
  Expr mutate_(const FloorModNode* op) override;
  Expr mutate_(const MinNode* op) override;
  Expr mutate_(const MaxNode* op) override;
  Expr mutate_(const EQNode* op) override;
  Expr mutate_(const NENode* op) override;
  Expr mutate_(const LTNode* op) override;
  Expr mutate_(const LENode* op) override;
  Expr mutate_(const GTNode* op) override;
  Expr mutate_(const GENode* op) override;
  Expr mutate_(const AndNode* op) override;
  Expr mutate_(const OrNode* op) override;
  Expr mutate_(const NotNode* op) override;
  Expr mutate_(const SelectNode* op) override;
  Expr mutate_(const CastNode* op) override;
  Expr mutate_(const CallNode* op) override;
  Expr mutate_(const LetNode* op) override;
  Expr mutate_(const ReduceNode* op) override;

 private:
  Bound bound(const Expr& e) { return st_.bounds.bound(e); }
  /// The linear sum of a + coeff_b * b, or nullopt when not linear-typed or overflowing.
  std::optional<LinearSum> linear(DataType t, const Expr& a, const Expr& b, int64_t coeff_b);
  Expr linear_result(LinearSum s);
  Expr vector_binary(ExprKind k, DataType t, const Expr& a, const Expr& b);
  /// div/mod of ramp(base, stride, lanes) by a positive constant, as a broadcast or a ramp
  /// when the lanes stay in one block of the divisor (or the stride is a multiple of it);
  /// undefined when they may not.
  Expr ramp_div_mod(ExprKind k, DataType t, const RampNode* ramp, const Expr& divisor);

  AnalyzerState& st_;
};

/// Raw binary node of kind `k`.
Expr make_binary(ExprKind k, DataType t, Expr a, Expr b);

}  // namespace loom::te::arith
