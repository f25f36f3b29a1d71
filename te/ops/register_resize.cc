// Registry entries of the resampling operators: resample, the per-axis gather-and-weigh that
// resizing lowers to, and grid_sample.
#include "loom/te/ops/grid_sample.h"
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

OpDef grid_sample_op() {
  OpDef d;
  d.name = "grid_sample";
  d.doc = "data [N,C,D1..Dk] sampled at the normalized points of grid [N,O1..Ok,k] (ONNX's GridSample)";
  d.inputs = {"data", "grid"};
  d.min_inputs = 2;
  d.pattern = OpPattern::kInjective;
  d.attrs = {attr("mode", AttrKind::kString, std::string("linear"), "nearest, linear or cubic"),
             attr("padding_mode", AttrKind::kString, std::string("zeros"), "zeros, border or reflection"),
             attr("align_corners", AttrKind::kInt, int64_t(0), "1: -1 and 1 are the edge pixels' centres")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const std::string& m = attr_str(a, "mode");
    const std::string& p = attr_str(a, "padding_mode");
    GridSampleMode mode = m == "nearest" ? GridSampleMode::kNearest
                          : m == "cubic" ? GridSampleMode::kCubic
                                         : GridSampleMode::kLinear;
    LOOM_CHECK(m == "nearest" || m == "linear" || m == "cubic", "grid_sample: mode '{}' is not nearest, linear or cubic", m);
    LOOM_CHECK(p == "zeros" || p == "border" || p == "reflection",
               "grid_sample: padding_mode '{}' is not zeros, border or reflection", p);
    GridPadding padding = p == "border" ? GridPadding::kBorder : p == "reflection" ? GridPadding::kReflection
                                                                                   : GridPadding::kZeros;
    return {grid_sample(in[0], in[1], mode, padding, attr_int(a, "align_corners") != 0, "grid_sample")};
  };
  return d;
}

}  // namespace

std::vector<OpDef> resize_ops() { return {resample_op(), grid_sample_op()}; }

}  // namespace loom::te::ops::detail
