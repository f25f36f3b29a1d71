// roi_align (bilinear samples of each region's bins, reduced over the sample grid) and
// deform_conv2d (a convolution reading its taps bilinearly at offset positions).
#include "loom/te/ops/vision.h"

#include "loom/te/ops.h"
#include "op_util.h"

namespace loom::te::ops {

using detail::const_shape;
using detail::shape_str;
using detail::to_exprs;

Tensor roi_align(const Tensor& data, const Tensor& rois, const Tensor& batch_indices, const RoiAlignParams& p,
                 const std::string& name) {
  const std::vector<int64_t> xs = const_shape(data, "roi_align", "data"), rs = const_shape(rois, "roi_align", "rois"),
                             bs = const_shape(batch_indices, "roi_align", "batch_indices");
  LOOM_CHECK(xs.size() == 4, "roi_align: data must be [N, C, H, W], got {}", shape_str(xs));
  LOOM_CHECK(rs.size() == 2 && rs[1] == 4, "roi_align: rois must be [R, 4], got {}", shape_str(rs));
  LOOM_CHECK(bs.size() == 1 && bs[0] == rs[0], "roi_align: batch_indices must be [{}] (one per ROI), got {}", rs[0],
             shape_str(bs));
  const DataType t = data.dtype();
  LOOM_CHECK(t.is_float() && rois.dtype() == t, "roi_align: data and rois must be one floating-point type, got {} and {}",
             t.str(), rois.dtype().str());
  LOOM_CHECK(!batch_indices.dtype().is_float() && !batch_indices.dtype().is_bool(),
             "roi_align: batch_indices must be integers, got {}", batch_indices.dtype().str());
  LOOM_CHECK(p.output_height >= 1 && p.output_width >= 1 && p.sampling_ratio >= 1 && p.output_height <= INT32_MAX &&
                 p.output_width <= INT32_MAX && p.sampling_ratio <= 1024,
             "roi_align: output_height {}, output_width {} and sampling_ratio {} must be positive", p.output_height,
             p.output_width, p.sampling_ratio);
  const int64_t H = xs[2], W = xs[3], g = p.sampling_ratio;
  const DataType i32 = DataType::Int(32);
  auto c = [t](double v) { return make_const(t, v); };
  const std::vector<int64_t> out_shape{rs[0], xs[1], p.output_height, p.output_width};
  Tensor samples = compute(
      to_exprs(out_shape),
      [&](const std::vector<Var>& iv) {
        Var r = iv[0], ch = iv[1], ph = iv[2], pw = iv[3];
        const double offset = p.half_pixel ? 0.5 : 0.0;
        auto corner = [&](int k) { return rois({Expr(r), Expr(k)}) * c(p.spatial_scale) - c(offset); };
        Expr x1 = corner(0), y1 = corner(1);
        Expr roi_w = corner(2) - x1, roi_h = corner(3) - y1;
        if (!p.half_pixel) {
          roi_w = max(roi_w, c(1.0));
          roi_h = max(roi_h, c(1.0));
        }
        Expr bin_h = roi_h / c(double(p.output_height)), bin_w = roi_w / c(double(p.output_width));
        IterVar iy = reduce_axis(Range(Expr(0), Expr(int(g))), "iy"), ix = reduce_axis(Range(Expr(0), Expr(int(g))), "ix");
        Expr y = y1 + cast(t, Expr(ph)) * bin_h + (cast(t, Expr(iy->var)) + c(0.5)) * bin_h / c(double(g));
        Expr x = x1 + cast(t, Expr(pw)) * bin_w + (cast(t, Expr(ix->var)) + c(0.5)) * bin_w / c(double(g));
        Expr inside = !(y < c(-1.0) || y > c(double(H)) || x < c(-1.0) || x > c(double(W)));
        // The four neighbours, clamped to the image (the last row and column repeat).
        auto axis_of = [&](Expr v, int64_t n) {
          v = max(v, c(0.0));
          Expr low = min(cast(i32, floor(v)), Expr(int(n - 1)));
          Expr at_edge = low >= Expr(int(n - 1));
          Expr high = select(at_edge, low, low + Expr(1));
          Expr frac = select(at_edge, c(0.0), v - cast(t, low));
          return std::tuple<Expr, Expr, Expr>{low, high, frac};
        };
        auto [yl, yh, ly] = axis_of(y, H);
        auto [xl, xh, lx] = axis_of(x, W);
        Expr b = cast(i32, batch_indices({Expr(r)}));
        auto px = [&](Expr yy, Expr xx) { return data({b, Expr(ch), yy, xx}); };
        Expr hy = c(1.0) - ly, hx = c(1.0) - lx;
        Expr t1 = hy * hx * px(yl, xl), t2 = hy * lx * px(yl, xh), t3 = ly * hx * px(yh, xl), t4 = ly * lx * px(yh, xh);
        if (p.max_mode) return max_reduce(select(inside, max(max(t1, t2), max(t3, t4)), c(0.0)), {iy, ix});
        return sum(select(inside, t1 + t2 + t3 + t4, c(0.0)), {iy, ix});
      },
      name + "_samples", p.max_mode ? "roi_align_max" : "roi_align_sum");
  if (p.max_mode) return samples;
  return compute(
      to_exprs(out_shape),
      [&](const std::vector<Var>& iv) { return samples(std::vector<Expr>(iv.begin(), iv.end())) / c(double(g * g)); },
      name, "roi_align");
}

Tensor deform_conv2d(const Tensor& data, const Tensor& weight, const Tensor& offset, const Tensor& mask,
                     const Tensor& bias, const DeformConvParams& p, const std::string& name) {
  const std::vector<int64_t> xs = const_shape(data, "deform_conv2d", "data"),
                             ws = const_shape(weight, "deform_conv2d", "weight"),
                             os = const_shape(offset, "deform_conv2d", "offset");
  LOOM_CHECK(xs.size() == 4 && ws.size() == 4 && os.size() == 4,
             "deform_conv2d: data {}, weight {} and offset {} must be 4-D", shape_str(xs), shape_str(ws), shape_str(os));
  const DataType t = data.dtype();
  LOOM_CHECK(t.is_float() && weight.dtype() == t && offset.dtype() == t,
             "deform_conv2d: data, weight and offset must be one floating-point type");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], M = ws[0], kh = ws[2], kw = ws[3];
  const int64_t g = p.groups, og = p.offset_groups;
  LOOM_CHECK(g >= 1 && og >= 1 && C % g == 0 && M % g == 0 && ws[1] == C / g && C % og == 0,
             "deform_conv2d: data {} and weight {} do not fit groups {} and offset groups {}", shape_str(xs),
             shape_str(ws), g, og);
  for (int64_t v : {p.strides[0], p.strides[1], p.dilations[0], p.dilations[1]})
    LOOM_CHECK(v >= 1, "deform_conv2d: strides and dilations must be positive");
  for (int64_t v : p.pads) LOOM_CHECK(v >= 0, "deform_conv2d: pads must be non-negative");
  const int64_t OH = (H + p.pads[0] + p.pads[2] - (kh - 1) * p.dilations[0] - 1) / p.strides[0] + 1;
  const int64_t OW = (W + p.pads[1] + p.pads[3] - (kw - 1) * p.dilations[1] - 1) / p.strides[1] + 1;
  LOOM_CHECK(OH >= 1 && OW >= 1, "deform_conv2d: the window does not fit data {}", shape_str(xs));
  LOOM_CHECK(os == std::vector<int64_t>({N, og * kh * kw * 2, OH, OW}), "deform_conv2d: offset {} must be [{}, {}, {}, {}]",
             shape_str(os), N, og * kh * kw * 2, OH, OW);
  if (mask.defined()) {
    const std::vector<int64_t> ms = const_shape(mask, "deform_conv2d", "mask");
    LOOM_CHECK(ms == std::vector<int64_t>({N, og * kh * kw, OH, OW}) && mask.dtype() == t,
               "deform_conv2d: mask {} {} must be {} [{}, {}, {}, {}]", mask.dtype().str(), shape_str(ms), t.str(), N,
               og * kh * kw, OH, OW);
  }
  const DataType i32 = DataType::Int(32);
  auto c = [t](double v) { return make_const(t, v); };
  auto ic = [](int64_t v) { return Expr(int(v)); };
  Tensor conv = compute(
      to_exprs({N, M, OH, OW}),
      [&](const std::vector<Var>& iv) {
        Var n = iv[0], m = iv[1], y = iv[2], x = iv[3];
        IterVar rc = reduce_axis(Range(ic(0), ic(C / g)), "rc"), ry = reduce_axis(Range(ic(0), ic(kh)), "ry"),
                rx = reduce_axis(Range(ic(0), ic(kw)), "rx");
        Expr ch = Expr(m) / ic(M / g) * ic(C / g) + rc->var;
        Expr tap = (ch / ic(C / og) * ic(kh) + ry->var) * ic(kw) + rx->var;
        Expr dh = offset({Expr(n), tap * ic(2), Expr(y), Expr(x)});
        Expr dw = offset({Expr(n), tap * ic(2) + ic(1), Expr(y), Expr(x)});
        Expr h = cast(t, Expr(y) * ic(p.strides[0]) - ic(p.pads[0]) + Expr(ry->var) * ic(p.dilations[0])) + dh;
        Expr w = cast(t, Expr(x) * ic(p.strides[1]) - ic(p.pads[1]) + Expr(rx->var) * ic(p.dilations[1])) + dw;
        Expr h0f = floor(h), w0f = floor(w);
        Expr lh = h - h0f, lw = w - w0f;
        // Outside the image (or too far for int32) a neighbour reads 0; indices are clamped
        // so that no load leaves the image.
        Expr h0 = cast(i32, max(min(h0f, c(double(H))), c(-2.0))), w0 = cast(i32, max(min(w0f, c(double(W))), c(-2.0)));
        auto px = [&](Expr yy, Expr xx) {
          Expr inside = yy >= ic(0) && yy < ic(H) && xx >= ic(0) && xx < ic(W);
          Expr v = data({Expr(n), ch, max(min(yy, ic(H - 1)), ic(0)), max(min(xx, ic(W - 1)), ic(0))});
          return select(inside, v, c(0.0));
        };
        Expr sample = (c(1.0) - lh) * (c(1.0) - lw) * px(h0, w0) + (c(1.0) - lh) * lw * px(h0, w0 + ic(1)) +
                      lh * (c(1.0) - lw) * px(h0 + ic(1), w0) + lh * lw * px(h0 + ic(1), w0 + ic(1));
        if (mask.defined()) sample = sample * mask({Expr(n), tap, Expr(y), Expr(x)});
        return sum(weight({Expr(m), Expr(rc->var), Expr(ry->var), Expr(rx->var)}) * sample, {rc, ry, rx});
      },
      bias.defined() ? name + "_conv" : name, "deform_conv2d");
  if (!bias.defined()) return conv;
  const std::vector<int64_t> bs = const_shape(bias, "deform_conv2d", "bias");
  LOOM_CHECK(bs == std::vector<int64_t>{M} && bias.dtype() == t, "deform_conv2d: bias {} must be [{}]", shape_str(bs), M);
  return compute(
      to_exprs({N, M, OH, OW}),
      [&](const std::vector<Var>& iv) { return conv(std::vector<Expr>(iv.begin(), iv.end())) + bias({Expr(iv[1])}); },
      name, "broadcast");
}

}  // namespace loom::te::ops
