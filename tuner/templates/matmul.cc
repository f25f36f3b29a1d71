// "matmul": C[M,N] = A[M,K] · B[K,N] in float32, blocked for CPU registers.
//
// B is packed into [ceil(N/16), K, 16] by a stage of the same function, so that a register
// tile's columns load contiguously; C accumulates in a cache_write'd local tile of
// tile_y.inner rows × tile_x.inner columns (unrolled rows, 16-wide FMAs) over the whole K.
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using te::Var;
using tmpl::kBlock;

std::vector<Tensor> compute(const records::Workload& w) {
  const int64_t M = w.shape[0], N = w.shape[1], K = w.shape[2];
  Tensor A = te::placeholder({M, K}, DataType::Float(32), "A");
  Tensor B = te::placeholder({K, N}, DataType::Float(32), "B");
  Tensor P = te::compute(
      {tmpl::ceil_div(N, kBlock), K, kBlock},
      [&](Var xb, Var k, Var v) {
        te::Expr j = xb * int64_t(kBlock) + v;
        if (N % kBlock == 0) return B(k, j);
        return te::select(j < N, B(k, te::min(j, te::Expr(N - 1))), te::Expr(0.0f));
      },
      "packedB", "injective");
  te::IterVar k = te::reduce_axis({0, K}, "k");
  Tensor C = te::compute(
      {M, N},
      [&](Var i, Var j) {
        return te::sum(A(i, k) * P(te::floordiv(j, int64_t(kBlock)), k, te::floormod(j, int64_t(kBlock))), {k});
      },
      "C", "matmul");
  return {A, B, C};
}

schedule::Schedule schedule_matmul(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor C = args[2];
  Tensor P = tmpl::find_input(C, "packedB");
  Schedule s = create_schedule({C});
  Tensor CC = s.cache_write(C, "local");
  schedule::Stage out = s[C], acc = s[CC];
  const int64_t M = *te::as_const_int(C.shape()[0]), N = *te::as_const_int(C.shape()[1]);
  const int64_t K = *te::as_const_int(P.shape()[1]);
  tmpl::schedule_gemm(cfg, out, te::IterVar(), out.axis(0), out.axis(1), M, N, K, acc, {}, acc.axis(0), acc.axis(1),
                      acc.reduce_axis(0));
  tmpl::schedule_pack(s[P]);
  return s;
}

}  // namespace

Template matmul_template() {
  Template t;
  t.name = "matmul";
  t.shape_doc = "M,N,K";
  t.doc = "C[M,N] = A[M,K] * B[K,N], float32 (B packed into 16-column blocks)";
  t.check = [](const records::Workload& w) { tmpl::check_shape(w, {"M", "N", "K"}); };
  t.flop = [](const records::Workload& w) { return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]); };
  t.compute = compute;
  t.schedule = schedule_matmul;
  t.default_config = [](const ConfigSpace& sp) { return tmpl::closest_config(sp, tmpl::gemm_preferences()); };
  return t;
}

}  // namespace loom::tuner
