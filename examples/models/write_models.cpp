// Writes ResNet-18 and MobileNetV2 (batch 1, deterministic random weights; 224x224 and 1000
// classes unless told otherwise) as loom model files: <dir>/resnet18.json + resnet18.weights,
// <dir>/mobilenet_v2.json + .weights.
//   write_models [DIR] [--image N] [--classes N] [--width W] [--seed S]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "loom/graph_opt/serialize.h"
#include "loom/runtime/error.h"
#include "models.h"

namespace {

const char kUsage[] =
    "usage: write_models [DIR] [--image N] [--classes N] [--width W] [--seed S]\n"
    "writes resnet18.json/.weights and mobilenet_v2.json/.weights into DIR (default: the current folder)\n"
    "  --image N    input height and width (default 224)\n"
    "  --classes N  classifier outputs (default 1000)\n"
    "  --width W    channel multiplier (default 1.0: torchvision's widths)\n"
    "  --seed S     weight seed (default 1)\n";

/// The number after a flag; exits 2 with the usage when it is missing, not positive, or (with
/// `integer`) not a whole number.
double number_arg(int argc, char** argv, int* i, bool integer) {
  const std::string flag = argv[*i];
  char* end = nullptr;
  double v = *i + 1 < argc ? std::strtod(argv[*i + 1], &end) : 0;
  if (*i + 1 >= argc || end == argv[*i + 1] || *end != '\0' || !(v > 0) || (integer && v != double(int64_t(v)))) {
    std::fprintf(stderr, "write_models: %s needs a positive %s\n%s", flag.c_str(), integer ? "integer" : "number",
                 kUsage);
    std::exit(2);
  }
  ++*i;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = ".";
  bool have_dir = false;
  loom::models::ModelOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a == "--image") {
      opt.image = int64_t(number_arg(argc, argv, &i, true));
    } else if (a == "--classes") {
      opt.num_classes = int64_t(number_arg(argc, argv, &i, true));
    } else if (a == "--width") {
      opt.width = number_arg(argc, argv, &i, false);
    } else if (a == "--seed") {
      opt.seed = uint64_t(number_arg(argc, argv, &i, true));
    } else if (a.empty() || a[0] == '-' || have_dir) {
      std::fprintf(stderr, "write_models: unexpected argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      dir = a;
      have_dir = true;
    }
  }
  try {
    std::filesystem::create_directories(dir);
    for (auto [name, g] : {std::pair{"resnet18", loom::models::resnet18(opt)},
                           std::pair{"mobilenet_v2", loom::models::mobilenet_v2(opt)}}) {
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
