// compile: fused groups → scheduled, lowered kernels → one module, with the memory plan and
// the constants wired into the graph executor's plan.
#include "loom/graph_opt/compile.h"

#include <unistd.h>

#include <cctype>
#include <map>
#include <ostream>
#include <set>

#include "loom/codegen/graph.h"
#include "loom/runtime/error.h"
#include "loom/te/op_registry.h"
#include "schedule_group.h"

namespace loom::graph_opt {

namespace {

using runtime::GraphTensor;
using runtime::GraphTensorKind;

/// `name` as a C identifier no other kernel has and the graph's symbols do not take.
std::string kernel_name(const std::string& name, const std::string& entry, std::set<std::string>* used) {
  std::string base;
  for (char c : name) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || base.rfind("loom_", 0) == 0 ||
      base.rfind("__", 0) == 0 || base[0] == '_')
    base = "k_" + base;
  std::string out = base;
  for (int i = 1; used->count(out) || out == entry || out == entry + "_profile"; ++i) out = fmt::format("{}_{}", base, i);
  used->insert(out);
  return out;
}

std::string member_ops(const Graph& g, const FusedGroup& grp) {
  std::string out;
  for (int n : grp.nodes) out += (out.empty() ? "" : "+") + g.nodes[size_t(n)].op;
  return out;
}

/// What the group computes, independent of its values' names: two groups with the same
/// signature compose the same computation and get the same schedule, so they share a kernel.
std::string group_signature(const Graph& g, const FusedGroup& grp) {
  std::string sig;
  std::map<ValueRef, std::string> local;
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    local[grp.inputs[k]] = fmt::format("in{}", k);
    sig += fmt::format("in{}: {}\n", k, to_string(g.type(grp.inputs[k])));
  }
  for (size_t m = 0; m < grp.nodes.size(); ++m) {
    const Node& n = g.nodes[size_t(grp.nodes[m])];
    sig += fmt::format("m{} = {}(", m, n.op);
    for (ValueRef v : n.inputs) sig += local.at(v) + ",";
    sig += ")";
    for (const auto& [k, v] : n.attrs) sig += fmt::format(" {}={}", k, te::ops::to_string(v));
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      local[{grp.nodes[m], int(o)}] = fmt::format("m{}:{}", m, o);
      sig += " : " + to_string(n.outputs[o]);
    }
    sig += "\n";
  }
  for (ValueRef v : grp.outputs) sig += "out " + local.at(v) + "\n";
  return sig;
}

/// The name of value `v` as the plan's tensors carry it: the node's, with ":k" for output k > 0.
std::string tensor_name(const Graph& g, ValueRef v) {
  const std::string& n = g.node(v).name;
  return v.index == 0 ? n : fmt::format("{}:{}", n, v.index);
}

/// Builds the plan's tensors: one per value the kernels or the signature touch.
class PlanBuilder {
 public:
  PlanBuilder(const Graph& g, const MemoryPlan& memory) : g_(g), memory_(memory) {
    std::set<ValueRef> graph_outputs(g.outputs.begin(), g.outputs.end());
    for (int n : g.input_nodes()) plan_.inputs.push_back(tensor({n, 0}, GraphTensorKind::kInput));
    outputs_ = graph_outputs;
    plan_.arena_bytes = memory.arena_bytes;
  }

  int32_t tensor(ValueRef v) {
    auto it = ids_.find(v);
    if (it != ids_.end()) return it->second;
    const Node& n = g_.node(v);
    if (auto src = memory_.views.find(v); src != memory_.views.end() && g_.node(src->second).is_input())
      return tensor(v, GraphTensorKind::kInput);
    if (n.is_input()) fail("graph '{}': input '{}' is not among the graph's inputs", g_.name, n.name);
    if (n.is_constant()) return tensor(v, GraphTensorKind::kConstant);
    return tensor(v, outputs_.count(v) ? GraphTensorKind::kOutput : GraphTensorKind::kIntermediate);
  }

  runtime::GraphPlan finish() {
    for (ValueRef v : g_.outputs) plan_.outputs.push_back(tensor(v));
    return std::move(plan_);
  }

 private:
  int32_t tensor(ValueRef v, GraphTensorKind kind) {
    const TensorType& t = g_.type(v);
    GraphTensor gt;
    gt.name = tensor_name(g_, v);
    gt.kind = kind;
    gt.dtype = t.dtype;
    gt.shape = t.shape;
    if (kind == GraphTensorKind::kConstant) gt.value = g_.node(v).value;
    if (kind == GraphTensorKind::kIntermediate) {
      const StorageEntry* e = memory_.find(v);
      LOOM_CHECK(e != nullptr, "graph '{}': the memory plan has no storage for {}", g_.name, g_.value_name(v));
      gt.arena_offset = e->offset;
    }
    if (auto src = memory_.views.find(v); src != memory_.views.end()) gt.view_of = tensor(src->second);
    int32_t id = int32_t(plan_.tensors.size());
    plan_.tensors.push_back(std::move(gt));
    ids_[v] = id;
    return id;
  }

  const Graph& g_;
  const MemoryPlan& memory_;
  runtime::GraphPlan plan_;
  std::set<ValueRef> outputs_;
  std::map<ValueRef, int32_t> ids_;
};

std::string gib(int64_t bytes) { return fmt::format("{:.1f} GiB", double(bytes) / double(int64_t(1) << 30)); }

/// Refuses a graph whose run needs more memory than this machine has: the arena of its
/// intermediate values, its constants, inputs and outputs together (a model of a few bytes
/// can ask for terabytes; the library would only fail, or be killed, when it runs).
void check_fits_memory(const Graph& g, const MemoryPlan& m) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t phys = 0;
  if (pages <= 0 || page <= 0 || __builtin_mul_overflow(int64_t(pages), int64_t(page), &phys)) return;
  int64_t constants = 0, io = 0, largest = 0;
  std::string largest_name;
  auto add = [](int64_t& sum, int64_t b) {
    if (__builtin_add_overflow(sum, b, &sum)) sum = INT64_MAX;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const int64_t b = nbytes(n.outputs[k]);
      if (n.is_constant()) add(constants, b);
      if (n.is_input()) add(io, b);
      if (b > largest) largest = b, largest_name = g.value_name({int(i), int(k)});
    }
  }
  for (ValueRef v : g.outputs) add(io, nbytes(g.type(v)));
  int64_t total = m.arena_bytes;
  add(total, constants);
  add(total, io);
  LOOM_CHECK(total <= phys,
             "compile: graph '{}' needs {} to run ({} of intermediate values, {} of constants, {} of inputs and "
             "outputs; the largest value, {}, is {}), more than this machine's {} of memory",
             g.name, gib(total), gib(m.arena_bytes), gib(constants), gib(io), largest_name, gib(largest), gib(phys));
}

}  // namespace

Graph optimize_for_compile(const Graph& graph, const CompileOptions& opt) {
  return graph.groups.empty() && graph.num_ops() > 0 ? optimize(graph, opt.passes) : graph;
}

LoweredGraph lower_graph(const Graph& graph, const Target& target, const records::ApplyHistoryBest* best,
                         const CompileOptions& opt) {
  LOOM_CHECK(target.is_cpu(), "compile: target \"{}\": networks compile for the CPU (an llvm target)", target.str());
  LoweredGraph out;
  CompileReport& report = out.report;
  report.fused = optimize_for_compile(graph, opt);
  const Graph& g = report.fused;
  verify(g);
  report.memory = plan_memory(g);
  validate_memory_plan(g, report.memory);
  check_fits_memory(g, report.memory);

  PlanBuilder pb(g, report.memory);
  std::set<std::string> names, warned;
  lowering::LowerOptions lopt;
  lopt.target = target;
  lopt.check_accesses = opt.check_accesses;
  std::vector<runtime::GraphKernel> kernels;
  std::map<std::string, size_t> by_signature;  // signature → index into report.kernels of its first kernel
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const FusedGroup& grp = g.groups[i];
    if (is_view_group(g, grp)) continue;  // its value is its source's storage (memory_plan.h)
    runtime::GraphKernel k;
    for (ValueRef v : grp.inputs) k.args.push_back(pb.tensor(v));
    for (ValueRef v : grp.outputs) k.args.push_back(pb.tensor(v));
    std::string sig = group_signature(g, grp);
    if (auto same = by_signature.find(sig); same != by_signature.end()) {
      CompiledKernel ck = report.kernels[same->second];
      k.name = ck.name;
      k.note = ck.schedule;
      kernels.push_back(std::move(k));
      report.kernels.push_back(std::move(ck));
      continue;
    }
    tuner::FusedSchedule s = tuner::schedule_fused(fused_kernel(g, int(i)), target, best);
    std::string name = kernel_name(grp.name, opt.entry, &names);
    try {
      out.funcs.push_back(lowering::lower(s.schedule, s.args, name, lopt));
    } catch (const Error& e) {
      fail("compile: graph '{}', group {} ('{}': {}): {}", g.name, i, grp.name, member_ops(g, grp), e.what());
    }
    k.name = name;
    k.note = s.note;
    kernels.push_back(std::move(k));
    by_signature[sig] = report.kernels.size();
    const bool tuned = s.source == tuner::ScheduleSource::kTuned || s.source == tuner::ScheduleSource::kAuto;
    report.kernels.push_back({name, member_ops(g, grp), s.note, s.workload_key, s.workload, tuner::to_string(s.source),
                              tuned});
    if (s.source == tuner::ScheduleSource::kDefault && warned.insert(s.workload_key).second) {
      report.untuned.push_back(s.workload_key);
      if (opt.warn)
        *opt.warn << fmt::format("warning: no tuning record for {} on {} (kernel {}); using the template's default "
                                 "config\n",
                                 s.workload_key, target.str(), name);
    }
  }
  report.functions = out.funcs.size();
  out.plan = pb.finish();
  out.plan.kernels = std::move(kernels);
  out.plan.name = opt.entry;
  return out;
}

runtime::Module compile(const Graph& graph, const Target& target, const records::ApplyHistoryBest* best,
                        const CompileOptions& opt, CompileReport* report) {
  LoweredGraph lg = lower_graph(graph, target, best, opt);
  runtime::Module m = codegen::build_graph(std::move(lg.plan), lg.funcs, target);
  if (report) *report = std::move(lg.report);
  return m;
}

}  // namespace loom::graph_opt
