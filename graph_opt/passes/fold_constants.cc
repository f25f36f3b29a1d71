// Constant folding: an op node whose inputs are all constants becomes constants, computed at
// compile time by te::evaluate. Walking the nodes in order folds whole constant subgraphs.
//
// te::evaluate rather than compiling with loom: it needs no schedule, no code generator and
// no JIT per folded node (a ResNet-18 folds about a hundred small computations: weight
// scaling, layout transforms of weights, batch-norm parameters), it is the same evaluator the
// reference execution trusts, and its cost grows only with the folded elements (all the
// weights of a network, once, at compile time).
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/reference.h"

namespace loom::graph_opt {

Graph fold_constants(const Graph& g) {
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.is_op() || n.inputs.empty()) {
      rw.copy(int(i));
      continue;
    }
    std::vector<Value> ins = rw.map_inputs(int(i));
    bool all_constant = true;
    for (const Value& v : ins) all_constant = all_constant && rw.graph().node(v).is_constant();
    if (!all_constant) {
      rw.copy_with(int(i), ins, n.attrs);
      continue;
    }
    std::vector<runtime::NDArray> args;
    for (const Value& v : ins) args.push_back(rw.graph().node(v).value);
    std::vector<runtime::NDArray> out =
        evaluate_node(n, args, fmt::format("graph '{}', node '{}' ({}), folding constants", g.name, n.name, n.op));
    for (size_t k = 0; k < out.size(); ++k) {
      std::string name = rw.unique_name(k == 0 ? n.name : fmt::format("{}:{}", n.name, k));
      rw.replace({int(i), int(k)}, rw.constant(name, out[k], n.outputs[k].layout));
    }
  }
  return rw.finish();
}

}  // namespace loom::graph_opt
