// Schedule traces: what each primitive records, the JSON form, and replays on a fresh schedule
// of a rebuilt computation (same loop IR, same results as te::evaluate).
#include <gtest/gtest.h>

#include <set>

#include "common/test_util.h"
#include "loom/schedule/trace.h"

namespace loom::schedule {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

/// A computation rebuilt on each call (fresh operations and variables, as another process
/// would make them): C = A·B, D = relu(C + bias).
struct MatmulRelu {
  Tensor A, B, bias, C, D;
  explicit MatmulRelu(int64_t m = 30, int64_t n = 20, int64_t kk = 12, const char* k_name = "k") {
    A = te::placeholder({m, kk}, DataType::Float(32), "A");
    B = te::placeholder({kk, n}, DataType::Float(32), "B");
    bias = te::placeholder({n}, DataType::Float(32), "bias");
    IterVar k = te::reduce_axis({0, kk}, k_name);
    C = te::compute({m, n}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
    D = te::compute({m, n}, [&](Var i, Var j) { return te::max(C(i, j) + bias(j), 0.0f); }, "D");
  }
  std::vector<Tensor> args() const { return {A, B, bias, D}; }
};

std::string lowered(const Schedule& s, const std::vector<Tensor>& args) { return lowering::to_string(lower(s, args, "f")); }

/// Tiles C in D's tile through a cache, the steps an auto-scheduler makes.
Schedule tiled(const MatmulRelu& w) {
  Schedule s = create_schedule({w.D});
  Tensor CL = s.cache_write(w.C, "local");
  s[w.C].compute_inline();
  Stage d = s[w.D], c = s[CL];
  auto [io, ii] = d.split(d.axis(0), 8);
  auto [jo, ji] = d.split(d.axis(1), 8);
  d.reorder({io, jo, ii, ji});
  IterVar f = d.fuse(io, jo);
  d.parallel(f);
  d.vectorize(ji);
  c.compute_at(d, f);
  auto [ko, ki] = c.split(c.reduce_axis(0), 4);
  c.reorder({ko, c.axis(0), ki, c.axis(1)});
  c.unroll(ki);
  c.vectorize(c.axis(1));
  c.pragma(ko, "auto_unroll_max_step", 16);
  return s;
}

TEST(Trace, RecordsEachPrimitiveWithPositions) {
  MatmulRelu w;
  Schedule s = create_schedule({w.D});
  Stage d = s[w.D];
  auto [io, ii] = d.split(d.axis(0), 8);
  d.fuse(io, ii);
  const auto& t = trace(s);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].kind, StepKind::kSplit);
  EXPECT_EQ(t[0].stage, (StepRef{4, "D"}));  // A, B, C, bias, D: inputs first, in first-use order
  EXPECT_EQ(t[0].axes, (std::vector<StepRef>{{0, "i"}}));
  EXPECT_EQ(t[0].ints.at("factor"), 8);
  EXPECT_EQ(t[1].kind, StepKind::kFuse);
  EXPECT_EQ(t[1].axes, (std::vector<StepRef>{{2, "i.outer"}, {3, "i.inner"}}));
  EXPECT_EQ(to_string(t[0]), "D@4.split(i@0, factor=8)");
}

TEST(Trace, FailedPrimitiveRecordsNothing) {
  MatmulRelu w;
  Schedule s = create_schedule({w.D});
  EXPECT_THROW(s[w.D].split(s[w.C].axis(0), 4), Error);
  EXPECT_THROW(s[w.D].compute_inline(), Error);
  EXPECT_TRUE(trace(s).empty());
}

TEST(Trace, CopyKeepsTheTraceAndRecordsOnItsOwn) {
  MatmulRelu w;
  Schedule s = create_schedule({w.D});
  s[w.C].compute_at(s[w.D], s[w.D].axis(0));
  Schedule c = s.copy();
  c[w.D].vectorize(c[w.D].axis(1));
  EXPECT_EQ(trace(s).size(), 1u);
  EXPECT_EQ(trace(c).size(), 2u);
}

TEST(Trace, ReplayOnRebuiltComputationGivesSameLoopIR) {
  MatmulRelu w1;
  Schedule s1 = tiled(w1);
  const std::string json = steps_to_json(trace(s1));
  // Another build of the computation (other variable objects, a reduce axis named otherwise).
  MatmulRelu w2(30, 20, 12, "r");
  Schedule s2 = create_schedule({w2.D});
  apply_steps(s2, steps_from_json(json));
  ASSERT_EQ(trace(s2).size(), trace(s1).size());
  for (size_t i = 0; i < trace(s1).size(); ++i)  // the same positions; names as each build has them
    for (size_t a = 0; a < trace(s1)[i].axes.size(); ++a)
      EXPECT_EQ(trace(s2)[i].axes[a].index, trace(s1)[i].axes[a].index);
  MatmulRelu w3;
  Schedule s3 = create_schedule({w3.D});
  apply_steps(s3, steps_from_json(json));
  EXPECT_EQ(steps_to_json(trace(s3)), json);
  EXPECT_EQ(lowered(s3, w3.args()), lowered(s1, w1.args()));
  EXPECT_MATCHES_REFERENCE(s2, w2.args());
}

TEST(Trace, ReplaysOnShapesThatDoNotDivide) {
  for (auto [m, n, k] : {std::tuple{32, 16, 8}, std::tuple{29, 13, 7}}) {
    MatmulRelu w1(m, n, k);
    Schedule s1 = tiled(w1);
    MatmulRelu w2(m, n, k);
    Schedule s2 = create_schedule({w2.D});
    apply_steps(s2, steps_from_json(steps_to_json(trace(s1))));
    EXPECT_EQ(lowered(s2, w2.args()), lowered(s1, w1.args()));
    EXPECT_MATCHES_REFERENCE(s2, w2.args()) << m << "x" << n << "x" << k;
  }
}

TEST(Trace, RfactorCacheReadAndStorageSteps) {
  auto build = [] {
    Tensor X = te::placeholder({6, 40}, DataType::Float(32), "X");
    IterVar k = te::reduce_axis({0, 40}, "k");
    Tensor S = te::compute({6}, [&](Var i) { return te::sum(X(i, k), {k}); }, "S");
    Tensor Y = te::compute({6, 40}, [&](Var i, Var j) { return X(i, j) / S(i); }, "Y");
    return std::vector<Tensor>{X, S, Y};
  };
  auto schedule = [](const std::vector<Tensor>& t) {
    Schedule s = create_schedule({t[2]});
    Stage st = s[t[1]];
    auto [ko, ki] = st.split(st.reduce_axis(0), 8);
    Tensor rf = s.rfactor(t[1], ki, 1);
    s[rf].vectorize(s[rf].axis(1));
    Tensor xc = s.cache_read(t[0], "global", {t[2]});
    s[xc].compute_at(s[t[2]], s[t[2]].axis(0));
    s[t[1]].compute_at(s[t[2]], s[t[2]].axis(0));
    s[rf].compute_at(s[t[2]], s[t[2]].axis(0));
    s[xc].storage_align(s[xc].axis(0), 16, 1);
    s[xc].double_buffer();
    return s;
  };
  auto t1 = build();
  Schedule s1 = schedule(t1);
  std::vector<Step> steps = steps_from_json(steps_to_json(trace(s1)));
  EXPECT_EQ(steps, trace(s1));
  auto t2 = build();
  Schedule s2 = create_schedule({t2[2]});
  apply_steps(s2, steps);
  EXPECT_EQ(lowered(s2, {t2[0], t2[2]}), lowered(s1, {t1[0], t1[2]}));
  EXPECT_MATCHES_REFERENCE(s2, (std::vector<Tensor>{t2[0], t2[2]}));
}

TEST(Trace, StorageOrderAndComputePaddedSteps) {
  auto build = [] {
    Tensor X = te::placeholder({13, 10}, DataType::Float(32), "X");
    Tensor Y = te::compute({13, 10}, [&](Var i, Var j) { return X(i, j) * 2.0f; }, "Y");
    return std::vector<Tensor>{X, Y};
  };
  auto schedule = [](const std::vector<Tensor>& t) {
    Schedule s = create_schedule({t[1]});
    Tensor xc = s.cache_read(t[0], "global", {t[1]});
    auto [io, ii] = s[t[1]].split(s[t[1]].axis(0), 4);
    s[xc].compute_at(s[t[1]], io);
    s[xc].storage_order({s[xc].axis(1), s[xc].axis(0)});
    s[xc].compute_padded(te::make_const(DataType::Float(32), 0.25));
    return s;
  };
  auto t1 = build();
  Schedule s1 = schedule(t1);
  ASSERT_GE(trace(s1).size(), 2u);
  EXPECT_EQ(trace(s1)[trace(s1).size() - 2].kind, StepKind::kStorageOrder);
  EXPECT_EQ(trace(s1).back().kind, StepKind::kComputePadded);
  EXPECT_EQ(trace(s1).back().strs.at("value"), "0.25");
  const std::string json = steps_to_json(trace(s1));
  auto t2 = build();
  Schedule s2 = create_schedule({t2[1]});
  apply_steps(s2, steps_from_json(json));
  EXPECT_EQ(steps_to_json(trace(s2)), json);
  EXPECT_EQ(lowered(s2, t2), lowered(s1, t1));
  EXPECT_MATCHES_REFERENCE(s2, t2);
}

TEST(Trace, BindStepsShareThreadAxesByIdentity) {
  auto build = [] {
    Tensor X = te::placeholder({64, 64}, DataType::Float(32), "X");
    return std::vector<Tensor>{X, te::compute({64, 64}, [&](Var i, Var j) { return X(i, j) * 2.0f; }, "Y")};
  };
  auto t1 = build();
  Schedule s1 = create_schedule({t1[1]});
  Stage y = s1[t1[1]];
  IterVar tx = te::thread_axis("threadIdx.x"), v0 = te::thread_axis("vthread"), v1 = te::thread_axis("vthread");
  auto [io, ii] = y.split(y.axis(0), 2);
  auto [jo, ji] = y.split(y.axis(1), 2);
  y.bind(io, v0);
  y.bind(jo, v1);
  y.bind(ji, tx);
  auto t2 = build();
  Schedule s2 = create_schedule({t2[1]});
  apply_steps(s2, steps_from_json(steps_to_json(trace(s1))));
  EXPECT_EQ(steps_to_json(trace(s2)), steps_to_json(trace(s1)));
  const auto& attrs = s2[t2[1]]->iter_var_attrs;
  std::set<const te::IterVarNode*> threads;
  for (const auto& [iv, a] : attrs) threads.insert(a.bind_thread.get());
  EXPECT_EQ(threads.size(), 3u);  // two vthreads stay distinct
}

TEST(Trace, BadStepsAreClearErrors) {
  MatmulRelu w;
  auto apply = [&](const std::string& json) {
    Schedule s = create_schedule({w.D});
    apply_steps(s, steps_from_json(json));
  };
  auto message = [&](const std::string& json) -> std::string {
    try {
      apply(json);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(R"([{"p":"split","stage":"D@9","axes":["i@0"],"factor":4}])").find("out of range"),
            std::string::npos);
  EXPECT_NE(message(R"([{"p":"split","stage":"X@4","axes":["i@0"],"factor":4}])").find("is 'D', not 'X'"),
            std::string::npos);
  EXPECT_NE(message(R"([{"p":"split","stage":"D@4","axes":["i@7"],"factor":4}])").find("iteration variable"),
            std::string::npos);
  EXPECT_NE(message(R"([{"p":"split","stage":"D@4","axes":["i@0"]}])").find("'factor' is missing"),
            std::string::npos);
  EXPECT_NE(message(R"([{"p":"spilt","stage":"D@4"}])").find("unknown schedule step 'spilt'"), std::string::npos);
  EXPECT_NE(message(R"({"p":"split"})").find("expected a JSON array"), std::string::npos);
  EXPECT_NE(message(R"([{"p":"fuse","stage":"D@4","axes":["i@0","j@1"]},)").find("malformed JSON"),
            std::string::npos);
  // The primitive's own check, with the step named.
  std::string m = message(R"([{"p":"compute_inline","stage":"D@4"}])");
  EXPECT_NE(m.find("schedule step 0 (D@4.compute_inline())"), std::string::npos) << m;
  EXPECT_NE(m.find("cannot compute_inline an output"), std::string::npos) << m;
}

TEST(Trace, SymbolicArgumentsAreNotReplayable) {
  MatmulRelu w;
  Schedule s = create_schedule({w.D});
  Var n("n");
  s[w.D].split(s[w.D].axis(0), n);
  ASSERT_EQ(trace(s).size(), 1u);
  EXPECT_FALSE(trace(s)[0].not_replayable.empty());
  EXPECT_THROW(steps_to_json(trace(s)), Error);
}

}  // namespace
}  // namespace loom::schedule
