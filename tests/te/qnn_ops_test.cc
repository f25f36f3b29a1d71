// The integer convolutions (conv2d_int8, conv2d_nchwc_int8 with pack_int8_kernel) through the
// registry and te::evaluate against naive loops over uint8 data and int8 weights: groups,
// depthwise, dilation, asymmetric padding, channel counts that are and are not multiples of
// the 16-channel block, and the int32 bias.
#include <gtest/gtest.h>

#include "loom/te/evaluate.h"
#include "loom/te/op_registry.h"
#include "loom/te/ops.h"

namespace loom::te {
namespace {

using runtime::NDArray;

NDArray random_ints(std::vector<int64_t> shape, DataType t, uint64_t seed) {
  NDArray a = NDArray::empty(shape, t);
  const int64_t lo = t == DataType::UInt(8) ? 0 : t == DataType::Int(8) ? -128 : -100000;
  const int64_t span = t == DataType::Int(32) ? 200001 : 256;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < a.numel(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    a.set(i, double(lo + int64_t(x % uint64_t(span))));
  }
  return a;
}

struct Conv {
  int64_t N, C, H, W, K, R, S;
  std::array<int64_t, 2> stride{1, 1}, dilation{1, 1};
  std::array<int64_t, 4> pad{0, 0, 0, 0};  // top, left, bottom, right
  int64_t groups = 1;
  int64_t OH() const { return (H + pad[0] + pad[2] - dilation[0] * (R - 1) - 1) / stride[0] + 1; }
  int64_t OW() const { return (W + pad[1] + pad[3] - dilation[1] * (S - 1) - 1) / stride[1] + 1; }
};

/// out[n,k,y,x] = bias[k] + sum x[n,c,h,w]·w[k,c',r,s] over the group's channels, zero padding,
/// with `x_at`/`w_at` reading the logical elements.
std::vector<int64_t> naive(const Conv& c, const std::function<int64_t(int64_t, int64_t, int64_t, int64_t)>& x_at,
                           const std::function<int64_t(int64_t, int64_t, int64_t, int64_t)>& w_at, const NDArray* bias) {
  const int64_t cpg = c.C / c.groups, kpg = c.K / c.groups;
  std::vector<int64_t> out;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t y = 0; y < c.OH(); ++y)
        for (int64_t x = 0; x < c.OW(); ++x) {
          int64_t acc = bias ? int64_t(bias->get(k)) : 0;
          for (int64_t ci = 0; ci < cpg; ++ci)
            for (int64_t r = 0; r < c.R; ++r)
              for (int64_t s = 0; s < c.S; ++s) {
                const int64_t h = y * c.stride[0] + r * c.dilation[0] - c.pad[0];
                const int64_t w = x * c.stride[1] + s * c.dilation[1] - c.pad[1];
                if (h < 0 || h >= c.H || w < 0 || w >= c.W) continue;
                acc += x_at(n, k / kpg * cpg + ci, h, w) * w_at(k, ci, r, s);
              }
          out.push_back(acc);
        }
  return out;
}

Tensor apply(const std::string& op, const std::vector<Tensor>& in, const ops::Attrs& a) {
  return ops::apply_op(op, in, a).at(0);
}

void expect_equal(const NDArray& got, const std::vector<int64_t>& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), DataType::Int(32)) << what;
  ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    if (int64_t(got.get(i)) != want[size_t(i)] && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got.get(i) << ", expected " << want[size_t(i)];
}

void check_conv2d_int8(const Conv& c, bool with_bias, uint64_t seed) {
  SCOPED_TRACE(fmt::format("C={} K={} {}x{} groups={} stride {}x{} pad {},{},{},{} dilation {}", c.C, c.K, c.H, c.W,
                           c.groups, c.stride[0], c.stride[1], c.pad[0], c.pad[1], c.pad[2], c.pad[3], c.dilation[0]));
  Tensor x = placeholder({c.N, c.C, c.H, c.W}, DataType::UInt(8), "x");
  Tensor w = placeholder({c.K, c.C / c.groups, c.R, c.S}, DataType::Int(8), "w");
  Tensor b = placeholder({c.K}, DataType::Int(32), "b");
  NDArray xa = random_ints({c.N, c.C, c.H, c.W}, DataType::UInt(8), seed);
  NDArray wa = random_ints({c.K, c.C / c.groups, c.R, c.S}, DataType::Int(8), seed + 1);
  NDArray ba = random_ints({c.K}, DataType::Int(32), seed + 2);
  ops::Attrs a{{"strides", std::vector<int64_t>{c.stride[0], c.stride[1]}},
               {"padding", std::vector<int64_t>{c.pad[0], c.pad[1], c.pad[2], c.pad[3]}},
               {"dilation", std::vector<int64_t>{c.dilation[0], c.dilation[1]}},
               {"groups", c.groups}};
  std::vector<Tensor> in{x, w};
  if (with_bias) in.push_back(b);
  NDArray got = evaluate({apply("conv2d_int8", in, a)}, {{x, xa}, {w, wa}, {b, ba}}).at(0);
  auto x_at = [&](int64_t n, int64_t ch, int64_t h, int64_t ww) {
    return int64_t(xa.get(((n * c.C + ch) * c.H + h) * c.W + ww));
  };
  auto w_at = [&](int64_t k, int64_t ch, int64_t r, int64_t s) {
    return int64_t(wa.get(((k * (c.C / c.groups) + ch) * c.R + r) * c.S + s));
  };
  expect_equal(got, naive(c, x_at, w_at, with_bias ? &ba : nullptr), "conv2d_int8");
}

TEST(QnnOps, Conv2dInt8MatchesNaiveLoops) {
  // Three input channels (no 16-channel block), stride 2 and asymmetric padding.
  check_conv2d_int8({1, 3, 9, 7, 5, 3, 3, {2, 2}, {1, 1}, {1, 0, 2, 1}}, true, 1);
  // Groups, stride (1, 2), no bias.
  check_conv2d_int8({2, 4, 6, 6, 6, 3, 2, {1, 2}, {1, 1}, {1, 1, 1, 1}, 2}, false, 2);
  // Depthwise with dilation 2.
  check_conv2d_int8({1, 8, 8, 8, 8, 3, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}, 8}, true, 3);
  // Extreme values: 255 · -128 summed over 32 channels and 3x3 stays exact in int32.
  check_conv2d_int8({1, 32, 5, 5, 16, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}}, true, 4);
}

void check_nchwc_int8(const Conv& c, bool with_bias, uint64_t seed) {
  SCOPED_TRACE(fmt::format("C={} K={} {}x{} {}x{} stride {} pad {}", c.C, c.K, c.H, c.W, c.R, c.S, c.stride[0],
                           c.pad[0]));
  const int64_t L = ops::kInt8Block;
  Tensor x = placeholder({c.N, c.C / L, c.H, c.W, L}, DataType::UInt(8), "x");
  Tensor w = placeholder({c.K, c.C, c.R, c.S}, DataType::Int(8), "w");
  Tensor b = placeholder({c.K}, DataType::Int(32), "b");
  NDArray xa = random_ints({c.N, c.C / L, c.H, c.W, L}, DataType::UInt(8), seed);
  NDArray wa = random_ints({c.K, c.C, c.R, c.S}, DataType::Int(8), seed + 1);
  NDArray ba = random_ints({c.K}, DataType::Int(32), seed + 2);
  Tensor packed = apply("pack_int8_kernel", {w}, {});
  ASSERT_EQ(packed.ndim(), 7u);
  std::vector<Tensor> in{x, packed};
  if (with_bias) in.push_back(b);
  ops::Attrs a{{"strides", std::vector<int64_t>{c.stride[0], c.stride[1]}},
               {"padding", std::vector<int64_t>{c.pad[0], c.pad[1]}}};
  Tensor out = apply("conv2d_nchwc_int8", in, a);
  std::vector<NDArray> got = evaluate({out, packed}, {{x, xa}, {w, wa}, {b, ba}});
  // The packed kernel: input channel c of a block at [.., c/4, k, c%4].
  const NDArray& pk = got[1];
  const int64_t CB = c.C / L;
  for (int64_t k = 0; k < c.K; k += 7)
    for (int64_t ch = 0; ch < c.C; ch += 3) {
      const int64_t i = ((((((k / L) * CB + ch / L) * c.R + 0) * c.S + 0) * 4 + ch % L / 4) * L + k % L) * 4 + ch % 4;
      ASSERT_EQ(pk.get(i), wa.get(((k * c.C + ch) * c.R) * c.S)) << "packed k=" << k << " c=" << ch;
    }
  auto x_at = [&](int64_t n, int64_t ch, int64_t h, int64_t ww) {
    return int64_t(xa.get((((n * CB + ch / L) * c.H + h) * c.W + ww) * L + ch % L));
  };
  auto w_at = [&](int64_t k, int64_t ch, int64_t r, int64_t s) {
    return int64_t(wa.get(((k * c.C + ch) * c.R + r) * c.S + s));
  };
  // naive() walks [N,K,OH,OW]; the operator writes [N,K/16,OH,OW,16].
  std::vector<int64_t> want = naive(c, x_at, w_at, with_bias ? &ba : nullptr), blocked(want.size());
  const int64_t OH = c.OH(), OW = c.OW();
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t i = 0; i < OH * OW; ++i)
        blocked[size_t((((n * (c.K / L) + k / L) * OH * OW + i) * L) + k % L)] = want[size_t((n * c.K + k) * OH * OW + i)];
  expect_equal(got[0], blocked, "conv2d_nchwc_int8");
  EXPECT_EQ(out.shape().size(), 5u);
}

TEST(QnnOps, Conv2dNchwcInt8MatchesNaiveLoops) {
  // 3x3 pad 1 on 7x5 (no register tile divides both), two input and three output blocks.
  check_nchwc_int8({1, 32, 7, 5, 48, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}}, true, 11);
  // 1x1 stride 2 without padding or bias, batch 2.
  check_nchwc_int8({2, 16, 9, 9, 32, 1, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}}, false, 12);
  // Stride (2, 1) and padding (2, 0).
  check_nchwc_int8({1, 16, 6, 6, 16, 3, 3, {2, 1}, {1, 1}, {2, 0, 2, 0}}, true, 13);
}

TEST(QnnOps, ErrorsNameWhatIsWrong) {
  Tensor xf = placeholder({1, 16, 4, 4}, DataType::Float(32), "x");
  Tensor w = placeholder({16, 16, 1, 1}, DataType::Int(8), "w");
  try {
    apply("conv2d_int8", {xf, w}, {});
    FAIL() << "float data accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data must be uint8"), std::string::npos) << e.what();
  }
  try {
    apply("pack_int8_kernel", {placeholder({24, 16, 1, 1}, DataType::Int(8), "w24")}, {});
    FAIL() << "24 output channels packed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 16"), std::string::npos) << e.what();
  }
  Tensor xb = placeholder({1, 1, 4, 4, 16}, DataType::UInt(8), "xb");
  Tensor wp = placeholder({1, 1, 1, 1, 4, 16, 4}, DataType::Int(8), "wp");
  try {
    apply("conv2d_nchwc_int8", {xb, wp, placeholder({16}, DataType::Float(32), "bf")}, {});
    FAIL() << "float bias accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bias must be int32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::te
