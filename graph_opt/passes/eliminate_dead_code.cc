// Dead-code elimination: keep what the graph's outputs depend on, and the graph inputs.
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/passes.h"

namespace loom::graph_opt {

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live(g.nodes.size(), false);
  for (const ValueRef& v : g.outputs) live[size_t(v.node)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (g.nodes[i].is_input()) live[i] = true;
    if (!live[i]) continue;
    for (const ValueRef& v : g.nodes[i].inputs) live[size_t(v.node)] = true;
  }
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live[i]) rw.copy(int(i));
  return rw.finish();
}

}  // namespace loom::graph_opt
