// Two classic CNNs built with loom's graph builder, with torchvision's structure and node
// names (conv1, layer1.0.conv2, features.3.conv.1.0, …) and deterministic random weights.
// The full-size models are what `write_models` saves; small variants (fewer channels, small
// images) keep the reference evaluator fast in tests.
#pragma once
#include <cstdint>

#include "loom/graph_opt/graph.h"

namespace loom::models {

struct ModelOptions {
  int64_t batch = 1;
  int64_t image = 224;        // input height and width
  double width = 1.0;         // channel multiplier (ResNet: of 64..512; MobileNetV2: width_mult)
  int64_t num_classes = 1000;
  uint64_t seed = 1;          // every weight is drawn from a generator seeded by this and its name
};

/// ResNet-18 (torchvision.models.resnet18): conv1 7x7/2 + bn + relu, 3x3/2 max pool, four
/// stages of two BasicBlocks (64, 128, 256, 512 channels times `width`; a 1x1/2 conv + bn
/// downsample on the first block of stages 2-4), global average pool, flatten, fc. Input
/// "data" [batch, 3, image, image] NCHW; output [batch, num_classes].
graph_opt::Graph resnet18(const ModelOptions& opt = {});

/// MobileNetV2 (torchvision.models.mobilenet_v2): a 3x3/2 conv to 32 channels, 17 inverted
/// residual blocks (1x1 expand + bn + relu6, 3x3 depthwise + bn + relu6, 1x1 project + bn,
/// residual add where stride 1 keeps the channels), a 1x1 conv to 1280 + bn + relu6, global
/// average pool, flatten, fc. Channels are width_mult multiples rounded to 8 as torchvision
/// does; the last conv's 1280 scales too when width < 1.
graph_opt::Graph mobilenet_v2(const ModelOptions& opt = {});

}  // namespace loom::models
