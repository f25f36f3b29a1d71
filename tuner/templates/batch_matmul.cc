// "batch_matmul": C[b,M,N] = A[b,M,K] · B[b,K,N] in float32 (with attr transpose_b=1, B is
// given as [b,N,K]: attention's Q·K^T); matmul's blocking per batch, with the batch fused into
// the parallel outer loop. B is packed by te::ops::layout_transform ("BKN" or "BNK" ->
// "BNK16n"; the transposed one copied in 16x16 squares, as dense's weight) and C is
// te::ops::batch_matmul_pack over it.
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using tmpl::kBlock;

bool transpose_b(const records::Workload& w) { return tmpl::int_attr(w, "transpose_b", 0, 0) != 0; }

void check(const records::Workload& w) {
  tmpl::check_shape(w, {"B", "M", "N", "K"});
  for (const auto& [k, v] : w.attrs)
    LOOM_CHECK(k == "transpose_b", "{}: unknown attribute '{}' (expected transpose_b)", w.op, k);
  LOOM_CHECK(tmpl::int_attr(w, "transpose_b", 0, 0) <= 1, "{}: attribute transpose_b must be 0 or 1", w.op);
}

std::vector<Tensor> compute(const records::Workload& w) {
  const int64_t Bt = w.shape[0], M = w.shape[1], N = w.shape[2], K = w.shape[3];
  const bool tb = transpose_b(w);
  Tensor A = te::placeholder({Bt, M, K}, DataType::Float(32), "A");
  Tensor B = tb ? te::placeholder({Bt, N, K}, DataType::Float(32), "B") : te::placeholder({Bt, K, N}, DataType::Float(32), "B");
  Tensor P = te::ops::layout_transform(B, tb ? "BNK" : "BKN", fmt::format("BNK{}n", kBlock), {},
                                       tb ? "packedBT" : "packedB");
  return {A, B, te::ops::batch_matmul_pack(A, P, N, "C")};
}

schedule::Schedule schedule_batch_matmul(ConfigContext& cfg, const Tensor& C, const Tensor& output, const Target&) {
  Tensor P = C.op()->input_tensors()[1];
  Schedule s = tmpl::create_epilogue_schedule(C, output);
  tmpl::OutputTile tile = tmpl::output_tile(s, C, output);
  schedule::Stage out = tile.out, acc = tile.acc;
  const int64_t M = *te::as_const_int(C.shape()[1]), N = *te::as_const_int(C.shape()[2]);
  const int64_t K = *te::as_const_int(P.shape()[2]);
  tmpl::schedule_gemm(cfg, out, out.axis(0), out.axis(1), out.axis(2), M, N, K, acc, {acc.axis(0)}, acc.axis(1),
                      acc.axis(2), acc.reduce_axis(0));
  // A transposed B (its rows are the packed columns) is copied in squares.
  if (P->op->name == "packedBT") tmpl::schedule_transpose_pack(s[P]);
  else tmpl::schedule_pack(s[P]);
  return s;
}

}  // namespace

Template batch_matmul_template() {
  Template t;
  t.name = "batch_matmul";
  t.shape_doc = "B,M,N,K (attr transpose_b: B given as [b,N,K])";
  t.doc = "C[b,M,N] = A[b,M,K] * B[b,K,N], float32";
  t.check = check;
  t.flop = [](const records::Workload& w) {
    return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]) * double(w.shape[3]);
  };
  t.compute = compute;
  t.schedule = tmpl::bare(schedule_batch_matmul);
  t.schedule_epilogue = schedule_batch_matmul;
  t.default_config = [](const ConfigSpace& sp) { return tmpl::closest_config(sp, tmpl::gemm_preferences()); };
  return t;
}

}  // namespace loom::tuner
