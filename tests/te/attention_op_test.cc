// te::ops::attention (the unfused chain every attention kernel is checked against) against a
// direct loop in double precision: 4-D and packed layouts, grouped key/value heads, biases of
// several broadcast shapes, the causal mask with an offset, fully masked rows; and the errors
// of shapes that do not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/runtime/error.h"
#include "loom/te/evaluate.h"
#include "loom/te/ops.h"

namespace loom::te {
namespace {

using runtime::NDArray;

struct Case {
  int64_t b, h, hk, sq, skv, d, dv;
  bool packed;
  std::vector<int64_t> bias;  // empty: none
  ops::AttentionAttrs attrs;
};

std::vector<int64_t> shape_of(const Case& c, int64_t heads, int64_t seq, int64_t dim) {
  if (c.packed) return {c.b, seq, heads * dim};
  return {c.b, heads, seq, dim};
}

/// Element (b, h, i, x) of an input array in the case's layout.
double at(const Case& c, const NDArray& a, int64_t heads, int64_t seq, int64_t dim, int64_t b, int64_t h, int64_t i,
          int64_t x) {
  if (c.packed) return a.get(((b * seq) + i) * heads * dim + h * dim + x);
  return a.get(((b * heads + h) * seq + i) * dim + x);
}

/// softmax(Q·Kᵀ·scale + bias) · V with plain loops; a row without a visible key gives 0.
std::vector<double> naive(const Case& c, const NDArray& q, const NDArray& k, const NDArray& v, const NDArray* bias,
                          double scale) {
  std::vector<double> out(size_t(c.b * c.h * c.sq * c.dv), 0.0);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h)
      for (int64_t i = 0; i < c.sq; ++i) {
        const int64_t hk = h / (c.h / c.hk);
        std::vector<double> s(size_t(c.skv));
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < c.skv; ++j) {
          double dot = 0;
          for (int64_t x = 0; x < c.d; ++x)
            dot += at(c, q, c.h, c.sq, c.d, b, h, i, x) * at(c, k, c.hk, c.skv, c.d, b, hk, j, x);
          dot *= scale;
          if (bias) {
            std::vector<int64_t> full = {b, h, i, j}, idx;
            const std::vector<int64_t>& bs = c.bias;
            int64_t flat = 0;
            for (size_t n = 0; n < bs.size(); ++n) flat = flat * bs[n] + (bs[n] == 1 ? 0 : full[4 - bs.size() + n]);
            dot += bias->get(flat);
          }
          if (c.attrs.causal && j > i + c.attrs.causal_offset) dot = -std::numeric_limits<double>::infinity();
          s[size_t(j)] = dot;
          mx = std::max(mx, dot);
        }
        if (mx == -std::numeric_limits<double>::infinity()) continue;
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < c.dv; ++e) {
          double y = 0;
          for (int64_t j = 0; j < c.skv; ++j) y += s[size_t(j)] / sum * at(c, v, c.hk, c.skv, c.dv, b, hk, j, e);
          const int64_t o = c.packed ? ((b * c.sq + i) * c.h + h) * c.dv + e : ((b * c.h + h) * c.sq + i) * c.dv + e;
          out[size_t(o)] = y;
        }
      }
  return out;
}

void check(Case c) {
  if (c.packed) {
    c.attrs.num_heads = c.h;
    c.attrs.kv_num_heads = c.hk;
  }
  const DataType f32 = DataType::Float(32);
  auto sh = [](const std::vector<int64_t>& s) { return std::vector<Expr>(s.begin(), s.end()); };
  Tensor q = placeholder(sh(shape_of(c, c.h, c.sq, c.d)), f32, "q");
  Tensor k = placeholder(sh(shape_of(c, c.hk, c.skv, c.d)), f32, "k");
  Tensor v = placeholder(sh(shape_of(c, c.hk, c.skv, c.dv)), f32, "v");
  Tensor bias = c.bias.empty() ? Tensor() : placeholder(sh(c.bias), f32, "bias");
  Tensor o = ops::attention(q, k, v, bias, c.attrs);
  std::map<Tensor, NDArray> in;
  uint64_t seed = 3;
  for (const Tensor& t : {q, k, v, bias}) {
    if (!t.defined()) continue;
    std::vector<int64_t> s;
    for (const Expr& e : t.shape()) s.push_back(*as_const_int(e));
    NDArray a = NDArray::empty(s, f32);
    a.fill_random(seed++, -1, 1);
    in[t] = a;
  }
  if (bias.defined() && c.attrs.causal)  // a row masked throughout: bias -inf on row 0
    for (int64_t n = 0; n < in[bias].numel(); ++n)
      if (c.bias[c.bias.size() - 2] > 1 && (n / c.bias.back()) % c.bias[c.bias.size() - 2] == 0)
        in[bias].set(n, -std::numeric_limits<double>::infinity());
  NDArray got = evaluate({o}, in)[0];
  const double scale = c.attrs.scale != 0 ? c.attrs.scale : 1 / std::sqrt(double(c.d));
  std::vector<double> want = naive(c, in[q], in[k], in[v], bias.defined() ? &in[bias] : nullptr, scale);
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (int64_t n = 0; n < got.numel(); ++n)
    ASSERT_NEAR(got.get(n), want[size_t(n)], 1e-5 + 1e-4 * std::abs(want[size_t(n)])) << "element " << n;
}

TEST(AttentionOp, FourDimensional) { check({2, 3, 3, 5, 7, 4, 4, false, {}, {}}); }
TEST(AttentionOp, PackedWithGroupedKeys) { check({1, 4, 2, 6, 5, 3, 2, true, {}, {0, 0, 0.3, false, 0}}); }
TEST(AttentionOp, KeyMaskBias) { check({2, 2, 2, 4, 6, 3, 3, false, {2, 1, 1, 6}, {}}); }
TEST(AttentionOp, FullBiasPacked) { check({1, 2, 2, 3, 4, 2, 2, true, {1, 2, 3, 4}, {}}); }
TEST(AttentionOp, TwoDimensionalBias) { check({1, 2, 1, 5, 5, 3, 3, false, {5, 5}, {}}); }
TEST(AttentionOp, CausalWithOffsetAndMaskedRows) {
  Case c{1, 2, 2, 4, 7, 3, 3, false, {4, 7}, {}};
  c.attrs.causal = true;
  c.attrs.causal_offset = 3;
  check(c);
  c.attrs.causal_offset = -1;  // the first query sees no key: zeros
  c.bias.clear();
  check(c);
}

TEST(AttentionOp, ShapesThatDoNotFitAreErrors) {
  auto error = [](const std::vector<int64_t>& q, const std::vector<int64_t>& k, const std::vector<int64_t>& v,
                  const std::vector<int64_t>* bias, ops::AttentionAttrs a) {
    try {
      ops::attention_dims(q, k, v, bias, a);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error({1, 2, 3, 4}, {1, 2, 5}, {1, 2, 5, 4}, nullptr, {}).find("all be 4-D"), std::string::npos);
  EXPECT_NE(error({1, 3, 8}, {1, 3, 8}, {1, 3, 8}, nullptr, {}).find("needs num_heads"), std::string::npos);
  ops::AttentionAttrs three;
  three.num_heads = 3;
  EXPECT_NE(error({1, 3, 8}, {1, 3, 8}, {1, 3, 8}, nullptr, three).find("does not split into num_heads 3"),
            std::string::npos);
  EXPECT_NE(error({1, 2, 3, 4}, {1, 2, 5, 3}, {1, 2, 5, 4}, nullptr, {}).find("do not fit together"),
            std::string::npos);
  EXPECT_NE(error({1, 3, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}, nullptr, {}).find("not a multiple"), std::string::npos);
  std::vector<int64_t> bias = {1, 1, 3, 4};
  EXPECT_NE(error({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}, &bias, {}).find("does not broadcast"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::te
