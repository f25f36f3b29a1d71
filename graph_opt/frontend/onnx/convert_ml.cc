// Converters of ONNX's traditional machine-learning operators (domain ai.onnx.ml):
// Binarizer (where(x > threshold, 1, 0)), ArrayFeatureExtractor (a take along the last
// axis) and TreeEnsemble (each leaf's path as a conjunction of its nodes' comparisons, the
// chosen leaves' weights selected with where and aggregated across trees).
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

void binarizer(Importer& im) {
  const DataType t = im.input_dtype(0);
  if (t.is_bool()) im.invalid("X must be numeric, got bool");
  const size_t rank = std::max<size_t>(im.input_shape(0).size(), 1);
  Value x = im.input(0);
  Value above = im.op("greater", {x, im.scalar(im.attr_float("threshold", 0.0), t, rank, "threshold")});
  im.set_output(0, im.op("where", {above, im.scalar(1, t, rank, "one"), im.scalar(0, t, rank, "zero")}),
                im.input_scalar(0));
}

/// ArrayFeatureExtractor: X [..., N] (a vector as [1, N]) and indices Y (any shape, flattened)
/// -> [..., len(Y)].
void array_feature_extractor(Importer& im) {
  std::vector<int64_t> xs = im.input_shape(0);
  const std::vector<int64_t> ys = im.input_shape(1);
  if (im.input_dtype(1) != DataType::Int(64)) im.invalid("indices Y must be int64, got " + im.input_dtype(1).str());
  if (xs.empty()) im.invalid("X must have at least one dim");
  Value x = im.input(0);
  if (xs.size() == 1) {
    xs = {1, xs[0]};
    x = im.reshape(x, xs);
  }
  Value idx = im.reshape(im.input(1), {product(ys)});
  im.set_output(0, im.op("take", {x, idx}, {{"axis", int64_t(xs.size()) - 1}}));
}

/// The values of a tensor attribute as doubles.
std::vector<double> tensor_values(Importer& im, const std::string& name) {
  runtime::NDArray a = tensor_to_array(im.attr_tensor(name), "", im.where() + ": " + name);
  std::vector<double> v(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) v[size_t(i)] = a.get(i);
  return v;
}

/// TreeEnsemble (ai.onnx.ml opset 5): X [N, F] -> [N, n_targets].
void tree_ensemble(Importer& im) {
  if (im.ml_opset() < 5) im.invalid(fmt::format("TreeEnsemble exists from ai.onnx.ml opset 5; the model imports {}", im.ml_opset()));
  const std::vector<int64_t> xs = im.input_shape(0);
  const DataType t = im.input_dtype(0);
  if (xs.size() != 2) im.invalid(fmt::format("X {} must be [N, features]", shape_str(xs)));
  if (!t.is_float()) im.unsupported("X of type " + t.str() + " (floating point only)");
  const std::vector<double> splits = tensor_values(im, "nodes_splits"), modes = tensor_values(im, "nodes_modes"),
                            weights = tensor_values(im, "leaf_weights");
  const std::vector<int64_t> features = im.attr_ints("nodes_featureids"), true_ids = im.attr_ints("nodes_truenodeids"),
                             false_ids = im.attr_ints("nodes_falsenodeids"), true_leaf = im.attr_ints("nodes_trueleafs"),
                             false_leaf = im.attr_ints("nodes_falseleafs"), targets = im.attr_ints("leaf_targetids"),
                             roots = im.attr_ints("tree_roots");
  const std::vector<int64_t> missing_true =
      im.attr_ints("nodes_missing_value_tracks_true", std::vector<int64_t>(splits.size(), 0));
  if (im.has_attr("nodes_hitrates")) im.attr_tensor("nodes_hitrates");  // a hint for runtimes, not the result
  const std::vector<double> members = im.has_attr("membership_values") ? tensor_values(im, "membership_values")
                                                                       : std::vector<double>{};
  const int64_t n_targets = im.attr_int("n_targets");
  const int64_t aggregate = im.attr_int("aggregate_function", 1), post = im.attr_int("post_transform", 0);
  if (post != 0) im.unsupported(fmt::format("post_transform {} (loom takes NONE)", post));
  if (aggregate < 0 || aggregate > 3) im.invalid(fmt::format("aggregate_function {} is not 0 to 3", aggregate));
  const size_t nodes = splits.size(), leaves = weights.size();
  for (size_t k : {modes.size(), features.size(), true_ids.size(), false_ids.size(), true_leaf.size(), false_leaf.size(),
                   missing_true.size()})
    if (k != nodes) im.invalid(fmt::format("the nodes_* attributes must have {} entries each (nodes_splits)", nodes));
  if (targets.size() != leaves) im.invalid("leaf_targetids and leaf_weights must have one entry per leaf");
  if (n_targets < 1 || roots.empty()) im.invalid("n_targets and tree_roots must be positive and non-empty");
  if (leaves > 4096) im.unsupported(fmt::format("{} leaves (loom expands each leaf's path; at most 4096)", leaves));

  // The set of each membership node, in node order, NaN-separated in membership_values.
  std::map<size_t, std::vector<double>> sets;
  size_t next_member = 0;
  for (size_t n = 0; n < nodes; ++n) {
    if (modes[n] != 6) continue;
    std::vector<double>& s = sets[n];
    while (next_member < members.size() && !std::isnan(members[next_member])) s.push_back(members[next_member++]);
    if (next_member++ >= members.size()) im.invalid("membership_values holds fewer sets than BRANCH_MEMBER nodes");
  }
  const size_t rank = 2;
  std::map<int64_t, Value> columns;
  auto column = [&](int64_t f) {
    if (f < 0 || f >= xs[1]) im.invalid(fmt::format("feature {} is not a column of X {}", f, shape_str(xs)));
    if (!columns.count(f))
      columns[f] = im.op("take", {im.input(0), im.constant(runtime::NDArray::from_vector({double(f)}, {1}, DataType::Int(64)), "feature")},
                         {{"axis", int64_t(1)}});
    return columns.at(f);
  };
  std::map<size_t, Value> conditions;
  auto condition = [&](size_t n) {
    if (conditions.count(n)) return conditions.at(n);
    Value x = column(features[n]);
    auto cmp = [&](const char* op, double v) { return im.op(op, {x, im.scalar(v, t, rank, "split")}); };
    Value c;
    switch (int(modes[n])) {
      case 0: c = cmp("less_equal", splits[n]); break;
      case 1: c = cmp("less", splits[n]); break;
      case 2: c = cmp("greater_equal", splits[n]); break;
      case 3: c = cmp("greater", splits[n]); break;
      case 4: c = cmp("equal", splits[n]); break;
      case 5: c = cmp("not_equal", splits[n]); break;
      case 6: {
        const std::vector<double>& s = sets.at(n);
        if (s.empty()) im.invalid(fmt::format("node {} tests membership of an empty set", n));
        c = cmp("equal", s[0]);
        for (size_t i = 1; i < s.size(); ++i) c = im.op("logical_or", {c, cmp("equal", s[i])});
        break;
      }
      default: im.invalid(fmt::format("node {} has mode {} (not 0 to 6)", n, modes[n]));
    }
    if (missing_true[n]) c = im.op("logical_or", {c, im.op("isnan", {x})});
    return conditions[n] = c;
  };
  // Per tree and target: the weight of the leaf the sample reaches, or the aggregate's identity.
  const double lowest = -std::numeric_limits<double>::max(), highest = std::numeric_limits<double>::max();
  const double identity = aggregate == 2 ? (t == DataType::Float(32) ? std::numeric_limits<float>::max() : highest)
                          : aggregate == 3 ? (t == DataType::Float(32) ? -std::numeric_limits<float>::max() : lowest)
                                           : 0.0;
  std::vector<std::optional<Value>> result(static_cast<size_t>(n_targets));
  for (int64_t root : roots) {
    if (root < 0 || size_t(root) >= nodes) im.invalid(fmt::format("tree root {} is not a node", root));
    std::vector<std::pair<int64_t, std::optional<Value>>> reached;  // leaf, path condition
    std::function<void(int64_t, bool, std::optional<Value>, int)> walk = [&](int64_t id, bool leaf, std::optional<Value> path,
                                                                             int depth) {
      if (depth > 256) im.invalid("a tree deeper than 256 nodes (or a cycle)");
      if (leaf) {
        if (id < 0 || size_t(id) >= leaves) im.invalid(fmt::format("leaf {} is not a leaf", id));
        reached.push_back({id, path});
        return;
      }
      if (id < 0 || size_t(id) >= nodes) im.invalid(fmt::format("node {} is not a node", id));
      const size_t n = size_t(id);
      Value c = condition(n);
      auto both = [&](Value v) { return path ? im.op("logical_and", {*path, v}) : v; };
      walk(true_ids[n], true_leaf[n] != 0, both(c), depth + 1);
      walk(false_ids[n], false_leaf[n] != 0, both(im.op("logical_not", {c})), depth + 1);
    };
    const size_t r = size_t(root);
    if (true_leaf[r] && false_leaf[r] && true_ids[r] == false_ids[r])
      walk(true_ids[r], true, std::nullopt, 0);  // a tree that is one leaf
    else
      walk(root, false, std::nullopt, 0);
    for (int64_t target = 0; target < n_targets; ++target) {
      std::optional<Value> v;
      for (const auto& [leaf, path] : reached) {
        if (targets[size_t(leaf)] != target) continue;
        Value w = im.scalar(weights[size_t(leaf)], t, rank, "weight");
        Value rest = v ? *v : im.scalar(identity, t, rank, "identity");
        v = path ? im.op("where", {*path, w, rest}) : w;
      }
      if (!v) continue;
      std::optional<Value>& acc = result[size_t(target)];
      const char* combine = aggregate == 2 ? "minimum" : aggregate == 3 ? "maximum" : "add";
      acc = acc ? im.op(combine, {*acc, *v}) : *v;
    }
  }
  std::vector<Value> cols;
  for (int64_t target = 0; target < n_targets; ++target) {
    std::optional<Value> v = result[size_t(target)];
    Value col = v ? im.op("broadcast_to", {*v}, {{"shape", std::vector<int64_t>{xs[0], 1}}})
                  : im.broadcast_to(im.scalar(identity, t, rank, "identity"), {xs[0], 1});
    if (aggregate == 0) col = im.op("divide", {col, im.scalar(double(roots.size()), t, rank, "trees")});
    cols.push_back(col);
  }
  im.set_output(0, cols.size() == 1 ? cols[0] : im.op("concat", cols, {{"axis", int64_t(1)}}));
}

}  // namespace

void add_ml_converters(std::map<std::string, Converter>& m) {
  const std::string ml = std::string(kOnnxMlDomain) + ".";
  m[ml + "Binarizer"] = binarizer;
  m[ml + "ArrayFeatureExtractor"] = array_feature_extractor;
  m[ml + "TreeEnsemble"] = tree_ensemble;
}

}  // namespace loom::graph_opt::onnx_frontend
