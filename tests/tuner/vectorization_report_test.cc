// The default config of every CPU template, on the workloads below, has no vector access
// that is not dense (no gather, scatter, strided or predicated load/store) except the ones
// listed with their reason. Templates are taken from the registry, so a new template fails
// here until it has a workload in kWorkloads.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "loom/loom.h"
#include "loom/tuner/task.h"

namespace loom::tuner {
namespace {

using lowering::VectorReportEntry;
using Kind = VectorReportEntry::Kind;

struct Workload {
  std::vector<int64_t> shape;
  std::map<std::string, std::string> attrs;
  std::string dtype = "float32";
};

/// Per template: a workload whose sizes the default tiles divide, and one they do not.
const std::map<std::string, std::vector<Workload>> kWorkloads = {
    {"matmul", {{{512, 512, 512}, {}}, {{100, 200, 70}, {}}}},
    {"batch_matmul", {{{4, 128, 128, 128}, {}}, {{3, 33, 50, 17}, {}}, {{12, 128, 128, 64}, {{"transpose_b", "1"}}}}},
    {"dense", {{{64, 1024, 512}, {}}, {{9, 100, 33}, {}}}},
    {"dense_pack", {{{64, 1024, 512}, {}}, {{9, 100, 33}, {}}}},
    {"dense_bias_relu", {{{64, 1024, 512}, {}}, {{9, 100, 33}, {}}}},
    {"conv2d_nchw", {{{1, 64, 56, 56, 64, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
                     {{1, 3, 30, 29, 20, 3, 3}, {{"stride", "2"}, {"pad", "1"}}}}},
    {"conv2d_nchwc", {{{1, 64, 56, 56, 64, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
                      {{1, 16, 15, 13, 32, 3, 3}, {{"stride", "2"}, {"pad", "0"}}},
                      {{1, 3, 224, 224, 64, 7, 7}, {{"stride", "2"}, {"pad", "3"}, {"ic_block", "0"}}}}},
    {"conv2d_nchwc_winograd", {{{1, 64, 56, 56, 64, 3, 3}, {{"pad", "1"}}},
                               {{1, 32, 15, 13, 16, 3, 3}, {{"pad", "1"}, {"tile_size", "4"}}},
                               {{1, 16, 9, 9, 32, 3, 3}, {{"pad", "0"}, {"tile_size", "2"}}}}},
    {"depthwise_conv2d_nchw", {{{1, 32, 112, 112, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
                               {{1, 5, 11, 10, 3, 3}, {{"stride", "2"}, {"pad", "1"}}}}},
    {"depthwise_conv2d_nchwc", {{{1, 32, 112, 112, 3, 3}, {{"stride", "1"}, {"pad", "1"}}},
                                {{1, 48, 11, 10, 3, 3}, {{"stride", "2"}, {"pad", "1"}}}}},
    {"softmax", {{{128, 1000}, {}}, {{5, 37}, {}}}},
    {"attention", {{{1, 12, 128, 128, 64}, {{"bias", "1,1,1,128"}, {"scale", "0.125"}}},
                   {{1, 4, 37, 50, 24}, {{"packed", "1"}, {"bias", "1,4,37,50"}, {"scale", "0.2"}}}}},
    {"matmul_int8", {{{256, 256, 256}, {}, "int8"}, {{13, 40, 18}, {{"out_dtype", "int8"}, {"scale", "0.01"}}, "int8"}}},
    {"conv2d_nchwc_int8", {{{1, 64, 56, 56, 64, 3, 3}, {{"stride", "1"}, {"pad", "1"}}, "int8"},
                           {{1, 16, 15, 13, 32, 3, 3}, {{"stride", "2"}, {"pad", "0"}}, "int8"}}},
};

/// Non-dense accesses a template's default config needs, by (template, stage, buffer, kind),
/// with the reason. Everything else non-dense fails the test.
struct Exception {
  std::string tmpl, stage, buffer;
  Kind kind;
  std::string reason;
};
const std::vector<Exception> kExceptions = {
    {"conv2d_nchw", "packed_kernel", "kernel", Kind::kGather,
     "the layout: packing OIHW weights into blocks of 16 output channels (innermost) reads 16 "
     "weights C*R*S apart; once per call, O(K*C*R*S) of the O(N*K*OH*OW*C*R*S) work"},
    {"conv2d_nchwc", "pad", "data", Kind::kPredicated,
     "zero padding: the lanes of the border that fall outside the input are masked"},
    {"conv2d_nchwc_winograd", "pad", "data", Kind::kPredicated,
     "zero padding, and the rows and columns that complete the last tiles: their lanes outside the input "
     "are masked"},
    {"conv2d_nchwc_int8", "pad", "data", Kind::kPredicated,
     "zero padding: the lanes of the border that fall outside the input are masked"},
    {"depthwise_conv2d_nchw", "depthwise_conv2d_nchw.local", "data", Kind::kPredicated,
     "zero padding read in place: input rows/columns outside the image are masked lanes"},
    {"depthwise_conv2d_nchw", "depthwise_conv2d_nchw.local", "data", Kind::kStrided,
     "the layout: with stride 2 adjacent output columns read every other input column (NCHW)"},
    {"depthwise_conv2d_nchwc", "depthwise_conv2d_nchwc.local", "data", Kind::kPredicated,
     "zero padding read in place: at the border a whole 16-channel vector is masked off (the "
     "condition is the same for every lane)"},
    {"attention", "q_t", "query", Kind::kGather,
     "the layout: a task transposes its block of queries (queries innermost, so that the scores "
     "are vectorized along the queries and K needs no transpose); once per task, "
     "O(block_q*head_dim) of its O(block_q*seq_kv*head_dim) work"},
    {"attention", "p_t", "bias", Kind::kGather,
     "a bias that varies along the queries is read across them (the scores are transposed: a "
     "vector is one key's column); a key mask [.., 1, seq_kv] is one broadcast element"},
    // Not forced by the layout: the packing of B clamps the column index of the last, partial
    // block with min(ramp, N-1), which is not a ramp, so the whole packing gathers when 16
    // does not divide N. A predicated (masked) load would be dense. The cost is small (one
    // pass over B, O(K*N) of O(M*N*K)); left as it is and listed here so that it is visible.
    {"matmul", "packedB", "B", Kind::kGather, "N not a multiple of 16: column index clamped to N-1 (see above)"},
    {"batch_matmul", "packedB", "B", Kind::kGather, "N not a multiple of 16: column index clamped to N-1 (see above)"},
};

/// Expected failures: non-dense accesses that come from a vector index the simplifier does
/// not yet reduce to a dense ramp (floordiv/floormod of a ramp). None of the default configs
/// above has one today; a new one goes here until the simplifier handles it (the test fails
/// when a listed access has become dense, to say that the entry can go).
const std::vector<Exception> kExpectedFailures = {};

std::string workload_name(const std::string& op, const Workload& w) {
  std::string s = op;
  for (int64_t d : w.shape) s += "_" + std::to_string(d);
  for (const auto& [k, v] : w.attrs) s += "_" + k + v;
  return s;
}

bool matches(const Exception& x, const std::string& tmpl, const VectorReportEntry& e) {
  return x.tmpl == tmpl && x.stage == e.stage && x.buffer == e.buffer && x.kind == e.kind;
}

TEST(TemplateVectorization, DefaultConfigsHaveOnlyDenseVectorAccesses) {
  int checked = 0;
  std::set<const Exception*> used;
  for (const std::string& name : template_names()) {
    // Other tests of this executable register their own templates, all named test_*.
    if (name.starts_with("test_")) continue;
    const Template& t = get_template(name);
    if (std::find(t.targets.begin(), t.targets.end(), "llvm") == t.targets.end()) continue;
    auto it = kWorkloads.find(name);
    ASSERT_NE(it, kWorkloads.end()) << "CPU template '" << name << "' has no workload in kWorkloads";
    std::vector<const Exception*> expected_seen;
    for (const Workload& w : it->second) {
      const std::string what = workload_name(name, w);
      SCOPED_TRACE(what);
      Task task = Task::create(name, w.shape, Target("llvm"), w.dtype, w.attrs);
      Instance inst = task.instantiate_default();
      lowering::VectorizationReport r;
      lowering::LowerOptions opts;
      opts.vector_report = &r;
      lowering::lower(inst.schedule, inst.args, name, opts);
      EXPECT_GT(r.vector_accesses, 0) << what << ": the default config has no vector code";
      for (const VectorReportEntry& e : r.entries) {
        if (e.kind == Kind::kScalarized) continue;  // not an access; see the next test
        bool allowed = false;
        for (const Exception& x : kExceptions) {
          if (matches(x, name, e)) {
            allowed = true;
            used.insert(&x);
          }
        }
        for (const Exception& x : kExpectedFailures) {
          if (matches(x, name, e)) {
            allowed = true;
            expected_seen.push_back(&x);
          }
        }
        EXPECT_TRUE(allowed) << what << ": " << to_string(e.kind) << " " << (e.is_store ? "store to " : "load of ")
                             << e.buffer << " in stage " << e.stage << " (" << e.note << "): " << e.index << "\n"
                             << r.to_string();
      }
      ++checked;
    }
    for (const Exception& x : kExpectedFailures) {
      if (x.tmpl != name) continue;
      EXPECT_NE(std::find(expected_seen.begin(), expected_seen.end(), &x), expected_seen.end())
          << name << ": the expected failure " << x.stage << "/" << x.buffer << " (" << to_string(x.kind)
          << ") no longer occurs; remove it from kExpectedFailures";
    }
  }
  EXPECT_GE(checked, 18);
  for (const Exception& x : kExceptions)
    EXPECT_TRUE(used.count(&x)) << x.tmpl << ": the exception " << x.stage << "/" << x.buffer << " ("
                                << to_string(x.kind) << ") no longer occurs; remove it from kExceptions";
}

/// Vector operations that the default configs compute lane by lane, by (template, stage,
/// operation as the report's note begins), with the reason.
struct ScalarizedOp {
  std::string tmpl, stage, op, reason;
};
const std::vector<ScalarizedOp> kScalarizedOps = {
    // None: float32 transcendentals are libmvec calls on x86-64 GNU/Linux (softmax's exp was
    // listed before codegen/llvm/vector_math.cc).
};

TEST(TemplateVectorization, DefaultConfigsScalarizeOnlyTheListedOperations) {
  std::set<std::tuple<std::string, std::string, std::string>> found;
  for (const std::string& name : template_names()) {
    if (name.starts_with("test_")) continue;
    const Template& t = get_template(name);
    if (std::find(t.targets.begin(), t.targets.end(), "llvm") == t.targets.end()) continue;
    auto it = kWorkloads.find(name);
    ASSERT_NE(it, kWorkloads.end()) << "CPU template '" << name << "' has no workload in kWorkloads";
    for (const Workload& w : it->second) {
      Task task = Task::create(name, w.shape, Target("llvm"), w.dtype, w.attrs);
      Instance inst = task.instantiate_default();
      lowering::VectorizationReport r;
      lowering::LowerOptions opts;
      opts.vector_report = &r;
      lowering::lower(inst.schedule, inst.args, name, opts);
      for (const VectorReportEntry& e : r.find(Kind::kScalarized)) {
        const std::string op = e.note.substr(0, e.note.find(':'));
        found.emplace(name, e.stage, op);
        bool listed = false;
        for (const ScalarizedOp& x : kScalarizedOps) listed |= x.tmpl == name && x.stage == e.stage && x.op == op;
        EXPECT_TRUE(listed) << workload_name(name, w) << ": " << e.note << " in stage " << e.stage << ": " << e.index;
      }
    }
  }
  for (const ScalarizedOp& x : kScalarizedOps)
    EXPECT_TRUE(found.count({x.tmpl, x.stage, x.op})) << x.tmpl << "/" << x.stage << ": " << x.op
                                                      << " is no longer scalarized; remove it from kScalarizedOps";
}

}  // namespace
}  // namespace loom::tuner
