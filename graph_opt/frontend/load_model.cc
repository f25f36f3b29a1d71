// load_model: a model file as a graph, ONNX or loom's JSON by its name and first byte.
#include <fstream>

#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/serialize.h"

namespace loom::graph_opt {

Graph load_model(const std::string& path, const OnnxImportOptions& opt) {
  bool onnx = path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
  if (!onnx) {
    // A serialized ModelProto starts with a field tag (ir_version: 0x08); JSON with '{' or space.
    std::ifstream in(path, std::ios::binary);
    char c = 0;
    onnx = in.get(c) && c == 0x08;
  }
  return onnx ? import_onnx(path, opt) : load_graph(path);
}

}  // namespace loom::graph_opt
