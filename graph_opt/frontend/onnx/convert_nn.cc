// Converters of ONNX's neural-network operators: Conv, ConvTranspose, Gemm, MatMul, BatchNormalization,
// MaxPool, AveragePool, GlobalAveragePool, Softmax, LayerNormalization.
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// The spatial window of Conv and the pools (2-D only).
struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // {top, left, bottom, right}
};

/// Kernel, strides, dilations and explicit pads from ONNX's attributes for input spatial
/// extents `in` (auto_pad resolved).
Window read_window(Importer& im, const std::vector<int64_t>& in, std::vector<int64_t> kernel) {
  Window w;
  w.kernel = std::move(kernel);
  w.strides = im.attr_ints("strides", std::vector<int64_t>{1, 1});
  w.dilations = im.attr_ints("dilations", std::vector<int64_t>{1, 1});
  std::vector<int64_t> pads = im.attr_ints("pads", std::vector<int64_t>{0, 0, 0, 0});
  const std::string auto_pad = im.attr_str("auto_pad", "NOTSET");
  if (w.strides.size() != 2 || w.dilations.size() != 2 || pads.size() != 4)
    im.invalid(fmt::format("strides [{}], dilations [{}] and pads [{}] do not fit 2 spatial dims", fmt::join(w.strides, ","),
                           fmt::join(w.dilations, ","), fmt::join(pads, ",")));
  constexpr int64_t kMax = INT32_MAX;  // loom's extents and indices are int32
  for (int d = 0; d < 2; ++d) {
    if (w.strides[d] > kMax || w.dilations[d] > kMax || w.kernel[d] > kMax || pads[d] > kMax || pads[d + 2] > kMax)
      im.invalid(fmt::format("kernel [{}], strides [{}], dilations [{}] and pads [{}] must be below 2^31",
                             fmt::join(w.kernel, ","), fmt::join(w.strides, ","), fmt::join(w.dilations, ","),
                             fmt::join(pads, ",")));
    if (w.strides[d] < 1 || w.dilations[d] < 1 || w.kernel[d] < 1)
      im.invalid(fmt::format("kernel [{}], strides [{}] and dilations [{}] must be positive", fmt::join(w.kernel, ","),
                             fmt::join(w.strides, ","), fmt::join(w.dilations, ",")));
    if (pads[d] < 0 || pads[d + 2] < 0) im.invalid(fmt::format("negative pads [{}]", fmt::join(pads, ",")));
  }
  if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      const int64_t out = (in[d] + w.strides[d] - 1) / w.strides[d];
      const int64_t span = (w.kernel[d] - 1) * w.dilations[d] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + span - in[d]);
      const int64_t small = total / 2, large = total - small;
      pads[d] = auto_pad == "SAME_UPPER" ? small : large;
      pads[d + 2] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "NOTSET") {
    im.invalid("auto_pad '" + auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  }
  w.pads = {pads[0], pads[1], pads[2], pads[3]};
  return w;
}

/// The shape of input 0 of Conv, ConvTranspose and the pools: rank 3 to 5 (N, C, spatial…)
/// is valid ONNX, of which loom takes 4 (2-D).
std::vector<int64_t> spatial_input(Importer& im, const char* what) {
  std::vector<int64_t> s = im.input_shape(0);
  if (s.size() < 3 || s.size() > 5)
    im.invalid(
        fmt::format("input X {} has rank {}; expected 3-D, 4-D or 5-D (N, C, spatial…)", shape_str(s), s.size()));
  if (s.size() != 4)
    im.unsupported(fmt::format("{}-D {} (input {}); loom's is 2-D, on NCHW input", s.size() - 2, what, shape_str(s)));
  return s;
}

void conv(Importer& im) {
  std::vector<int64_t> x = spatial_input(im, "convolution");
  std::vector<int64_t> w = im.input_shape(1);
  if (w.size() != 4) im.invalid(fmt::format("weight {} is not 4-D", shape_str(w)));
  std::vector<int64_t> kernel = im.attr_ints("kernel_shape", std::vector<int64_t>{w[2], w[3]});
  if (kernel != std::vector<int64_t>{w[2], w[3]})
    im.invalid(fmt::format("kernel_shape [{}] does not match the weight {}", fmt::join(kernel, ","), shape_str(w)));
  const int64_t groups = im.attr_int("group", 1);
  if (groups < 1 || x[1] % groups || w[0] % groups || x[1] / groups != w[1])
    im.invalid(fmt::format("input {} and weight {} do not fit group {}", shape_str(x), shape_str(w), groups));
  Window win = read_window(im, {x[2], x[3]}, kernel);
  std::vector<Value> inputs{im.input(0), im.input(1)};
  if (im.has_input(2)) inputs.push_back(im.input(2));
  im.set_output(0, im.op("conv2d", inputs,
                         {{"strides", win.strides}, {"padding", win.pads}, {"dilation", win.dilations}, {"groups", groups}}));
}

/// `v` restricted to indices [begin, begin + count) of `axis` (a take with constant indices).
Value slice(Importer& im, Value v, int64_t axis, int64_t begin, int64_t count, int64_t step = 1) {
  runtime::NDArray idx = runtime::NDArray::empty({count}, DataType::Int(64));
  for (int64_t i = 0; i < count; ++i) idx.data<int64_t>()[i] = begin + i * step;
  return im.op("take", {v, im.constant(idx, "indices")}, {{"axis", axis}});
}

/// ConvTranspose as a convolution: the input with s-1 zeros inserted between elements (a
/// reshape, a pad and a reshape), padded by d*(k-1) - pad (cropped where that is negative),
/// convolved at stride 1 with the kernel flipped and its in/out channels swapped per group.
void conv_transpose(Importer& im) {
  std::vector<int64_t> x = spatial_input(im, "transposed convolution");
  std::vector<int64_t> w = im.input_shape(1);
  if (w.size() != 4) im.invalid(fmt::format("weight {} is not 4-D", shape_str(w)));
  const int64_t g = im.attr_int("group", 1);
  if (g < 1 || x[1] != w[0] || w[0] % g) im.invalid(fmt::format("input {} and weight {} do not fit group {}", shape_str(x), shape_str(w), g));
  std::vector<int64_t> kernel = im.attr_ints("kernel_shape", std::vector<int64_t>{w[2], w[3]});
  if (kernel != std::vector<int64_t>{w[2], w[3]})
    im.invalid(fmt::format("kernel_shape [{}] does not match the weight {}", fmt::join(kernel, ","), shape_str(w)));
  std::vector<int64_t> s = im.attr_ints("strides", std::vector<int64_t>{1, 1});
  std::vector<int64_t> d = im.attr_ints("dilations", std::vector<int64_t>{1, 1});
  std::vector<int64_t> op = im.attr_ints("output_padding", std::vector<int64_t>{0, 0});
  std::vector<int64_t> pads = im.attr_ints("pads", std::vector<int64_t>{0, 0, 0, 0});
  std::vector<int64_t> out_shape = im.attr_ints("output_shape", std::vector<int64_t>{});
  const std::string auto_pad = im.attr_str("auto_pad", "NOTSET");
  if (s.size() != 2 || d.size() != 2 || op.size() != 2 || pads.size() != 4)
    im.invalid("strides, dilations, output_padding and pads do not fit 2 spatial dims");
  for (const auto* v : {&s, &d, &op, &pads, &out_shape})
    for (int64_t e : *v)
      if (e > INT32_MAX || e < -int64_t(INT32_MAX))
        im.invalid(fmt::format("strides [{}], dilations [{}], output_padding [{}], pads [{}] and output_shape [{}] must "
                               "be below 2^31 in magnitude",
                               fmt::join(s, ","), fmt::join(d, ","), fmt::join(op, ","), fmt::join(pads, ","),
                               fmt::join(out_shape, ",")));
  if (out_shape.size() == 4) out_shape = {out_shape[2], out_shape[3]};
  for (int a = 0; a < 2; ++a) {
    if (s[a] < 1 || d[a] < 1) im.invalid("strides and dilations must be positive");
    const int64_t full = s[a] * (x[a + 2] - 1) + op[a] + (kernel[a] - 1) * d[a] + 1;
    std::optional<int64_t> total;  // none: the pads attribute stands
    if (!out_shape.empty()) {
      if (out_shape.size() != 2) im.invalid(fmt::format("output_shape [{}] does not fit 2 spatial dims", fmt::join(out_shape, ",")));
      total = full - out_shape[a];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      total = full - x[a + 2] * s[a];
    } else if (auto_pad == "VALID") {
      total = 0;
    } else if (auto_pad != "NOTSET") {
      im.invalid("auto_pad '" + auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
    }
    if (total) {
      // total < 0 (an output_shape past the input's reach) pads the end, as output_padding does.
      const int64_t t = *total, half = t >= 0 ? t / 2 : -((-t + 1) / 2);  // floor(t / 2)
      const bool upper = auto_pad == "SAME_UPPER";
      pads[a] = upper ? half : t - half;
      pads[a + 2] = upper ? t - half : half;
    }
  }
  // The input with zeros inserted: [N,C,H,W] -> [N,C,H,1,W,1] -> padded to [N,C,H,sh,W,sw] -> [N,C,H*sh,W*sw]
  // (s-1 zeros after each element, so also after the last one).
  Value data = im.input(0);
  if (s[0] > 1 || s[1] > 1) {
    data = im.reshape(data, {x[0], x[1], x[2], 1, x[3], 1});
    data = im.op("pad", {data}, {{"pads", std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, s[0] - 1, 0, s[1] - 1}}});
    data = im.reshape(data, {x[0], x[1], x[2] * s[0], x[3] * s[1]});
  }
  std::vector<int64_t> conv_pads(4);
  for (int a = 0; a < 2; ++a) {
    int64_t begin = (kernel[a] - 1) * d[a] - pads[a];
    int64_t end = (kernel[a] - 1) * d[a] - pads[a + 2] + op[a] - (s[a] - 1);
    const int64_t len = x[a + 2] * s[a];
    if (begin < 0 || end < 0) {
      const int64_t from = std::max<int64_t>(0, -begin), to = len - std::max<int64_t>(0, -end);
      if (to <= from) im.invalid(fmt::format("pads [{}] crop away the whole output", fmt::join(pads, ",")));
      data = slice(im, data, a + 2, from, to - from);
    }
    conv_pads[a] = std::max<int64_t>(0, begin);
    conv_pads[a + 2] = std::max<int64_t>(0, end);
  }
  // The kernel [C, M/g, kh, kw] as a convolution's [M, C/g, kh, kw], flipped.
  const int64_t cg = w[0] / g, mg = w[1];
  Value k = im.reshape(im.input(1), {g, cg, mg, w[2], w[3]});
  k = im.op("transpose", {k}, {{"axes", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  k = im.reshape(k, {g * mg, cg, w[2], w[3]});
  if (w[2] > 1) k = slice(im, k, 2, w[2] - 1, w[2], -1);
  if (w[3] > 1) k = slice(im, k, 3, w[3] - 1, w[3], -1);
  std::vector<Value> inputs{data, k};
  if (im.has_input(2)) inputs.push_back(im.input(2));
  im.set_output(0, im.op("conv2d", inputs, {{"strides", std::vector<int64_t>{1, 1}}, {"padding", conv_pads},
                                             {"dilation", d}, {"groups", g}}));
}

void gemm(Importer& im) {
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

void batch_norm(Importer& im) {
  if (im.attr_int("training_mode", 0) != 0) im.unsupported("training_mode=1 (loom runs inference only)");
  im.attr_float("momentum", 0.9);  // only for training
  const double eps = im.attr_float("epsilon", 1e-5);
  for (int k = 1; k < 3; ++k)
    if (im.output_used(k)) im.unsupported(fmt::format("output {} (running statistics of training)", k));
  std::vector<int64_t> x = im.input_shape(0);
  if (x.size() < 2) im.invalid(fmt::format("input {} has no channel axis", shape_str(x)));
  if (!im.type(im.input(0)).dtype.is_float()) im.unsupported("input type " + im.type(im.input(0)).dtype.str());
  std::vector<Value> in{im.input(0)};
  for (int k = 1; k < 5; ++k) {
    Value v = im.input(k);
    if (im.type(v).dtype != im.type(in[0]).dtype) v = im.op("cast", {v}, {{"dtype", im.type(in[0]).dtype.str()}});
    in.push_back(v);
  }
  im.set_output(0, im.op("batch_norm", in, {{"axis", int64_t(1)}, {"epsilon", eps}}));
}

/// The count of window elements inside [lo, hi) along one dim, per output position.
std::vector<int64_t> window_counts(int64_t out, int64_t stride, int64_t kernel, int64_t pad_begin, int64_t lo, int64_t hi) {
  std::vector<int64_t> c(static_cast<size_t>(out), 0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * stride - pad_begin;
    c[size_t(o)] = std::max<int64_t>(0, std::min(start + kernel, hi) - std::max(start, lo));
  }
  return c;
}

void pool(Importer& im, bool avg) {
  std::vector<int64_t> x = spatial_input(im, "pooling");
  std::vector<int64_t> kernel = im.attr_ints("kernel_shape");
  if (kernel.size() != 2) im.invalid(fmt::format("kernel_shape [{}] does not fit 2 spatial dims", fmt::join(kernel, ",")));
  const bool ceil_mode = im.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = avg && im.attr_int("count_include_pad", 0) != 0;
  if (!avg) {
    if (im.attr_int("storage_order", 0) != 0 && im.output_used(1)) im.unsupported("storage_order=1");
    if (im.output_used(1)) im.unsupported("output 1 (Indices)");
  }
  Window w = read_window(im, {x[2], x[3]}, kernel);
  if (w.dilations != std::vector<int64_t>{1, 1})
    im.unsupported(fmt::format("dilations [{}] (loom's pooling has none)", fmt::join(w.dilations, ",")));
  // Output extents and the padding past the end that ceil_mode adds.
  int64_t out[2], extra[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t span = x[size_t(d) + 2] + w.pads[size_t(d)] + w.pads[size_t(d) + 2] - w.kernel[size_t(d)];
    if (span < 0) im.invalid(fmt::format("kernel [{}] is larger than the padded input {}", fmt::join(kernel, ","), shape_str(x)));
    out[d] = (ceil_mode ? (span + w.strides[size_t(d)] - 1) / w.strides[size_t(d)] : span / w.strides[size_t(d)]) + 1;
    // A last window that would start in the end padding is dropped.
    if (ceil_mode && (out[d] - 1) * w.strides[size_t(d)] >= x[size_t(d) + 2] + w.pads[size_t(d)]) --out[d];
    extra[d] = std::max<int64_t>(0, (out[d] - 1) * w.strides[size_t(d)] + w.kernel[size_t(d)] - (x[size_t(d) + 2] + w.pads[size_t(d)] + w.pads[size_t(d) + 2]));
  }
  const bool symmetric = w.pads[0] == w.pads[2] && w.pads[1] == w.pads[3] && extra[0] == 0 && extra[1] == 0;
  Value data = im.input(0);
  DataType t = im.type(data).dtype;
  if (avg && !t.is_float()) im.unsupported("input type " + t.str());
  te::ops::Attrs attrs{{"pool_size", w.kernel}, {"strides", w.strides}};
  if (symmetric) {
    attrs["padding"] = std::vector<int64_t>{w.pads[0], w.pads[1]};
    if (avg) attrs["count_include_pad"] = int64_t(include_pad);
    return im.set_output(0, im.op(avg ? "avg_pool2d" : "max_pool2d", {data}, attrs));
  }
  // Asymmetric padding or ceil_mode: pad explicitly, pool without padding.
  std::vector<int64_t> pads{0, 0, w.pads[0], w.pads[1], 0, 0, w.pads[2] + extra[0], w.pads[3] + extra[1]};
  double fill = 0.0;
  if (!avg) fill = t.is_float() ? -std::numeric_limits<double>::infinity() : t.is_int() ? -std::ldexp(1.0, t.bits() - 1) : 0.0;
  Value padded = im.op("pad", {data}, {{"pads", pads}, {"pad_value", fill}});
  attrs["padding"] = std::vector<int64_t>{0, 0};
  if (!avg) return im.set_output(0, im.op("max_pool2d", {padded}, attrs));
  // Average: the window sum over the zero-padded input, divided by each window's count of
  // counted elements (inside the input, or inside input and explicit pads).
  attrs["count_include_pad"] = int64_t(1);
  Value mean_all = im.op("avg_pool2d", {padded}, attrs);
  std::vector<int64_t> ch = window_counts(out[0], w.strides[0], w.kernel[0], w.pads[0], include_pad ? -w.pads[0] : 0,
                                          x[2] + (include_pad ? w.pads[2] : 0));
  std::vector<int64_t> cw = window_counts(out[1], w.strides[1], w.kernel[1], w.pads[1], include_pad ? -w.pads[1] : 0,
                                          x[3] + (include_pad ? w.pads[3] : 0));
  runtime::NDArray scale = runtime::NDArray::empty({1, 1, out[0], out[1]}, t);
  const double window = double(w.kernel[0] * w.kernel[1]);
  for (int64_t i = 0; i < out[0]; ++i)
    for (int64_t j = 0; j < out[1]; ++j) {
      const int64_t c = ch[size_t(i)] * cw[size_t(j)];
      scale.set(i * out[1] + j, c > 0 ? window / double(c) : 0.0);
    }
  im.set_output(0, im.op("multiply", {mean_all, im.constant(scale, "count_scale")}));
}

void global_avg_pool(Importer& im) {
  std::vector<int64_t> x = im.input_shape(0);
  if (x.size() < 3) im.invalid(fmt::format("input {} has no spatial dims", shape_str(x)));
  if (!im.type(im.input(0)).dtype.is_float()) im.unsupported("input type " + im.type(im.input(0)).dtype.str());
  if (x.size() == 4) return im.set_output(0, im.op("global_avg_pool2d", {im.input(0)}));
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x.size(); ++d) axes.push_back(int64_t(d));
  im.set_output(0, im.op("reduce_mean", {im.input(0)}, {{"axes", axes}, {"keepdims", int64_t(1)}}));
}

void softmax(Importer& im) {
  std::vector<int64_t> x = im.input_shape(0);
  if (x.empty()) im.invalid("input is a scalar");
  if (!im.type(im.input(0)).dtype.is_float()) im.unsupported("input type " + im.type(im.input(0)).dtype.str());
  const int64_t axis = normalize_axis(im, im.attr_int("axis", -1), x.size(), "axis");
  im.set_output(0, im.op("softmax", {im.input(0)}, {{"axis", axis}}));
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
  m["Conv"] = conv;
  m["ConvTranspose"] = conv_transpose;
  m["Gemm"] = gemm;
  m["MatMul"] = matmul;
  m["BatchNormalization"] = batch_norm;
  m["MaxPool"] = [](Importer& im) { pool(im, false); };
  m["AveragePool"] = [](Importer& im) { pool(im, true); };
  m["GlobalAveragePool"] = global_avg_pool;
  m["Softmax"] = softmax;
  m["LayerNormalization"] = layer_norm;
}

}  // namespace loom::graph_opt::onnx_frontend
