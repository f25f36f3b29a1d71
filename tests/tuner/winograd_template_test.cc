// The "conv2d_nchwc_winograd" template: its default config and random configs compiled and
// run on a weight transformed by te::ops::winograd_weight_transform, compared with
// te::evaluate of the direct te::ops::conv2d_nchwc on the untransformed kernel (F(2) and
// F(4); outputs the tile does and does not divide; padding 0, 1, 2); a fused bias + relu
// epilogue under the default config and under a config of blocks of tile rows; workloads it
// rejects, with the reason.
#include <gtest/gtest.h>

#include <random>

#include "common/test_util.h"
#include "loom/tuner/fused.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

using te::Tensor;

/// The compiled kernel's float32 sums run in another order than te::evaluate's (which rounds
/// each stage to float32 too), and F(4)'s transforms scale terms by up to ~10: on inputs in
/// [-1, 1] with at most 32 input channels the results agree to 1e-4 absolute + 1e-4 relative.
constexpr test::Tolerance kTol{1e-4, 1e-4};

std::vector<te::Expr> exprs(const std::vector<int64_t>& s) {
  std::vector<te::Expr> e;
  for (int64_t d : s) e.push_back(te::Expr(int(d)));
  return e;
}

int64_t attr_or(const std::map<std::string, std::string>& a, const std::string& k, int64_t d) {
  auto it = a.find(k);
  return it == a.end() ? d : std::stoll(it->second);
}

/// Data, kernel, its transform U and the direct convolution (te::evaluate) of a workload.
struct Direct {
  runtime::NDArray x, g, u, want;
  Tensor tx, tg;
};

Direct direct_conv(const std::vector<int64_t>& shape, const std::map<std::string, std::string>& attrs,
                   uint64_t seed, const std::function<Tensor(const Tensor&)>& epilogue = nullptr,
                   Tensor* bias = nullptr) {
  const int64_t N = shape[0], C = shape[1], H = shape[2], W = shape[3], K = shape[4];
  const int64_t ib = attr_or(attrs, "ic_block", 16), ob = attr_or(attrs, "oc_block", 16);
  const int64_t m = attr_or(attrs, "tile_size", 4), pad = attr_or(attrs, "pad", 0);
  Direct d;
  d.tx = te::placeholder(exprs({N, C / ib, H, W, ib}), DataType::Float(32), "x");
  d.tg = te::placeholder(exprs({K / ob, C / ib, 3, 3, ib, ob}), DataType::Float(32), "g");
  std::vector<Tensor> ins{d.tx, d.tg};
  if (bias) ins.push_back(*bias);
  auto in = test::random_inputs(ins, seed);
  d.x = in.at(d.tx);
  d.g = in.at(d.tg);
  d.u = te::evaluate({te::ops::winograd_weight_transform(d.tg, m)}, {{d.tg, d.g}})[0];
  Tensor y = te::ops::conv2d_nchwc(d.tx, d.tg, {1, 1}, {pad, pad});
  if (epilogue) y = epilogue(y);
  d.want = te::evaluate({y}, in)[0];
  return d;
}

/// Runs `m`'s "f" on `inputs` into a fresh output of `want`'s shape; "" if it matches.
std::string run_and_compare(const runtime::Module& mod, std::vector<runtime::NDArray> inputs,
                            const runtime::NDArray& want) {
  auto out = runtime::NDArray::empty(want.shape(), DataType::Float(32));
  for (int64_t i = 0; i < out.numel(); ++i) out.set(i, 12345);
  std::vector<DLTensor*> dl;
  inputs.push_back(out);
  for (auto& a : inputs) dl.push_back(a.dltensor());
  mod.get_function("f").call(dl);
  return test::compare_arrays(out, want, kTol, "output");
}

struct Case {
  std::vector<int64_t> shape;
  std::map<std::string, std::string> attrs;
  std::string what;
};

const Case kCases[] = {
    {{1, 16, 8, 8, 32, 3, 3}, {{"pad", "1"}, {"tile_size", "4"}}, "F(4), 8x8 output in whole tiles, K=32"},
    {{1, 16, 8, 8, 32, 3, 3}, {{"pad", "1"}, {"tile_size", "2"}}, "F(2), 8x8 output in whole tiles"},
    {{1, 16, 9, 10, 16, 3, 3}, {{"pad", "1"}, {"tile_size", "2"}}, "F(2), 9x10: a row of tiles cropped"},
    {{1, 16, 7, 7, 16, 3, 3}, {{"pad", "1"}, {"tile_size", "4"}}, "F(4), 7x7: cropped both ways"},
    {{2, 8, 7, 6, 8, 3, 3}, {{"pad", "0"}, {"tile_size", "4"}, {"ic_block", "8"}, {"oc_block", "8"}},
     "F(4), no padding, 5x4, N=2, blocks of 8"},
    {{1, 32, 5, 6, 16, 3, 3}, {{"pad", "2"}, {"tile_size", "4"}}, "F(4), pad 2, two input blocks"},
};

TEST(WinogradTemplate, DefaultAndRandomConfigsMatchTheDirectConvolution) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.what);
    Task task = Task::create("conv2d_nchwc_winograd", c.shape, Target("llvm"), "float32", c.attrs);
    EXPECT_GT(task.space().size(), 1);
    EXPECT_EQ(task.flop(), 2.0 * c.shape[0] * c.shape[4] * c.shape[1] * 9 *
                               (c.shape[2] + 2 * attr_or(c.attrs, "pad", 0) - 2) *
                               (c.shape[3] + 2 * attr_or(c.attrs, "pad", 0) - 2));
    Direct d = direct_conv(c.shape, c.attrs, 11);
    std::vector<int64_t> indices{task.default_index()};
    std::mt19937_64 rng(uint64_t(c.shape[2] * 100 + c.shape[3]));
    for (int i = 0; i < 4; ++i) indices.push_back(int64_t(rng() % uint64_t(task.space().size())));
    int built = 0;
    for (int64_t idx : indices) {
      Instance inst;
      try {
        inst = task.instantiate(idx);
      } catch (const InstantiationError& e) {
        // Register tiles with more accumulators than the target has registers are rejected.
        EXPECT_NE(idx, task.default_index()) << e.what();
        EXPECT_NE(std::string(e.what()).find("accumulators exceeds"), std::string::npos) << e.what();
        continue;
      }
      ++built;
      runtime::Module mod = build(inst.schedule, inst.args, Target("llvm"), "f");
      EXPECT_EQ(run_and_compare(mod, {d.x, d.u}, d.want), "") << "config " << idx << ": " << task.space().get(idx).str();
    }
    EXPECT_GE(built, 3);
  }
}

TEST(WinogradTemplate, EveryTileRowsBlockingMatches) {
  // tile_rows 0 (each phase over the image) and every block of rows of tiles: 3 rows of F(2)
  // tiles on a 6x5 output.
  const Case c{{1, 16, 6, 5, 16, 3, 3}, {{"pad", "1"}, {"tile_size", "2"}}, ""};
  Task task = Task::create("conv2d_nchwc_winograd", c.shape, Target("llvm"), "float32", c.attrs);
  Direct d = direct_conv(c.shape, c.attrs, 5);
  std::set<int64_t> rows;
  for (int64_t idx = 0; idx < task.space().size(); ++idx) {
    ConfigEntity e = task.space().get(idx);
    const int64_t r = e.value("tile_rows").back();
    if (rows.count(r)) continue;
    Instance inst;
    try {
      inst = task.instantiate(idx);
    } catch (const InstantiationError&) {
      continue;
    }
    rows.insert(r);
    EXPECT_EQ(run_and_compare(build(inst.schedule, inst.args, Target("llvm"), "f"), {d.x, d.u}, d.want), "")
        << e.str();
  }
  EXPECT_EQ(rows, (std::set<int64_t>{0, 1, 3}));
}

/// A fused group: conv2d_nchwc_winograd with a bias input, then relu, as the compile step
/// composes it from the registry.
TEST(WinogradTemplate, FusedBiasReluEpilogueMatchesTheDirectConvolution) {
  const std::vector<int64_t> shape{1, 16, 9, 7, 32, 3, 3};
  const std::map<std::string, std::string> attrs{{"pad", "1"}};  // tile_size 4, the default
  Tensor tb = te::placeholder(exprs({32}), DataType::Float(32), "bias");
  Direct d = direct_conv(
      shape, attrs, 21,
      [&](const Tensor& y) { return te::ops::relu(te::ops::bias_add(y, tb, 1, "NCHW16c")); }, &tb);
  auto bias = test::random_inputs({d.tx, d.tg, tb}, 21).at(tb);

  // The kernel as the graph hands it over: the Winograd conv (with its bias) and a relu.
  FusedKernel g;
  const te::ops::Attrs a{{"padding", std::vector<int64_t>{1, 1}}};
  g.graph.inputs = {te::ops::TensorType{{1, 1, 9, 7, 16}, DataType::Float(32), ""},
                    te::ops::TensorType{{6, 6, 2, 1, 16, 16}, DataType::Float(32), ""},
                    te::ops::TensorType{{32}, DataType::Float(32), ""}};
  g.anchor = 0;
  g.graph.outputs = {g.graph.add("relu", {g.graph.add("conv2d_nchwc_winograd", {0, 1, 2}, a)})};

  Task task = Task::create("conv2d_nchwc_winograd", shape, Target("llvm"), "float32", attrs);
  FusedSchedule fs = schedule_fused(g, Target("llvm"));
  EXPECT_EQ(fs.source, ScheduleSource::kDefault) << fs.note;
  // The strategy leaves tile_size 4 out, as `loom tune` without --attr tile_size=4 does.
  EXPECT_EQ(fs.workload_key, "conv2d_nchwc_winograd(1,16,9,7,32,3,3;float32;pad=1)");
  EXPECT_EQ(fs.workload_key, task.key());
  EXPECT_EQ(run_and_compare(build(fs.schedule, fs.args, Target("llvm"), "f"), {d.x, d.u, bias}, d.want), "");

  // A tuned record with blocks of one row of tiles schedules the fused kernel too.
  int64_t blocked = -1;
  for (int64_t idx = 0; idx < task.space().size() && blocked < 0; ++idx) {
    if (task.space().get(idx).value("tile_rows").back() != 1) continue;
    try {
      task.instantiate(idx);
      blocked = idx;
    } catch (const InstantiationError&) {
    }
  }
  ASSERT_GE(blocked, 0);
  records::Record r;
  r.workload = task.workload();
  r.target = task.target().str();
  r.config = task.space().get(blocked).to_record();
  r.result.costs = {1e-6};
  records::ApplyHistoryBest best;
  best.add(r);
  fs = schedule_fused(g, Target("llvm"), &best);
  EXPECT_EQ(fs.source, ScheduleSource::kTuned) << fs.note;
  EXPECT_EQ(fs.config_index, blocked);
  EXPECT_EQ(run_and_compare(build(fs.schedule, fs.args, Target("llvm"), "f"), {d.x, d.u, bias}, d.want), "");
}

void expect_task_error(const std::vector<int64_t>& shape, const std::map<std::string, std::string>& attrs,
                       const std::vector<std::string>& parts) {
  try {
    Task::create("conv2d_nchwc_winograd", shape, Target("llvm"), "float32", attrs);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(WinogradTemplate, RejectsWhatItCannotComputeAndSaysWhy) {
  expect_task_error({1, 16, 8, 8, 16, 5, 5}, {{"pad", "2"}}, {"conv2d_nchwc_winograd", "3x3", "got 5x5"});
  expect_task_error({1, 16, 8, 8, 16, 1, 1}, {}, {"conv2d_nchwc_winograd", "got 1x1"});
  expect_task_error({1, 16, 8, 8, 16, 3, 3}, {{"pad", "1"}, {"stride", "2"}}, {"stride 1", "stride 2"});
  expect_task_error({1, 16, 8, 8, 16, 3, 3}, {{"pad", "3"}}, {"pad", "[0, 2]", "3"});
  expect_task_error({1, 16, 8, 8, 16, 3, 3}, {{"tile_size", "7"}}, {"tile_size", "[2, 6]", "7"});
  expect_task_error({1, 24, 8, 8, 16, 3, 3}, {}, {"C=24", "ic_block=16"});
}

TEST(WinogradTemplate, IsRegisteredWithATunableSpace) {
  auto names = template_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "conv2d_nchwc_winograd"), names.end());
  EXPECT_TRUE(static_cast<bool>(get_template("conv2d_nchwc_winograd").schedule_epilogue));
  Task task = Task::create("conv2d_nchwc_winograd", {1, 64, 56, 56, 64, 3, 3}, Target("llvm"), "float32",
                           {{"pad", "1"}});
  EXPECT_GT(task.space().size(), 100);
  ConfigEntity e = task.space().get(task.default_index());
  for (const char* knob : {"tile_k", "tile_p", "tile_rows", "gemm_order", "unroll_rci"})
    EXPECT_NO_THROW(e.value(knob)) << knob;
  EXPECT_NO_THROW(task.instantiate_default());
  EXPECT_EQ(task.key(), "conv2d_nchwc_winograd(1,64,56,56,64,3,3;float32;pad=1)");
}

}  // namespace
}  // namespace loom::tuner
