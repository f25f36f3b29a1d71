// split_host_device: every outermost thread_extent region becomes a GPU kernel.
//
// Each region found outside any other (in program order) is cut out of the host body into a
// DeviceFunc "<func>_kernel<i>" and replaced by
//   Evaluate(call("loom.launch_kernel", {StringImm(name), buffer params…, scalar params…})).
// In the kernel body the thread_extent attributes are removed: every thread or block index
// is one Var per tag (DeviceFunc::thread_vars[i] stands for thread_extents[i].first, e.g.
// "threadIdx.x"), and the launch geometry is DeviceFunc::thread_extents (constants).
// Buffer params are the free buffer variables of the kernel: function arguments first, in
// argument order, then buffers the host allocates (temporaries), in order of first use.
#include <algorithm>
#include <unordered_set>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

int tag_rank(const std::string& tag) {
  static const char* order[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int i = 0; i < 6; ++i)
    if (tag == order[i]) return i;
  return -1;
}

/// Free variables of a kernel body in order of first use (defined ones excluded).
class FreeVars : public IRVisitor {
 public:
  std::vector<Var> vars;
  using IRVisitor::visit;

 protected:
  void visit_(const te::VarNode* op) override { use(op); }
  void visit_(const te::LoadNode* op) override {
    use(op->buffer_var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const StoreNode* op) override {
    use(op->buffer_var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const LetStmtNode* op) override {
    visit(op->value);
    defined_.insert(op->var.get());
    visit(op->body);
  }
  void visit_(const te::LetNode* op) override {
    visit(op->value);
    defined_.insert(op->var.get());
    visit(op->body);
  }
  void visit_(const ForNode* op) override {
    defined_.insert(op->loop_var.get());
    IRVisitor::visit_(op);
  }
  void visit_(const AllocateNode* op) override {
    defined_.insert(op->buffer_var.get());
    IRVisitor::visit_(op);
  }

 private:
  void use(const te::VarNode* v) {
    if (defined_.count(v) || seen_.count(v)) return;
    seen_.insert(v);
    vars.emplace_back(std::static_pointer_cast<const te::VarNode>(v->shared_from_this()));
  }
  std::unordered_set<const te::VarNode*> defined_, seen_;
};

class HostDeviceSplitter : public IRMutator {
 public:
  explicit HostDeviceSplitter(LoweredFunc& f) : f_(f) {
    post_order_visit(f.body, [&](const Stmt& s) {
      if (const auto* a = s.as<AllocateNode>()) host_alloc_dtype_[a->buffer_var.get()] = a->dtype;
    });
  }

 protected:
  Stmt mutate_(const AttrStmtNode* op) override {
    if (op->key != attr::kThreadExtent) return IRMutator::mutate_(op);
    DeviceFunc k = make_kernel(to_stmt(op), fmt::format("{}_kernel{}", f_.name, f_.device_funcs.size()));
    std::vector<Expr> args{te::make<te::StringImmNode>(k.name)};
    for (const Var& v : k.buffer_params) args.push_back(v);
    for (const Var& v : k.scalar_params) args.push_back(v);
    f_.device_funcs.push_back(std::move(k));
    return make_stmt<EvaluateNode>(te::call(DataType::Int(32), kLaunchKernel, std::move(args)));
  }

 private:
  DeviceFunc make_kernel(const Stmt& region, const std::string& name) {
    DeviceFunc k;
    k.name = name;
    // Launch geometry, one Var per tag.
    std::map<std::string, std::pair<Var, int64_t>> by_tag;
    te::VarMap canon;
    std::vector<const AttrStmtNode*> attrs;  // outermost first
    struct Collect : IRVisitor {
      std::vector<const AttrStmtNode*>* out;
      using IRVisitor::visit;
      void visit_(const AttrStmtNode* op) override {
        if (op->key == attr::kThreadExtent) out->push_back(op);
        IRVisitor::visit_(op);
      }
    } collect;
    collect.out = &attrs;
    collect.visit(region);
    for (const AttrStmtNode* a : attrs) {
      const std::string& tag = a->iter_var->thread_tag;
      LOOM_CHECK(tag_rank(tag) >= 0, "kernel '{}': loop bound to unknown thread tag '{}' (expected blockIdx.x/y/z or "
                 "threadIdx.x/y/z)", name, tag);
      auto ext = te::as_const_int(te::simplify(a->value));
      LOOM_CHECK(ext.has_value(), "kernel '{}': the extent of '{}' is {}, not a constant", name, tag,
                 te::to_string(a->value));
      auto [it, fresh] = by_tag.emplace(tag, std::make_pair(a->iter_var.var(), *ext));
      if (!fresh) {
        LOOM_CHECK(it->second.second == *ext,
                   "kernel '{}': '{}' is bound with extent {} and with extent {}; every loop bound to one thread "
                   "index in a kernel must have the same extent",
                   name, tag, it->second.second, *ext);
        if (!it->second.first.same_as(a->iter_var.var())) canon[a->iter_var.var().get()] = it->second.first;
      }
    }
    std::vector<std::string> tags;
    for (const auto& [tag, ve] : by_tag) tags.push_back(tag);
    std::sort(tags.begin(), tags.end(), [](const auto& a, const auto& b) { return tag_rank(a) < tag_rank(b); });
    std::unordered_set<const te::VarNode*> thread_vars;
    for (const std::string& tag : tags) {
      const auto& [v, ext] = by_tag.at(tag);
      k.thread_extents.emplace_back(tag, te::make_const(DataType::Int(32), ext));
      k.thread_vars.push_back(v);
      thread_vars.insert(v.get());
    }
    struct StripAttrs : IRMutator {
      Stmt mutate_(const AttrStmtNode* op) override {
        if (op->key == attr::kThreadExtent) return mutate(op->body);
        return IRMutator::mutate_(op);
      }
    };
    k.body = substitute(StripAttrs().mutate(region), canon);

    FreeVars fv;
    fv.visit(k.body);
    std::vector<Var> temps;
    for (const Var& v : fv.vars) {
      if (thread_vars.count(v.get())) continue;
      if (v.dtype().is_handle()) {
        bool is_arg = std::any_of(f_.args.begin(), f_.args.end(), [&](const BufferArg& a) { return a.data.same_as(v); });
        if (!is_arg) {
          LOOM_CHECK(host_alloc_dtype_.count(v.get()), "kernel '{}': uses buffer '{}' that is neither an argument nor "
                     "allocated by the host", name, v.name());
          temps.push_back(v);
        }
      } else {
        k.scalar_params.push_back(v);
      }
    }
    for (const BufferArg& a : f_.args) {
      bool used = std::any_of(fv.vars.begin(), fv.vars.end(), [&](const Var& v) { return v.same_as(a.data); });
      if (!used) continue;
      k.buffer_params.push_back(a.data);
      k.buffer_dtypes.push_back(a.dtype);
    }
    for (const Var& t : temps) {
      k.buffer_params.push_back(t);
      k.buffer_dtypes.push_back(host_alloc_dtype_.at(t.get()));
    }
    post_order_visit(k.body, [&](const Stmt& s) {
      const auto* a = s.as<AllocateNode>();
      if (!a || a->scope != "shared") return;
      auto n = te::as_const_int(te::simplify(a->size()));
      LOOM_CHECK(n.has_value(), "kernel '{}': shared buffer '{}' needs a constant size", name, a->buffer_var.name());
      k.shared_bytes += *n * a->dtype.bytes() * a->dtype.lanes();
    });
    return k;
  }

  LoweredFunc& f_;
  std::unordered_map<const te::VarNode*, DataType> host_alloc_dtype_;
};

}  // namespace

LoweredFunc split_host_device(LoweredFunc f) {
  LOOM_CHECK(f.device_funcs.empty(), "split_host_device: function '{}' is already split", f.name);
  HostDeviceSplitter splitter(f);
  f.body = splitter.mutate(f.body);
  return f;
}

}  // namespace loom::lowering
