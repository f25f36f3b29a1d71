// check_thread_binding: on a GPU target all computation runs in kernels, so every store of
// every stage must sit under a thread_extent (a loop bound to blockIdx/threadIdx).
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"

namespace loom::lowering {

namespace {

class Checker : public IRVisitor {
 public:
  using IRVisitor::visit;

 protected:
  void visit_(const AttrStmtNode* op) override {
    bool thread = op->key == attr::kThreadExtent;
    depth_ += thread;
    IRVisitor::visit_(op);
    depth_ -= thread;
  }
  void visit_(const ProducerStoreNode* op) override {
    LOOM_CHECK(depth_ > 0,
               "stage '{}' is not bound to GPU threads: bind its outer loops to blockIdx/threadIdx (or compute it at "
               "a loop that is) for target cuda",
               op->tensor.op()->name);
    IRVisitor::visit_(op);
  }
  void visit_(const StoreNode* op) override {
    LOOM_CHECK(depth_ > 0, "buffer '{}' is written outside any GPU kernel: bind the loops that compute it to "
               "blockIdx/threadIdx for target cuda", op->buffer_var.name());
    IRVisitor::visit_(op);
  }

 private:
  int depth_ = 0;
};

}  // namespace

void check_thread_binding(const Stmt& s) { Checker().visit(s); }

}  // namespace loom::lowering
