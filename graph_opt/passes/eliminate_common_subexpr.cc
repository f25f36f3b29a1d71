// Common-subexpression elimination: one node per (operator, attributes, inputs), and one
// constant per (type, contents).
#include <cstring>
#include <map>
#include <tuple>

#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/passes.h"
#include "../model_format.h"

namespace loom::graph_opt {

namespace {

uint64_t content_hash(const runtime::NDArray& a) { return detail::fnv1a(a.raw_data(), a.nbytes()); }

bool same_contents(const runtime::NDArray& a, const runtime::NDArray& b) {
  return a.raw_data() == b.raw_data() || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

Graph eliminate_common_subexpr(const Graph& g) {
  GraphRewriter rw(g);
  // Op nodes by their operator, attributes and (rewritten) inputs.
  std::map<std::tuple<std::string, Attrs, std::vector<Value>>, int> ops;
  // Constants by type and content hash; equal hashes are compared byte by byte.
  std::map<std::pair<std::string, uint64_t>, std::vector<int>> constants;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_constant()) {
      auto& same = constants[{to_string(n.outputs[0]), content_hash(n.value)}];
      int found = -1;
      for (int c : same)
        if (same_contents(g.nodes[size_t(c)].value, n.value)) found = c;
      if (found >= 0) {
        rw.replace({int(i), 0}, rw.map({found, 0}));
        continue;
      }
      same.push_back(int(i));
    } else if (n.is_op()) {
      auto key = std::make_tuple(n.op, n.attrs, rw.map_inputs(int(i)));
      auto it = ops.find(key);
      if (it != ops.end()) {
        for (size_t k = 0; k < n.outputs.size(); ++k) rw.replace({int(i), int(k)}, rw.map({it->second, int(k)}));
        continue;
      }
      ops.emplace(std::move(key), int(i));
    }
    rw.copy(int(i));
  }
  return rw.finish();
}

}  // namespace loom::graph_opt
