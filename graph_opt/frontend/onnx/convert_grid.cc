// Converters of ONNX's GridSample (opsets 16, 20, 22) to grid_sample, and AffineGrid (20) to
// a batch_matmul of the constant grid of normalized pixel coordinates with theta.
#include <fmt/format.h>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

void grid_sample(Importer& im) {
  std::string mode = im.attr_str("mode", im.opset() < 20 ? "bilinear" : "linear");
  // Opset 16 wrote bilinear and bicubic; 20 renamed them linear and cubic.
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    im.invalid(fmt::format("mode '{}' is not one of nearest, linear, cubic", mode));
  const std::string padding = im.attr_str("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    im.invalid(fmt::format("padding_mode '{}' is not one of zeros, border, reflection", padding));
  const int64_t align = im.attr_int("align_corners", 0);
  std::vector<int64_t> x = im.input_shape(0), g = im.input_shape(1);
  if (x.size() < 3) im.invalid(fmt::format("X is {}; it must be [N, C, D1, ...]", shape_str(x)));
  const size_t k = x.size() - 2;
  if (g.size() != k + 2 || g[0] != x[0] || g.back() != int64_t(k))
    im.invalid(fmt::format("grid {} does not fit X {}: it must be [{}, ..., {}] of rank {}", shape_str(g), shape_str(x),
                           x[0], k, k + 2));
  if (!im.input_dtype(0).is_float() || !im.input_dtype(1).is_float())
    im.unsupported(fmt::format("X of {} and grid of {} (loom samples floating point)", im.input_dtype(0).str(),
                               im.input_dtype(1).str()));
  Value grid = im.input(1);
  if (im.input_dtype(1) != im.input_dtype(0)) grid = im.op("cast", {grid}, {{"dtype", im.input_dtype(0).str()}});
  im.set_output(0, im.op("grid_sample", {im.input(0), grid},
                         {{"mode", mode}, {"padding_mode", padding}, {"align_corners", int64_t(align != 0)}}));
}

void affine_grid(Importer& im) {
  const bool align = im.attr_int("align_corners", 0) != 0;
  std::vector<int64_t> theta = im.input_shape(0);
  std::vector<int64_t> size = im.const_ints(1, "size");
  if (size.size() != 4 && size.size() != 5)
    im.invalid(fmt::format("size {} must be [N, C, H, W] or [N, C, D, H, W]", shape_str(size)));
  const int64_t k = int64_t(size.size()) - 2;
  if (theta != std::vector<int64_t>{size[0], k, k + 1})
    im.invalid(fmt::format("theta {} does not fit size {}: it must be [{}, {}, {}]", shape_str(theta), shape_str(size),
                           size[0], k, k + 1));
  for (int64_t d : size)
    if (d < 1) im.unsupported(fmt::format("size {} makes an empty grid (loom has no empty tensors)", shape_str(size)));
  const DataType t = im.input_dtype(0);
  if (!t.is_float()) im.invalid("theta must be floating point, got " + t.str());
  // The homogeneous coordinates (x, y[, z], 1) of every output point, the last dim fastest.
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  const int64_t points = product(spatial);
  runtime::NDArray base = runtime::NDArray::empty({1, points, k + 1}, t);
  auto coordinate = [&](int64_t i, int64_t extent) {
    if (align) return extent == 1 ? -1.0 : -1.0 + 2.0 * double(i) / double(extent - 1);
    return -1.0 + (2.0 * double(i) + 1.0) / double(extent);
  };
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    std::vector<int64_t> at(spatial.size());
    for (size_t d = spatial.size(); d-- > 0;) {
      at[d] = rest % spatial[d];
      rest /= spatial[d];
    }
    for (int64_t j = 0; j < k; ++j) {
      const size_t d = size_t(k - 1 - j);  // x is the last dim
      base.set(p * (k + 1) + j, coordinate(at[d], spatial[d]));
    }
    base.set(p * (k + 1) + k, 1.0);
  }
  Value grid = im.op("batch_matmul", {im.constant(base, "base_grid"), im.input(0)}, {{"transpose_b", int64_t(1)}});
  std::vector<int64_t> out = {size[0]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(k);
  im.set_output(0, im.reshape(grid, out));
}

}  // namespace

void add_grid_converters(std::map<std::string, Converter>& m) {
  m["GridSample"] = grid_sample;
  m["AffineGrid"] = affine_grid;
}

}  // namespace loom::graph_opt::onnx_frontend
