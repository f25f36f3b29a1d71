// Schedule traces: printing, the JSON form, and replaying steps on a schedule.
#include "loom/schedule/trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <nlohmann/json.hpp>

namespace loom::schedule {

using nlohmann::json;

namespace {

constexpr const char* kKindNames[] = {
    "split",        "split_nparts", "fuse",           "reorder",      "unroll",       "vectorize",
    "parallel",     "bind",         "pragma",         "tensorize",    "compute_at",   "compute_inline",
    "compute_root", "storage_align", "set_scope",     "double_buffer", "cache_read",  "cache_write",
    "rfactor",      "extern_param", "storage_order", "compute_padded",
};
constexpr int kNumKinds = sizeof(kKindNames) / sizeof(kKindNames[0]);
static_assert(kNumKinds == int(StepKind::kComputePadded) + 1);

/// What each kind needs: how many axes (-1: one or more), whether it names a parent stage or
/// readers, and its integer and string arguments (optional ones end in '?').
struct KindSchema {
  int axes;
  bool at, readers;
  std::vector<std::string> ints, strs;
};

const KindSchema& schema_of(StepKind k) {
  static const std::vector<KindSchema> schemas = {
      {1, false, false, {"factor"}, {}},                   // split
      {1, false, false, {"nparts"}, {}},                   // split_nparts
      {-1, false, false, {}, {}},                          // fuse
      {-1, false, false, {}, {}},                          // reorder
      {1, false, false, {}, {}},                           // unroll
      {1, false, false, {}, {}},                           // vectorize
      {1, false, false, {}, {}},                           // parallel
      {1, false, false, {"thread_id", "extent?"}, {"thread"}},  // bind
      {1, false, false, {"value"}, {"key"}},               // pragma
      {1, false, false, {}, {"intrin"}},                   // tensorize
      {1, true, false, {}, {}},                            // compute_at
      {0, false, false, {}, {}},                           // compute_inline
      {0, false, false, {}, {}},                           // compute_root
      {1, false, false, {"factor", "offset"}, {}},         // storage_align
      {0, false, false, {}, {"scope"}},                    // set_scope
      {0, false, false, {}, {}},                           // double_buffer
      {0, false, true, {"output"}, {"scope"}},             // cache_read
      {0, false, false, {"output"}, {"scope"}},            // cache_write
      {1, false, false, {"output", "factor_axis"}, {}},    // rfactor
      {0, false, false, {"value"}, {"key"}},               // extern_param
      {-1, false, false, {}, {}},                          // storage_order
      {0, false, false, {}, {"value", "dtype"}},           // compute_padded
  };
  return schemas[size_t(k)];
}

std::string bare(const std::string& key) { return key.back() == '?' ? key.substr(0, key.size() - 1) : key; }

}  // namespace

const char* to_string(StepKind k) {
  int i = int(k);
  return i >= 0 && i < kNumKinds ? kKindNames[i] : "?";
}

StepKind step_kind_from_string(const std::string& s) {
  for (int i = 0; i < kNumKinds; ++i)
    if (s == kKindNames[i]) return StepKind(i);
  fail("unknown schedule step '{}' (known: {})", s, fmt::join(kKindNames, ", "));
}

std::string StepRef::str() const { return fmt::format("{}@{}", name, index); }

StepRef StepRef::parse(const std::string& s, const std::string& what) {
  size_t at = s.rfind('@');
  LOOM_CHECK(at != std::string::npos && at + 1 < s.size(), "{}: '{}' is not a reference NAME@POSITION", what, s);
  StepRef r;
  r.name = s.substr(0, at);
  const std::string pos = s.substr(at + 1);
  LOOM_CHECK(pos.find_first_not_of("0123456789") == std::string::npos && pos.size() <= 9,
             "{}: '{}' is not a reference NAME@POSITION (the position must be a non-negative integer)", what, s);
  r.index = std::stoi(pos);
  return r;
}

const std::vector<Step>& trace(const Schedule& s) {
  LOOM_CHECK(s.defined(), "trace: the schedule is undefined");
  return s->trace;
}

// ---------------------------------------------------------------- text

std::string to_string(const Step& step) {
  std::vector<std::string> args;
  if (step.kind == StepKind::kComputeAt) {
    args.push_back(step.at.str());
  }
  for (const StepRef& a : step.axes) args.push_back(a.str());
  if (!step.readers.empty()) {
    std::vector<std::string> r;
    for (const StepRef& x : step.readers) r.push_back(x.str());
    args.push_back(fmt::format("readers=[{}]", fmt::join(r, ", ")));
  }
  for (const auto& [k, v] : step.ints) args.push_back(fmt::format("{}={}", k, v));
  for (const auto& [k, v] : step.strs) args.push_back(fmt::format("{}=\"{}\"", k, v));
  std::string out = fmt::format("{}.{}({})", step.stage.str(), to_string(step.kind), fmt::join(args, ", "));
  if (!step.not_replayable.empty()) out += "  // not replayable: " + step.not_replayable;
  return out;
}

std::string to_string(const std::vector<Step>& steps) {
  std::string out;
  for (const Step& s : steps) out += to_string(s) + "\n";
  return out;
}

// ---------------------------------------------------------------- JSON

std::string steps_to_json(const std::vector<Step>& steps) {
  json arr = json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    LOOM_CHECK(s.not_replayable.empty(), "schedule step {} ({}) cannot be serialized: {}", i, to_string(s),
               s.not_replayable);
    json j = json::object();
    j["p"] = to_string(s.kind);
    j["stage"] = s.stage.str();
    if (s.kind == StepKind::kComputeAt) j["at"] = s.at.str();
    if (!s.axes.empty()) {
      json a = json::array();
      for (const StepRef& r : s.axes) a.push_back(r.str());
      j["axes"] = a;
    }
    if (!s.readers.empty()) {
      json a = json::array();
      for (const StepRef& r : s.readers) a.push_back(r.str());
      j["readers"] = a;
    }
    for (const auto& [k, v] : s.ints) j[k] = v;
    for (const auto& [k, v] : s.strs) j[k] = v;
    arr.push_back(std::move(j));
  }
  return arr.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<Step> steps_from_json(const std::string& text) {
  json arr;
  try {
    arr = json::parse(text);
  } catch (const json::exception& e) {
    fail("schedule steps: malformed JSON: {}", e.what());
  }
  LOOM_CHECK(arr.is_array(), "schedule steps: expected a JSON array, got a {}", arr.type_name());
  std::vector<Step> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& j = arr[i];
    const std::string where = fmt::format("schedule step {}", i);
    LOOM_CHECK(j.is_object(), "{}: expected an object, got a {}", where, j.type_name());
    auto str_field = [&](const char* key) -> std::string {
      auto it = j.find(key);
      LOOM_CHECK(it != j.end(), "{}: field '{}' is missing", where, key);
      LOOM_CHECK(it->is_string(), "{}: field '{}' is a {}, expected a string", where, key, it->type_name());
      return it->get<std::string>();
    };
    auto refs = [&](const char* key) {
      std::vector<StepRef> r;
      auto it = j.find(key);
      if (it == j.end()) return r;
      LOOM_CHECK(it->is_array(), "{}: field '{}' is a {}, expected an array", where, key, it->type_name());
      for (size_t k = 0; k < it->size(); ++k) {
        const json& e = (*it)[k];
        LOOM_CHECK(e.is_string(), "{}: field '{}[{}]' is a {}, expected a string", where, key, k, e.type_name());
        r.push_back(StepRef::parse(e.get<std::string>(), fmt::format("{} field '{}[{}]'", where, key, k)));
      }
      return r;
    };
    Step s;
    try {
      s.kind = step_kind_from_string(str_field("p"));
    } catch (const Error& e) {
      fail("{}: {}", where, e.what());
    }
    const KindSchema& sc = schema_of(s.kind);
    s.stage = StepRef::parse(str_field("stage"), where + " field 'stage'");
    if (sc.at) s.at = StepRef::parse(str_field("at"), where + " field 'at'");
    s.axes = refs("axes");
    s.readers = refs("readers");
    LOOM_CHECK(sc.axes < 0 ? !s.axes.empty() : int(s.axes.size()) == sc.axes, "{} ({}): has {} axes, expected {}",
               where, to_string(s.kind), s.axes.size(), sc.axes < 0 ? "at least one" : std::to_string(sc.axes));
    LOOM_CHECK(!sc.readers || !s.readers.empty(), "{} ({}): field 'readers' is missing or empty", where,
               to_string(s.kind));
    for (const std::string& key : sc.ints) {
      const std::string k = bare(key);
      auto it = j.find(k);
      if (it == j.end() && key.back() == '?') continue;
      LOOM_CHECK(it != j.end(), "{} ({}): field '{}' is missing", where, to_string(s.kind), k);
      LOOM_CHECK(it->is_number_integer(), "{} ({}): field '{}' is a {}, expected an integer", where,
                 to_string(s.kind), k, it->type_name());
      s.ints[k] = it->get<int64_t>();
    }
    for (const std::string& key : sc.strs) s.strs[key] = str_field(key.c_str());
    out.push_back(std::move(s));
  }
  return out;
}

// ---------------------------------------------------------------- replay

namespace {

class Replayer {
 public:
  explicit Replayer(Schedule& s) : s_(s) {}

  void apply(const Step& st) {
    LOOM_CHECK(st.not_replayable.empty(), "not replayable: {}", st.not_replayable);
    Stage stage = stage_at(st.stage);
    const KindSchema& sc = schema_of(st.kind);
    LOOM_CHECK(sc.axes < 0 ? !st.axes.empty() : int(st.axes.size()) == sc.axes, "has {} axes, expected {}",
               st.axes.size(), sc.axes < 0 ? "at least one" : std::to_string(sc.axes));
    auto axis = [&](size_t i) { return iter_var(stage, st.axes.at(i)); };
    auto axes = [&] {
      std::vector<IterVar> v;
      for (const StepRef& r : st.axes) v.push_back(iter_var(stage, r));
      return v;
    };
    switch (st.kind) {
      case StepKind::kSplit: stage.split(axis(0), te::Expr(num(st, "factor"))); return;
      case StepKind::kSplitNparts: stage.split_nparts(axis(0), te::Expr(num(st, "nparts"))); return;
      case StepKind::kFuse: stage.fuse(axes()); return;
      case StepKind::kReorder: stage.reorder(axes()); return;
      case StepKind::kUnroll: stage.unroll(axis(0)); return;
      case StepKind::kVectorize: stage.vectorize(axis(0)); return;
      case StepKind::kParallel: stage.parallel(axis(0)); return;
      case StepKind::kBind: stage.bind(axis(0), thread_axis(st)); return;
      case StepKind::kPragma: {
        const int64_t v = num(st, "value");
        const bool narrow = v >= INT32_MIN && v <= INT32_MAX;  // as Stage::pragma(iv, key, 16) makes it
        stage.pragma(axis(0), text(st, "key"), narrow ? te::Expr(int(v)) : te::Expr(v));
        return;
      }
      case StepKind::kTensorize:
        fail("tensorize with '{}' cannot be replayed: a step names the tensor intrinsic, not its definition",
             text(st, "intrin"));
      case StepKind::kComputeAt: {
        Stage parent = stage_at(st.at);
        stage.compute_at(parent, iter_var(parent, st.axes.at(0)));
        return;
      }
      case StepKind::kComputeInline: stage.compute_inline(); return;
      case StepKind::kComputeRoot: stage.compute_root(); return;
      case StepKind::kStorageAlign:
        stage.storage_align(axis(0), int(num(st, "factor")), int(num(st, "offset")));
        return;
      case StepKind::kSetScope: stage.set_scope(text(st, "scope")); return;
      case StepKind::kDoubleBuffer: stage.double_buffer(); return;
      case StepKind::kCacheRead: {
        std::vector<te::Operation> readers;
        for (const StepRef& r : st.readers) readers.push_back(stage_at(r)->op);
        s_.cache_read(output(stage, st), text(st, "scope"), readers);
        return;
      }
      case StepKind::kCacheWrite: s_.cache_write(output(stage, st), text(st, "scope")); return;
      case StepKind::kRfactor: s_.rfactor(output(stage, st), axis(0), int(num(st, "factor_axis"))); return;
      case StepKind::kExternParam: stage.extern_param(text(st, "key"), num(st, "value")); return;
      case StepKind::kStorageOrder: stage.storage_order(axes()); return;
      case StepKind::kComputePadded: {
        const DataType t = DataType::parse(text(st, "dtype"));
        const std::string v = text(st, "value");
        try {
          stage.compute_padded(t.is_float() ? te::make_const(t, std::stod(v)) : te::make_const(t, int64_t(std::stoll(v))));
        } catch (const std::logic_error&) {
          fail("compute_padded: the pad value '{}' is not a number", v);
        }
        return;
      }
    }
    LOOM_ICHECK(false);
  }

 private:
  Stage stage_at(const StepRef& r) const {
    const auto& stages = s_.stages();
    LOOM_CHECK(r.index >= 0 && size_t(r.index) < stages.size(),
               "stage {} is out of range: the schedule has {} stages", r.str(), stages.size());
    Stage st = stages[size_t(r.index)];
    LOOM_CHECK(st->name() == r.name, "stage {}: the schedule's stage {} is '{}', not '{}'", r.str(), r.index,
               st->name(), r.name);
    return st;
  }

  static IterVar iter_var(const Stage& st, const StepRef& r) {
    const auto& all = st->all_iter_vars;
    LOOM_CHECK(r.index >= 0 && size_t(r.index) < all.size(),
               "iteration variable {} of stage '{}' is out of range: the stage has {}", r.str(), st->name(),
               all.size());
    return all[size_t(r.index)];
  }

  static int64_t num(const Step& st, const std::string& key) {
    auto it = st.ints.find(key);
    LOOM_CHECK(it != st.ints.end(), "its argument '{}' is missing", key);
    return it->second;
  }

  static const std::string& text(const Step& st, const std::string& key) {
    auto it = st.strs.find(key);
    LOOM_CHECK(it != st.strs.end(), "its argument '{}' is missing", key);
    return it->second;
  }

  static te::Tensor output(const Stage& st, const Step& step) {
    const int64_t i = num(step, "output");
    LOOM_CHECK(i >= 0 && i < st->op->num_outputs(), "output {} of stage '{}' is out of range: it has {}", i,
               st->name(), st->op->num_outputs());
    return te::output(st->op, int(i));
  }

  /// One thread axis per "thread_id", shared by the steps that bind to it.
  IterVar thread_axis(const Step& st) {
    const int64_t id = num(st, "thread_id");
    auto it = threads_.find(id);
    if (it != threads_.end()) return it->second;
    const std::string& tag = text(st, "thread");
    auto e = st.ints.find("extent");
    IterVar iv = e == st.ints.end() ? te::thread_axis(tag) : te::thread_axis(tag, te::Range(0, te::Expr(e->second)));
    threads_.emplace(id, iv);
    return iv;
  }

  Schedule& s_;
  std::map<int64_t, IterVar> threads_;
};

}  // namespace

void apply_steps(Schedule& s, const std::vector<Step>& steps) {
  LOOM_CHECK(s.defined(), "apply_steps: the schedule is undefined");
  Replayer r(s);
  for (size_t i = 0; i < steps.size(); ++i) {
    try {
      r.apply(steps[i]);
    } catch (const Error& e) {
      fail("schedule step {} ({}): {}", i, to_string(steps[i]), e.what());
    }
  }
}

}  // namespace loom::schedule
