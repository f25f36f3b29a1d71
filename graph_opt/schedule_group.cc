// fused_kernel: a fused group as the tuner's FusedKernel (an op graph of its members).
#include "schedule_group.h"

#include <map>

namespace loom::graph_opt {

tuner::FusedKernel fused_kernel(const Graph& g, int group) {
  const FusedGroup& grp = g.groups[size_t(group)];
  tuner::FusedKernel k;
  std::map<ValueRef, int> value;  // graph value → op graph value number
  for (ValueRef v : grp.inputs) {
    value[v] = int(k.graph.inputs.size());
    k.graph.inputs.push_back(g.type(v));
  }
  int next = int(grp.inputs.size());
  for (int n : grp.nodes) {
    const Node& node = g.nodes[size_t(n)];
    std::vector<int> in;
    for (ValueRef v : node.inputs) {
      auto it = value.find(v);
      LOOM_CHECK(it != value.end(), "graph '{}', group '{}': node '{}' reads {}, which is neither a member nor an input",
                 g.name, grp.name, node.name, g.value_name(v));
      in.push_back(it->second);
    }
    if (n == grp.anchor) k.anchor = int(k.graph.nodes.size());
    try {
      k.graph.add(node.op, std::move(in), node.attrs);
    } catch (const Error& e) {
      fail("graph '{}', group '{}', node '{}': {}", g.name, grp.name, node.name, e.what());
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) value[{n, int(o)}] = next++;
  }
  for (ValueRef v : grp.outputs) k.graph.outputs.push_back(value.at(v));
  return k;
}

}  // namespace loom::graph_opt
