// inject_double_buffer: shared tiles fetched at each step of a serial loop get two halves,
// so that the fetch of step k + 1 overlaps the compute of step k.
//
// schedule_ops marks the realize of a double-buffered stage with AttrStmt(kDoubleBuffer,
// var = buffer), which storage_flatten carries to the Allocate. The pattern (TVM's
// InjectDoubleBuffer) is an Allocate of the marked buffer reached from the body of a serial
// loop k in [min, min + extent) through attributes, allocations and sequences only, whose body
// is a sequence that starts with a fetch (a statement that writes the buffer, does not read
// it nor any buffer allocated inside the loop) followed by statements that read it and never
// write it. The allocation must be "shared" and of constant size n. It then becomes:
//
//   allocate buf[2 n]
//   fetch(k = min) into buf[0, n)                                       // prologue
//   for k:
//     attr double_buffer_scope(buf): if (k + 1 < min + extent) fetch(k + 1) into half (k + 1 - min) % 2
//     compute on half (k - min) % 2
//
// A fetch made only of stores under loops of constant extent, branches, lets and thread
// extents (a cooperative copy from global memory) is staged through registers instead, as fast GEMM
// kernels do: its loads of step k + 1 go to a local array at the start of the step and its
// stores into the other half at its end, so that the loads' latency overlaps the compute
// rather than stalling the shared-memory stores before it:
//
//   allocate regs[r] local
//   for k:
//     if (k + 1 < min + extent) regs = loads of fetch(k + 1)           // issued first
//     compute on half (k - min) % 2
//     attr double_buffer_scope(buf): if (k + 1 < min + extent) half (k + 1 - min) % 2 = regs
//
// The loops of both parts are unrolled, so that the array lives in registers; a fetch that
// would need more than kMaxStagedElements of them per thread is not staged.
//
// The attribute left around the in-loop fetch (or its stores) tells thread_sync that it
// writes the other half than the one the rest of the body reads (see thread_sync.cc), so that
// one barrier per iteration suffices. Buffers that do not match keep their IR; every other
// kDoubleBuffer attribute is dropped.
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

using VarSet = std::unordered_set<const te::VarNode*>;

/// Elements of registers per thread a staged fetch may use.
constexpr int64_t kMaxStagedElements = 64;

struct BufferUse {
  bool reads = false, writes = false;
  VarSet buffers;  // every buffer loaded or stored
};

BufferUse use_of(const Stmt& s, const te::VarNode* buf) {
  struct V : IRVisitor {
    const te::VarNode* buf;
    BufferUse u;
    using IRVisitor::visit;
    void visit_(const te::LoadNode* op) override {
      u.reads |= op->buffer_var.get() == buf;
      u.buffers.insert(op->buffer_var.get());
      IRVisitor::visit_(op);
    }
    void visit_(const StoreNode* op) override {
      u.writes |= op->buffer_var.get() == buf;
      u.buffers.insert(op->buffer_var.get());
      IRVisitor::visit_(op);
    }
  } v;
  v.buf = buf;
  v.visit(s);
  return std::move(v.u);
}

/// A double-buffered allocation matched inside one loop.
struct Match {
  const AllocateNode* alloc = nullptr;
  Stmt scope_attr;  // the storage_scope attribute around it, if any
  Stmt fetch;
  Expr size;
};

/// Offsets every load and store of `buf` by `offset`.
class OffsetAccesses : public IRMutator {
 public:
  OffsetAccesses(const te::VarNode* buf, Expr offset) : buf_(buf), offset_(std::move(offset)) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const StoreNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* st = s.as<StoreNode>();
    if (st->buffer_var.get() != buf_) return s;
    return make_stmt<StoreNode>(st->buffer_var, st->value, te::simplify(st->index + offset_), st->predicate);
  }
  Expr mutate_(const te::LoadNode* op) override {
    Expr e = IRMutator::mutate_(op);
    const auto* ld = e.as<te::LoadNode>();
    if (ld->buffer_var.get() != buf_) return e;
    return te::make<te::LoadNode>(ld->dtype, ld->buffer_var, te::simplify(ld->index + offset_), ld->predicate);
  }

 private:
  const te::VarNode* buf_;
  Expr offset_;
};

/// Splits a fetch into `buf` into the loads of its values into the local array `regs` and the
/// stores of `regs` into `buf`, when the fetch is made only of stores to `buf` under loops of
/// constant extent, branches without else and lets.
class FetchStager {
 public:
  FetchStager(const te::VarNode* buf, Var regs) : buf_(buf), regs_(std::move(regs)) {}

  /// The (loads, stores) parts, or nullopt when the fetch has another form.
  std::optional<std::pair<Stmt, Stmt>> split(const Stmt& fetch) {
    auto parts = visit(fetch);
    if (!ok_ || size_ == 0 || size_ > kMaxStagedElements) return std::nullopt;
    return parts;
  }
  int64_t size() const { return size_; }
  DataType dtype() const { return dtype_; }

 private:
  std::pair<Stmt, Stmt> visit(const Stmt& s) {
    if (!ok_ || !s.defined()) return {s, s};
    switch (s.kind()) {
      case StmtKind::Seq: {
        std::vector<Stmt> loads, stores;
        for (const Stmt& p : s.as<SeqStmtNode>()->seq) {
          auto [l, st] = visit(p);
          loads.push_back(l);
          stores.push_back(st);
        }
        return {seq(std::move(loads)), seq(std::move(stores))};
      }
      case StmtKind::For: {
        const auto* f = s.as<ForNode>();
        auto ext = te::as_const_int(te::simplify(f->extent));
        if (!ext || *ext < 1 || f->for_kind == ForKind::kParallel || f->for_kind == ForKind::kThreadBinding) break;
        loops_.push_back({f->loop_var, f->min, *ext});
        auto [l, st] = visit(f->body);
        loops_.pop_back();
        ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kVectorized : ForKind::kUnrolled;
        return {make_stmt<ForNode>(f->loop_var, f->min, f->extent, kind, l),
                make_stmt<ForNode>(f->loop_var, f->min, f->extent, kind, st)};
      }
      case StmtKind::IfThenElse: {
        const auto* i = s.as<IfThenElseNode>();
        if (i->else_case.defined() && !is_no_op(i->else_case)) break;
        auto [l, st] = visit(i->then_case);
        return {make_stmt<IfThenElseNode>(i->condition, l, Stmt()), make_stmt<IfThenElseNode>(i->condition, st, Stmt())};
      }
      case StmtKind::LetStmt: {
        const auto* let = s.as<LetStmtNode>();
        auto [l, st] = visit(let->body);
        return {make_stmt<LetStmtNode>(let->var, let->value, l), make_stmt<LetStmtNode>(let->var, let->value, st)};
      }
      case StmtKind::AttrStmt: {  // the thread extents of the fetch's bound loops
        const auto* a = s.as<AttrStmtNode>();
        if (a->key != attr::kThreadExtent) break;
        auto [l, st] = visit(a->body);
        return {make_stmt<AttrStmtNode>(a->iter_var, a->var, a->key, a->value, l),
                make_stmt<AttrStmtNode>(a->iter_var, a->var, a->key, a->value, st)};
      }
      case StmtKind::Evaluate:
        if (is_no_op(s)) return {s, s};
        break;
      case StmtKind::Store: {
        const auto* st = s.as<StoreNode>();
        if (st->buffer_var.get() != buf_) break;
        const DataType t = st->value.dtype();
        if (size_ > 0 && t.element_of() != dtype_) break;
        dtype_ = t.element_of();
        // Slot of this store: its own range of the array, indexed by the loops around it.
        int64_t count = t.lanes();
        for (const auto& l : loops_) count *= l.extent;
        Expr slot = te::make_const(DataType::Int(32), size_);
        int64_t stride = t.lanes();
        for (size_t i = loops_.size(); i-- > 0;) {
          Expr iter = loops_[i].var - loops_[i].min;
          slot = slot + iter * te::make_const(DataType::Int(32), stride);
          stride *= loops_[i].extent;
        }
        slot = te::simplify(slot);
        size_ += count;
        Expr index = t.lanes() > 1 ? te::make<te::RampNode>(slot, Expr(1), t.lanes()) : slot;
        Stmt load = make_stmt<StoreNode>(regs_, st->value, index, st->predicate);
        Expr staged = te::make<te::LoadNode>(t, regs_, index, Expr());
        Stmt store = make_stmt<StoreNode>(st->buffer_var, staged, st->index, st->predicate);
        return {load, store};
      }
      default: break;
    }
    ok_ = false;
    return {s, s};
  }

  struct Loop {
    Var var;
    Expr min;
    int64_t extent;
  };
  const te::VarNode* buf_;
  Var regs_;
  std::vector<Loop> loops_;
  int64_t size_ = 0;
  DataType dtype_;
  bool ok_ = true;
};

class DoubleBufferInjector : public IRMutator {
 public:
  explicit DoubleBufferInjector(VarSet marked) : marked_(std::move(marked)) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key == attr::kDoubleBuffer) return mutate(op->body);
    return IRMutator::mutate_(op);
  }

  Stmt mutate_(const ForNode* op) override {
    Stmt s = IRMutator::mutate_(op);
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kSerial) return s;
    std::vector<Match> matches;
    VarSet inner_allocs;
    find(loop->body, Stmt(), &matches, &inner_allocs);
    std::vector<Match> ok;
    for (Match& m : matches) {
      BufferUse fu = use_of(m.fetch, m.alloc->buffer_var.get());
      bool foreign = false;
      for (const auto* b : fu.buffers)
        if (b != m.alloc->buffer_var.get() && inner_allocs.count(b)) foreign = true;
      if (!foreign) ok.push_back(std::move(m));
    }
    if (ok.empty()) return s;
    for (const Match& m : ok) done_.insert(m.alloc->buffer_var.get());
    return rewrite(loop, ok);
  }

 private:
  /// Collects matches reachable from `s` through attributes, allocations and sequences.
  void find(const Stmt& s, const Stmt& scope_attr, std::vector<Match>* out, VarSet* allocs) {
    if (!s.defined()) return;
    if (const auto* a = s.as<AttrStmtNode>()) {
      if (a->key == attr::kThreadExtent || a->key == attr::kVirtualThread) return;
      bool is_scope = a->key == attr::kStorageScope && a->var.defined();
      find(a->body, is_scope ? s : (a->key == attr::kDoubleBuffer ? scope_attr : Stmt()), out, allocs);
    } else if (const auto* sq = s.as<SeqStmtNode>()) {
      for (const Stmt& p : sq->seq) find(p, Stmt(), out, allocs);
    } else if (const auto* al = s.as<AllocateNode>()) {
      allocs->insert(al->buffer_var.get());
      if (std::optional<Match> m = match(al, scope_attr)) out->push_back(*m);
      find(al->body, Stmt(), out, allocs);
    }
  }

  std::optional<Match> match(const AllocateNode* al, const Stmt& scope_attr) const {
    const te::VarNode* buf = al->buffer_var.get();
    if (!marked_.count(buf) || done_.count(buf) || al->scope != "shared") return std::nullopt;
    Expr size = te::simplify(al->size());
    if (!te::as_const_int(size)) return std::nullopt;
    const auto* sq = al->body.as<SeqStmtNode>();
    if (!sq || sq->seq.size() < 2) return std::nullopt;
    BufferUse f = use_of(sq->seq[0], buf);
    if (!f.writes || f.reads) return std::nullopt;
    BufferUse rest = use_of(seq(std::vector<Stmt>(sq->seq.begin() + 1, sq->seq.end())), buf);
    if (rest.writes || !rest.reads) return std::nullopt;
    if (const auto* sa = scope_attr.as<AttrStmtNode>(); sa && sa->var.get() != buf) return Match{al, Stmt(), sq->seq[0], size};
    return Match{al, scope_attr, sq->seq[0], size};
  }

  /// The local array a matched fetch is staged through, when it can be.
  struct Staging {
    Var regs;
    int64_t size = 0;
    DataType dtype;
  };

  /// Removes the matched allocations from the loop body, rewriting fetch and reads.
  class BodyRewriter : public IRMutator {
   public:
    BodyRewriter(const ForNode* loop, const std::vector<Match>& ms, std::vector<Staging>* staging)
        : loop_(loop), ms_(ms), staging_(staging) {}
    using IRMutator::mutate;

   protected:
    Stmt mutate_(const AttrStmtNode* op) override {
      if (op->var.defined() && find(op->var.get()) && (op->key == attr::kStorageScope || op->key == attr::kDoubleBuffer))
        return mutate(op->body);
      return IRMutator::mutate_(op);
    }
    Stmt mutate_(const AllocateNode* op) override {
      const Match* m = find(op->buffer_var.get());
      if (!m || m->alloc != op) return IRMutator::mutate_(op);
      const size_t mi = size_t(m - ms_.data());
      const auto* sq = op->body.as<SeqStmtNode>();
      Expr k = loop_->loop_var;
      Expr two = te::make_const(k.dtype(), 2);
      Expr next = k + te::make_const(k.dtype(), 1);
      te::VarMap to_next{{loop_->loop_var.get(), next}};
      Stmt fetch = OffsetAccesses(op->buffer_var.get(), te::floormod(next - loop_->min, two) * m->size)
                       .mutate(substitute(mutate(sq->seq[0]), to_next));
      Expr more = te::simplify(next < loop_->min + loop_->extent);
      auto guarded = [&](Stmt body, bool marked) {
        Stmt g = make_stmt<IfThenElseNode>(more, std::move(body), Stmt());
        if (!marked) return g;
        return make_stmt<AttrStmtNode>(te::IterVar(), op->buffer_var, attr::kDoubleBuffer,
                                       te::make_const(DataType::Int(32), 1), g);
      };
      std::vector<Stmt> rest;
      for (size_t i = 1; i < sq->seq.size(); ++i) rest.push_back(mutate(sq->seq[i]));
      Stmt compute = OffsetAccesses(op->buffer_var.get(), te::simplify(te::floormod(k - loop_->min, two) * m->size))
                         .mutate(seq(std::move(rest)));
      Var regs(op->buffer_var.name() + ".prefetch", DataType::Handle());
      FetchStager stager(op->buffer_var.get(), regs);
      if (auto parts = stager.split(fetch)) {
        (*staging_)[mi] = Staging{regs, stager.size(), stager.dtype()};
        return seq({guarded(parts->first, false), compute, guarded(parts->second, true)});
      }
      return seq({guarded(fetch, true), compute});
    }

   private:
    const Match* find(const te::VarNode* buf) const {
      for (const Match& m : ms_)
        if (m.alloc->buffer_var.get() == buf) return &m;
      return nullptr;
    }
    const ForNode* loop_;
    const std::vector<Match>& ms_;
    std::vector<Staging>* staging_;
  };

  Stmt rewrite(const ForNode* loop, const std::vector<Match>& ms) {
    auto n = std::make_shared<ForNode>(*loop);
    std::vector<Staging> staging(ms.size());
    n->body = BodyRewriter(loop, ms, &staging).mutate(loop->body);
    std::vector<Stmt> prologue;
    te::VarMap to_first{{loop->loop_var.get(), loop->min}};
    for (const Match& m : ms) prologue.push_back(simplify(substitute(m.fetch, to_first)));
    Stmt pro = seq(std::move(prologue));
    auto ext = te::as_const_int(loop->extent);
    if (!ext || *ext < 1)
      pro = make_stmt<IfThenElseNode>(loop->extent > te::make_const(loop->extent.dtype(), 0), pro, Stmt());
    Stmt staged_loop(std::move(n));
    for (const Staging& st : staging) {
      if (!st.regs.defined()) continue;
      staged_loop = make_stmt<AllocateNode>(st.regs, st.dtype, std::vector<Expr>{Expr(int(st.size))}, "local",
                                            staged_loop);
      staged_loop = make_stmt<AttrStmtNode>(te::IterVar(), st.regs, attr::kStorageScope,
                                            te::make<te::StringImmNode>("local"), staged_loop);
    }
    Stmt out = seq({pro, staged_loop});
    for (size_t i = ms.size(); i-- > 0;) {
      const Match& m = ms[i];
      Expr doubled = te::make_const(m.size.dtype(), 2 * *te::as_const_int(m.size));
      out = make_stmt<AllocateNode>(m.alloc->buffer_var, m.alloc->dtype, std::vector<Expr>{doubled}, m.alloc->scope,
                                    out);
      if (const auto* sa = m.scope_attr.as<AttrStmtNode>())
        out = make_stmt<AttrStmtNode>(sa->iter_var, sa->var, sa->key, sa->value, out);
    }
    return out;
  }

  VarSet marked_;
  VarSet done_;
};

class StripDoubleBuffer : public IRMutator {
 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key == attr::kDoubleBuffer) return mutate(op->body);
    return IRMutator::mutate_(op);
  }
};

}  // namespace

Stmt inject_double_buffer(const Stmt& s) {
  VarSet marked;
  post_order_visit(s, [&](const Stmt& x) {
    if (const auto* a = x.as<AttrStmtNode>(); a && a->key == attr::kDoubleBuffer && a->var.defined())
      marked.insert(a->var.get());
  });
  if (marked.empty()) return s;
  return DoubleBufferInjector(std::move(marked)).mutate(s);
}

Stmt strip_double_buffer(const Stmt& s) { return StripDoubleBuffer().mutate(s); }

}  // namespace loom::lowering
