// TVM's "How to optimize GEMM on CPU" tutorial, step by step, in loom's C++ API: each step
// is the previous one's schedule with one more idea, written as a TVM user would write it.
// tests/e2e/tvm_gemm_tutorial_test.cc checks every step against te::evaluate and
// bench/user_schedules times them at 1024^3 next to loom's tuned template and OpenBLAS.
//
//   default        C[m, n] = sum_k A[m, k] * B[k, n], no schedule
//   blocking       tile C by bn x bn, split k by kfactor, order (mo, no, ko, ki, mi, ni)
//   vectorization  ... and vectorize ni
//   permutation    order (mo, no, ko, mi, ki, ni): the innermost loop walks B's rows
//   packing        B packed as packedB[n / bn][k][n % bn] by a compute stage of its own
//   write_cache    C accumulated in a "local" cache stage computed at the column tile: a
//                  register block of rows x cols, k outermost, rows unrolled, columns
//                  vectorized; optionally (Params::panel) the row-block loop split into panels
//                  of A that stay in cache while every column block passes over them
//   parallel       ... and the outer row loop of C in parallel
//
// Where N is not a multiple of the packing width, packedB is zero past N (its reads of B
// clamped); every other step takes any shape as it is.
#pragma once
#include <loom/loom.h>

#include <algorithm>
#include <string>
#include <vector>

namespace loom::examples::gemm_tutorial {

enum class Step { kDefault, kBlocking, kVectorization, kPermutation, kPacking, kWriteCache, kParallel };

inline const std::vector<Step>& all_steps() {
  static const std::vector<Step> steps = {Step::kDefault,     Step::kBlocking, Step::kVectorization,
                                          Step::kPermutation, Step::kPacking,  Step::kWriteCache,
                                          Step::kParallel};
  return steps;
}

inline const char* step_name(Step s) {
  switch (s) {
    case Step::kDefault: return "default";
    case Step::kBlocking: return "blocking";
    case Step::kVectorization: return "vectorization";
    case Step::kPermutation: return "loop permutation";
    case Step::kPacking: return "array packing";
    case Step::kWriteCache: return "write cache";
    case Step::kParallel: return "parallel";
  }
  return "?";
}

/// The tutorial's knobs: bn x bn blocks and kfactor for blocking..packing (the tutorial's
/// 32 and 4), and the register block of the write-cache steps, rows x cols, cols also the
/// packing width of those steps (see register_block for a choice from the vector width).
struct Params {
  int bn = 32;
  int kfactor = 4;
  int rows = 6;
  int cols = 16;
  /// Register blocks of rows per panel of A kept in cache while every column block passes
  /// over it (the write-cache steps' outer row loop split by this); 0: no split.
  int panel = 0;
};

/// A register block for a target with `lanes` float lanes per vector register and `regs`
/// vector registers: two vectors of columns, and as many rows as leave room for the two
/// loads of packedB and the broadcast of A (AVX2: 8 lanes, 16 registers -> 6 x 16).
inline Params register_block(int lanes, int regs) {
  Params p;
  p.cols = 2 * lanes;
  p.rows = std::max(1, (regs - 4) / 2);
  return p;
}

struct Gemm {
  te::Tensor A, B, C;
  schedule::Schedule s;
  std::vector<te::Tensor> args() const { return {A, B, C}; }
};

/// The schedule of `step` for C[M, N] = A[M, K] * B[K, N], float32.
inline Gemm make_step(Step step, int M, int N, int K, const Params& p = {}) {
  using te::Expr;
  using te::IterVar;
  using te::Tensor;
  using te::Var;
  Gemm g;
  g.A = te::placeholder({M, K}, DataType::Float(32), "A");
  g.B = te::placeholder({K, N}, DataType::Float(32), "B");
  Tensor A = g.A, B = g.B;
  IterVar k = te::reduce_axis({0, K}, "k");

  if (step < Step::kPacking) {
    g.C = te::compute({M, N}, [&](Var m, Var n) { return te::sum(A(m, k) * B(k, n), {k}); }, "C");
    g.s = create_schedule({g.C});
    if (step == Step::kDefault) return g;
    auto& s = g.s;
    Tensor C = g.C;
    auto [mo, no, mi, ni] = s[C].tile(s[C].axis(0), s[C].axis(1), p.bn, p.bn);
    auto [ko, ki] = s[C].split(k, p.kfactor);
    if (step == Step::kPermutation) s[C].reorder({mo, no, ko, mi, ki, ni});
    else s[C].reorder({mo, no, ko, ki, mi, ni});
    if (step != Step::kBlocking) s[C].vectorize(ni);
    return g;
  }

  // Packing: packedB[x][k][z] = B[k, x*bw + z], so that the innermost loop over columns reads
  // packedB contiguously.
  const int bw = step == Step::kPacking ? p.bn : p.cols;
  Tensor packedB = te::compute({(N + bw - 1) / bw, K, bw}, [&](Var x, Var y, Var z) {
    Expr col = x * bw + z;
    if (N % bw == 0) return B(y, col);
    return te::select(col < N, B(y, te::min(col, N - 1)), 0.0f);
  }, "packedB");
  g.C = te::compute({M, N}, [&](Var m, Var n) {
    return te::sum(A(m, k) * packedB(te::floordiv(n, bw), k, te::floormod(n, bw)), {k});
  }, "C");
  g.s = create_schedule({g.C});
  auto& s = g.s;
  Tensor C = g.C;
  IterVar bigN = s[packedB].axis(0), littleN = s[packedB].axis(2);
  s[packedB].vectorize(littleN);
  s[packedB].parallel(bigN);

  if (step == Step::kPacking) {
    auto [mo, no, mi, ni] = s[C].tile(s[C].axis(0), s[C].axis(1), p.bn, p.bn);
    auto [ko, ki] = s[C].split(k, p.kfactor);
    s[C].reorder({mo, no, ko, mi, ki, ni});
    s[C].vectorize(ni);
    return g;
  }

  // Write cache: a rows x cols block of C accumulates in CC, which lives at the column tile.
  Tensor CC = s.cache_write(C, "local");
  auto [mo, no, mi, ni] = s[C].tile(s[C].axis(0), s[C].axis(1), p.rows, p.cols);
  s[C].vectorize(ni);
  IterVar outer = mo, block = no;
  if (p.panel > 0) {
    auto [mp, mb] = s[C].split(mo, p.panel);
    s[C].reorder({mp, no, mb, mi, ni});
    outer = mp;
    block = mb;
  }
  s[CC].compute_at(s[C], block);
  IterVar mc = s[CC].axis(0), nc = s[CC].axis(1);
  auto [ko, ki] = s[CC].split(s[CC].reduce_axis(0), p.kfactor);
  s[CC].reorder({ko, ki, mc, nc});
  s[CC].unroll(ki);
  s[CC].unroll(mc);
  s[CC].vectorize(nc);
  if (step == Step::kParallel) s[C].parallel(outer);
  return g;
}

}  // namespace loom::examples::gemm_tutorial
