// The full-size models through the whole pipeline: ResNet-18's fused groups are exactly the
// list below, and both models' memory plans validate (ResNet-18's within half of one buffer
// per tensor).
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "loom/graph_opt/memory_plan.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/reference.h"

namespace loom::graph_opt {
namespace {

using test::group_members;
using Groups = std::vector<std::vector<std::string>>;

/// ResNet-18's kernels after the O3 pipeline. Every conv+bn(+relu) is one conv2d_nchwc with
/// the batch norm folded into its weights and bias (named as the conv), the relu fused; the
/// second conv of each block takes the residual add and the relu after it; a downsample conv
/// (1x1, its batch norm folded) is a kernel of its own that runs before the add's kernel;
/// the max pool stands alone; the global average pool takes the layout_transform back to NCHW
/// and the flatten after it (pools have no template, so their kernels take injective ops).
Groups expected_resnet18_groups(bool laid_out) {
  Groups g = {{"conv1", "relu"}, {"maxpool"}};
  for (int stage = 1; stage <= 4; ++stage)
    for (int blk = 0; blk < 2; ++blk) {
      std::string p = fmt::format("layer{}.{}.", stage, blk);
      g.push_back({p + "conv1", p + "relu"});
      if (stage > 1 && blk == 0) g.push_back({p + "downsample.0"});
      g.push_back({p + "conv2", p + "add", p + "relu2"});
    }
  if (laid_out) g.push_back({"avgpool", "avgpool.NCHW", "flatten"});
  else g.push_back({"avgpool", "flatten"});
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

// The loop docs/graph.md gives the compile step, on the small ResNet-18: every group's
// composed computation, its anchor's template, and where each input comes from.
TEST(GraphModels, CompileStepApi) {
  Graph f = optimize(models::resnet18(test::small_model()));
  MemoryPlan plan = plan_memory(f);
  std::map<std::string, int> templates;
  for (size_t i = 0; i < f.groups.size(); ++i) {
    const FusedGroup& grp = f.groups[i];
    GroupCompute c = compose_group(f, int(i));
    ASSERT_EQ(c.inputs.size(), grp.inputs.size());
    ASSERT_EQ(c.outputs.size(), grp.outputs.size());
    for (size_t k = 0; k < grp.outputs.size(); ++k) {
      std::vector<int64_t> shape;
      for (const te::Expr& e : c.outputs[k].shape()) shape.push_back(*te::as_const_int(e));
      EXPECT_EQ(shape, f.type(grp.outputs[k]).shape) << grp.name;
    }
    if (grp.anchor >= 0) {
      const Node& a = f.nodes[size_t(grp.anchor)];
      EXPECT_TRUE(c.anchor.defined());
      std::vector<TensorType> in;
      for (ValueRef v : a.inputs) in.push_back(f.type(v));
      const te::ops::OpDef& def = te::ops::get_op(a.op);
      auto s = def.strategy.find("llvm");
      std::optional<te::ops::TemplateCall> call;
      if (s != def.strategy.end()) call = s->second(in, a.attrs);
      ++templates[call ? call->name : a.op + " (none)"];
    }
    for (ValueRef v : grp.inputs) {
      const Node& n = f.node(v);
      if (n.is_input()) continue;
      if (n.is_constant()) {
        EXPECT_TRUE(n.value.defined());
        continue;
      }
      bool graph_output = std::find(f.outputs.begin(), f.outputs.end(), v) != f.outputs.end();
      EXPECT_TRUE(graph_output || plan.find(v) != nullptr) << f.value_name(v);
    }
  }
  // conv1 reads 3-channel NCHW data: the conv2d_nchwc template's ic_block 0.
  EXPECT_EQ(templates, (std::map<std::string, int>{{"conv2d_nchwc", 20},
                                                   {"dense_pack", 1},
                                                   {"global_avg_pool2d (none)", 1},
                                                   {"max_pool2d (none)", 1}}));
}

}  // namespace
}  // namespace loom::graph_opt
