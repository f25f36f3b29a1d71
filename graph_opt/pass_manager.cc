// The pass manager: the one place that orders the graph passes.
//
// Order and why:
//   simplify_inference        batch_norm becomes multiply/add by per-channel parameters
//   fold_constants            … which fold to constants here (and an attention's scale)
//   fuse_attention            attention chains as exporters write them → one attention operator
//   fold_scale_axis           the scale/shift move into the preceding conv2d/dense weights and bias
//   fold_constants            … which fold here
//   eliminate_common_subexpr  before layout, so shared values are transformed once
//   sink_reshapes             reshapes move below elementwise chains, out of the anchors' epilogues
//   alter_layout              NCHW{b}c regions; weights get layout_transform nodes
//   cancel_layout_transforms  inverse pairs left at region boundaries go
//   fold_constants            the weights' layout_transforms fold
//   eliminate_dead_code       the unfolded originals and unused parameters go
//   fuse_ops                  last: it partitions the final nodes into kernels
#include <ostream>

#include "loom/graph_opt/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph_opt {

PassManager::PassManager(PassOptions opt) : opt_(std::move(opt)) {
  LayoutOptions layout = opt_.layout;
  FuseOptions fuse = opt_.fuse;
  if (opt_.opt_level < 1) fuse.level = 0;
  passes_ = {
      {"simplify_inference", 1, simplify_inference},
      {"fold_constants", 1, fold_constants},
      {"fuse_attention", 1, fuse_attention},
      {"fold_scale_axis", 2, fold_scale_axis},
      {"fold_constants", 1, fold_constants},
      {"eliminate_common_subexpr", 2, eliminate_common_subexpr},
      {"sink_reshapes", 1, sink_reshapes},
      {"alter_layout", 3, [layout](const Graph& g) { return alter_layout(g, layout); }},
      {"cancel_layout_transforms", 3, cancel_layout_transforms},
      {"fold_constants", 1, fold_constants},
      {"eliminate_dead_code", 1, eliminate_dead_code},
      {"fuse_ops", 0, [fuse](const Graph& g) { return fuse_ops(g, fuse); }},
  };
  std::vector<std::string> names = pass_names();
  for (const std::string& d : opt_.disabled)
    LOOM_CHECK(std::find(names.begin(), names.end(), d) != names.end(), "no graph pass is named '{}' (passes: {})", d,
               fmt::format("{}", fmt::join(names, ", ")));
  for (const std::string& d : opt_.print_after)
    LOOM_CHECK(std::find(names.begin(), names.end(), d) != names.end(), "no graph pass is named '{}' (passes: {})", d,
               fmt::format("{}", fmt::join(names, ", ")));
}

std::vector<std::string> pass_names() {
  return {"simplify_inference", "fold_constants", "fuse_attention",           "fold_scale_axis",
          "fold_constants",     "eliminate_common_subexpr", "sink_reshapes", "alter_layout",
          "cancel_layout_transforms", "fold_constants", "eliminate_dead_code", "fuse_ops"};
}

Graph PassManager::run(const Graph& input) const {
  Graph g = input;
  g.groups.clear();
  for (const PassInfo& p : passes_) {
    if (p.opt_level > opt_.opt_level || opt_.disabled.count(p.name)) continue;
    try {
      g = p.run(g);
      if (opt_.verify_each) verify(g);
    } catch (const Error& e) {
      fail("graph pass {}: {}", p.name, e.what());
    }
    if (opt_.print_to && (opt_.print_after_all || opt_.print_after.count(p.name)))
      *opt_.print_to << "// after " << p.name << "\n" << g;
  }
  return g;
}

Graph optimize(const Graph& g, const PassOptions& opt) { return PassManager(opt).run(g); }

}  // namespace loom::graph_opt
