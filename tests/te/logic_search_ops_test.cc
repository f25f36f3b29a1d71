// The comparison, logical, bitwise, selection, remainder and trigonometric operators
// (te/ops/logic.h), reduce_prod, and argmax, argmin, topk (te/ops/search.h): each through the
// registry and te::evaluate against naive loops, on shapes that common split factors do and do
// not divide, with broadcasting, ties, and ONNX's edge cases (shifts out of range, remainders
// of mixed signs and infinities).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "loom/te/op_registry.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::DataType;
using loom::te::Tensor;
using loom::te::ops::Attrs;
namespace ops = loom::te::ops;

const DataType f32 = DataType::Float(32), i32 = DataType::Int(32), i64 = DataType::Int(64);
const double kInf = std::numeric_limits<double>::infinity();

Ref vals(Shape s, std::vector<double> v) {
  Ref r(std::move(s));
  EXPECT_EQ(r.v.size(), v.size());
  r.v = std::move(v);
  return r;
}

/// Small integers (ties) as doubles, deterministic.
Ref ints(const Shape& s, int64_t lo, int64_t hi, uint64_t seed) {
  Ref r(s);
  uint64_t v = seed * 2654435761u + 1;
  for (double& x : r.v) {
    v = v * 6364136223846793005ULL + 1442695040888963407ULL;
    x = double(lo + int64_t((v >> 33) % uint64_t(hi - lo + 1)));
  }
  return r;
}

/// out = f(a[broadcast], b[broadcast]) over the numpy broadcast of the shapes.
Ref naive_broadcast(const std::vector<const Ref*>& in, const std::function<double(const std::vector<double>&)>& f) {
  size_t n = 0;
  for (const Ref* r : in) n = std::max(n, r->shape.size());
  Shape out(n, 1);
  for (const Ref* r : in)
    for (size_t d = 0; d < r->shape.size(); ++d)
      out[n - r->shape.size() + d] = std::max(out[n - r->shape.size() + d], r->shape[d]);
  Ref o(out);
  for (int64_t i = 0; i < numel(out); ++i) {
    Shape idx = o.unravel(i);
    std::vector<double> vals;
    for (const Ref* r : in) {
      Shape ri(r->shape.size());
      for (size_t d = 0; d < ri.size(); ++d) ri[d] = r->shape[d] == 1 ? 0 : idx[n - r->shape.size() + d];
      vals.push_back(r->v[size_t(r->ravel(ri))]);
    }
    o.v[size_t(i)] = f(vals);
  }
  return o;
}

void expect_exact(const loom::runtime::NDArray& got, const Ref& want) {
  ASSERT_EQ(got.shape(), want.shape);
  int bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.v[size_t(i)];
    if (!(g == w || (std::isnan(g) && std::isnan(w))) && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << g << ", expected " << w;
  }
  EXPECT_EQ(bad, 0);
}

TEST(LogicOps, ComparisonsBroadcastAndGiveBool) {
  const std::vector<std::pair<const char*, std::function<bool(double, double)>>> cmps = {
      {"equal", [](double a, double b) { return a == b; }},
      {"not_equal", [](double a, double b) { return a != b; }},
      {"less", [](double a, double b) { return a < b; }},
      {"less_equal", [](double a, double b) { return a <= b; }},
      {"greater", [](double a, double b) { return a > b; }},
      {"greater_equal", [](double a, double b) { return a >= b; }}};
  for (DataType t : {f32, i32, DataType::UInt(8)}) {
    for (const auto& [op, f] : cmps) {
      SCOPED_TRACE(std::string(op) + " " + t.str());
      EXPECT_EQ(ops::get_op(op).pattern, ops::OpPattern::kBroadcast);
      Tensor a = ph({3, 1, 13}, "a", t), b = ph({7, 13}, "b", t);
      Tensor y = reg(op, {a, b});
      EXPECT_TRUE(y.dtype().is_bool());
      Inputs in;
      Ref ra = ints({3, 1, 13}, 0, 3, 1), rb = ints({7, 13}, 0, 3, 2);
      in.set(a, ra);
      in.set(b, rb);
      expect_exact(in.eval(y),
                   naive_broadcast({&ra, &rb}, [&](const std::vector<double>& v) { return double(f(v[0], v[1])); }));
    }
  }
  expect_error([] { reg("less", {ph({4}, "a", f32), ph({4}, "b", i32)}); }, {"less", "dtypes must match"});
  expect_error([] { reg("equal", {ph({4}, "a"), ph({3}, "b")}); }, {"equal", "does not broadcast"});
}

TEST(LogicOps, LogicalBitwiseAndWhere) {
  const DataType b8 = DataType::Bool();
  Tensor p = ph({5, 17}, "p", b8), q = ph({17}, "q", b8);
  Ref rp = ints({5, 17}, 0, 1, 3), rq = ints({17}, 0, 1, 4);
  const std::vector<std::pair<const char*, std::function<double(double, double)>>> logic = {
      {"logical_and", [](double a, double b) { return double(a && b); }},
      {"logical_or", [](double a, double b) { return double(a || b); }},
      {"logical_xor", [](double a, double b) { return double((a != 0) != (b != 0)); }}};
  for (const auto& [op, f] : logic) {
    SCOPED_TRACE(op);
    Inputs in;
    in.set(p, rp);
    in.set(q, rq);
    expect_exact(in.eval(reg(op, {p, q})),
                 naive_broadcast({&rp, &rq}, [&](const std::vector<double>& v) { return f(v[0], v[1]); }));
  }
  {
    Inputs in;
    in.set(p, rp);
    expect_exact(in.eval(reg("logical_not", {p})),
                 naive_broadcast({&rp}, [](const std::vector<double>& v) { return double(v[0] == 0); }));
  }
  expect_error([] { reg("logical_and", {ph({4}, "a", i32), ph({4}, "b", i32)}); }, {"logical_and", "must be bool"});

  for (DataType t : {i32, DataType::UInt(16), DataType::Int(8)}) {
    SCOPED_TRACE(t.str());
    Tensor a = ph({6, 30}, "a", t), b = ph({30}, "b", t);
    Ref ra = ints({6, 30}, t.is_uint() ? 0 : -100, 100, 5), rb = ints({30}, 0, 120, 6);
    const std::vector<std::pair<const char*, std::function<double(int64_t, int64_t)>>> bits = {
        {"bitwise_and", [](int64_t x, int64_t y) { return double(x & y); }},
        {"bitwise_or", [](int64_t x, int64_t y) { return double(x | y); }},
        {"bitwise_xor", [](int64_t x, int64_t y) { return double(x ^ y); }}};
    for (const auto& [op, f] : bits) {
      Inputs in;
      in.set(a, ra);
      in.set(b, rb);
      expect_exact(in.eval(reg(op, {a, b})), naive_broadcast({&ra, &rb}, [&](const std::vector<double>& v) {
                     return f(int64_t(v[0]), int64_t(v[1]));
                   }));
    }
    Inputs in;
    in.set(a, ra);
    expect_exact(in.eval(reg("bitwise_not", {a})), naive_broadcast({&ra}, [t](const std::vector<double>& v) {
                   int64_t r = ~int64_t(v[0]);
                   return double(t.is_uint() ? r & ((int64_t(1) << t.bits()) - 1) : r);
                 }));
  }
  expect_error([] { reg("bitwise_and", {ph({4}, "a"), ph({4}, "b")}); }, {"bitwise_and", "integer"});

  Tensor c = ph({4, 1, 7}, "c", b8), x = ph({3, 7}, "x"), y = ph({1}, "y");
  Ref rc = ints({4, 1, 7}, 0, 1, 7), rx = ints({3, 7}, -9, 9, 8), ry = ints({1}, 50, 50, 9);
  Inputs in;
  in.set(c, rc);
  in.set(x, rx);
  in.set(y, ry);
  expect_exact(in.eval(reg("where", {c, x, y})),
               naive_broadcast({&rc, &rx, &ry}, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; }));
  expect_error([] { reg("where", {ph({4}, "c", f32), ph({4}, "x"), ph({4}, "y")}); }, {"where", "cond", "bool"});
}

TEST(LogicOps, ShiftsFollowOnnxOutOfRangeRule) {
  const DataType i8 = DataType::Int(8), u8 = DataType::UInt(8);
  const Ref amounts = vals({8}, {0, 1, 3, 7, 8, 9, -1, -8});
  const Ref values = vals({8}, {1, -1, 37, -37, 64, -128, 127, 5});
  for (DataType t : {i8, u8, DataType::Int(64)}) {
    for (bool left : {true, false}) {
      SCOPED_TRACE(t.str() + (left ? " left" : " right"));
      Tensor a = ph({8}, "a", t), b = ph({8}, "b", t);
      Ref ra = values, rb = amounts;
      if (t.is_uint())
        for (size_t i = 0; i < 8; ++i) ra.v[i] = double(uint8_t(int8_t(ra.v[i]))), rb.v[i] = std::max(0.0, rb.v[i]);
      Inputs in;
      in.set(a, ra);
      in.set(b, rb);
      Ref want({8});
      for (size_t i = 0; i < 8; ++i) {
        const int64_t v = int64_t(ra.v[i]), s = int64_t(rb.v[i]);
        const int bits = t.bits();
        if (s < 0 || s >= bits) {
          want.v[i] = !left && t.is_int() && v < 0 ? -1 : 0;
          continue;
        }
        if (left) {
          uint64_t r = uint64_t(v) << s;
          if (bits < 64) r &= (uint64_t(1) << bits) - 1;
          want.v[i] = t.is_int() && bits < 64 && (r >> (bits - 1)) ? double(int64_t(r) - (int64_t(1) << bits))
                                                                   : double(int64_t(r));
        } else {
          want.v[i] = double(v >> s);
        }
      }
      expect_exact(in.eval(reg(left ? "left_shift" : "right_shift", {a, b})), want);
    }
  }
}

TEST(LogicOps, ModSignsAndInfinities) {
  Tensor a = ph({2, 9}, "a", i32), b = ph({9}, "b", i32);
  Ref ra = ints({2, 9}, -20, 20, 10), rb = vals({9}, {3, -3, 7, -7, 1, -1, 0, -4, 13});
  for (int64_t fmod : {0, 1}) {
    Inputs in;
    in.set(a, ra);
    in.set(b, rb);
    expect_exact(in.eval(reg("mod", {a, b}, {{"fmod", fmod}})),
                 naive_broadcast({&ra, &rb}, [fmod](const std::vector<double>& v) {
                   int64_t x = int64_t(v[0]), y = int64_t(v[1]);
                   if (y == 0) return 0.0;  // numpy's x mod 0
                   int64_t r = x % y;
                   if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
                   return double(r);
                 }));
  }
  Tensor fa = ph({10}, "a"), fb = ph({10}, "b");
  Ref xa = vals({10}, {-4.5, 7.25, 0, -3, 3, -1, 1, kInf, 1, 5}),
      xb = vals({10}, {2, -3, 2, kInf, kInf, -kInf, -kInf, 2, 0, 5});
  for (int64_t fmod : {0, 1}) {
    SCOPED_TRACE(fmod);
    Inputs in;
    in.set(fa, xa);
    in.set(fb, xb);
    expect_exact(in.eval(reg("mod", {fa, fb}, {{"fmod", fmod}})),
                 naive_broadcast({&xa, &xb}, [fmod](const std::vector<double>& v) {
                   double r = std::fmod(v[0], v[1]);
                   if (!fmod && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
                   return r;
                 }));
  }
}

TEST(LogicOps, NanInfAndTrigonometry) {
  Tensor x = ph({6}, "x");
  Ref rx = vals({6}, {1.5, NAN, kInf, -kInf, 0, -2});
  for (auto [pos, neg] : {std::pair{1, 1}, {1, 0}, {0, 1}}) {
    Inputs in;
    in.set(x, rx);
    expect_exact(in.eval(reg("isinf", {x}, {{"detect_positive", int64_t(pos)}, {"detect_negative", int64_t(neg)}})),
                 naive_broadcast({&rx}, [pos, neg](const std::vector<double>& v) {
                   return double((pos && v[0] == kInf) || (neg && v[0] == -kInf));
                 }));
  }
  Inputs in;
  in.set(x, rx);
  expect_exact(in.eval(reg("isnan", {x})),
               naive_broadcast({&rx}, [](const std::vector<double>& v) { return double(std::isnan(v[0])); }));

  const std::vector<std::tuple<const char*, double (*)(double), double, double>> trig = {
      {"tan", [](double v) { return std::tan(v); }, -1.4, 1.4},
      {"asin", [](double v) { return std::asin(v); }, -1, 1},
      {"acos", [](double v) { return std::acos(v); }, -1, 1},
      {"atan", [](double v) { return std::atan(v); }, -9, 9},
      {"sinh", [](double v) { return std::sinh(v); }, -4, 4},
      {"cosh", [](double v) { return std::cosh(v); }, -4, 4},
      {"asinh", [](double v) { return std::asinh(v); }, -9, 9},
      {"acosh", [](double v) { return std::acosh(v); }, 1, 9},
      {"atanh", [](double v) { return std::atanh(v); }, -0.99, 0.99}};
  for (const auto& [op, f, lo, hi] : trig) {
    SCOPED_TRACE(op);
    Tensor t = ph({7, 13}, "t");
    Inputs ins;
    Ref r = ins.add(t, lo, hi);
    expect_close(ins.eval(reg(op, {t})), naive_broadcast({&r}, [f](const std::vector<double>& v) { return f(v[0]); }),
                 1e-5);
  }
  expect_error([] { reg("tan", {ph({4}, "x", i32)}); }, {"tan", "floating point"});
}

TEST(LogicOps, PreluShrinkSwish) {
  Tensor x = ph({2, 3, 17}, "x"), slope = ph({3, 1}, "slope");
  Inputs in;
  Ref rx = in.add(x, -3, 3), rs = in.add(slope, 0, 1);
  expect_close(in.eval(reg("prelu", {x, slope})),
               naive_broadcast({&rx, &rs}, [](const std::vector<double>& v) { return v[0] < 0 ? v[0] * v[1] : v[0]; }));
  for (auto [l, b] : {std::pair{0.5, 0.0}, {1.5, 1.5}}) {
    expect_close(in.eval(reg("shrink", {x}, {{"lambd", l}, {"bias", b}})),
                 naive_broadcast({&rx}, [l, b](const std::vector<double>& v) {
                   return v[0] < -l ? v[0] + b : v[0] > l ? v[0] - b : 0.0;
                 }));
  }
  expect_close(in.eval(reg("swish", {x}, {{"alpha", 0.75}})), naive_broadcast({&rx}, [](const std::vector<double>& v) {
                 return v[0] / (1 + std::exp(-0.75 * v[0]));
               }));
  // Integers compare in float64 and truncate back.
  Tensor xi = ph({9}, "xi", i32);
  Ref ri = vals({9}, {-4, -3, -2, -1, 0, 1, 2, 3, 4});
  Inputs ii;
  ii.set(xi, ri);
  expect_exact(ii.eval(reg("shrink", {xi}, {{"lambd", 1.5}, {"bias", 0.5}})),
               vals({9}, {-3, -2, -1, 0, 0, 0, 1, 2, 3}));
}

// ---------------------------------------------------------------- reductions and search

TEST(SearchOps, ReduceProdOverAxes) {
  Tensor x = ph({3, 5, 7}, "x");
  Inputs in;
  Ref r = in.add(x, 0.5, 1.5);
  for (auto [axes, keep] :
       {std::pair{std::vector<int64_t>{1}, 1}, {std::vector<int64_t>{0, -1}, 0}, {std::vector<int64_t>{}, 0}}) {
    Tensor y = reg("reduce_prod", {x}, {{"axes", axes}, {"keepdims", int64_t(keep)}});
    std::vector<bool> red(3, axes.empty());
    for (int64_t a : axes) red[size_t((a + 3) % 3)] = true;
    Shape out, kept;
    for (size_t d = 0; d < 3; ++d) {
      kept.push_back(red[d] ? 1 : r.shape[d]);
      if (!red[d]) out.push_back(r.shape[d]);
      else if (keep) out.push_back(1);
    }
    if (out.empty()) out.push_back(1);
    Ref want(kept);
    std::fill(want.v.begin(), want.v.end(), 1.0);
    for (int64_t i = 0; i < numel(r.shape); ++i) {
      Shape idx = r.unravel(i);
      for (size_t d = 0; d < 3; ++d)
        if (red[d]) idx[d] = 0;
      want.v[size_t(want.ravel(idx))] *= r.v[size_t(i)];
    }
    want.shape = out;
    expect_close(in.eval(y), want);
  }
}

/// argmax/argmin along `axis` of a 2-D x, first or last of equal extremes.
Ref naive_arg(const Ref& x, int axis, bool is_max, bool last) {
  const int64_t R = x.shape[0], C = x.shape[1];
  Ref out(axis == 0 ? Shape{1, C} : Shape{R, 1});
  for (int64_t o = 0; o < (axis == 0 ? C : R); ++o) {
    int64_t best = 0;
    const int64_t n = axis == 0 ? R : C;
    auto at = [&](int64_t k) { return axis == 0 ? x.v[size_t(k * C + o)] : x.v[size_t(o * C + k)]; };
    for (int64_t k = 1; k < n; ++k) {
      double v = at(k), b = at(best);
      if ((is_max ? v > b : v < b) || (last && v == b)) best = k;
    }
    out.v[size_t(o)] = double(best);
  }
  return out;
}

TEST(SearchOps, ArgmaxArgminTiesKeepdims) {
  for (Shape s : {Shape{7, 13}, Shape{16, 8}}) {
    Tensor x = ph(s, "x");
    Ref r = ints(s, -3, 3, uint64_t(s[0]));
    for (const char* op : {"argmax", "argmin"}) {
      for (int axis : {0, 1, -1}) {
        for (int64_t last : {0, 1}) {
          SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis) + " last " + std::to_string(last));
          EXPECT_EQ(ops::get_op(op).pattern, ops::OpPattern::kCommReduce);
          Inputs in;
          in.set(x, r);
          Ref want = naive_arg(r, (axis + 2) % 2, std::string(op) == "argmax", last != 0);
          Tensor y = reg(op, {x}, {{"axis", int64_t(axis)}, {"select_last_index", last}});
          EXPECT_EQ(y.dtype(), i64);
          expect_exact(in.eval(y), want);
          Tensor dropped =
              reg(op, {x}, {{"axis", int64_t(axis)}, {"keepdims", int64_t(0)}, {"select_last_index", last}});
          want.shape = {numel(want.shape)};
          expect_exact(in.eval(dropped), want);
        }
      }
    }
  }
  Tensor v = ph({5}, "v");
  Inputs in;
  in.set(v, vals({5}, {1, 4, 4, -2, 0}));
  expect_exact(in.eval(reg("argmax", {v}, {{"keepdims", int64_t(0)}})), vals({1}, {1}));
  expect_exact(in.eval(reg("argmax", {v}, {{"select_last_index", int64_t(1)}})), vals({1}, {2}));
  expect_error([] { reg("argmax", {ph({4}, "x")}, {{"axis", int64_t(1)}}); }, {"argmax", "axis"});
}

TEST(SearchOps, TopkOrderTiesAndBothOutputs) {
  for (auto [s, axis, k] : {std::tuple{Shape{5, 13}, 1, 4}, {Shape{17, 3}, 0, 17}, {Shape{2, 9, 6}, -2, 1}}) {
    Tensor x = ph(s, "x");
    Ref r = ints(s, -4, 4, uint64_t(numel(s)));
    const size_t ax = size_t((axis + int(s.size())) % int(s.size()));
    for (int64_t largest : {1, 0}) {
      SCOPED_TRACE(numel(s) * 10 + largest);
      Attrs a = {{"k", int64_t(k)}, {"axis", int64_t(axis)}, {"largest", largest}};
      Attrs ai = a;
      ai["output"] = std::string("indices");
      Inputs in;
      in.set(x, r);
      loom::runtime::NDArray values = in.eval(reg("topk", {x}, a)), indices = in.eval(reg("topk", {x}, ai));
      Shape out = s;
      out[ax] = k;
      Ref want_v(out), want_i(out);
      for (int64_t o = 0; o < numel(out); ++o) {
        Shape idx = want_v.unravel(o);
        if (idx[ax] != 0) continue;
        std::vector<std::pair<double, int64_t>> line;
        for (int64_t j = 0; j < s[ax]; ++j) {
          Shape xi = idx;
          xi[ax] = j;
          line.push_back({r.v[size_t(r.ravel(xi))], j});
        }
        std::stable_sort(line.begin(), line.end(), [largest](const auto& p, const auto& q) {
          return largest ? p.first > q.first : p.first < q.first;
        });
        for (int64_t p = 0; p < k; ++p) {
          Shape oi = idx;
          oi[ax] = p;
          want_v.v[size_t(want_v.ravel(oi))] = line[size_t(p)].first;
          want_i.v[size_t(want_i.ravel(oi))] = double(line[size_t(p)].second);
        }
      }
      expect_exact(values, want_v);
      EXPECT_EQ(indices.dtype(), i64);
      expect_exact(indices, want_i);
    }
  }
  expect_error([] { reg("topk", {ph({4, 5}, "x")}, {{"k", int64_t(6)}}); }, {"topk", "k = 6", "[1, 5]"});
  expect_error(
      [] {
        reg("topk", {ph({4, 5}, "x")}, {{"k", int64_t(2)}, {"output", std::string("both")}});
      },
      {"topk", "output"});
}

}  // namespace
