// Registry entry of resample, the per-axis gather-and-weigh that resizing lowers to.
#include "loom/te/ops/resize.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

OpDef resample_op() {
  OpDef d;
  d.name = "resample";
  d.doc = "out[..., o, ...] = sum_t weights[o,t] * data[..., indices[o,t], ...] along axis (no weights: one tap)";
  d.inputs = {"data", "indices", "weights"};
  d.min_inputs = 2;
  d.pattern = OpPattern::kInjective;
  d.attrs = {attr("axis", AttrKind::kInt, std::nullopt, "the resampled dim (negative counts from the end)"),
             attr("extrapolate", AttrKind::kInt, int64_t(0),
                  "1: a position whose first index is negative takes extrapolation_value"),
             attr("extrapolation_value", AttrKind::kFloat, 0.0, "")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const int64_t axis = attr_int(a, "axis");
    LOOM_CHECK(axis >= INT32_MIN && axis <= INT32_MAX, "resample: axis {} is out of range", axis);
    std::optional<double> ev;
    if (attr_int(a, "extrapolate") != 0) ev = attr_float(a, "extrapolation_value");
    return {resample(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), int(axis), ev, "resample")};
  };
  return d;
}

}  // namespace

std::vector<OpDef> resize_ops() { return {resample_op()}; }

}  // namespace loom::te::ops::detail
