// storage_rewrite: temporaries whose lifetimes do not overlap share one allocation.
//
// Allocations that wrap a sequence directly (after the constant-size allocations at the end
// of the sequence are lifted into the same chain) get the live interval of the sequence
// parts that mention them; buffers of one dtype and scope with disjoint intervals and
// constant sizes merge into one allocation of the largest size.
#include <algorithm>
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

/// One Allocate of a chain, with the storage-scope attribute around it if any.
struct AllocEntry {
  const AllocateNode* alloc;
  const AttrStmtNode* scope_attr = nullptr;
  std::optional<int64_t> const_size;
  Stmt keep_alive;  // owns the nodes above
};

const AllocateNode* as_alloc_with_attr(const Stmt& s, const AttrStmtNode** attr) {
  *attr = nullptr;
  if (const auto* a = s.as<AttrStmtNode>(); a && a->key == attr::kStorageScope) {
    if (const auto* al = a->body.as<AllocateNode>(); al && al->buffer_var.same_as(a->var)) {
      *attr = a;
      return al;
    }
    return nullptr;
  }
  return s.as<AllocateNode>();
}

/// Peels a chain of allocations off `s`; returns the body below them.
Stmt peel_chain(Stmt s, std::vector<AllocEntry>* chain) {
  while (true) {
    const AttrStmtNode* attr;
    const AllocateNode* al = as_alloc_with_attr(s, &attr);
    if (!al) return s;
    chain->push_back({al, attr, te::as_const_int(te::simplify(al->size())), s});
    s = al->body;
  }
}

std::unordered_set<const te::VarNode*> vars_used(const Stmt& s) {
  struct Collector : IRVisitor {
    std::unordered_set<const te::VarNode*> vars;
    using IRVisitor::visit;
    void visit_(const te::VarNode* op) override { vars.insert(op); }
    void visit_(const AttrStmtNode* op) override {
      if (op->var.defined()) vars.insert(op->var.get());
      IRVisitor::visit_(op);
    }
  } c;
  c.visit(s);
  return std::move(c.vars);
}

class StorageRewriter : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const AllocateNode* op) override { return rewrite(to_stmt(op)); }
  Stmt mutate_(const AttrStmtNode* op) override {
    const AttrStmtNode* attr;
    if (as_alloc_with_attr(to_stmt(op), &attr)) return rewrite(to_stmt(op));
    return IRMutator::mutate_(op);
  }

 private:
  Stmt rewrite(const Stmt& s) {
    std::vector<AllocEntry> chain;
    Stmt body = mutate(peel_chain(s, &chain));
    // Lift constant-size allocations from the end of the sequence (or the whole body).
    while (true) {
      std::vector<Stmt> items;
      if (const auto* sq = body.as<SeqStmtNode>()) items = sq->seq;
      else items = {body};
      std::vector<AllocEntry> inner;
      Stmt rest = peel_chain(items.back(), &inner);
      if (inner.empty()) break;
      bool all_const = std::all_of(inner.begin(), inner.end(), [](const AllocEntry& e) { return e.const_size.has_value(); });
      if (!all_const) break;
      chain.insert(chain.end(), inner.begin(), inner.end());
      items.back() = rest;
      body = seq(std::move(items));
    }
    const auto* sq = body.as<SeqStmtNode>();
    te::VarMap rename;
    // Per entry: the entry whose storage it uses (itself when it keeps its own).
    std::vector<size_t> owner(chain.size());
    std::vector<int64_t> size(chain.size());
    for (size_t i = 0; i < chain.size(); ++i) {
      owner[i] = i;
      size[i] = chain[i].const_size.value_or(0);
    }
    if (sq && chain.size() > 1) {
      const size_t n = sq->seq.size();
      std::vector<std::unordered_set<const te::VarNode*>> uses;
      for (const Stmt& part : sq->seq) uses.push_back(vars_used(part));
      struct Interval { size_t first, last; bool used; };
      std::vector<Interval> live(chain.size());
      for (size_t i = 0; i < chain.size(); ++i) {
        live[i] = {n, 0, false};
        for (size_t k = 0; k < n; ++k) {
          if (uses[k].count(chain[i].alloc->buffer_var.get())) {
            live[i].first = std::min(live[i].first, k);
            live[i].last = k;
            live[i].used = true;
          }
        }
      }
      std::vector<size_t> order;
      for (size_t i = 0; i < chain.size(); ++i)
        if (chain[i].const_size && live[i].used) order.push_back(i);
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return live[a].first < live[b].first; });
      // Groups: owner index → last position in use.
      std::vector<std::pair<size_t, size_t>> groups;
      for (size_t i : order) {
        const AllocateNode* a = chain[i].alloc;
        bool placed = false;
        for (auto& [g, last] : groups) {
          const AllocateNode* b = chain[g].alloc;
          if (b->dtype == a->dtype && b->scope == a->scope && last < live[i].first) {
            owner[i] = g;
            size[g] = std::max(size[g], size[i]);
            last = live[i].last;
            rename[a->buffer_var.get()] = b->buffer_var;
            placed = true;
            break;
          }
        }
        if (!placed) groups.emplace_back(i, live[i].last);
      }
    }
    if (!rename.empty()) body = substitute(body, rename);
    for (size_t i = chain.size(); i-- > 0;) {
      if (owner[i] != i) continue;
      const AllocEntry& e = chain[i];
      std::vector<Expr> extents = e.alloc->extents;
      if (e.const_size && size[i] != *e.const_size) extents = {te::make_const(DataType::Int(32), size[i])};
      body = make_stmt<AllocateNode>(e.alloc->buffer_var, e.alloc->dtype, std::move(extents), e.alloc->scope, body);
      if (e.scope_attr)
        body = make_stmt<AttrStmtNode>(e.scope_attr->iter_var, e.scope_attr->var, e.scope_attr->key, e.scope_attr->value, body);
    }
    return body;
  }
};

}  // namespace

Stmt storage_rewrite(const Stmt& s) { return StorageRewriter().mutate(s); }

}  // namespace loom::lowering
