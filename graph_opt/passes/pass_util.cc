#include "pass_util.h"

#include "loom/runtime/error.h"
#include "loom/te/ops.h"

namespace loom::graph_opt::detail {

Value fill_constant(GraphBuilder& b, const std::string& name, std::vector<int64_t> shape, DataType t, double v) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), t);
  for (int64_t i = 0, n = a.numel(); i < n; ++i) a.set(i, v);
  return b.constant(b.unique_name(name), a);
}

std::vector<int64_t> per_channel_shape(const TensorType& x, int axis, const std::string& layout, int64_t channels) {
  size_t nd = x.shape.size();
  LOOM_ICHECK(axis >= 0 && size_t(axis) < nd);
  std::vector<int64_t> shape(nd - size_t(axis), 1);
  if (layout.empty()) {
    shape[0] = channels;
    return shape;
  }
  te::ops::Layout l = te::ops::Layout::parse(layout);
  LOOM_CHECK(l.ndim() == nd, "layout '{}' has {} axes but the value is {}", layout, l.ndim(), to_string(x));
  char primal = l.axes[size_t(axis)].name;
  int sub = l.index_of(char(primal - 'A' + 'a'));
  if (sub < 0) {
    shape[0] = channels;
    return shape;
  }
  int64_t block = l.axes[size_t(sub)].factor;
  LOOM_CHECK(sub > axis && channels % block == 0, "a per-channel vector of {} elements does not fit layout '{}'",
             channels, layout);
  shape[0] = channels / block;
  shape[size_t(sub - axis)] = block;
  return shape;
}

std::optional<int64_t> per_axis_extent(const std::vector<int64_t>& s, const std::vector<int64_t>& out, int axis) {
  if (s.size() > out.size()) return std::nullopt;
  size_t off = out.size() - s.size();
  int64_t along = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    size_t od = d + off;
    if (s[d] == 1) continue;
    if (s[d] != out[od] || int(od) != axis) return std::nullopt;
    along = s[d];
  }
  return along;
}

Value reshape_to(GraphBuilder& b, Value v, const std::vector<int64_t>& shape, const std::string& name) {
  if (b.type(v).shape == shape) return v;
  return b.reshape(v, shape, b.unique_name(name));
}

bool is_reshape(const Node& n) {
  return n.is_op() && (n.op == "reshape" || n.op == "flatten" || n.op == "squeeze" || n.op == "unsqueeze");
}

std::vector<std::vector<int>> users_with_outputs(const Graph& g) {
  std::vector<std::vector<int>> u = g.consumers();
  for (const ValueRef& v : g.outputs) u[size_t(v.node)].push_back(-1);
  return u;
}

}  // namespace loom::graph_opt::detail
