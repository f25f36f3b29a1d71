// Text form of the loop IR: indented C-like code.
#include <fmt/format.h>

#include <ostream>
#include <sstream>

#include "loom/lower/lower.h"
#include "loom/lower/stmt.h"

namespace loom::lowering {

namespace {

class StmtPrinter {
 public:
  explicit StmtPrinter(std::ostream& os) : os_(os) {}

  void print(const Stmt& s) {
    if (!s.defined()) return;
    top_ = depth_++ == 0;
    print_node(s);
    --depth_;
  }

  void print_node(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::LetStmt: {
        const auto* op = s.as<LetStmtNode>();
        line(fmt::format("let {} = {}", op->var.name(), te::to_string(op->value)));
        print(op->body);
        break;
      }
      case StmtKind::AttrStmt: {
        const auto* op = s.as<AttrStmtNode>();
        std::string node = op->iter_var.defined() ? op->iter_var.name() : op->var.defined() ? op->var.name() : "";
        std::string value = op->value.defined() ? te::to_string(op->value) : "";
        line(fmt::format("// attr [{}] {} = {}", node, op->key, value));
        print(op->body);
        break;
      }
      case StmtKind::AssertStmt: {
        const auto* op = s.as<AssertStmtNode>();
        line(fmt::format("assert({}, \"{}\")", te::to_string(op->condition), op->message));
        print(op->body);
        break;
      }
      case StmtKind::ProducerStore: {
        const auto* op = s.as<ProducerStoreNode>();
        line(fmt::format("{}[{}] = {}", op->tensor.name(), join(op->indices), te::to_string(op->value)));
        break;
      }
      case StmtKind::ProducerRealize: {
        const auto* op = s.as<ProducerRealizeNode>();
        std::string b;
        for (size_t i = 0; i < op->bounds.size(); ++i) {
          if (i) b += ", ";
          b += fmt::format("[{}, {}]", te::to_string(op->bounds[i].min), te::to_string(op->bounds[i].extent));
        }
        open(fmt::format("realize {}({}) \"{}\" {{", op->tensor.name(), b, op->scope));
        print(op->body);
        close();
        break;
      }
      case StmtKind::Store: {
        const auto* op = s.as<StoreNode>();
        std::string pred = op->predicate.defined() ? fmt::format(" if {}", te::to_string(op->predicate)) : "";
        line(fmt::format("{}[{}] = {}{}", op->buffer_var.name(), te::to_string(op->index), te::to_string(op->value), pred));
        break;
      }
      case StmtKind::Allocate: {
        const auto* op = s.as<AllocateNode>();
        line(fmt::format("allocate {}: {}[{}] \"{}\"", op->buffer_var.name(), op->dtype.str(), join(op->extents, " * "),
                         op->scope));
        print(op->body);
        break;
      }
      case StmtKind::For: {
        const auto* op = s.as<ForNode>();
        std::string kind = op->for_kind == ForKind::kSerial ? "" : std::string(" ") + to_string(op->for_kind);
        if (op->for_kind == ForKind::kThreadBinding && !op->thread_tag.empty()) kind += fmt::format(" \"{}\"", op->thread_tag);
        std::string ann;
        for (const auto& [k, v] : op->annotations) ann += fmt::format(" {}={}", k, v.defined() ? te::to_string(v) : "");
        open(fmt::format("for ({}, {}, {}){}{} {{", op->loop_var.name(), te::to_string(op->min), te::to_string(op->extent),
                         kind, ann));
        print(op->body);
        close();
        break;
      }
      case StmtKind::While: {
        const auto* op = s.as<WhileNode>();
        open(fmt::format("while ({}) {{", te::to_string(op->condition)));
        print(op->body);
        close();
        break;
      }
      case StmtKind::IfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        open(fmt::format("if ({}) {{", te::to_string(op->condition)));
        print(op->then_case);
        if (op->else_case.defined()) {
          --indent_;
          line("} else {");
          ++indent_;
          print(op->else_case);
        }
        close();
        break;
      }
      case StmtKind::Seq: {
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) print(c);
        break;
      }
      case StmtKind::Evaluate: {
        if (is_no_op(s) && !top_) break;
        line(te::to_string(s.as<EvaluateNode>()->value));
        break;
      }
    }
  }

  void line(const std::string& text) { os_ << std::string(2 * indent_, ' ') << text << '\n'; }
  void open(const std::string& text) { line(text); ++indent_; }
  void close() { --indent_; line("}"); }
  int indent_ = 0;

 private:
  int depth_ = 0;
  bool top_ = false;  // a statement printed by itself shows even when it is a no-op
  static std::string join(const std::vector<Expr>& v, const char* sep = ", ") {
    std::string r;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) r += sep;
      r += te::to_string(v[i]);
    }
    return r;
  }
  std::ostream& os_;
};

}  // namespace

std::string to_string(const Stmt& s) {
  std::ostringstream os;
  StmtPrinter(os).print(s);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  StmtPrinter(os).print(s);
  return os;
}

std::string to_string(const LoweredFunc& f) {
  std::ostringstream os;
  os << f;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const LoweredFunc& f) {
  std::string params;
  for (size_t i = 0; i < f.args.size(); ++i) {
    const BufferArg& a = f.args[i];
    if (i) params += ", ";
    std::string shape;
    for (size_t d = 0; d < a.shape.size(); ++d) shape += (d ? ", " : "") + te::to_string(a.shape[d]);
    params += fmt::format("{}: {}[{}]", a.name, a.dtype.str(), shape);
  }
  os << fmt::format("func {}({}){} {{\n", f.name, params, f.packed ? " packed" : "");
  StmtPrinter p(os);
  p.indent_ = 1;
  p.print(f.body);
  os << "}\n";
  return os;
}

}  // namespace loom::lowering
