// The ONNX entry points of a build without the frontend (CMake found no libonnx-dev and
// libprotobuf-dev, or LOOM_WITH_ONNX=OFF): each says so.
#include "loom/graph_opt/onnx.h"

namespace loom::graph_opt {
namespace {

[[noreturn]] void no_frontend(const std::string& what) {
  fail("onnx: cannot read {}: this loom was built without the ONNX frontend (install Debian's libonnx-dev and "
       "libprotobuf-dev, then reconfigure)",
       what);
}

}  // namespace

Graph import_onnx(const std::string& path, const OnnxImportOptions&) { no_frontend(path); }
Graph import_onnx_bytes(std::string_view, const std::string& source, const OnnxImportOptions&, const std::string&) {
  no_frontend(source);
}
runtime::NDArray read_onnx_tensor(const std::string& path) { no_frontend(path); }
bool onnx_frontend_available() { return false; }
std::vector<std::string> onnx_supported_ops() { return {}; }

}  // namespace loom::graph_opt
