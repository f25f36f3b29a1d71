// Converters of ONNX's loss functions, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (opsets 12 and 13): the registry's nll_loss per element (SoftmaxCrossEntropyLoss after a
// log_softmax along the class axis 1), then the reduction: none (the per-element losses),
// sum, or mean, the sum divided by the sum of nll_loss_weight (the class weights of the
// elements not ignored; without weights and ignore_index, the element count).
#include <fmt/format.h>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// The loss of input [N, C, d...] (log-probabilities), target [N, d...] and the optional
/// weight (input 2) reduced as the node's `reduction` attribute says; sets output 0.
void nll_and_reduce(Importer& im, Value log_prob, const std::string& what_x, const std::string& what_t) {
  const std::vector<int64_t> xs = im.type(log_prob).shape, ts = im.input_shape(1);
  const DataType t = im.type(log_prob).dtype;
  if (!t.is_float()) im.unsupported(fmt::format("{} type {} (floating point only)", what_x, t.str()));
  if (!im.input_dtype(1).is_integer())
    im.invalid(fmt::format("{} must be int32 or int64, got {}", what_t, im.input_dtype(1).str()));
  bool fits = xs.size() >= 2 && ts.size() == xs.size() - 1;
  for (size_t d = 0; fits && d < ts.size(); ++d) fits = ts[d] == xs[d == 0 ? 0 : d + 1];
  if (!fits)
    im.invalid(fmt::format("{} {} must be [N, C, d1, ...] and {} {} [N, d1, ...]", what_x, shape_str(xs), what_t,
                           shape_str(ts)));
  std::vector<Value> args = {log_prob, im.input(1)};
  if (im.has_input(2)) {
    if (im.input_shape(2) != std::vector<int64_t>{xs[1]} || im.input_dtype(2) != t)
      im.invalid(fmt::format("weight {} {} must be {} [C] = [{}]", im.input_dtype(2).str(),
                             shape_str(im.input_shape(2)), t.str(), xs[1]));
    args.push_back(im.input(2));
  }
  const std::string reduction = im.attr_str("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    im.invalid(fmt::format("reduction '{}' is not none, sum or mean", reduction));
  te::ops::Attrs attrs;
  const bool ignores = im.has_attr("ignore_index");
  attrs["ignore_index"] = ignores ? std::vector<int64_t>{im.attr_int("ignore_index")} : std::vector<int64_t>{};
  Value loss = im.op("nll_loss", args, attrs);
  if (reduction == "none") return im.set_output(0, loss);
  const te::ops::Attrs all{{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t(0)}};
  Value r;
  if (reduction == "sum") r = im.op("reduce_sum", {loss}, all);
  else if (args.size() == 2 && !ignores) r = im.op("reduce_mean", {loss}, all);
  else {
    std::vector<Value> weight_args(args.begin() + 1, args.end());
    te::ops::Attrs weight_attrs = attrs;
    weight_attrs["dtype"] = t.str();
    Value weights = im.op("nll_loss_weight", weight_args, weight_attrs);
    r = im.op("divide", {im.op("reduce_sum", {loss}, all), im.op("reduce_sum", {weights}, all)});
  }
  im.set_output(0, r, true);
}

void negative_log_likelihood_loss(Importer& im) { nll_and_reduce(im, im.input(0), "input", "target"); }

/// SoftmaxCrossEntropyLoss: outputs the loss and, when asked, log_prob = log_softmax(scores) along axis 1.
void softmax_cross_entropy_loss(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  if (xs.size() < 2) im.invalid(fmt::format("scores {} must be [N, C, d1, ...]", shape_str(xs)));
  if (!im.input_dtype(0).is_float())
    im.unsupported(fmt::format("scores type {} (floating point only)", im.input_dtype(0).str()));
  Value log_prob = im.op("log_softmax", {im.input(0)}, {{"axis", int64_t(1)}});
  nll_and_reduce(im, log_prob, "scores", "labels");
  im.set_output(1, log_prob);
}

}  // namespace

void add_loss_converters(std::map<std::string, Converter>& m) {
  m["NegativeLogLikelihoodLoss"] = negative_log_likelihood_loss;
  m["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy_loss;
}

}  // namespace loom::graph_opt::onnx_frontend
