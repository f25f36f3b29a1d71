// Helpers shared by the registry's operator entries.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "op_util.h"
#include "register_ops.h"

namespace loom::te::ops::detail {

Pair attr_pair(const Attrs& a, const std::string& name, bool positive) {
  std::vector<int64_t> v = attr_ints(a, name);
  LOOM_CHECK(v.size() == 2, "attribute '{}' must have 2 values {{h, w}}, got [{}]", name, fmt::join(v, ","));
  for (int64_t x : v)
    LOOM_CHECK((positive ? x > 0 : x >= 0) && x <= INT32_MAX, "attribute '{}' must be {} and below 2^31, got [{}]", name,
               positive ? "positive" : "non-negative", fmt::join(v, ","));
  return {v[0], v[1]};
}

Padding attr_padding(const Attrs& a, const std::string& name) {
  std::vector<int64_t> v = attr_ints(a, name);
  LOOM_CHECK(v.size() == 2 || v.size() == 4,
             "attribute '{}' must have 2 values {{h, w}} or 4 {{top, left, bottom, right}}, got [{}]", name,
             fmt::join(v, ","));
  for (int64_t x : v)
    LOOM_CHECK(x >= 0 && x <= INT32_MAX, "attribute '{}' must be non-negative and below 2^31, got [{}]", name,
               fmt::join(v, ","));
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  return {v[0], v[1], v[2], v[3]};
}

Tensor pad_asymmetric(const Tensor& data, Padding& p, Expr value) {
  if (p.symmetric()) return data;
  std::vector<int64_t> before(data.ndim(), 0), after(data.ndim(), 0);
  LOOM_CHECK(data.ndim() >= 4, "padding {{{}, {}, {}, {}}} needs data with spatial dims 2 and 3, got {}-D data", p.top,
             p.left, p.bottom, p.right, data.ndim());
  before[2] = p.top;
  before[3] = p.left;
  after[2] = p.bottom;
  after[3] = p.right;
  p = Padding{};
  return pad(data, before, after, std::move(value), "pad");
}

void check_layout(const std::string& op, const char* input, const TensorType& t, const std::string& expected) {
  LOOM_CHECK(t.layout.empty() || t.layout == expected, "{}: {} is laid out as \"{}\" but the operator expects \"{}\"",
             op, input, t.layout, expected);
}

int64_t nchw_block(const std::string& op, const std::string& layout) {
  if (layout == "NCHW") return 0;
  Layout l = Layout::parse(layout);
  LOOM_CHECK(l.ndim() == 5 && l.str().substr(0, 4) == "NCHW" && l.axes[4].name == 'c',
             "{}: layout must be \"NCHW\" or \"NCHW{{c}}c\" (e.g. \"NCHW16c\"), got \"{}\"", op, layout);
  return l.axes[4].factor;
}

TemplateCall with_bias_finish(TemplateCall call, int axis, const std::string& layout) {
  call.finish = [axis, layout](const Tensor& core, const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in.size() > 2 ? bias_add(core, in[2], axis, layout, "bias_add") : core};
  };
  return call;
}

}  // namespace loom::te::ops::detail
