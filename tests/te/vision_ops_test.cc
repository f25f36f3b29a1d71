// roi_align and deform_conv2d: the registry entries through te::evaluate against naive loops,
// and their errors.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/te/op_registry.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;
using loom::te::ops::Attrs;

/// x[n, c] at (y, x) bilinearly; neighbours outside the image read 0.
double bilinear_zero(const Ref& x, int64_t n, int64_t c, double y, double xx) {
  const int64_t H = x.shape[2], W = x.shape[3];
  const double y0 = std::floor(y), x0 = std::floor(xx);
  double v = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t yy = int64_t(y0) + dy, xi = int64_t(x0) + dx;
      if (yy < 0 || yy >= H || xi < 0 || xi >= W) continue;
      const double w = (dy ? y - y0 : 1 - (y - y0)) * (dx ? xx - x0 : 1 - (xx - x0));
      v += w * x({n, c, yy, xi});
    }
  return v;
}

/// RoiAlign as its definition reads: each sample clamped into the image (the last row and
/// column repeat), a sample beyond one pixel outside counting 0.
Ref naive_roi_align(const Ref& x, const Ref& rois, const std::vector<int64_t>& batch, int64_t oh, int64_t ow, int64_t g,
                    double scale, bool max_mode, bool half_pixel) {
  const int64_t R = rois.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  Ref out({R, C, oh, ow});
  for (int64_t r = 0; r < R; ++r) {
    const double off = half_pixel ? 0.5 : 0.0;
    const double x1 = rois({r, 0}) * scale - off, y1 = rois({r, 1}) * scale - off;
    double rw = rois({r, 2}) * scale - off - x1, rh = rois({r, 3}) * scale - off - y1;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const double bh = rh / double(oh), bw = rw / double(ow);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = max_mode ? -INFINITY : 0.0;
          for (int64_t iy = 0; iy < g; ++iy)
            for (int64_t ix = 0; ix < g; ++ix) {
              double y = y1 + double(ph) * bh + (double(iy) + 0.5) * bh / double(g);
              double xx = x1 + double(pw) * bw + (double(ix) + 0.5) * bw / double(g);
              double v = 0;
              if (!(y < -1 || y > double(H) || xx < -1 || xx > double(W))) {
                y = std::max(y, 0.0), xx = std::max(xx, 0.0);
                int64_t yl = int64_t(y), xl = int64_t(xx), yh = yl + 1, xh = xl + 1;
                if (yl >= H - 1) yl = yh = H - 1, y = double(yl);
                if (xl >= W - 1) xl = xh = W - 1, xx = double(xl);
                const double ly = y - double(yl), lx = xx - double(xl);
                const int64_t b = batch[size_t(r)];
                const double t[4] = {(1 - ly) * (1 - lx) * x({b, c, yl, xl}), (1 - ly) * lx * x({b, c, yl, xh}),
                                     ly * (1 - lx) * x({b, c, yh, xl}), ly * lx * x({b, c, yh, xh})};
                v = max_mode ? std::max(std::max(t[0], t[1]), std::max(t[2], t[3])) : t[0] + t[1] + t[2] + t[3];
              }
              acc = max_mode ? std::max(acc, v) : acc + v;
            }
          out({r, c, ph, pw}) = max_mode ? acc : acc / double(g * g);
        }
  }
  return out;
}

TEST(VisionOps, RoiAlignMatchesNaiveLoops) {
  Inputs in;
  Tensor X = ph({2, 3, 7, 6}, "x"), R = ph({4, 4}, "rois"), B = ph({4}, "b", DataType::Int(64));
  Ref x = in.add(X, -1.0, 1.0);
  Ref rois({4, 4});
  // Inside, partly outside, degenerate (a point) and far outside the image.
  rois.v = {0.5, 1.0, 4.0, 5.5, -2.0, 3.0, 7.5, 9.0, 2.0, 2.0, 2.0, 2.0, 20.0, 20.0, 30.0, 25.0};
  in.set(R, rois);
  const std::vector<int64_t> batch{0, 1, 1, 0};
  Ref b({4});
  b.v = {0, 1, 1, 0};
  in.set(B, b);
  for (bool max_mode : {false, true})
    for (bool half_pixel : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "max " << max_mode << " half_pixel " << half_pixel);
      Attrs a{{"output_height", int64_t(3)}, {"output_width", int64_t(2)}, {"sampling_ratio", int64_t(2)},
              {"spatial_scale", 0.8}, {"mode", std::string(max_mode ? "max" : "avg")}, {"half_pixel", int64_t(half_pixel)}};
      expect_close(in.eval(reg("roi_align", {X, R, B}, a)),
                   naive_roi_align(x, rois, batch, 3, 2, 2, 0.8, max_mode, half_pixel), 1e-5);
    }
}

Ref naive_deform_conv(const Ref& x, const Ref& w, const Ref& off, const Ref* mask, const Ref* bias, int64_t stride,
                      int64_t pad, int64_t dil, int64_t groups, int64_t og) {
  const int64_t N = x.shape[0], C = x.shape[1], M = w.shape[0], kh = w.shape[2], kw = w.shape[3];
  const int64_t OH = off.shape[2], OW = off.shape[3];
  Ref out({N, M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx) {
          double acc = bias ? (*bias)({m}) : 0.0;
          for (int64_t rc = 0; rc < C / groups; ++rc) {
            const int64_t c = m / (M / groups) * (C / groups) + rc, g = c / (C / og);
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t tap = (g * kh + i) * kw + j;
                const double h = double(y * stride - pad + i * dil) + off({n, 2 * tap, y, xx});
                const double wpos = double(xx * stride - pad + j * dil) + off({n, 2 * tap + 1, y, xx});
                double v = bilinear_zero(x, n, c, h, wpos);
                if (mask) v *= (*mask)({n, tap, y, xx});
                acc += w({m, rc, i, j}) * v;
              }
          }
          out({n, m, y, xx}) = acc;
        }
  return out;
}

TEST(VisionOps, DeformConvMatchesNaiveLoops) {
  Inputs in;
  // 4 input channels in 2 groups, 2 offset groups, stride 2, pad 1, dilation 1: OH = (6 + 2 - 3) / 2 + 1 = 3.
  Tensor X = ph({1, 4, 6, 5}, "x"), W = ph({6, 2, 3, 3}, "w"), O = ph({1, 2 * 9 * 2, 3, 3}, "off"),
         M = ph({1, 2 * 9, 3, 3}, "mask"), Bias = ph({6}, "bias");
  Ref x = in.add(X), w = in.add(W), off = in.add(O, -2.5, 2.5), mask = in.add(M, 0.0, 1.0), bias = in.add(Bias);
  Attrs a{{"strides", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t(2)},
          {"offset_groups", int64_t(2)}};
  expect_close(in.eval(reg("deform_conv2d", {X, W, O, M, Bias}, a)), naive_deform_conv(x, w, off, &mask, &bias, 2, 1, 1, 2, 2), 1e-5);
  // Without mask and bias, one group, dilation 2.
  Tensor W1 = ph({3, 4, 2, 2}, "w1"), O1 = ph({1, 8, 4, 3}, "off1");
  Ref w1 = in.add(W1), off1 = in.add(O1, -1.5, 1.5);
  Attrs a1{{"dilations", std::vector<int64_t>{2, 2}}};
  expect_close(in.eval(reg("deform_conv2d", {X, W1, O1}, a1)), naive_deform_conv(x, w1, off1, nullptr, nullptr, 1, 0, 2, 1, 1), 1e-5);
}

TEST(VisionOps, Errors) {
  expect_error([] { reg("roi_align", {ph({1, 1, 4, 4}), ph({2, 5}, "r"), ph({2}, "b", DataType::Int(64))}); },
               {"roi_align", "rois must be [R, 4]"});
  expect_error([] {
    reg("roi_align", {ph({1, 1, 4, 4}), ph({2, 4}, "r"), ph({2}, "b", DataType::Int(64))}, {{"mode", std::string("sum")}});
  }, {"roi_align", "mode"});
  expect_error([] { reg("deform_conv2d", {ph({1, 2, 4, 4}), ph({1, 2, 2, 2}, "w"), ph({1, 4, 3, 3}, "o")}); },
               {"deform_conv2d", "offset"});
  expect_error([] { reg("deform_conv2d", {ph({1, 3, 4, 4}), ph({1, 2, 2, 2}, "w"), ph({1, 8, 3, 3}, "o")}); },
               {"deform_conv2d", "groups"});
}

}  // namespace
