// inline_stages: substitutes compute_inline stages into their readers.
//
// Operations are immutable, so every reader whose body changes gets a new operation (same
// iteration variables, so its schedule stays valid), and so, transitively, does every
// reader of a replaced operation.
#include <algorithm>

#include "loom/lower/passes.h"
#include "loom/te/expr_functor.h"

namespace loom::lowering {

using schedule::AttachType;
using schedule::Stage;

namespace {

class RewriteReads : public te::ExprMutator {
 public:
  std::unordered_map<const te::OperationNode*, te::Operation> replaced;
  std::unordered_map<const te::OperationNode*, te::Operation> inlined;

 protected:
  Expr mutate_(const te::ProducerLoadNode* op) override {
    Expr e = te::ExprMutator::mutate_(op);
    const auto* load = e.as<te::ProducerLoadNode>();
    const te::OperationNode* producer = load->producer->op.get();
    if (auto it = inlined.find(producer); it != inlined.end()) {
      const te::OperationNode& p = *it->second;
      te::VarMap vmap;
      for (size_t d = 0; d < p.axis.size(); ++d) vmap[p.axis[d].var().get()] = load->indices[d];
      return mutate(te::substitute(p.body[load->producer->value_index], vmap));
    }
    if (auto it = replaced.find(producer); it != replaced.end()) {
      return te::output(it->second, load->producer->value_index)(load->indices);
    }
    return e;
  }
};

}  // namespace

void inline_stages(schedule::Schedule& s) {
  RewriteReads rw;
  for (const Stage& st : s.stages()) {
    if (st->op->kind == te::OpKind::kPlaceholder) continue;
    if (st->op->kind == te::OpKind::kExtern) {
      // Reads whole tensors: an inlined producer has no storage to read.
      auto n = std::make_shared<te::OperationNode>(*st->op);
      bool changed = false;
      for (Tensor& in : n->inputs) {
        LOOM_CHECK(!rw.inlined.count(in.op().get()),
                   "stage '{}' is inlined, but extern operation '{}' reads it as a whole tensor; compute it at the "
                   "root",
                   in.name(), st->name());
        if (auto it = rw.replaced.find(in.op().get()); it != rw.replaced.end()) {
          in = te::output(it->second, in.value_index());
          changed = true;
        }
      }
      if (changed) {
        te::Operation old = st->op;
        st->op = n;
        s->stage_map[n.get()] = st;
        rw.replaced[old.get()] = n;
        std::replace(s->outputs.begin(), s->outputs.end(), old, te::Operation(n));
      }
      continue;
    }
    std::vector<Expr> body;
    bool changed = false;
    for (const Expr& e : st->op->body) {
      body.push_back(rw.mutate(e));
      changed |= !body.back().same_as(e);
    }
    te::Operation old = st->op;
    if (changed) {
      auto n = std::make_shared<te::OperationNode>(*st->op);
      n->body = body;
      st->op = n;
      s->stage_map[n.get()] = st;
      rw.replaced[old.get()] = n;
      std::replace(s->outputs.begin(), s->outputs.end(), old, te::Operation(n));
    }
    // Readers still name the stage's operation as it was (before a producer of it was
    // substituted into it): both names inline the rewritten body.
    if (st->attach_type == AttachType::kInline) rw.inlined[st->op.get()] = rw.inlined[old.get()] = st->op;
  }
}

}  // namespace loom::lowering
