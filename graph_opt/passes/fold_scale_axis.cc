// Folding per-channel scales and shifts into the preceding conv2d or dense:
//   conv2d(x, W, b) * s + t  →  conv2d(x, W * s[k], b * s + t)
// for a chain of multiply / divide (by) / add / subtract (of) / bias_add with constants that
// vary only along the output channel (or are scalars), each step the only consumer of the
// one before. The new weight and bias are graph ops on the constants (reshape, multiply,
// add, …) for fold_constants to evaluate; the folded conv2d keeps its name and takes the
// chain's place, so that the values it reads are all defined there.
#include <map>
#include <set>

#include "loom/graph_opt/passes.h"
#include "pass_util.h"

namespace loom::graph_opt {

namespace {

struct Step {
  int node;
  int operand;     // the constant's position among the node's inputs
  int64_t extent;  // K, or 1 for a scalar
};

/// The output-channel axis of a foldable anchor's output and the weight shape a per-channel
/// vector of `k` elements takes, or false when the node is not foldable.
bool anchor_axes(const Graph& g, const Node& n, int* axis, std::vector<int64_t>* wshape, int64_t k) {
  if (n.op == "dense") {
    *axis = 1;
    *wshape = {k, 1};
    return true;
  }
  if (n.op != "conv2d") return false;
  const std::string& layout = te::ops::attr_str(n.attrs, "layout");
  if (layout == "NCHW") {
    *axis = 1;
    *wshape = {k, 1, 1, 1};  // OIHW
    return true;
  }
  if (layout == "NHWC") {
    *axis = 3;
    *wshape = {1, 1, 1, k};  // HWIO
    return true;
  }
  return false;
}

/// The foldable chain after anchor `c`.
std::vector<Step> chain_after(const Graph& g, const std::vector<std::vector<int>>& users, int c) {
  const Node& anchor = g.nodes[size_t(c)];
  const std::vector<int64_t>& out = anchor.outputs[0].shape;
  int axis = 0;
  std::vector<int64_t> wshape;
  if (!anchor_axes(g, anchor, &axis, &wshape, 1) || anchor.outputs.size() != 1) return {};
  std::vector<Step> chain;
  int cur = c;
  while (users[size_t(cur)].size() == 1 && users[size_t(cur)][0] >= 0) {
    int u = users[size_t(cur)][0];
    const Node& un = g.nodes[size_t(u)];
    static const std::set<std::string> kOps = {"multiply", "divide", "add", "subtract", "bias_add"};
    if (!kOps.count(un.op) || un.inputs.size() != 2) break;
    bool lhs = un.inputs[0].node == cur, rhs = un.inputs[1].node == cur;
    if (lhs == rhs) break;  // neither, or both
    if (!lhs && (un.op == "divide" || un.op == "subtract" || un.op == "bias_add")) break;
    int operand = lhs ? 1 : 0;
    const Node& k = g.node(un.inputs[size_t(operand)]);
    if (!k.is_constant() || k.outputs[0].dtype != anchor.outputs[0].dtype) break;
    std::optional<int64_t> ext;
    if (un.op == "bias_add") {
      int ax = int(te::ops::attr_int(un.attrs, "axis"));
      if (ax < 0) ax += int(out.size());
      if (ax == axis && te::ops::attr_str(un.attrs, "layout").empty()) ext = numel(k.outputs[0]);
    } else {
      ext = detail::per_axis_extent(k.outputs[0].shape, out, axis);
    }
    if (!ext || un.outputs[0].shape != out) break;
    chain.push_back({u, operand, *ext});
    cur = u;
  }
  return chain;
}

}  // namespace

Graph fold_scale_axis(const Graph& g) {
  std::vector<std::vector<int>> users = detail::users_with_outputs(g);
  std::map<int, int> anchor_of_last;  // last chain node -> anchor
  std::map<int, std::vector<Step>> chains;
  std::set<int> skipped;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!g.nodes[i].is_op()) continue;
    std::vector<Step> chain = chain_after(g, users, int(i));
    if (chain.empty()) continue;
    skipped.insert(int(i));
    for (const Step& s : chain) skipped.insert(s.node);
    anchor_of_last[chain.back().node] = int(i);
    chains[int(i)] = std::move(chain);
  }

  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto last = anchor_of_last.find(int(i));
    if (last == anchor_of_last.end()) {
      if (!skipped.count(int(i))) rw.copy(int(i));
      continue;
    }
    int c = last->second;
    const Node& anchor = g.nodes[size_t(c)];
    std::vector<Value> in = rw.map_inputs(c);
    const TensorType& out = anchor.outputs[0];
    int axis = 0;
    std::vector<int64_t> wshape;
    int64_t k = 0;
    anchor_axes(g, anchor, &axis, &wshape, 1);
    k = out.shape[size_t(axis)];
    anchor_axes(g, anchor, &axis, &wshape, k);
    Value w = in[1];
    std::optional<Value> b;
    if (in.size() > 2) b = in[2];
    const std::string& p = anchor.name;
    for (const Step& s : chains[c]) {
      const Node& sn = g.nodes[size_t(s.node)];
      Value vec = detail::reshape_to(rw, rw.map(sn.inputs[size_t(s.operand)]), {s.extent}, p + ".fold_vec");
      if (sn.op == "multiply" || sn.op == "divide") {
        std::vector<int64_t> ws = s.extent == 1 ? std::vector<int64_t>(wshape.size(), 1) : wshape;
        Value wv = detail::reshape_to(rw, vec, ws, p + ".fold_wvec");
        w = rw.op(sn.op, {w, wv}, {}, rw.unique_name(p + ".weight_folded"));
        if (b) b = rw.op(sn.op, {*b, vec}, {}, rw.unique_name(p + ".bias_folded"));
      } else {
        if (!b) b = detail::fill_constant(rw, p + ".bias", {k}, out.dtype, 0.0);
        std::string op = sn.op == "subtract" ? "subtract" : "add";
        b = rw.op(op, {*b, vec}, {}, rw.unique_name(p + ".bias_folded"));
      }
    }
    std::vector<Value> args = {in[0], w};
    if (b) args.push_back(*b);
    Value y = rw.op(anchor.op, args, anchor.attrs, rw.unique_name(p));
    rw.replace({int(i), 0}, y);
  }
  return rw.finish();
}

}  // namespace loom::graph_opt
