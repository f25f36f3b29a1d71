#include "loom/tuner/features.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "loom/lower/stmt.h"
#include "loom/tuner/tuner.h"

namespace loom::tuner {
namespace {

using namespace loom::lowering;  // NOLINT
namespace fl = features;

float lg(double x) { return float(std::log2(1.0 + x)); }
// Levels are right-aligned: in these two-level nests, level 0 (outermost) is slot kMaxLoops - 2.
const float* level(const std::vector<float>& f, int l) { return f.data() + (fl::kMaxLoops - 2 + l) * fl::kPerLoop; }
const float* buffer(const std::vector<float>& f, int l, int b) {
  return level(f, l) + fl::kBuffers + b * fl::kPerBuffer;
}

Expr load(const Var& buf, Expr idx) {
  return te::make<te::LoadNode>(DataType::Float(32, idx.dtype().lanes()), buf, std::move(idx), Expr());
}
Stmt store(const Var& buf, Expr value, Expr idx) { return make_stmt<StoreNode>(buf, std::move(value), std::move(idx), Expr()); }
Stmt loop(const Var& v, int64_t extent, ForKind kind, Stmt body) {
  return make_stmt<ForNode>(v, Expr(0), Expr(extent), kind, std::move(body));
}

LoweredFunc func(Stmt body) {
  LoweredFunc f;
  f.name = "f";
  f.body = std::move(body);
  return f;
}

TEST(Features, TwoLevelNest) {
  // for i in 16: for j in 32: C[i*32+j] = A[i*32+j] + B[j]
  Var i("i"), j("j");
  Var A("A", DataType::Handle()), B("B", DataType::Handle()), C("C", DataType::Handle());
  Stmt body = loop(i, 16, ForKind::kSerial,
                   loop(j, 32, ForKind::kSerial, store(C, load(A, i * 32 + j) + load(B, j), i * 32 + j)));
  std::vector<float> f = extract_features(func(body));
  ASSERT_EQ(f.size(), size_t(fl::kLength));

  const float* l0 = level(f, 0);
  EXPECT_FLOAT_EQ(l0[fl::kExtent], 4);
  EXPECT_FLOAT_EQ(l0[fl::kDepth], 0);
  EXPECT_FLOAT_EQ(l0[fl::kTopDown], 4);
  EXPECT_FLOAT_EQ(l0[fl::kBottomUp], 9);
  EXPECT_FLOAT_EQ(l0[fl::kKind + int(ForKind::kSerial)], 1);
  EXPECT_FLOAT_EQ(l0[fl::kKind + int(ForKind::kParallel)], 0);
  EXPECT_FLOAT_EQ(l0[fl::kOps + 0], lg(512));  // one add per element; index arithmetic not counted
  EXPECT_FLOAT_EQ(l0[fl::kOps + 1], 0);
  const float* l1 = level(f, 1);
  EXPECT_FLOAT_EQ(l1[fl::kExtent], 5);
  EXPECT_FLOAT_EQ(l1[fl::kDepth], 1);
  EXPECT_FLOAT_EQ(l1[fl::kTopDown], 9);
  EXPECT_FLOAT_EQ(l1[fl::kBottomUp], 5);
  EXPECT_FLOAT_EQ(l1[fl::kOps + 0], lg(32));
  for (int slot = 0; slot < fl::kMaxLoops - 2; ++slot)  // unused outer slots
    EXPECT_FLOAT_EQ(f[size_t(slot * fl::kPerLoop + fl::kExtent)], 0);

  // Buffers A, B, C (equal touches, by name). Outer loop: A stride 32, no reuse; B stride 0,
  // reused 16 times.
  EXPECT_FLOAT_EQ(buffer(f, 0, 0)[0], lg(32));
  EXPECT_FLOAT_EQ(buffer(f, 0, 0)[1], lg(512));
  EXPECT_FLOAT_EQ(buffer(f, 0, 0)[2], lg(1));
  EXPECT_FLOAT_EQ(buffer(f, 0, 1)[0], lg(0));
  EXPECT_FLOAT_EQ(buffer(f, 0, 1)[1], lg(512));
  EXPECT_FLOAT_EQ(buffer(f, 0, 1)[2], lg(16));
  EXPECT_FLOAT_EQ(buffer(f, 0, 2)[0], lg(32));
  // Inner loop: unit strides, 32 touches each.
  EXPECT_FLOAT_EQ(buffer(f, 1, 0)[0], lg(1));
  EXPECT_FLOAT_EQ(buffer(f, 1, 1)[0], lg(1));
  EXPECT_FLOAT_EQ(buffer(f, 1, 1)[1], lg(32));
  EXPECT_FLOAT_EQ(buffer(f, 1, 1)[2], lg(1));
  // Distinct bytes per entry: the outer loop touches all of A and C (512 floats each) and
  // B's 32; one row (inner loop) touches 32 floats of each.
  EXPECT_FLOAT_EQ(buffer(f, 0, 0)[3], lg(512 * 4));
  EXPECT_FLOAT_EQ(buffer(f, 0, 1)[3], lg(32 * 4));
  EXPECT_FLOAT_EQ(buffer(f, 1, 1)[3], lg(32 * 4));
  EXPECT_FLOAT_EQ(l0[fl::kWorkingSet], lg((512 + 32 + 512) * 4));
  EXPECT_FLOAT_EQ(l1[fl::kWorkingSet], lg(3 * 32 * 4));

  const float* g = f.data() + fl::kGlobal;
  EXPECT_FLOAT_EQ(g[0], lg(512));
  EXPECT_FLOAT_EQ(g[fl::kOpKinds], lg(2));      // loops
  EXPECT_FLOAT_EQ(g[fl::kOpKinds + 1], lg(1));  // stores
  EXPECT_EQ(f, extract_features(func(body)));   // deterministic
}

TEST(Features, VectorLanesAreTheInnermostLevel) {
  // parallel for i in 4: C[ramp(i*8, 1, 8)] = A[ramp(i*8, 1, 8)] * x2, plus a gather D[i % 3]
  Var i("i");
  Var A("A", DataType::Handle()), C("C", DataType::Handle()), D("D", DataType::Handle());
  Expr idx = te::make<te::RampNode>(i * 8, Expr(1), 8);
  Expr two = te::make<te::BroadcastNode>(Expr(2.0f), 8);
  Expr gather = te::make<te::BroadcastNode>(load(D, te::floormod(i, 3)), 8);
  Stmt body = loop(i, 4, ForKind::kParallel,
                   store(C, te::make<te::MulNode>(DataType::Float(32, 8), load(A, idx), two) + gather, idx));
  std::vector<float> f = extract_features(func(body));
  const float* l0 = level(f, 0);
  const float* l1 = level(f, 1);
  EXPECT_FLOAT_EQ(l0[fl::kKind + int(ForKind::kParallel)], 1);
  EXPECT_FLOAT_EQ(l0[fl::kExtent], 2);
  EXPECT_FLOAT_EQ(l1[fl::kKind + int(ForKind::kVectorized)], 1);
  EXPECT_FLOAT_EQ(l1[fl::kExtent], 3);
  EXPECT_FLOAT_EQ(l1[fl::kBottomUp], 3);
  EXPECT_FLOAT_EQ(l0[fl::kBottomUp], 5);
  EXPECT_FLOAT_EQ(l1[fl::kOps + 1], lg(8));   // 8 multiplies per vector
  EXPECT_FLOAT_EQ(l0[fl::kOps + 1], lg(32));
  // Buffers by touches: A and C (32 each), then D (4).
  EXPECT_FLOAT_EQ(buffer(f, 0, 0)[0], lg(8));  // A: stride 8 w.r.t. i
  EXPECT_FLOAT_EQ(buffer(f, 1, 0)[0], lg(1));  // A: unit stride across lanes
  EXPECT_FLOAT_EQ(buffer(f, 0, 2)[0], -1);     // D: i % 3 is not affine
  EXPECT_FLOAT_EQ(buffer(f, 0, 2)[1], lg(4));
}

TEST(Features, OfTaskConfigs) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  ConfigEntity a = task.space().get(task.default_index());
  std::vector<float> fa = extract_features(task, a);
  ASSERT_EQ(fa.size(), size_t(fl::kLength));
  EXPECT_EQ(fa, extract_features(task, a));
  EXPECT_GT(fa[fl::kGlobal + 1], 0);  // multiplies
  // Some other config differs in its features (at least its knob part).
  int differing = 0;
  for (int64_t k = 0; k < std::min<int64_t>(task.space().size(), 8); ++k) {
    if (k == a.index()) continue;
    try {
      if (extract_features(task, task.space().get(k)) != fa) ++differing;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(Features, KnobPartNamesTheRestAndThePadding) {
  ConfigSpace space;
  SplitOptions three;
  three.policy = SplitOptions::kCandidates;
  three.num_outputs = 3;
  three.candidates = {{-1, 4, 8}, {-1, 5, 10}};
  space.define_split("tile", 100, three);
  space.define_choice("order", {0, 3});
  // tile = [-1, 4, 8]: the rest is ceil(100 / 32) = 4, the parts cover 128 (28% padding).
  std::vector<float> k = knob_features(space.get(space.index_of({0, 1})));
  ASSERT_EQ(k.size(), size_t(fl::kMaxKnobFeatures));
  EXPECT_FLOAT_EQ(k[0], 3);  // 1 + log2(4)
  EXPECT_FLOAT_EQ(k[1], 3);
  EXPECT_FLOAT_EQ(k[2], 4);
  EXPECT_FLOAT_EQ(k[3], 0.28f);
  EXPECT_FLOAT_EQ(k[4], 1 + std::log2(3.0f));  // the choice's value
  EXPECT_FLOAT_EQ(k[5], 0);
  // tile = [-1, 5, 10]: 2 * 50 = 100 exactly.
  k = knob_features(space.get(space.index_of({1, 0})));
  EXPECT_FLOAT_EQ(k[0], 2);
  EXPECT_FLOAT_EQ(k[3], 0);
  EXPECT_FLOAT_EQ(k[4], 0);
}

TEST(Features, FeatureSets) {
  Task task = Task::create("matmul", {64, 64, 64}, Target("llvm"));
  ConfigEntity e = task.space().get(task.default_index());
  std::vector<float> all = extract_features(task, e, FeatureSet::kItervarKnob);
  ASSERT_EQ(all.size(), size_t(fl::kLength));
  std::vector<float> loops = extract_features(task, e, FeatureSet::kItervar);
  ASSERT_EQ(loops.size(), all.size());
  EXPECT_TRUE(std::equal(all.begin(), all.begin() + fl::kKnobs, loops.begin()));
  EXPECT_TRUE(std::all_of(loops.begin() + fl::kKnobs, loops.end(), [](float v) { return v == 0; }));
  std::vector<float> knobs = extract_features(task, e, FeatureSet::kKnob);
  EXPECT_TRUE(std::equal(knobs.begin(), knobs.end(), all.begin() + fl::kKnobs));
  for (FeatureSet s : {FeatureSet::kAuto, FeatureSet::kItervarKnob, FeatureSet::kItervar, FeatureSet::kKnob})
    EXPECT_EQ(parse_feature_set(to_string(s)), s);
  EXPECT_THROW(parse_feature_set("curve"), Error);
}

TEST(Features, AutoIsKnobForSmallSpacesOnly) {
  EXPECT_EQ(resolve_feature_set(FeatureSet::kAuto, kAutoKnobSpace), FeatureSet::kKnob);
  EXPECT_EQ(resolve_feature_set(FeatureSet::kAuto, kAutoKnobSpace + 1), FeatureSet::kItervarKnob);
  EXPECT_EQ(resolve_feature_set(FeatureSet::kItervar, 10), FeatureSet::kItervar);
  Task small = Task::create("depthwise_conv2d_nchw", {1, 16, 14, 14, 3, 3}, Target("llvm"));
  Task large = Task::create("matmul", {1024, 1024, 1024}, Target("llvm"));
  ASSERT_LE(small.space().size(), kAutoKnobSpace);
  ASSERT_GT(large.space().size(), kAutoKnobSpace);
  ConfigEntity s = small.space().get(small.default_index());
  ConfigEntity l = large.space().get(large.default_index());
  EXPECT_EQ(extract_features(small, s), extract_features(small, s, FeatureSet::kKnob));
  EXPECT_EQ(extract_features(large, l), extract_features(large, l, FeatureSet::kItervarKnob));
  EXPECT_EQ(XGBTuner(small).feature_set(), FeatureSet::kKnob);
  EXPECT_EQ(XGBTuner(large).feature_set(), FeatureSet::kItervarKnob);
  XGBTunerOptions forced;
  forced.features = FeatureSet::kItervarKnob;
  EXPECT_EQ(XGBTuner(small, forced).feature_set(), FeatureSet::kItervarKnob);
}

}  // namespace
}  // namespace loom::tuner
