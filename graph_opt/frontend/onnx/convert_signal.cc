// Converters of ONNX's signal operators. DFT and STFT are matrix products with a constant
// matrix of twiddle factors (computed at import in double precision): the O(n²) transform
// along one axis, complex values as a trailing dim of 2 (real input: of 1). HannWindow,
// HammingWindow, BlackmanWindow and MelWeightMatrix depend on constant inputs only and
// become constants.
#include <cmath>
#include <numbers>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// What a transform along one axis computes from `in_len` input points into `out_len` outputs.
struct Transform {
  int64_t length = 0;  // the DFT length L
  bool inverse = false;
  bool real_output = false;  // inverse of a one-sided spectrum: real output (numpy's irfft)
};

/// The matrix [in_len·C, out_len·C_out] of `t` for inputs of C (1 or 2) components, rows
/// scaled by `row_scale` (a window) when given. Element (i, c; j, d) is the weight of component
/// c of input point i in component d of output point j.
runtime::NDArray twiddles(const Transform& t, int64_t in_len, int64_t comps, int64_t out_len, DataType dtype,
                          const std::vector<double>& row_scale = {}) {
  const int64_t out_comps = t.real_output ? 1 : 2, L = t.length;
  std::vector<double> m(size_t(in_len * comps * out_len * out_comps), 0.0);
  const double sign = t.inverse ? 1.0 : -1.0, norm = t.inverse ? 1.0 / double(L) : 1.0;
  for (int64_t i = 0; i < in_len; ++i) {
    // Forward and inverse: input points past L are cut off. The one-sided inverse reads bins
    // 0 … L/2 and counts those with a mirror image twice (Hermitian symmetry).
    const int64_t reach = t.real_output ? L / 2 + 1 : L;
    if (i >= reach) continue;
    const double mirror = t.real_output && i != 0 && !(L % 2 == 0 && i == L / 2) ? 2.0 : 1.0;
    const double scale = norm * mirror * (row_scale.empty() ? 1.0 : row_scale[size_t(i)]);
    for (int64_t j = 0; j < out_len; ++j) {
      const double theta = 2.0 * std::numbers::pi * double((i * j) % L) / double(L);
      const double c = std::cos(theta) * scale, s = sign * std::sin(theta) * scale;
      // (xr + i·xi)(c + i·s) = (xr·c − xi·s) + i(xr·s + xi·c)
      auto at = [&](int64_t comp, int64_t out_comp) -> double& {
        return m[size_t(((i * comps + comp) * out_len + j) * out_comps + out_comp)];
      };
      at(0, 0) = c;
      if (out_comps == 2) at(0, 1) = s;
      if (comps == 2) {
        at(1, 0) = -s;
        if (out_comps == 2) at(1, 1) = c;
      }
    }
  }
  return runtime::NDArray::from_vector(m, {in_len * comps, out_len * out_comps}, dtype);
}

/// `x` [..., n, C] transformed along dim `axis` (not the last) by the matrix of `t`, into
/// `out_len` points: the other dims moved in front, one matmul, moved back.
Value transform_axis(Importer& im, Value x, int64_t axis, const Transform& t, int64_t out_len) {
  const std::vector<int64_t> xs = im.type(x).shape;
  const size_t rank = xs.size();
  const int64_t n = xs[size_t(axis)], comps = xs.back(), out_comps = t.real_output ? 1 : 2;
  std::vector<int64_t> perm, moved;
  for (size_t d = 0; d + 1 < rank; ++d)
    if (int64_t(d) != axis) {
      perm.push_back(int64_t(d));
      moved.push_back(xs[d]);
    }
  const bool in_place = axis == int64_t(rank) - 2;
  perm.insert(perm.end(), {axis, int64_t(rank) - 1});
  Value v = in_place ? x : im.op("transpose", {x}, {{"axes", perm}});
  const int64_t batch = product(moved);
  v = im.reshape(v, {batch, n * comps});
  Value m = im.constant(twiddles(t, n, comps, out_len, im.type(x).dtype), "twiddles");
  Value y = im.op("matmul", {v, m});
  std::vector<int64_t> ys = moved;
  ys.insert(ys.end(), {out_len, out_comps});
  y = im.reshape(y, ys);
  if (in_place) return y;
  std::vector<int64_t> back(rank);
  for (size_t d = 0; d < rank; ++d) back[size_t(perm[d])] = int64_t(d);
  return im.op("transpose", {y}, {{"axes", back}});
}

void check_signal(Importer& im, const std::vector<int64_t>& xs, const char* what) {
  if (xs.size() < 2 || (xs.back() != 1 && xs.back() != 2))
    im.invalid(fmt::format("{} {} must end in a dim of 1 (real) or 2 (complex)", what, shape_str(xs)));
  const DataType t = im.input_dtype(0);
  if (!t.is_float()) im.invalid(fmt::format("{} must be floating point, got {}", what, t.str()));
}

/// DFT: opset 17 takes axis as an attribute (default 1), opset 20 as input 2 (default -2);
/// dft_length is input 1.
void dft(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  check_signal(im, xs, "input");
  const int64_t rank = int64_t(xs.size());
  int64_t axis = im.opset() >= 20 ? -2 : im.attr_int("axis", 1);
  if (im.opset() >= 20 && im.has_input(2)) axis = int64_t(im.const_scalar(2, "axis"));
  if (axis < -rank || axis > rank - 2 || axis == -1)
    im.invalid(fmt::format("axis {} is not a signal dim of the input {}", axis, shape_str(xs)));
  if (axis < 0) axis += rank;
  const bool inverse = im.attr_int("inverse", 0) != 0, onesided = im.attr_int("onesided", 0) != 0;
  const int64_t n = xs[size_t(axis)];
  Transform t;
  t.inverse = inverse;
  t.real_output = inverse && onesided;
  t.length = t.real_output ? 2 * (n - 1) : n;
  if (im.has_input(1)) t.length = int64_t(im.const_scalar(1, "dft_length"));
  if (t.length < 1 || t.length > INT32_MAX) im.invalid(fmt::format("dft_length {} must be positive", t.length));
  if (onesided && !inverse && xs.back() != 1) im.invalid("a one-sided DFT takes a real input");
  const int64_t out_len = onesided && !inverse ? t.length / 2 + 1 : t.length;
  im.set_output(0, transform_axis(im, im.input(0), axis, t, out_len));
}

/// STFT: signal [batch, length, C], frame_step, window [frame_length] and frame_length (both
/// optional) -> [batch, frames, bins, 2], each frame multiplied by the window and transformed.
void stft(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  check_signal(im, xs, "signal");
  if (xs.size() != 3) im.invalid(fmt::format("signal {} must be [batch, length, 1 or 2]", shape_str(xs)));
  const int64_t step = int64_t(im.const_scalar(1, "frame_step"));
  int64_t frame = xs[1];
  if (im.has_input(2)) {
    const std::vector<int64_t> ws = im.input_shape(2);
    if (ws.size() != 1) im.invalid(fmt::format("window {} must be 1-D", shape_str(ws)));
    frame = ws[0];
  }
  if (im.has_input(3)) {
    const int64_t given = int64_t(im.const_scalar(3, "frame_length"));
    if (im.has_input(2) && given != frame)
      im.invalid(fmt::format("frame_length {} differs from the window's length {}", given, frame));
    frame = given;
  }
  if (step < 1 || frame < 1 || frame > xs[1])
    im.invalid(fmt::format("frame_step {} and frame_length {} must be positive, the frame within the signal {}", step,
                           frame, shape_str(xs)));
  const bool onesided = im.attr_int("onesided", 1) != 0;
  if (onesided && xs[2] != 1) im.invalid("a one-sided STFT takes a real signal");
  const int64_t frames = 1 + (xs[1] - frame) / step;
  runtime::NDArray idx = runtime::NDArray::empty({frames * frame}, DataType::Int(64));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < frame; ++i) idx.data<int64_t>()[f * frame + i] = f * step + i;
  Value v = im.op("take", {im.input(0), im.constant(idx, "frame_index")}, {{"axis", int64_t(1)}});
  v = im.reshape(v, {xs[0], frames, frame, xs[2]});
  if (im.has_input(2)) {
    Value w = im.input(2);
    if (im.type(w).dtype != im.type(v).dtype) w = im.op("cast", {w}, {{"dtype", im.type(v).dtype.str()}});
    v = im.op("multiply", {v, im.reshape(w, {1, 1, frame, 1})});
  }
  Transform t;
  t.length = frame;
  im.set_output(0, transform_axis(im, v, 2, t, onesided ? frame / 2 + 1 : frame));
}

/// The output type of the window and mel operators (attribute output_datatype, float32 by default).
DataType output_type(Importer& im) {
  return to_dtype(int(im.attr_int("output_datatype", 1)), im.where() + ": output_datatype");
}

Value doubles_as(Importer& im, const std::vector<double>& v, std::vector<int64_t> shape, DataType t) {
  return im.constant(runtime::NDArray::from_vector(v, std::move(shape), t), "values");
}

/// a0 − a1·cos(2πn/N) + a2·cos(4πn/N) for n < size, N = size (periodic) or size − 1.
void cosine_window(Importer& im, double a0, double a1, double a2) {
  const int64_t size = int64_t(im.const_scalar(0, "size"));
  if (size < 1 || size > INT32_MAX) im.invalid(fmt::format("size {} must be positive", size));
  const DataType t = output_type(im);
  const double N = double(im.attr_int("periodic", 1) != 0 ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    const double x = 2.0 * std::numbers::pi * double(n) / N;
    w[size_t(n)] = a0 - a1 * std::cos(x) + a2 * std::cos(2.0 * x);
  }
  im.set_output(0, doubles_as(im, w, {size}, t));
}

/// MelWeightMatrix: [dft_length/2 + 1, num_mel_bins] triangular filters whose edges are
/// num_mel_bins + 2 points equally spaced on the mel scale, rounded down to spectrogram bins.
void mel_weight_matrix(Importer& im) {
  const int64_t bins = int64_t(im.const_scalar(0, "num_mel_bins")), L = int64_t(im.const_scalar(1, "dft_length"));
  const double rate = im.const_scalar(2, "sample_rate");
  const double lo = im.const_scalar(3, "lower_edge_hertz"), hi = im.const_scalar(4, "upper_edge_hertz");
  if (bins < 1 || L < 1 || rate <= 0 || lo < 0 || hi <= lo)
    im.invalid(fmt::format("num_mel_bins {}, dft_length {} and sample_rate {} must be positive, 0 <= lower_edge_hertz "
                           "{} < upper_edge_hertz {}", bins, L, rate, lo, hi));
  const DataType t = output_type(im);
  const int64_t spectrum = L / 2 + 1;
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double mel_lo = to_mel(lo), step = (to_mel(hi) - mel_lo) / double(bins + 2);
  std::vector<int64_t> edge(size_t(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (double(i) * step + mel_lo) / 2595.0) - 1.0);
    edge[size_t(i)] = int64_t(std::floor(double(L + 1) * hz / rate));
  }
  std::vector<double> w(size_t(spectrum * bins), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row < 0 || row >= spectrum)
      im.invalid(fmt::format("mel bin {} reaches spectrogram bin {} of {}", col, row, spectrum));
    w[size_t(row * bins + col)] = v;
  };
  for (int64_t m = 0; m < bins; ++m) {
    const int64_t left = edge[size_t(m)], center = edge[size_t(m + 1)], right = edge[size_t(m + 2)];
    if (center == left) set(center, m, 1.0);
    for (int64_t j = left; center > left && j <= center; ++j) set(j, m, double(j - left) / double(center - left));
    for (int64_t j = center; j < right; ++j) set(j, m, double(right - j) / double(right - center));
  }
  im.set_output(0, doubles_as(im, w, {spectrum, bins}, t));
}

}  // namespace

void add_signal_converters(std::map<std::string, Converter>& m) {
  m["DFT"] = dft;
  m["STFT"] = stft;
  m["HannWindow"] = [](Importer& im) { cosine_window(im, 0.5, 0.5, 0.0); };
  m["HammingWindow"] = [](Importer& im) { cosine_window(im, 25.0 / 46.0, 21.0 / 46.0, 0.0); };
  m["BlackmanWindow"] = [](Importer& im) { cosine_window(im, 0.42, 0.5, 0.08); };
  m["MelWeightMatrix"] = mel_weight_matrix;
}

}  // namespace loom::graph_opt::onnx_frontend
