// Registry entries of the reductions.
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

OpDef reduce_op(std::string name, std::string doc, ReduceKind kind) {
  OpDef d;
  d.name = name;
  d.doc = std::move(doc);
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {attr("axes", AttrKind::kInts, std::vector<int64_t>{}, "reduced axes (negative count from the end; []: all)"),
             attr("keepdims", AttrKind::kInt, int64_t(0), "1: reduced axes stay as extent 1")};
  d.pattern = OpPattern::kCommReduce;
  d.compute = [name, kind](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {reduce(in[0], kind, attr_ints(a, "axes"), attr_int(a, "keepdims") != 0, name)};
  };
  return d;
}

}  // namespace

std::vector<OpDef> reduce_ops() {
  return {reduce_op("reduce_sum", "sum over axes", ReduceKind::kSum),
          reduce_op("reduce_mean", "mean over axes", ReduceKind::kMean),
          reduce_op("reduce_max", "max over axes", ReduceKind::kMax),
          reduce_op("reduce_min", "min over axes", ReduceKind::kMin),
          reduce_op("reduce_prod", "product over axes", ReduceKind::kProd)};
}

}  // namespace loom::te::ops::detail
