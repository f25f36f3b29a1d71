// inject_access_checks: the run-time checks of LowerOptions::check_accesses (`loom build
// --check-bounds`). Before every tensor store it asserts that each index of the store and of
// each read it makes lies in the tensor's extent (an argument's shape, a temporary's realized
// region), and that integer divisors are not zero. A failed check becomes an error code with
// a message naming the stage, tensor and dimension (AssertStmt), not a stray access.
#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"
#include "loom/te/expr_functor.h"
#include "loom/te/tensor.h"

namespace loom::lowering {

namespace {

/// Conditions that must hold for an expression to be evaluated safely, each with the guard
/// under which the part of the expression it protects is evaluated.
class CollectChecks : public te::ExprVisitor {
 public:
  using RegionOf = std::function<std::vector<Range>(const te::Tensor&)>;
  CollectChecks(std::string stage, RegionOf region) : stage_(std::move(stage)), region_(std::move(region)) {}

  void access(const te::Tensor& t, const std::vector<Expr>& indices, const char* what) {
    std::vector<Range> region = region_(t);
    for (size_t d = 0; d < indices.size() && d < region.size(); ++d) {
      Expr i = indices[d], lo = region[d].min, hi = region[d].min + region[d].extent;
      add(i >= lo && i < hi, fmt::format("stage '{}' {} tensor '{}' out of bounds: index {} of dimension {} is outside "
                                         "[{}, {})",
                                         stage_, what, t.name(), te::to_string(i), d, te::to_string(te::simplify(lo)),
                                         te::to_string(te::simplify(hi))));
    }
  }

  std::vector<std::pair<Expr, std::string>> checks;

 protected:
  void visit_(const te::ProducerLoadNode* op) override {
    te::ExprVisitor::visit_(op);
    access(te::Tensor(op->producer), op->indices, "reads");
  }
  void visit_(const te::SelectNode* op) override {
    visit(op->cond);
    under(op->cond, op->true_value);
    under(!op->cond, op->false_value);
  }
  void visit_(const te::AndNode* op) override {
    visit(op->a);
    under(op->a, op->b);
  }
  void visit_(const te::OrNode* op) override {
    visit(op->a);
    under(!op->a, op->b);
  }
  void visit_(const te::CallNode* op) override {
    if (op->name != "if_then_else" || op->args.size() != 3) return te::ExprVisitor::visit_(op);
    visit(op->args[0]);
    under(op->args[0], op->args[1]);
    under(!op->args[0], op->args[2]);
  }
  void visit_(const te::DivNode* op) override { divide(op->a, op->b, "/"); }
  void visit_(const te::ModNode* op) override { divide(op->a, op->b, "%"); }
  void visit_(const te::FloorDivNode* op) override { divide(op->a, op->b, "floordiv"); }
  void visit_(const te::FloorModNode* op) override { divide(op->a, op->b, "floormod"); }

 private:
  void divide(const Expr& a, const Expr& b, const char* op) {
    visit(a);
    visit(b);
    if (!b.dtype().is_integer() || te::as_const_int(b)) return;
    add(b != te::make_zero(b.dtype()), fmt::format("stage '{}': integer {} by zero: divisor {} is 0", stage_, op,
                                                   te::to_string(b)));
  }
  void under(const Expr& cond, const Expr& e) {
    guards_.push_back(cond);
    visit(e);
    guards_.pop_back();
  }
  void add(Expr ok, std::string msg) {
    for (auto g = guards_.rbegin(); g != guards_.rend(); ++g) ok = !*g || ok;
    checks.emplace_back(std::move(ok), std::move(msg));
  }

  std::string stage_;
  RegionOf region_;
  std::vector<Expr> guards_;
};

class InjectAccessChecks : public IRMutator {
 protected:
  Stmt mutate_(const ProducerRealizeNode* op) override {
    realized_.emplace_back(op->tensor, op->bounds);
    Stmt s = IRMutator::mutate_(op);
    realized_.pop_back();
    return s;
  }
  Stmt mutate_(const ProducerStoreNode* op) override {
    CollectChecks c(op->tensor->op->name, [this](const te::Tensor& t) { return region(t); });
    c.visit(op->value);
    for (const Expr& i : op->indices) c.visit(i);
    c.access(op->tensor, op->indices, "writes");
    std::vector<Stmt> parts;
    for (auto& [cond, msg] : c.checks) {
      Expr simple = te::simplify(cond);
      if (!te::is_one(simple)) parts.push_back(make_stmt<AssertStmtNode>(simple, msg, no_op()));
    }
    parts.push_back(to_stmt(op));
    return seq(std::move(parts));
  }

 private:
  std::vector<Range> region(const te::Tensor& t) {
    for (auto it = realized_.rbegin(); it != realized_.rend(); ++it)
      if (it->first == t) return it->second;
    std::vector<Range> full;
    for (const Expr& e : t.shape()) full.emplace_back(te::make_zero(e.dtype()), e);
    return full;
  }
  std::vector<std::pair<te::Tensor, std::vector<Range>>> realized_;
};

}  // namespace

Stmt inject_access_checks(const Stmt& s) { return InjectAccessChecks().mutate(s); }

}  // namespace loom::lowering
