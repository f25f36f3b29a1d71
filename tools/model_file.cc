// Reading a network: a loom model file or an ONNX model.
#include "model_file.h"

#include "loom/graph_opt/onnx.h"

namespace loom::cli {

namespace {

/// "data=1,3,224,224" -> {"data", {1,3,224,224}}.
std::pair<std::string, std::vector<int64_t>> parse_input_shape(const Args& a, const std::string& text) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    a.usage_error("--input-shape wants NAME=D0,D1,… (e.g. data=1,3,224,224), got '{}'", text);
  return {text.substr(0, eq), parse_int_list("--input-shape", text.substr(eq + 1))};
}

graph_opt::OnnxImportOptions onnx_options(const Args& a) {
  graph_opt::OnnxImportOptions opt;
  for (const std::string& s : a.all("--input-shape")) opt.input_shapes.insert(parse_input_shape(a, s));
  return opt;
}

}  // namespace

Option input_shape_option() {
  return {"--input-shape", "NAME=DIMS", "static shape of an ONNX model's input with dynamic dims, e.g. data=1,3,224,224",
          true};
}

graph_opt::Graph import_onnx_model(const Args& a, const std::string& path) {
  return graph_opt::import_onnx(path, onnx_options(a));
}

graph_opt::Graph load_model(const Args& a, const std::string& path) {
  require_file("", path);
  return graph_opt::load_model(path, onnx_options(a));
}

}  // namespace loom::cli
