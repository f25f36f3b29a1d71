// Unit tests of the loop IR and the lowering passes, on statements built by hand.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {
namespace {

using te::make;

const DataType f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);

Var buf(const std::string& name) { return Var(name, DataType::Handle()); }
Expr load(const Var& b, Expr idx, DataType t = f32) { return make<te::LoadNode>(t, b, std::move(idx), Expr()); }
Stmt store(const Var& b, Expr v, Expr idx) { return make_stmt<StoreNode>(b, std::move(v), std::move(idx), Expr()); }
Stmt loop(const Var& v, Expr mn, Expr ext, Stmt body, ForKind k = ForKind::kSerial) {
  return make_stmt<ForNode>(v, std::move(mn), std::move(ext), k, std::move(body));
}
Expr likely(Expr c) { return te::call(DataType::Bool(), "likely", {std::move(c)}); }

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

template <typename Node>
int count_nodes(const Stmt& s) {
  int n = 0;
  post_order_visit(s, [&](const Stmt& x) { n += x.as<Node>() != nullptr; });
  return n;
}

template <typename Node>
std::vector<const Node*> find_nodes(const Stmt& s) {
  std::vector<const Node*> out;
  post_order_visit(s, [&](const Stmt& x) {
    if (const auto* n = x.as<Node>()) out.push_back(n);
  });
  return out;
}

int count_expr_nodes(const Stmt& s, te::ExprKind k) {
  struct V : IRVisitor {
    te::ExprKind k;
    int n = 0;
    using IRVisitor::visit;
    void visit(const Expr& e) override {
      if (e.defined() && e.kind() == k) ++n;
      IRVisitor::visit(e);
    }
  } v;
  v.k = k;
  v.visit(s);
  return v.n;
}

// ---------------------------------------------------------------- stmt basics
TEST(Stmt, SeqFlattensAndNoOp) {
  Var A = buf("A");
  Stmt a = store(A, 1.0f, 0), b = store(A, 2.0f, 1);
  Stmt s = seq({a, seq({b, Stmt()}), Stmt()});
  ASSERT_NE(s.as<SeqStmtNode>(), nullptr);
  EXPECT_EQ(s.as<SeqStmtNode>()->seq.size(), 2u);
  EXPECT_TRUE(seq({a}).same_as(a));
  EXPECT_TRUE(is_no_op(no_op()));
  EXPECT_TRUE(is_no_op(seq({no_op(), no_op()})));
  EXPECT_FALSE(is_no_op(a));
  auto al = make_stmt<AllocateNode>(A, f32, std::vector<Expr>{Expr(4), Expr(8)}, "global", a);
  EXPECT_EQ(te::as_const_int(te::simplify(al.as<AllocateNode>()->size())), 32);
}

TEST(Stmt, PrintsIndentedLoops) {
  Var C = buf("C"), A = buf("A");
  Var io("i.outer"), ii("i.inner");
  Stmt s = loop(io, 0, 32, loop(ii, 0, 32, store(C, load(A, io * 32 + ii) + 1.0f, io * 32 + ii)), ForKind::kParallel);
  std::string text = to_string(s);
  EXPECT_NE(text.find("for (i.outer, 0, 32) parallel {"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  for (i.inner, 0, 32) {"), std::string::npos) << text;
  EXPECT_NE(text.find("    C["), std::string::npos) << text;

  LoweredFunc f;
  f.name = "addone";
  Tensor ta = te::placeholder({1024}, f32, "A");
  f.args.push_back({"A", Var("A_handle", DataType::Handle()), A, f32, {1024}, ta});
  f.body = s;
  std::string ft = to_string(f);
  EXPECT_EQ(ft.rfind("func addone(A: float32[1024]) {", 0), 0u) << ft;
}

TEST(IRMutator, KeepsUnchangedAndSubstitutes) {
  Var A = buf("A"), i("i"), n("n");
  Stmt s = loop(i, 0, n, store(A, load(A, i) * 2.0f, i));
  struct Identity : IRMutator {};
  Identity id;
  EXPECT_TRUE(id.mutate(s).same_as(s));
  Stmt t = substitute(s, {{n.get(), Expr(16)}});
  EXPECT_FALSE(t.same_as(s));
  EXPECT_EQ(te::as_const_int(t.as<ForNode>()->extent), 16);
  // Buffer variables are substituted in loads and stores alike.
  Var B = buf("B");
  Stmt u = substitute(s, {{A.get(), B}});
  std::string text = to_string(u);
  EXPECT_EQ(count(text, "A["), 0) << text;
  EXPECT_EQ(count(text, "B["), 2) << text;
}

// ---------------------------------------------------------------- simplify
TEST(Simplify, RemovesProvableBranchesAndTrivialLoops) {
  Var A = buf("A"), i("i"), j("j"), k("k");
  Stmt guarded = make_stmt<IfThenElseNode>(likely(i < 20), store(A, 1.0f, i), Stmt());
  Stmt s = seq({loop(i, 0, 16, guarded), loop(j, 5, 1, store(A, 2.0f, j + 1)), loop(k, 0, 0, store(A, 3.0f, k))});
  Stmt r = simplify(s);
  std::string text = to_string(r);
  EXPECT_EQ(count_nodes<IfThenElseNode>(r), 0) << text;
  EXPECT_EQ(count_nodes<ForNode>(r), 1) << text;
  EXPECT_NE(text.find("A[6] = 2"), std::string::npos) << text;
  EXPECT_EQ(text.find("3f"), std::string::npos) << text;
}

TEST(Simplify, KeepsUndecidedBranch) {
  Var A = buf("A"), i("i");
  Stmt s = loop(i, 0, 32, make_stmt<IfThenElseNode>(likely(i < 20), store(A, 1.0f, i), Stmt()));
  EXPECT_EQ(count_nodes<IfThenElseNode>(simplify(s)), 1);
}

// ---------------------------------------------------------------- storage_flatten
TEST(StorageFlatten, RealizeBecomesAllocateWithRowMajorIndex) {
  Tensor A = te::placeholder({4, 8}, f32, "A");
  Tensor T = te::compute({4, 8}, [&](te::Var i, te::Var j) { return A(i, j) * 2.0f; }, "T");
  Tensor B = te::compute({4, 8}, [&](te::Var i, te::Var j) { return T(i, j) + 1.0f; }, "B");
  Var i("i"), j("j");
  Stmt prodT = loop(i, 0, 4, loop(j, 0, 8, make_stmt<ProducerStoreNode>(T, A(i, j) * 2.0f, std::vector<Expr>{i, j})));
  Stmt prodB = loop(i, 0, 4, loop(j, 0, 8, make_stmt<ProducerStoreNode>(B, T(i, j) + 1.0f, std::vector<Expr>{i, j})));
  Stmt s = make_stmt<ProducerRealizeNode>(T, std::vector<Range>{Range(0, 4), Range(0, 8)}, "global", seq({prodT, prodB}));
  s = make_stmt<ProducerRealizeNode>(B, std::vector<Range>{Range(0, 4), Range(0, 8)}, "global", s);
  Var a_data = buf("A"), b_data = buf("B");
  std::vector<BufferArg> args = {{"A", Var("A_h", DataType::Handle()), a_data, f32, {4, 8}, A},
                                 {"B", Var("B_h", DataType::Handle()), b_data, f32, {4, 8}, B}};
  Stmt r = storage_flatten(s, args);
  auto allocs = find_nodes<AllocateNode>(r);
  ASSERT_EQ(allocs.size(), 1u) << r;
  EXPECT_EQ(allocs[0]->buffer_var.name(), "T");
  EXPECT_EQ(te::as_const_int(te::simplify(allocs[0]->size())), 32);
  EXPECT_EQ(count_nodes<ProducerStoreNode>(r), 0);
  EXPECT_EQ(count_expr_nodes(r, te::ExprKind::ProducerLoad), 0);
  auto stores = find_nodes<StoreNode>(r);
  ASSERT_EQ(stores.size(), 2u);
  for (const StoreNode* st : stores) {
    // index = i*8 + j: check by evaluating at i=2, j=3.
    Expr idx = te::simplify(te::substitute(st->index, {{i.get(), Expr(2)}, {j.get(), Expr(3)}}));
    EXPECT_EQ(te::as_const_int(idx), 19) << st->index;
  }
  EXPECT_TRUE(stores[1]->buffer_var.same_as(b_data) || stores[0]->buffer_var.same_as(b_data));
  std::string text = to_string(r);
  EXPECT_NE(text.find("A["), std::string::npos) << text;
}

TEST(StorageFlatten, OffsetBoundsAlignAndScope) {
  Tensor A = te::placeholder({64, 64}, f32, "A");
  Tensor T = te::compute({64, 64}, [&](te::Var i, te::Var j) { return A(i, j); }, "T");
  Var i("i"), j("j");
  // Realize rows [10, 14) and columns [0, 8), row stride padded so that stride % 16 == 1.
  Stmt body = loop(i, 10, 4, loop(j, 0, 8, make_stmt<ProducerStoreNode>(T, A(i, j), std::vector<Expr>{i, j})));
  auto realize = std::make_shared<ProducerRealizeNode>(T, std::vector<Range>{Range(10, 4), Range(0, 8)}, "shared", body);
  realize->align = {{16, 1}, {0, 0}};
  Var a_data = buf("A");
  Stmt r = storage_flatten(Stmt(realize), {{"A", Var("A_h", DataType::Handle()), a_data, f32, {64, 64}, A}});
  const auto* attr = r.as<AttrStmtNode>();
  ASSERT_NE(attr, nullptr) << r;
  EXPECT_EQ(attr->key, attr::kStorageScope);
  const auto* al = attr->body.as<AllocateNode>();
  ASSERT_NE(al, nullptr);
  EXPECT_EQ(al->scope, "shared");
  EXPECT_EQ(te::as_const_int(te::simplify(al->size())), 4 * 17);
  auto stores = find_nodes<StoreNode>(r);
  ASSERT_EQ(stores.size(), 1u);
  Expr idx = te::simplify(te::substitute(stores[0]->index, {{i.get(), Expr(12)}, {j.get(), Expr(5)}}));
  EXPECT_EQ(te::as_const_int(idx), 2 * 17 + 5);
}

TEST(StorageFlatten, UnknownTensorIsAnError) {
  Tensor A = te::placeholder({4}, f32, "A");
  Tensor T = te::compute({4}, [&](te::Var i) { return A(i); }, "T");
  Var i("i");
  Stmt s = loop(i, 0, 4, make_stmt<ProducerStoreNode>(T, A(i), std::vector<Expr>{i}));
  EXPECT_THROW(storage_flatten(s, {}), Error);
}

TEST(StorageFlatten, MultiOutputTensorsGetOwnBuffers) {
  Tensor A = te::placeholder({8}, f32, "A");
  auto outs = te::compute_multi({8}, [&](const std::vector<te::Var>& v) {
    return std::vector<Expr>{A(v[0]) + 1.0f, A(v[0]) * 2.0f};
  }, "M");
  ASSERT_EQ(outs.size(), 2u);
  Var i("i");
  Stmt body = loop(i, 0, 8, seq({make_stmt<ProducerStoreNode>(outs[0], A(i) + 1.0f, std::vector<Expr>{i}),
                                 make_stmt<ProducerStoreNode>(outs[1], outs[0](i) * 2.0f, std::vector<Expr>{i})}));
  Stmt s = make_stmt<ProducerRealizeNode>(outs[1], std::vector<Range>{Range(0, 8)}, "global", body);
  s = make_stmt<ProducerRealizeNode>(outs[0], std::vector<Range>{Range(0, 8)}, "global", s);
  Stmt r = storage_flatten(s, {{"A", Var("A_h", DataType::Handle()), buf("A"), f32, {8}, A}});
  auto allocs = find_nodes<AllocateNode>(r);
  ASSERT_EQ(allocs.size(), 2u) << r;
  EXPECT_FALSE(allocs[0]->buffer_var.same_as(allocs[1]->buffer_var));
  EXPECT_NE(allocs[0]->buffer_var.name(), allocs[1]->buffer_var.name());
}

// ---------------------------------------------------------------- loop_partition
TEST(LoopPartition, SplitsOuterLoopOfGuardedTile) {
  Var A = buf("A"), B = buf("B"), io("io"), ii("ii");
  Expr idx = io * 32 + ii;
  Stmt body = make_stmt<IfThenElseNode>(likely(idx < 1000), store(B, load(A, idx) * 2.0f, idx), Stmt());
  Stmt s = loop(io, 0, 32, loop(ii, 0, 32, body, ForKind::kVectorized), ForKind::kParallel);
  Stmt r = loop_partition(s);
  std::string text = to_string(r);
  const auto* sq = r.as<SeqStmtNode>();
  ASSERT_NE(sq, nullptr) << text;
  const auto* main = sq->seq[0].as<ForNode>();
  ASSERT_NE(main, nullptr) << text;
  EXPECT_EQ(te::as_const_int(main->extent), 31) << text;
  EXPECT_EQ(main->for_kind, ForKind::kParallel);
  EXPECT_EQ(count_nodes<IfThenElseNode>(sq->seq[0]), 0) << text;
  const auto* inner = main->body.as<ForNode>();
  ASSERT_NE(inner, nullptr) << text;
  EXPECT_EQ(te::as_const_int(inner->extent), 32);
  // The edge keeps exactly the elements 992..999.
  int stores_in_edge = 0;
  for (size_t k = 1; k < sq->seq.size(); ++k) stores_in_edge += count_nodes<StoreNode>(sq->seq[k]);
  EXPECT_GE(stores_in_edge, 1) << text;
}

TEST(LoopPartition, InnerLoopWithConstantBound) {
  Var A = buf("A"), i("i");
  Stmt body = make_stmt<IfThenElseNode>(likely(i >= 3 && i < 60), store(A, 1.0f, i), Stmt());
  Stmt r = loop_partition(loop(i, 0, 64, body));
  std::string text = to_string(r);
  // The edges only hold iterations where the guard is false, so they vanish.
  const auto* main = r.as<ForNode>();
  ASSERT_NE(main, nullptr) << text;
  EXPECT_EQ(te::as_const_int(main->min), 3) << text;
  EXPECT_EQ(te::as_const_int(main->extent), 57) << text;
  EXPECT_EQ(count(text, "likely"), 0) << text;

  // With an else branch the edges keep the branch.
  Stmt with_else = make_stmt<IfThenElseNode>(likely(i < 60), store(A, 1.0f, i), store(A, 2.0f, i));
  Stmt r2 = loop_partition(loop(i, 0, 64, with_else));
  const auto* sq = r2.as<SeqStmtNode>();
  ASSERT_NE(sq, nullptr) << r2;
  ASSERT_EQ(sq->seq.size(), 2u) << r2;
  EXPECT_EQ(te::as_const_int(sq->seq[0].as<ForNode>()->extent), 60) << r2;
  EXPECT_EQ(count_nodes<IfThenElseNode>(sq->seq[0]), 0) << r2;
  EXPECT_NE(to_string(sq->seq[1]).find("A[i] = 2f"), std::string::npos) << r2;
}

TEST(LoopPartition, LeavesNonlinearConditions) {
  Var A = buf("A"), i("i");
  Stmt body = make_stmt<IfThenElseNode>(likely(i * i < 100), store(A, 1.0f, i), Stmt());
  Stmt r = loop_partition(loop(i, 0, 64, body));
  EXPECT_EQ(count_nodes<ForNode>(r), 1);
  EXPECT_EQ(count_nodes<IfThenElseNode>(r), 1);
}

TEST(LoopPartition, ShortLoopWithNoCheckFreeIterationIsPeeled) {
  // Two tiles of 28 columns over a 56-wide padded row, each touching one edge of the image:
  // no iteration of the tile loop is free of checks, so each becomes its body at a constant
  // and the checks fold there.
  Var A = buf("A"), o("o"), w("w"), r("r");
  Expr col = o * 28 + w + r - 1;
  Stmt body = make_stmt<IfThenElseNode>(col >= 0 && col < 56, store(A, 1.0f, o * 28 + w), Stmt());
  Stmt nest = loop(o, 0, 2, loop(w, 0, 28, loop(r, 0, 3, body, ForKind::kUnrolled), ForKind::kUnrolled));
  Stmt peeled = loop_partition(nest);
  std::string text = to_string(peeled);
  for (const ForNode* f : find_nodes<ForNode>(peeled)) EXPECT_NE(f->loop_var.get(), o.get()) << text;
  EXPECT_EQ(text.find("o *"), std::string::npos) << text;
  // A parallel loop stays one: its iterations are the threads' work.
  Stmt par = loop_partition(loop(o, 0, 2, loop(w, 0, 28, loop(r, 0, 3, body, ForKind::kUnrolled), ForKind::kUnrolled),
                                 ForKind::kParallel));
  EXPECT_NE(to_string(par).find("for (o, 0, 2) parallel"), std::string::npos) << par;
}

// A register tile of 6 rows over 1000 rows (tile loop io, 167 tiles), as schedule_ops makes it:
// the tile T is a local buffer, its rows an unrolled loop over [base, base + 6) guarded by
// the rows' bound, then (with `copy_out`) a serial loop copying the tile out. `base` picks the
// tile.
Stmt six_row_tile(const Var& A, const Var& C, const Var& T, const Expr& base, const std::string& scope = "local",
                  bool copy_out = true) {
  Var i("i"), r("r");
  Stmt acc = loop(i, base, 6,
                  make_stmt<IfThenElseNode>(likely(i < 1000), store(T, load(T, i - base) + load(A, i), i - base), Stmt()),
                  ForKind::kUnrolled);
  Stmt out = loop(r, 0, 6, make_stmt<IfThenElseNode>(likely(base + r < 1000), store(C, load(T, r), base + r), Stmt()));
  return make_stmt<AllocateNode>(T, f32, std::vector<Expr>{Expr(6)}, scope, copy_out ? seq({acc, out}) : acc);
}

std::vector<int64_t> extents_of(const Stmt& s, ForKind k) {
  std::vector<int64_t> out;
  for (const ForNode* f : find_nodes<ForNode>(s))
    if (f->for_kind == k) out.push_back(te::as_const_int(f->extent).value_or(-1));
  return out;
}

TEST(LoopPartition, RowGuardOfARegisterTilePartitionsTheTileLoop) {
  Var A = buf("A"), C = buf("C"), T = buf("T"), io("io");
  Stmt r = loop_partition(loop(io, 0, 167, six_row_tile(A, C, T, io * 6), ForKind::kParallel));
  std::string text = to_string(r);
  // The guard i < 1000 on the inner rows splits io: 166 full tiles without checks, then the
  // last tile (rows 996..999) with its own constant extent 4, unrolled and copied out.
  const auto* sq = r.as<SeqStmtNode>();
  ASSERT_NE(sq, nullptr) << text;
  ASSERT_EQ(sq->seq.size(), 2u) << text;
  const auto* main = sq->seq[0].as<ForNode>();
  ASSERT_NE(main, nullptr) << text;
  EXPECT_EQ(te::as_const_int(main->extent), 166) << text;
  EXPECT_EQ(main->for_kind, ForKind::kParallel);
  EXPECT_EQ(extents_of(sq->seq[0], ForKind::kUnrolled), std::vector<int64_t>{6}) << text;
  EXPECT_EQ(extents_of(sq->seq[0], ForKind::kSerial), std::vector<int64_t>{6}) << text;
  EXPECT_EQ(extents_of(sq->seq[1], ForKind::kUnrolled), std::vector<int64_t>{4}) << text;
  EXPECT_EQ(extents_of(sq->seq[1], ForKind::kSerial), std::vector<int64_t>{4}) << text;
  EXPECT_EQ(count_nodes<IfThenElseNode>(r), 0) << text;
  for (const AllocateNode* a : find_nodes<AllocateNode>(r)) EXPECT_EQ(te::as_const_int(a->extents[0]), 6) << text;

  // Without the copy, io appears in no check at all: only the relaxed rows guard splits it.
  Stmt rows_only = loop_partition(loop(io, 0, 167, six_row_tile(A, C, T, io * 6, "local", false)));
  const auto* parts = rows_only.as<SeqStmtNode>();
  ASSERT_NE(parts, nullptr) << rows_only;
  ASSERT_EQ(parts->seq.size(), 2u) << rows_only;
  EXPECT_EQ(te::as_const_int(parts->seq[0].as<ForNode>()->extent), 166) << rows_only;
  EXPECT_EQ(extents_of(parts->seq[0], ForKind::kUnrolled), std::vector<int64_t>{6}) << rows_only;
  EXPECT_EQ(extents_of(parts->seq[1], ForKind::kUnrolled), std::vector<int64_t>{4}) << rows_only;
  EXPECT_EQ(count_nodes<IfThenElseNode>(rows_only), 0) << rows_only;
}

TEST(LoopPartition, TilesPastTheExtentAreDropped) {
  // 170 tiles of 6 rows over 1000 rows (a split whose outer loop was sized for more): tiles
  // 167..169 check rows that all fail, and are left without a statement.
  Var A = buf("A"), C = buf("C"), T = buf("T"), io("io");
  Stmt r = loop_partition(loop(io, 0, 170, six_row_tile(A, C, T, io * 6)));
  EXPECT_EQ(count_nodes<StoreNode>(r), 4) << "the full tiles and the last partial one: " << r;
  EXPECT_EQ(count_nodes<IfThenElseNode>(r), 0) << r;
  EXPECT_EQ(extents_of(r, ForKind::kUnrolled), (std::vector<int64_t>{6, 4})) << r;
  // Nor is their tile allocated: an empty allocation would be hoisted to the function's entry.
  EXPECT_EQ(count_nodes<AllocateNode>(r), 2) << r;
}

TEST(LoopPartition, TileLoopFusedWithAnotherIsVersioned) {
  // The tile loop fused with two column blocks: the tile is floordiv(f, 2), every second
  // iteration of the last tile is partial, so no range of f can be split off; the body is
  // versioned on the whole tile's guard instead.
  Var A = buf("A"), C = buf("C"), T = buf("T"), f("f");
  Stmt r = loop_partition(loop(f, 0, 334, six_row_tile(A, C, T, te::floordiv(f, 2) * 6), ForKind::kParallel));
  std::string text = to_string(r);
  const auto* fl = r.as<ForNode>();
  ASSERT_NE(fl, nullptr) << text;
  EXPECT_EQ(te::as_const_int(fl->extent), 334) << text;
  const auto* branch = fl->body.as<IfThenElseNode>();
  ASSERT_NE(branch, nullptr) << text;
  EXPECT_NE(to_string(branch->condition).find("likely"), std::string::npos) << text;
  ASSERT_TRUE(branch->else_case.defined()) << text;
  // Full tiles: no checks; the last tile keeps them, around loops of the same constant extents.
  EXPECT_EQ(count_nodes<IfThenElseNode>(branch->then_case), 0) << text;
  EXPECT_EQ(count_nodes<IfThenElseNode>(branch->else_case), 2) << text;
  for (const Stmt& version : {branch->then_case, branch->else_case}) {
    EXPECT_EQ(extents_of(version, ForKind::kUnrolled), std::vector<int64_t>{6}) << text;
    EXPECT_EQ(extents_of(version, ForKind::kSerial), std::vector<int64_t>{6}) << text;
  }
}

TEST(LoopPartition, TileLoopsKeepConstantExtents) {
  Var A = buf("A"), C = buf("C"), T = buf("T"), x("x");
  // A tile whose position x is not a loop here: its unrolled rows and the serial loop that
  // indexes the local tile keep the extent 6 and their checks.
  Stmt r = loop_partition(six_row_tile(A, C, T, x * 6));
  EXPECT_EQ(extents_of(r, ForKind::kUnrolled), std::vector<int64_t>{6}) << r;
  EXPECT_EQ(extents_of(r, ForKind::kSerial), std::vector<int64_t>{6}) << r;
  EXPECT_EQ(count_nodes<IfThenElseNode>(r), 2) << r;
  // Where the tile's place is known, the tail gets its own constant extent.
  Stmt known = loop_partition(six_row_tile(A, C, T, Expr(996)));
  EXPECT_EQ(extents_of(known, ForKind::kUnrolled), std::vector<int64_t>{4}) << known;
  EXPECT_EQ(extents_of(known, ForKind::kSerial), std::vector<int64_t>{4}) << known;
  EXPECT_EQ(count_nodes<IfThenElseNode>(known), 0) << known;
  // A serial loop over a buffer in memory may be split anywhere.
  Stmt global = loop_partition(six_row_tile(A, C, T, x * 6, "global"));
  std::vector<int64_t> split = extents_of(global, ForKind::kSerial);
  EXPECT_NE(std::find(split.begin(), split.end(), -1), split.end()) << global;
}

// ---------------------------------------------------------------- specialize_partial_tiles
TEST(SpecializePartialTiles, VersionsTheTileLoopOnFullTiles) {
  Var A = buf("A"), f("f"), r("r"), j("j");
  // Tiles of 4 over 18 positions, the tile loop fused with 5 rows: the last tile of a row is
  // every 5th iteration, so loop_partition cannot peel it.
  Expr x = 18 - te::floormod(f, 5) * 4;
  Expr ext = te::min(x, Expr(4));
  Stmt tile = loop(j, 0, ext, store(A, 1.0f, te::floordiv(f, 5) * 18 + te::floormod(f, 5) * 4 + j), ForKind::kUnrolled);
  Stmt s = loop(f, 0, 25, loop(r, 0, 3, tile), ForKind::kParallel);
  Stmt out = specialize_partial_tiles(s);
  std::string text = to_string(out);
  const auto* fl = out.as<ForNode>();
  ASSERT_NE(fl, nullptr) << text;
  EXPECT_EQ(fl->for_kind, ForKind::kParallel);
  const auto* branch = fl->body.as<IfThenElseNode>();
  ASSERT_NE(branch, nullptr) << "the version belongs right inside the tile loop: " << text;
  // Full tiles: the unrolled loop has the constant extent 4; the rest keeps min(x, 4).
  auto full_loops = find_nodes<ForNode>(branch->then_case);
  ASSERT_EQ(full_loops.size(), 2u) << text;
  EXPECT_EQ(te::as_const_int(full_loops[0]->extent), 4) << text;
  EXPECT_EQ(count_expr_nodes(branch->then_case, te::ExprKind::Min), 0) << text;
  EXPECT_EQ(count_expr_nodes(branch->else_case, te::ExprKind::Min), 1) << text;
  EXPECT_NE(text.find("likely"), std::string::npos) << text;
}

TEST(SpecializePartialTiles, VersionsWhereTheExtentIsFixed) {
  Var A = buf("A"), i("i"), r("r"), j("j");
  // min(r + i, 4) changes with r, so the version goes inside the r loop, not the i loop.
  Stmt tile = loop(j, 0, te::min(r + i, Expr(4)), store(A, 1.0f, i * 8 + j), ForKind::kUnrolled);
  Stmt out = specialize_partial_tiles(loop(i, 0, 8, loop(r, 0, 3, tile)));
  const auto* outer = out.as<ForNode>();
  ASSERT_NE(outer, nullptr) << out;
  const auto* inner = outer->body.as<ForNode>();
  ASSERT_NE(inner, nullptr) << out;
  EXPECT_NE(inner->body.as<IfThenElseNode>(), nullptr) << out;
  EXPECT_EQ(count_nodes<IfThenElseNode>(out), 1) << out;
  // A serial loop with a partial extent is not worth copying the body for.
  Stmt serial = loop(i, 0, 8, loop(j, 0, te::min(10 - i, Expr(4)), store(A, 1.0f, i * 8 + j)));
  EXPECT_EQ(count_nodes<IfThenElseNode>(specialize_partial_tiles(serial)), 0);
}

// ---------------------------------------------------------------- vectorize_loops
TEST(Vectorize, RampLoadsAndStores) {
  Var A = buf("A"), B = buf("B"), i("i"), j("j");
  Stmt s = loop(i, 0, 4, loop(j, 0, 8, store(B, load(A, i * 8 + j) + 1.0f, i * 8 + j), ForKind::kVectorized));
  Stmt r = vectorize_loops(s);
  std::string text = to_string(r);
  EXPECT_EQ(count_nodes<ForNode>(r), 1) << text;
  auto stores = find_nodes<StoreNode>(r);
  ASSERT_EQ(stores.size(), 1u);
  const auto* ramp = stores[0]->index.as<te::RampNode>();
  ASSERT_NE(ramp, nullptr) << text;
  EXPECT_EQ(ramp->lanes, 8);
  EXPECT_TRUE(te::is_one(ramp->stride)) << text;
  EXPECT_EQ(stores[0]->value.dtype(), f32.with_lanes(8));
  const auto* add = stores[0]->value.as<te::AddNode>();
  ASSERT_NE(add, nullptr) << text;
  const auto* ld = add->a.as<te::LoadNode>();
  ASSERT_NE(ld, nullptr) << text;
  EXPECT_NE(ld->index.as<te::RampNode>(), nullptr) << text;
  EXPECT_NE(add->b.as<te::BroadcastNode>(), nullptr) << text;
}

TEST(Vectorize, ReductionAndVectorBranchScalarize) {
  Var A = buf("A"), C = buf("C"), i("i"), k("k");
  Stmt red = loop(k, 0, 8, store(C, load(C, i) + load(A, i * 8 + k), i), ForKind::kVectorized);
  Stmt r = vectorize_loops(red);
  ASSERT_NE(r.as<ForNode>(), nullptr) << r;
  EXPECT_EQ(r.as<ForNode>()->for_kind, ForKind::kSerial);
  EXPECT_EQ(count_expr_nodes(r, te::ExprKind::Ramp), 0);

  Stmt branch = loop(k, 0, 8, make_stmt<IfThenElseNode>(k < 5, store(C, 1.0f, k), Stmt()), ForKind::kVectorized);
  Stmt r2 = vectorize_loops(branch);
  ASSERT_NE(r2.as<ForNode>(), nullptr);
  EXPECT_EQ(r2.as<ForNode>()->for_kind, ForKind::kSerial);

  Var n("n");
  Stmt sym = loop(k, 0, n, store(C, 1.0f, k), ForKind::kVectorized);
  Stmt r3 = vectorize_loops(sym);
  ASSERT_NE(r3.as<ForNode>(), nullptr);
  EXPECT_EQ(r3.as<ForNode>()->for_kind, ForKind::kSerial);
}

TEST(Vectorize, IntrinsicsAndSelectsWiden) {
  Var A = buf("A"), B = buf("B"), i("i");
  Expr v = te::select(i < 3, te::exp(load(A, i)), 0.0f);
  Stmt r = vectorize_loops(loop(i, 0, 4, store(B, v, i), ForKind::kVectorized));
  auto stores = find_nodes<StoreNode>(r);
  ASSERT_EQ(stores.size(), 1u) << r;
  EXPECT_EQ(stores[0]->value.dtype(), f32.with_lanes(4)) << r;
  EXPECT_EQ(count_nodes<ForNode>(r), 0);
}

TEST(Vectorize, LetBecomesVectorAndInnerLoopStays) {
  Var A = buf("A"), B = buf("B"), i("i"), k("k"), x("x");
  Stmt body = make_stmt<LetStmtNode>(x, i * 2, loop(k, 0, 3, store(B, load(A, x + k), i * 3 + k)));
  // B[i*3 + k] with i vectorized has stride 3: a strided ramp, still one store per lane.
  Stmt r = vectorize_loops(loop(i, 0, 4, body, ForKind::kVectorized));
  auto lets = find_nodes<LetStmtNode>(r);
  ASSERT_EQ(lets.size(), 1u) << r;
  EXPECT_EQ(lets[0]->var.dtype(), i32.with_lanes(4)) << r;
  auto stores = find_nodes<StoreNode>(r);
  ASSERT_EQ(stores.size(), 1u);
  const auto* ramp = stores[0]->index.as<te::RampNode>();
  ASSERT_NE(ramp, nullptr) << r;
  EXPECT_EQ(te::as_const_int(ramp->stride), 3) << r;
  EXPECT_EQ(count_nodes<ForNode>(r), 1) << r;
}

// ---------------------------------------------------------------- unroll_loops
TEST(Unroll, CopiesBody) {
  Var A = buf("A"), i("i"), j("j");
  Stmt r = unroll_loops(loop(i, 0, 4, store(A, 1.0f, i * 2), ForKind::kUnrolled));
  auto stores = find_nodes<StoreNode>(r);
  ASSERT_EQ(stores.size(), 4u) << r;
  for (int k = 0; k < 4; ++k) EXPECT_EQ(te::as_const_int(stores[k]->index), 2 * k) << r;
  EXPECT_EQ(count_nodes<ForNode>(r), 0);

  Var n("n");
  Stmt sym = unroll_loops(loop(i, 0, n, store(A, 1.0f, i), ForKind::kUnrolled));
  ASSERT_NE(sym.as<ForNode>(), nullptr);
  EXPECT_EQ(sym.as<ForNode>()->for_kind, ForKind::kSerial);

  auto f = std::make_shared<ForNode>(j, 0, 3, ForKind::kSerial, store(A, 1.0f, j));
  f->annotations["pragma_unroll_explicit"] = Expr(1);
  EXPECT_EQ(count_nodes<StoreNode>(unroll_loops(Stmt(f))), 3);

  Stmt small = loop(i, 0, 8, loop(j, 0, 2, store(A, 1.0f, i * 2 + j)));
  Stmt ra = unroll_loops(small, 4);
  EXPECT_EQ(count_nodes<ForNode>(ra), 1) << ra;
  EXPECT_EQ(count_nodes<StoreNode>(ra), 2) << ra;
  EXPECT_EQ(count_nodes<ForNode>(unroll_loops(small, 0)), 2);
}

// ---------------------------------------------------------------- remove_no_op
TEST(RemoveNoOp, DropsUselessStatements) {
  Var A = buf("A"), i("i"), x("x"), y("y");
  Stmt self = store(A, load(A, i + 1), i + 1);
  Stmt keep = store(A, load(A, i), i + 1);
  Stmt s = seq({loop(i, 0, 8, self), loop(i, 0, 8, keep), make_stmt<LetStmtNode>(x, Expr(3), store(A, 1.0f, 0)),
                make_stmt<LetStmtNode>(y, Expr(3), store(A, 1.0f, y)),
                make_stmt<IfThenElseNode>(x < 2, no_op(), no_op())});
  Stmt r = remove_no_op(s);
  std::string text = to_string(r);
  EXPECT_EQ(count_nodes<ForNode>(r), 1) << text;
  EXPECT_EQ(count_nodes<LetStmtNode>(r), 1) << text;
  EXPECT_EQ(count_nodes<IfThenElseNode>(r), 0) << text;
  EXPECT_EQ(count_nodes<StoreNode>(r), 3) << text;
}

// ---------------------------------------------------------------- storage_rewrite
TEST(StorageRewrite, ReusesDeadTemporaries) {
  Var A = buf("A"), T1 = buf("T1"), T2 = buf("T2"), T3 = buf("T3"), O = buf("O"), i("i");
  auto produce = [&](const Var& dst, const Var& src) { return loop(i, 0, 16, store(dst, load(src, i) + 1.0f, i)); };
  // T1 → T2 → T3 → O: T3 can live in T1's memory.
  Stmt s3 = make_stmt<AllocateNode>(T3, f32, std::vector<Expr>{Expr(16)}, "global",
                                    seq({produce(T3, T2), produce(O, T3)}));
  Stmt s2 = make_stmt<AllocateNode>(T2, f32, std::vector<Expr>{Expr(16)}, "global", seq({produce(T2, T1), s3}));
  Stmt s1 = make_stmt<AllocateNode>(T1, f32, std::vector<Expr>{Expr(16)}, "global", seq({produce(T1, A), s2}));
  Stmt r = storage_rewrite(s1);
  std::string text = to_string(r);
  EXPECT_EQ(count_nodes<AllocateNode>(r), 2) << text;
  EXPECT_EQ(count(text, "T3"), 0) << text;
  EXPECT_EQ(count_nodes<StoreNode>(r), 4) << text;

  // Overlapping lifetimes keep separate buffers.
  Stmt both = make_stmt<AllocateNode>(
      T1, f32, std::vector<Expr>{Expr(16)}, "global",
      make_stmt<AllocateNode>(T2, f32, std::vector<Expr>{Expr(16)}, "global",
                              seq({produce(T1, A), produce(T2, A), loop(i, 0, 16, store(O, load(T1, i) + load(T2, i), i))})));
  EXPECT_EQ(count_nodes<AllocateNode>(storage_rewrite(both)), 2);
}

// ---------------------------------------------------------------- make_packed_api
TEST(MakePackedApi, ChecksEveryArgument) {
  Tensor ta = te::placeholder({1024, 512}, f32, "A");
  Var a_data = buf("A"), a_h("A_handle", DataType::Handle()), i("i");
  LoweredFunc f;
  f.name = "matmul";
  f.args.push_back({"A", a_h, a_data, f32, {1024, 512}, ta});
  f.body = loop(i, 0, 4, store(a_data, 0.0f, i));
  LoweredFunc p = make_packed_api(f);
  EXPECT_TRUE(p.packed);
  std::string text = to_string(p);
  EXPECT_NE(text.find("matmul: argument 0 ('A') is null"), std::string::npos) << text;
  EXPECT_NE(text.find("dimension 1 must be 512"), std::string::npos) << text;
  EXPECT_NE(text.find("must be float32"), std::string::npos) << text;
  EXPECT_NE(text.find("loom.dltensor_strides_is_null"), std::string::npos) << text;
  EXPECT_NE(text.find("loom.dltensor_byte_offset"), std::string::npos) << text;
  EXPECT_NE(text.find("loom.handle_to_int"), std::string::npos) << text;
  auto lets = find_nodes<LetStmtNode>(p.body);
  ASSERT_EQ(lets.size(), 1u);
  EXPECT_TRUE(lets[0]->var.same_as(a_data));
  EXPECT_GE(count_nodes<AssertStmtNode>(p.body), 10);
  EXPECT_THROW(make_packed_api(p), Error);
}

}  // namespace
}  // namespace loom::lowering
