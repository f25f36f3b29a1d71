// Peer implementations for `loom bench`.
#include "peers.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <optional>
#include <unordered_map>

#include "loom/runtime/error.h"
#include "loom/te/ops/attention.h"

#ifdef LOOM_CLI_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef LOOM_CLI_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace loom::cli {
namespace {

int64_t attr(const records::Workload& w, const std::string& key, int64_t def) {
  auto it = w.attrs.find(key);
  return it == w.attrs.end() ? def : std::stoll(it->second);
}

#ifdef LOOM_CLI_HAVE_OPENBLAS
Peer gemm_peer(const records::Workload& w) {
  Peer p{"OpenBLAS cblas_sgemm", "openblas", nullptr, nullptr, nullptr, nullptr};
  const std::vector<int64_t> s = w.shape;
  if (w.op == "matmul") {
    const int M = int(s[0]), N = int(s[1]), K = int(s[2]);
    p.run = [=](const std::vector<runtime::NDArray>& in, const runtime::NDArray& out) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, in[0].data<float>(), K,
                  in[1].data<float>(), N, 0.0f, out.data<float>(), N);
    };
  } else if (w.op == "batch_matmul") {
    const int Bt = int(s[0]), M = int(s[1]), N = int(s[2]), K = int(s[3]);
    p.name = "OpenBLAS cblas_sgemm (one call per batch)";
    p.run = [=](const std::vector<runtime::NDArray>& in, const runtime::NDArray& out) {
      for (int b = 0; b < Bt; ++b)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, in[0].data<float>() + int64_t(b) * M * K,
                    K, in[1].data<float>() + int64_t(b) * K * N, N, 0.0f, out.data<float>() + int64_t(b) * M * N, N);
    };
  } else {  // dense_bias_relu: out[N,M] = relu(X[N,K] W[M,K]^T + bias[M])
    const int N = int(s[0]), M = int(s[1]), K = int(s[2]);
    p.name = "OpenBLAS cblas_sgemm + bias/relu pass";
    p.run = [=](const std::vector<runtime::NDArray>& in, const runtime::NDArray& out) {
      float* o = out.data<float>();
      const float* bias = in[2].data<float>();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, M, K, 1.0f, in[0].data<float>(), K, in[1].data<float>(), K,
                  0.0f, o, M);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < M; ++j) o[i * M + j] = std::max(o[i * M + j] + bias[j], 0.0f);
    };
  }
  return p;
}
#endif

#ifdef LOOM_CLI_HAVE_DNNL
/// oneDNN convolution on NCHW data: the primitive picks its layouts; the weights are
/// reordered once, data and result on every call (as a user holding NCHW tensors would).
Peer dnnl_conv_peer(const records::Workload& w) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const bool depthwise = w.op == "depthwise_conv2d_nchw";
  const auto& s = w.shape;
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const int64_t K = depthwise ? C : s[4], R = depthwise ? s[4] : s[5], S = depthwise ? s[5] : s[6];
  const int64_t stride = attr(w, "stride", 1), pad = attr(w, "pad", 0);
  const int64_t OH = (H + 2 * pad - R) / stride + 1, OW = (W + 2 * pad - S) / stride + 1;

  struct State {
    engine eng{engine::kind::cpu, 0};
    stream strm{eng};
    convolution_forward conv;
    memory::desc src_user, wei_user, dst_user, src_md, wei_md, dst_md;
    memory wei, src_u, dst_u, src, dst;
    reorder src_reorder, dst_reorder;
    const void* wei_src = nullptr;  // the kernel array the reordered weights came from
  };
  auto st = std::make_shared<State>();
  memory::dims src_dims{N, C, H, W}, dst_dims{N, K, OH, OW};
  memory::dims wei_dims = depthwise ? memory::dims{C, 1, 1, R, S} : memory::dims{K, C, R, S};
  st->src_user = memory::desc(src_dims, dt::f32, tag::nchw);
  st->dst_user = memory::desc(dst_dims, dt::f32, tag::nchw);
  st->wei_user = memory::desc(wei_dims, dt::f32, depthwise ? tag::goihw : tag::oihw);
  memory::desc src_any(src_dims, dt::f32, tag::any), dst_any(dst_dims, dt::f32, tag::any),
      wei_any(wei_dims, dt::f32, tag::any);
  memory::dims strides{stride, stride}, padding{pad, pad};
#if DNNL_VERSION_MAJOR >= 3
  convolution_forward::primitive_desc pd(st->eng, prop_kind::forward_inference, algorithm::convolution_direct, src_any,
                                         wei_any, dst_any, strides, padding, padding);
#else
  convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, src_any, wei_any, dst_any,
                              strides, padding, padding);
  convolution_forward::primitive_desc pd(d, st->eng);
#endif
  st->conv = convolution_forward(pd);
  st->src_md = pd.src_desc();
  st->wei_md = pd.weights_desc();
  st->dst_md = pd.dst_desc();
  st->wei = memory(st->wei_md, st->eng);

  // Reorders are created once; each call only points the user-layout memories at the arrays.
  st->src_u = memory(st->src_user, st->eng, nullptr);
  st->dst_u = memory(st->dst_user, st->eng, nullptr);
  st->src = st->src_md == st->src_user ? st->src_u : memory(st->src_md, st->eng);
  st->dst = st->dst_md == st->dst_user ? st->dst_u : memory(st->dst_md, st->eng);
  if (st->src_md != st->src_user) st->src_reorder = reorder(st->src_u, st->src);
  if (st->dst_md != st->dst_user) st->dst_reorder = reorder(st->dst, st->dst_u);

  Peer p{depthwise ? "oneDNN convolution (groups = channels)" : "oneDNN convolution", "onednn", nullptr, nullptr, nullptr,
         nullptr};
  p.run = [st](const std::vector<runtime::NDArray>& in, const runtime::NDArray& out) {
    if (st->wei_src != in[1].data<float>()) {
      memory wei_u(st->wei_user, st->eng, in[1].data<float>());
      reorder(wei_u, st->wei).execute(st->strm, wei_u, st->wei);
      st->wei_src = in[1].data<float>();
    }
    st->src_u.set_data_handle(in[0].data<float>());
    st->dst_u.set_data_handle(out.data<float>());
    if (st->src_reorder) st->src_reorder.execute(st->strm, st->src_u, st->src);
    st->conv.execute(st->strm, {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_WEIGHTS, st->wei}, {DNNL_ARG_DST, st->dst}});
    if (st->dst_reorder) st->dst_reorder.execute(st->strm, st->dst, st->dst_u);
    st->strm.wait();
  };
  return p;
}

/// Makes `run` from a peer's prepare/compute/finish.
void combine(Peer& p) {
  auto prepare = p.prepare;
  auto compute = p.compute;
  auto finish = p.finish;
  p.run = [=](const std::vector<runtime::NDArray>& in, const runtime::NDArray& out) {
    prepare(in);
    compute();
    finish(out);
  };
}

/// A peer that runs one oneDNN primitive from loom's input 0 to its output, both plain arrays
/// of `md`, on engine `eng`.
Peer src_to_dst_peer(std::string name, const dnnl::engine& eng, const dnnl::primitive& prim,
                     const dnnl::memory::desc& md) {
  struct State {
    dnnl::engine eng;  // outlives the stream and memories made on it
    dnnl::stream strm;
    dnnl::primitive prim;
    dnnl::memory src, dst;
  };
  auto st = std::make_shared<State>(
      State{eng, dnnl::stream(eng), prim, dnnl::memory(md, eng, nullptr), dnnl::memory(md, eng, nullptr)});
  Peer p{std::move(name), "onednn", nullptr, nullptr, nullptr, nullptr};
  p.run = [st](const std::vector<runtime::NDArray>& in, const runtime::NDArray& out) {
    st->src.set_data_handle(in[0].raw_data());
    st->dst.set_data_handle(out.raw_data());
    st->prim.execute(st->strm, {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_DST, st->dst}});
    st->strm.wait();
  };
  return p;
}

/// oneDNN softmax along the last axis of a row-major [N, M] tensor (the softmax template's
/// workload; any leading axes folded into N), on loom's arrays in place of its own.
Peer dnnl_softmax_peer(const records::Workload& w) {
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  memory::desc md({w.shape[0], w.shape[1]}, memory::data_type::f32, memory::format_tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  softmax_forward::primitive_desc pd(eng, prop_kind::forward_inference, algorithm::softmax_accurate, md, md, 1);
#else
  softmax_forward::primitive_desc pd(softmax_forward::desc(prop_kind::forward_inference, md, 1), eng);
#endif
  return src_to_dst_peer("oneDNN softmax_forward", eng, softmax_forward(pd), md);
}

/// oneDNN's primitives for an attention workload, through a [B, H, Sq, Skv] scores buffer: a
/// matmul Q·Kᵀ with the scale and the bias as post-ops (eltwise_linear, binary_add; a causal
/// mask materialized as another binary_add), softmax_forward along the keys in place, and a
/// matmul by V. K's transpose and the packed [batch, seq, heads·dim] layouts are read through
/// strides. Grouped key/value heads have none (oneDNN's matmul broadcasts only batches of 1).
Peer dnnl_attention_peer(const records::Workload& w) {
  using namespace dnnl;
  using dt = memory::data_type;
  te::ops::AttentionAttrs a;
  const te::ops::AttentionDims d = te::ops::parse_attention_workload(w.shape, w.attrs, &a, w.op);
  LOOM_CHECK(d.kv_heads == d.heads, "grouped key/value heads ({} for {} query heads)", d.kv_heads, d.heads);
  const int64_t B = d.batch, H = d.heads, Sq = d.seq_q, Skv = d.seq_kv, D = d.head_dim, Dv = d.v_head_dim;
  // [B, H, S, X] rows of X elements: packed [B, S, H·X] or plain.
  auto rows = [&](int64_t S, int64_t X) {
    return d.packed ? memory::dims{S * H * X, X, H * X, 1} : memory::dims{H * S * X, S * X, X, 1};
  };
  const memory::dims q_strides = rows(Sq, D), k_rows = rows(Skv, D);
  const memory::desc q_md({B, H, Sq, D}, dt::f32, q_strides);
  const memory::desc kt_md({B, H, D, Skv}, dt::f32, memory::dims{k_rows[0], k_rows[1], k_rows[3], k_rows[2]});
  const memory::desc s_md({B, H, Sq, Skv}, dt::f32, memory::format_tag::abcd);
  const memory::desc v_md({B, H, Skv, Dv}, dt::f32, rows(Skv, Dv));
  const memory::desc o_md({B, H, Sq, Dv}, dt::f32, rows(Sq, Dv));
  memory::dims bias_dims(4, 1);
  for (size_t i = 0; i < d.bias.size(); ++i) bias_dims[4 - d.bias.size() + i] = d.bias[i];
  const memory::desc bias_md(bias_dims, dt::f32, memory::format_tag::abcd);
  const memory::desc causal_md({1, 1, Sq, Skv}, dt::f32, memory::format_tag::abcd);

  struct State {
    engine eng;
    stream strm;
    matmul qk, pv;
    softmax_forward softmax;
    memory q, kt, scores, v, out, bias, causal;
    std::vector<float> scores_buf, causal_buf;
  };
  auto st = std::make_shared<State>();
  st->eng = engine(engine::kind::cpu, 0);
  st->strm = stream(st->eng);
  post_ops po;
#if DNNL_VERSION_MAJOR >= 3
  po.append_eltwise(algorithm::eltwise_linear, float(d.scale), 0.f);
#else
  po.append_eltwise(1.f, algorithm::eltwise_linear, float(d.scale), 0.f);
#endif
  if (!d.bias.empty()) po.append_binary(algorithm::binary_add, bias_md);
  if (a.causal) po.append_binary(algorithm::binary_add, causal_md);
  primitive_attr attr;
  attr.set_post_ops(po);
#if DNNL_VERSION_MAJOR >= 3
  st->qk = matmul(matmul::primitive_desc(st->eng, q_md, kt_md, s_md, attr));
  st->pv = matmul(matmul::primitive_desc(st->eng, s_md, v_md, o_md));
  st->softmax = softmax_forward(softmax_forward::primitive_desc(st->eng, prop_kind::forward_inference,
                                                                algorithm::softmax_accurate, s_md, s_md, 3));
#else
  st->qk = matmul(matmul::primitive_desc(matmul::desc(q_md, kt_md, s_md), attr, st->eng));
  st->pv = matmul(matmul::primitive_desc(matmul::desc(s_md, v_md, o_md), st->eng));
  st->softmax = softmax_forward(
      softmax_forward::primitive_desc(softmax_forward::desc(prop_kind::forward_inference, s_md, 3), st->eng));
#endif
  st->scores_buf.resize(size_t(B * H * Sq * Skv));
  st->scores = memory(s_md, st->eng, st->scores_buf.data());
  st->q = memory(q_md, st->eng, nullptr);
  st->kt = memory(kt_md, st->eng, nullptr);
  st->v = memory(v_md, st->eng, nullptr);
  st->out = memory(o_md, st->eng, nullptr);
  st->bias = memory(bias_md, st->eng, nullptr);
  if (a.causal) {
    st->causal_buf.resize(size_t(Sq * Skv));
    for (int64_t i = 0; i < Sq; ++i)
      for (int64_t j = 0; j < Skv; ++j)
        st->causal_buf[size_t(i * Skv + j)] = j <= i + a.causal_offset ? 0.f : -INFINITY;
  }
  st->causal = memory(causal_md, st->eng, a.causal ? st->causal_buf.data() : nullptr);
  const bool has_bias = !d.bias.empty(), causal = a.causal;
  Peer p{"oneDNN matmul + softmax + matmul", "onednn", nullptr, nullptr, nullptr, nullptr};
  p.run = [st, has_bias, causal](const std::vector<runtime::NDArray>& in, const runtime::NDArray& out) {
    st->q.set_data_handle(in[0].raw_data());
    st->kt.set_data_handle(in[1].raw_data());
    st->v.set_data_handle(in[2].raw_data());
    st->out.set_data_handle(out.raw_data());
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, st->q}, {DNNL_ARG_WEIGHTS, st->kt}, {DNNL_ARG_DST, st->scores}};
    int post = 1;  // post-op 0 is the scale
    if (has_bias) {
      st->bias.set_data_handle(in[3].raw_data());
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1] = st->bias;
    }
    if (causal) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1] = st->causal;
    st->qk.execute(st->strm, args);
    st->softmax.execute(st->strm, {{DNNL_ARG_SRC, st->scores}, {DNNL_ARG_DST, st->scores}});
    st->pv.execute(st->strm, {{DNNL_ARG_SRC, st->scores}, {DNNL_ARG_WEIGHTS, st->v}, {DNNL_ARG_DST, st->out}});
    st->strm.wait();
  };
  return p;
}

/// oneDNN's eltwise primitive for a float32 activation of any shape (gelu: gelu_erf, or
/// gelu_tanh with attribute approximate=tanh; sigmoid: logistic; tanh; exp), on loom's arrays.
Peer dnnl_eltwise_peer(const records::Workload& w) {
  using namespace dnnl;
  algorithm alg = algorithm::eltwise_exp;
  if (w.op == "gelu") {
    auto it = w.attrs.find("approximate");
    alg = it != w.attrs.end() && it->second == "tanh" ? algorithm::eltwise_gelu_tanh : algorithm::eltwise_gelu_erf;
  } else if (w.op == "sigmoid") {
    alg = algorithm::eltwise_logistic;
  } else if (w.op == "tanh") {
    alg = algorithm::eltwise_tanh;
  }
  int64_t n = 1;
  for (int64_t d : w.shape) n *= d;
  engine eng(engine::kind::cpu, 0);
  memory::desc md({n}, memory::data_type::f32, memory::format_tag::a);
#if DNNL_VERSION_MAJOR >= 3
  eltwise_forward::primitive_desc pd(eng, prop_kind::forward_inference, alg, md, md);
#else
  eltwise_forward::primitive_desc pd(eltwise_forward::desc(prop_kind::forward_inference, alg, md), eng);
#endif
  return src_to_dst_peer(fmt::format("oneDNN eltwise_forward ({})", w.op == "sigmoid" ? "logistic" : w.op), eng,
                         eltwise_forward(pd), md);
}

/// oneDNN's int8 matmul, u8 × s8 → s32 (matmul_int8 without requantization): src row-major
/// [M, K] as loom takes it, weights reordered once into the layout the primitive picks (from
/// loom's packed [N/16, K/4, 16, 4] array, unpacked), dst row-major like loom's, in a buffer of
/// its own that `finish` copies out.
Peer dnnl_matmul_int8_peer(const records::Workload& w) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const int64_t M = w.shape[0], N = w.shape[1], K = w.shape[2];
  struct State {
    engine eng{engine::kind::cpu, 0};
    stream strm{eng};
    matmul mm;
    memory src, wei, dst;
    const void* wei_src = nullptr;
  };
  auto st = std::make_shared<State>();
  memory::desc src_md({M, K}, dt::u8, tag::ab), dst_md({M, N}, dt::s32, tag::ab), wei_any({K, N}, dt::s8, tag::any);
#if DNNL_VERSION_MAJOR >= 3
  matmul::primitive_desc pd(st->eng, src_md, wei_any, dst_md);
#else
  matmul::primitive_desc pd(matmul::desc(src_md, wei_any, dst_md), st->eng);
#endif
  st->mm = matmul(pd);
  st->wei = memory(pd.weights_desc(), st->eng);
  st->src = memory(src_md, st->eng, nullptr);
  st->dst = memory(dst_md, st->eng);
  Peer p{"oneDNN matmul u8s8s32", "onednn", nullptr, nullptr, nullptr, nullptr};
  const int64_t KB = (K + 3) / 4;
  p.prepare = [st, N, K, KB](const std::vector<runtime::NDArray>& in) {
    st->src.set_data_handle(in[0].raw_data());
    if (st->wei_src == in[1].raw_data()) return;
    std::vector<int8_t> logical(size_t(K * N));
    const int8_t* packed = in[1].data<int8_t>();
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        logical[size_t(k * N + n)] = packed[(((n / 16) * KB + k / 4) * 16 + n % 16) * 4 + k % 4];
    memory user({{K, N}, dt::s8, tag::ab}, st->eng, logical.data());
    reorder(user, st->wei).execute(st->strm, user, st->wei);
    st->strm.wait();
    st->wei_src = in[1].raw_data();
  };
  p.compute = [st] {
    st->mm.execute(st->strm, {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_WEIGHTS, st->wei}, {DNNL_ARG_DST, st->dst}});
    st->strm.wait();
  };
  p.finish = [st](const runtime::NDArray& out) { std::memcpy(out.raw_data(), st->dst.get_data_handle(), out.nbytes()); };
  combine(p);
  return p;
}

/// oneDNN's int8 convolution, u8 × s8 → s32 (conv2d_nchwc_int8 without requantization), in
/// the layouts it picks (format_tag::any): loom's nChw16c data reordered into its source
/// layout by `prepare`, the kernel (OIhw4i16o4i, unpacked to OIHW) reordered once, its
/// destination reordered into loom's nChw16c int32 by `finish`.
Peer dnnl_conv_int8_peer(const records::Workload& w) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const auto& s = w.shape;
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3], K = s[4], R = s[5], S = s[6];
  const int64_t stride = attr(w, "stride", 1), pad = attr(w, "pad", 0);
  const int64_t OH = (H + 2 * pad - R) / stride + 1, OW = (W + 2 * pad - S) / stride + 1;
  struct State {
    engine eng{engine::kind::cpu, 0};
    stream strm{eng};
    convolution_forward conv;
    memory user_src, user_dst, src, wei, dst;
    std::optional<reorder> src_in, dst_out;
    const void* wei_src = nullptr;
  };
  auto st = std::make_shared<State>();
  const memory::dims src_dims{N, C, H, W}, wei_dims{K, C, R, S}, dst_dims{N, K, OH, OW};
  const memory::dims strides{stride, stride}, padding{pad, pad};
  memory::desc src_any(src_dims, dt::u8, tag::any), wei_any(wei_dims, dt::s8, tag::any),
      dst_any(dst_dims, dt::s32, tag::any);
#if DNNL_VERSION_MAJOR >= 3
  convolution_forward::primitive_desc pd(st->eng, prop_kind::forward_inference, algorithm::convolution_direct, src_any,
                                         wei_any, dst_any, strides, padding, padding);
#else
  convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, src_any, wei_any, dst_any,
                              strides, padding, padding);
  convolution_forward::primitive_desc pd(d, st->eng);
#endif
  st->conv = convolution_forward(pd);
  st->user_src = memory({src_dims, dt::u8, tag::nChw16c}, st->eng, nullptr);
  st->user_dst = memory({dst_dims, dt::s32, tag::nChw16c}, st->eng, nullptr);
  st->src = memory(pd.src_desc(), st->eng);
  st->wei = memory(pd.weights_desc(), st->eng);
  st->dst = memory(pd.dst_desc(), st->eng);
  st->src_in.emplace(st->user_src, st->src);
  st->dst_out.emplace(st->dst, st->user_dst);
  Peer p{"oneDNN convolution u8s8s32", "onednn", nullptr, nullptr, nullptr, nullptr};
  p.prepare = [st, K, C, R, S](const std::vector<runtime::NDArray>& in) {
    st->user_src.set_data_handle(in[0].raw_data());
    st->src_in->execute(st->strm, st->user_src, st->src);
    if (st->wei_src != in[1].raw_data()) {
      // loom's [K/16, C/16, R, S, 4, 16, 4]: (k, c, r, s) at [k/16, c/16, r, s, (c%16)/4, k%16, c%4].
      std::vector<int8_t> oihw(size_t(K * C * R * S));
      const int8_t* b = in[1].data<int8_t>();
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t rs = 0; rs < R * S; ++rs)
            oihw[size_t((k * C + c) * R * S + rs)] =
                b[((((k / 16) * (C / 16) + c / 16) * R * S + rs) * 4 + (c % 16) / 4) * 64 + (k % 16) * 4 + c % 4];
      memory user({{K, C, R, S}, dt::s8, tag::oihw}, st->eng, oihw.data());
      reorder(user, st->wei).execute(st->strm, user, st->wei);
      st->wei_src = in[1].raw_data();
    }
    st->strm.wait();
  };
  p.compute = [st] {
    st->conv.execute(st->strm, {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_WEIGHTS, st->wei}, {DNNL_ARG_DST, st->dst}});
    st->strm.wait();
  };
  p.finish = [st](const runtime::NDArray& out) {
    st->user_dst.set_data_handle(out.raw_data());
    st->dst_out->execute(st->strm, st->dst, st->user_dst);
    st->strm.wait();
  };
  combine(p);
  return p;
}
#endif

}  // namespace

std::optional<Peer> find_peer(const records::Workload& w, std::string* why_not) {
  auto none = [&](std::string why) -> std::optional<Peer> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (w.op == "matmul_int8" || w.op == "conv2d_nchwc_int8") {
    if (w.attrs.count("out_dtype") && w.attrs.at("out_dtype") != "int32")
      return none("no peer for a requantized output (oneDNN rounds its scaling in float, loom in integers)");
#ifdef LOOM_CLI_HAVE_DNNL
    try {
      return w.op == "matmul_int8" ? dnnl_matmul_int8_peer(w) : dnnl_conv_int8_peer(w);
    } catch (const std::exception& e) {
      return none(fmt::format("oneDNN rejected the {}: {}", w.op, e.what()));
    }
#else
    return none("built without oneDNN");
#endif
  }
  if (w.dtype != "float32") return none(fmt::format("no peer for {}", w.dtype));
  if (w.op == "matmul" || w.op == "batch_matmul" || w.op == "dense_bias_relu") {
#ifdef LOOM_CLI_HAVE_OPENBLAS
    return gemm_peer(w);
#else
    return none("built without OpenBLAS");
#endif
  }
  if (w.op == "conv2d_nchw" || w.op == "depthwise_conv2d_nchw") {
#ifdef LOOM_CLI_HAVE_DNNL
    try {
      return dnnl_conv_peer(w);
    } catch (const std::exception& e) {
      return none(fmt::format("oneDNN rejected the convolution: {}", e.what()));
    }
#else
    return none("built without oneDNN");
#endif
  }
  if (w.op == "attention") {
#ifdef LOOM_CLI_HAVE_DNNL
    try {
      return dnnl_attention_peer(w);
    } catch (const std::exception& e) {
      return none(fmt::format("no oneDNN attention for {}: {}", w.key(), e.what()));
    }
#else
    return none("built without oneDNN");
#endif
  }
  if (w.op == "softmax" || w.op == "gelu" || w.op == "sigmoid" || w.op == "tanh" || w.op == "exp") {
#ifdef LOOM_CLI_HAVE_DNNL
    try {
      if (w.op == "softmax") {
        if (w.shape.size() != 2) return none("the softmax peer takes the template's [N, M] shape");
        return dnnl_softmax_peer(w);
      }
      return dnnl_eltwise_peer(w);
    } catch (const std::exception& e) {
      return none(fmt::format("oneDNN rejected the {}: {}", w.op, e.what()));
    }
#else
    return none("built without oneDNN");
#endif
  }
  return none(fmt::format("no peer library for {}", w.op));
}

std::string openblas_native_kernels(char** argv) {
#ifdef LOOM_CLI_HAVE_OPENBLAS
  std::string core = openblas_get_corename();
  std::string lower = core;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const char* want = nullptr;
  bool ok = true;
  if (__builtin_cpu_supports("avx512f")) {
    want = "SkylakeX";
    ok = lower == "skylakex" || lower == "cooperlake" || lower == "sapphirerapids";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    want = "Haswell";
    ok = lower == "haswell" || lower == "zen" || lower == "skylakex" || lower == "cooperlake" ||
         lower == "sapphirerapids";
  }
  if (!ok && !std::getenv("OPENBLAS_CORETYPE")) {
    std::fprintf(stderr, "OpenBLAS chose its %s kernels on this CPU; re-running with OPENBLAS_CORETYPE=%s\n",
                 core.c_str(), want);
    ::setenv("OPENBLAS_CORETYPE", want, 1);
    ::execv("/proc/self/exe", argv);  // returns only on failure: carry on with the slow kernels
  }
  return core;
#else
  (void)argv;
  return "";
#endif
}

void set_peer_threads(int n) {
#ifdef LOOM_CLI_HAVE_OPENBLAS
  openblas_set_num_threads(n);
#endif
  // oneDNN runs on OpenMP here; its runtime reads OMP_NUM_THREADS when loaded, so set it directly.
  using SetThreads = void (*)(int);
  if (auto f = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) f(n);
}

}  // namespace loom::cli
