// Analyzer: the facts known about variables and the questions asked under them.
#include "arith_internal.h"

namespace loom::te {

struct Analyzer::Impl {
  arith::AnalyzerState state;
};

Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;

void Analyzer::bind(const Var& v, const Range& r) {
  LOOM_CHECK(v.defined(), "Analyzer::bind: undefined variable");
  LOOM_CHECK(r.min.defined() && r.extent.defined(), "Analyzer::bind: range of '{}' has an undefined min or extent",
             v.name());
  auto& st = impl_->state;
  st.values.erase(v.get());
  Expr min = simplify(r.min);
  Expr last = simplify(r.min + r.extent - 1);
  ConstIntBound lo = st.bounds.bound(min), hi = st.bounds.bound(last);
  st.bounds.bind(v, {lo.min_value, hi.max_value});
}

void Analyzer::bind(const Var& v, const Expr& value) {
  LOOM_CHECK(v.defined() && value.defined(), "Analyzer::bind: undefined variable or value");
  auto& st = impl_->state;
  Expr s = simplify(value);
  if (s.dtype().is_int() || s.dtype().is_uint() || s.dtype().is_bool()) st.bounds.bind(v, st.bounds.bound(s));
  else st.bounds.unbind(v.get());
  st.values[v.get()] = {v, s};
}

ConstIntBound Analyzer::const_int_bound(const Expr& e) { return impl_->state.bounds.bound(e); }

Expr Analyzer::simplify(const Expr& e) {
  if (!e.defined()) return e;
  arith::Simplifier s(impl_->state);
  return s.mutate(e);
}

bool Analyzer::can_prove(const Expr& cond) {
  if (!cond.defined()) return false;
  Expr s = simplify(cond);
  if (auto* c = s.as<IntImmNode>()) return c->value != 0;
  if (auto* op = s.as<AndNode>()) return can_prove(op->a) && can_prove(op->b);
  if (auto* op = s.as<OrNode>()) return can_prove(op->a) || can_prove(op->b);
  return false;
}

Expr simplify(const Expr& e) {
  Analyzer a;
  return a.simplify(e);
}

}  // namespace loom::te
