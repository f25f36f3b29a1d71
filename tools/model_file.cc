// Reading a network: a loom model file or an ONNX model.
#include "model_file.h"

#include <algorithm>
#include <map>

#include "loom/codegen/check_target.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/passes.h"

namespace loom::cli {

namespace {

/// "data=1,3,224,224" -> {data: [1,3,224,224]}; "batch=1,height=48" -> {batch: [1], height: [48]}:
/// an item NAME=D starts an entry, a bare D extends the one before.
void parse_input_shape(const Args& a, const std::string& text, std::map<std::string, std::vector<int64_t>>& out) {
  auto bad = [&] {
    a.usage_error("--input-shape wants NAME=D0,D1,… (a graph input's shape, e.g. data=1,3,224,224) or DIM=N[,DIM=N…] "
                  "(symbolic dims, e.g. batch=1,height=48), got '{}'",
                  text);
  };
  if (text.empty() || text.back() == ',') bad();
  std::string name;
  std::vector<int64_t> dims;
  auto flush = [&] {
    if (name.empty()) return;
    if (!out.emplace(name, dims).second) a.usage_error("--input-shape: '{}' is given twice", name);
  };
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(begin, end - begin);
    size_t eq = item.find('=');
    if (eq != std::string::npos) {
      if (eq == 0 || eq + 1 == item.size()) bad();
      flush();
      name = item.substr(0, eq);
      dims = {parse_int_list("--input-shape", item.substr(eq + 1))[0]};
    } else {
      if (name.empty()) bad();
      dims.push_back(parse_int_list("--input-shape", item)[0]);
    }
    begin = end + 1;
  }
  flush();
}

graph_opt::OnnxImportOptions onnx_options(const Args& a) {
  graph_opt::OnnxImportOptions opt;
  for (const std::string& s : a.all("--input-shape")) parse_input_shape(a, s, opt.input_shapes);
  return opt;
}

}  // namespace

Option input_shape_option() {
  return {"--input-shape", "NAME=DIMS",
          "static shapes for an ONNX model with dynamic dims: a graph input's whole shape (data=1,3,224,224) or "
          "symbolic dims by name, wherever they appear (batch=1,height=48); NAME is looked up among the graph "
          "inputs first",
          true};
}

graph_opt::Graph import_onnx_model(const Args& a, const std::string& path) {
  return graph_opt::import_onnx(path, onnx_options(a));
}

graph_opt::Graph load_model(const Args& a, const std::string& path) {
  require_file("", path);
  return graph_opt::load_model(path, onnx_options(a));
}

Target network_target(const Args& a) {
  Target target(a.str("--target", "llvm"));
  try {
    codegen::check_target(target);
  } catch (const Error& e) {
    a.usage_error("--target: {}", e.what());
  }
  if (!target.is_cpu()) a.usage_error("--target: networks compile for the CPU (an llvm target), not '{}'", target.str());
  return target;
}

std::vector<Option> pass_options() {
  return {{"--opt-level", "N", "graph optimization level: 0 (no fusion) to 3 (default)"},
          {"--disable", "PASS", "skip a graph pass by name", true},
          {"--winograd", "M|auto",
           "3x3 stride-1 convolutions with 64 or more channels run as Winograd F(MxM,3x3), M in 2..6; auto "
           "(compile only): those whose best Winograd record in --log beats the direct one's (default: direct)"}};
}

graph_opt::CompileOptions compile_options(const Args& a) {
  graph_opt::CompileOptions opt;
  opt.passes.opt_level = int(a.integer("--opt-level", 3, 0, 3));
  for (const std::string& p : a.all("--disable")) {
    std::vector<std::string> names = graph_opt::pass_names();
    if (std::find(names.begin(), names.end(), p) == names.end())
      a.usage_error("--disable: no pass named '{}' (passes: {})", p, fmt::join(names, ", "));
    opt.passes.disabled.insert(p);
  }
  const std::string wino = a.str("--winograd");
  if (!wino.empty() && wino != "auto") opt.passes.layout.winograd_tile = a.integer("--winograd", 0, 2, 6);
  return opt;
}

}  // namespace loom::cli
