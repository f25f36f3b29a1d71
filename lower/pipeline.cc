// lower(): the lowering pipeline. This file is the one place that says which passes run,
// and in which order.
#include <ostream>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/passes.h"
#include "loom/lower/vectorization_report.h"

namespace loom::lowering {

namespace {

/// Binds each argument tensor to its buffer, following the schedule to the operation
/// that now computes it (cache_write and inlining replace operations).
std::vector<BufferArg> make_buffer_args(const schedule::Schedule& s, const std::vector<Tensor>& args,
                                        const std::string& func) {
  std::vector<BufferArg> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i];
    LOOM_CHECK(t.defined(), "lower '{}': argument {} is an undefined tensor", func, i);
    auto it = s->stage_map.find(t.op().get());
    LOOM_CHECK(it != s->stage_map.end(), "lower '{}': argument {} ('{}') is not computed by this schedule", func, i,
               t.name());
    for (const BufferArg& prev : out) {
      LOOM_CHECK(prev.tensor != te::output(it->second->op, t.value_index()),
                 "lower '{}': tensor '{}' is passed twice", func, t.name());
    }
    BufferArg a;
    a.name = t.name();
    a.tensor = te::output(it->second->op, t.value_index());
    a.dtype = t.dtype();
    a.shape = t.shape();
    for (const Expr& d : a.shape) {
      LOOM_CHECK(te::as_const_int(d).has_value(), "lower '{}': argument '{}' has a non-constant shape", func, t.name());
    }
    a.handle = Var(t.name() + ".handle", DataType::Handle());
    a.data = Var(t.name(), DataType::Handle());
    out.push_back(std::move(a));
  }
  for (const schedule::Stage& st : s->stages) {
    if (st->op->kind == te::OpKind::kPlaceholder) continue;
    for (const Tensor& in : st->op->input_tensors()) {
      if (in.op()->kind != te::OpKind::kPlaceholder) continue;
      bool passed = false;
      for (const BufferArg& a : out) passed |= a.tensor.op() == in.op();
      LOOM_CHECK(passed, "lower '{}': stage '{}' reads placeholder '{}', which is not among the arguments; pass it "
                 "to lower()/build()", func, st->op->name, in.name());
    }
  }
  return out;
}

/// Drops the ProducerRealize of tensors that are arguments (the caller owns their memory).
class StripArgRealize : public IRMutator {
 public:
  explicit StripArgRealize(const std::vector<BufferArg>& args) : args_(args) {}

 protected:
  Stmt mutate_(const ProducerRealizeNode* op) override {
    for (const BufferArg& a : args_) {
      if (a.tensor == op->tensor) return mutate(op->body);
    }
    return IRMutator::mutate_(op);
  }

 private:
  const std::vector<BufferArg>& args_;
};

}  // namespace

LoweredFunc lower(const schedule::Schedule& user_schedule, const std::vector<Tensor>& args, const std::string& name,
                  const LowerOptions& opts) {
  LOOM_CHECK(!name.empty(), "lower: the function needs a name");
  schedule::Schedule s = user_schedule.copy();
  LoweredFunc f;
  f.name = name;
  auto step = [&](const char* pass, Stmt body) {
    f.body = std::move(body);
    if (opts.print_after_all) *opts.print_after_all << "// ---- after " << pass << "\n" << f.body << "\n";
  };

  const bool gpu = opts.target.is_cuda();
  LOOM_CHECK(!(gpu && opts.vector_report),
             "lower '{}': the vectorization report describes the LLVM CPU code generator, not target '{}'", name,
             opts.target.str());
  inline_stages(s);
  check_stage_intrinsics(s, name);
  f.args = make_buffer_args(s, args, name);
  check_reads_in_bounds(s, name);
  if (gpu) infer_gpu_scope(s);
  BoundMap bounds = infer_bound(s);
  step("schedule_ops", schedule_ops(s, bounds));
  step("strip_arg_realize", StripArgRealize(f.args).mutate(f.body));
  if (opts.check_accesses) step("inject_access_checks", inject_access_checks(f.body));
  if (gpu) check_thread_binding(f.body);
  step("simplify", simplify(f.body));
  step("storage_flatten", storage_flatten(f.body, f.args));
  // double_buffer only pays off with threads that fetch and compute concurrently; CPU
  // targets ignore it.
  if (!gpu) step("strip_double_buffer", strip_double_buffer(f.body));
  step("simplify", simplify(f.body));
  step("tensorize", tensorize(f.body, s));
  if (!gpu) {
    step("loop_partition", loop_partition(f.body));
    step("simplify", simplify(f.body));
    step("specialize_partial_tiles", specialize_partial_tiles(f.body));
    step("simplify", simplify(f.body));
  }
  step("vectorize_loops", vectorize_loops(f.body));
  if (gpu) step("inject_virtual_thread", inject_virtual_thread(f.body));
  if (gpu) step("inject_double_buffer", inject_double_buffer(f.body));
  // The passes after storage_rewrite. The vectorization report runs them a second time
  // without it: merging temporaries renames a buffer to the one whose storage it takes, and
  // the report names buffers as the schedule does (no other pass renames a buffer).
  auto finish = [](Stmt body, const auto& after) {
    body = unroll_loops(body);
    after("unroll_loops", body);
    body = simplify(body);
    after("simplify", body);
    body = remove_no_op(body);
    after("remove_no_op", body);
    body = predicate_select_loads(body);
    after("predicate_select_loads", body);
    return body;
  };
  if (opts.vector_report) {
    LoweredFunc unshared;
    unshared.name = name;
    unshared.args = f.args;
    unshared.body = finish(f.body, [](const char*, const Stmt&) {});
    *opts.vector_report = vectorization_report(unshared, opts.target);
  }
  step("storage_rewrite", storage_rewrite(f.body));
  finish(f.body, step);
  if (gpu) step("thread_sync", thread_sync(f.body));
  if (opts.skip_packed_api) {
    if (!gpu) check_intrinsics(f, opts.target);
    return f;
  }
  f = make_packed_api(std::move(f), gpu ? kDLCUDA : kDLCPU);
  if (opts.print_after_all) *opts.print_after_all << "// ---- after make_packed_api\n" << f.body << "\n";
  if (gpu) {
    f = split_host_device(std::move(f));
    if (opts.print_after_all) {
      *opts.print_after_all << "// ---- after split_host_device\n" << f.body << "\n";
      for (const DeviceFunc& k : f.device_funcs) *opts.print_after_all << "// kernel " << k.name << "\n" << k.body << "\n";
    }
    verify_gpu(f);
  }
  check_intrinsics(f, opts.target);
  return f;
}

}  // namespace loom::lowering
