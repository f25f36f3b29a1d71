// winograd_if_faster: LayoutOptions::choose_winograd from tuning records, per convolution the
// faster of its direct and Winograd workloads.
#include <fmt/format.h>

#include "loom/graph_opt/passes.h"
#include "loom/te/op_registry.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/task.h"

namespace loom::graph_opt {
namespace {

/// The mean cost of the best record of the workload the strategy call names, or none (no
/// call, no record, or a workload its template refuses).
std::optional<double> best_cost(const std::string& op, const std::vector<te::ops::TensorType>& in,
                                const te::ops::Attrs& attrs, const records::ApplyHistoryBest& best,
                                const Target& target) {
  try {
    std::optional<te::ops::TemplateCall> c = te::ops::select_template(op, target.kind(), in, attrs);
    if (!c) return std::nullopt;
    tuner::Task task = tuner::Task::create(records::Workload{c->name, c->shape, c->dtype, c->attrs}, target);
    std::optional<records::Record> r = tuner::best_record(task, best);
    if (!r) return std::nullopt;
    return r->result.mean_cost();
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

std::function<int64_t(const Graph&, int, int64_t, int64_t)> winograd_if_faster(
    std::shared_ptr<const records::ApplyHistoryBest> best, const Target& target, std::vector<int64_t> tiles) {
  LOOM_CHECK(best != nullptr, "winograd_if_faster: no records given");
  for (int64_t m : tiles) LOOM_CHECK(m >= 2 && m <= 6, "winograd_if_faster: tile {} is not in 2..6", m);
  return [best, target, tiles](const Graph& g, int node, int64_t ib, int64_t ob) -> int64_t {
    const Node& n = g.nodes[size_t(node)];
    const TensorType& x = g.type(n.inputs[0]);
    const TensorType& w = g.type(n.inputs[1]);
    const int64_t C = x.shape[1], K = w.shape[0];
    const std::string dl = fmt::format("NCHW{}c", ib);
    const te::ops::TensorType data{{x.shape[0], C / ib, x.shape[2], x.shape[3], ib}, x.dtype, dl};
    te::ops::Attrs attrs{{"padding", n.attrs.at("padding")},
                         {"layout", dl},
                         {"out_layout", fmt::format("NCHW{}c", ob)}};
    te::ops::Attrs direct_attrs = attrs;
    for (const char* k : {"strides", "dilation"}) direct_attrs[k] = n.attrs.at(k);
    const te::ops::TensorType kernel{{K / ob, C / ib, w.shape[2], w.shape[3], ib, ob}, w.dtype, ""};
    const std::optional<double> direct = best_cost("conv2d_nchwc", {data, kernel}, direct_attrs, *best, target);
    if (!direct) return 0;
    int64_t pick = 0;
    double cost = *direct;
    for (int64_t m : tiles) {
      const te::ops::TensorType u{{m + 2, m + 2, K / ob, C / ib, ib, ob}, w.dtype, ""};
      std::optional<double> c = best_cost("conv2d_nchwc_winograd", {data, u}, attrs, *best, target);
      if (c && *c < cost) {
        cost = *c;
        pick = m;
      }
    }
    return pick;
  };
}

}  // namespace loom::graph_opt
