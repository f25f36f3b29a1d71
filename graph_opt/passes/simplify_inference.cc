// Inference simplification: batch_norm becomes a multiply and an add by per-channel
//   scale = gamma / sqrt(var + epsilon),  shift = beta - mean * scale,
// computed by graph ops on the batch-norm parameters (constants in a trained model, so
// fold_constants turns them into two constant vectors). The final add keeps the batch
// norm's name.
#include "loom/graph_opt/passes.h"
#include "pass_util.h"

namespace loom::graph_opt {

Graph simplify_inference(const Graph& g) {
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.is_op() || n.op != "batch_norm") {
      rw.copy(int(i));
      continue;
    }
    std::vector<Value> in = rw.map_inputs(int(i));
    const Value x = in[0], gamma = in[1], beta = in[2], mean = in[3], var = in[4];
    const TensorType& xt = rw.type(x);
    int axis = int(te::ops::attr_int(n.attrs, "axis"));
    if (axis < 0) axis += int(xt.shape.size());
    const std::string& layout = te::ops::attr_str(n.attrs, "layout");
    int64_t channels = numel(rw.type(gamma));
    const std::string& p = n.name;
    Value eps = detail::fill_constant(rw, p + ".epsilon", {1}, rw.type(var).dtype, te::ops::attr_float(n.attrs, "epsilon"));
    Value stddev = rw.op("sqrt", {rw.add(var, eps, rw.unique_name(p + ".var_eps"))}, {}, rw.unique_name(p + ".std"));
    Value scale = rw.op("divide", {gamma, stddev}, {}, rw.unique_name(p + ".scale"));
    Value shift = rw.op("subtract", {beta, rw.multiply(mean, scale, rw.unique_name(p + ".mean_scale"))}, {},
                        rw.unique_name(p + ".shift"));
    std::vector<int64_t> shape = detail::per_channel_shape(xt, axis, layout, channels);
    scale = detail::reshape_to(rw, scale, shape, p + ".scale_b");
    shift = detail::reshape_to(rw, shift, shape, p + ".shift_b");
    Value y = rw.multiply(x, scale, rw.unique_name(p + ".mul"));
    rw.replace({int(i), 0}, rw.add(y, shift, rw.unique_name(p)));
  }
  return rw.finish();
}

}  // namespace loom::graph_opt
