// The slicing, tiling, padding-mode, gather, scatter, one-hot, triangle, cumulative and
// sequence operators of the registry (te/ops/shape.cc) against naive loops through
// te::evaluate, on extents that common split factors do not divide, and their errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/te/op_registry.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::DataType;
using loom::te::Tensor;
using loom::te::ops::Attrs;
namespace te = loom::te;
namespace ops = loom::te::ops;

/// Integer values in [lo, hi] for an index input.
Ref int_values(Inputs& in, const Tensor& t, int64_t lo, int64_t hi, uint32_t seed) {
  Ref r(shape_of(t));
  uint32_t s = seed;
  for (double& v : r.v) {
    s = s * 1664525u + 1013904223u;
    v = double(lo + int64_t((s >> 8) % uint32_t(hi - lo + 1)));
  }
  in.set(t, r);
  return r;
}

int64_t wrap(int64_t i, int64_t n) { return std::clamp(i < 0 ? i + n : i, int64_t(0), n - 1); }

TEST(ShapeOps, PatternsAreRegistered) {
  for (const char* n : {"strided_slice", "tile", "gather_elements", "gather_nd", "one_hot", "trilu", "reverse_sequence",
                        "pad"})
    EXPECT_EQ(ops::get_op(n).pattern, ops::OpPattern::kInjective) << n;
  EXPECT_EQ(ops::get_op("broadcast_to").pattern, ops::OpPattern::kBroadcast);
  for (const char* n : {"scatter_elements", "scatter_nd", "cumsum", "cumprod"})
    EXPECT_EQ(ops::get_op(n).pattern, ops::OpPattern::kOpaque) << n;
}

TEST(ShapeOps, StridedSliceClampsAndStepsBothWays) {
  struct Case {
    std::vector<int64_t> begin, end, strides;
  };
  const Shape s{7, 13};
  for (const Case& c : std::vector<Case>{{{1, 0}, {6, 13}, {2, 3}},
                                         {{-2, 100}, {-100, -14}, {-1, -2}},
                                         {{0, 3}, {INT64_MAX, 11}, {3, 1}},
                                         {{-100, INT64_MAX}, {100, INT64_MIN}, {1, -5}}}) {
    Inputs in;
    Tensor x = ph(s);
    Ref xr = in.add(x);
    Tensor y = reg("strided_slice", {x}, {{"begin", c.begin}, {"end", c.end}, {"strides", c.strides}});
    Shape os(2);
    std::vector<int64_t> first(2);
    for (size_t d = 0; d < 2; ++d) os[d] = ops::slice_extent(s[d], c.begin[d], c.end[d], c.strides[d], &first[d]);
    Ref want(os);
    for (int64_t i = 0; i < os[0]; ++i)
      for (int64_t j = 0; j < os[1]; ++j)
        want({i, j}) = xr({first[0] + i * c.strides[0], first[1] + j * c.strides[1]});
    expect_close(in.eval(y), want);
  }
  EXPECT_EQ(ops::slice_extent(13, -2, -100, -1), 12);
  EXPECT_EQ(ops::slice_extent(13, 20, 0, -3), 4);  // 12, 9, 6, 3 (the end 0 excluded)
  EXPECT_EQ(ops::slice_extent(13, 5, 5, 1), 0);
  expect_error([] { reg("strided_slice", {ph({7, 13})}, {{"begin", std::vector<int64_t>{0, 0}},
                                                       {"end", std::vector<int64_t>{7, 13}},
                                                       {"strides", std::vector<int64_t>{1, 0}}}); },
               {"strided_slice", "stride of dim 1 is 0"});
  expect_error([] { reg("strided_slice", {ph({7, 13})}, {{"begin", std::vector<int64_t>{3, 0}},
                                                       {"end", std::vector<int64_t>{3, 13}}}); },
               {"dim 0", "empty"});
}

TEST(ShapeOps, TileAndBroadcastTo) {
  Inputs in;
  Tensor x = ph({3, 1, 5});
  Ref xr = in.add(x);
  Tensor t = reg("tile", {x}, {{"reps", std::vector<int64_t>{2, 7, 3}}});
  Ref want({6, 7, 15});
  for (int64_t f = 0; f < numel(want.shape); ++f) {
    Shape i = want.unravel(f);
    want.v[size_t(f)] = xr({i[0] % 3, 0, i[2] % 5});
  }
  expect_close(in.eval(t), want);
  Tensor b = reg("broadcast_to", {x}, {{"shape", std::vector<int64_t>{2, 3, 13, 5}}});
  Ref wb({2, 3, 13, 5});
  for (int64_t f = 0; f < numel(wb.shape); ++f) {
    Shape i = wb.unravel(f);
    wb.v[size_t(f)] = xr({i[1], 0, i[3]});
  }
  expect_close(in.eval(b), wb);
  expect_error([&] { reg("broadcast_to", {x}, {{"shape", std::vector<int64_t>{4, 13, 5}}}); },
               {"broadcast_to", "dim 0 (3)"});
  expect_error([&] { reg("tile", {x}, {{"reps", std::vector<int64_t>{1, 0, 1}}}); }, {"tile", "dim 1", "positive"});
}

/// numpy.pad of one dim index: the source index of output position o, or -1 for the constant.
int64_t pad_source(int64_t o, int64_t before, int64_t n, const std::string& mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp(i, int64_t(0), n - 1);
  if (mode == "wrap") return ((i % n) + n) % n;
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect, repeatedly
  return i;
}

TEST(ShapeOps, PadModesAndCropping) {
  const Shape s{3, 5, 7};
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
    // Pads larger than the dim (5 and 9 on dims of 3 and 5) reflect and wrap repeatedly;
    // the negative ones crop.
    const std::vector<int64_t> pads{2, 5, -2, 0, 9, 3};
    Inputs in;
    Tensor x = ph(s);
    Ref xr = in.add(x);
    Tensor y = reg("pad", {x}, {{"pads", pads}, {"mode", mode}, {"pad_value", 1.5}});
    Shape os{3 + 2 + 0, 5 + 5 + 9, 7 - 2 + 3};
    Ref want(os);
    for (int64_t f = 0; f < numel(os); ++f) {
      Shape o = want.unravel(f);
      int64_t a = pad_source(o[0], 2, 3, mode), b = pad_source(o[1], 5, 5, mode), c = pad_source(o[2], -2, 7, mode);
      want.v[size_t(f)] = a < 0 || b < 0 || c < 0 ? 1.5 : xr({a, b, c});
    }
    SCOPED_TRACE(mode);
    expect_close(in.eval(y), want);
  }
  expect_error([] { reg("pad", {ph({3})}, {{"pads", std::vector<int64_t>{1, 1}}, {"mode", std::string("mirror")}}); },
               {"mode \"mirror\""});
  expect_error([] { reg("pad", {ph({3})}, {{"pads", std::vector<int64_t>{-2, -1}}}); }, {"empty"});
}

TEST(ShapeOps, GatherElementsWithRunTimeIndices) {
  for (int axis : {0, 1, -1}) {
    Inputs in;
    Tensor x = ph({5, 7, 3});
    Tensor idx = ph({4, 7, 2}, "idx", DataType::Int(64));
    Ref xr = in.add(x);
    const int64_t ax = axis < 0 ? axis + 3 : axis, n = xr.shape[size_t(ax)];
    Ref ir = int_values(in, idx, -n, n - 1, 5u + uint32_t(ax));
    Tensor y = reg("gather_elements", {x, idx}, {{"axis", int64_t(axis)}});
    Ref want(ir.shape);
    for (int64_t f = 0; f < numel(want.shape); ++f) {
      Shape i = want.unravel(f);
      i[size_t(ax)] = wrap(int64_t(ir.v[size_t(f)]), n);
      want.v[size_t(f)] = xr.v[size_t(xr.ravel(i))];
    }
    SCOPED_TRACE(axis);
    expect_close(in.eval(y), want);
  }
  expect_error([] { reg("gather_elements", {ph({5, 7}), ph({5}, "i", DataType::Int(64))}); }, {"ranks must match"});
  expect_error([] { reg("gather_elements", {ph({5, 7}), ph({5, 7}, "i")}); }, {"indices must be integers"});
}

TEST(ShapeOps, GatherNdWithBatchDims) {
  {
    Inputs in;
    Tensor x = ph({5, 7, 3});
    Tensor idx = ph({4, 3, 2}, "idx", DataType::Int(32));
    Ref xr = in.add(x);
    Ref ir = int_values(in, idx, -5, 4, 11u);
    Tensor y = reg("gather_nd", {x, idx});
    Ref want({4, 3, 3});
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t c = 0; c < 3; ++c)
          want({a, b, c}) = xr({wrap(int64_t(ir({a, b, 0})), 5), wrap(int64_t(ir({a, b, 1})), 7), c});
    expect_close(in.eval(y), want);
  }
  {
    Inputs in;
    Tensor x = ph({3, 7, 5});
    Tensor idx = ph({3, 2, 2}, "idx", DataType::Int(64));
    Ref xr = in.add(x);
    Ref ir(Shape{3, 2, 2});
    for (size_t k = 0; k < ir.v.size(); ++k) ir.v[k] = double(int64_t(k * 3) % 5 - (k % 2 ? 1 : 0));
    in.set(idx, ir);
    Tensor y = reg("gather_nd", {x, idx}, {{"batch_dims", int64_t(1)}});
    Ref want({3, 2});
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t m = 0; m < 2; ++m) want({b, m}) = xr({b, wrap(int64_t(ir({b, m, 0})), 7), wrap(int64_t(ir({b, m, 1})), 5)});
    expect_close(in.eval(y), want);
  }
  expect_error([] { reg("gather_nd", {ph({5, 7}), ph({4, 3}, "i", DataType::Int(64))}); }, {"address 3 dims"});
}

double combine(const std::string& r, double a, double b) {
  if (r == "add") return a + b;
  if (r == "mul") return a * b;
  if (r == "max") return std::max(a, b);
  if (r == "min") return std::min(a, b);
  return b;
}

TEST(ShapeOps, ScatterElementsEveryReduction) {
  for (const std::string r : {"none", "add", "mul", "max", "min"}) {
    for (int axis : {0, 1}) {
      Inputs in;
      Tensor x = ph({5, 7});
      Tensor idx = ph({3, 6}, "idx", DataType::Int(64));
      Tensor upd = ph({3, 6}, "upd");
      Ref xr = in.add(x), ur = in.add(upd);
      const int64_t n = axis == 0 ? 5 : 7;
      Ref ir(Shape{3, 6});
      if (r == "none") {  // distinct targets along the axis: no duplicate wins
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 6; ++j) ir({i, j}) = double(axis == 0 ? (i * 2 + j) % 5 - 5 * ((i + j) % 2) : (j * 3 + i) % 7 - 7 * (j % 2));
      } else {
        ir = int_values(in, idx, -n, n - 1, 23u + uint32_t(axis));
      }
      in.set(idx, ir);
      Tensor y = reg("scatter_elements", {x, idx, upd}, {{"axis", int64_t(axis)}, {"reduction", r}});
      Ref want = xr;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 6; ++j) {
          int64_t t = int64_t(ir({i, j}));
          t = t < 0 ? t + n : t;
          double& w = axis == 0 ? want({t, j}) : want({i, t});
          w = combine(r, w, ur({i, j}));
        }
      SCOPED_TRACE(r + " axis " + std::to_string(axis));
      expect_close(in.eval(y), want);
    }
  }
  expect_error([] { reg("scatter_elements", {ph({5, 7}), ph({3, 6}, "i", DataType::Int(64)), ph({3, 5}, "u")}); },
               {"same shape"});
  expect_error([] {
    reg("scatter_elements", {ph({5, 7}), ph({3, 6}, "i", DataType::Int(64)), ph({3, 6}, "u")},
        {{"reduction", std::string("sum")}});
  }, {"reduction \"sum\""});
}

TEST(ShapeOps, ScatterNdSlicesElementsAndDuplicates) {
  for (const std::string r : {"none", "add", "mul", "max", "min"}) {
    Inputs in;
    Tensor x = ph({5, 7, 3});
    Tensor idx = ph({2, 3, 2}, "idx", DataType::Int(64));  // 6 tuples addressing [5, 7] -> slices of 3
    Tensor upd = ph({2, 3, 3}, "upd");
    Ref xr = in.add(x), ur = in.add(upd);
    Ref ir(Shape{2, 3, 2});
    // Tuples (with a negative entry); for "none" all distinct, else (1, 2) three times.
    const std::vector<std::pair<int, int>> none{{0, 1}, {4, -1}, {1, 2}, {-2, 3}, {2, 0}, {0, 0}};
    const std::vector<std::pair<int, int>> dup{{1, 2}, {4, -1}, {1, 2}, {-4, 2}, {2, 0}, {0, 6}};
    const auto& tuples = r == "none" ? none : dup;
    for (size_t m = 0; m < 6; ++m) {
      ir.v[2 * m] = tuples[m].first;
      ir.v[2 * m + 1] = tuples[m].second;
    }
    in.set(idx, ir);
    Tensor y = reg("scatter_nd", {x, idx, upd}, {{"reduction", r}});
    Ref want = xr;
    for (int64_t m = 0; m < 6; ++m) {
      int64_t a = wrap(tuples[size_t(m)].first, 5), b = wrap(tuples[size_t(m)].second, 7);
      for (int64_t c = 0; c < 3; ++c) want({a, b, c}) = combine(r, want({a, b, c}), ur.v[size_t(m * 3 + c)]);
    }
    SCOPED_TRACE(r);
    expect_close(in.eval(y), want);
  }
  {  // indices of shape [k] = the whole rank: one element
    Inputs in;
    Tensor x = ph({5, 7});
    Tensor idx = ph({2}, "idx", DataType::Int(64));
    Tensor upd = ph({1}, "upd");
    Ref xr = in.add(x), ur = in.add(upd);
    Ref ir(Shape{2});
    ir.v = {3, -2};
    in.set(idx, ir);
    Ref want = xr;
    want({3, 5}) = ur.v[0];
    expect_close(in.eval(reg("scatter_nd", {x, idx, upd})), want);
  }
  expect_error([] { reg("scatter_nd", {ph({5, 7}), ph({4, 1}, "i", DataType::Int(64)), ph({4, 6}, "u")}); },
               {"updates of shape 4x7"});
}

TEST(ShapeOps, OneHotAlongEveryAxis) {
  for (int axis : {0, 1, 2, -1}) {
    Inputs in;
    Tensor idx = ph({3, 5}, "idx", DataType::Int(64));
    Tensor vals = ph({2}, "values");
    Ref ir = int_values(in, idx, -9, 8, 31u);  // depth 7: -9, -8, 7, 8 are out of range
    Ref vr(Shape{2});
    vr.v = {-2.0, 3.0};
    in.set(vals, vr);
    Tensor y = reg("one_hot", {idx, vals}, {{"depth", int64_t(7)}, {"axis", int64_t(axis)}});
    const size_t ax = size_t(axis < 0 ? axis + 3 : axis);
    Shape os{3, 5};
    os.insert(os.begin() + long(ax), 7);
    Ref want(os);
    for (int64_t f = 0; f < numel(os); ++f) {
      Shape o = want.unravel(f);
      int64_t pos = o[ax];
      o.erase(o.begin() + long(ax));
      int64_t i = int64_t(ir({o[0], o[1]}));
      if (i < 0) i += 7;
      want.v[size_t(f)] = i == pos ? 3.0 : -2.0;
    }
    SCOPED_TRACE(axis);
    expect_close(in.eval(y), want);
  }
}

TEST(ShapeOps, TriluBothTrianglesAndOffsets) {
  for (int64_t upper : {0, 1})
    for (int64_t k : {-7, -2, 0, 3, 20}) {
      Inputs in;
      Tensor x = ph({2, 5, 7});
      Ref xr = in.add(x);
      Tensor y = reg("trilu", {x}, {{"upper", upper}, {"k", k}});
      Ref want = xr;
      for (int64_t f = 0; f < numel(want.shape); ++f) {
        Shape i = want.unravel(f);
        const bool keep = upper ? i[2] - i[1] >= k : i[2] - i[1] <= k;
        if (!keep) want.v[size_t(f)] = 0.0;
      }
      SCOPED_TRACE(std::to_string(upper) + " " + std::to_string(k));
      expect_close(in.eval(y), want);
    }
}

TEST(ShapeOps, CumulativeSumsAndProducts) {
  for (const char* op : {"cumsum", "cumprod"})
    for (int64_t axis : {0, 1, -1})
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          Inputs in;
          Tensor x = ph({5, 7});
          Ref xr = in.add(x, 0.5, 1.5);
          Tensor y = reg(op, {x}, {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}});
          const size_t ax = size_t(axis < 0 ? axis + 2 : axis);
          const bool product = std::string(op) == "cumprod";
          Ref want(xr.shape);
          for (int64_t f = 0; f < numel(want.shape); ++f) {
            Shape i = want.unravel(f);
            double acc = product ? 1.0 : 0.0;
            for (int64_t j = 0; j < xr.shape[ax]; ++j) {
              const bool in_range = reverse ? (exclusive ? j > i[ax] : j >= i[ax]) : (exclusive ? j < i[ax] : j <= i[ax]);
              if (!in_range) continue;
              Shape s = i;
              s[ax] = j;
              acc = product ? acc * xr.v[size_t(xr.ravel(s))] : acc + xr.v[size_t(xr.ravel(s))];
            }
            want.v[size_t(f)] = acc;
          }
          SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis) + " excl " + std::to_string(exclusive) +
                       " rev " + std::to_string(reverse));
          expect_close(in.eval(y), want);
        }
}

TEST(ShapeOps, ReverseSequenceBatchAndTimeAxes) {
  for (auto [batch, time] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {0, 1}, {2, 0}}) {
    Inputs in;
    Tensor x = ph({5, 7, 3});
    const int64_t B = batch == 0 ? 5 : batch == 1 ? 7 : 3, T = time == 0 ? 5 : 7;
    Tensor lens = ph({B}, "lens", DataType::Int(64));
    Ref xr = in.add(x);
    Ref lr = int_values(in, lens, 0, T, 41u);
    Tensor y = reg("reverse_sequence", {x, lens}, {{"batch_axis", batch}, {"time_axis", time}});
    Ref want(xr.shape);
    for (int64_t f = 0; f < numel(want.shape); ++f) {
      Shape i = want.unravel(f);
      const int64_t L = int64_t(lr.v[size_t(i[size_t(batch)])]);
      if (i[size_t(time)] < L) i[size_t(time)] = L - 1 - i[size_t(time)];
      want.v[size_t(f)] = xr.v[size_t(xr.ravel(i))];
    }
    SCOPED_TRACE(std::to_string(batch) + " " + std::to_string(time));
    expect_close(in.eval(y), want);
  }
  expect_error([] { reg("reverse_sequence", {ph({5, 7}), ph({5}, "l", DataType::Int(64))}); }, {"batch extent 7"});
}

}  // namespace
