// Construction helpers of the loop IR.
#include "loom/lower/stmt.h"

namespace loom::lowering {

Expr AllocateNode::size() const {
  Expr n = te::make_const(DataType::Int(32), 1);
  for (const Expr& e : extents) n = te::is_one(n) ? e : n * e;
  return n;
}

const char* to_string(ForKind k) {
  switch (k) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unrolled";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

namespace {
void flatten_into(const Stmt& s, std::vector<Stmt>* out) {
  if (!s.defined()) return;
  if (const auto* op = s.as<SeqStmtNode>()) {
    for (const Stmt& c : op->seq) flatten_into(c, out);
  } else {
    out->push_back(s);
  }
}
}  // namespace

Stmt seq(std::vector<Stmt> parts) {
  std::vector<Stmt> flat;
  for (const Stmt& s : parts) flatten_into(s, &flat);
  if (flat.empty()) return no_op();
  if (flat.size() == 1) return flat[0];
  return make_stmt<SeqStmtNode>(std::move(flat));
}

Stmt no_op() { return make_stmt<EvaluateNode>(te::make_const(DataType::Int(32), 0)); }

bool is_no_op(const Stmt& s) {
  if (!s.defined()) return true;
  if (const auto* op = s.as<EvaluateNode>()) return te::as_const_int(op->value).has_value();
  if (const auto* op = s.as<SeqStmtNode>()) {
    for (const Stmt& c : op->seq)
      if (!is_no_op(c)) return false;
    return true;
  }
  return false;
}

}  // namespace loom::lowering
