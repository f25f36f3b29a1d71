// Reading ONNX models into the graph IR. The frontend (graph_opt/frontend/onnx, the only place
// that includes ONNX's protobuf headers) is built when CMake finds Debian's libonnx-dev and
// libprotobuf-dev; without them these functions throw loom::Error saying so.
//
// An ONNX model (opsets kOldestOnnxOpset to kNewestOnnxOpset, each operator as its version
// in the model's opset defines it) becomes a Graph: graph inputs become inputs
// (with static shapes), initializers and Constant nodes become constants, each node one or more registry
// operators with normalized attributes, and every node whose inputs are all constants (Shape,
// the arithmetic on shapes that follows it, weight transposes, …) is evaluated at import.
// Tensors of rank 0 are held as shape [1] (loom has no rank-0 tensors).
#pragma once
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/graph_opt/graph.h"
#include "loom/runtime/error.h"
#include "loom/runtime/ndarray.h"

namespace loom::graph_opt {

/// Valid ONNX that loom cannot import: an operator, an attribute value, a data type or a
/// dynamic shape it does not support. The message names the node (index and name), its op
/// type and what is missing. A malformed model throws plain loom::Error.
class OnnxUnsupported : public Error {
 public:
  using Error::Error;
  OnnxUnsupported(const std::string& msg, std::string constant_input)
      : Error(msg), constant_input(std::move(constant_input)) {}
  /// Set when what is missing is the value of this graph input, which loom needs at import
  /// (a shape, axes, pads, clip bounds): binding it (OnnxImportOptions::bind_inputs) helps.
  std::string constant_input;
};

/// The oldest default-domain (ai.onnx) opset the importer reads (older models: convert them
/// with onnx.version_converter). The converters follow each operator's version in between.
inline constexpr int kOldestOnnxOpset = 7;

/// The newest default-domain (ai.onnx) opset the importer reads; a model importing a newer
/// one is refused with OnnxUnsupported. ONNX 1.23's, whose node tests the converters pass
/// (tests/onnx).
inline constexpr int kNewestOnnxOpset = 28;

struct OnnxImportOptions {
  /// Static shapes for graph inputs whose ONNX type has symbolic or unknown dims. A key that
  /// names a graph input gives its whole shape; any other key must be a symbolic dim (an
  /// input's dim_param, e.g. "batch") and gives that dim's one extent wherever it appears
  /// ({"batch", {1}}). A key that is neither is an error listing the inputs and symbolic dims.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// Graph inputs bound to values: they become constants (as TVM's freeze_params does), so
  /// that inputs loom needs at import (shapes, axes, pads, clip bounds) may be given this way.
  /// An empty array stands for an empty tensor (e.g. axes [] of a reduction).
  std::map<std::string, runtime::NDArray> bind_inputs;
  /// Where warnings go (a declared graph-output shape that disagrees with the one the graph
  /// computes; each once per import); null: nowhere.
  std::ostream* warn = &std::cerr;
};

/// Reads the ONNX model at `path` (external tensor data resolved next to it).
Graph import_onnx(const std::string& path, const OnnxImportOptions& opt = {});
/// Reads a serialized ModelProto; `source` names it in messages, `base_dir` is where
/// external tensor data lies ("" for none).
Graph import_onnx_bytes(std::string_view bytes, const std::string& source = "<onnx>",
                        const OnnxImportOptions& opt = {}, const std::string& base_dir = "");
/// Reads a serialized TensorProto (a test_data_set_N/input_K.pb of ONNX's test layout).
/// Rank-0 tensors keep shape {} here.
runtime::NDArray read_onnx_tensor(const std::string& path);

/// A model file as a graph: ONNX (a name ending in .onnx, or a file starting as no JSON
/// does) through import_onnx, anything else as loom's model JSON (load_graph): what a
/// command taking MODEL.json calls to accept .onnx too.
Graph load_model(const std::string& path, const OnnxImportOptions& opt = {});

/// True when this build has the ONNX frontend.
bool onnx_frontend_available();
/// The ONNX operators the frontend imports, sorted: default-domain op types, and those of
/// the ai.onnx.ml domain as "ai.onnx.ml.<op type>".
std::vector<std::string> onnx_supported_ops();

}  // namespace loom::graph_opt
