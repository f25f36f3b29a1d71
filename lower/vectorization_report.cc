// vectorization_report: the vector accesses of a lowered CPU function that are not dense
// vector loads/stores, and the vector operations computed lane by lane, each with the stage
// and buffer it belongs to, classified by vector_access.h exactly as codegen/llvm emits them.
#include "loom/lower/vectorization_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "loom/lower/ir_visitor.h"
#include "loom/lower/vector_access.h"

namespace loom::lowering {

namespace {

class VectorReporter : public IRVisitor {
 public:
  VectorReporter(std::string func, Target target) : stage_(func), func_(std::move(func)), target_(std::move(target)) {}

  std::vector<VectorReportEntry> entries;
  int vector_accesses = 0;

  using IRVisitor::visit;
  void visit(const Expr& e) override {
    if (auto why = scalarized_vector_op(e, target_)) {
      VectorReportEntry r;
      r.kind = VectorReportEntry::Kind::kScalarized;
      r.lanes = e.dtype().lanes();
      r.index = te::to_string(e);
      r.note = *why;
      add(std::move(r));
    }
    IRVisitor::visit(e);
  }

 protected:
  using IRVisitor::visit_;

  void visit_(const StoreNode* op) override {
    const std::string outer = std::exchange(stage_, op->buffer_var.name());
    if (op->value.dtype().lanes() > 1) {
      ++vector_accesses;
      VectorReportEntry r = access(op->buffer_var, op->value.dtype().lanes(), op->index, op->predicate);
      r.is_store = true;
      if (classify_vector_store(*op) == VectorAccess::kScatter) {
        r.kind = VectorReportEntry::Kind::kScatter;
        r.note = op->predicate.defined() ? "masked scatter (predicated)" : "scatter";
        add(std::move(r));
      } else if (op->predicate.defined()) {
        r.kind = VectorReportEntry::Kind::kPredicated;
        r.note = "masked store";
        add(std::move(r));
      }
    }
    IRVisitor::visit_(op);
    stage_ = outer;
  }

  void visit_(const te::LoadNode* op) override {
    const int lanes = op->dtype.lanes();
    if (lanes > 1) {
      ++vector_accesses;
      VectorReportEntry r = access(op->buffer_var, lanes, op->index, op->predicate);
      switch (classify_vector_load(*op)) {
        case VectorAccess::kDense:
          if (op->predicate.defined()) {
            r.kind = VectorReportEntry::Kind::kPredicated;
            r.note = "masked load";
            add(std::move(r));
          }
          break;
        case VectorAccess::kBroadcast: break;
        case VectorAccess::kStrided:
          r.kind = VectorReportEntry::Kind::kStrided;
          r.note = fmt::format("stride {}: {} lane-wide loads and a shuffle", *r.stride,
                               ((lanes - 1) * *r.stride + lanes) / lanes);
          if (op->predicate.defined()) r.note += "; a masked gather where a lane is masked off";
          add(std::move(r));
          break;
        case VectorAccess::kGather:
          r.kind = VectorReportEntry::Kind::kGather;
          if (r.stride) r.note = fmt::format("stride {}: ", *r.stride);
          else if (const auto* ramp = op->index.as<te::RampNode>())
            r.note = fmt::format("stride {}: ", te::to_string(ramp->stride));
          else if (op->index.as<te::BroadcastNode>()) r.note = "one element, predicated: ";
          else r.note = "index not a ramp: ";
          r.note += op->predicate.defined() ? "masked gather" : "gather";
          add(std::move(r));
          break;
        case VectorAccess::kScatter: LOOM_ICHECK(false);
      }
    }
    IRVisitor::visit_(op);
  }

  // Expressions outside a store belong to the one stage stored under them, if there is one.
  void visit_(const LetStmtNode* op) override {
    in_stage_of(to_stmt(op), [&] { visit(op->value); });
    visit(op->body);
  }
  void visit_(const IfThenElseNode* op) override {
    in_stage_of(to_stmt(op), [&] { visit(op->condition); });
    visit(op->then_case);
    if (op->else_case.defined()) visit(op->else_case);
  }
  void visit_(const EvaluateNode* op) override {
    in_stage_of(to_stmt(op), [&] { visit(op->value); });
  }

 private:
  VectorReportEntry access(const Var& buffer, int lanes, const Expr& index, const Expr& predicate) const {
    VectorReportEntry r;
    r.stage = stage_;
    r.buffer = buffer.name();
    r.lanes = lanes;
    r.stride = constant_ramp_stride(index);
    r.predicated = predicate.defined();
    r.index = te::to_string(index);
    return r;
  }

  template <typename F>
  void in_stage_of(const Stmt& s, F&& f) {
    std::set<std::string> stored;
    post_order_visit(s, [&](const Stmt& x) {
      if (const auto* st = x.as<StoreNode>()) stored.insert(st->buffer_var.name());
    });
    const std::string outer = stage_;
    if (stored.size() == 1) stage_ = *stored.begin();
    else if (stored.size() > 1) stage_ = func_;
    f();
    stage_ = outer;
  }

  void add(VectorReportEntry r) {
    if (r.kind == VectorReportEntry::Kind::kScalarized) r.stage = stage_;
    auto key = std::make_tuple(r.kind, r.stage, r.buffer, r.is_store, r.lanes, r.predicated, r.index);
    if (auto it = seen_.find(key); it != seen_.end()) {
      ++entries[it->second].count;
      return;
    }
    seen_.emplace(std::move(key), entries.size());
    entries.push_back(std::move(r));
  }

  std::string stage_;
  std::string func_;
  Target target_;
  std::map<std::tuple<VectorReportEntry::Kind, std::string, std::string, bool, int, bool, std::string>, size_t> seen_;
};

}  // namespace

const char* to_string(VectorReportEntry::Kind k) {
  switch (k) {
    case VectorReportEntry::Kind::kGather: return "gather";
    case VectorReportEntry::Kind::kScatter: return "scatter";
    case VectorReportEntry::Kind::kStrided: return "strided";
    case VectorReportEntry::Kind::kPredicated: return "predicated";
    case VectorReportEntry::Kind::kScalarized: return "scalarized";
  }
  return "?";
}

std::vector<VectorReportEntry> VectorizationReport::find(std::optional<VectorReportEntry::Kind> kind,
                                                         const std::string& buffer, const std::string& stage) const {
  std::vector<VectorReportEntry> out;
  for (const VectorReportEntry& e : entries) {
    if (kind && e.kind != *kind) continue;
    if (!buffer.empty() && e.buffer != buffer) continue;
    if (!stage.empty() && e.stage != stage) continue;
    out.push_back(e);
  }
  return out;
}

std::string VectorizationReport::to_string() const {
  std::ostringstream os;
  os << fmt::format("vectorization report of '{}': {} vector load(s)/store(s), ", func, vector_accesses);
  if (entries.empty()) {
    os << "all dense; no vector operation computed lane by lane\n";
    return os.str();
  }
  std::map<VectorReportEntry::Kind, int> per_kind;
  for (const VectorReportEntry& e : entries) per_kind[e.kind] += e.count;
  std::string kinds;
  for (const auto& [k, n] : per_kind) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, lowering::to_string(k));
  os << kinds << "\n";
  const std::vector<std::string> head = {"stage", "buffer", "kind", "access", "lanes", "count", "how", "index / expression"};
  std::vector<std::vector<std::string>> rows;
  for (const VectorReportEntry& e : entries) {
    const bool op = e.kind == VectorReportEntry::Kind::kScalarized;
    rows.push_back({e.stage, op ? "-" : e.buffer, lowering::to_string(e.kind), op ? "op" : e.is_store ? "store" : "load",
                    std::to_string(e.lanes), std::to_string(e.count), e.note, e.index});
  }
  std::vector<size_t> width(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t c = 0; c < r.size(); ++c) s += c + 1 < r.size() ? fmt::format("{:<{}}  ", r[c], width[c]) : r[c];
    os << "  " << s << "\n";
  };
  line(head);
  for (const auto& r : rows) line(r);
  return os.str();
}

VectorizationReport vectorization_report(const LoweredFunc& f, const Target& target) {
  LOOM_CHECK(f.device_funcs.empty(),
             "vectorization report of '{}': it describes the LLVM CPU code generator; this function has GPU kernels",
             f.name);
  VectorReporter v(f.name, target);
  v.visit(f.body);
  VectorizationReport r;
  r.func = f.name;
  r.entries = std::move(v.entries);
  r.vector_accesses = v.vector_accesses;
  return r;
}

}  // namespace loom::lowering
