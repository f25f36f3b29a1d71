// Converters of Softmax, LogSoftmax and Hardmax. From opset 13 they work along one axis
// (default -1); before, the input is coerced to 2-D at `axis` (default 1): [d0*…*d(axis-1),
// d(axis)*…*d(n-1)], the operator runs along the second dim, and the result takes the input's shape.
#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

Converter along_axis(const char* loom_op) {
  return [loom_op](Importer& im) {
    std::vector<int64_t> x = im.input_shape(0);
    if (x.empty()) im.invalid("input is a scalar");
    Value data = im.input(0);
    if (!im.type(data).dtype.is_float()) im.unsupported("input type " + im.type(data).dtype.str());
    if (im.opset() >= 13) {
      const int64_t axis = normalize_axis(im, im.attr_int("axis", -1), x.size(), "axis");
      return im.set_output(0, im.op(loom_op, {data}, {{"axis", axis}}));
    }
    const int64_t r = int64_t(x.size());
    int64_t axis = im.attr_int("axis", 1);
    if (axis < -r || axis > r) im.invalid(fmt::format("axis {} is out of range for rank {}", axis, r));
    if (axis < 0) axis += r;
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < r; ++d) (d < axis ? rows : cols) *= x[size_t(d)];
    Value y = im.op(loom_op, {im.reshape(data, {rows, cols})}, {{"axis", int64_t(1)}});
    im.set_output(0, im.reshape(y, x));
  };
}

}  // namespace

void add_softmax_converters(std::map<std::string, Converter>& m) {
  m["Softmax"] = along_axis("softmax");
  m["LogSoftmax"] = along_axis("log_softmax");
  m["Hardmax"] = along_axis("hardmax");
}

}  // namespace loom::graph_opt::onnx_frontend
