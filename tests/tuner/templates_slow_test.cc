// The built-in schedule templates: the default config and random configs of each, compiled
// and compared with te::evaluate on small shapes (including ones no tile divides); the
// registry, task errors, and build_best.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <sstream>

#include "common/test_util.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

struct Case {
  std::string op;
  std::vector<int64_t> shape;
  std::map<std::string, std::string> attrs;
};

std::string case_name(const Case& c) {
  std::string s = c.op;
  for (int64_t d : c.shape) s += "_" + std::to_string(d);
  for (const auto& [k, v] : c.attrs) s += "_" + k + v;
  return s;
}

const Case kCases[] = {
    {"matmul", {30, 17, 13}, {}},
    {"matmul", {32, 48, 16}, {}},
    {"matmul", {7, 5, 3}, {}},
    {"batch_matmul", {3, 10, 33, 7}, {}},
    {"batch_matmul", {2, 16, 32, 8}, {}},
    {"batch_matmul", {2, 9, 20, 8}, {{"transpose_b", "1"}}},
    {"dense", {9, 20, 11}, {}},
    {"dense_pack", {16, 33, 24}, {}},
    {"dense_bias_relu", {9, 20, 11}, {}},
    {"dense_bias_relu", {16, 32, 24}, {}},
    {"conv2d_nchw", {1, 3, 10, 11, 20, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
    {"conv2d_nchw", {2, 4, 9, 9, 16, 3, 3}, {{"stride", "2"}, {"pad", "0"}}},
    {"conv2d_nchw", {1, 5, 7, 6, 7, 1, 1}, {}},
    {"conv2d_nchwc", {1, 16, 9, 10, 32, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
    {"conv2d_nchwc", {1, 32, 9, 9, 16, 3, 3}, {{"stride", "2"}, {"pad", "0"}}},
    {"conv2d_nchwc", {2, 16, 7, 6, 16, 1, 1}, {}},
    {"conv2d_nchwc", {1, 3, 11, 10, 16, 3, 3}, {{"stride", "2"}, {"pad", "1"}, {"ic_block", "3"}}},
    {"conv2d_nchwc", {1, 16, 7, 7, 24, 1, 1}, {{"ic_block", "8"}, {"oc_block", "8"}}},
    {"conv2d_nchwc", {1, 3, 13, 12, 16, 3, 3}, {{"stride", "2"}, {"pad", "1"}, {"ic_block", "0"}}},
    {"conv2d_nchwc", {1, 3, 27, 28, 32, 7, 7}, {{"stride", "2"}, {"pad", "3"}, {"ic_block", "0"}}},
    {"depthwise_conv2d_nchw", {1, 5, 11, 10, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
    {"depthwise_conv2d_nchw", {2, 3, 9, 9, 3, 3}, {{"stride", "2"}, {"pad", "1"}}},
    {"depthwise_conv2d_nchwc", {1, 32, 11, 10, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
    {"depthwise_conv2d_nchwc", {2, 24, 9, 9, 3, 3}, {{"stride", "2"}, {"pad", "1"}, {"block", "8"}}},
    {"softmax", {5, 37}, {}},
    {"softmax", {8, 64}, {}},
};

class TemplateCase : public ::testing::TestWithParam<Case> {};

TEST_P(TemplateCase, DefaultAndRandomConfigsMatchReference) {
  const Case& c = GetParam();
  Task task = Task::create(c.op, c.shape, Target("llvm"), "float32", c.attrs);
  EXPECT_GT(task.space().size(), 1);
  EXPECT_GT(task.flop(), 0);
  std::vector<int64_t> indices{task.default_index(), 0, task.space().size() - 1};
  std::mt19937_64 rng(std::hash<std::string>()(case_name(c)));
  for (int i = 0; i < 20; ++i) indices.push_back(int64_t(rng() % uint64_t(task.space().size())));
  int built = 0;
  for (int64_t idx : indices) {
    Instance inst;
    try {
      inst = task.instantiate(idx);
    } catch (const InstantiationError& e) {
      // The NCHWc templates reject register tiles with more accumulators than there are registers.
      const bool may_reject = (c.op == "conv2d_nchwc" || c.op == "depthwise_conv2d_nchwc") &&
                              idx != task.default_index() &&
                              std::string(e.what()).find("accumulators exceeds") != std::string::npos;
      if (!may_reject) ADD_FAILURE() << "config " << idx << ": " << e.what();
      continue;
    }
    ++built;
    EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args, uint64_t(idx) + 1), "")
        << case_name(c) << " config " << idx << ": " << task.space().get(idx).str();
  }
  EXPECT_GE(built, 12) << "too few configs of " << case_name(c) << " could be instantiated";
}

INSTANTIATE_TEST_SUITE_P(Templates, TemplateCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return case_name(i.param); });

// A first layer (NCHW data, ic_block 0) gets its own untuned config: the channels innermost
// in the reduction, rows outside the channel blocks, 7 columns; a blocked one keeps 14.
TEST(Templates, FirstLayerConvHasItsOwnDefault) {
  Task first = Task::create("conv2d_nchwc", {1, 3, 224, 224, 64, 7, 7}, Target("llvm"), "float32",
                            {{"stride", "2"}, {"pad", "3"}, {"ic_block", "0"}});
  ConfigEntity d = first.space().get(first.default_index());
  EXPECT_EQ(d.value("reduce_order"), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(d.value("tile_ow").back(), 7);
  EXPECT_EQ(d.value("rows_outer"), (std::vector<int64_t>{1}));
  Task blocked = Task::create("conv2d_nchwc", {1, 64, 56, 56, 64, 3, 3}, Target("llvm"), "float32",
                              {{"stride", "1"}, {"pad", "1"}});
  ConfigEntity b = blocked.space().get(blocked.default_index());
  EXPECT_EQ(b.value("reduce_order"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(b.value("tile_ow").back(), 14);
}

// The GEMM templates' six-row register tiles (for AVX2's 16 registers) leave a tail on most
// extents: every such tile_y value, on shapes it divides and on shapes it does not.
TEST(Templates, SixRowGemmTilesWithTailsMatchReference) {
  for (const Case& c : {Case{"matmul", {32, 48, 16}, {}}, Case{"matmul", {7, 5, 3}, {}},
                        Case{"matmul", {30, 17, 13}, {}}, Case{"batch_matmul", {2, 16, 32, 8}, {}},
                        Case{"dense_bias_relu", {9, 20, 11}, {}}}) {
    Task task = Task::create(c.op, c.shape, Target("llvm"), "float32", c.attrs);
    std::set<std::vector<int64_t>> tried;
    for (int64_t idx = 0; idx < task.space().size(); ++idx) {
      ConfigEntity e = task.space().get(idx);
      const std::vector<int64_t> ty = e.value("tile_y");
      if (ty.back() != 6 || !tried.insert(ty).second) continue;
      Instance inst = task.instantiate(idx);
      EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args, uint64_t(idx) + 1), "")
          << case_name(c) << " config " << idx << ": " << e.str();
    }
    EXPECT_FALSE(tried.empty()) << case_name(c) << " has no six-row tile";
  }
}

// Both outer tile orders of the GEMM templates (cols_outer) with eight-row tiles, on shapes
// the tiles divide and on ones they do not (a prime row count, columns off the 16-block).
TEST(Templates, GemmTileOrdersAndEightRowTailsMatchReference) {
  for (const Case& c : {Case{"dense_pack", {13, 40, 24}, {}}, Case{"dense_pack", {16, 48, 16}, {}},
                        Case{"matmul", {19, 37, 9}, {}}, Case{"dense", {11, 64, 20}, {}},
                        Case{"batch_matmul", {2, 17, 20, 8}, {}}}) {
    Task task = Task::create(c.op, c.shape, Target("llvm"), "float32", c.attrs);
    std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> tried;
    for (int64_t idx = 0; idx < task.space().size(); ++idx) {
      ConfigEntity e = task.space().get(idx);
      const std::vector<int64_t> ty = e.value("tile_y");
      if (ty.back() != 8 || !tried.insert({ty, e.value("cols_outer")}).second) continue;
      Instance inst = task.instantiate(idx);
      EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args, uint64_t(idx) + 1), "")
          << case_name(c) << " config " << idx << ": " << e.str();
    }
    std::set<std::vector<int64_t>> orders;
    for (const auto& t : tried) orders.insert(t.second);
    EXPECT_EQ(orders.size(), 2u) << case_name(c) << ": both tile orders with eight-row tiles";
  }
}

TEST(Registry, BuiltinsAreRegistered) {
  auto names = template_names();
  for (const char* n : {"matmul", "batch_matmul", "dense", "dense_pack", "dense_bias_relu", "conv2d_nchw",
                        "conv2d_nchwc", "depthwise_conv2d_nchw", "depthwise_conv2d_nchwc", "softmax"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_EQ(get_template("matmul").shape_doc, "M,N,K");
}

TEST(Registry, UserTemplate) {
  Template t;
  t.name = "test_scale";
  t.shape_doc = "N";
  t.check = [](const records::Workload& w) { LOOM_CHECK(w.shape.size() == 1, "test_scale: shape must be [N]"); };
  t.flop = [](const records::Workload& w) { return double(w.shape[0]); };
  t.compute = [](const records::Workload& w) {
    te::Tensor A = te::placeholder({w.shape[0]}, DataType::Float(32), "A");
    te::Tensor B = te::compute(A.shape(), [&](te::Var i) { return A(i) * 3.0f; }, "B");
    return std::vector<te::Tensor>{A, B};
  };
  t.schedule = [](ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target&) {
    cfg.split("tile", *te::as_const_int(args[1].shape()[0]), {});
    int64_t bad = cfg.choice("fail", {0, 1});
    Schedule s = create_schedule({args[1]});
    auto p = cfg.apply_split("tile", s[args[1]], s[args[1]].axis(0));
    if (bad) throw InstantiationError("test_scale rejects fail=1");
    s[args[1]].vectorize(p[1]);
    return s;
  };
  t.default_config = [](const ConfigSpace& sp) { return sp.index_of({1, 0}); };
  register_template(t);
  Task task = Task::create("test_scale", {12}, Target("llvm"));
  EXPECT_EQ(task.space().size(), 6 * 2);
  EXPECT_EQ(task.default_index(), 1);
  EXPECT_EQ(task.instantiate_default().args.size(), 2u);
  Instance inst = task.instantiate(task.space().index_of({3, 0}));
  EXPECT_MATCHES_REFERENCE(inst.schedule, inst.args);
  try {
    task.instantiate(task.space().index_of({3, 1}));
    FAIL() << "expected InstantiationError";
  } catch (const InstantiationError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("tile=[-1, 4] fail=1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rejects"), std::string::npos) << msg;
  }
}

TEST(Task, Errors) {
  try {
    Task::create("no_such_op", {1, 2}, Target("llvm"));
    FAIL() << "expected an error";
  } catch (const InstantiationError&) {
    FAIL() << "unknown op is not an instantiation error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no_such_op"), std::string::npos) << msg;
    EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;  // lists the templates
  }
  EXPECT_THROW(Task::create("matmul", {4, 4}, Target("llvm")), Error);
  EXPECT_THROW(Task::create("matmul", {4, 0, 4}, Target("llvm")), Error);
  EXPECT_THROW(Task::create("matmul", {4, 4, 4}, Target("llvm"), "int8"), Error);
  EXPECT_THROW(Task::create("conv2d_nchw", {1, 3, 2, 2, 4, 5, 5}, Target("llvm")), Error);
  EXPECT_THROW(Task::create("conv2d_nchw", {1, 3, 8, 8, 4, 3, 3}, Target("llvm"), "float32", {{"stride", "x"}}),
               Error);
  try {
    Task::create("conv2d_nchwc", {1, 24, 8, 8, 16, 3, 3}, Target("llvm"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("C=24"), std::string::npos) << e.what();
  }
  try {
    Task::create("softmax", {4, 4}, Target("cuda"));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("template 'softmax' does not support target 'cuda' (it supports: llvm)"),
              std::string::npos)
        << e.what();
  }
  try {
    Task::create("matmul", {4, 4}, Target("llvm"));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("M, N, K"), std::string::npos) << e.what();
  }
  Task t = Task::create("matmul", {8, 8, 8}, Target("llvm"));
  EXPECT_THROW(t.instantiate(t.space().size()), Error);
  EXPECT_THROW(t.instantiate(-1), Error);
  EXPECT_EQ(t.key(), t.workload().key());
  EXPECT_EQ(t.flop(), 2.0 * 8 * 8 * 8);
}

TEST(Task, MatmulDefaultIsRegisterBlocked) {
  Task t = Task::create("matmul", {1024, 1024, 1024}, Target("llvm"));
  ConfigEntity d = t.space().get(t.default_index());
  EXPECT_EQ(d.value("tile_y"), (std::vector<int64_t>{-1, 4, 8})) << d.str();
  EXPECT_EQ(d.value("tile_x"), (std::vector<int64_t>{-1, 4, 32})) << d.str();
  EXPECT_EQ(d.label("unroll_k"), "unroll");
  Instance inst = t.instantiate_default();
  std::string ir = lowering::to_string(lowering::lower(inst.schedule, inst.args, "matmul"));
  // The accumulator is a local register tile of 8 x 32 floats updated with 16-wide vectors.
  EXPECT_NE(ir.find("allocate C.local: float32[256] \"local\""), std::string::npos) << ir;
  EXPECT_NE(ir.find("C.local[ramp(240, 1, 16)] = (C.local[ramp(240, 1, 16)] + "), std::string::npos) << ir;
  EXPECT_NE(ir.find("parallel"), std::string::npos);
}

// The depthwise loop-order and unroll knobs, every combination, with tiles that divide the
// output and tiles that leave a tail, inlined padding and padding at the root.
TEST(Templates, DepthwiseLoopOrdersMatchReference) {
  for (const Case& c : {Case{"depthwise_conv2d_nchw", {1, 3, 10, 11, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
                        Case{"depthwise_conv2d_nchw", {2, 2, 9, 9, 3, 3}, {{"stride", "2"}, {"pad", "1"}}}}) {
    Task task = Task::create(c.op, c.shape, Target("llvm"), "float32", c.attrs);
    const ConfigSpace& sp = task.space();
    const int oh = sp.knob_index("tile_oh"), ow = sp.knob_index("tile_ow");
    std::set<std::vector<int64_t>> orders;
    int checked = 0;
    for (int64_t idx = 0; idx < sp.size(); ++idx) {
      std::vector<int> ch = sp.choices_of(idx);
      // Two tile shapes (the second-smallest and the largest of each knob) under both padding choices.
      const bool small_tiles = ch[size_t(oh)] == 1 && ch[size_t(ow)] == 1;
      const bool largest_tiles = ch[size_t(oh)] == int(sp.knobs()[size_t(oh)].size()) - 1 &&
                                 ch[size_t(ow)] == int(sp.knobs()[size_t(ow)].size()) - 1;
      if (!small_tiles && !largest_tiles) continue;
      ConfigEntity e = sp.get(idx);
      orders.insert(e.value("order_rows"));
      Instance inst = task.instantiate(idx);
      EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args, uint64_t(idx) + 1), "")
          << case_name(c) << " config " << idx << ": " << e.str();
      ++checked;
    }
    EXPECT_EQ(orders.size(), 3u);
    EXPECT_EQ(checked, 2 * 3 * 2 * 2 * 2) << "tile shapes × orders × unroll_rx × unroll_ry × pad_inline";
  }
}

TEST(Task, X86CodeHasNoSse4aShufflesUnlessAsked) {
  // A depthwise config on a 28-wide image with 16-lane tiles, a 12-lane tail and the padding
  // inlined, whose masks LLVM builds with SSE4a's insertq when allowed. Those legacy-encoded
  // shuffles amid 256-bit AVX code ran it 11x slower on an AMD EPYC host.
  Task t = Task::create("depthwise_conv2d_nchw", {1, 8, 28, 28, 3, 3}, Target("llvm"), "float32",
                        {{"stride", "1"}, {"pad", "1"}});
  int64_t idx = -1;
  for (int64_t i = 0; i < t.space().size() && idx < 0; ++i) {
    ConfigEntity e = t.space().get(i);
    if (e.value("tile_oh") == std::vector<int64_t>{-1, 2} && e.value("tile_ow") == std::vector<int64_t>{-1, 16} &&
        e.value("pad_inline") == std::vector<int64_t>{1} && e.label("unroll_rx") == "unroll" &&
        e.label("unroll_ry") == "none" && e.value("order_rows") == std::vector<int64_t>{0, 1, 2})
      idx = i;
  }
  ASSERT_GE(idx, 0);
  Instance inst = t.instantiate(idx);
  auto uses_sse4a = [&](const std::string& target) {
    std::string s = codegen::build(inst.schedule, inst.args, Target(target), "dw").source("asm");
    return s.find("insertq") != std::string::npos || s.find("extrq") != std::string::npos;
  };
  EXPECT_FALSE(uses_sse4a("llvm -mcpu=znver2"));
  EXPECT_FALSE(uses_sse4a("llvm -mcpu=znver3 -mattr=+avx2"));
  EXPECT_TRUE(uses_sse4a("llvm -mcpu=znver2 -mattr=+sse4a")) << "the pattern this guards against";
}

TEST(BuildBest, FallsBackToDefaultWithWarning) {
  Task t = Task::create("matmul", {30, 17, 13}, Target("llvm"));
  records::ApplyHistoryBest none;
  std::ostringstream warn;
  runtime::Module m = build_best(t, none, &warn);
  EXPECT_NE(warn.str().find("no tuning record for " + t.key() + " on " + t.target().str() +
                            "; using the default config"),
            std::string::npos)
      << warn.str();
  EXPECT_TRUE(m.get_function("matmul").defined());
}

TEST(BuildBest, UsesTheBestRecord) {
  Task t = Task::create("matmul", {30, 17, 13}, Target("llvm"));
  records::ApplyHistoryBest best;
  int64_t idx = (t.default_index() + 5) % t.space().size();
  for (int i = 0; i < 2; ++i) {
    records::Record r;
    r.workload = t.workload();
    r.target = t.target().str();
    r.flop = t.flop();
    r.config = t.space().get(i == 0 ? idx : 0).to_record();
    r.result.costs = {i == 0 ? 1e-6 : 1e-3};
    best.add(r);
  }
  std::ostringstream warn;
  runtime::Module m = build_best(t, best, &warn);
  EXPECT_EQ(warn.str(), "");
  // Run it against the reference.
  Instance inst = t.instantiate(idx);
  auto inputs = test::random_inputs(inst.args, 3);
  auto want = te::evaluate({inst.args[2]}, inputs);
  auto c = runtime::NDArray::empty({30, 17}, DataType::Float(32));
  m.get_function("matmul")(inputs.at(inst.args[0]), inputs.at(inst.args[1]), c);
  EXPECT_EQ(test::compare_arrays(c, want[0], test::tolerance_for(DataType::Float(32)), "C"), "");
  // Named otherwise, the same config builds under that name.
  EXPECT_TRUE(build_best(t, best, &warn, "my_matmul").get_function("my_matmul").defined());
}

// A log from before a template's knobs changed: the error names the record, not just the knob.
TEST(BuildBest, RecordFromAnotherSpaceIsAClearError) {
  Task t = Task::create("matmul", {30, 17, 13}, Target("llvm"));
  records::Record r;
  r.workload = t.workload();
  r.target = t.target().str();
  r.flop = t.flop();
  r.config = t.space().get(3).to_record();
  r.config.knobs.erase("unroll_k");
  r.result.costs = {1e-6};
  records::ApplyHistoryBest best;
  best.add(r);
  try {
    build_best(t, best, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("the record for " + t.key() + " on llvm (config 3) does not fit the template's config space"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("knob 'unroll_k' is missing"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace loom::tuner
