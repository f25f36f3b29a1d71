// oneDNN's float32 convolution as the convolution benchmarks run it (tuned_cpu, winograd),
// and the channel blocking of loom's NCHW16c arrays. Header-only: the benchmarks that include
// it link oneDNN themselves.
//
// The primitive is created with format_tag::any for source, weights and destination, so it
// picks its own blocked layouts; the weights are reordered once, at creation; `src_in` and
// `dst_out` reorder between the user's NCHW arrays and the primitive's layouts, and a
// benchmark times `run` (the convolution alone) or all three.
#pragma once
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

namespace loom::bench {

/// One convolution of batch 1: C input channels, H x H input, K output channels, R x R
/// kernel.
struct ConvShape {
  int C, H, K, R, stride, pad;
  int out() const { return (H + 2 * pad - R) / stride + 1; }
};

/// oneDNN state of one convolution: the primitive in its preferred layouts, the user's
/// NCHW/OIHW memories and the reorders between them.
struct DnnlConv {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::convolution_forward conv;
  dnnl::memory user_src, user_wei, user_dst, src, wei, dst;
  std::unique_ptr<dnnl::reorder> src_reorder, dst_reorder;

  /// The convolution alone, on `src` (after src_in) into `dst`.
  void run() {
    conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    strm.wait();
  }
  /// The user's NCHW data into the primitive's source layout.
  void src_in() {
    if (src_reorder) src_reorder->execute(strm, user_src, src);
    strm.wait();
  }
  /// The primitive's result into the user's NCHW output.
  void dst_out() {
    if (dst_reorder) dst_reorder->execute(strm, dst, user_dst);
    strm.wait();
  }
};

/// A oneDNN convolution of NCHW `data` with OIHW `kernel` into NCHW `out` (arrays the caller
/// keeps alive), with algorithm `alg`; its thread count is OpenMP's at this call. Throws
/// dnnl::error where oneDNN has no implementation (e.g. convolution_winograd on this CPU).
inline std::shared_ptr<DnnlConv> make_dnnl_conv(const ConvShape& l, float* data, float* kernel, float* out,
                                                dnnl::algorithm alg = dnnl::algorithm::convolution_direct) {
  using dnnl::memory;
  auto d = std::make_shared<DnnlConv>();
  const int OH = l.out();
  const memory::dims src_dims{1, l.C, l.H, l.H}, wei_dims{l.K, l.C, l.R, l.R}, dst_dims{1, l.K, OH, OH};
  const memory::dims strides{l.stride, l.stride}, padding{l.pad, l.pad};
  auto any = [](const memory::dims& dims) { return memory::desc(dims, memory::data_type::f32, memory::format_tag::any); };
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_forward::primitive_desc pd(d->eng, dnnl::prop_kind::forward_inference, alg, any(src_dims),
                                               any(wei_dims), any(dst_dims), strides, padding, padding);
#else
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, alg, any(src_dims), any(wei_dims),
                                       any(dst_dims), strides, padding, padding);
  dnnl::convolution_forward::primitive_desc pd(desc, d->eng);
#endif
  d->conv = dnnl::convolution_forward(pd);
  d->user_src = memory({src_dims, memory::data_type::f32, memory::format_tag::nchw}, d->eng, data);
  d->user_wei = memory({wei_dims, memory::data_type::f32, memory::format_tag::oihw}, d->eng, kernel);
  d->user_dst = memory({dst_dims, memory::data_type::f32, memory::format_tag::nchw}, d->eng, out);
  d->src = pd.src_desc() == d->user_src.get_desc() ? d->user_src : memory(pd.src_desc(), d->eng);
  d->wei = pd.weights_desc() == d->user_wei.get_desc() ? d->user_wei : memory(pd.weights_desc(), d->eng);
  d->dst = pd.dst_desc() == d->user_dst.get_desc() ? d->user_dst : memory(pd.dst_desc(), d->eng);
  if (d->wei != d->user_wei) dnnl::reorder(d->user_wei, d->wei).execute(d->strm, d->user_wei, d->wei);
  if (d->src != d->user_src) d->src_reorder = std::make_unique<dnnl::reorder>(d->user_src, d->src);
  if (d->dst != d->user_dst) d->dst_reorder = std::make_unique<dnnl::reorder>(d->dst, d->user_dst);
  d->strm.wait();
  return d;
}

/// NCHW [1, C, H, W] -> NCHW16c [1, C/16, H, W, 16] (and back with `to_blocked` false).
inline void convert_nchw16c(float* nchw, float* blocked, int C, int HW, bool to_blocked) {
  for (int c = 0; c < C; ++c)
    for (int i = 0; i < HW; ++i) {
      float& b = blocked[(int64_t(c / 16) * HW + i) * 16 + c % 16];
      float& p = nchw[int64_t(c) * HW + i];
      if (to_blocked) b = p;
      else p = b;
    }
}

/// OIHW [K, C, R, S] -> OIHW16i16o [K/16, C/16, R, S, 16, 16].
inline void block_oihw16i16o(const float* oihw, float* blocked, int K, int C, int RS) {
  for (int k = 0; k < K; ++k)
    for (int ch = 0; ch < C; ++ch)
      for (int rs = 0; rs < RS; ++rs)
        blocked[((((int64_t(k / 16) * (C / 16) + ch / 16) * RS + rs) * 16 + ch % 16) * 16) + k % 16] =
            oihw[(int64_t(k) * C + ch) * RS + rs];
}

}  // namespace loom::bench
