// Loop-nest features of a lowered function (see features.h for the layout).
#include "loom/tuner/features.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "loom/lower/ir_visitor.h"

namespace loom::tuner {
namespace {

using namespace loom::lowering;  // NOLINT
namespace fl = features;

enum OpKind { kAdd, kMul, kDiv, kCmp, kMath };
using OpCounts = std::array<double, fl::kOpKinds>;

struct Loop {
  const te::VarNode* var;
  double extent;
  ForKind kind;
};

struct Access {
  const te::VarNode* buffer;
  int lanes;  // elements touched per execution
  int bytes;  // bytes of one element
  /// Stride of the index w.r.t. each enclosing loop (same order as the store's stack);
  /// nullopt where the index is not affine in that loop's variable.
  std::vector<std::optional<int64_t>> strides;
  std::optional<int64_t> lane_stride;  // stride across vector lanes (Ramp), 0 for scalars
};

struct StoreInfo {
  std::vector<int> stack;  // indices into loops, outermost first
  int lanes;
  OpCounts ops{};  // scalar operations of one execution
  std::vector<Access> accesses;
};

double log1p2(double x) { return std::log2(1.0 + std::max(0.0, x)); }

/// Walks a lowered body, recording loops, stores with their loads and operation counts.
class Collector : public IRVisitor {
 public:
  std::vector<Loop> loops;
  std::vector<StoreInfo> stores;
  std::map<const te::VarNode*, std::string> buffer_names;
  double alloc_bytes = 0;

 protected:
  using IRVisitor::visit_;

  void visit_(const ForNode* op) override {
    auto ext = te::as_const_int(op->extent);
    push_loop(op->loop_var.get(), ext ? double(*ext) : 1.0, op->for_kind);
    visit(op->body);
    stack_.pop_back();
  }

  void visit_(const AttrStmtNode* op) override {
    if (op->key == attr::kThreadExtent && op->iter_var.defined()) {
      auto ext = te::as_const_int(op->value);
      push_loop(op->iter_var.var().get(), ext ? double(*ext) : 1.0, ForKind::kThreadBinding);
      visit(op->body);
      stack_.pop_back();
      return;
    }
    IRVisitor::visit_(op);
  }

  void visit_(const LetStmtNode* op) override {
    lets_[op->var.get()] = op->value;
    IRVisitor::visit_(op);
  }

  void visit_(const AllocateNode* op) override {
    double n = 1;
    for (const Expr& e : op->extents) {
      auto c = te::as_const_int(e);
      n *= c ? double(*c) : 1.0;
    }
    alloc_bytes += n * op->dtype.bytes() * op->dtype.lanes();
    IRVisitor::visit_(op);
  }

  void visit_(const StoreNode* op) override {
    StoreInfo s;
    s.stack = stack_;
    s.lanes = op->value.dtype().lanes();
    current_ = &s;
    add_access(op->buffer_var.get(), op->index, op->value.dtype().bytes());
    visit(op->value);
    current_ = nullptr;
    stores.push_back(std::move(s));
  }

  // Expressions inside a store's value: count operations, record loads.
  void visit_(const te::LoadNode* op) override {
    if (current_) add_access(op->buffer_var.get(), op->index, op->dtype.bytes());
  }
  void visit_(const te::AddNode* op) override { count(kAdd, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::SubNode* op) override { count(kAdd, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::MulNode* op) override { count(kMul, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::DivNode* op) override { count(kDiv, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::ModNode* op) override { count(kDiv, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::FloorDivNode* op) override { count(kDiv, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::FloorModNode* op) override { count(kDiv, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::MinNode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::MaxNode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::EQNode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::NENode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::LTNode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::LENode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::GTNode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::GENode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::SelectNode* op) override { count(kCmp, op); te::ExprVisitor::visit_(op); }
  void visit_(const te::CallNode* op) override {
    if (op->name != "likely") count(kMath, op);
    te::ExprVisitor::visit_(op);
  }

 private:
  void push_loop(const te::VarNode* v, double extent, ForKind kind) {
    stack_.push_back(int(loops.size()));
    loops.push_back(Loop{v, std::max(extent, 1.0), kind});
  }

  void count(OpKind k, const te::ExprNode* op) {
    if (current_) current_->ops[k] += op->dtype.lanes();
  }

  bool uses(const Expr& e, const te::VarNode* v, int depth = 0) {
    if (depth > 16) return true;
    bool found = false;
    te::post_order_visit(e, [&](const Expr& x) {
      if (found) return;
      if (const auto* var = x.as<te::VarNode>()) {
        if (var == v) found = true;
        else if (auto it = lets_.find(var); it != lets_.end()) found = uses(it->second, v, depth + 1);
      }
    });
    return found;
  }

  /// d(e)/d(v) when e is affine in v with a constant coefficient.
  std::optional<int64_t> coef(const Expr& e, const te::VarNode* v, int depth = 0) {
    if (depth > 16) return std::nullopt;
    switch (e.kind()) {
      case te::ExprKind::IntImm:
      case te::ExprKind::FloatImm: return 0;
      case te::ExprKind::Var: {
        const auto* var = e.as<te::VarNode>();
        if (var == v) return 1;
        if (auto it = lets_.find(var); it != lets_.end()) return coef(it->second, v, depth + 1);
        return 0;
      }
      case te::ExprKind::Add:
      case te::ExprKind::Sub: {
        const Expr& a = e.kind() == te::ExprKind::Add ? e.as<te::AddNode>()->a : e.as<te::SubNode>()->a;
        const Expr& b = e.kind() == te::ExprKind::Add ? e.as<te::AddNode>()->b : e.as<te::SubNode>()->b;
        auto ca = coef(a, v, depth + 1), cb = coef(b, v, depth + 1);
        if (!ca || !cb) return std::nullopt;
        return e.kind() == te::ExprKind::Add ? *ca + *cb : *ca - *cb;
      }
      case te::ExprKind::Mul: {
        const auto* m = e.as<te::MulNode>();
        if (auto c = te::as_const_int(m->b)) {
          auto ca = coef(m->a, v, depth + 1);
          return ca ? std::optional<int64_t>(*ca * *c) : std::nullopt;
        }
        if (auto c = te::as_const_int(m->a)) {
          auto cb = coef(m->b, v, depth + 1);
          return cb ? std::optional<int64_t>(*cb * *c) : std::nullopt;
        }
        break;
      }
      case te::ExprKind::Ramp: return coef(e.as<te::RampNode>()->base, v, depth + 1);
      case te::ExprKind::Broadcast: return coef(e.as<te::BroadcastNode>()->value, v, depth + 1);
      case te::ExprKind::Cast: return coef(e.as<te::CastNode>()->value, v, depth + 1);
      default: break;
    }
    return uses(e, v) ? std::nullopt : std::optional<int64_t>(0);
  }

  void add_access(const te::VarNode* buf, const Expr& index, int bytes) {
    Access a;
    a.buffer = buf;
    a.lanes = index.dtype().lanes();
    a.bytes = bytes;
    for (int l : current_->stack) a.strides.push_back(coef(index, loops[size_t(l)].var));
    if (const auto* r = index.as<te::RampNode>()) a.lane_stride = te::as_const_int(r->stride);
    else a.lane_stride = 0;
    buffer_names.emplace(buf, buf->name);
    current_->accesses.push_back(std::move(a));
    // Loads inside the index (indirect accesses) are accesses too; their operations are
    // address arithmetic and not counted.
    StoreInfo* s = current_;
    te::post_order_visit(index, [&](const Expr& x) {
      if (const auto* ld = x.as<te::LoadNode>()) {
        current_ = nullptr;
        Access inner{ld->buffer_var.get(), ld->dtype.lanes(), ld->dtype.bytes(), {}, 0};
        inner.strides.assign(s->stack.size(), std::nullopt);
        buffer_names.emplace(inner.buffer, inner.buffer->name);
        s->accesses.push_back(std::move(inner));
        current_ = s;
      }
    });
  }

  std::vector<int> stack_;
  std::unordered_map<const te::VarNode*, Expr> lets_;
  StoreInfo* current_ = nullptr;
};

/// One level of the chosen nest: a loop, or the vector lanes of the hottest store.
struct Level {
  int loop = -1;  // index into loops; -1 for the lanes level
  double extent;
  ForKind kind;
};

void put_knob_features(const ConfigEntity& e, float* out) {
  int k = 0;
  auto put = [&](double v) {
    if (k < fl::kMaxKnobFeatures) out[k++] = float(v);
  };
  const auto& knobs = e.space()->knobs();
  for (size_t i = 0; i < knobs.size(); ++i) {
    const Knob& knob = knobs[i];
    const std::vector<int64_t>& value = knob.values[size_t(e.choices()[i])];
    if (knob.kind != KnobKind::kSplit) {
      for (int64_t v : value) put(v > 0 ? std::log2(double(v)) + 1.0 : 0.0);
      continue;
    }
    // The outer part's real extent instead of -1, then how much the split pads the extent
    // (0 when the parts divide it; tails are where odd shapes lose their speed).
    int64_t inner = 1;
    for (int64_t v : value) inner *= v > 0 ? v : 1;
    const int64_t outer = (knob.extent + inner - 1) / inner;
    for (int64_t v : value) put(std::log2(double(v > 0 ? v : outer)) + 1.0);
    put(double(outer * inner - knob.extent) / double(std::max<int64_t>(knob.extent, 1)));
  }
}

}  // namespace

std::vector<float> extract_features(const lowering::LoweredFunc& f, const ConfigEntity* e) {
  std::vector<float> out(size_t(fl::kLength), 0.0f);
  Collector c;
  if (f.body.defined()) c.visit(f.body);

  auto trips = [&](const StoreInfo& s, size_t from) {
    double t = 1;
    for (size_t p = from; p < s.stack.size(); ++p) t *= c.loops[size_t(s.stack[p])].extent;
    return t;
  };

  // Buffers ordered by total touches over the whole function.
  std::map<const te::VarNode*, double> total_touch;
  std::vector<const te::VarNode*> first_seen;
  for (const StoreInfo& s : c.stores) {
    for (const Access& a : s.accesses) {
      if (!total_touch.count(a.buffer)) first_seen.push_back(a.buffer);
      total_touch[a.buffer] += a.lanes * trips(s, 0);
    }
  }
  std::vector<const te::VarNode*> buffers = first_seen;
  std::stable_sort(buffers.begin(), buffers.end(), [&](const te::VarNode* x, const te::VarNode* y) {
    if (total_touch[x] != total_touch[y]) return total_touch[x] > total_touch[y];
    return x->name < y->name;
  });
  if (buffers.size() > size_t(fl::kMaxBuffers)) buffers.resize(size_t(fl::kMaxBuffers));

  // The hottest store: most executions (lanes included); the later one on ties.
  const StoreInfo* hot = nullptr;
  double hot_work = -1;
  for (const StoreInfo& s : c.stores) {
    double w = trips(s, 0) * s.lanes;
    if (w >= hot_work) hot = &s, hot_work = w;
  }

  if (hot) {
    std::vector<Level> chain;
    for (int l : hot->stack) chain.push_back(Level{l, c.loops[size_t(l)].extent, c.loops[size_t(l)].kind});
    if (hot->lanes > 1) chain.push_back(Level{-1, double(hot->lanes), ForKind::kVectorized});
    const size_t first = chain.size() > size_t(fl::kMaxLoops) ? chain.size() - size_t(fl::kMaxLoops) : 0;
    const size_t empty_slots = size_t(fl::kMaxLoops) - (chain.size() - first);  // right-aligned
    for (size_t p = first; p < chain.size(); ++p) {
      float* lv = out.data() + (empty_slots + p - first) * fl::kPerLoop;
      const Level& L = chain[p];
      double top = 1, bottom = 1;
      for (size_t q = 0; q <= p; ++q) top *= chain[q].extent;
      for (size_t q = p; q < chain.size(); ++q) bottom *= chain[q].extent;
      lv[fl::kExtent] = float(std::log2(L.extent));
      lv[fl::kDepth] = float(p - first);
      lv[fl::kTopDown] = float(std::log2(top));
      lv[fl::kBottomUp] = float(std::log2(bottom));
      lv[fl::kKind + int(L.kind)] = 1.0f;

      // Work per entry of this level, over every store inside it.
      OpCounts ops{};
      struct BufAcc {
        double touches = 0, best_touch = -1, footprint = 1, bytes = 0;
        std::optional<int64_t> stride = 0;
      };
      std::map<const te::VarNode*, BufAcc> acc;
      for (const StoreInfo& s : c.stores) {
        size_t pos;
        double weight;
        if (L.loop >= 0) {
          auto it = std::find(s.stack.begin(), s.stack.end(), L.loop);
          if (it == s.stack.end()) continue;
          pos = size_t(it - s.stack.begin());
          weight = trips(s, pos);
        } else {
          if (&s != hot) continue;
          pos = s.stack.size();
          weight = 1;
        }
        for (int k = 0; k < fl::kOpKinds; ++k) ops[size_t(k)] += s.ops[size_t(k)] * weight;
        for (const Access& a : s.accesses) {
          BufAcc& b = acc[a.buffer];
          double touches = a.lanes * weight;
          b.touches += touches;
          std::optional<int64_t> stride = L.loop >= 0 ? a.strides[pos] : a.lane_stride;
          double foot = (a.lane_stride && *a.lane_stride == 0) ? 1.0 : double(a.lanes);
          for (size_t q = pos; q < s.stack.size(); ++q) {
            const auto& st = a.strides[q];
            if (!st || *st != 0) foot *= c.loops[size_t(s.stack[q])].extent;
          }
          if (touches > b.best_touch) b.best_touch = touches, b.stride = stride;
          b.footprint = std::max(b.footprint, foot);
          b.bytes = std::max(b.bytes, foot * a.bytes);
        }
      }
      double working_set = 0;
      for (const auto& [buf, b] : acc) working_set += b.bytes;
      lv[fl::kWorkingSet] = float(log1p2(working_set));
      for (int k = 0; k < fl::kOpKinds; ++k) lv[fl::kOps + k] = float(log1p2(ops[size_t(k)]));
      for (size_t bi = 0; bi < buffers.size(); ++bi) {
        auto it = acc.find(buffers[bi]);
        if (it == acc.end()) continue;
        float* bv = lv + fl::kBuffers + bi * fl::kPerBuffer;
        const BufAcc& b = it->second;
        bv[0] = b.stride ? float(log1p2(double(std::llabs(*b.stride)))) : -1.0f;
        bv[1] = float(log1p2(b.touches));
        bv[2] = float(log1p2(b.touches / b.footprint));
        bv[3] = float(log1p2(b.bytes));
      }
    }
  }

  float* g = out.data() + fl::kGlobal;
  OpCounts total{};
  for (const StoreInfo& s : c.stores) {
    for (int k = 0; k < fl::kOpKinds; ++k) total[size_t(k)] += s.ops[size_t(k)] * trips(s, 0);
  }
  for (int k = 0; k < fl::kOpKinds; ++k) g[k] = float(log1p2(total[size_t(k)]));
  g[fl::kOpKinds] = float(log1p2(double(c.loops.size())));
  g[fl::kOpKinds + 1] = float(log1p2(double(c.stores.size())));
  g[fl::kOpKinds + 2] = float(log1p2(c.alloc_bytes));
  if (e) put_knob_features(*e, out.data() + fl::kKnobs);
  return out;
}

FeatureSet resolve_feature_set(FeatureSet set, int64_t space_size) {
  if (set != FeatureSet::kAuto) return set;
  return space_size <= kAutoKnobSpace ? FeatureSet::kKnob : FeatureSet::kItervarKnob;
}

FeatureSet parse_feature_set(const std::string& name) {
  if (name == "auto") return FeatureSet::kAuto;
  if (name == "itervar+knob") return FeatureSet::kItervarKnob;
  if (name == "itervar") return FeatureSet::kItervar;
  if (name == "knob") return FeatureSet::kKnob;
  fail("unknown feature set '{}' (expected auto, itervar+knob, itervar or knob)", name);
}

std::string to_string(FeatureSet set) {
  switch (set) {
    case FeatureSet::kAuto: return "auto";
    case FeatureSet::kItervarKnob: return "itervar+knob";
    case FeatureSet::kItervar: return "itervar";
    case FeatureSet::kKnob: return "knob";
  }
  return "?";
}

std::vector<float> knob_features(const ConfigEntity& e) {
  std::vector<float> out(size_t(fl::kMaxKnobFeatures), 0.0f);
  put_knob_features(e, out.data());
  return out;
}

std::vector<float> extract_features(const Task& task, const ConfigEntity& config, FeatureSet set) {
  set = resolve_feature_set(set, task.space().size());
  // Configs that schedule alike have the same features (the auto space's unread knobs).
  const ConfigEntity e = task.space().get(task.canonical(config.index()));
  if (set == FeatureSet::kKnob) return knob_features(e);
  Instance inst = task.instantiate(e);
  lowering::LowerOptions opts;
  opts.target = task.target();
  opts.skip_packed_api = true;
  lowering::LoweredFunc f = lowering::lower(inst.schedule, inst.args, "features", opts);
  return extract_features(f, set == FeatureSet::kItervarKnob ? &e : nullptr);
}

}  // namespace loom::tuner
