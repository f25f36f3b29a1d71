// build_cuda: lowered functions with device kernels → CUDA C → PTX → a "cuda" module.
//
// The host body of each function is read for its launch plan: the kernels it launches, in
// order, on which buffers (arguments, or global buffers it allocates, which become device
// temporaries), with launch extents evaluated to constants. Argument checks are done by the
// module in C++ from the BufferArgs (the same checks make_packed_api writes, but for kDLCUDA),
// so the host body's asserts are not interpreted.
#include <map>

#include "codegen_cuda_internal.h"
#include "loom/codegen/cuda.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"
#include "loom/te/arith.h"

namespace loom::codegen {

namespace {

using namespace lowering;  // NOLINT

class PlanBuilder {
 public:
  explicit PlanBuilder(const LoweredFunc& f) : f_(f) {
    plan_.name = f.name;
    for (const auto& a : f.args) {
      runtime::CudaArgSpec s;
      s.name = a.name;
      s.dtype = a.dtype;
      for (size_t d = 0; d < a.shape.size(); ++d)
        s.shape.push_back(eval(a.shape[d], fmt::format("shape of argument '{}' (dimension {})", a.name, d)));
      plan_.args.push_back(std::move(s));
    }
  }

  runtime::CudaFunctionPlan build() {
    visit(f_.body);
    LOOM_CHECK(!plan_.launches.empty() || f_.device_funcs.empty(),
               "CUDA build: function '{}' has kernels but its host body launches none", f_.name);
    return plan_;
  }

 private:
  int64_t eval(const Expr& e, const std::string& what) {
    Expr s = te::simplify(e);
    if (auto c = te::as_const_int(s)) return *c;
    switch (s.kind()) {
      case te::ExprKind::Var: {
        auto it = env_.find(s.as<te::VarNode>());
        if (it != env_.end()) return it->second;
        break;
      }
      case te::ExprKind::Cast: return eval(s.as<te::CastNode>()->value, what);
#define LOOM_BIN(K, N, OP)                                    \
  case te::ExprKind::K: {                                     \
    auto* n = s.as<te::N>();                                  \
    int64_t a = eval(n->a, what), b = eval(n->b, what);       \
    OP;                                                       \
  }
      LOOM_BIN(Add, AddNode, return a + b)
      LOOM_BIN(Sub, SubNode, return a - b)
      LOOM_BIN(Mul, MulNode, return a * b)
      LOOM_BIN(Div, DivNode, LOOM_CHECK(b != 0, "CUDA build: division by zero in {}", what); return a / b)
      LOOM_BIN(Mod, ModNode, LOOM_CHECK(b != 0, "CUDA build: division by zero in {}", what); return a % b)
      LOOM_BIN(FloorDiv, FloorDivNode, LOOM_CHECK(b != 0, "CUDA build: division by zero in {}", what);
               return (a / b) - ((a % b != 0) && ((a % b < 0) != (b < 0))))
      LOOM_BIN(FloorMod, FloorModNode, LOOM_CHECK(b != 0, "CUDA build: division by zero in {}", what);
               int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r)
      LOOM_BIN(Min, MinNode, return std::min(a, b))
      LOOM_BIN(Max, MaxNode, return std::max(a, b))
#undef LOOM_BIN
      default: break;
    }
    fail("CUDA build: function '{}': {} must be a constant, got {}", f_.name, what, te::to_string(e));
  }

  static bool has_launch(const Stmt& s) {
    if (!s.defined()) return false;
    switch (s.kind()) {
      case StmtKind::Evaluate: {
        auto* c = s.as<EvaluateNode>()->value.as<te::CallNode>();
        return c && c->name == "loom.launch_kernel";
      }
      case StmtKind::Seq:
        for (const auto& p : s.as<SeqStmtNode>()->seq)
          if (has_launch(p)) return true;
        return false;
      case StmtKind::LetStmt: return has_launch(s.as<LetStmtNode>()->body);
      case StmtKind::AttrStmt: return has_launch(s.as<AttrStmtNode>()->body);
      case StmtKind::AssertStmt: return has_launch(s.as<AssertStmtNode>()->body);
      case StmtKind::Allocate: return has_launch(s.as<AllocateNode>()->body);
      case StmtKind::For: return has_launch(s.as<ForNode>()->body);
      case StmtKind::While: return has_launch(s.as<WhileNode>()->body);
      case StmtKind::IfThenElse:
        return has_launch(s.as<IfThenElseNode>()->then_case) || has_launch(s.as<IfThenElseNode>()->else_case);
      default: return false;
    }
  }

  void visit(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::Seq:
        for (const auto& p : s.as<SeqStmtNode>()->seq) visit(p);
        return;
      case StmtKind::AttrStmt: return visit(s.as<AttrStmtNode>()->body);
      case StmtKind::AssertStmt: return visit(s.as<AssertStmtNode>()->body);
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        if (n->var.dtype().is_int() || n->var.dtype().is_uint()) {
          Expr v = te::simplify(n->value);
          if (auto c = te::as_const_int(v)) env_[n->var.get()] = *c;
        }
        return visit(n->body);
      }
      case StmtKind::Allocate: {
        auto* n = s.as<AllocateNode>();
        if (!has_launch(n->body)) return;
        runtime::CudaTempBuffer t;
        t.dtype = n->dtype.element_of();
        t.numel = eval(n->size(), fmt::format("size of buffer '{}'", n->buffer_var.name())) * n->dtype.lanes();
        temps_[n->buffer_var.get()] = int(f_.args.size() + plan_.temps.size());
        plan_.temps.push_back(t);
        return visit(n->body);
      }
      case StmtKind::Evaluate: {
        auto* c = s.as<EvaluateNode>()->value.as<te::CallNode>();
        if (c && c->name == "loom.launch_kernel") launch(c);
        return;
      }
      default:
        LOOM_CHECK(!has_launch(s),
                   "CUDA build: function '{}': kernel launches under host control flow (loops or branches) are not "
                   "supported",
                   f_.name);
        return;
    }
  }

  void launch(const te::CallNode* c) {
    LOOM_CHECK(!c->args.empty() && c->args[0].as<te::StringImmNode>(), "CUDA build: malformed loom.launch_kernel in '{}'",
               f_.name);
    const std::string& kname = c->args[0].as<te::StringImmNode>()->value;
    const DeviceFunc* k = nullptr;
    for (const auto& d : f_.device_funcs)
      if (d.name == kname) k = &d;
    LOOM_CHECK(k != nullptr, "CUDA build: function '{}' launches unknown kernel '{}'", f_.name, kname);
    LOOM_CHECK(c->args.size() == 1 + k->buffer_params.size() + k->scalar_params.size(),
               "CUDA build: launch of '{}' passes {} operands, the kernel takes {}", kname, c->args.size() - 1,
               k->buffer_params.size() + k->scalar_params.size());
    runtime::CudaLaunch l;
    l.kernel = kname;
    size_t i = 1;
    for (; i < 1 + k->buffer_params.size(); ++i) {
      auto* v = c->args[i].as<te::VarNode>();
      LOOM_CHECK(v != nullptr, "CUDA build: launch of '{}': buffer operand {} is not a buffer", kname, i - 1);
      int idx = -1;
      for (size_t a = 0; a < f_.args.size(); ++a)
        if (f_.args[a].data.get() == v || f_.args[a].handle.get() == v) idx = int(a);
      if (idx < 0 && temps_.count(v)) idx = temps_[v];
      LOOM_CHECK(idx >= 0, "CUDA build: launch of '{}': buffer '{}' is neither an argument nor a host allocation", kname,
                 v->name);
      l.buffers.push_back(idx);
    }
    for (; i < c->args.size(); ++i) {
      l.scalars.push_back(eval(c->args[i], fmt::format("scalar operand {} of kernel '{}'", i - 1, kname)));
      l.scalar_is_64.push_back(c->args[i].dtype().bits() == 64);
    }
    int64_t threads = 1;
    for (const auto& [tag, ext] : k->thread_extents) {
      int64_t v = eval(ext, fmt::format("launch extent {} of kernel '{}'", tag, kname));
      LOOM_CHECK(v >= 1, "CUDA build: kernel '{}': {} has extent {}", kname, tag, v);
      int dim = tag.back() - 'x';
      LOOM_CHECK(dim >= 0 && dim < 3 && tag.size() > 2, "CUDA build: kernel '{}': unknown thread tag '{}'", kname, tag);
      if (tag.rfind("blockIdx", 0) == 0) l.grid[dim] = v;
      else if (tag.rfind("threadIdx", 0) == 0) l.block[dim] = v, threads *= v;
      else fail("CUDA build: kernel '{}': unknown thread tag '{}'", kname, tag);
    }
    LOOM_CHECK(threads <= 1024, "CUDA build: kernel '{}' uses {} threads per block (at most 1024)", kname, threads);
    LOOM_CHECK(k->shared_bytes <= 48 * 1024, "CUDA build: kernel '{}' uses {} bytes of shared memory (at most 49152)",
               kname, k->shared_bytes);
    plan_.launches.push_back(std::move(l));
  }

  const LoweredFunc& f_;
  runtime::CudaFunctionPlan plan_;
  std::map<const te::VarNode*, int64_t> env_;
  std::map<const te::VarNode*, int> temps_;
};

}  // namespace

runtime::CudaFunctionPlan cuda_launch_plan(const LoweredFunc& f) {
  LOOM_CHECK(f.body.defined(), "build: function '{}' has no body", f.name);
  LOOM_CHECK(!f.device_funcs.empty(),
             "CUDA build: function '{}' has no GPU kernels: bind its loops to blockIdx/threadIdx (s[T].bind) "
             "before building for cuda",
             f.name);
  return PlanBuilder(f).build();
}

runtime::Module build_cuda(const std::vector<LoweredFunc>& funcs, const Target& target) {
  LOOM_CHECK(target.is_cuda(), "build_cuda: target '{}' is not cuda", target.str());
  CudaCodegenOptions opts;
  opts.fast_math = target.get("fast_math", "1") != "0";
  std::vector<runtime::CudaFunctionPlan> plans;
  for (const auto& f : funcs) plans.push_back(cuda_launch_plan(f));
  std::string src = cuda_source(funcs, opts);
  std::string ptx = compile_to_ptx(src, cuda_arch(target), opts.fast_math);
  return runtime::make_cuda_module(std::move(ptx), std::move(src), std::move(plans), target.str());
}

}  // namespace loom::codegen
