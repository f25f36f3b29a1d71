// Printing of expressions.
#include <cmath>
#include <ostream>
#include <sstream>

#include "expr_internal.h"
#include "loom/te/expr.h"
#include "loom/te/tensor.h"

namespace loom::te {

// ---------------------------------------------------------------- printing
namespace {

const char* binary_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add: return " + ";
    case ExprKind::Sub: return " - ";
    case ExprKind::Mul: return "*";
    case ExprKind::Div: return " / ";
    case ExprKind::Mod: return " % ";
    case ExprKind::EQ: return " == ";
    case ExprKind::NE: return " != ";
    case ExprKind::LT: return " < ";
    case ExprKind::LE: return " <= ";
    case ExprKind::GT: return " > ";
    case ExprKind::GE: return " >= ";
    case ExprKind::And: return " && ";
    case ExprKind::Or: return " || ";
    default: return nullptr;
  }
}

const char* binary_function(ExprKind k) {
  switch (k) {
    case ExprKind::FloorDiv: return "floordiv";
    case ExprKind::FloorMod: return "floormod";
    case ExprKind::Min: return "min";
    case ExprKind::Max: return "max";
    default: return nullptr;
  }
}

/// "sum", "prod", "max", "min" for the built-in reducers, else "" (printed generically).
std::string reducer_name(const CommReducer& c) {
  if (!c || c->result.size() != 1 || c->lhs.size() != 1 || c->rhs.size() != 1) return "";
  const Expr& r = c->result[0];
  const ExprNode* n = r.get();
  if (!n || !is_binary(n->kind)) return "";
  auto [a, b] = binary_operands(n);
  if (!a->same_as(c->lhs[0]) || !b->same_as(c->rhs[0])) return "";
  switch (n->kind) {
    case ExprKind::Add: return "sum";
    case ExprKind::Mul: return "prod";
    case ExprKind::Max: return "max";
    case ExprKind::Min: return "min";
    default: return "";
  }
}

std::string float_text(DataType t, double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  if (t.bits() == 32) return fmt::format("{}f", float(v));
  return fmt::format("{}({})", t.str(), v);
}

class Printer {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}

  void print(const Expr& e, bool top = false) {
    if (!e.defined()) {
      os_ << "<undefined>";
      return;
    }
    const ExprNode* n = e.get();
    if (const char* sym = binary_symbol(n->kind)) {
      auto [a, b] = binary_operands(n);
      if (!top) os_ << '(';
      print(*a);
      os_ << sym;
      print(*b);
      if (!top) os_ << ')';
      return;
    }
    if (const char* fn = binary_function(n->kind)) {
      auto [a, b] = binary_operands(n);
      os_ << fn << '(';
      print(*a, true);
      os_ << ", ";
      print(*b, true);
      os_ << ')';
      return;
    }
    switch (n->kind) {
      case ExprKind::IntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        DataType t = e.dtype();
        if (t.is_bool()) os_ << (v ? "true" : "false");
        else if (t == DataType::Int(32)) os_ << v;
        else if (t.is_uint() && t.bits() == 64) os_ << t.str() << '(' << uint64_t(v) << ')';
        else os_ << t.str() << '(' << v << ')';
        return;
      }
      case ExprKind::FloatImm: os_ << float_text(e.dtype(), e.as<FloatImmNode>()->value); return;
      case ExprKind::StringImm: os_ << '"' << e.as<StringImmNode>()->value << '"'; return;
      case ExprKind::Var: os_ << e.as<VarNode>()->name; return;
      case ExprKind::Not: os_ << '!'; print(e.as<NotNode>()->a); return;
      case ExprKind::Select: {
        auto* p = e.as<SelectNode>();
        os_ << "select(";
        print(p->cond, true);
        os_ << ", ";
        print(p->true_value, true);
        os_ << ", ";
        print(p->false_value, true);
        os_ << ')';
        return;
      }
      case ExprKind::Cast: os_ << e.dtype().str() << '('; print(e.as<CastNode>()->value, true); os_ << ')'; return;
      case ExprKind::Call: {
        auto* p = e.as<CallNode>();
        os_ << p->name << '(';
        print_list(p->args);
        os_ << ')';
        return;
      }
      case ExprKind::Let: {
        auto* p = e.as<LetNode>();
        os_ << "(let " << p->var.name() << " = ";
        print(p->value, true);
        os_ << " in ";
        print(p->body, true);
        os_ << ')';
        return;
      }
      case ExprKind::ProducerLoad: {
        auto* p = e.as<ProducerLoadNode>();
        os_ << tensor_name(p->producer) << '[';
        print_list(p->indices);
        os_ << ']';
        return;
      }
      case ExprKind::Reduce: print_reduce(e.as<ReduceNode>()); return;
      case ExprKind::Load: {
        auto* p = e.as<LoadNode>();
        os_ << (p->buffer_var.defined() ? p->buffer_var.name() : "<buffer>") << '[';
        print(p->index, true);
        os_ << ']';
        if (p->predicate.defined() && !is_one(p->predicate)) {
          os_ << " if ";
          print(p->predicate);
        }
        return;
      }
      case ExprKind::Ramp: {
        auto* p = e.as<RampNode>();
        os_ << "ramp(";
        print(p->base, true);
        os_ << ", ";
        print(p->stride, true);
        os_ << ", " << p->lanes << ')';
        return;
      }
      case ExprKind::Broadcast: {
        auto* p = e.as<BroadcastNode>();
        os_ << 'x' << p->lanes << '(';
        print(p->value, true);
        os_ << ')';
        return;
      }
      default: break;
    }
    os_ << "<unknown expr>";
  }

 private:
  static std::string tensor_name(const std::shared_ptr<const TensorNode>& t) {
    if (!t || !t->op) return "<tensor>";
    if (t->op->num_outputs() > 1) return fmt::format("{}.v{}", t->op->name, t->value_index);
    return t->op->name;
  }

  void print_list(const std::vector<Expr>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) os_ << ", ";
      print(v[i], true);
    }
  }

  void print_reduce(const ReduceNode* p) {
    std::string name = reducer_name(p->combiner);
    if (!name.empty() && p->source.size() == 1) {
      os_ << name << '(';
      print(p->source[0], true);
    } else {
      os_ << "reduce(";
      if (p->combiner) {
        os_ << "combiner=[";
        print_list(p->combiner->result);
        os_ << "], ";
      }
      os_ << "source=[";
      print_list(p->source);
      os_ << ']';
    }
    os_ << ", axis=[";
    for (size_t i = 0; i < p->axis.size(); ++i) os_ << (i ? ", " : "") << p->axis[i].name();
    os_ << ']';
    if (p->condition.defined() && !is_one(p->condition)) {
      os_ << ", where=";
      print(p->condition, true);
    }
    if (p->source.size() > 1) os_ << ", value_index=" << p->value_index;
    os_ << ')';
  }

  std::ostream& os_;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  Printer(os).print(e);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  Printer(os).print(e);
  return os;
}

}  // namespace loom::te
