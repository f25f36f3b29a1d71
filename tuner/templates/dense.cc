// The dense templates, out[N,M] = X[N,K] · W[M,K]^T in float32:
//   "dense"           W packed into [ceil(M/16), K, 16] by a stage of the function
//                     (te::ops::layout_transform "OI" -> "OI16o"), copied in 16x16 squares
//                     (schedule_transpose_pack: W's rows are the packed columns, so a plain
//                     16-wide copy would gather from 16 rows a power-of-two stride apart,
//                     which share one cache set);
//   "dense_pack"      W given packed that way (a graph packs a constant weight once, at
//                     compile time);
//   "dense_bias_relu" dense with the epilogue relu(· + bias[M]) (the one fused case before
//                     templates took any epilogue; its name stays for old logs).
// te::ops::dense_pack accumulates in a local register tile computed at the output's tile, and
// the epilogue, if any, is applied as that tile is written out.
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;
using tmpl::kBlock;

/// X, W and the dense stage over W packed by a stage "packedW".
std::vector<Tensor> dense_compute(const records::Workload& w) {
  const int64_t N = w.shape[0], M = w.shape[1], K = w.shape[2];
  Tensor X = te::placeholder({N, K}, DataType::Float(32), "X");
  Tensor W = te::placeholder({M, K}, DataType::Float(32), "W");
  Tensor P = te::ops::layout_transform(W, "OI", fmt::format("OI{}o", kBlock), {}, "packedW");
  return {X, W, te::ops::dense_pack(X, P, M, Tensor(), "dense")};
}

/// The GEMM schedule of `D` (a dense_pack stage) and its epilogue; the weight's packing
/// stage, if the function has one, is copied in squares.
schedule::Schedule schedule_dense(ConfigContext& cfg, const Tensor& D, const Tensor& output, const Target&) {
  Tensor P = D.op()->input_tensors()[1];
  Schedule s = tmpl::create_epilogue_schedule(D, output);
  tmpl::OutputTile tile = tmpl::output_tile(s, D, output);
  const int64_t N = *te::as_const_int(D.shape()[0]), M = *te::as_const_int(D.shape()[1]);
  const int64_t K = *te::as_const_int(P.shape()[1]);
  tmpl::schedule_gemm(cfg, tile.out, te::IterVar(), tile.out.axis(0), tile.out.axis(1), N, M, K, tile.acc, {},
                      tile.acc.axis(0), tile.acc.axis(1), tile.acc.reduce_axis(0));
  if (P.op()->kind == te::OpKind::kCompute) tmpl::schedule_transpose_pack(s[P]);
  return s;
}

double dense_flop(const records::Workload& w) {
  return 2.0 * double(w.shape[0]) * double(w.shape[1]) * double(w.shape[2]);
}

Template base(const std::string& name, const std::string& doc) {
  Template t;
  t.name = name;
  t.shape_doc = "N,M,K";
  t.doc = doc;
  t.check = [](const records::Workload& w) { tmpl::check_shape(w, {"N", "M", "K"}); };
  t.flop = dense_flop;
  t.schedule_epilogue = schedule_dense;
  t.schedule = tmpl::bare(schedule_dense);
  t.workload_default_config = [](const ConfigSpace& sp, const records::Workload& w) {
    return tmpl::closest_config(sp, tmpl::gemm_preferences(w.shape[0], w.shape[1]));
  };
  return t;
}

}  // namespace

Template dense_template() {
  Template t = base("dense", "out[N,M] = X[N,K] * W[M,K]^T, float32 (W packed into 16-row blocks)");
  t.compute = dense_compute;
  return t;
}

Template dense_pack_template() {
  Template t = base("dense_pack", "out[N,M] = X[N,K] * W^T, float32, W given packed as [ceil(M/16), K, 16]");
  t.compute = [](const records::Workload& w) -> std::vector<Tensor> {
    const int64_t N = w.shape[0], M = w.shape[1], K = w.shape[2];
    Tensor X = te::placeholder({N, K}, DataType::Float(32), "X");
    Tensor P = te::placeholder({tmpl::ceil_div(M, kBlock), K, kBlock}, DataType::Float(32), "packed_weight");
    return {X, P, te::ops::dense_pack(X, P, M, Tensor(), "dense")};
  };
  return t;
}

Template dense_bias_relu_template() {
  Template t = base("dense_bias_relu", "relu(X[N,K] * W[M,K]^T + bias[M]), float32: dense with a bias+relu epilogue");
  t.flop = [](const records::Workload& w) {
    return dense_flop(w) + 2.0 * double(w.shape[0]) * double(w.shape[1]);
  };
  t.compute = [](const records::Workload& w) -> std::vector<Tensor> {
    std::vector<Tensor> d = dense_compute(w);
    Tensor bias = te::placeholder({w.shape[1]}, DataType::Float(32), "bias");
    Tensor out = te::ops::relu(te::ops::bias_add(d[2], bias, 1), "dense_bias_relu");
    return {d[0], d[1], bias, out};
  };
  t.schedule = [](ConfigContext& cfg, const std::vector<Tensor>& args, const Target& target) {
    return schedule_dense(cfg, tmpl::find_input(args.back(), "dense"), args.back(), target);
  };
  t.schedule_epilogue = nullptr;  // it is an epilogue already; fuse onto "dense" instead
  return t;
}

}  // namespace loom::tuner
