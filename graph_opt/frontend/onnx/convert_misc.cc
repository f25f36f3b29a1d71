// Converters of ONNX's Det and BitCast (the registry's det and bitcast), and of operators
// composed from the registry's: SwiGLU (a·sigmoid(alpha·a)·b) and TensorScatter (a KV-cache
// update: each batch row's run of the update written at its write index, as a gather of the
// update selected where the run lies).
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

}  // namespace

void add_misc_converters(std::map<std::string, Converter>& m) {
  m["SwiGLU"] = swiglu;
  m["TensorScatter"] = tensor_scatter;
  m["Det"] = det;
  m["BitCast"] = bitcast;
}

}  // namespace loom::graph_opt::onnx_frontend
