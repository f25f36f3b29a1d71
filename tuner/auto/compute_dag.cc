// ComputeDag: the stages of a computation, their access patterns, work and structural hash.
#include "loom/tuner/auto/compute_dag.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <optional>
#include <set>

#include "loom/te/expr_functor.h"

namespace loom::tuner::autosched {
namespace {

int64_t const_extent(const te::IterVar& iv) {
  auto e = iv->dom.extent.defined() ? te::as_const_int(iv->dom.extent) : std::nullopt;
  return e ? *e : 1;
}

bool is_transcendental(const std::string& call) {
  static const std::set<std::string> cheap{"likely", "fma", "fabs", "abs", "floor", "ceil", "round", "trunc",
                                           "nearbyint", "loom.address_of"};
  return !cheap.count(call);
}

bool is_arithmetic(te::ExprKind k) {
  switch (k) {
    case te::ExprKind::Add: case te::ExprKind::Sub: case te::ExprKind::Mul: case te::ExprKind::Div:
    case te::ExprKind::Mod: case te::ExprKind::FloorDiv: case te::ExprKind::FloorMod: case te::ExprKind::Min:
    case te::ExprKind::Max: case te::ExprKind::Select: case te::ExprKind::Call: return true;
    default: return false;
  }
}

/// Arithmetic operations of one evaluation of an expression, index arithmetic in reads not
/// counted (loads and casts are not either).
double count_ops(const te::Expr& e) {
  double n = 0;
  te::post_order_visit(e, [&](const te::Expr& x) {
    if (is_arithmetic(x.kind())) n += 1;
    if (const auto* p = x.as<te::ProducerLoadNode>())
      for (const te::Expr& i : p->indices)
        te::post_order_visit(i, [&](const te::Expr& y) { n -= is_arithmetic(y.kind()); });
  });
  return std::max(0.0, n);
}

/// Canonical text of expressions: variables named by where they are bound, operations by
/// their position in the stage list.
class Canonical {
 public:
  explicit Canonical(const std::map<const te::OperationNode*, int>& ops) : ops_(ops) {}

  void bind(const te::Var& v, std::string name) { vars_[v.get()] = std::move(name); }

  void expr(const te::Expr& e) {
    if (!e.defined()) {
      out += "_";
      return;
    }
    out += fmt::format("({}:{}", int(e.kind()), e.dtype().str());
    switch (e.kind()) {
      case te::ExprKind::IntImm: out += fmt::format(" {}", e.as<te::IntImmNode>()->value); break;
      case te::ExprKind::FloatImm: {
        char buf[64];
        std::snprintf(buf, sizeof(buf), " %.17g", e.as<te::FloatImmNode>()->value);
        out += buf;
        break;
      }
      case te::ExprKind::StringImm: out += fmt::format(" \"{}\"", e.as<te::StringImmNode>()->value); break;
      case te::ExprKind::Var: {
        auto it = vars_.find(e.as<te::VarNode>());
        out += it != vars_.end() ? fmt::format(" {}", it->second) : fmt::format(" free:{}", e.as<te::VarNode>()->name);
        break;
      }
      case te::ExprKind::Not: expr(e.as<te::NotNode>()->a); break;
      case te::ExprKind::Select: {
        const auto* p = e.as<te::SelectNode>();
        expr(p->cond), expr(p->true_value), expr(p->false_value);
        break;
      }
      case te::ExprKind::Cast: expr(e.as<te::CastNode>()->value); break;
      case te::ExprKind::Call: {
        const auto* p = e.as<te::CallNode>();
        out += " " + p->name;
        for (const te::Expr& a : p->args) expr(a);
        break;
      }
      case te::ExprKind::Let: {
        const auto* p = e.as<te::LetNode>();
        expr(p->value);
        bind(p->var, fmt::format("l{}", lets_++));
        expr(p->body);
        break;
      }
      case te::ExprKind::ProducerLoad: {
        const auto* p = e.as<te::ProducerLoadNode>();
        auto it = p->producer ? ops_.find(p->producer->op.get()) : ops_.end();
        out += fmt::format(" t{}.{}", it != ops_.end() ? it->second : -1, p->producer ? p->producer->value_index : 0);
        for (const te::Expr& i : p->indices) expr(i);
        break;
      }
      case te::ExprKind::Reduce: reduce(e.as<te::ReduceNode>()); break;
      default:
        if (auto b = binary(e)) {
          expr(b->first), expr(b->second);
          break;
        }
        out += " ?";  // lowered-IR nodes do not occur in compute bodies
    }
    out += ")";
  }

  std::string out;

 private:
  void reduce(const te::ReduceNode* p) {
    out += fmt::format(" v{}", p->value_index);
    for (const te::IterVar& iv : p->axis) {
      auto it = vars_.find(iv.var().get());
      out += it != vars_.end() ? fmt::format(" {}", it->second) : fmt::format(" free:{}", iv.name());
    }
    if (p->combiner) {
      for (size_t i = 0; i < p->combiner->lhs.size(); ++i) bind(p->combiner->lhs[i], fmt::format("x{}", i));
      for (size_t i = 0; i < p->combiner->rhs.size(); ++i) bind(p->combiner->rhs[i], fmt::format("y{}", i));
      for (const te::Expr& r : p->combiner->result) expr(r);
      for (const te::Expr& r : p->combiner->identity) expr(r);
    }
    for (const te::Expr& s : p->source) expr(s);
    expr(p->condition);
    for (const te::Expr& s : p->init) expr(s);
  }

  static std::optional<std::pair<te::Expr, te::Expr>> binary(const te::Expr& e) {
    switch (e.kind()) {
#define LOOM_BIN(K)                             \
  case te::ExprKind::K: {                       \
    const auto* n = e.as<te::K##Node>();        \
    return std::pair{n->a, n->b};               \
  }
      LOOM_BIN(Add) LOOM_BIN(Sub) LOOM_BIN(Mul) LOOM_BIN(Div) LOOM_BIN(Mod) LOOM_BIN(FloorDiv) LOOM_BIN(FloorMod)
      LOOM_BIN(Min) LOOM_BIN(Max) LOOM_BIN(EQ) LOOM_BIN(NE) LOOM_BIN(LT) LOOM_BIN(LE) LOOM_BIN(GT) LOOM_BIN(GE)
      LOOM_BIN(And) LOOM_BIN(Or)
#undef LOOM_BIN
      default: return std::nullopt;
    }
  }

  const std::map<const te::OperationNode*, int>& ops_;
  std::map<const te::VarNode*, std::string> vars_;
  int lets_ = 0;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

/// Whether `index` is exactly the variable `v`.
bool is_var(const te::Expr& index, const te::Var& v) {
  const auto* n = index.as<te::VarNode>();
  return n && n == v.get();
}

void analyze_reads(StageInfo& st, const std::map<const te::OperationNode*, int>& index) {
  const te::OperationNode& op = *st.op;
  // The innermost spatial axis of extent > 1 and the innermost reduce axis.
  te::IterVar inner_spatial, inner_reduce;
  for (size_t i = op.axis.size(); i-- > 0;)
    if (st.spatial[i] > 1) {
      inner_spatial = op.axis[i];
      break;
    }
  if (!op.reduce_axis.empty()) inner_reduce = op.reduce_axis.back();
  bool spatial_contiguous = inner_spatial.defined();
  for (const te::Expr& body : op.body)
    te::post_order_visit(body, [&](const te::Expr& e) {
      if (const auto* c = e.as<te::CallNode>()) st.expensive |= is_transcendental(c->name);
      if (e.kind() == te::ExprKind::Select) st.has_select = true;
      const auto* load = e.as<te::ProducerLoadNode>();
      if (!load || !load->producer) return;
      auto it = index.find(load->producer->op.get());
      if (it == index.end()) return;
      const bool first_read = !st.reads.count(it->second);
      ProducerReads& r = st.reads[it->second];
      const auto& pshape = load->producer->shape;
      bool identity = load->indices.size() == op.axis.size();
      for (size_t d = 0; identity && d < op.axis.size(); ++d) {
        auto pe = te::as_const_int(pshape[d]);
        identity = is_var(load->indices[d], op.axis[d].var()) && pe && *pe == st.spatial[d];
      }
      r.identity &= identity;
      if (st.reduction) {
        bool misses = false;
        for (size_t d = 0; d < op.axis.size(); ++d) {
          if (st.spatial[d] <= 1) continue;
          bool uses = false;
          for (const te::Expr& i : load->indices) uses |= te::expr_uses_var(i, op.axis[d].var());
          misses |= !uses;
        }
        st.data_reuse |= misses;
        const bool panel = misses && load->indices.size() >= 2 && inner_spatial.defined() &&
                           is_var(load->indices.back(), inner_spatial.var());
        r.panel = (first_read || r.panel) && panel;
      }
      if (load->indices.empty()) return;
      const te::Expr& last = load->indices.back();
      if (inner_reduce.defined() && te::expr_uses_var(last, inner_reduce.var()) &&
          !(inner_spatial.defined() && te::expr_uses_var(last, inner_spatial.var())))
        st.reduce_innermost_contiguous = true;
      int64_t elems = 1;
      for (const te::Expr& d : pshape) elems *= te::as_const_int(d).value_or(2);
      if (elems > 1 && inner_spatial.defined() && !te::expr_uses_var(last, inner_spatial.var()))
        spatial_contiguous = false;
    });
  st.spatial_innermost_contiguous = spatial_contiguous;
}

}  // namespace

ComputeDag::ComputeDag(std::vector<te::Tensor> outputs) : outputs_(std::move(outputs)) {
  LOOM_CHECK(!outputs_.empty(), "auto-scheduler: the computation has no outputs");
  std::set<const te::OperationNode*> is_output;
  for (const te::Tensor& t : outputs_) {
    LOOM_CHECK(t.defined(), "auto-scheduler: an output tensor is undefined");
    LOOM_CHECK(t.op()->kind == te::OpKind::kCompute, "auto-scheduler: output '{}' is a placeholder", t.name());
    is_output.insert(t.op().get());
  }
  std::map<std::string, int> seen_names;
  for (const te::Operation& op : te::post_dfs_order(outputs_)) {
    StageInfo st;
    st.op = op;
    const int k = seen_names[op->name]++;
    st.label = k == 0 ? op->name : fmt::format("{}#{}", op->name, k);
    st.placeholder = op->kind == te::OpKind::kPlaceholder;
    st.output = is_output.count(op.get()) > 0;
    index_[op.get()] = int(stages_.size());
    stages_.push_back(std::move(st));
  }
  for (StageInfo& st : stages_) {
    if (st.placeholder) continue;
    const te::OperationNode& op = *st.op;
    for (const te::IterVar& iv : op.axis) st.spatial.push_back(const_extent(iv));
    for (const te::IterVar& iv : op.reduce_axis) st.reduce.push_back(const_extent(iv));
    for (int64_t e : st.spatial) st.spatial_size *= e;
    for (int64_t e : st.reduce) st.reduce_size *= e;
    st.reduction = !op.body.empty() && op.body[0].as<te::ReduceNode>() != nullptr;
    analyze_reads(st, index_);
    for (const auto& [p, r] : st.reads) st.producers.push_back(p);
    double ops = 0;
    for (const te::Expr& b : op.body) {
      if (const auto* r = b.as<te::ReduceNode>()) {
        for (const te::Expr& s : r->source) ops += count_ops(s);
        ops += 1;  // the combiner
        break;     // a tuple reduction's outputs share one source
      }
      ops += count_ops(b);
    }
    st.flop = double(st.spatial_size) * double(st.reduce_size) * std::max(1.0, ops);
  }
  for (size_t i = 0; i < stages_.size(); ++i)
    for (int p : stages_[i].producers) stages_[size_t(p)].consumers.push_back(int(i));
}

int ComputeDag::index_of(const te::Operation& op) const {
  auto it = index_.find(op.get());
  return it == index_.end() ? -1 : it->second;
}

double ComputeDag::flop() const {
  double f = 0;
  for (const StageInfo& st : stages_) f += st.flop;
  return f;
}

std::string ComputeDag::hash() const {
  Canonical c(index_);
  for (size_t i = 0; i < stages_.size(); ++i) {
    const te::OperationNode& op = *stages_[i].op;
    c.out += fmt::format("[{} {} \"{}\" \"{}\"", i, op.kind == te::OpKind::kPlaceholder ? "P" : "C", op.name, op.tag);
    for (const auto& [k, v] : op.attrs) c.out += fmt::format(" {}={}", k, v);
    if (op.kind == te::OpKind::kPlaceholder) {
      c.out += fmt::format(" {}", op.dtype.str());
      for (const te::Expr& d : op.shape) c.expr(d);
    } else {
      for (size_t a = 0; a < op.axis.size(); ++a) {
        c.bind(op.axis[a].var(), fmt::format("i{}", a));
        c.expr(op.axis[a]->dom.min), c.expr(op.axis[a]->dom.extent);
      }
      for (size_t a = 0; a < op.reduce_axis.size(); ++a) {
        c.bind(op.reduce_axis[a].var(), fmt::format("r{}", a));
        c.expr(op.reduce_axis[a]->dom.min), c.expr(op.reduce_axis[a]->dom.extent);
      }
      for (const te::Expr& b : op.body) c.expr(b);
    }
    c.out += "]";
  }
  c.out += " outputs";
  for (const te::Tensor& t : outputs_) c.out += fmt::format(" {}.{}", index_.at(t.op().get()), t.value_index());
  return fmt::format("{:016x}", fnv1a(c.out));
}

std::string ComputeDag::str() const {
  std::string out;
  for (const StageInfo& st : stages_) {
    if (st.placeholder) continue;
    std::string what = st.reduction ? (st.data_reuse ? "reduction with data reuse" : "reduction") : "injective";
    if (st.expensive) what += ", transcendental";
    if (st.has_select) what += ", select";
    out += fmt::format("{}{}: {} [{}]", st.label, st.output ? " (output)" : "", what, fmt::join(st.spatial, ", "));
    if (!st.reduce.empty()) out += fmt::format(" reducing [{}]", fmt::join(st.reduce, ", "));
    out += "\n";
  }
  return out;
}

}  // namespace loom::tuner::autosched
