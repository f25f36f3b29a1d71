// Every schedule primitive, compiled and compared with te::evaluate, on shapes that do and
// do not divide the factors, for the dtypes the operation supports.
#include "common/test_util.h"

namespace loom {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

struct Shape3 {
  int m, n, k;
};
// The first divides every factor used below (4, 8, 16); the others do not.
const Shape3 kShapes[] = {{32, 32, 16}, {30, 17, 13}, {7, 5, 3}};

struct Matmul {
  Tensor A, B, C;
  IterVar k;
};
Matmul make_matmul(Shape3 s, DataType dt = DataType::Float(32)) {
  Matmul mm;
  mm.A = te::placeholder({s.m, s.k}, dt, "A");
  mm.B = te::placeholder({s.k, s.n}, dt, "B");
  mm.k = te::reduce_axis({0, s.k}, "k");
  IterVar k = mm.k;
  Tensor A = mm.A, B = mm.B;
  mm.C = te::compute({s.m, s.n}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
  return mm;
}

Tensor elemwise(Tensor A, const char* name = "D") {
  return te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) * 2 + 1; }, name);
}

class Primitive : public ::testing::TestWithParam<Shape3> {};

TEST_P(Primitive, Default) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, SplitByFactor) {
  for (int f : {1, 4, 8, 64}) {
    auto mm = make_matmul(GetParam());
    Schedule s = create_schedule({mm.C});
    auto [io, ii] = s[mm.C].split(s[mm.C].axis(0), f);
    auto [ko, ki] = s[mm.C].split(mm.k, f);
    (void)io, (void)ii, (void)ko, (void)ki;
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C})) << "factor " << f;
  }
}

TEST_P(Primitive, SplitByNparts) {
  for (int p : {1, 3, 8}) {
    auto mm = make_matmul(GetParam());
    Schedule s = create_schedule({mm.C});
    s[mm.C].split_nparts(s[mm.C].axis(1), p);
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C})) << "nparts " << p;
  }
}

TEST_P(Primitive, FuseAndSplitFused) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  IterVar f = s[mm.C].fuse(s[mm.C].axis(0), s[mm.C].axis(1));
  s[mm.C].split(f, 8);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, ReorderReductionOutside) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  s[mm.C].reorder({mm.k, s[mm.C].axis(0), s[mm.C].axis(1)});
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, TileReorderVectorizeParallelUnroll) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  auto [io, jo, ii, ji] = s[mm.C].tile(s[mm.C].axis(0), s[mm.C].axis(1), 8, 16);
  auto [ko, ki] = s[mm.C].split(mm.k, 4);
  s[mm.C].reorder({io, jo, ko, ki, ii, ji});
  s[mm.C].vectorize(ji);
  s[mm.C].unroll(ki);
  s[mm.C].parallel(io);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, VectorizeElementwise) {
  for (DataType dt : {DataType::Float(32), DataType::Int(32), DataType::Float(16), DataType::Int(8)}) {
    Shape3 sh = GetParam();
    Tensor A = te::placeholder({sh.m, sh.n}, dt, "A");
    Tensor D = elemwise(A);
    Schedule s = create_schedule({D});
    auto [jo, ji] = s[D].split(s[D].axis(1), 8);
    (void)jo;
    s[D].vectorize(ji);
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, D})) << dt.str();
  }
}

TEST_P(Primitive, VectorizeStridedLoads) {
  // Lanes reading every s-th element (a dense load and a shuffle up to stride 4, a gather
  // beyond), the last lane of the last row on A's last element.
  for (DataType dt : {DataType::Float(32), DataType::Int(8)}) {
    for (int st : {2, 3, 5}) {
      Shape3 sh = GetParam();
      const int off = (st - 1) / 2;
      Tensor A = te::placeholder({sh.m, (sh.n - 1) * st + 1 + off}, dt, "A");
      Tensor D = te::compute({sh.m, sh.n}, [&](Var i, Var j) { return A(i, j * st) * 3 + A(i, j * st + off); }, "D");
      Schedule s = create_schedule({D});
      auto [jo, ji] = s[D].split(s[D].axis(1), 8);
      (void)jo;
      s[D].vectorize(ji);
      EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, D})) << dt.str() << " stride " << st;
    }
  }
}

TEST_P(Primitive, ParallelFused) {
  Shape3 sh = GetParam();
  Tensor A = te::placeholder({sh.m, sh.n}, DataType::Float(32), "A");
  Tensor D = elemwise(A);
  Schedule s = create_schedule({D});
  s[D].parallel(s[D].fuse(s[D].axis(0), s[D].axis(1)));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, D}));
}

TEST_P(Primitive, UnrollAndPragmaUnrollExplicit) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  auto [jo, ji] = s[mm.C].split(s[mm.C].axis(1), 4);
  s[mm.C].unroll(ji);
  s[mm.C].pragma(jo, "pragma_unroll_explicit", 1);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, ComputeAtInlineRoot) {
  Shape3 sh = GetParam();
  for (int variant = 0; variant < 4; ++variant) {
    Tensor A = te::placeholder({sh.m, sh.n}, DataType::Float(32), "A");
    Tensor B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) + 1; }, "B");
    Tensor C = te::compute(A.shape(), [&](Var i, Var j) {
      return B(i, j) * B(i, te::max(j - 1, 0)); }, "C");
    Schedule s = create_schedule({C});
    auto [io, ii] = s[C].split(s[C].axis(0), 4);
    auto [jo, ji] = s[C].split(s[C].axis(1), 8);
    s[C].reorder({io, jo, ii, ji});
    if (variant == 0) s[B].compute_at(s[C], jo);
    if (variant == 1) s[B].compute_at(s[C], io);
    if (variant == 2) s[B].compute_inline();
    if (variant == 3) { s[B].compute_at(s[C], ii); s[B].compute_root(); }
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, C})) << "variant " << variant;
  }
}

TEST_P(Primitive, CacheWriteComputeAt) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  Tensor CL = s.cache_write(mm.C, "local");
  auto [io, jo, ii, ji] = s[mm.C].tile(s[mm.C].axis(0), s[mm.C].axis(1), 8, 8);
  (void)io, (void)ii;
  s[mm.C].vectorize(ji);
  s[CL].compute_at(s[mm.C], jo);
  auto [ko, ki] = s[CL].split(s[CL].reduce_axis(0), 4);
  s[CL].reorder({ko, s[CL].axis(0), ki, s[CL].axis(1)});
  s[CL].vectorize(s[CL].axis(1));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, CacheReadComputeAt) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  Tensor AA = s.cache_read(mm.A, "global", std::vector<Tensor>{mm.C});
  auto [ko, ki] = s[mm.C].split(mm.k, 4);
  s[mm.C].reorder({s[mm.C].axis(0), ko, s[mm.C].axis(1), ki});
  (void)ki;
  s[AA].compute_at(s[mm.C], ko);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, Rfactor) {
  auto mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  auto [ko, ki] = s[mm.C].split(mm.k, 4);
  (void)ko;
  Tensor CF = s.rfactor(mm.C, ki);
  (void)CF;
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

TEST_P(Primitive, StorageAlign) {
  Shape3 sh = GetParam();
  Tensor A = te::placeholder({sh.m, sh.n}, DataType::Float(32), "A");
  Tensor B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) + 1; }, "B");
  Tensor C = te::compute(A.shape(), [&](Var i, Var j) { return B(i, j) * 3; }, "C");
  Schedule s = create_schedule({C});
  s[B].storage_align(s[B].axis(0), 16, 1);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, C}));
}

TEST_P(Primitive, StorageOrder) {
  // B stored transposed (and padded), computed per row block of C.
  Shape3 sh = GetParam();
  Tensor A = te::placeholder({sh.m, sh.n}, DataType::Float(32), "A");
  Tensor B = te::compute(A.shape(), [&](Var i, Var j) { return A(i, j) + 1; }, "B");
  Tensor C = te::compute(A.shape(), [&](Var i, Var j) { return B(i, j) * 3 + B(i, (j + 1) % sh.n); }, "C");
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 4);
  (void)ii;
  s[B].compute_at(s[C], io);
  s[B].storage_order({s[B].axis(1), s[B].axis(0)});
  s[B].storage_align(s[B].axis(1), 4, 1);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, C}));
  lowering::LoweredFunc f = lowering::lower(s, {A, C}, "f");
  // The row block of B is 4 rows by n columns, stored n-major: B[i, j] at j * 5 + i - (its first row).
  EXPECT_NE(lowering::to_string(f.body).find("B[(((j*5) + i)"), std::string::npos) << f.body;
}

TEST_P(Primitive, ComputePadded) {
  // Tiles of 8 rows, columns and reduction steps whether or not they divide the shape: the
  // cache of A and the accumulator are computed padded (A read as 0 past its shape), so only
  // C's store is guarded.
  Matmul mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  Tensor AA = s.cache_read(mm.A, "global", std::vector<Tensor>{mm.C});
  Tensor CC = s.cache_write(mm.C, "local");
  auto st = s[mm.C];
  auto [io, ii] = st.split(st.axis(0), 8);
  auto [jo, ji] = st.split(st.axis(1), 8);
  st.reorder({io, jo, ii, ji});
  s[CC].compute_at(st, jo);
  auto [ko, ki] = s[CC].split(s[CC].reduce_axis(0), 8);
  s[CC].reorder({ko, ki, s[CC].axis(0), s[CC].axis(1)});
  s[CC].compute_padded(te::make_const(DataType::Float(32), 0.0));
  s[AA].compute_at(s[CC], ko);
  s[AA].compute_padded(te::make_const(DataType::Float(32), 0.0));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
  // A padded stage reading a stage that is not padded is refused at lowering.
  Schedule bad = create_schedule({mm.C});
  Tensor AB = bad.cache_read(mm.A, "global", std::vector<Tensor>{mm.C});
  Tensor CB = bad.cache_write(mm.C, "local");
  bad[CB].compute_padded(te::make_const(DataType::Float(32), 0.0));
  (void)AB;
  try {
    lowering::lower(bad, {mm.A, mm.B, mm.C}, "f");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is computed padded but reads stage 'A.global'"), std::string::npos)
        << e.what();
  }
}

TEST_P(Primitive, IntegerAndMixedDtypes) {
  for (DataType dt : {DataType::Int(32), DataType::Int(8), DataType::UInt(8), DataType::Float(16), DataType::Int(64)}) {
    auto mm = make_matmul(GetParam(), dt);
    Schedule s = create_schedule({mm.C});
    auto [jo, ji] = s[mm.C].split(s[mm.C].axis(1), 4);
    (void)jo;
    s[mm.C].vectorize(ji);
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C})) << dt.str();
  }
}

// Register tiles under a fused, parallel tile loop: where the tiles do not divide the shape,
// specialize_partial_tiles versions the tile body (full tiles unrolled, the last one general).
TEST_P(Primitive, FusedTilesWithCacheWriteAndPartialLastTile) {
  Matmul mm = make_matmul(GetParam());
  Schedule s = create_schedule({mm.C});
  Tensor CC = s.cache_write(mm.C, "local");
  auto st = s[mm.C];
  auto [io, ii] = st.split(st.axis(0), 4);
  auto [jo, ji] = st.split(st.axis(1), 8);
  st.reorder({io, jo, ii, ji});
  st.parallel(st.fuse(io, jo));
  s[CC].compute_at(st, st.leaf_iter_vars()[0]);
  s[CC].reorder({s[CC].reduce_axis(0), s[CC].axis(0), s[CC].axis(1)});
  s[CC].unroll(s[CC].axis(0));
  s[CC].vectorize(s[CC].axis(1));
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{mm.A, mm.B, mm.C}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Primitive, ::testing::ValuesIn(kShapes),
                         [](const auto& info) {
                           return fmt::format("m{}n{}k{}", info.param.m, info.param.n, info.param.k);
                         });

TEST(Reductions, MaxMinProdAndArgmax) {
  Tensor A = te::placeholder({13, 9}, DataType::Float(32), "A");
  IterVar r = te::reduce_axis({0, 9}, "r");
  Tensor mx = te::compute({13}, [&](Var i) { return te::max_reduce(A(i, r), {r}); }, "mx");
  Schedule s = create_schedule({mx});
  s[mx].split(s[mx].reduce_axis(0), 4);
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, mx}));

  IterVar r2 = te::reduce_axis({0, 9}, "r2");
  Tensor mn = te::compute({13}, [&](Var i) { return te::min_reduce(A(i, r2), {r2}); }, "mn");
  EXPECT_MATCHES_REFERENCE(create_schedule({mn}), (std::vector<Tensor>{A, mn}));

  IterVar r3 = te::reduce_axis({0, 9}, "r3");
  Tensor pr = te::compute({13}, [&](Var i) { return te::prod(A(i, r3) * 0.5f + 1.0f, {r3}); }, "pr");
  EXPECT_MATCHES_REFERENCE(create_schedule({pr}), (std::vector<Tensor>{A, pr}));

  // argmax as a tuple reducer: (index, value)
  auto argmax = te::comm_reducer(
      [](const std::vector<Var>& x, const std::vector<Var>& y) -> std::vector<te::Expr> {
        te::Expr take_y = y[1] > x[1];
        return {te::select(take_y, y[0], x[0]), te::select(take_y, y[1], x[1])};
      },
      [](const std::vector<DataType>& t) -> std::vector<te::Expr> {
        return {te::make_const(t[0], -1), te::min_value(t[1])};
      },
      {DataType::Int(32), DataType::Float(32)});
  IterVar r4 = te::reduce_axis({0, 9}, "r4");
  auto outs = te::compute_multi({13}, [&](const std::vector<Var>& i) {
    return te::reduce(argmax, {te::Expr(r4), A(i[0], r4)}, {r4});
  }, "argmax");
  Schedule s4 = create_schedule({outs[0].op()});
  EXPECT_MATCHES_REFERENCE(s4, (std::vector<Tensor>{A, outs[0], outs[1]}));
}

TEST(Reductions, ConditionAndMultipleAxes) {
  Tensor A = te::placeholder({6, 7, 5}, DataType::Float(32), "A");
  IterVar r = te::reduce_axis({0, 7}, "r"), q = te::reduce_axis({0, 5}, "q");
  Tensor S = te::compute({6}, [&](Var i) { return te::sum(A(i, r, q), {r, q}, r + q < 8); }, "S");
  Schedule s = create_schedule({S});
  s[S].reorder({q, s[S].axis(0), r});
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, S}));
}

// An inlined stage whose own producer is inlined too, one stage apart: P (inlined) -> R (a
// root reduction, rewritten when P is substituted into it) -> E (inlined) -> O. O names E as
// it was before E's producer R was rewritten; E must still be substituted into O.
TEST(ComputeInline, StageReadingARewrittenProducer) {
  Tensor A = te::placeholder({6, 9}, DataType::Float(32), "A");
  Tensor P = te::compute({6, 9}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "P");
  IterVar k = te::reduce_axis({0, 9}, "k");
  Tensor R = te::compute({6}, [&](Var i) { return te::sum(P(i, k), {k}); }, "R");
  Tensor E = te::compute({6}, [&](Var i) { return R(i) + 1.0f; }, "E");
  Tensor O = te::compute({6}, [&](Var i) { return te::max(E(i), te::Expr(0.0f)); }, "O");
  Schedule s = create_schedule({O});
  s[P].compute_inline();
  s[E].compute_inline();
  EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, O}));
}

}  // namespace
}  // namespace loom
