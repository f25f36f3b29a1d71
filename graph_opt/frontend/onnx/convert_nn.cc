// Converters of ONNX's neural-network operators: Gemm, MatMul, BatchNormalization and
// LayerNormalization (Conv, ConvTranspose and the pools: convert_window.cc; Softmax: convert_softmax.cc).
#include <fmt/ranges.h>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

void gemm(Importer& im) {
  if (im.opset() < 11 && !im.has_input(2)) im.invalid("input C is required before opset 11");
  const double alpha = im.attr_float("alpha", 1.0), beta = im.attr_float("beta", 1.0);
  const int64_t trans_a = im.attr_int("transA", 0), trans_b = im.attr_int("transB", 0);
  if (im.input_shape(0).size() != 2 || im.input_shape(1).size() != 2)
    im.invalid(fmt::format("A {} and B {} must be 2-D", shape_str(im.input_shape(0)), shape_str(im.input_shape(1))));
  Value y = im.op("matmul", {im.input(0), im.input(1)}, {{"transpose_a", trans_a != 0 ? int64_t(1) : int64_t(0)},
                                                         {"transpose_b", trans_b != 0 ? int64_t(1) : int64_t(0)}});
  DataType t = im.type(y).dtype;
  if (alpha != 1.0) y = im.op("multiply", {y, im.scalar(alpha, t, 2, "alpha")});
  if (im.has_input(2) && beta != 0.0) {
    Value c = im.input(2);
    if (beta != 1.0) c = im.op("multiply", {c, im.scalar(beta, t, im.type(c).shape.size(), "beta")});
    y = im.op("add", {y, c});
  }
  im.set_output(0, y);
}

}  // namespace

Value matmul_nd(Importer& im, Value va, Value vb, std::vector<int64_t> a, std::vector<int64_t> b) {
  const std::vector<int64_t> a_onnx = a, b_onnx = b;
  if (a.empty() || b.empty()) im.invalid("MatMul of a scalar");
  if (im.type(va).dtype != im.type(vb).dtype)
    im.invalid(fmt::format("A is {} but B is {}", im.type(va).dtype.str(), im.type(vb).dtype.str()));
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a = {1, a[0]};
  if (b_vec) b = {b[0], 1};
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (b[b.size() - 2] != K)
    im.invalid(fmt::format("A {} and B {} do not agree on K", shape_str(a_onnx), shape_str(b_onnx)));
  std::vector<int64_t> ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  // The broadcast batch shape.
  const size_t nb = std::max(ba.size(), bb.size());
  std::vector<int64_t> batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    int64_t da = i < nb - ba.size() ? 1 : ba[i - (nb - ba.size())];
    int64_t db = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    if (da != db && da != 1 && db != 1)
      im.invalid(fmt::format("batch dims of A {} and B {} do not broadcast", shape_str(a_onnx), shape_str(b_onnx)));
    batch[i] = std::max(da, db);
  }
  std::vector<int64_t> out = batch;
  if (!a_vec) out.push_back(M);
  if (!b_vec) out.push_back(N);
  const int64_t nbatch = product(batch);
  Value y;
  if (product(bb) == 1 && (bb.empty() || nbatch == product(ba))) {
    // B one matrix: rows of every A batch at once.
    y = im.op("matmul", {im.reshape(va, {product(ba) * M, K}), im.reshape(vb, {K, N})});
  } else {
    // [batch, rows, cols] operands of batch_matmul: a single matrix stays a batch of 1 (which
    // batch_matmul broadcasts); a batch that broadcasts dim by dim is materialized.
    auto to3 = [&](Value v, const std::vector<int64_t>& bs, int64_t rows, int64_t cols) {
      if (product(bs) == 1) return im.reshape(v, {1, rows, cols});
      std::vector<int64_t> padded(nb - bs.size(), 1);
      padded.insert(padded.end(), bs.begin(), bs.end());
      if (padded != batch) {
        std::vector<int64_t> from = padded, to = batch;
        from.insert(from.end(), {rows, cols});
        to.insert(to.end(), {rows, cols});
        v = im.broadcast_to(im.reshape(v, from), to);
      }
      return im.reshape(v, {nbatch, rows, cols});
    };
    Value a3 = to3(va, ba, M, K), b3 = to3(vb, bb, K, N);
    y = im.op("batch_matmul", {a3, b3});
  }
  return im.reshape(y, out);
}

namespace {

void matmul(Importer& im) {
  Value y = matmul_nd(im, im.input(0), im.input(1), im.input_shape(0), im.input_shape(1));
  im.set_output(0, y, im.input_shape(0).size() == 1 && im.input_shape(1).size() == 1);
}

/// BatchNormalization at inference. Before opset 9, spatial=0 normalizes per activation:
/// scale, B, mean and var then have the input's shape without N.
void batch_norm(Importer& im) {
  if (im.opset() >= 14 && im.attr_int("training_mode", 0) != 0)
    im.unsupported("training_mode=1 (loom runs inference only)");
  im.attr_float("momentum", 0.9);  // only for training
  const double eps = im.attr_float("epsilon", 1e-5);
  const bool spatial = im.opset() >= 9 || im.attr_int("spatial", 1) != 0;
  // Outputs 1..4 (opset < 14: mean, var, saved_mean, saved_var; from 14: running_mean, running_var)
  // are statistics of training.
  for (int k = 1; k < 5; ++k)
    if (im.output_used(k)) im.unsupported(fmt::format("output {} (statistics of training)", k));
  std::vector<int64_t> x = im.input_shape(0);
  if (x.size() < 2) im.invalid(fmt::format("input {} has no channel axis", shape_str(x)));
  const DataType t = im.type(im.input(0)).dtype;
  if (!t.is_float()) im.unsupported("input type " + t.str());
  std::vector<Value> in{im.input(0)};
  for (int k = 1; k < 5; ++k) {
    Value v = im.input(k);
    if (im.type(v).dtype != t) v = im.op("cast", {v}, {{"dtype", t.str()}});
    in.push_back(v);
  }
  std::vector<int64_t> per_activation(x.begin() + 1, x.end());
  if (spatial || im.input_shape(1) == std::vector<int64_t>{x[1]})
    return im.set_output(0, im.op("batch_norm", in, {{"axis", int64_t(1)}, {"epsilon", eps}}));
  // (x - mean) / sqrt(var + epsilon) * scale + B, the parameters broadcast over N.
  std::vector<int64_t> param_shape = x;
  param_shape[0] = 1;
  for (int k = 1; k < 5; ++k) {
    if (im.input_shape(k) != per_activation)
      im.invalid(fmt::format("with spatial=0, input {} {} must have the input's shape without N, {}", k,
                             shape_str(im.input_shape(k)), shape_str(per_activation)));
    in[size_t(k)] = im.reshape(in[size_t(k)], param_shape);
  }
  Value stddev = im.op("sqrt", {im.op("add", {in[4], im.scalar(eps, t, x.size(), "epsilon")})});
  Value y = im.op("divide", {im.op("subtract", {in[0], in[3]}), stddev});
  im.set_output(0, im.op("add", {im.op("multiply", {y, in[1]}), in[2]}));
}

void layer_norm(Importer& im) {
  std::vector<int64_t> x = im.input_shape(0);
  if (x.empty()) im.invalid("input is a scalar");
  const int64_t axis = normalize_axis(im, im.attr_int("axis", -1), x.size(), "axis");
  const double eps = im.attr_float("epsilon", 1e-5);
  const int64_t stash = im.attr_int("stash_type", 1);
  if (stash != 1) im.unsupported(fmt::format("stash_type {} (loom computes the statistics in float32)", stash));
  Value data = im.input(0);
  const DataType t = im.type(data).dtype;
  if (!t.is_float()) im.unsupported("input type " + t.str());
  const DataType f32 = DataType::Float(32);
  // Everything in float32 (stash_type 1), cast back at the end.
  if (t != f32) data = im.op("cast", {data}, {{"dtype", f32.str()}});
  std::vector<int64_t> norm(x.begin() + axis, x.end()), outer(x.begin(), x.begin() + axis);
  const int64_t n = product(norm);
  auto param = [&](int k, double fill) {
    Value p;
    if (im.has_input(k)) {
      p = im.input(k);
      if (im.type(p).dtype != f32) p = im.op("cast", {p}, {{"dtype", f32.str()}});
      p = im.broadcast_to(im.reshape(p, im.input_shape(k)), norm);  // ONNX broadcasts Scale/B to the normalized shape
    } else {
      p = im.scalar(fill, f32, 1, k == 1 ? "scale" : "bias");
      p = im.broadcast_to(p, {n});
    }
    return im.reshape(p, {n});
  };
  Value scale = param(1, 1.0), bias = param(2, 0.0);
  std::vector<int64_t> flat = outer;
  flat.push_back(n);
  Value y = im.op("layer_norm", {im.reshape(data, flat), scale, bias}, {{"axis", int64_t(-1)}, {"epsilon", eps}});
  y = im.reshape(y, x);
  if (t != f32) y = im.op("cast", {y}, {{"dtype", t.str()}});
  im.set_output(0, y);
  if (!im.output_used(1) && !im.output_used(2)) return;
  // Mean and InvStdDev (float32, normalized dims kept as 1).
  std::vector<int64_t> axes;
  for (size_t d = size_t(axis); d < x.size(); ++d) axes.push_back(int64_t(d));
  te::ops::Attrs reduce{{"axes", axes}, {"keepdims", int64_t(1)}};
  Value mean = im.op("reduce_mean", {data}, reduce);
  im.set_output(1, mean);
  if (!im.output_used(2)) return;
  Value centered = im.op("subtract", {data, mean});
  Value var = im.op("reduce_mean", {im.op("multiply", {centered, centered})}, reduce);
  Value stddev = im.op("sqrt", {im.op("add", {var, im.scalar(eps, f32, x.size(), "epsilon")})});
  im.set_output(2, im.op("divide", {im.scalar(1.0, f32, x.size(), "one"), stddev}));
}

}  // namespace

void add_nn_converters(std::map<std::string, Converter>& m) {
  m["Gemm"] = gemm;
  m["MatMul"] = matmul;
  m["BatchNormalization"] = batch_norm;
  m["LayerNormalization"] = layer_norm;
}

}  // namespace loom::graph_opt::onnx_frontend
