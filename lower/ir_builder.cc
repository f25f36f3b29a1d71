// Loop-IR bodies of extern operations and the IRBuilder that writes them.
#include "loom/lower/ir_builder.h"

#include <fmt/format.h>

#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

class LoopBody : public te::ExternBody {
 public:
  LoopBody(std::string name, LoopBodyBuilder build) : name_(std::move(name)), build_(std::move(build)) {}
  std::string describe() const override { return "loop IR '" + name_ + "'"; }
  Stmt build(const ExternContext& ctx) const { return build_(ctx); }

 private:
  std::string name_;
  LoopBodyBuilder build_;
};

std::string param_names(const std::map<std::string, int64_t>& params) {
  std::string s;
  for (const auto& [k, v] : params) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", k, v);
  return s.empty() ? "none" : s;
}

}  // namespace

int64_t ExternContext::param(const std::string& key) const {
  auto it = params.find(key);
  LOOM_CHECK(it != params.end(), "extern '{}': its body asks for parameter '{}', which the operation does not declare "
             "(it has: {})", name, key, param_names(params));
  return it->second;
}

std::shared_ptr<const te::ExternBody> loop_body(std::string name, LoopBodyBuilder build) {
  LOOM_CHECK(build != nullptr, "loop_body '{}': the builder is undefined", name);
  return std::make_shared<LoopBody>(std::move(name), std::move(build));
}

Stmt build_extern_body(const te::Operation& self, const std::map<std::string, int64_t>& params) {
  LOOM_CHECK(self != nullptr, "build_extern_body: the operation is undefined");
  const te::OperationNode& op = *self;
  LOOM_CHECK(op.kind == te::OpKind::kExtern, "build_extern_body: '{}' is not an extern operation", op.name);
  const auto* body = dynamic_cast<const LoopBody*>(op.extern_body.get());
  LOOM_CHECK(body, "extern '{}': its body ({}) is not loop IR; only lowering::loop_body bodies can be lowered", op.name,
             op.extern_body ? op.extern_body->describe() : "none");
  ExternContext ctx;
  ctx.name = op.name;
  ctx.inputs = op.inputs;
  ctx.params = op.params;
  for (const auto& [k, v] : params) {
    LOOM_CHECK(op.params.count(k), "extern '{}': no parameter '{}' (it has: {})", op.name, k, param_names(op.params));
    ctx.params[k] = v;
  }
  for (int i = 0; i < op.num_outputs(); ++i) ctx.outputs.push_back(te::output(self, i));
  Stmt s = body->build(ctx);
  LOOM_CHECK(s.defined(), "extern '{}': its body builder returned no statement", op.name);
  return s;
}

// ---------------------------------------------------------------- IRBuilder

IRBuilder::IRBuilder() : blocks_(1) {}

void IRBuilder::emit(Stmt s) {
  if (s.defined()) blocks_.back().push_back({std::move(s), nullptr});
}

void IRBuilder::store(const Tensor& t, const std::vector<Expr>& indices, Expr value) {
  LOOM_CHECK(t.defined(), "IRBuilder::store: the tensor is undefined");
  LOOM_CHECK(indices.size() == t.ndim(), "IRBuilder::store: tensor '{}' has {} dimensions, stored with {} indices",
             t.name(), t.ndim(), indices.size());
  LOOM_CHECK(value.defined(), "IRBuilder::store: the value stored into '{}' is undefined", t.name());
  if (value.dtype() != t.dtype()) value = te::cast(t.dtype(), value);
  emit(make_stmt<ProducerStoreNode>(t, value, indices));
}

void IRBuilder::loop(const std::string& name, Expr begin, Expr extent, const std::function<void(const Var&)>& body,
                     ForKind kind) {
  LOOM_CHECK(begin.defined() && extent.defined(), "IRBuilder::loop '{}': the range is undefined", name);
  LOOM_CHECK(kind != ForKind::kThreadBinding, "IRBuilder::loop '{}': bind threads with launch_thread", name);
  if (kind == ForKind::kVectorized || kind == ForKind::kUnrolled)
    LOOM_CHECK(te::as_const_int(extent).has_value(), "IRBuilder::loop '{}': a {} loop needs a constant extent, got {}",
               name, to_string(kind), te::to_string(extent));
  Var v(name, DataType::Int(32));
  blocks_.emplace_back();
  body(v);
  Stmt inner = close(std::move(blocks_.back()));
  blocks_.pop_back();
  emit(make_stmt<ForNode>(v, te::cast(DataType::Int(32), begin), te::cast(DataType::Int(32), extent), kind,
                          inner.defined() ? inner : no_op()));
}

void IRBuilder::if_then(Expr cond, const std::function<void()>& then_body, const std::function<void()>& else_body) {
  LOOM_CHECK(cond.defined() && cond.dtype().is_bool() && cond.dtype().is_scalar(),
             "IRBuilder::if_then: the condition must be a scalar bool");
  blocks_.emplace_back();
  then_body();
  Stmt t = close(std::move(blocks_.back()));
  blocks_.pop_back();
  Stmt e;
  if (else_body) {
    blocks_.emplace_back();
    else_body();
    e = close(std::move(blocks_.back()));
    blocks_.pop_back();
  }
  emit(make_stmt<IfThenElseNode>(cond, t.defined() ? t : no_op(), e));
}

Var IRBuilder::let(const std::string& name, Expr value) {
  LOOM_CHECK(value.defined(), "IRBuilder::let '{}': the value is undefined", name);
  Var v(name, value.dtype());
  blocks_.back().push_back({Stmt(), [v, value](Stmt body) { return make_stmt<LetStmtNode>(v, value, body); }});
  return v;
}

Tensor IRBuilder::scratch(const std::string& name, std::vector<Expr> shape, DataType dtype, const std::string& scope) {
  Tensor t = te::placeholder(std::move(shape), dtype, name);
  std::vector<Range> bounds;
  for (const Expr& e : t.shape()) bounds.emplace_back(te::make_const(DataType::Int(32), 0), e);
  blocks_.back().push_back({Stmt(), [t, bounds, scope](Stmt body) {
                              auto n = std::make_shared<ProducerRealizeNode>(t, bounds, scope, body);
                              n->align.assign(bounds.size(), {0, 0});
                              return Stmt(n);
                            }});
  return t;
}

Var IRBuilder::launch_thread(const std::string& tag, Expr extent) {
  LOOM_CHECK(extent.defined(), "IRBuilder::launch_thread '{}': the extent is undefined", tag);
  extent = te::cast(DataType::Int(32), extent);
  te::IterVar iv = te::thread_axis(tag, Range(te::make_const(DataType::Int(32), 0), extent));
  blocks_.back().push_back({Stmt(), [iv, extent](Stmt body) {
                              return make_stmt<AttrStmtNode>(iv, Var(), attr::kThreadExtent, extent, body);
                            }});
  return iv.var();
}

Stmt IRBuilder::close(std::vector<Entry> block) {
  std::vector<Stmt> tail;
  for (size_t i = block.size(); i-- > 0;) {
    if (block[i].wrap) {
      Stmt body = seq(std::vector<Stmt>(tail.rbegin(), tail.rend()));
      tail = {block[i].wrap(body.defined() ? body : no_op())};
    } else {
      tail.push_back(block[i].stmt);
    }
  }
  return seq(std::vector<Stmt>(tail.rbegin(), tail.rend()));
}

Stmt IRBuilder::get() {
  LOOM_CHECK(blocks_.size() == 1, "IRBuilder::get: called inside an open loop or branch");
  Stmt s = close(std::move(blocks_.back()));
  blocks_.assign(1, {});
  return s.defined() ? s : no_op();
}

}  // namespace loom::lowering
