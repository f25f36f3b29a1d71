// Converters of ONNX's reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare), ArgMax, ArgMin and TopK,
// every version from opset 7: the axes attribute that became an input (ReduceSum at 13, the
// others at 18), noop_with_empty_axes, keepdims, select_last_index, TopK's k attribute (an input
// from 10) and its largest and sorted attributes (11).
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// How a reduction is built from loom operators: an elementwise step before the reduction
/// (none, |x|, x²), the reduction and an elementwise step after it (none, sqrt, log).
enum class Pre { kNone, kAbs, kSquare };
enum class Post { kNone, kSqrt, kLog };

struct Reduction {
  const char* loom_op;  // reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod
  Pre pre = Pre::kNone;
  Post post = Post::kNone;
  bool log_sum_exp = false;
};

/// The ONNX axes of the current node: the attribute before `input_from` (the opset at which
/// they became input 1), the input from then on; empty when none are given.
std::vector<int64_t> reduce_axes(Importer& im, int input_from) {
  if (im.opset() < input_from) {
    if (im.has_input(1))
      im.invalid(fmt::format("axes is an input only from opset {} (the model's is {})", input_from, im.opset()));
    return im.attr_ints("axes", std::vector<int64_t>{});
  }
  if (im.has_attr("axes"))
    im.invalid(
        fmt::format("axes is an input from opset {} (the model's is {}), not an attribute", input_from, im.opset()));
  if (im.has_input(1)) return im.const_ints(1, "axes");
  return {};
}

Value unary(Importer& im, const char* op, Value x) { return im.op(op, {x}); }

Value apply_pre(Importer& im, Pre pre, Value x) {
  switch (pre) {
    case Pre::kNone: return x;
    case Pre::kAbs: return unary(im, "abs", x);
    case Pre::kSquare: return im.op("multiply", {x, x});
  }
  return x;
}

Value apply_post(Importer& im, Post post, Value x) {
  switch (post) {
    case Post::kNone: return x;
    case Post::kSqrt: return unary(im, "sqrt", x);
    case Post::kLog: return unary(im, "log", x);
  }
  return x;
}

/// log(sum(exp(x - m))) + m over `axes` (kept as extent 1), m the max over them of x with its
/// infinities taken as -inf (so that +inf gives +inf, not NaN, as ONNX's reference does).
Value log_sum_exp(Importer& im, Value x, const std::vector<int64_t>& axes) {
  const TensorType& t = im.type(x);
  const size_t rank = t.shape.size();
  const te::ops::Attrs keep = {{"axes", axes}, {"keepdims", int64_t(1)}};
  Value minus_inf = im.scalar(-std::numeric_limits<double>::infinity(), t.dtype, rank, "minus_inf");
  Value finite = im.op("where", {im.op("isinf", {x}), minus_inf, x});
  Value m = im.op("reduce_max", {finite}, keep);
  Value s = im.op("reduce_sum", {unary(im, "exp", im.op("subtract", {x, m}))}, keep);
  return im.op("add", {unary(im, "log", s), m});
}

template <class T>
void fill(runtime::NDArray& a, T v) {
  T* p = static_cast<T*>(a.raw_data());
  std::fill(p, p + a.numel(), v);
}

void fill_value(runtime::NDArray& a, double v) {
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, v);
}

/// `a` (integers) filled with its type's lowest (or, `highest`, largest) value.
void fill_integer_extreme(runtime::NDArray& a, bool highest) {
  const DataType t = a.dtype();
  auto limit = [&]<class T>(T) { fill<T>(a, highest ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest()); };
  switch (t.bits()) {
    case 8: t.is_uint() ? limit(uint8_t()) : limit(int8_t()); break;
    case 16: t.is_uint() ? limit(uint16_t()) : limit(int16_t()); break;
    case 32: t.is_uint() ? limit(uint32_t()) : limit(int32_t()); break;
    default: t.is_uint() ? limit(uint64_t()) : limit(int64_t()); break;
  }
}

/// The reduction of no elements, as ONNX defines it: a constant of shape `out` holding the
/// identity of the reduction (0 for sums, 1 for products, -inf and +inf, or the type's lowest
/// and largest values, for max and min), after the step that follows it (sqrt(0), log(0)).
runtime::NDArray reduce_nothing(Importer& im, const char* onnx_name, const Reduction& r, const std::vector<int64_t>& out,
                                DataType t) {
  runtime::NDArray a = runtime::NDArray::empty(out.empty() ? std::vector<int64_t>{} : out, t);
  const std::string op = r.loom_op;
  const double inf = std::numeric_limits<double>::infinity();
  if ((op == "reduce_max" || op == "reduce_min") && !r.log_sum_exp) {
    const bool max = op == "reduce_max";
    if (t.is_float() || t.is_bool()) fill_value(a, t.is_bool() ? (max ? 0.0 : 1.0) : (max ? -inf : inf));
    else fill_integer_extreme(a, !max);
    return a;
  }
  double v = op == "reduce_prod" ? 1.0 : 0.0;
  if (op == "reduce_mean") v = std::nan("");
  if (r.log_sum_exp || r.post == Post::kLog) v = -inf;
  if (!t.is_float() && !std::isfinite(v))
    im.unsupported(fmt::format("{} of no {} elements ({} has no integer value)", onnx_name, t.str(), v));
  fill_value(a, v);
  return a;
}

Converter reduction(const char* onnx_name, Reduction r, int axes_input_from) {
  return [onnx_name, r, axes_input_from](Importer& im) {
    const std::vector<int64_t> in = im.input_shape(0);
    const bool keepdims = im.attr_int("keepdims", 1) != 0;
    const bool noop_empty = im.opset() >= axes_input_from && im.attr_int("noop_with_empty_axes", 0) != 0;
    const std::vector<int64_t> axes = reduce_axes(im, axes_input_from);
    const DataType t = im.input_dtype(0);
    const bool is_float = t.is_float();
    const bool needs_float = r.post != Post::kNone || r.log_sum_exp || std::string(r.loom_op) == "reduce_mean";
    if (r.log_sum_exp && !is_float) im.unsupported(fmt::format("{} of {} (floating point only)", onnx_name, t.str()));
    if (t.is_bool() && std::string(r.loom_op) != "reduce_max" && std::string(r.loom_op) != "reduce_min")
      im.unsupported(fmt::format("{} of bool", onnx_name));
    // Integers go through float64 where the result is not an integer (ONNX's reference truncates it back); bool
    // through uint8.
    const DataType work = t.is_bool() ? DataType::UInt(8) : (needs_float && !is_float) ? DataType::Float(64) : t;

    std::vector<bool> reduced(in.size(), axes.empty() && !noop_empty);
    for (int64_t a : axes) {
      size_t d = size_t(normalize_axis(im, a, in.size(), "axis"));
      if (reduced[d]) im.invalid(fmt::format("axis {} is given twice in axes [{}]", d, fmt::join(axes, ",")));
      reduced[d] = true;
    }
    std::vector<int64_t> out, loom_axes;
    for (size_t d = 0; d < in.size(); ++d) {
      if (reduced[d]) loom_axes.push_back(int64_t(d));
      if (!reduced[d]) out.push_back(in[d]);
      else if (keepdims) out.push_back(1);
    }
    if (im.input_empty(0)) {  // no elements: no data to read, and the result follows from the shapes
      if (product(out) == 0) return im.set_empty_output(0, runtime::NDArray::empty(out, t));
      return im.set_output(0, im.constant(reduce_nothing(im, onnx_name, r, out, t), "identity"), out.empty());
    }
    Value x = im.input(0);
    if (work != t) x = im.op("cast", {x}, {{"dtype", work.str()}});
    // Rank 0 (held as [1]) reduces its one element; nothing reduced applies the elementwise steps alone.
    if (in.empty() && !noop_empty) loom_axes = {0};
    Value y = apply_pre(im, r.pre, x);
    if (!loom_axes.empty()) {
      if (r.log_sum_exp) y = log_sum_exp(im, y, loom_axes);
      else y = im.op(r.loom_op, {y}, {{"axes", loom_axes}, {"keepdims", int64_t(1)}});
    }
    y = apply_post(im, r.post, y);
    if (work != t) y = im.op("cast", {y}, {{"dtype", t.str()}});
    im.set_output(0, im.reshape(y, out), out.empty());
  };
}

Converter arg_reduction(const char* loom_op) {
  return [loom_op](Importer& im) {
    const std::vector<int64_t> in = im.input_shape(0);
    const int64_t axis = im.attr_int("axis", 0);
    const bool keepdims = im.attr_int("keepdims", 1) != 0;
    const bool last = im.opset() >= 12 && im.attr_int("select_last_index", 0) != 0;
    Value x = im.input(0);
    if (im.type(x).dtype.is_bool()) im.unsupported("input type bool");
    if (in.empty()) im.invalid("the input is rank 0; it needs an axis to reduce");
    const size_t ax = size_t(normalize_axis(im, axis, in.size(), "axis"));
    std::vector<int64_t> out = in;
    if (keepdims) out[ax] = 1;
    else out.erase(out.begin() + std::ptrdiff_t(ax));
    Value y =
        im.op(loom_op, {x}, {{"axis", int64_t(ax)}, {"keepdims", int64_t(1)}, {"select_last_index", int64_t(last)}});
    im.set_output(0, im.reshape(y, out), out.empty());
  };
}

void topk(Importer& im) {
  const std::vector<int64_t> in = im.input_shape(0);
  int64_t k = 0;
  if (im.opset() < 10) {
    k = im.attr_int("k");
  } else {
    std::vector<int64_t> kv = im.const_ints(1, "K");
    if (kv.size() != 1) im.invalid(fmt::format("K must hold one value, got {}", kv.size()));
    k = kv[0];
  }
  const int64_t axis = im.attr_int("axis", -1);
  const bool largest = im.opset() < 11 || im.attr_int("largest", 1) != 0;
  if (im.opset() >= 11) im.attr_int("sorted", 1);  // unsorted output may come in any order: sorted is one
  if (in.empty()) im.invalid("the input is rank 0");
  const size_t ax = size_t(normalize_axis(im, axis, in.size(), "axis"));
  if (k < 1 || k > in[ax])
    im.unsupported(
        fmt::format("k = {} for an axis of extent {} (loom's topk takes 1 <= k <= the extent; k = 0 gives empty "
                    "outputs)",
                    k, in[ax]));
  Value x = im.input(0);
  if (im.type(x).dtype.is_bool()) im.invalid("input type bool");
  te::ops::Attrs a = {{"k", k}, {"axis", int64_t(ax)}, {"largest", int64_t(largest)}};
  if (im.output_used(0)) {
    a["output"] = std::string("values");
    im.set_output(0, im.op("topk", {x}, a));
  }
  if (im.output_used(1)) {
    a["output"] = std::string("indices");
    im.set_output(1, im.op("topk", {x}, a));
  }
}

}  // namespace

void add_reduce_converters(std::map<std::string, Converter>& m) {
  m["ReduceSum"] = reduction("ReduceSum", {"reduce_sum"}, 13);
  m["ReduceMean"] = reduction("ReduceMean", {"reduce_mean"}, 18);
  m["ReduceMax"] = reduction("ReduceMax", {"reduce_max"}, 18);
  m["ReduceMin"] = reduction("ReduceMin", {"reduce_min"}, 18);
  m["ReduceProd"] = reduction("ReduceProd", {"reduce_prod"}, 18);
  m["ReduceL1"] = reduction("ReduceL1", {"reduce_sum", Pre::kAbs}, 18);
  m["ReduceL2"] = reduction("ReduceL2", {"reduce_sum", Pre::kSquare, Post::kSqrt}, 18);
  m["ReduceLogSum"] = reduction("ReduceLogSum", {"reduce_sum", Pre::kNone, Post::kLog}, 18);
  m["ReduceLogSumExp"] = reduction("ReduceLogSumExp", {"reduce_sum", Pre::kNone, Post::kNone, true}, 18);
  m["ReduceSumSquare"] = reduction("ReduceSumSquare", {"reduce_sum", Pre::kSquare}, 18);
  m["ArgMax"] = arg_reduction("argmax");
  m["ArgMin"] = arg_reduction("argmin");
  m["TopK"] = topk;
}

}  // namespace loom::graph_opt::onnx_frontend
