// Registry entries of roi_align and deform_conv2d.
#include "loom/te/ops/vision.h"
#include "register_ops.h"

namespace loom::te::ops::detail {

std::vector<OpDef> vision_ops() {
  OpDef d;
  d.name = "roi_align";
  d.doc = "each region of interest of data pooled into output_height x output_width bins of bilinear samples "
          "(ONNX RoiAlign)";
  d.inputs = {"data", "rois", "batch_indices"};
  d.min_inputs = 3;
  d.pattern = OpPattern::kOpaque;
  d.attrs = {attr("output_height", AttrKind::kInt, int64_t(1), "bins per ROI vertically"),
             attr("output_width", AttrKind::kInt, int64_t(1), "bins per ROI horizontally"),
             attr("sampling_ratio", AttrKind::kInt, int64_t(1), "sample points per bin along each axis, positive"),
             attr("spatial_scale", AttrKind::kFloat, 1.0, "ROI coordinates times this are data coordinates"),
             attr("mode", AttrKind::kString, std::string("avg"), "\"avg\" (mean of the samples) or \"max\""),
             attr("half_pixel", AttrKind::kInt, int64_t(1), "1: ROI corners shifted by -0.5 (ONNX's half_pixel)")};
  d.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    RoiAlignParams p;
    p.output_height = attr_int(a, "output_height");
    p.output_width = attr_int(a, "output_width");
    p.sampling_ratio = attr_int(a, "sampling_ratio");
    p.spatial_scale = attr_float(a, "spatial_scale");
    const std::string mode = attr_str(a, "mode");
    LOOM_CHECK(mode == "avg" || mode == "max", "roi_align: mode must be \"avg\" or \"max\", got \"{}\"", mode);
    p.max_mode = mode == "max";
    p.half_pixel = attr_int(a, "half_pixel") != 0;
    return {roi_align(in[0], in[1], in[2], p, "roi_align")};
  };

  OpDef c;
  c.name = "deform_conv2d";
  c.doc = "deformable 2-D convolution: each kernel tap read bilinearly at its offset position (ONNX DeformConv)";
  c.inputs = {"data", "weight", "offset", "mask", "bias"};
  c.min_inputs = 3;
  c.pattern = OpPattern::kOpaque;
  c.attrs = {attr("strides", AttrKind::kInts, std::vector<int64_t>{1, 1}, "{h, w}, positive"),
             attr("dilations", AttrKind::kInts, std::vector<int64_t>{1, 1}, "{h, w}, positive"),
             attr("padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0, 0}, "{top, left, bottom, right}"),
             attr("groups", AttrKind::kInt, int64_t(1), "channel groups of the convolution"),
             attr("offset_groups", AttrKind::kInt, int64_t(1), "groups of input channels sharing offsets")};
  c.compute = [](const std::vector<Tensor>& in, const Attrs& a) -> std::vector<Tensor> {
    DeformConvParams p;
    std::vector<int64_t> s = attr_ints(a, "strides"), d = attr_ints(a, "dilations"), pad = attr_ints(a, "padding");
    LOOM_CHECK(s.size() == 2 && d.size() == 2 && pad.size() == 4,
               "deform_conv2d: strides and dilations need 2 values, padding 4");
    p.strides = {s[0], s[1]};
    p.dilations = {d[0], d[1]};
    p.pads = {pad[0], pad[1], pad[2], pad[3]};
    p.groups = attr_int(a, "groups");
    p.offset_groups = attr_int(a, "offset_groups");
    Tensor mask = in.size() > 3 ? in[3] : Tensor();
    Tensor bias = in.size() > 4 ? in[4] : Tensor();
    return {deform_conv2d(in[0], in[1], in[2], mask, bias, p, "deform_conv2d")};
  };
  return {std::move(d), std::move(c)};
}

}  // namespace loom::te::ops::detail
