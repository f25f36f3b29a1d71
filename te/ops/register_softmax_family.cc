// Registry entries of log_softmax and hardmax.
#include "loom/te/ops/softmax_family.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

OpDef along_axis_op(std::string name, std::string doc, Tensor (*fn)(const Tensor&, int, const std::string&)) {
  OpDef d;
  d.name = name;
  d.doc = std::move(doc);
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(-1), "negative counts from the end")};
  d.pattern = OpPattern::kOpaque;
  d.compute = [name, fn](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {fn(in[0], int(attr_int(a, "axis")), name)};
  };
  return d;
}

}  // namespace

std::vector<OpDef> softmax_family_ops() {
  return {along_axis_op("log_softmax", "x - max - log(sum(exp(x - max))) along axis", log_softmax),
          along_axis_op("hardmax", "1 at the first maximum along axis, 0 elsewhere", hardmax)};
}

}  // namespace loom::te::ops::detail
