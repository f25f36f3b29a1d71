// Config spaces: knob enumeration, index round trips, records, and the config context.
#include <gtest/gtest.h>

#include <set>

#include "common/test_util.h"
#include "loom/tuner/space.h"

namespace loom::tuner {
namespace {

using V = std::vector<std::vector<int64_t>>;

TEST(SplitKnob, FactorsOfTwelveIntoThree) {
  SplitOptions o;
  o.num_outputs = 3;
  V want = {{-1, 1, 1}, {-1, 1, 2}, {-1, 1, 3}, {-1, 1, 4}, {-1, 1, 6}, {-1, 1, 12},
            {-1, 2, 1}, {-1, 2, 2}, {-1, 2, 3}, {-1, 2, 6}, {-1, 3, 1}, {-1, 3, 2},
            {-1, 3, 4}, {-1, 4, 1}, {-1, 4, 3}, {-1, 6, 1}, {-1, 6, 2}, {-1, 12, 1}};
  EXPECT_EQ(ConfigSpace::split_values(12, o), want);
}

TEST(SplitKnob, FactorsTwoPartsAndMaxFactor) {
  SplitOptions o;
  EXPECT_EQ(ConfigSpace::split_values(12, o), (V{{-1, 1}, {-1, 2}, {-1, 3}, {-1, 4}, {-1, 6}, {-1, 12}}));
  o.max_factor = 4;
  EXPECT_EQ(ConfigSpace::split_values(12, o), (V{{-1, 1}, {-1, 2}, {-1, 3}, {-1, 4}}));
  // A prime extent only splits trivially.
  EXPECT_EQ(ConfigSpace::split_values(13, SplitOptions{}), (V{{-1, 1}, {-1, 13}}));
  // max_factor bounds the innermost part only.
  o.num_outputs = 3;
  auto three = ConfigSpace::split_values(12, o);
  for (const auto& v : three) EXPECT_LE(v[2], 4);
  EXPECT_NE(std::find(three.begin(), three.end(), std::vector<int64_t>{-1, 12, 1}), three.end());
}

TEST(SplitKnob, PowerOfTwo) {
  SplitOptions o;
  o.policy = SplitOptions::kPowerOfTwo;
  // 13 rounds up to 16.
  EXPECT_EQ(ConfigSpace::split_values(13, o), (V{{-1, 1}, {-1, 2}, {-1, 4}, {-1, 8}, {-1, 16}}));
  o.max_factor = 4;
  EXPECT_EQ(ConfigSpace::split_values(13, o), (V{{-1, 1}, {-1, 2}, {-1, 4}}));
  o.num_outputs = 3;
  o.max_factor = 1 << 30;
  auto v = ConfigSpace::split_values(8, o);
  EXPECT_EQ(v.size(), 10u);  // pairs of powers of two with product <= 8
  for (const auto& f : v) EXPECT_LE(f[1] * f[2], 8);
}

TEST(SplitKnob, Candidates) {
  SplitOptions o;
  o.policy = SplitOptions::kCandidates;
  o.num_outputs = 3;
  o.candidates = {{-1, 2, 16}, {4, 8}, {7, 2, 16}, {1, 64}};
  o.max_factor = 32;
  // Full lists and inner-only lists normalize to [-1, …]; duplicates and too-large ones drop.
  EXPECT_EQ(ConfigSpace::split_values(100, o), (V{{-1, 2, 16}, {-1, 4, 8}}));
  o.candidates = {{1, 2, 3, 4}};
  EXPECT_THROW(ConfigSpace::split_values(100, o), Error);
  o.candidates = {{0, 3}};
  EXPECT_THROW(ConfigSpace::split_values(100, o), Error);
}

TEST(SplitKnob, BadArguments) {
  EXPECT_THROW(ConfigSpace::split_values(0, {}), Error);
  SplitOptions o;
  o.num_outputs = 1;
  EXPECT_THROW(ConfigSpace::split_values(8, o), Error);
}

ConfigSpace make_space() {
  ConfigSpace sp;
  SplitOptions three;
  three.num_outputs = 3;
  sp.define_split("tile_x", 12, three);                        // 18
  sp.define_reorder("order", {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}});  // 3
  sp.define_annotate("vec", {"none", "vec", "unroll", "parallel"});  // 4
  sp.define_choice("pad", {1, 0});                             // 2
  return sp;
}

TEST(ConfigSpace, SizeAndKnobs) {
  ConfigSpace sp = make_space();
  EXPECT_EQ(sp.size(), 18 * 3 * 4 * 2);
  EXPECT_EQ(sp.knob_index("order"), 1);
  EXPECT_EQ(sp.knob_index("nope"), -1);
  EXPECT_THROW(sp.knob("nope"), Error);
  EXPECT_EQ(sp.knob("tile_x").extent, 12);
  EXPECT_THROW(sp.define_choice("pad", {3}), Error);
  EXPECT_THROW(sp.define_reorder("bad", {{0, 0, 1}}), Error);
  EXPECT_THROW(sp.define_reorder("bad2", {{0, 1}, {0, 1, 2}}), Error);
  EXPECT_THROW(sp.define_annotate("bad3", {"sideways"}), Error);
  EXPECT_THROW(sp.define_choice("bad4", {}), Error);
  EXPECT_EQ(sp.size(), 18 * 3 * 4 * 2);  // failed definitions add nothing
}

TEST(ConfigSpace, IndexRoundTripEveryConfig) {
  ConfigSpace sp = make_space();
  std::set<std::vector<int>> seen;
  for (int64_t i = 0; i < sp.size(); ++i) {
    ConfigEntity e = sp.get(i);
    EXPECT_EQ(e.index(), i);
    EXPECT_EQ(sp.index_of(e.choices()), i);
    seen.insert(e.choices());
  }
  EXPECT_EQ(int64_t(seen.size()), sp.size());
  // The first knob varies fastest.
  EXPECT_EQ(sp.get(1).choices(), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(sp.get(18).choices(), (std::vector<int>{0, 1, 0, 0}));
  EXPECT_EQ(sp.get(18 * 3 * 4).choices(), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_THROW(sp.get(sp.size()), Error);
  EXPECT_THROW(sp.get(-1), Error);
  EXPECT_THROW(sp.index_of({0, 0, 0}), Error);
  EXPECT_THROW(sp.index_of({18, 0, 0, 0}), Error);
}

TEST(ConfigEntity, ValuesLabelsStrAndRecord) {
  ConfigSpace sp = make_space();
  ConfigEntity e = sp.get(sp.index_of({7, 1, 2, 1}));
  EXPECT_EQ(e.value("tile_x"), (std::vector<int64_t>{-1, 2, 2}));
  EXPECT_EQ(e.value("order"), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(e.label("vec"), "unroll");
  EXPECT_EQ(e.value("pad"), (std::vector<int64_t>{0}));
  EXPECT_EQ(e.str(), "tile_x=[-1, 2, 2] order=[2, 1, 0] vec=unroll pad=0");
  EXPECT_THROW(e.value("nope"), Error);

  records::ConfigRecord r = e.to_record();
  EXPECT_EQ(r.index, e.index());
  EXPECT_EQ(r.knobs.at("tile_x"), (std::vector<int64_t>{-1, 2, 2}));
  EXPECT_EQ(r.labels.at("vec"), "unroll");
  EXPECT_EQ(sp.from_record(r).index(), e.index());
  for (int64_t i = 0; i < sp.size(); i += 7) EXPECT_EQ(sp.from_record(sp.get(i).to_record()).index(), i);
}

TEST(ConfigEntity, FromRecordValidates) {
  ConfigSpace sp = make_space();
  records::ConfigRecord good = sp.get(5).to_record();
  auto r = good;
  r.knobs.erase("order");
  EXPECT_THROW(sp.from_record(r), Error);  // missing knob
  r = good;
  r.knobs["extra"] = {1};
  EXPECT_THROW(sp.from_record(r), Error);  // unknown knob
  r = good;
  r.knobs["tile_x"] = {-1, 5, 1};
  EXPECT_THROW(sp.from_record(r), Error);  // not a value of the knob
  r = good;
  r.knobs["tile_x"] = {-1, 2};
  EXPECT_THROW(sp.from_record(r), Error);  // wrong size
  r = good;
  r.labels["vec"] = "sideways";
  EXPECT_THROW(sp.from_record(r), Error);
}

// A knob a template added after records were written: records without it take its first
// value (and keep their index, the new knob being the last); other missing knobs still fail.
TEST(ConfigEntity, FromRecordGivesAKnobAddedLaterItsFirstValue) {
  ConfigSpace old_space = make_space();
  ConfigSpace sp = make_space();
  sp.define_choice("added", {0, 1}, /*absent_means_first=*/true);
  EXPECT_TRUE(sp.knob("added").absent_means_first);
  EXPECT_FALSE(sp.knob("order").absent_means_first);
  for (int64_t idx : {int64_t(0), int64_t(5), old_space.size() - 1}) {
    ConfigEntity e = sp.from_record(old_space.get(idx).to_record());
    EXPECT_EQ(e.index(), idx);
    EXPECT_EQ(e.value("added"), (std::vector<int64_t>{0}));
  }
  records::ConfigRecord with = sp.get(old_space.size() + 3).to_record();
  EXPECT_EQ(sp.from_record(with).value("added"), (std::vector<int64_t>{1}));
  with.knobs.erase("order");
  EXPECT_THROW(sp.from_record(with), Error);
}

TEST(ConfigContext, DefiningReturnsFirstValuesApplyingReturnsTheConfigs) {
  ConfigSpace sp;
  auto define = [](ConfigContext& cfg) {
    SplitOptions three;
    three.num_outputs = 3;
    auto s = cfg.split("tile", 12, three);
    auto a = cfg.annotate("ann", {"none", "vec"});
    auto c = cfg.choice("ch", {5, 6, 7});
    return std::make_tuple(s, a, c);
  };
  ConfigContext def(&sp);
  EXPECT_TRUE(def.defining());
  auto [s0, a0, c0] = define(def);
  EXPECT_EQ(s0, (std::vector<int64_t>{-1, 1, 1}));
  EXPECT_EQ(a0, "none");
  EXPECT_EQ(c0, 5);
  EXPECT_EQ(sp.size(), 18 * 2 * 3);

  ConfigEntity e = sp.get(sp.index_of({10, 1, 2}));
  ConfigContext app(e);
  EXPECT_FALSE(app.defining());
  auto [s1, a1, c1] = define(app);
  EXPECT_EQ(s1, (std::vector<int64_t>{-1, 3, 1}));
  EXPECT_EQ(a1, "vec");
  EXPECT_EQ(c1, 7);
  // A knob the space does not have, or used as another kind, is an error.
  EXPECT_THROW(app.choice("missing", {1}), Error);
  EXPECT_THROW(app.choice("ann", {1}), Error);
  EXPECT_THROW(app.split("tile", 13, {}), Error);  // another extent
}

TEST(ConfigContext, ApplySplitInnermostFirst) {
  te::Tensor A = te::placeholder({30, 17}, DataType::Float(32), "A");
  te::Tensor B = te::compute(A.shape(), [&](te::Var i, te::Var j) { return A(i, j) * 2.0f; }, "B");
  ConfigSpace sp;
  SplitOptions o;
  o.policy = SplitOptions::kCandidates;
  o.num_outputs = 3;
  o.candidates = {{-1, 2, 4}, {-1, 3, 8}};
  sp.define_split("tile", 30, o);
  sp.define_annotate("ann", {"vec", "none", "unroll", "parallel"});
  for (int64_t i = 0; i < sp.size(); ++i) {
    ConfigContext cfg(sp.get(i));
    Schedule s = create_schedule({B});
    auto parts = cfg.apply_split("tile", s[B], s[B].axis(0));
    ASSERT_EQ(parts.size(), 3u);
    const auto& f = sp.get(i).value("tile");
    // [outer, mid, inner], with mid and inner of the knob's extents, in loop order.
    auto leaves = s[B].leaf_iter_vars();
    ASSERT_EQ(leaves.size(), 4u);
    EXPECT_EQ(leaves[0].get(), parts[0].get());
    EXPECT_EQ(leaves[1].get(), parts[1].get());
    EXPECT_EQ(leaves[2].get(), parts[2].get());
    auto rel = s[B]->relations;
    ASSERT_EQ(rel.size(), 2u);
    EXPECT_TRUE(te::is_const_int(rel[0].split.factor, f[2]));
    EXPECT_TRUE(te::is_const_int(rel[1].split.factor, f[1]));
    cfg.apply_annotate("ann", s[B], s[B].axis(1));
    EXPECT_MATCHES_REFERENCE(s, (std::vector<te::Tensor>{A, B})) << sp.get(i).str();
  }
}

}  // namespace
}  // namespace loom::tuner
