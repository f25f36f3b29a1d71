// Operator fusion by pattern on the post-dominator tree, with the rules of TVM's FuseOps
// (src/relay/transforms/fuse_ops.cc).
//
// Every op node starts as its own group. Its immediate post-dominator is the nearest node
// that every path from it to a graph output passes through (none if the node's value is a
// graph output); the tree is built in one reverse-topological sweep, a node's parent being
// the least common ancestor of its consumers. Along the way each node records the highest
// edge pattern between it and its post-dominator, where an edge is the consumer's pattern,
// except that a broadcast consumer whose output has the input's shape makes an elementwise
// edge. A node then fuses into its post-dominator's group when every node on the paths
// between them (the post-dominator included) fits:
//   phase 0: an out_elemwise_fusable node (conv2d, dense, …) whose edges to its
//            post-dominator are all elementwise, through nodes of at most broadcast pattern;
//   phase 0 and 1: an elementwise/broadcast node into an injective or reduction
//            post-dominator (paths injective, the post-dominator's group anything up to an
//            anchor's);
//   phase 1: an injective node through injective paths (after phase 0, so that anchors
//            take their epilogues first); and, beyond TVM, an anchor with no schedule
//            template (a pool, scheduled from its pattern) through injective paths too, so
//            that what reshapes its small result (a global pool's layout transform and
//            flatten) runs in its kernel rather than in one of its own.
// Fusing merges every node on those paths, so each group is convex and has one output
// value, its post-dominator's, unless a member's value is also a graph output.
#include <algorithm>
#include <queue>

#include "loom/graph_opt/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph_opt {

namespace {

struct Edge {
  int node;
  OpPattern pattern;
};

OpPattern max_pattern(OpPattern a, OpPattern b) { return int(a) >= int(b) ? a : b; }

/// The post-dominator tree over op nodes (indices as in the graph).
struct PostDomTree {
  std::vector<int> parent;          // -1: none
  std::vector<int> depth;
  std::vector<OpPattern> pattern;   // highest edge pattern up to the parent
};

struct Partitioner {
  const Graph& g;
  std::vector<OpPattern> node_pattern;
  std::vector<std::vector<Edge>> outputs;  // consumers of each op node
  std::vector<bool> extern_ref;            // value is a graph output
  PostDomTree tree;
  // Union-find over nodes.
  std::vector<int> uf_parent;
  std::vector<OpPattern> group_pattern;
  std::vector<int> group_anchor;
  std::vector<int> group_size;
  std::vector<bool> visited;
  int max_group_size;

  explicit Partitioner(const Graph& graph, int max_size) : g(graph), max_group_size(max_size) {
    size_t n = g.nodes.size();
    node_pattern.assign(n, OpPattern::kOpaque);
    outputs.resize(n);
    extern_ref.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      const Node& node = g.nodes[i];
      if (!node.is_op()) continue;
      OpPattern p = te::ops::get_op(node.op).pattern;
      node_pattern[i] = p;
      for (const ValueRef& in : node.inputs) {
        if (!g.node(in).is_op()) continue;
        OpPattern edge = p;
        if (p == OpPattern::kBroadcast && g.type(in).shape == node.outputs[0].shape) edge = OpPattern::kElemwise;
        outputs[size_t(in.node)].push_back({int(i), edge});
      }
    }
    for (const ValueRef& v : g.outputs) extern_ref[size_t(v.node)] = true;
    build_tree();
    uf_parent.resize(n);
    for (size_t i = 0; i < n; ++i) uf_parent[i] = int(i);
    group_pattern = node_pattern;
    group_anchor.assign(n, -1);
    group_size.assign(n, 1);
    // An opaque operator with a schedule template (softmax) anchors the group it is alone in.
    for (size_t i = 0; i < n; ++i)
      if (node_pattern[i] == OpPattern::kOutEWiseFusable ||
          (node_pattern[i] == OpPattern::kOpaque && g.nodes[i].is_op() && has_template(int(i))))
        group_anchor[i] = int(i);
  }

  /// Whether node `n`'s operator has a schedule template on some target.
  bool has_template(int n) const { return !te::ops::get_op(g.nodes[size_t(n)].op).strategy.empty(); }

  int lca(int a, int b, OpPattern* pat) const {
    while (a != b) {
      if (a < 0 || b < 0) return -1;
      if (tree.depth[size_t(a)] < tree.depth[size_t(b)]) {
        *pat = max_pattern(*pat, tree.pattern[size_t(b)]);
        b = tree.parent[size_t(b)];
      } else if (tree.depth[size_t(b)] < tree.depth[size_t(a)]) {
        *pat = max_pattern(*pat, tree.pattern[size_t(a)]);
        a = tree.parent[size_t(a)];
      } else {
        *pat = max_pattern(*pat, max_pattern(tree.pattern[size_t(a)], tree.pattern[size_t(b)]));
        a = tree.parent[size_t(a)];
        b = tree.parent[size_t(b)];
      }
    }
    return a;
  }

  void build_tree() {
    size_t n = g.nodes.size();
    tree.parent.assign(n, -1);
    tree.depth.assign(n, 1);
    tree.pattern.assign(n, OpPattern::kOpaque);
    for (size_t i = n; i-- > 0;) {
      if (!g.nodes[i].is_op() || extern_ref[i] || outputs[i].empty()) continue;
      OpPattern pat = OpPattern::kElemwise;
      int parent = outputs[i][0].node;
      pat = max_pattern(pat, outputs[i][0].pattern);
      for (size_t k = 1; k < outputs[i].size() && parent >= 0; ++k) {
        parent = lca(parent, outputs[i][k].node, &pat);
        pat = max_pattern(pat, outputs[i][k].pattern);
      }
      tree.parent[i] = parent;
      tree.depth[i] = parent >= 0 ? tree.depth[size_t(parent)] + 1 : 1;
      tree.pattern[i] = pat;
    }
  }

  int find(int x) {
    while (uf_parent[size_t(x)] != x) {
      uf_parent[size_t(x)] = uf_parent[size_t(uf_parent[size_t(x)])];
      x = uf_parent[size_t(x)];
    }
    return x;
  }

  /// Every node on a path from src's consumers to sink (inclusive) satisfies cond(group
  /// pattern, is_sink).
  template <typename F>
  bool check_path(int src, int sink, F cond) {
    visited.assign(g.nodes.size(), false);
    for (const Edge& e : outputs[size_t(src)])
      if (!check_path_from(e.node, sink, cond)) return false;
    return true;
  }
  template <typename F>
  bool check_path_from(int x, int sink, F cond) {
    if (visited[size_t(x)]) return true;
    visited[size_t(x)] = true;
    if (!cond(group_pattern[size_t(find(x))], x == sink)) return false;
    if (x == sink) return true;
    for (const Edge& e : outputs[size_t(x)])
      if (!check_path_from(e.node, sink, cond)) return false;
    return true;
  }

  void merge(int child, int parent) {
    child = find(child);
    parent = find(parent);
    if (child == parent) return;
    uf_parent[size_t(child)] = parent;
    group_size[size_t(parent)] += group_size[size_t(child)];
    if (group_anchor[size_t(child)] >= 0) {
      LOOM_ICHECK(group_anchor[size_t(parent)] < 0);
      group_anchor[size_t(parent)] = group_anchor[size_t(child)];
      group_pattern[size_t(parent)] = max_pattern(group_pattern[size_t(child)], group_pattern[size_t(parent)]);
    }
  }

  /// Merges every node on the paths from src to sink into sink's group.
  void commit(int src, int sink) {
    visited.assign(g.nodes.size(), false);
    int target = find(sink);
    commit_from(src, sink, target);
  }
  void commit_from(int x, int sink, int target) {
    if (x == sink || visited[size_t(x)]) return;
    visited[size_t(x)] = true;
    merge(x, target);
    target = find(target);
    for (const Edge& e : outputs[size_t(x)]) commit_from(e.node, sink, target);
  }

  int size_with(int x, int sink) { return group_size[size_t(find(x))] + group_size[size_t(find(sink))]; }

  void run_phase(int phase) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!g.nodes[i].is_op()) continue;
      int root = find(int(i));
      OpPattern gp = group_pattern[size_t(root)];
      if (gp == OpPattern::kOpaque) continue;
      int dom = tree.parent[i];
      if (dom < 0) continue;
      if (find(dom) == root) continue;
      if (size_with(int(i), dom) > max_group_size) continue;
      OpPattern dom_edge = tree.pattern[i];
      if (gp == OpPattern::kOutEWiseFusable) {
        if (phase == 0 && dom_edge == OpPattern::kElemwise) {
          auto cond = [](OpPattern p, bool) { return int(p) <= int(OpPattern::kBroadcast); };
          if (check_path(int(i), dom, cond)) commit(int(i), dom);
        } else if (phase == 1 && !has_template(group_anchor[size_t(root)]) &&
                   int(dom_edge) <= int(OpPattern::kInjective)) {
          auto cond = [](OpPattern p, bool) { return int(p) <= int(OpPattern::kInjective); };
          if (check_path(int(i), dom, cond)) commit(int(i), dom);
        }
      } else if (int(gp) <= int(OpPattern::kBroadcast)) {
        if (!(int(dom_edge) <= int(OpPattern::kInjective) || dom_edge == OpPattern::kCommReduce)) continue;
        auto cond = [](OpPattern p, bool is_sink) {
          if (!is_sink) return int(p) <= int(OpPattern::kInjective);
          return int(p) <= int(OpPattern::kInjective) || p == OpPattern::kCommReduce ||
                 p == OpPattern::kOutEWiseFusable;
        };
        if (check_path(int(i), dom, cond)) commit(int(i), dom);
      } else if (gp == OpPattern::kInjective) {
        if (phase != 1) continue;
        auto cond = [](OpPattern p, bool) { return int(p) <= int(OpPattern::kInjective); };
        if (check_path(int(i), dom, cond)) commit(int(i), dom);
      }
    }
  }
};

std::string group_name(const Graph& g, const std::vector<int>& nodes) {
  std::string s = "fused";
  for (int n : nodes) {
    if (s.size() > 80) {
      s += "_etc";
      break;
    }
    s += "_" + g.nodes[size_t(n)].op;
  }
  return s;
}

}  // namespace

Graph fuse_ops(const Graph& g, const FuseOptions& opt) {
  Graph out = g;
  out.groups.clear();
  Partitioner p(g, opt.max_group_size);
  if (opt.level > 0) {
    p.run_phase(0);
    p.run_phase(1);
  }
  // Groups by root, members ascending.
  std::map<int, std::vector<int>> members;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].is_op()) members[p.find(int(i))].push_back(int(i));
  std::vector<int> roots;
  std::map<int, int> index_of_root;
  for (auto& [r, m] : members) {
    index_of_root[r] = int(roots.size());
    roots.push_back(r);
  }
  // Execution order: groups sorted topologically, ties broken by their last member.
  size_t ng = roots.size();
  std::vector<std::vector<int>> succ(ng);
  std::vector<int> indeg(ng, 0);
  for (size_t k = 0; k < ng; ++k)
    for (int n : members[roots[k]])
      for (const ValueRef& v : g.nodes[size_t(n)].inputs) {
        if (!g.node(v).is_op()) continue;
        int from = index_of_root[p.find(v.node)];
        if (from == int(k)) continue;
        succ[size_t(from)].push_back(int(k));
        ++indeg[k];
      }
  auto later = [&](int a, int b) { return members[roots[size_t(a)]].back() > members[roots[size_t(b)]].back(); };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (size_t k = 0; k < ng; ++k)
    if (indeg[k] == 0) ready.push(int(k));
  std::map<std::string, int> name_count;
  while (!ready.empty()) {
    int k = ready.top();
    ready.pop();
    int r = roots[size_t(k)];
    FusedGroup grp;
    grp.nodes = members[r];
    grp.anchor = p.group_anchor[size_t(r)];
    grp.pattern = p.group_pattern[size_t(r)];
    if (grp.anchor < 0) {
      grp.pattern = OpPattern::kElemwise;
      for (int n : grp.nodes) grp.pattern = max_pattern(grp.pattern, p.node_pattern[size_t(n)]);
    }
    std::string base = group_name(g, grp.nodes);
    int c = name_count[base]++;
    grp.name = c == 0 ? base : fmt::format("{}_{}", base, c);
    out.groups.push_back(std::move(grp));
    for (int s : succ[size_t(k)])
      if (--indeg[size_t(s)] == 0) ready.push(s);
  }
  LOOM_ICHECK(out.groups.size() == ng);
  set_group_boundaries(out);
  return out;
}

}  // namespace loom::graph_opt
