// Static memory planning: the planner's sharing, the validator on good and broken plans.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "loom/graph_opt/memory_plan.h"
#include "loom/graph_opt/passes.h"

namespace loom::graph_opt {
namespace {

/// x -> relu -> relu -> relu -> relu (-> output), unfused: three intermediates, each live
/// from its producer to its one consumer.
Graph chain() {
  GraphBuilder b("chain");
  Value v = b.input("x", {{1000}, DataType::Float(32), ""});
  for (int i = 0; i < 4; ++i) v = b.relu(v, fmt::format("r{}", i));
  b.output(v);
  FuseOptions opt;
  opt.level = 0;
  return fuse_ops(b.build(), opt);
}

std::string validation_error(const Graph& g, const MemoryPlan& p) {
  try {
    validate_memory_plan(g, p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MemoryPlan, ReusesStorageOfDeadValues) {
  Graph g = chain();
  MemoryPlan p = plan_memory(g);
  ASSERT_EQ(p.entries.size(), 3u);  // r0, r1, r2; r3 is the graph output
  EXPECT_EQ(p.entries[0].first_step, 0);
  EXPECT_EQ(p.entries[0].last_step, 1);
  EXPECT_EQ(p.entries[0].offset, p.entries[2].offset);  // r0 is dead when r2 is written
  EXPECT_NE(p.entries[0].offset, p.entries[1].offset);
  EXPECT_EQ(p.arena_bytes, 2 * 4032);                  // two 4000-byte buffers, 64-byte aligned
  EXPECT_EQ(p.unshared_bytes, 3 * 4032);
  EXPECT_NE(p.summary().find("3 intermediate values"), std::string::npos) << p.summary();
  EXPECT_NE(p.report(g).find("%r1"), std::string::npos);
}

TEST(MemoryPlan, ValidatorRejectsBrokenPlans) {
  Graph g = chain();
  const MemoryPlan good = plan_memory(g);
  EXPECT_EQ(validation_error(g, good), "");
  {
    MemoryPlan p = good;  // r1 moved onto r0, which is still live when r1 is written
    p.entries[1].offset = p.entries[0].offset;
    std::string m = validation_error(g, p);
    EXPECT_NE(m.find("%r0"), std::string::npos) << m;
    EXPECT_NE(m.find("%r1"), std::string::npos) << m;
    EXPECT_NE(m.find("live at the same time"), std::string::npos) << m;
  }
  {
    MemoryPlan p = good;  // partly overlapping
    p.entries[1].offset = p.entries[0].offset + 64;
    p.arena_bytes += 64;
    EXPECT_NE(validation_error(g, p), "");
  }
  {
    MemoryPlan p = good;  // a lifetime shortened so that the overlap would look harmless
    p.entries[0].last_step = 0;
    EXPECT_NE(validation_error(g, p).find("live over"), std::string::npos);
  }
  {
    MemoryPlan p = good;
    p.entries[2].offset += 8;  // misaligned
    EXPECT_NE(validation_error(g, p), "");
  }
  {
    MemoryPlan p = good;
    p.arena_bytes = 4032;  // too small
    EXPECT_NE(validation_error(g, p), "");
  }
  {
    MemoryPlan p = good;
    p.entries.pop_back();  // a value without storage
    EXPECT_NE(validation_error(g, p).find("no storage"), std::string::npos);
  }
  {
    MemoryPlan p = good;
    p.entries.push_back(p.entries[0]);  // twice
    EXPECT_NE(validation_error(g, p), "");
  }
}

TEST(MemoryPlan, NeedsAFusedGraph) {
  GraphBuilder b("unfused");
  Value x = b.input("x", {{4}, DataType::Float(32), ""});
  b.output(b.relu(x, "r"));
  EXPECT_THROW(plan_memory(b.build()), Error);
}

TEST(MemoryPlan, SmallModelsPlanAndValidate) {
  for (const Graph& g : {models::resnet18(test::small_model()), models::mobilenet_v2(test::small_model())}) {
    Graph o = optimize(g);
    MemoryPlan p = plan_memory(o);
    EXPECT_EQ(validation_error(o, p), "") << g.name;
    EXPECT_LT(p.arena_bytes, p.unshared_bytes) << g.name;
  }
}

}  // namespace
}  // namespace loom::graph_opt
