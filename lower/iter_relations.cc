#include "iter_relations.h"

#include "loom/te/arith.h"

namespace loom::lowering {

using schedule::RelationKind;

namespace {
const Range& range_of(const BoundMap& bounds, const te::IterVar& iv) {
  auto it = bounds.find(iv.get());
  LOOM_CHECK(it != bounds.end(), "bound inference: no range known for axis '{}'", iv.name());
  return it->second;
}
Expr ceil_div(const Expr& a, const Expr& b) { return te::simplify(te::floordiv(a + b - 1, b)); }
}  // namespace

Expr extent_of(const BoundMap& bounds, const te::IterVar& iv) { return range_of(bounds, iv).extent; }

void pass_down_domain(const schedule::StageNode& stage, BoundMap* bounds) {
  for (const auto& rel : stage.relations) {
    switch (rel.kind) {
      case RelationKind::kSplit: {
        const auto& sp = rel.split;
        Expr ext = range_of(*bounds, sp.parent).extent;
        if (sp.factor.defined()) {
          (*bounds)[sp.outer.get()] = Range(0, ceil_div(ext, sp.factor));
          (*bounds)[sp.inner.get()] = Range(0, sp.factor);
        } else {
          (*bounds)[sp.outer.get()] = Range(0, sp.nparts);
          (*bounds)[sp.inner.get()] = Range(0, ceil_div(ext, sp.nparts));
        }
        break;
      }
      case RelationKind::kFuse: {
        const auto& f = rel.fuse;
        Expr e = te::simplify(range_of(*bounds, f.outer).extent * range_of(*bounds, f.inner).extent);
        (*bounds)[f.fused.get()] = Range(0, e);
        break;
      }
      case RelationKind::kRebase:
        (*bounds)[rel.rebase.rebased.get()] = Range(0, range_of(*bounds, rel.rebase.parent).extent);
        break;
    }
  }
}

IterValueMap pass_up_index(const schedule::StageNode& stage, const BoundMap& bounds, IterValueMap values) {
  auto value = [&](const te::IterVar& iv) -> Expr {
    auto it = values.find(iv.get());
    LOOM_ICHECK(it != values.end());
    return it->second;
  };
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    switch (it->kind) {
      case RelationKind::kSplit: {
        const auto& sp = it->split;
        Expr inner_ext = range_of(bounds, sp.inner).extent;
        Expr pmin = range_of(bounds, sp.parent).min;
        values[sp.parent.get()] = te::simplify(value(sp.outer) * inner_ext + value(sp.inner) + pmin);
        break;
      }
      case RelationKind::kFuse: {
        const auto& f = it->fuse;
        const Range& ro = range_of(bounds, f.outer);
        const Range& ri = range_of(bounds, f.inner);
        Expr fused = value(f.fused);
        values[f.outer.get()] = te::simplify(te::floordiv(fused, ri.extent) + ro.min);
        values[f.inner.get()] = te::simplify(te::floormod(fused, ri.extent) + ri.min);
        break;
      }
      case RelationKind::kRebase: {
        const auto& rb = it->rebase;
        values[rb.parent.get()] = te::simplify(value(rb.rebased) + range_of(bounds, rb.parent).min);
        break;
      }
    }
  }
  return values;
}

}  // namespace loom::lowering
