// Seeded random-schedule differential test: random legal combinations of primitives on
// every operator of te::ops, each compiled and compared with te::evaluate.
// LOOM_FUZZ_N sets the number of schedules (default 500), LOOM_FUZZ_SEED the first seed.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

#include "common/test_util.h"

namespace loom {
namespace {

using schedule::Stage;
using te::IterVar;
using te::Tensor;

int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : def;
}

/// Applies random primitives to a schedule and records what it did, for reproduction.
class RandomScheduler {
 public:
  explicit RandomScheduler(uint64_t seed) : rng_(seed) {}
  std::string log;

  void run(Schedule& s) {
    std::vector<Stage> stages = s.stages();
    // Consumers first, so that a producer can be attached to a consumer's final loops.
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      Stage st = *it;
      if (st->op->kind == te::OpKind::kPlaceholder) continue;
      if (!st->is_output && place(s, st)) continue;
      shape_loops(st);
    }
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  std::vector<Stage> consumers(const Schedule& s, const Stage& st) {
    std::vector<Stage> out;
    for (const Stage& c : s.stages()) {
      if (c->op->kind == te::OpKind::kPlaceholder || c == st) continue;
      for (const Tensor& t : c->op->input_tensors()) {
        if (t.op() == st->op) { out.push_back(c); break; }
      }
    }
    return out;
  }

  /// Inline or attach a non-output stage; returns true if it was inlined.
  bool place(Schedule& s, Stage& st) {
    bool is_reduce = !st->op->reduce_axis.empty();
    int choice = pick(3);
    if (choice == 0 && !is_reduce && st->op->num_outputs() == 1) {
      st.compute_inline();
      log += fmt::format("{}.compute_inline(); ", st->name());
      return true;
    }
    auto cons = consumers(s, st);
    if (choice == 1 && cons.size() == 1 && cons[0]->attach_type != schedule::AttachType::kInline) {
      const auto& leaves = cons[0]->leaf_iter_vars;
      IterVar at = leaves[pick(int(leaves.size()))];
      st.compute_at(cons[0], at);
      log += fmt::format("{}.compute_at({}, {}); ", st->name(), cons[0]->name(), at.name());
    }
    return false;
  }

  void shape_loops(Stage& st) {
    static const int kFactors[] = {1, 2, 3, 4, 8, 16};
    int nsplit = pick(4);
    for (int i = 0; i < nsplit; ++i) {
      const auto& leaves = st->leaf_iter_vars;
      IterVar iv = leaves[pick(int(leaves.size()))];
      int f = kFactors[pick(6)];
      if (coin(0.8)) {
        st.split(iv, f);
        log += fmt::format("{}.split({}, {}); ", st->name(), iv.name(), f);
      } else {
        st.split_nparts(iv, f);
        log += fmt::format("{}.split_nparts({}, {}); ", st->name(), iv.name(), f);
      }
    }
    if (coin(0.3)) {  // fuse two adjacent spatial leaves
      const auto& leaves = st->leaf_iter_vars;
      for (size_t i = 0; i + 1 < leaves.size(); ++i) {
        if (leaves[i]->type == te::IterVarType::kDataPar && leaves[i + 1]->type == te::IterVarType::kDataPar) {
          IterVar a = leaves[i], b = leaves[i + 1];
          st.fuse(a, b);
          log += fmt::format("{}.fuse({}, {}); ", st->name(), a.name(), b.name());
          break;
        }
      }
    }
    if (coin(0.6)) {
      std::vector<IterVar> order = st->leaf_iter_vars;
      std::shuffle(order.begin(), order.end(), rng_);
      st.reorder(order);
      std::string names;
      for (auto& v : order) names += v.name() + " ";
      log += fmt::format("{}.reorder({}); ", st->name(), names);
    }
    const auto& leaves = st->leaf_iter_vars;
    if (coin(0.5) && leaves.back()->type == te::IterVarType::kDataPar) {
      st.vectorize(leaves.back());
      log += fmt::format("{}.vectorize({}); ", st->name(), leaves.back().name());
    }
    if (coin(0.4) && leaves.front()->type == te::IterVarType::kDataPar && !st->iter_var_attrs.count(leaves.front().get())) {
      st.parallel(leaves.front());
      log += fmt::format("{}.parallel({}); ", st->name(), leaves.front().name());
    }
    if (coin(0.3) && leaves.size() >= 2) {
      IterVar u = leaves[leaves.size() - 2];
      if (!st->iter_var_attrs.count(u.get())) {
        st.unroll(u);
        log += fmt::format("{}.unroll({}); ", st->name(), u.name());
      }
    }
  }

  std::mt19937_64 rng_;
};

TEST(RandomSchedule, MatchesReferenceOnEveryOp) {
  int n = env_int("LOOM_FUZZ_N", 500);
  uint64_t seed0 = uint64_t(env_int("LOOM_FUZZ_SEED", 1));
  auto cases = te::ops::test_cases();
  ASSERT_FALSE(cases.empty());
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    const auto& c = cases[size_t(i) % cases.size()];
    uint64_t seed = seed0 + uint64_t(i);
    std::vector<Tensor> args = c.make();
    std::vector<te::Operation> outs;
    for (const Tensor& t : args) {
      if (t.op()->kind != te::OpKind::kPlaceholder) outs.push_back(t.op());
    }
    Schedule s = create_schedule(outs);
    RandomScheduler rs(seed);
    try {
      rs.run(s);
    } catch (const Error& e) {
      ADD_FAILURE() << c.name << " seed " << seed << ": a legal random schedule was rejected: " << e.what()
                    << "\n  schedule: " << rs.log;
      ++mismatches;
      continue;
    }
    std::string err = test::compare_with_reference(s, args, seed);
    if (!err.empty()) {
      ++mismatches;
      ADD_FAILURE() << c.name << " seed " << seed << "\n  schedule: " << rs.log << "\n  " << err;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << n << " random schedules";
  std::printf("random schedules: %d, mismatches: %d\n", n, mismatches);
}

}  // namespace
}  // namespace loom
