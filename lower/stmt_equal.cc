// Structural equality and hashing of statements, built on the expression ones: variables a
// statement binds (loop variables, Let variables, allocated buffers) compare by position, as
// an expression's own Let and reducer variables do; free variables by identity.
#include "loom/lower/stmt.h"

namespace loom::lowering {
namespace {

class StmtEqualChecker {
 public:
  bool eq(const Stmt& a, const Stmt& b) {
    if (a.same_as(b) && (bound_.empty() || !a.defined())) return true;  // else a bound variable may differ
    if (!a.defined() || !b.defined()) return false;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case StmtKind::LetStmt: {
        auto *p = a.as<LetStmtNode>(), *q = b.as<LetStmtNode>();
        if (!eq_expr(p->value, q->value)) return false;
        return eq_bound(p->var, q->var, p->body, q->body);
      }
      case StmtKind::AttrStmt: {
        auto *p = a.as<AttrStmtNode>(), *q = b.as<AttrStmtNode>();
        return p->key == q->key && eq_iter_var(p->iter_var, q->iter_var) && eq_expr(p->var, q->var) &&
               eq_expr(p->value, q->value) && eq(p->body, q->body);
      }
      case StmtKind::AssertStmt: {
        auto *p = a.as<AssertStmtNode>(), *q = b.as<AssertStmtNode>();
        return p->message == q->message && eq_expr(p->condition, q->condition) && eq(p->body, q->body);
      }
      case StmtKind::ProducerStore: {
        auto *p = a.as<ProducerStoreNode>(), *q = b.as<ProducerStoreNode>();
        return p->tensor == q->tensor && eq_exprs(p->indices, q->indices) && eq_expr(p->value, q->value);
      }
      case StmtKind::ProducerRealize: {
        auto *p = a.as<ProducerRealizeNode>(), *q = b.as<ProducerRealizeNode>();
        if (!(p->tensor == q->tensor) || p->scope != q->scope || p->align != q->align || p->order != q->order) return false;
        if (p->bounds.size() != q->bounds.size()) return false;
        for (size_t i = 0; i < p->bounds.size(); ++i)
          if (!eq_range(p->bounds[i], q->bounds[i])) return false;
        return eq(p->body, q->body);
      }
      case StmtKind::Store: {
        auto *p = a.as<StoreNode>(), *q = b.as<StoreNode>();
        return eq_expr(p->buffer_var, q->buffer_var) && eq_expr(p->index, q->index) && eq_expr(p->value, q->value) &&
               eq_expr(p->predicate, q->predicate);
      }
      case StmtKind::Allocate: {
        auto *p = a.as<AllocateNode>(), *q = b.as<AllocateNode>();
        if (p->dtype != q->dtype || p->scope != q->scope || !eq_exprs(p->extents, q->extents)) return false;
        return eq_bound(p->buffer_var, q->buffer_var, p->body, q->body);
      }
      case StmtKind::For: {
        auto *p = a.as<ForNode>(), *q = b.as<ForNode>();
        if (p->for_kind != q->for_kind || p->thread_tag != q->thread_tag) return false;
        if (!eq_expr(p->min, q->min) || !eq_expr(p->extent, q->extent)) return false;
        if (p->annotations.size() != q->annotations.size()) return false;
        for (auto i = p->annotations.begin(), j = q->annotations.begin(); i != p->annotations.end(); ++i, ++j)
          if (i->first != j->first || !eq_expr(i->second, j->second)) return false;
        return eq_bound(p->loop_var, q->loop_var, p->body, q->body);
      }
      case StmtKind::While: {
        auto *p = a.as<WhileNode>(), *q = b.as<WhileNode>();
        return eq_expr(p->condition, q->condition) && eq(p->body, q->body);
      }
      case StmtKind::IfThenElse: {
        auto *p = a.as<IfThenElseNode>(), *q = b.as<IfThenElseNode>();
        return eq_expr(p->condition, q->condition) && eq(p->then_case, q->then_case) && eq_opt(p->else_case, q->else_case);
      }
      case StmtKind::Seq: {
        auto *p = a.as<SeqStmtNode>(), *q = b.as<SeqStmtNode>();
        if (p->seq.size() != q->seq.size()) return false;
        for (size_t i = 0; i < p->seq.size(); ++i)
          if (!eq(p->seq[i], q->seq[i])) return false;
        return true;
      }
      case StmtKind::Evaluate: return eq_expr(a.as<EvaluateNode>()->value, b.as<EvaluateNode>()->value);
    }
    LOOM_ICHECK(false);
    return false;
  }

 private:
  /// `a` and `b` bind `va` and `vb`: the bodies compare with the two variables as one.
  bool eq_bound(const Var& va, const Var& vb, const Stmt& a, const Stmt& b) {
    if (va.dtype() != vb.dtype()) return false;
    bound_.emplace_back(va.get(), vb.get());
    bool r = eq(a, b);
    bound_.pop_back();
    return r;
  }
  bool eq_opt(const Stmt& a, const Stmt& b) { return a.defined() == b.defined() && (!a.defined() || eq(a, b)); }
  bool eq_expr(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return te::structural_equal(a, b, bound_);
  }
  bool eq_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!eq_expr(a[i], b[i])) return false;
    return true;
  }
  bool eq_range(const Range& a, const Range& b) { return eq_expr(a.min, b.min) && eq_expr(a.extent, b.extent); }
  bool eq_iter_var(const te::IterVar& a, const te::IterVar& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return a.type() == b.type() && a->thread_tag == b->thread_tag && eq_expr(a.var(), b.var()) && eq_range(a.dom(), b.dom());
  }

  std::vector<std::pair<const te::VarNode*, const te::VarNode*>> bound_;
};

class StmtHasher {
 public:
  size_t hash(const Stmt& s) {
    if (!s.defined()) return 0x5717;
    size_t h = size_t(s.kind()) * 1000033u;
    switch (s.kind()) {
      case StmtKind::LetStmt: {
        auto* p = s.as<LetStmtNode>();
        return hash_bound(hash_combine(h, hash_expr(p->value)), p->var, p->body);
      }
      case StmtKind::AttrStmt: {
        auto* p = s.as<AttrStmtNode>();
        h = hash_combine(h, std::hash<std::string>()(p->key));
        if (p->iter_var.defined()) {
          h = hash_combine(h, std::hash<std::string>()(p->iter_var->thread_tag));
          h = hash_combine(hash_combine(h, hash_expr(p->iter_var.var())), hash_range(p->iter_var.dom()));
        }
        h = hash_combine(hash_combine(h, hash_expr(p->var)), hash_expr(p->value));
        return hash_combine(h, hash(p->body));
      }
      case StmtKind::AssertStmt: {
        auto* p = s.as<AssertStmtNode>();
        h = hash_combine(hash_combine(h, std::hash<std::string>()(p->message)), hash_expr(p->condition));
        return hash_combine(h, hash(p->body));
      }
      case StmtKind::ProducerStore: {
        auto* p = s.as<ProducerStoreNode>();
        h = hash_combine(h, hash_tensor(p->tensor));
        return hash_combine(hash_exprs(h, p->indices), hash_expr(p->value));
      }
      case StmtKind::ProducerRealize: {
        auto* p = s.as<ProducerRealizeNode>();
        h = hash_combine(hash_combine(h, hash_tensor(p->tensor)), std::hash<std::string>()(p->scope));
        for (const Range& r : p->bounds) h = hash_combine(h, hash_range(r));
        return hash_combine(h, hash(p->body));
      }
      case StmtKind::Store: {
        auto* p = s.as<StoreNode>();
        h = hash_combine(hash_combine(h, hash_expr(p->buffer_var)), hash_expr(p->index));
        return hash_combine(hash_combine(h, hash_expr(p->value)), hash_expr(p->predicate));
      }
      case StmtKind::Allocate: {
        auto* p = s.as<AllocateNode>();
        h = hash_combine(hash_combine(h, std::hash<std::string>()(p->dtype.str())), std::hash<std::string>()(p->scope));
        return hash_bound(hash_exprs(h, p->extents), p->buffer_var, p->body);
      }
      case StmtKind::For: {
        auto* p = s.as<ForNode>();
        h = hash_combine(hash_combine(h, size_t(p->for_kind)), std::hash<std::string>()(p->thread_tag));
        h = hash_combine(hash_combine(h, hash_expr(p->min)), hash_expr(p->extent));
        for (const auto& [k, v] : p->annotations) h = hash_combine(hash_combine(h, std::hash<std::string>()(k)), hash_expr(v));
        return hash_bound(h, p->loop_var, p->body);
      }
      case StmtKind::While: {
        auto* p = s.as<WhileNode>();
        return hash_combine(hash_combine(h, hash_expr(p->condition)), hash(p->body));
      }
      case StmtKind::IfThenElse: {
        auto* p = s.as<IfThenElseNode>();
        h = hash_combine(hash_combine(h, hash_expr(p->condition)), hash(p->then_case));
        return hash_combine(h, hash(p->else_case));
      }
      case StmtKind::Seq: {
        auto* p = s.as<SeqStmtNode>();
        h = hash_combine(h, p->seq.size());
        for (const Stmt& c : p->seq) h = hash_combine(h, hash(c));
        return h;
      }
      case StmtKind::Evaluate: return hash_combine(h, hash_expr(s.as<EvaluateNode>()->value));
    }
    LOOM_ICHECK(false);
    return h;
  }

 private:
  static size_t hash_combine(size_t seed, size_t v) { return te::hash_combine(seed, v); }
  size_t hash_bound(size_t h, const Var& v, const Stmt& body) {
    h = hash_combine(h, std::hash<std::string>()(v.dtype().str()));
    bound_.push_back(v.get());
    h = hash_combine(h, hash(body));
    bound_.pop_back();
    return h;
  }
  size_t hash_expr(const Expr& e) { return te::structural_hash(e, bound_); }
  size_t hash_exprs(size_t h, const std::vector<Expr>& es) {
    h = hash_combine(h, es.size());
    for (const Expr& e : es) h = hash_combine(h, hash_expr(e));
    return h;
  }
  size_t hash_range(const Range& r) { return hash_combine(hash_expr(r.min), hash_expr(r.extent)); }
  static size_t hash_tensor(const Tensor& t) {
    return t.defined() ? hash_combine(std::hash<const void*>()(t.op().get()), size_t(t.value_index())) : 0;
  }

  std::vector<const te::VarNode*> bound_;
};

}  // namespace

bool structural_equal(const Stmt& a, const Stmt& b) { return StmtEqualChecker().eq(a, b); }
size_t structural_hash(const Stmt& s) { return StmtHasher().hash(s); }

}  // namespace loom::lowering
