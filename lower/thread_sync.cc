// thread_sync: barriers between threads of a block around shared-memory accesses.
//
// The planner walks the program in order, keeping the shared buffers read and written since
// the last barrier. A statement that reads a buffer written since then (RAW) or writes one
// read since then (WAR) gets `loom.sync_threads` before it. For a loop, the accesses left
// pending at the end of an iteration are checked against the accesses of the next
// iteration up to its first barrier; on a conflict a barrier ends the body (the WAR of a
// cooperative fetch inside a reduction loop). Conditions that depend on threadIdx never get
// a barrier inside (it would diverge): the barrier goes before the branch, and a branch that
// needs one inside is an error. Accesses are compared per buffer, not per element, so a
// barrier may be placed where one thread only touches its own elements; write-after-write
// without a read in between does not synchronize.
//
// Double buffers (inject_double_buffer): accesses to buffer b under an attr::kDoubleBuffer
// attribute of b (the fetch of the next step) go to the other half than the rest of the loop
// body, and are recorded under a shadow of b, so that they do not conflict with the reads of
// the current half in the same iteration. At the end of the loop whose body holds the
// attribute the halves swap roles: the pending accesses of b and of its shadow are exchanged
// before they are checked against the next iteration. So the fetch of step k + 1 and the
// compute of step k share one barrier at the end of the iteration (its RAW for the next step
// and its WAR for the fetch after it), and the prologue fetch gets one before the loop. The
// attributes are removed once barriers are placed.
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

using VarSet = std::unordered_set<const te::VarNode*>;

struct Accesses {
  VarSet reads, writes;
  void merge(const Accesses& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
  }
  void clear() {
    reads.clear();
    writes.clear();
  }
};

bool intersects(const VarSet& a, const VarSet& b) {
  for (const auto* x : a)
    if (b.count(x)) return true;
  return false;
}

/// A hazard between accesses `before` and `after` without a barrier between them.
bool conflict(const Accesses& before, const Accesses& after) {
  return intersects(after.reads, before.writes) || intersects(after.writes, before.reads);
}

bool is_barrier(const Stmt& s) {
  const auto* e = s.as<EvaluateNode>();
  if (!e) return false;
  const auto* c = e->value.as<te::CallNode>();
  return c && c->name == kSyncThreads;
}

int count_barriers(const Stmt& s) {
  int n = 0;
  if (s.defined()) post_order_visit(s, [&](const Stmt& x) { n += is_barrier(x); });
  return n;
}

class AccessCollector : public IRVisitor {
 public:
  /// `remap`: buffers whose accesses are recorded under another variable.
  AccessCollector(const VarSet& shared, const std::unordered_map<const te::VarNode*, const te::VarNode*>& remap)
      : shared_(shared), remap_(remap) {}
  Accesses acc;
  using IRVisitor::visit;

 protected:
  void visit_(const te::LoadNode* op) override {
    if (shared_.count(op->buffer_var.get())) acc.reads.insert(key(op->buffer_var.get()));
    IRVisitor::visit_(op);
  }
  void visit_(const StoreNode* op) override {
    if (shared_.count(op->buffer_var.get())) acc.writes.insert(key(op->buffer_var.get()));
    IRVisitor::visit_(op);
  }


 private:
  const te::VarNode* key(const te::VarNode* b) const {
    auto it = remap_.find(b);
    return it == remap_.end() ? b : it->second;
  }
  const VarSet& shared_;
  const std::unordered_map<const te::VarNode*, const te::VarNode*>& remap_;
};

bool is_double_buffer_attr(const AttrStmtNode* op) { return op->key == attr::kDoubleBuffer && op->var.defined(); }

/// Buffers with a kDoubleBuffer attribute in `s`, outside nested loops.
std::vector<const te::VarNode*> double_buffers_in(const Stmt& s) {
  std::vector<const te::VarNode*> out;
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    if (!x.defined()) return;
    switch (x.kind()) {
      case StmtKind::Seq:
        for (const Stmt& p : x.as<SeqStmtNode>()->seq) walk(p);
        break;
      case StmtKind::AttrStmt: {
        const auto* a = x.as<AttrStmtNode>();
        if (is_double_buffer_attr(a)) out.push_back(a->var.get());
        walk(a->body);
        break;
      }
      case StmtKind::LetStmt: walk(x.as<LetStmtNode>()->body); break;
      case StmtKind::Allocate: walk(x.as<AllocateNode>()->body); break;
      case StmtKind::AssertStmt: walk(x.as<AssertStmtNode>()->body); break;
      case StmtKind::IfThenElse:
        walk(x.as<IfThenElseNode>()->then_case);
        walk(x.as<IfThenElseNode>()->else_case);
        break;
      default: break;
    }
  };
  walk(s);
  return out;
}

class SyncPlanner {
 public:
  explicit SyncPlanner(VarSet shared) : shared_(std::move(shared)) {}

  /// Plans `s` entered with `state` pending; leaves the pending accesses at its end in `state`.
  Stmt plan(const Stmt& s, Accesses& state) {
    if (!s.defined()) return s;
    switch (s.kind()) {
      case StmtKind::Seq: {
        std::vector<Stmt> parts;
        for (const Stmt& p : s.as<SeqStmtNode>()->seq) parts.push_back(plan(p, state));
        return seq(std::move(parts));
      }
      case StmtKind::For: {
        const auto* op = s.as<ForNode>();
        Stmt pre = sync_before_block(op->body, state);
        Accesses entry = state;
        std::vector<const te::VarNode*> halves = double_buffers_in(op->body);
        Stmt body = plan(op->body, state);
        if (conflict(swap_halves(state, halves), head(body).first)) {
          body = seq({body, barrier()});
          state.clear();
        }
        auto ext = te::as_const_int(op->extent);
        if (!ext || *ext <= 0) state.merge(entry);
        auto n = std::make_shared<ForNode>(*op);
        n->body = body;
        return seq({pre, Stmt(std::move(n))});
      }
      case StmtKind::While: {
        const auto* op = s.as<WhileNode>();
        Stmt pre = sync_before_block(op->body, state);
        Accesses entry = state;
        Stmt body = plan(op->body, state);
        if (conflict(state, head(body).first)) {
          body = seq({body, barrier()});
          state.clear();
        }
        state.merge(entry);
        return seq({pre, make_stmt<WhileNode>(op->condition, body)});
      }
      case StmtKind::IfThenElse: return plan_if(s.as<IfThenElseNode>(), state);
      case StmtKind::LetStmt: {
        const auto* op = s.as<LetStmtNode>();
        if (uses_thread(op->value)) thread_dep_.insert(op->var.get());
        return make_stmt<LetStmtNode>(op->var, op->value, plan(op->body, state));
      }
      case StmtKind::AttrStmt: {
        const auto* op = s.as<AttrStmtNode>();
        if (is_double_buffer_attr(op)) {
          if (!shared_.count(op->var.get())) return plan(op->body, state);
          const te::VarNode* prev = enter_next_half(op->var.get());
          Stmt body = plan(op->body, state);
          leave_next_half(op->var.get(), prev);
          return make_stmt<AttrStmtNode>(op->iter_var, op->var, op->key, op->value, body);
        }
        if (op->key == attr::kThreadExtent && op->iter_var.defined() &&
            op->iter_var->thread_tag.rfind("threadIdx", 0) == 0)
          thread_dep_.insert(op->iter_var.var().get());
        return make_stmt<AttrStmtNode>(op->iter_var, op->var, op->key, op->value, plan(op->body, state));
      }
      case StmtKind::Allocate: {
        const auto* op = s.as<AllocateNode>();
        return make_stmt<AllocateNode>(op->buffer_var, op->dtype, op->extents, op->scope, plan(op->body, state));
      }
      case StmtKind::AssertStmt: {
        const auto* op = s.as<AssertStmtNode>();
        Accesses a = accesses(op->condition);
        Stmt pre = sync_before(a, state);
        return seq({pre, make_stmt<AssertStmtNode>(op->condition, op->message, plan(op->body, state))});
      }
      default: {
        if (is_barrier(s)) {
          state.clear();
          return s;
        }
        Accesses a = accesses(s);
        return seq({sync_before(a, state), s});
      }
    }
  }

 private:
  Stmt barrier() const { return make_stmt<EvaluateNode>(te::call(DataType::Int(32), kSyncThreads, {})); }

  /// A barrier when `a` conflicts with `state` (undefined otherwise); adds `a` to the state.
  Stmt sync_before(const Accesses& a, Accesses& state) {
    Stmt pre;
    if (conflict(state, a)) {
      pre = barrier();
      state.clear();
    }
    state.merge(a);
    return pre;
  }

  /// A barrier before a loop or branch whose first accesses conflict with `state`, so that
  /// it is not placed inside where it would run on every iteration.
  Stmt sync_before_block(const Stmt& body, Accesses& state, const Stmt& other = Stmt()) {
    Accesses first = head(body).first;
    first.merge(head(other).first);
    if (!conflict(state, first)) return Stmt();
    state.clear();
    return barrier();
  }

  Stmt plan_if(const IfThenElseNode* op, Accesses& state) {
    Stmt pre = sync_before(accesses(op->condition), state);
    if (Stmt b = sync_before_block(op->then_case, state, op->else_case); b.defined()) pre = seq({pre, b});
    Accesses s1 = state, s2 = state;
    Stmt then_case = plan(op->then_case, s1);
    Stmt else_case = plan(op->else_case, s2);
    bool added = count_barriers(then_case) > count_barriers(op->then_case) ||
                 count_barriers(else_case) > count_barriers(op->else_case);
    if (added && uses_thread(op->condition)) {
      // No barrier under a condition that differs between threads: one before it instead.
      pre = barrier();
      s1.clear();
      s2.clear();
      then_case = plan(op->then_case, s1);
      else_case = plan(op->else_case, s2);
      LOOM_CHECK(count_barriers(then_case) == count_barriers(op->then_case) &&
                     count_barriers(else_case) == count_barriers(op->else_case),
                 "thread_sync: shared memory written and read under the thread-dependent condition {} needs a "
                 "barrier inside it, which not every thread would reach",
                 te::to_string(op->condition));
    }
    state = s1;
    state.merge(s2);
    return seq({pre, make_stmt<IfThenElseNode>(op->condition, then_case, else_case)});
  }

  /// Accesses from the start of `s` up to its first barrier that always runs, and whether
  /// such a barrier exists.
  std::pair<Accesses, bool> head(const Stmt& s) const {
    if (!s.defined()) return {{}, false};
    switch (s.kind()) {
      case StmtKind::Seq: {
        Accesses acc;
        for (const Stmt& p : s.as<SeqStmtNode>()->seq) {
          auto [h, syncs] = head(p);
          acc.merge(h);
          if (syncs) return {acc, true};
        }
        return {acc, false};
      }
      case StmtKind::For: {
        const auto* op = s.as<ForNode>();
        auto [h, syncs] = head(op->body);
        auto ext = te::as_const_int(op->extent);
        return {h, syncs && ext && *ext > 0};
      }
      case StmtKind::IfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        Accesses acc = accesses(op->condition);
        auto [ht, st] = head(op->then_case);
        auto [he, se] = head(op->else_case);
        acc.merge(ht);
        acc.merge(he);
        return {acc, st && se && op->else_case.defined()};
      }
      case StmtKind::LetStmt: return head(s.as<LetStmtNode>()->body);
      case StmtKind::AttrStmt: {
        const auto* op = s.as<AttrStmtNode>();
        if (!is_double_buffer_attr(op) || !shared_.count(op->var.get())) return head(op->body);
        const te::VarNode* prev = enter_next_half(op->var.get());
        auto r = head(op->body);
        leave_next_half(op->var.get(), prev);
        return r;
      }
      case StmtKind::Allocate: return head(s.as<AllocateNode>()->body);
      default:
        if (is_barrier(s)) return {{}, true};
        return {accesses(s), false};
    }
  }

  /// The variable that stands for the other half of double buffer `b`.
  const te::VarNode* shadow(const te::VarNode* b) const {
    auto it = shadows_.find(b);
    if (it == shadows_.end()) it = shadows_.emplace(b, Var(b->name + ".next", b->dtype)).first;
    return it->second.get();
  }
  const te::VarNode* enter_next_half(const te::VarNode* b) const {
    auto it = remap_.find(b);
    const te::VarNode* prev = it == remap_.end() ? nullptr : it->second;
    remap_[b] = shadow(b);
    return prev;
  }
  void leave_next_half(const te::VarNode* b, const te::VarNode* prev) const {
    if (prev) remap_[b] = prev;
    else remap_.erase(b);
  }
  /// `a` with the halves of the given double buffers exchanged.
  Accesses swap_halves(const Accesses& a, const std::vector<const te::VarNode*>& bufs) const {
    if (bufs.empty()) return a;
    std::unordered_map<const te::VarNode*, const te::VarNode*> sw;
    for (const auto* b : bufs) {
      sw[b] = shadow(b);
      sw[shadow(b)] = b;
    }
    auto map = [&](const VarSet& in) {
      VarSet out;
      for (const auto* v : in) {
        auto it = sw.find(v);
        out.insert(it == sw.end() ? v : it->second);
      }
      return out;
    };
    return Accesses{map(a.reads), map(a.writes)};
  }

  Accesses accesses(const Stmt& s) const {
    AccessCollector c(shared_, remap_);
    c.visit(s);
    return std::move(c.acc);
  }
  Accesses accesses(const Expr& e) const {
    AccessCollector c(shared_, remap_);
    if (e.defined()) c.visit(e);
    return std::move(c.acc);
  }
  bool uses_thread(const Expr& e) const {
    return te::expr_uses_var(e, [&](const te::VarNode* v) { return thread_dep_.count(v) != 0; });
  }

  VarSet shared_;
  VarSet thread_dep_;
  mutable std::unordered_map<const te::VarNode*, Var> shadows_;
  mutable std::unordered_map<const te::VarNode*, const te::VarNode*> remap_;
};

}  // namespace

Stmt thread_sync(const Stmt& s) {
  VarSet shared;
  post_order_visit(s, [&](const Stmt& x) {
    if (const auto* a = x.as<AllocateNode>(); a && a->scope == "shared") shared.insert(a->buffer_var.get());
  });
  if (shared.empty()) return strip_double_buffer(s);
  Accesses state;
  return strip_double_buffer(SyncPlanner(std::move(shared)).plan(s, state));
}

}  // namespace loom::lowering
