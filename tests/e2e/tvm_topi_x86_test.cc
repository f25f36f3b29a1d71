// TOPI's x86 schedules ported to loom: softmax, max/avg pooling (NCHW), conv2d_NCHWc and
// dense (packed weight). Each follows the structure of its TOPI schedule (quoted in the
// comments) and is compared with te::evaluate on shapes that do and do not divide the
// schedule's factors.
#include "common/test_util.h"

namespace loom {
namespace {

using schedule::Stage;
using te::Expr;
using te::IterVar;
using te::Tensor;
using te::Var;

Tensor input_of(const Tensor& t, size_t i) {
  std::vector<Tensor> in = t.op()->input_tensors();
  LOOM_ICHECK(i < in.size());
  return in[i];
}

// ------------------------------------------------ softmax
// topi.x86 schedule_softmax: fuse the axes before `axis` and run them in parallel; max,
// exp and the sum all computed at that fused loop (exp has two consumers: the sum and the
// output, both inside it).
void schedule_softmax_x86(Schedule& s, const Tensor& out, int axis) {
  Tensor exp = input_of(out, 0), expsum = input_of(out, 1), max_elem = input_of(exp, 1);
  ASSERT_EQ(exp.op()->tag, "softmax_exp");
  ASSERT_EQ(expsum.op()->tag, "softmax_expsum");
  ASSERT_EQ(max_elem.op()->tag, "softmax_maxelem");
  Stage st = s[out];
  std::vector<IterVar> outer;
  for (int i = 0; i < axis; ++i) outer.push_back(st.axis(size_t(i)));
  IterVar fused = st.fuse(outer);
  st.parallel(fused);
  s[max_elem].compute_at(st, fused);
  s[expsum].compute_at(st, fused);
  s[exp].compute_at(st, fused);
}

TEST(TopiX86, Softmax) {
  struct Case {
    std::vector<int64_t> shape;
    int axis;
  };
  for (const Case& c : {Case{{8, 16}, 1}, Case{{5, 13}, 1}, Case{{2, 3, 7}, 2}, Case{{2, 5, 3, 4}, 1}}) {
    std::vector<Expr> shape(c.shape.begin(), c.shape.end());
    for (int vectorize = 0; vectorize < 2; ++vectorize) {
      Tensor x = te::placeholder(shape, DataType::Float(32), "x");
      Tensor y = te::ops::softmax(x, c.axis);
      Schedule s = create_schedule({y});
      schedule_softmax_x86(s, y, c.axis);
      if (vectorize) {
        // The last axis of the output and of exp split by 8 and vectorized.
        for (const Tensor& t : {y, input_of(y, 0)}) {
          Stage st = s[t];
          auto [o, i] = st.split(st.axis(c.shape.size() - 1), 8);
          (void)o;
          st.vectorize(i);
        }
      }
      EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{x, y}))
          << "shape " << fmt::format("{}", fmt::join(c.shape, "x")) << " axis " << c.axis << " vectorize " << vectorize;
    }
  }
}

// ------------------------------------------------ pooling
// topi.x86 schedule_pool: the padding inlined; the pool stage's outer axes fused and run in
// parallel; with vectorization, the fused reduce axes moved outside the last axis, which is
// vectorized (split by the largest divisor up to 64 when it is longer).
void parallel_pool_x86(Stage st, int64_t inner_length, bool vectorize) {
  IterVar fused = st.fuse(st.axis(0), st.axis(1));
  st.parallel(fused);
  if (!vectorize) return;
  std::vector<IterVar> order{fused};
  size_t nd = st->op->axis.size();
  for (size_t i = 2; i + 1 < nd; ++i) order.push_back(st.axis(i));
  std::vector<IterVar> rk;
  for (size_t i = 0; i < st->op->reduce_axis.size(); ++i) rk.push_back(st.reduce_axis(i));
  if (!rk.empty()) order.push_back(st.fuse(rk));
  IterVar c = st.axis(nd - 1);
  order.push_back(c);
  st.reorder(order);
  constexpr int64_t kVectorizeLimit = 64;
  if (inner_length <= kVectorizeLimit) {
    st.vectorize(c);
    return;
  }
  for (int64_t f = kVectorizeLimit; f > 1; --f) {
    if (inner_length % f == 0) {
      st.vectorize(st.split(c, f).second);
      return;
    }
  }
}

TEST(TopiX86, MaxAndAvgPoolNchw) {
  struct Case {
    int64_t n, c, h, w;
    int k, stride, pad;
  };
  // 12x12 with 2x2/2 pooling divides evenly; 11x9 with 3x3/2 and padding does not, and a
  // 70-wide output is split by its largest divisor up to 64 (35).
  for (const Case& c : {Case{1, 4, 12, 12, 2, 2, 0}, Case{2, 3, 11, 9, 3, 2, 1}, Case{1, 2, 3, 140, 2, 2, 0}}) {
    for (int avg = 0; avg < 2; ++avg) {
      for (int vectorize = 0; vectorize < 2; ++vectorize) {
        Tensor data = te::placeholder({c.n, c.c, c.h, c.w}, DataType::Float(32), "data");
        Tensor out = avg ? te::ops::avg_pool2d(data, {c.k, c.k}, {c.stride, c.stride}, {c.pad, c.pad}, false)
                         : te::ops::max_pool2d(data, {c.k, c.k}, {c.stride, c.stride}, {c.pad, c.pad});
        Schedule s = create_schedule({out});
        // The pool stage: the output for max, the windowed sum under the division for avg.
        Tensor pool = avg ? input_of(out, 0) : out;
        ASSERT_FALSE(pool.op()->reduce_axis.empty());
        Tensor padded = input_of(pool, 0);
        if (padded.op()->kind == te::OpKind::kCompute) s[padded].compute_inline();
        int64_t ow = *te::as_const_int(out.shape()[3]);
        parallel_pool_x86(s[pool], ow, vectorize);
        if (avg) parallel_pool_x86(s[out], ow, vectorize);
        EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{data, out}))
            << fmt::format("{}x{}x{}x{} k{} s{} p{} avg {} vectorize {}", c.n, c.c, c.h, c.w, c.k, c.stride, c.pad,
                           avg, vectorize);
      }
    }
  }
}

// ------------------------------------------------ conv2d_NCHWc
// topi.nn.conv2d_NCHWc: data [N, IC/ic_bn, H, W, ic_bn], kernel [OC/oc_bn, IC/ic_bn, KH, KW,
// ic_bn, oc_bn], output [N, OC/oc_bn, OH, OW, oc_bn], one flat reduce axis over the input
// channels.
struct ConvNchwc {
  Tensor data, kernel, out;
};
struct ConvShape {
  int64_t n, ic, oc, h, w, k, stride, pad;
  int64_t ic_bn, oc_bn;
};
ConvNchwc make_conv_nchwc(const ConvShape& c) {
  ConvNchwc p;
  p.data = te::placeholder({c.n, c.ic / c.ic_bn, c.h, c.w, c.ic_bn}, DataType::Float(32), "data");
  p.kernel = te::placeholder({c.oc / c.oc_bn, c.ic / c.ic_bn, c.k, c.k, c.ic_bn, c.oc_bn}, DataType::Float(32),
                             "kernel");
  Tensor in = c.pad > 0 ? te::ops::pad(p.data, {0, 0, c.pad, c.pad, 0}) : p.data;
  Tensor kernel = p.kernel;
  int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
  IterVar ic = te::reduce_axis({0, c.ic}, "ic");
  IterVar kh = te::reduce_axis({0, c.k}, "kh");
  IterVar kw = te::reduce_axis({0, c.k}, "kw");
  p.out = te::compute(
      {c.n, c.oc / c.oc_bn, oh, ow, c.oc_bn},
      [&](Var n, Var occ, Var y, Var x, Var ocb) {
        Expr icc = te::floordiv(ic, c.ic_bn), icb = te::floormod(ic, c.ic_bn);
        return te::sum(in(n, icc, y * c.stride + kh, x * c.stride + kw, icb) * kernel(occ, icc, kh, kw, icb, ocb),
                       {ic, kh, kw});
      },
      "conv2d_NCHWc");
  return p;
}

// topi.x86 conv2d_avx_common._schedule_conv_NCHWc (with an optional fused ReLU output).
void schedule_conv_nchwc_x86(Schedule& s, const Tensor& conv, const Tensor& last, int64_t reg_n, bool unroll_kw,
                             int64_t ic_bn) {
  Tensor data_vec = input_of(conv, 0);
  if (data_vec.op()->kind == te::OpKind::kCompute) {
    // batch, ic_chunk, ih, iw, ic_block = s[data_vec].op.axis
    Stage pad = s[data_vec];
    pad.parallel(pad.fuse({pad.axis(0), pad.axis(1), pad.axis(2)}));
  }
  Tensor C = conv, O = last;
  Tensor CC = s.cache_write(C, "global");
  Stage c = s[C];
  auto [ow_chunk, ow_block] = c.split(c.axis(3), reg_n);
  c.reorder({c.axis(1), c.axis(2), ow_chunk, ow_block, c.axis(4)});
  IterVar parallel_axis = c.fuse({c.axis(0), c.axis(1), c.axis(2)});
  c.vectorize(c.axis(4));
  if (C == O) c.parallel(parallel_axis);
  Stage cc = s[CC];
  cc.compute_at(c, ow_chunk);
  auto [cow_chunk, cow_block] = cc.split(cc.axis(3), reg_n);
  auto [ic_chunk, ic_block] = cc.split(cc.reduce_axis(0), ic_bn);
  IterVar kh = cc.reduce_axis(1), kw = cc.reduce_axis(2);
  IterVar oc_chunk = cc.axis(1), oh = cc.axis(2), oc_block = cc.axis(4);
  if (unroll_kw) {
    cc.reorder({oc_chunk, oh, cow_chunk, ic_chunk, kh, ic_block, kw, cow_block, oc_block});
    cc.unroll(kw);
  } else {
    cc.reorder({oc_chunk, oh, cow_chunk, ic_chunk, kh, kw, ic_block, cow_block, oc_block});
  }
  cc.vectorize(oc_block);
  cc.unroll(cow_block);
  if (C != O) {
    Stage o = s[O];
    auto [oow_chunk, oow_block] = o.split(o.axis(3), reg_n);
    o.reorder({o.axis(1), o.axis(2), oow_chunk, oow_block, o.axis(4)});
    IterVar fused = o.fuse({o.axis(0), o.axis(1), o.axis(2)});
    c.compute_at(o, oow_chunk);
    o.vectorize(o.axis(4));
    o.parallel(fused);
  }
}

TEST(TopiX86, Conv2dNchwc) {
  // reg_n 5 divides the 10-wide output; 4 does not, nor does it divide the stride-2 one (5).
  const ConvShape shapes[] = {{1, 8, 16, 10, 10, 3, 1, 1, 4, 8}, {1, 8, 8, 11, 9, 3, 2, 1, 8, 4}};
  for (const ConvShape& sh : shapes) {
    for (int64_t reg_n : {4, 5}) {
      for (int variant = 0; variant < 3; ++variant) {
        bool unroll_kw = variant == 1, relu = variant == 2;
        ConvNchwc p = make_conv_nchwc(sh);
        Tensor conv = p.out;
        Tensor last = relu ? te::ops::relu(conv) : conv;
        Schedule s = create_schedule({last});
        schedule_conv_nchwc_x86(s, conv, last, reg_n, unroll_kw, sh.ic_bn);
        EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{p.data, p.kernel, last}))
            << fmt::format("ic {} oc {} {}x{} stride {} reg_n {} unroll_kw {} relu {}", sh.ic, sh.oc, sh.h, sh.w,
                           sh.stride, reg_n, unroll_kw, relu);
      }
    }
  }
}

// ------------------------------------------------ dense
// topi.x86 dense_pack: the weight [N, K] packed as [ceil(N/bn), K, bn] (zeros past N), the
// product read from it; cache_write, tiles of C with the outer tile loops fused and parallel,
// the accumulator computed at the fused inner tile loop, vectorized over x.
struct DensePack {
  Tensor data, weight, packw, C, out, bias;
};
DensePack make_dense_pack(int64_t M, int64_t N, int64_t K, int64_t bn, bool bias_relu) {
  DensePack p;
  p.data = te::placeholder({M, K}, DataType::Float(32), "data");
  p.weight = te::placeholder({N, K}, DataType::Float(32), "weight");
  Tensor data = p.data, weight = p.weight;
  int64_t NB = (N + bn - 1) / bn;
  p.packw = te::compute({NB, K, bn}, [&](Var z, Var y, Var x) {
    Expr n = z * bn + x;
    return te::select(n < N, weight(te::min(n, Expr(N - 1)), y), te::make_const(DataType::Float(32), 0));
  }, "packed_weight");
  Tensor packw = p.packw;
  IterVar k = te::reduce_axis({0, K}, "k");
  p.C = te::compute({M, N}, [&](Var y, Var x) {
    return te::sum(data(y, k) * packw(te::floordiv(x, bn), k, te::floormod(x, bn)), {k});
  }, "dense_pack");
  p.out = p.C;
  if (bias_relu) {
    p.bias = te::placeholder({N}, DataType::Float(32), "bias");
    Tensor C = p.C, bias = p.bias;
    p.out = te::compute({M, N}, [&](Var y, Var x) { return te::max(C(y, x) + bias(x), 0.0f); }, "relu");
  }
  return p;
}

struct DenseTiles {
  int64_t yo, yi, xo, xi, k, inner;
};

/// cfg["tile_y"].apply(s, C, y) with sizes [-1, yo, yi]: (yt, yo, yi).
std::tuple<IterVar, IterVar, IterVar> split3(Stage st, const IterVar& iv, int64_t o, int64_t i) {
  auto [t, rest] = st.split(iv, o * i);
  auto [a, b] = st.split(rest, i);
  return {t, a, b};
}

void schedule_dense_pack_x86(Schedule& s, const DensePack& p, const DenseTiles& t) {
  Tensor C = p.C, O = p.out;
  Tensor CC = s.cache_write(C, "global");
  Stage c = s[C];
  auto [yt, yo, yi] = split3(c, c.axis(0), t.yo, t.yi);
  auto [xt, xo, xi] = split3(c, c.axis(1), t.xo, t.xi);
  c.reorder({xt, yt, yo, xo, yi, xi});
  IterVar xyt = c.fuse(xt, yt);
  if (C == O) c.parallel(xyt);
  IterVar xyo = c.fuse(yo, xo);
  c.unroll(yi);
  c.vectorize(xi);
  Stage cc = s[CC];
  cc.compute_at(c, xyo);
  IterVar y = cc.axis(0), x = cc.axis(1);
  auto [ko, ki] = cc.split(cc.reduce_axis(0), t.k);
  cc.reorder({ko, ki, y, x});
  cc.vectorize(x);
  if (t.inner > 1) {
    auto [cyo, cyi] = cc.split(y, t.inner);
    cc.reorder({ko, cyo, ki, cyi, x});
    cc.unroll(cyo);
    cc.unroll(ki);
    cc.unroll(cyi);
  } else {
    cc.unroll(ki);
    cc.unroll(y);
  }
  if (C != O) {
    Stage o = s[O];
    auto [oyt, oyo, oyi] = split3(o, o.axis(0), t.yo, t.yi);
    auto [oxt, oxo, oxi] = split3(o, o.axis(1), t.xo, t.xi);
    o.reorder({oxt, oyt, oyo, oxo, oyi, oxi});
    IterVar oxyt = o.fuse(oxt, oyt);
    c.compute_at(o, oxyt);
    o.vectorize(oxi);
    o.parallel(oxyt);
  }
  // z, y, x = s[packedB].op.axis; s[packedB].reorder(z, x, y); parallel(z); vectorize(y)
  Stage pw = s[p.packw];
  pw.reorder({pw.axis(0), pw.axis(2), pw.axis(1)});
  pw.parallel(pw.axis(0));
  pw.vectorize(pw.axis(1));
}

TEST(TopiX86, DensePack) {
  struct Case {
    int64_t M, N, K, bn;
    DenseTiles tiles;
  };
  // The first divides every factor; the second none but the column tile (N=20 is not a
  // multiple of the packing width 8, M=13 of the row tile 6, K=17 of the k tile 4); the
  // third none at all.
  const Case cases[] = {{16, 32, 24, 8, {2, 4, 2, 8, 4, 2}}, {13, 20, 17, 8, {2, 3, 1, 4, 4, 2}},
                        {5, 7, 3, 4, {1, 2, 2, 4, 2, 1}}};
  for (const Case& c : cases) {
    for (int bias_relu = 0; bias_relu < 2; ++bias_relu) {
      DensePack p = make_dense_pack(c.M, c.N, c.K, c.bn, bias_relu);
      Schedule s = create_schedule({p.out});
      schedule_dense_pack_x86(s, p, c.tiles);
      std::vector<Tensor> args{p.data, p.weight};
      if (bias_relu) args.push_back(p.bias);
      args.push_back(p.out);
      EXPECT_MATCHES_REFERENCE(s, args) << fmt::format("M {} N {} K {} bias_relu {}", c.M, c.N, c.K, bias_relu);
    }
  }
}

}  // namespace
}  // namespace loom
