// Converters of ONNX's Det, BitCast, RoiAlign and DeformConv (the registry's det, bitcast,
// roi_align and deform_conv2d), and of operators
// composed from the registry's: SwiGLU (a·sigmoid(alpha·a)·b) and TensorScatter (a KV-cache
// update: each batch row's run of the update written at its write index, as a gather of the
// update selected where the run lies).
#include <fmt/ranges.h>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

void swiglu(Importer& im) {
  const std::vector<int64_t> as = im.input_shape(0);
  if (im.input_shape(1) != as || im.input_dtype(1) != im.input_dtype(0))
    im.invalid(fmt::format("A {} {} and B {} {} must have one shape and type", im.input_dtype(0).str(), shape_str(as),
                           im.input_dtype(1).str(), shape_str(im.input_shape(1))));
  const DataType t = im.input_dtype(0);
  if (!t.is_float()) im.invalid("A and B must be floating point, got " + t.str());
  const double alpha = im.attr_float("alpha", 1.0);
  Value a = im.input(0);
  Value scaled = alpha == 1.0 ? a : im.op("multiply", {a, im.scalar(alpha, t, im.type(a).shape.size(), "alpha")});
  Value gate = im.op("multiply", {a, im.op("sigmoid", {scaled})});
  im.set_output(0, im.op("multiply", {gate, im.input(1)}), im.input_scalar(0));
}

/// TensorScatter: past_cache [B, ..., S, ...] (S along `axis`), update of its shape but U <= S
/// along `axis`, write_indices [B] (zeros when absent). Linear mode writes positions w … w+U−1
/// of batch row b (w = write_indices[b]); circular mode wraps them modulo S.
void tensor_scatter(Importer& im) {
  const std::vector<int64_t> cs = im.input_shape(0), us = im.input_shape(1);
  const size_t rank = cs.size();
  if (rank < 2 || us.size() != rank)
    im.invalid(fmt::format("past_cache {} and update {} must have one rank, at least 2", shape_str(cs), shape_str(us)));
  if (im.input_dtype(1) != im.input_dtype(0))
    im.invalid(fmt::format("past_cache is {} but update {}", im.input_dtype(0).str(), im.input_dtype(1).str()));
  const int64_t axis = normalize_axis(im, im.attr_int("axis", -2), rank, "axis");
  if (axis == 0) im.invalid("axis must not be the batch dim 0");
  const std::string mode = im.attr_str("mode", "linear");
  if (mode != "linear" && mode != "circular") im.invalid("mode '" + mode + "' is not linear or circular");
  for (size_t d = 0; d < rank; ++d)
    if (int64_t(d) == axis ? us[d] > cs[d] : us[d] != cs[d])
      im.invalid(fmt::format("update {} does not fit past_cache {} along axis {}", shape_str(us), shape_str(cs), axis));
  const int64_t S = cs[size_t(axis)], U = us[size_t(axis)];
  const DataType i64 = DataType::Int(64);
  // position[s] = s along axis; write[b] = write_indices[b] along dim 0.
  std::vector<int64_t> along(rank, 1), batch(rank, 1);
  along[size_t(axis)] = S;
  batch[0] = cs[0];
  std::vector<double> iota(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) iota[size_t(s)] = double(s);
  Value position = im.constant(runtime::NDArray::from_vector(iota, along, i64), "position");
  Value write;
  if (im.has_input(2)) {
    if (im.input_shape(2) != std::vector<int64_t>{cs[0]} || im.input_dtype(2) != i64)
      im.invalid(fmt::format("write_indices {} {} must be int64 [{}]", im.input_dtype(2).str(),
                             shape_str(im.input_shape(2)), cs[0]));
    write = im.reshape(im.input(2), batch);
  } else {
    write = im.scalar(0, i64, rank, "write_index");
  }
  // The update's position j that lands on cache position s: s − w, modulo S when circular.
  Value j = im.op("subtract", {position, write});
  if (mode == "circular")
    j = im.op("mod", {im.op("add", {j, im.scalar(double(S), i64, rank, "length")}), im.scalar(double(S), i64, rank, "length")});
  Value in_run = im.op("logical_and", {im.op("greater_equal", {j, im.scalar(0, i64, rank, "zero")}),
                                       im.op("less", {j, im.scalar(double(U), i64, rank, "run")})});
  Value clamped = im.op("minimum", {im.op("maximum", {j, im.scalar(0, i64, rank, "zero")}),
                                    im.scalar(double(U - 1), i64, rank, "last")});
  std::vector<int64_t> gather_shape = us;
  gather_shape[size_t(axis)] = S;
  Value idx = im.op("broadcast_to", {clamped}, {{"shape", gather_shape}});
  Value gathered = im.op("gather_elements", {im.input(1), idx}, {{"axis", axis}});
  im.set_output(0, im.op("where", {in_run, gathered, im.input(0)}));
}

void det(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  if (xs.size() < 2 || xs[xs.size() - 1] != xs[xs.size() - 2])
    im.invalid(fmt::format("input {} is not [..., M, M]", shape_str(xs)));
  if (!im.input_dtype(0).is_float()) im.invalid("input must be floating point, got " + im.input_dtype(0).str());
  im.set_output(0, im.op("det", {im.input(0)}), xs.size() == 2);
}

void bitcast(Importer& im) {
  const DataType from = im.input_dtype(0);
  const DataType to = to_dtype(int(im.attr_int("to")), im.where() + ": to");
  const int from_bits = from.is_bool() ? 8 : from.bits(), to_bits = to.is_bool() ? 8 : to.bits();
  if (from_bits != to_bits)
    im.invalid(fmt::format("{} ({} bits) and {} ({} bits) differ in width", from.str(), from_bits, to.str(), to_bits));
  im.set_output(0, im.op("bitcast", {im.input(0)}, {{"dtype", to.str()}}), im.input_scalar(0));
}

/// RoiAlign: X [N, C, H, W], rois [R, 4], batch_indices [R]. Opset 10 has no
/// coordinate_transformation_mode and shifts nothing (output_half_pixel).
void roi_align(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0), rs = im.input_shape(1), bs = im.input_shape(2);
  if (xs.size() != 4 || rs.size() != 2 || rs[1] != 4 || bs.size() != 1 || bs[0] != rs[0])
    im.invalid(fmt::format("X {}, rois {} and batch_indices {} must be [N, C, H, W], [R, 4] and [R]", shape_str(xs),
                           shape_str(rs), shape_str(bs)));
  const std::string ctm = im.opset() >= 16 ? im.attr_str("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    im.invalid("coordinate_transformation_mode '" + ctm + "' is not half_pixel or output_half_pixel");
  const std::string mode = im.attr_str("mode", "avg");
  if (mode != "avg" && mode != "max") im.invalid("mode '" + mode + "' is not avg or max");
  const int64_t oh = im.attr_int("output_height", 1), ow = im.attr_int("output_width", 1);
  const int64_t ratio = im.attr_int("sampling_ratio", 0);
  if (oh < 1 || ow < 1 || ratio < 0)
    im.invalid(fmt::format("output_height {} and output_width {} must be positive, sampling_ratio {} non-negative", oh,
                           ow, ratio));
  if (ratio == 0)
    im.unsupported("sampling_ratio 0 (a sample grid sized by each ROI's run-time extent; loom needs it static)");
  Value rois = im.input(1);
  if (im.input_dtype(1) != im.input_dtype(0)) rois = im.op("cast", {rois}, {{"dtype", im.input_dtype(0).str()}});
  te::ops::Attrs attrs{{"output_height", oh}, {"output_width", ow}, {"sampling_ratio", ratio},
                       {"spatial_scale", im.attr_float("spatial_scale", 1.0)}, {"mode", mode},
                       {"half_pixel", int64_t(ctm == "half_pixel")}};
  im.set_output(0, im.op("roi_align", {im.input(0), rois, im.input(2)}, attrs));
}

/// DeformConv (2-D): X, W, offset[, B[, mask]] with Conv's attributes and offset_group.
void deform_conv(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0), ws = im.input_shape(1);
  if (xs.size() != 4 || ws.size() != 4) {
    if (xs.size() == 3 || xs.size() == 5) im.unsupported(fmt::format("DeformConv of {}-D input {} (loom takes 2-D)", xs.size() - 2, shape_str(xs)));
    im.invalid(fmt::format("X {} and W {} must be [N, C, H, W] and [M, C/group, kh, kw]", shape_str(xs), shape_str(ws)));
  }
  const std::vector<int64_t> spatial(ws.begin() + 2, ws.end());
  if (im.attr_ints("kernel_shape", spatial) != spatial)
    im.invalid(fmt::format("kernel_shape does not match the weight {}", shape_str(ws)));
  auto pair = [&](const char* name) {
    std::vector<int64_t> v = im.attr_ints(name, std::vector<int64_t>{1, 1});
    if (v.size() != 2) im.invalid(fmt::format("{} [{}] must have 2 values", name, fmt::join(v, ",")));
    return v;
  };
  std::vector<int64_t> pads = im.attr_ints("pads", std::vector<int64_t>{0, 0, 0, 0});
  if (pads.size() != 4) im.invalid(fmt::format("pads [{}] must have 4 values", fmt::join(pads, ",")));
  te::ops::Attrs attrs{{"strides", pair("strides")}, {"dilations", pair("dilations")}, {"padding", pads},
                       {"groups", im.attr_int("group", 1)}, {"offset_groups", im.attr_int("offset_group", 1)}};
  std::vector<Value> in{im.input(0), im.input(1), im.input(2)};
  const bool bias = im.has_input(3), mask = im.has_input(4);
  if (mask) in.push_back(im.input(4));
  if (mask && bias) in.push_back(im.input(3));
  Value y = im.op("deform_conv2d", in, attrs);
  if (bias && !mask) {
    if (im.input_shape(3) != std::vector<int64_t>{ws[0]})
      im.invalid(fmt::format("B {} must be [{}]", shape_str(im.input_shape(3)), ws[0]));
    y = im.op("add", {y, im.reshape(im.input(3), {1, ws[0], 1, 1})});
  }
  im.set_output(0, y);
}

}  // namespace

void add_misc_converters(std::map<std::string, Converter>& m) {
  m["SwiGLU"] = swiglu;
  m["TensorScatter"] = tensor_scatter;
  m["Det"] = det;
  m["BitCast"] = bitcast;
  m["RoiAlign"] = roi_align;
  m["DeformConv"] = deform_conv;
}

}  // namespace loom::graph_opt::onnx_frontend
