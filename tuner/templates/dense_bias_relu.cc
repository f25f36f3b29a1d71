// "dense_bias_relu": out[N,M] = relu(sum_k X[N,K] · W[M,K] + bias[M]) in float32.
//
// W is packed into [ceil(M/16), K, 16], copied in 16x16 squares (schedule_transpose_pack:
// W's rows are the packed columns, so a plain 16-wide copy would gather from 16 rows a
// power-of-two stride apart, which share one cache set). The dense stage accumulates in a
// local register tile computed at the output's tile, and bias and relu are applied as that
// tile is written out (the output stage is the elementwise epilogue).
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using te::Var;
using tmpl::kBlock;

std::vector<Tensor> compute(const records::Workload& w) {
  const int64_t N = w.shape[0], M = w.shape[1], K = w.shape[2];
  Tensor X = te::placeholder({N, K}, DataType::Float(32), "X");
  Tensor W = te::placeholder({M, K}, DataType::Float(32), "W");
  Tensor bias = te::placeholder({M}, DataType::Float(32), "bias");
  Tensor P = te::compute(
      {tmpl::ceil_div(M, kBlock), K, kBlock},
      [&](Var xb, Var k, Var v) {
        te::Expr j = xb * int64_t(kBlock) + v;
        if (M % kBlock == 0) return W(j, k);
        return te::select(j < M, W(te::min(j, te::Expr(M - 1)), k), te::Expr(0.0f));
      },
      "packedW", "injective");
  te::IterVar k = te::reduce_axis({0, K}, "k");
  Tensor D = te::compute(
      {N, M},
      [&](Var i, Var j) {
        return te::sum(X(i, k) * P(te::floordiv(j, int64_t(kBlock)), k, te::floormod(j, int64_t(kBlock))), {k});
      },
      "dense", "dense");
  Tensor out = te::compute(
      {N, M}, [&](Var i, Var j) { return te::max(D(i, j) + bias(j), te::Expr(0.0f)); }, "dense_bias_relu",
      "elemwise");
  return {X, W, bias, out};
}

schedule::Schedule schedule_dense(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor out = args[3];
  Tensor D = tmpl::find_input(out, "dense");
  Tensor P = tmpl::find_input(out, "packedW");
  Schedule s = create_schedule({out});
  schedule::Stage so = s[out], acc = s[D];
  acc.set_scope("local");
  const int64_t N = *te::as_const_int(out.shape()[0]), M = *te::as_const_int(out.shape()[1]);
  const int64_t K = *te::as_const_int(P.shape()[1]);
  tmpl::schedule_gemm(cfg, so, te::IterVar(), so.axis(0), so.axis(1), N, M, K, acc, {}, acc.axis(0), acc.axis(1),
                      acc.reduce_axis(0));
  tmpl::schedule_transpose_pack(s[P]);
  return s;
}

}  // namespace

Template dense_bias_relu_template() {
  Template t;
  t.name = "dense_bias_relu";
  t.shape_doc = "N,M,K";
  t.doc = "relu(X[N,K] * W[M,K]^T + bias[M]), float32, bias and relu fused into the output";
  t.check = [](const records::Workload& w) { tmpl::check_shape(w, {"N", "M", "K"}); };
  t.flop = [](const records::Workload& w) {
    return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]) + 2.0 * double(w.shape[0]) * double(w.shape[1]);
  };
  t.compute = compute;
  t.schedule = schedule_dense;
  t.default_config = [](const ConfigSpace& sp) { return tmpl::closest_config(sp, tmpl::gemm_preferences()); };
  return t;
}

}  // namespace loom::tuner
