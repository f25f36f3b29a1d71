// ResNet-18 and MobileNetV2 with the graph builder.
//
// Weights are uniform random from a generator seeded by the model seed and the weight's name,
// so a weight does not change when another is added. Scales keep activations near unit
// size through the depth (the batch-norm statistics are random, so they do not normalize):
// convolutions are He-uniform (variance 2 / fan-in, right before a relu), batch-norm
// variances and gammas near 1, and the last batch norm of every residual branch has a small
// gamma, as zero-init-residual training leaves it, so the residual sums do not double the
// activations block after block.
#include "models.h"

#include <algorithm>
#include <cmath>

#include "loom/graph_opt/builder.h"

namespace loom::models {

using graph_opt::GraphBuilder;
using graph_opt::TensorType;
using graph_opt::Value;
using runtime::NDArray;

namespace {

class Net {
 public:
  Net(const std::string& name, const ModelOptions& opt) : b_(name), opt_(opt) {}
  GraphBuilder& b() { return b_; }

  Value weight(const std::string& name, std::vector<int64_t> shape, double lo, double hi) {
    uint64_t h = 1469598103934665603ull ^ opt_.seed;
    for (char c : name) h = (h ^ uint8_t(c)) * 1099511628211ull;
    NDArray a = NDArray::empty(std::move(shape), DataType::Float(32));
    a.fill_random(h, lo, hi);
    return b_.constant(name, a);
  }

  /// conv (no bias) + batch norm; `gamma` the range of the batch norm's scale.
  Value conv_bn(Value x, const std::string& conv, const std::string& bn, int64_t out, int64_t k, int64_t stride,
                int64_t groups = 1, std::pair<double, double> gamma = {0.8, 1.2}) {
    int64_t in = b_.type(x).shape[1];
    int64_t fan_in = in / groups * k * k;
    double a = std::sqrt(3.0) * std::sqrt(2.0 / double(fan_in));
    Value w = weight(conv + ".weight", {out, in / groups, k, k}, -a, a);
    graph_opt::Conv2dAttrs at;
    at.strides = {stride, stride};
    at.padding = {k / 2, k / 2};
    at.groups = groups;
    Value y = b_.conv2d(x, w, at, conv);
    Value g = weight(bn + ".weight", {out}, gamma.first, gamma.second);
    Value beta = weight(bn + ".bias", {out}, -0.1, 0.1);
    Value mean = weight(bn + ".running_mean", {out}, -0.1, 0.1);
    Value var = weight(bn + ".running_var", {out}, 0.8, 1.2);
    return b_.batch_norm(y, g, beta, mean, var, 1e-5, bn);
  }

  Value classifier(Value x, const std::string& fc) {
    Value p = b_.global_avg_pool2d(x, "avgpool");
    Value f = b_.flatten(p, "flatten");
    int64_t in = b_.type(f).shape[1];
    double a = std::sqrt(3.0 / double(in));
    Value w = weight(fc + ".weight", {opt_.num_classes, in}, -a, a);
    Value bias = weight(fc + ".bias", {opt_.num_classes}, -0.1, 0.1);
    return b_.dense(f, w, bias, fc);
  }

  Value data() {
    return b_.input("data", TensorType{{opt_.batch, 3, opt_.image, opt_.image}, DataType::Float(32), "NCHW"});
  }

 private:
  GraphBuilder b_;
  ModelOptions opt_;
};

int64_t scaled(int64_t c, double width) { return std::max<int64_t>(1, int64_t(std::lround(double(c) * width))); }

/// torchvision's _make_divisible: the nearest multiple of `divisor` (at least divisor), not
/// below 90% of v.
int64_t make_divisible(double v, int64_t divisor = 8) {
  int64_t r = std::max(divisor, (int64_t(v + double(divisor) / 2) / divisor) * divisor);
  if (double(r) < 0.9 * v) r += divisor;
  return r;
}

}  // namespace

graph_opt::Graph resnet18(const ModelOptions& opt) {
  Net n("resnet18", opt);
  GraphBuilder& b = n.b();
  Value x = n.data();
  x = n.conv_bn(x, "conv1", "bn1", scaled(64, opt.width), 7, 2);
  x = b.relu(x, "relu");
  graph_opt::Pool2dAttrs pool;
  pool.pool_size = {3, 3};
  pool.strides = {2, 2};
  pool.padding = {1, 1};
  x = b.max_pool2d(x, pool, "maxpool");
  const int64_t widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    int64_t out = scaled(widths[stage], opt.width);
    for (int blk = 0; blk < 2; ++blk) {
      std::string p = fmt::format("layer{}.{}.", stage + 1, blk);
      int64_t stride = stage > 0 && blk == 0 ? 2 : 1;
      Value y = n.conv_bn(x, p + "conv1", p + "bn1", out, 3, stride);
      y = b.relu(y, p + "relu");
      y = n.conv_bn(y, p + "conv2", p + "bn2", out, 3, 1, 1, {0.2, 0.4});
      Value identity = x;
      if (stride != 1 || b.type(x).shape[1] != out)
        identity = n.conv_bn(x, p + "downsample.0", p + "downsample.1", out, 1, stride, 1, {0.2, 0.4});
      y = b.add(y, identity, p + "add");
      x = b.relu(y, p + "relu2");
    }
  }
  b.output(n.classifier(x, "fc"));
  return b.build();
}

graph_opt::Graph mobilenet_v2(const ModelOptions& opt) {
  Net n("mobilenet_v2", opt);
  GraphBuilder& b = n.b();
  auto relu6 = [&](Value v, const std::string& name) { return b.clip(v, 0.0, 6.0, name); };
  Value x = n.data();
  int64_t in = make_divisible(32 * opt.width);
  x = relu6(n.conv_bn(x, "features.0.0", "features.0.1", in, 3, 2), "features.0.2");
  // t (expansion), c (channels), n (blocks), s (stride of the first block)
  const int64_t settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int feature = 1;
  for (const auto& s : settings) {
    int64_t out = make_divisible(double(s[1]) * opt.width);
    for (int64_t i = 0; i < s[2]; ++i, ++feature) {
      int64_t stride = i == 0 ? s[3] : 1;
      int64_t hidden = in * s[0];
      std::string p = fmt::format("features.{}.conv.", feature);
      Value y = x;
      int layer = 0;
      if (s[0] != 1) {
        std::string q = fmt::format("{}{}.", p, layer++);
        y = relu6(n.conv_bn(y, q + "0", q + "1", hidden, 1, 1), q + "2");
      }
      std::string q = fmt::format("{}{}.", p, layer++);
      y = relu6(n.conv_bn(y, q + "0", q + "1", hidden, 3, stride, hidden), q + "2");
      y = n.conv_bn(y, fmt::format("{}{}", p, layer), fmt::format("{}{}", p, layer + 1), out, 1, 1, 1,
                    stride == 1 && in == out ? std::pair{0.2, 0.4} : std::pair{0.8, 1.2});
      if (stride == 1 && in == out) y = b.add(x, y, fmt::format("features.{}.add", feature));
      x = y;
      in = out;
    }
  }
  int64_t last = make_divisible(1280 * opt.width);
  std::string p = fmt::format("features.{}.", feature);
  x = relu6(n.conv_bn(x, p + "0", p + "1", last, 1, 1), p + "2");
  b.output(n.classifier(x, "classifier.1"));
  return b.build();
}

}  // namespace loom::models
