// Registry entries of nll_loss and nll_loss_weight (loss.h).
#include "loom/te/ops/loss.h"
#include "register_ops.h"

namespace loom::te::ops::detail {
namespace {

AttrSpec ignore_index_attr() {
  return attr("ignore_index", AttrKind::kInts, std::vector<int64_t>{},
              "[]: every class counts; [i]: elements whose target is i count 0");
}

std::optional<int64_t> ignore_index(const Attrs& a, const char* op) {
  const std::vector<int64_t> ii = attr_ints(a, "ignore_index");
  LOOM_CHECK(ii.size() <= 1, "{}: ignore_index holds at most one value, got {}", op, ii.size());
  return ii.empty() ? std::nullopt : std::optional<int64_t>(ii[0]);
}

std::optional<Tensor> optional_input(const std::vector<Tensor>& in, size_t i) {
  return in.size() > i ? std::optional<Tensor>(in[i]) : std::nullopt;
}

}  // namespace

std::vector<OpDef> loss_ops() {
  OpDef loss;
  loss.name = "nll_loss";
  loss.doc = "per element of target [N, d...]: -input[n, target, d...] * weight[target], 0 where ignored";
  loss.inputs = {"input", "target", "weight"};
  loss.min_inputs = 2;
  loss.attrs = {ignore_index_attr()};
  loss.pattern = OpPattern::kInjective;
  loss.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {nll_loss(in[0], in[1], optional_input(in, 2), ignore_index(a, "nll_loss"), "nll_loss")};
  };

  OpDef weight;
  weight.name = "nll_loss_weight";
  weight.doc = "per element of target: weight[target] (1 without weight), 0 where ignored; nll_loss's mean divides by its sum";
  weight.inputs = {"target", "weight"};
  weight.min_inputs = 1;
  weight.attrs = {ignore_index_attr(), attr("dtype", AttrKind::kString, std::nullopt, "the type of the weights (floating point)")};
  weight.pattern = OpPattern::kInjective;
  weight.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    return {nll_loss_weight(in[0], optional_input(in, 1), ignore_index(a, "nll_loss_weight"),
                            DataType::parse(attr_str(a, "dtype")), "nll_loss_weight")};
  };
  return {std::move(loss), std::move(weight)};
}

}  // namespace loom::te::ops::detail
