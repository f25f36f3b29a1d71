// Sinking reshapes: an elementwise or numpy-broadcasting operator on a reshaped value runs on
// the value before the reshape, and the reshape moves below it:
//   add(reshape(x, O), b)  ->  reshape(add(x, b'), O)
// where b' is b with the leading dims of extent 1 that the shape change would misalign
// dropped (a reshape: folded for a constant, a view of anything else, memory_plan.h). Legal
// when every other operand varies only along the trailing dims that O and x's shape share.
// Repeated down a chain, a reshape between an anchor (dense, matmul) and its bias and
// activation leaves their way, so fuse_ops gives them one kernel; a reshape of a reshape
// becomes one reshape of the first one's input, and a reshape to the shape its input has
// already goes. A value the graph returns keeps its operator (a reshape into the caller's
// buffer would copy).
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/passes.h"
#include "loom/runtime/error.h"
#include "pass_util.h"

namespace loom::graph_opt {

namespace {

using detail::is_reshape;

/// An operator whose output element i depends on element i of each input under numpy
/// broadcasting: elementwise, or broadcast without attributes (bias_add and batch_norm name
/// their axis).
bool maps_elements(const Node& n) {
  if (!n.is_op() || n.outputs.size() != 1) return false;
  const te::ops::OpDef& d = te::ops::get_op(n.op);
  return d.pattern == OpPattern::kElemwise || (d.pattern == OpPattern::kBroadcast && d.attrs.empty());
}

/// Length of the common suffix of `a` and `b`.
size_t common_suffix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[a.size() - 1 - k] == b[b.size() - 1 - k]) ++k;
  return k;
}

class Sinker {
 public:
  explicit Sinker(const Graph& g) : g_(g), rw_(g) {}

  Graph run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (is_reshape(n)) {
        rw_.replace({int(i), 0}, reshaped(rw_.map(n.inputs[0]), n.outputs[0].shape, n.name));
      } else if (!maps_elements(n) || !sink(int(i))) {
        rw_.copy(int(i));
      }
    }
    return rw_.finish();
  }

 private:
  /// `x` (a value of the new graph) reshaped to `shape`: through the reshapes that made x.
  Value reshaped(Value x, const std::vector<int64_t>& shape, const std::string& name) {
    while (is_reshape(rw_.graph().node(x))) x = rw_.graph().node(x).inputs[0];
    if (rw_.type(x).shape == shape) return x;
    return rw_.reshape(x, shape, rw_.unique_name(name));
  }

  /// Rewrites node `i` as op(sources) followed by a reshape; false (nothing emitted) when it
  /// does not apply.
  bool sink(int i) {
    const Node& n = g_.nodes[size_t(i)];
    const std::vector<int64_t>& out = n.outputs[0].shape;
    for (const ValueRef& o : g_.outputs)
      if (o.node == i) return false;  // a reshape into the caller's buffer would be a copy
    std::vector<Value> in = rw_.map_inputs(i);
    // The shape before the reshape, from the first reshaped operand of the output's shape.
    std::optional<std::vector<int64_t>> before;
    for (Value v : in) {
      const Node& p = rw_.graph().node(v);
      if (is_reshape(p) && rw_.type(v).shape == out) {
        before = rw_.type(p.inputs[0]).shape;
        break;
      }
    }
    if (!before) return false;
    const size_t k = common_suffix(out, *before);
    std::vector<std::optional<Value>> src(in.size());
    for (size_t a = 0; a < in.size(); ++a) {
      const Node& p = rw_.graph().node(in[a]);
      if (is_reshape(p) && rw_.type(in[a]).shape == out && rw_.type(p.inputs[0]).shape == *before) {
        src[a] = p.inputs[0];
        continue;
      }
      // Another operand: aligned right against `out`, it may vary only within the shared suffix.
      const std::vector<int64_t>& s = rw_.type(in[a]).shape;
      if (s.size() > out.size()) return false;
      for (size_t d = 0; d + k < s.size(); ++d)
        if (s[d] != 1) return false;
      if (s.size() <= k) {
        src[a] = in[a];
        continue;
      }
      // Drop the leading 1s (a reshape that folds for a constant and is a view otherwise).
      src[a] = std::nullopt;
    }
    std::vector<Value> args(in.size());
    for (size_t a = 0; a < in.size(); ++a) {
      if (src[a]) {
        args[a] = *src[a];
      } else {
        const std::vector<int64_t>& s = rw_.type(in[a]).shape;
        args[a] = reshaped(in[a], std::vector<int64_t>(s.end() - long(k), s.end()), n.name + ".operand");
      }
    }
    Value y = rw_.op(n.op, args, n.attrs, rw_.unique_name(n.name + ".unreshaped"));
    LOOM_ICHECK(rw_.type(y).shape == *before);
    rw_.replace({i, 0}, rw_.reshape(y, out, rw_.unique_name(n.name)));
    return true;
  }

  const Graph& g_;
  GraphRewriter rw_;
};

}  // namespace

Graph sink_reshapes(const Graph& g) { return Sinker(g).run(); }

}  // namespace loom::graph_opt
