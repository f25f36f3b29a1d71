// "batch_matmul": C[b,M,N] = A[b,M,K] · B[b,K,N] in float32; matmul's blocking per batch,
// with the batch fused into the parallel outer loop.
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using te::Var;
using tmpl::kBlock;

std::vector<Tensor> compute(const records::Workload& w) {
  const int64_t Bt = w.shape[0], M = w.shape[1], N = w.shape[2], K = w.shape[3];
  Tensor A = te::placeholder({Bt, M, K}, DataType::Float(32), "A");
  Tensor B = te::placeholder({Bt, K, N}, DataType::Float(32), "B");
  Tensor P = te::compute(
      {Bt, tmpl::ceil_div(N, kBlock), K, kBlock},
      [&](Var b, Var xb, Var k, Var v) {
        te::Expr j = xb * int64_t(kBlock) + v;
        if (N % kBlock == 0) return B(b, k, j);
        return te::select(j < N, B(b, k, te::min(j, te::Expr(N - 1))), te::Expr(0.0f));
      },
      "packedB", "injective");
  te::IterVar k = te::reduce_axis({0, K}, "k");
  Tensor C = te::compute(
      {Bt, M, N},
      [&](Var b, Var i, Var j) {
        return te::sum(A(b, i, k) * P(b, te::floordiv(j, int64_t(kBlock)), k, te::floormod(j, int64_t(kBlock))), {k});
      },
      "C", "batch_matmul");
  return {A, B, C};
}

schedule::Schedule schedule_batch_matmul(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor C = args[2];
  Tensor P = tmpl::find_input(C, "packedB");
  Schedule s = create_schedule({C});
  Tensor CC = s.cache_write(C, "local");
  schedule::Stage out = s[C], acc = s[CC];
  const int64_t M = *te::as_const_int(C.shape()[1]), N = *te::as_const_int(C.shape()[2]);
  const int64_t K = *te::as_const_int(P.shape()[2]);
  tmpl::schedule_gemm(cfg, out, out.axis(0), out.axis(1), out.axis(2), M, N, K, acc, {acc.axis(0)}, acc.axis(1),
                      acc.axis(2), acc.reduce_axis(0));
  tmpl::schedule_pack(s[P]);
  return s;
}

}  // namespace

Template batch_matmul_template() {
  Template t;
  t.name = "batch_matmul";
  t.shape_doc = "B,M,N,K";
  t.doc = "C[b,M,N] = A[b,M,K] * B[b,K,N], float32";
  t.check = [](const records::Workload& w) { tmpl::check_shape(w, {"B", "M", "N", "K"}); };
  t.flop = [](const records::Workload& w) {
    return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]) * double(w.shape[3]);
  };
  t.compute = compute;
  t.schedule = schedule_batch_matmul;
  t.default_config = [](const ConfigSpace& sp) { return tmpl::closest_config(sp, tmpl::gemm_preferences()); };
  return t;
}

}  // namespace loom::tuner
