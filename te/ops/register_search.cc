// Registry entries of argmax, argmin and topk (search.h).
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

OpDef arg_op(std::string name, std::string doc, Tensor (*f)(const Tensor&, int, bool, bool, const std::string&)) {
  OpDef d;
  d.name = name;
  d.doc = std::move(doc);
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {attr("axis", AttrKind::kInt, int64_t(0), "the reduced axis (negative counts from the end)"),
             attr("keepdims", AttrKind::kInt, int64_t(1), "1: the axis stays as extent 1"),
             attr("select_last_index", AttrKind::kInt, int64_t(0), "1: the last of equal extremes, 0: the first")};
  d.pattern = OpPattern::kCommReduce;
  d.compute = [f, name](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {
        f(in[0], int(attr_int(a, "axis")), attr_int(a, "keepdims") != 0, attr_int(a, "select_last_index") != 0, name)};
  };
  return d;
}

OpDef topk_op() {
  OpDef d;
  d.name = "topk";
  d.doc = "the k largest (or smallest) elements along an axis, in order, or their int64 indices";
  d.inputs = {"data"};
  d.min_inputs = 1;
  d.attrs = {attr("k", AttrKind::kInt, std::nullopt, "how many, in [1, the axis's extent]"),
             attr("axis", AttrKind::kInt, int64_t(-1), "the axis (negative counts from the end)"),
             attr("largest", AttrKind::kInt, int64_t(1), "1: the largest, largest first; 0: the smallest first"),
             attr("output", AttrKind::kString, std::string("values"), "\"values\" or \"indices\" (int64)")};
  d.pattern = OpPattern::kOpaque;
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    const std::string& out = attr_str(a, "output");
    LOOM_CHECK(out == "values" || out == "indices", "topk: output must be \"values\" or \"indices\", got \"{}\"", out);
    std::vector<Tensor> r =
        topk(in[0], attr_int(a, "k"), int(attr_int(a, "axis")), attr_int(a, "largest") != 0, "topk");
    return {out == "values" ? r[0] : r[1]};
  };
  return d;
}

}  // namespace

std::vector<OpDef> search_ops() {
  return {arg_op("argmax", "int64 index of the largest element along an axis", argmax),
          arg_op("argmin", "int64 index of the smallest element along an axis", argmin), topk_op()};
}

}  // namespace loom::te::ops::detail
