// Cancelling layout transforms: a layout_transform to the layout its input has already, and
// layout_transform(layout_transform(x, A→B), B→A) where the round trip gives x back (same
// type: no padding added or cropped), are replaced by their input.
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/passes.h"

namespace loom::graph_opt {

Graph cancel_layout_transforms(const Graph& g) {
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.is_op() || n.op != "layout_transform") {
      rw.copy(int(i));
      continue;
    }
    const std::string& src = te::ops::attr_str(n.attrs, "src_layout");
    const std::string& dst = te::ops::attr_str(n.attrs, "dst_layout");
    Value x = rw.map(n.inputs[0]);
    const TensorType& out = n.outputs[0];
    if (src == dst && rw.type(x).shape == out.shape) {
      rw.replace({int(i), 0}, x);
      continue;
    }
    const Node& p = rw.graph().node(x);
    if (p.is_op() && p.op == "layout_transform" && te::ops::attr_str(p.attrs, "src_layout") == dst &&
        te::ops::attr_str(p.attrs, "dst_layout") == src) {
      Value y = p.inputs[0];
      const TensorType& yt = rw.type(y);
      if (yt.shape == out.shape && yt.dtype == out.dtype) {
        rw.replace({int(i), 0}, y);
        continue;
      }
    }
    rw.copy(int(i));
  }
  return rw.finish();
}

}  // namespace loom::graph_opt
