// Identity: its output is its input's value (no operator; the graph output it may be is
// copied from its source by the executor, as for any output naming another value).
#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {

void add_identity_converters(std::map<std::string, Converter>& out) {
  out["Identity"] = [](Importer& im) { im.set_output(0, im.input(0), im.input_scalar(0)); };
}

}  // namespace loom::graph_opt::onnx_frontend
