// Registry entries of det and bitcast.
#include "loom/te/ops/linalg.h"
#include "register_ops.h"

namespace loom::te::ops::detail {

std::vector<OpDef> linalg_ops() {
  OpDef d;
  d.name = "det";
  d.doc = "the determinant of each square matrix of x [..., M, M] -> [...] ([1] for a 2-D x)";
  d.inputs = {"x"};
  d.min_inputs = 1;
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> { return {det(in[0], "det")}; };

  OpDef b;
  b.name = "bitcast";
  b.doc = "the bits of each element as dtype, of the same element width (ONNX BitCast)";
  b.inputs = {"x"};
  b.min_inputs = 1;
  b.pattern = OpPattern::kElemwise;
  b.attrs = {attr("dtype", AttrKind::kString, std::nullopt, "the result type, of x's element width")};
  b.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {bitcast(in[0], DataType::parse(attr_str(a, "dtype")), "bitcast")};
  };
  return {std::move(d), std::move(b)};
}

}  // namespace loom::te::ops::detail
