// The full-size models through the whole pipeline: ResNet-18's fused groups are exactly the
// list below, and both models' memory plans validate (ResNet-18's within half of one buffer
// per tensor).
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "loom/graph_opt/memory_plan.h"
#include "loom/graph_opt/passes.h"

namespace loom::graph_opt {
namespace {

using Groups = std::vector<std::vector<std::string>>;

Groups group_members(const Graph& g) {
  Groups r;
  for (const FusedGroup& grp : g.groups) {
    std::vector<std::string> m;
    for (int n : grp.nodes) m.push_back(g.nodes[size_t(n)].name);
    r.push_back(m);
  }
  return r;
}

/// ResNet-18's kernels after the O3 pipeline. Every conv+bn(+relu) is one conv2d_nchwc with
/// the batch norm folded into its weights and bias (named as the conv), the relu fused; the
/// second conv of each block takes the residual add and the relu after it; a downsample conv
/// (1x1, its batch norm folded) is a kernel of its own that runs before the add's kernel;
/// pooling ops stand alone; the one layout_transform back to NCHW fuses with flatten.
Groups expected_resnet18_groups(bool laid_out) {
  Groups g = {{"conv1", "relu"}, {"maxpool"}};
  for (int stage = 1; stage <= 4; ++stage)
    for (int blk = 0; blk < 2; ++blk) {
      std::string p = fmt::format("layer{}.{}.", stage, blk);
      g.push_back({p + "conv1", p + "relu"});
      if (stage > 1 && blk == 0) g.push_back({p + "downsample.0"});
      g.push_back({p + "conv2", p + "add", p + "relu2"});
    }
  g.push_back({"avgpool"});
  if (laid_out) g.push_back({"avgpool.NCHW", "flatten"});
  else g.push_back({"flatten"});
  g.push_back({"fc"});
  return g;
}

TEST(GraphModels, ResNet18FusedGroupsAndMemoryPlan) {
  Graph g = models::resnet18();
  Graph o = optimize(g);
  EXPECT_EQ(group_members(o), expected_resnet18_groups(true)) << o;
  for (const FusedGroup& grp : o.groups) {
    const std::string& first = o.nodes[size_t(grp.nodes[0])].op;
    if (first == "conv2d_nchwc" || first == "dense_pack" || first.find("pool") != std::string::npos)
      EXPECT_EQ(grp.anchor, grp.nodes[0]) << grp.name;
    else
      EXPECT_EQ(grp.anchor, -1) << grp.name;
    EXPECT_EQ(grp.outputs.size(), 1u) << grp.name;
  }
  EXPECT_EQ(o.groups[0].name, "fused_conv2d_nchwc_relu");
  EXPECT_EQ(o.groups[3].name, "fused_conv2d_nchwc_add_relu");  // layer1.0.conv2

  MemoryPlan p = plan_memory(o);
  validate_memory_plan(o, p);
  std::cout << "resnet18: " << p.summary() << "\n";
  EXPECT_LE(double(p.arena_bytes), 0.5 * double(p.unshared_bytes)) << p.report(o);

  // Without the layout pass the groups are the same, on conv2d.
  PassOptions opt;
  opt.opt_level = 2;
  Graph o2 = optimize(g, opt);
  EXPECT_EQ(group_members(o2), expected_resnet18_groups(false));
  MemoryPlan p2 = plan_memory(o2);
  validate_memory_plan(o2, p2);
  std::cout << "resnet18 (O2): " << p2.summary() << "\n";
}

TEST(GraphModels, MobileNetV2FusedGroupsAndMemoryPlan) {
  Graph o = optimize(models::mobilenet_v2());
  // 52 convolutions, each a kernel with its folded batch norm (and relu6, or the residual add).
  int convs = 0, with_add = 0;
  for (const FusedGroup& grp : o.groups) {
    if (grp.anchor < 0) continue;
    const std::string& op = o.nodes[size_t(grp.anchor)].op;
    if (op == "conv2d_nchwc" || op == "depthwise_conv2d_nchwc") ++convs;
    for (int n : grp.nodes) with_add += o.nodes[size_t(n)].op == "add";
  }
  EXPECT_EQ(convs, 52) << o;
  EXPECT_EQ(with_add, 10);
  MemoryPlan p = plan_memory(o);
  validate_memory_plan(o, p);
  std::cout << "mobilenet_v2: " << p.summary() << "\n";
  EXPECT_LT(p.arena_bytes, p.unshared_bytes);
}

}  // namespace
}  // namespace loom::graph_opt
