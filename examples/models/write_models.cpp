// Writes ResNet-18 and MobileNetV2 (batch 1, 224x224, deterministic random weights) as loom
// model files: <dir>/resnet18.json + resnet18.weights, <dir>/mobilenet_v2.json + .weights.
//   write_models [DIR]      (default: the current folder)
#include <cstdio>
#include <filesystem>
#include <string>

#include "loom/graph_opt/serialize.h"
#include "loom/runtime/error.h"
#include "models.h"

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : ".";
  if (argc > 2 || dir == "-h" || dir == "--help") {
    std::printf("usage: write_models [DIR]\nwrites resnet18.json/.weights and mobilenet_v2.json/.weights into DIR\n");
    return argc > 2 ? 2 : 0;
  }
  try {
    std::filesystem::create_directories(dir);
    for (auto [name, g] : {std::pair{"resnet18", loom::models::resnet18()},
                           std::pair{"mobilenet_v2", loom::models::mobilenet_v2()}}) {
      std::string json = (std::filesystem::path(dir) / (std::string(name) + ".json")).string();
      std::string weights = loom::graph_opt::save_graph(g, json);
      std::printf("%s: %zu nodes (%zu ops) -> %s, %s\n", name, g.nodes.size(), g.num_ops(), json.c_str(),
                  weights.c_str());
    }
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "write_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
