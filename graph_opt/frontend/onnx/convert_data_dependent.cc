// Converters of the operators whose output shape follows from input values: Compress (its
// condition constant at import; the data stays a run-time value, taken at the selected
// positions), and NonZero, Unique and NonMaxSuppression (every input constant at import:
// evaluated here, like Range and ConstantOfShape, into constants). loom's values have static
// shapes, so these need the deciding inputs at import; a graph input among them is named in
// the error (OnnxUnsupported::constant_input) so that a caller can bind it.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

runtime::NDArray int64_array(const std::vector<int64_t>& v, std::vector<int64_t> shape) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), DataType::Int(64));
  if (!v.empty()) std::memcpy(a.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return a;
}

/// Sets output `k` to the int64 constant `v` of `shape`, or an empty value when it has no elements.
void set_int64_output(Importer& im, int k, const std::vector<int64_t>& v, std::vector<int64_t> shape, bool scalar = false) {
  runtime::NDArray a = int64_array(v, std::move(shape));
  if (a.numel() == 0) return im.set_empty_output(k, a);
  im.set_output(k, im.constant(a, fmt::format("output{}", k)), scalar);
}

/// Orders and compares elements of one array exactly (64-bit integers without a detour through double).
struct Elements {
  const runtime::NDArray& a;
  bool less(int64_t i, int64_t j) const {
    const DataType t = a.dtype();
    if (t.bits() == 64 && t.is_int()) return a.data<int64_t>()[i] < a.data<int64_t>()[j];
    if (t.bits() == 64 && t.is_uint()) return a.data<uint64_t>()[i] < a.data<uint64_t>()[j];
    return a.get(i) < a.get(j);
  }
  bool equal(int64_t i, int64_t j) const { return !less(i, j) && !less(j, i); }
};

/// "the input (NonZero's output shape depends on its values)"-style names for const_input.
std::string deciding(const Importer& im, const std::string& what) {
  return fmt::format("{} ({}'s output shape depends on its values)", what, im.node().op_type());
}

// ---------------------------------------------------------------- Compress

void compress(Importer& im) {
  const std::vector<int64_t> xs = im.input_shape(0);
  runtime::NDArray cond = im.const_input(1, deciding(im, "the condition"));
  if (cond.ndim() > 1) im.invalid(fmt::format("condition {} must be 1-D", shape_str(cond.shape())));
  Value data = im.input(0);
  int64_t axis = 0, extent = product(xs);
  if (im.has_attr("axis")) {
    if (xs.empty()) im.invalid("input is a scalar; an axis needs dims");
    axis = normalize_axis(im, im.attr_int("axis"), xs.size(), "axis");
    extent = xs[size_t(axis)];
  } else {
    data = im.reshape(data, {extent});
  }
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < cond.numel(); ++i) {
    if (cond.get(i) == 0) continue;
    if (i >= extent)
      im.invalid(fmt::format("condition selects position {}, beyond the {} positions of input {}{}", i, extent,
                             shape_str(xs), im.has_attr("axis") ? fmt::format(" along axis {}", axis) : ""));
    picked.push_back(i);
  }
  if (picked.empty()) {  // a value without elements
    std::vector<int64_t> shape = im.has_attr("axis") ? xs : std::vector<int64_t>{extent};
    shape[size_t(axis)] = 0;
    return im.set_empty_output(0, runtime::NDArray::empty(shape, im.input_dtype(0)));
  }
  Value idx = im.constant(int64_array(picked, {int64_t(picked.size())}), "indices");
  im.set_output(0, im.op("take", {data, idx}, {{"axis", axis}}));
}

// ---------------------------------------------------------------- NonZero

void non_zero(Importer& im) {
  runtime::NDArray x = im.const_input(0, deciding(im, "the input"));
  const std::vector<int64_t> xs = im.input_shape(0);
  const int64_t rank = int64_t(xs.size());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.get(i) != 0) hits.push_back(i);
  const int64_t n = int64_t(hits.size());
  std::vector<int64_t> out(static_cast<size_t>(rank * n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t f = hits[size_t(k)];
    for (int64_t d = rank; d-- > 0;) {
      out[size_t(d * n + k)] = f % xs[size_t(d)];
      f /= xs[size_t(d)];
    }
  }
  set_int64_output(im, 0, out, {rank, n});
}

// ---------------------------------------------------------------- Unique

void unique(Importer& im) {
  const runtime::NDArray x = im.const_input(0, deciding(im, "the input"));
  const std::vector<int64_t> xs = im.input_shape(0);
  const bool sorted = im.attr_int("sorted", 1) != 0;
  const bool has_axis = im.has_attr("axis");
  Value data = im.input(0);
  int64_t axis = 0;
  // The array as [outer, n, inner]: n slices along the axis (elements when flattened).
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (has_axis) {
    if (xs.empty()) im.invalid("input is a scalar; an axis needs dims");
    axis = normalize_axis(im, im.attr_int("axis"), xs.size(), "axis");
    n = xs[size_t(axis)];
    for (int64_t d = 0; d < axis; ++d) outer *= xs[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < xs.size(); ++d) inner *= xs[d];
  } else {
    data = im.reshape(data, {n});
  }
  if (n == 0 || outer * inner == 0) im.unsupported("the input has no elements (loom has no empty tensors)");
  const Elements e{x};
  // Slices compared lexicographically, element (o, i) of slice s at flat (o * n + s) * inner + i.
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t fa = (o * n + a) * inner + i, fb = (o * n + b) * inner + i;
        if (e.less(fa, fb)) return -1;
        if (e.less(fb, fa)) return 1;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  // Groups of equal slices in sorted order: the first occurrence (the lowest index, as the
  // sort is stable), the count, and each slice's group.
  std::vector<int64_t> first, counts, group(static_cast<size_t>(n));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
      first.push_back(order[k]);
      counts.push_back(0);
    }
    ++counts.back();
    group[size_t(order[k])] = int64_t(first.size()) - 1;
  }
  // Unsorted: the groups in the order of their first occurrence.
  std::vector<int64_t> rank(first.size());
  std::iota(rank.begin(), rank.end(), int64_t(0));
  if (!sorted) {
    std::vector<int64_t> by_first(first.size());
    std::iota(by_first.begin(), by_first.end(), int64_t(0));
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
    for (size_t r = 0; r < by_first.size(); ++r) rank[size_t(by_first[r])] = int64_t(r);
  }
  const size_t u = first.size();
  std::vector<int64_t> indices(u), count_out(u), inverse(static_cast<size_t>(n));
  for (size_t g = 0; g < u; ++g) {
    indices[size_t(rank[g])] = first[g];
    count_out[size_t(rank[g])] = counts[g];
  }
  for (int64_t s = 0; s < n; ++s) inverse[size_t(s)] = rank[size_t(group[size_t(s)])];
  const int64_t nu = int64_t(u);
  im.set_output(0, im.op("take", {data, im.constant(int64_array(indices, {nu}), "indices")}, {{"axis", axis}}));
  set_int64_output(im, 1, indices, {nu});
  set_int64_output(im, 2, inverse, {n});
  set_int64_output(im, 3, count_out, {nu});
}

// ---------------------------------------------------------------- NonMaxSuppression

/// Whether box a and box b (4 coordinates each, corners y1, x1, y2, x2 in any order, or
/// center x, y, width, height) overlap by an intersection over union above `iou_threshold`,
/// computed in T as ONNX's reference does.
template <class T>
bool suppresses(const T* a, const T* b, bool center, T iou_threshold) {
  T ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (!center) {
    ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]), ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
    bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]), by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
  } else {
    ax0 = a[0] - a[2] / T(2), ax1 = a[0] + a[2] / T(2), ay0 = a[1] - a[3] / T(2), ay1 = a[1] + a[3] / T(2);
    bx0 = b[0] - b[2] / T(2), bx1 = b[0] + b[2] / T(2), by0 = b[1] - b[3] / T(2), by1 = b[1] + b[3] / T(2);
  }
  const T ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1), iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (ix1 <= ix0 || iy1 <= iy0) return false;
  const T inter = (ix1 - ix0) * (iy1 - iy0);
  const T area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
  const T uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

/// The selected [batch, class, box] triples, per batch and class in order of decreasing
/// score (equal scores: the lower box index first).
template <class T>
std::vector<int64_t> select_boxes(const std::vector<T>& boxes, const std::vector<T>& scores, int64_t batches,
                                  int64_t classes, int64_t n, int64_t max_out, T iou, std::optional<T> score_threshold,
                                  bool center) {
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const T* s = scores.data() + (b * classes + c) * n;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < n; ++i)
        if (!score_threshold || s[i] > *score_threshold) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (int64_t(kept.size()) >= max_out) break;
        const T* box = boxes.data() + (b * n + i) * 4;
        bool keep = true;
        for (int64_t k : kept) keep = keep && !suppresses(box, boxes.data() + (b * n + k) * 4, center, iou);
        if (!keep) continue;
        kept.push_back(i);
        out.insert(out.end(), {b, c, i});
      }
    }
  return out;
}

template <class T>
std::vector<T> values_of(const runtime::NDArray& a) {
  std::vector<T> v(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) v[size_t(i)] = T(a.get(i));
  return v;
}

void non_max_suppression(Importer& im) {
  const runtime::NDArray boxes = im.const_input(0, deciding(im, "boxes"));
  const runtime::NDArray scores = im.const_input(1, deciding(im, "scores"));
  const std::vector<int64_t> bs = boxes.shape(), ss = scores.shape();
  if (bs.size() != 3 || bs[2] != 4 || ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    im.invalid(fmt::format("boxes {} and scores {} must be [batches, boxes, 4] and [batches, classes, boxes]",
                           shape_str(bs), shape_str(ss)));
  const DataType t = boxes.dtype();
  if (!t.is_float() || scores.dtype() != t)
    im.invalid(fmt::format("boxes ({}) and scores ({}) must be of one floating-point type", t.str(), scores.dtype().str()));
  int64_t max_out = 0;
  if (im.has_input(2)) {
    const std::vector<int64_t> m = im.const_ints(2, deciding(im, "max_output_boxes_per_class"));
    if (m.size() > 1) im.invalid(fmt::format("max_output_boxes_per_class holds {} values; it holds one", m.size()));
    if (!m.empty()) max_out = std::max<int64_t>(m[0], 0);
  }
  auto optional_scalar = [&](int i, const char* what) -> std::optional<double> {
    if (!im.has_input(i)) return std::nullopt;
    runtime::NDArray a = im.const_input(i, deciding(im, what));
    if (a.numel() > 1) im.invalid(fmt::format("{} holds {} values; it holds one", what, a.numel()));
    return a.numel() == 0 ? std::nullopt : std::optional<double>(a.get(0));
  };
  const std::optional<double> iou = optional_scalar(3, "iou_threshold"), score = optional_scalar(4, "score_threshold");
  const int64_t center = im.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) im.invalid(fmt::format("center_point_box {} is not 0 or 1", center));
  std::vector<int64_t> sel;
  if (t.bits() == 32) {
    sel = select_boxes<float>(values_of<float>(boxes), values_of<float>(scores), bs[0], ss[1], bs[1], max_out,
                              float(iou.value_or(0)), score ? std::optional<float>(float(*score)) : std::nullopt,
                              center == 1);
  } else {
    sel = select_boxes<double>(values_of<double>(boxes), values_of<double>(scores), bs[0], ss[1], bs[1], max_out,
                               iou.value_or(0), score, center == 1);
  }
  set_int64_output(im, 0, sel, {int64_t(sel.size() / 3), 3});
}

}  // namespace

void add_data_dependent_converters(std::map<std::string, Converter>& m) {
  m["Compress"] = compress;
  m["NonZero"] = non_zero;
  m["Unique"] = unique;
  m["NonMaxSuppression"] = non_max_suppression;
}

}  // namespace loom::graph_opt::onnx_frontend
