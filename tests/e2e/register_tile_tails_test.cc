// Register tiles whose rows (or columns) do not divide the extent: the templates' six-row
// matmul tiles on 1000 and 1024 rows, conv2d_nchwc's column tiles on output widths they do and
// do not divide, and TVM-style user schedules (split by 6 and 7 rows). Every result is compared
// with te::evaluate; the lowered code is held to what keeps a register tile in registers:
// every local (tile) buffer has a constant size, every vector access to it is indexed only
// by constants and the variables of constant-extent loops inside its allocation (LLVM
// unrolls those), and the steady state updates each accumulator vector at a constant index
// outside any check. (A tile's last columns, where a vectorized loop is checked on its own
// lanes, run lane by lane as before: vectorize_loops does not predicate a guarded store.
// Those scalar accesses are not held to the rule.)
#include <map>
#include <set>

#include "common/test_util.h"
#include "loom/lower/ir_visitor.h"
#include "loom/te/arith.h"
#include "loom/tuner/task.h"

namespace loom {
namespace {

using lowering::AllocateNode;
using lowering::ForNode;
using lowering::IfThenElseNode;
using lowering::StoreNode;
using te::Tensor;

/// What the lowered code does with its local buffers.
struct TileFacts {
  std::vector<std::string> problems;  // vector accesses of a local buffer at a run-time index
  /// Per local buffer, the distinct indices of its vector updates (stores of a vector that
  /// reads it) under no check inside its allocation.
  std::map<std::string, std::set<std::string>> unguarded_updates;
  int checks = 0;  // IfThenElse statements in the whole function
};

class TileInspector : public lowering::IRVisitor {
 public:
  TileFacts facts;
  using lowering::IRVisitor::visit;

 protected:
  void visit_(const AllocateNode* op) override {
    if (op->scope != "local") return lowering::IRVisitor::visit_(op);
    for (const te::Expr& e : op->extents)
      if (!te::as_const_int(te::simplify(e)))
        facts.problems.push_back(fmt::format("local buffer {} has the non-constant extent {}", op->buffer_var.name(),
                                             te::to_string(e)));
    local_[op->buffer_var.get()] = {loops_.size(), guards_};
    lowering::IRVisitor::visit_(op);
    local_.erase(op->buffer_var.get());
  }
  void visit_(const ForNode* op) override {
    visit(op->min);
    visit(op->extent);
    loops_.push_back({op->loop_var.get(), te::as_const_int(op->extent).has_value()});
    visit(op->body);
    loops_.pop_back();
  }
  void visit_(const IfThenElseNode* op) override {
    ++facts.checks;
    ++guards_;
    lowering::IRVisitor::visit_(op);
    --guards_;
  }
  void visit_(const te::LoadNode* op) override {
    if (op->dtype.lanes() > 1) check_index(op->buffer_var, op->index);
    lowering::IRVisitor::visit_(op);
  }
  void visit_(const StoreNode* op) override {
    if (op->value.dtype().lanes() > 1) check_index(op->buffer_var, op->index);
    auto it = local_.find(op->buffer_var.get());
    if (it != local_.end() && guards_ == it->second.guards && op->value.dtype().lanes() > 1 &&
        reads(op->value, op->buffer_var))
      facts.unguarded_updates[op->buffer_var.name()].insert(te::to_string(op->index));
    lowering::IRVisitor::visit_(op);
  }

 private:
  static bool reads(const te::Expr& e, const te::Var& buffer) {
    bool found = false;
    te::post_order_visit(e, [&](const te::Expr& x) {
      if (const auto* l = x.as<te::LoadNode>(); l && l->buffer_var.same_as(buffer)) found = true;
    });
    return found;
  }
  void check_index(const te::Var& buffer, const te::Expr& index) {
    auto it = local_.find(buffer.get());
    if (it == local_.end()) return;
    te::post_order_visit(index, [&](const te::Expr& x) {
      const auto* v = x.as<te::VarNode>();
      if (!v) return;
      for (size_t i = it->second.loops; i < loops_.size(); ++i)
        if (loops_[i].first == v && loops_[i].second) return;
      facts.problems.push_back(fmt::format("{}[{}] depends on {}, no constant-extent loop inside its allocation",
                                           buffer.name(), te::to_string(index), v->name));
    });
  }

  struct Scope {
    size_t loops;  // depth of loops_ at the allocation
    int guards;    // checks around the allocation
  };
  std::map<const te::VarNode*, Scope> local_;
  std::vector<std::pair<const te::VarNode*, bool>> loops_;  // enclosing loops, constant extent or not
  int guards_ = 0;
};

TileFacts inspect(const schedule::Schedule& s, const std::vector<Tensor>& args) {
  TileInspector t;
  lowering::LowerOptions opts;
  opts.skip_packed_api = true;  // the argument checks are no part of the kernel
  t.visit(lowering::lower(s, args, "f", opts).body);
  return t.facts;
}

/// Every local buffer is a register tile; `accumulators` vectors are updated in the steady state.
void expect_register_tiles(const TileFacts& f, size_t accumulators, const std::string& what) {
  EXPECT_TRUE(f.problems.empty()) << what << ": " << f.problems.size() << " problem(s), the first: " << f.problems[0];
  ASSERT_EQ(f.unguarded_updates.size(), 1u) << what << ": expected one local accumulator buffer";
  const std::set<std::string>& updates = f.unguarded_updates.begin()->second;
  EXPECT_EQ(updates.size(), accumulators) << what << ": " << fmt::format("{}", fmt::join(updates, "  "));
}

// ---------------------------------------------------------------- the matmul template

/// The configs of `task` with a `rows`-row tile and the given columns, k tile and unrolling,
/// one per distinct tile_y.
std::vector<int64_t> six_row_configs(const tuner::Task& task, int64_t cols) {
  std::vector<int64_t> out;
  std::set<std::vector<int64_t>> seen;
  for (int64_t idx = 0; idx < task.space().size(); ++idx) {
    tuner::ConfigEntity e = task.space().get(idx);
    const std::vector<int64_t> ty = e.value("tile_y");
    if (ty.back() != 6 || e.value("tile_x") != std::vector<int64_t>{-1, 1, cols} ||
        e.value("tile_k").back() != 4 || e.label("unroll_k") != "unroll" || !seen.insert(ty).second)
      continue;
    out.push_back(idx);
  }
  return out;
}

TEST(RegisterTileTails, MatmulSixRowTilesOn1000And1024Rows) {
  // 1000 = 166·6 + 4 and 1024 = 170·6 + 4 rows; 64 columns in one 64-wide tile, K = 16.
  for (int64_t m : {1000, 1024}) {
    tuner::Task task = tuner::Task::create("matmul", {m, 64, 16}, Target("llvm"));
    std::vector<int64_t> configs = six_row_configs(task, 64);
    ASSERT_GE(configs.size(), 3u) << "matmul " << m << " has too few six-row tiles";
    for (int64_t idx : configs) {
      tuner::Instance inst = task.instantiate(idx);
      const std::string what = fmt::format("matmul {}x64x16 config {} ({})", m, idx, task.space().get(idx).str());
      EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args, uint64_t(idx)), "") << what;
      expect_register_tiles(inspect(inst.schedule, inst.args), 6 * 4, what);
    }
  }
}

TEST(RegisterTileTails, MatmulSixRowTileAt1024Cubed) {
  // The bench config of docs/benchmarks.md (rows [-1, 8, 6], columns [-1, 1, 64], k unrolled
  // by 4), lowered only: its steady state holds 6 x 4 accumulator vectors in registers.
  for (int64_t m : {1000, 1024}) {
    tuner::Task task = tuner::Task::create("matmul", {m, m, m}, Target("llvm"));
    int64_t found = -1;
    for (int64_t idx : six_row_configs(task, 64))
      if (task.space().get(idx).value("tile_y") == std::vector<int64_t>{-1, 8, 6}) found = idx;
    ASSERT_GE(found, 0);
    tuner::Instance inst = task.instantiate(found);
    expect_register_tiles(inspect(inst.schedule, inst.args), 6 * 4, fmt::format("matmul {}^3 config {}", m, found));
  }
}

// ---------------------------------------------------------------- the conv2d_nchwc template

TEST(RegisterTileTails, ConvTilesThatDoAndDoNotDivide) {
  // 3x3, pad 1, 16 -> 32 channels. Output widths 56 and 28: tile_ow 14 and 8 divide 56, 8
  // leaves 4 columns of 28; 5 rows in tiles of 2 leave one row, the row tile loop fused with
  // the channel blocks into the parallel loop.
  struct ConvCase {
    int64_t height, width, oh, ow;
  };
  for (ConvCase c : {ConvCase{4, 56, 1, 14}, ConvCase{4, 56, 1, 8}, ConvCase{4, 28, 1, 14}, ConvCase{4, 28, 1, 8},
                     ConvCase{5, 28, 2, 8}}) {
    tuner::Task task = tuner::Task::create("conv2d_nchwc", {1, 16, c.height, c.width, 32, 3, 3}, Target("llvm"),
                                           "float32", {{"pad", "1"}, {"stride", "1"}});
    int64_t found = -1;
    for (int64_t idx = 0; idx < task.space().size() && found < 0; ++idx) {
      tuner::ConfigEntity e = task.space().get(idx);
      if (e.value("tile_ow").back() == c.ow && e.value("tile_oc").back() == 1 && e.value("tile_oh").back() == c.oh &&
          e.label("unroll_rci") == "unroll")
        found = idx;
    }
    ASSERT_GE(found, 0) << "conv OW " << c.width << " has no tile_ow " << c.ow;
    tuner::Instance inst = task.instantiate(found);
    const std::string what =
        fmt::format("conv {}x{} config {} ({})", c.height, c.width, found, task.space().get(found).str());
    EXPECT_EQ(test::compare_with_reference(inst.schedule, inst.args, uint64_t(found)), "") << what;
    expect_register_tiles(inspect(inst.schedule, inst.args), size_t(c.oh * c.ow), what);
  }
}

// ---------------------------------------------------------------- user schedules

struct Gemm {
  Tensor A, B, C;
  schedule::Schedule s;
  std::vector<Tensor> args() const { return {A, B, C}; }
};

/// TVM's blocked GEMM with a register tile: C's rows split by `rows` and columns by 32, the
/// accumulator tile (cache_write "local") computed at the column tile, its rows and column
/// vectors unrolled, 16 lanes vectorized. `fused` fuses the row and column tile loops.
Gemm tile_gemm(int64_t m, int64_t n, int64_t k, int64_t rows, bool fused) {
  Gemm g;
  g.A = te::placeholder({m, k}, DataType::Float(32), "A");
  g.B = te::placeholder({k, n}, DataType::Float(32), "B");
  te::IterVar r = te::reduce_axis({0, k}, "k");
  g.C = te::compute({m, n}, [&](te::Var i, te::Var j) { return te::sum(g.A(i, r) * g.B(r, j), {r}); }, "C");
  g.s = create_schedule({g.C});
  Tensor CC = g.s.cache_write(g.C, "local");
  schedule::Stage c = g.s[g.C], acc = g.s[CC];
  auto [io, ii] = c.split(c.axis(0), rows);
  auto [jo, ji] = c.split(c.axis(1), 32);
  c.reorder({io, jo, ii, ji});
  auto [jio, jii] = c.split(ji, 16);
  (void)jio;
  c.vectorize(jii);
  te::IterVar at = jo;
  if (fused) at = c.fuse(io, jo);
  c.parallel(fused ? at : io);
  acc.compute_at(c, at);
  auto [xo, xi] = acc.split(acc.axis(1), 16);
  acc.reorder({acc.reduce_axis(0), acc.axis(0), xo, xi});
  acc.unroll(acc.axis(0));
  acc.unroll(xo);
  acc.vectorize(xi);
  return g;
}

TEST(RegisterTileTails, UserGemmSplitBy6And7) {
  // 1000 = 166·6 + 4 = 142·7 + 6 and 1024 = 170·6 + 4 = 146·7 + 2 rows; 80 columns leave a
  // 16-column tail of the 32-column tiles.
  for (int64_t m : {1000, 1024}) {
    for (int64_t rows : {6, 7}) {
      for (bool fused : {false, true}) {
        Gemm g = tile_gemm(m, 80, 12, rows, fused);
        const std::string what = fmt::format("{}x80x12 rows {}{}", m, rows, fused ? " fused" : "");
        EXPECT_MATCHES_REFERENCE(g.s, g.args()) << what;
        TileFacts f = inspect(g.s, g.args());
        expect_register_tiles(f, size_t(rows * 2), what);
        // The tile loop is not fused: the last row tile is one iteration of known place,
        // with its own constant extent and no checks at all.
        if (!fused) EXPECT_EQ(f.checks, 0) << what << "\n" << lowering::lower(g.s, g.args(), "f");
      }
    }
  }
}

TEST(RegisterTileTails, UserConvColumnTileOf6) {
  // conv2d_nchwc with a register tile of 6 output columns x 16 channels: OW 56 = 9·6 + 2 and
  // 28 = 4·6 + 4 leave tails.
  for (int64_t width : {56, 28}) {
    Tensor data = te::placeholder({1, 1, 3, width, 16}, DataType::Float(32), "data");
    Tensor kernel = te::placeholder({2, 1, 3, 3, 16, 16}, DataType::Float(32), "kernel");
    Tensor out = te::ops::conv2d_nchwc(data, kernel, {1, 1}, {1, 1});
    schedule::Schedule s = create_schedule({out});
    Tensor CC = s.cache_write(out, "local");
    schedule::Stage o = s[out], acc = s[CC];
    auto [owo, owi] = o.split(o.axis(3), 6);
    o.reorder({o.axis(0), o.axis(1), o.axis(2), owo, owi, o.axis(4)});
    o.vectorize(o.axis(4));
    o.parallel(o.fuse(o.axis(1), o.axis(2)));
    acc.compute_at(o, owo);
    std::vector<te::IterVar> order{acc.axis(0), acc.axis(1), acc.axis(2)};
    for (int i = 0; i < 4; ++i) order.push_back(acc.reduce_axis(i));
    order.insert(order.end(), {acc.axis(3), acc.axis(4)});
    acc.reorder(order);
    acc.unroll(acc.axis(3));
    acc.vectorize(acc.axis(4));
    const std::string what = fmt::format("conv OW {} tile 6", width);
    std::vector<Tensor> args{data, kernel, out};
    EXPECT_MATCHES_REFERENCE(s, args) << what;
    expect_register_tiles(inspect(s, args), 6, what);
  }
}

}  // namespace
}  // namespace loom
