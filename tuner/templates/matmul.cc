// "matmul": C[M,N] = A[M,K] · B[K,N] in float32, blocked for CPU registers.
//
// B is packed into [ceil(N/16), K, 16] by a stage of the same function (te::ops::layout_transform
// "KN" -> "NK16n"), so that a register tile's columns load contiguously; C (te::ops::dense_pack
// over the packed B) accumulates in a local tile of tile_y.inner rows × tile_x.inner columns
// (unrolled rows, 16-wide FMAs) over the whole K, and a fused epilogue runs on that tile.
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using tmpl::kBlock;

std::vector<Tensor> compute(const records::Workload& w) {
  const int64_t M = w.shape[0], N = w.shape[1], K = w.shape[2];
  Tensor A = te::placeholder({M, K}, DataType::Float(32), "A");
  Tensor B = te::placeholder({K, N}, DataType::Float(32), "B");
  Tensor P = te::ops::layout_transform(B, "KN", fmt::format("NK{}n", kBlock), {}, "packedB");
  return {A, B, te::ops::dense_pack(A, P, N, Tensor(), "C")};
}

schedule::Schedule schedule_matmul(ConfigContext& cfg, const Tensor& C, const Tensor& output, const Target&) {
  Tensor P = tmpl::find_input(C, "packedB");
  Schedule s = tmpl::create_epilogue_schedule(C, output);
  tmpl::OutputTile tile = tmpl::output_tile(s, C, output);
  const int64_t M = *te::as_const_int(C.shape()[0]), N = *te::as_const_int(C.shape()[1]);
  const int64_t K = *te::as_const_int(P.shape()[1]);
  tmpl::schedule_gemm(cfg, tile.out, te::IterVar(), tile.out.axis(0), tile.out.axis(1), M, N, K, tile.acc, {},
                      tile.acc.axis(0), tile.acc.axis(1), tile.acc.reduce_axis(0));
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
  t.schedule = tmpl::bare(schedule_matmul);
  t.schedule_epilogue = schedule_matmul;
  t.workload_default_config = [](const ConfigSpace& sp, const records::Workload& w) {
    return tmpl::closest_config(sp, tmpl::gemm_preferences(w.shape[0], w.shape[1]));
  };
  return t;
}

}  // namespace loom::tuner
