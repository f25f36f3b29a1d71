// The ONNX importer's state while it walks one model, and what the per-operator converters
// (convert_*.cc) use: the current node's inputs, attributes and outputs, constant values,
// and the emission of registry operators (folded at once when every input is a constant).
// Private to graph_opt/frontend/onnx, the one place that includes ONNX's protobuf headers.
#pragma once
#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h (ONNX_ML)

#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/passes.h"

namespace loom::graph_opt::onnx_frontend {

/// The loom dtype of ONNX element type `elem_type`; throws OnnxUnsupported naming the ONNX
/// type (prefixed by `where`) for those loom lacks (string, bfloat16, float8, 4-bit, …).
DataType to_dtype(int elem_type, const std::string& where);
/// "FLOAT", "BFLOAT16", … ("type 42" for an unknown code).
std::string onnx_type_name(int elem_type);
/// The ONNX element type of a loom dtype.
int to_onnx_type(DataType t);
/// A TensorProto's data as an array of its shape (rank 0 keeps shape {}; a zero extent gives
/// an array without elements); `base_dir` resolves external data. Throws loom::Error naming `where` and the tensor when sizes disagree.
runtime::NDArray tensor_to_array(const onnx::TensorProto& t, const std::string& base_dir, const std::string& where);

/// A value of the ONNX graph: the loom value, and whether ONNX sees it as rank 0 (loom holds
/// it as shape [1]).
struct OnnxValue {
  Value value;
  bool scalar = false;
};

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string source, std::string base_dir, const OnnxImportOptions& opt);
  Graph run();

  // ---- the node being converted
  const onnx::NodeProto& node() const { return *node_; }
  int opset() const { return opset_; }
  /// The model's ai.onnx.ml opset (0 when it imports none).
  int ml_opset() const { return ml_opset_; }
  /// The model's ai.onnx.preview opset (0 when it imports none).
  int preview_opset() const { return preview_opset_; }
  /// Inputs as written (empty names included: absent optional inputs).
  int num_inputs() const { return node_->input_size(); }
  bool has_input(int i) const { return i < node_->input_size() && !node_->input(i).empty(); }
  /// Whether input `i` is a value without elements (a graph input, initializer or output of
  /// no elements): only its shape, type and const_input read it.
  bool input_empty(int i) const { return has_input(i) && empty_.count(node_->input(i)) != 0; }
  /// Input `i` (required: an error naming it when absent).
  Value input(int i) const;
  /// Whether ONNX sees input `i` as rank 0.
  bool input_scalar(int i) const;
  /// The ONNX shape of input `i` ({} for rank 0), also of one without elements.
  std::vector<int64_t> input_shape(int i) const;
  /// The element type of input `i`, also of one without elements.
  DataType input_dtype(int i) const;
  /// The constant array of input `i`; OnnxUnsupported naming `what` if it is computed at run time.
  runtime::NDArray const_input(int i, const std::string& what) const;
  /// A constant integer input as int64 values.
  std::vector<int64_t> const_ints(int i, const std::string& what) const;
  /// A constant input of one element.
  double const_scalar(int i, const std::string& what) const;

  /// Attributes; reading one marks it handled (an attribute no converter reads is an error).
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, std::optional<int64_t> def = std::nullopt);
  double attr_float(const std::string& name, std::optional<double> def = std::nullopt);
  std::string attr_str(const std::string& name, std::optional<std::string> def = std::nullopt);
  std::vector<int64_t> attr_ints(const std::string& name, std::optional<std::vector<int64_t>> def = std::nullopt);
  std::vector<double> attr_floats(const std::string& name);
  const onnx::TensorProto& attr_tensor(const std::string& name);
  /// A graph attribute (If's branches).
  const onnx::GraphProto& attr_graph(const std::string& name);
  /// Imports subgraph `g` (without inputs) inline: its initializers and nodes join the graph
  /// being built, its nodes reading outer-scope values by name, and its outputs become the
  /// current node's, in order. `scope` names it in messages ("then_branch").
  void import_subgraph_as_outputs(const onnx::GraphProto& g, const std::string& scope);
  /// Imports subgraph `g` of one output inline as a function: its inputs bound to `inputs`
  /// (checked against their declared types and ranks), its output returned.
  OnnxValue import_subgraph_function(const onnx::GraphProto& g, const std::string& scope,
                                     const std::vector<OnnxValue>& inputs);
  /// Marks an attribute handled without reading it (e.g. one that only matters for types loom lacks).
  void ignore_attr(const std::string& name);

  /// Whether output `k` exists and has a name (optional outputs may be left empty).
  bool output_used(int k) const { return k < node_->output_size() && !node_->output(k).empty(); }
  /// Sets output `k` (ONNX rank 0 when `scalar`).
  void set_output(int k, Value v, bool scalar = false);
  /// Sets output `k` to an array without elements (consumers read its shape and type, or it
  /// as a constant; loom's graphs hold no value without elements).
  void set_empty_output(int k, runtime::NDArray a);

  // ---- emitting
  const TensorType& type(Value v) const { return builder_.type(v); }
  /// The graph built so far (to look at the node that computed a value).
  const Graph& graph() const { return builder_.graph(); }
  /// A DequantizeLinear's output: its integer input and the scale and zero point as they
  /// broadcast against it (QuantizeLinear reads them to compute a convolution in integers).
  struct Dequantized {
    Value q, scale, zero_point;
  };
  void set_dequantized(Value v, Dequantized d) { dequantized_[v] = d; }
  const Dequantized* dequantized(Value v) const {
    auto it = dequantized_.find(v);
    return it == dequantized_.end() ? nullptr : &it->second;
  }
  /// The constant array behind `v`, or null.
  const runtime::NDArray* constant_of(Value v) const;
  /// A call of registry operator `op`, evaluated at once into a constant when every input is one.
  Value op(const std::string& op, const std::vector<Value>& inputs, const te::ops::Attrs& attrs = {});
  /// A constant; its node is named after the current node and `hint`.
  Value constant(runtime::NDArray a, const std::string& hint);
  /// A constant of dtype `t` and shape [1]*rank holding `v` (broadcasts against rank-`rank` values).
  Value scalar(double v, DataType t, size_t rank, const std::string& hint);
  /// `v` reshaped (nothing emitted when the shape is already `shape`).
  Value reshape(Value v, const std::vector<int64_t>& shape);
  /// The value a reshape emitted by reshape() read, if `v` is one.
  std::optional<Value> reshape_source(Value v) const;
  /// `v` broadcast to `shape` (numpy rules), or `v` when it has that shape.
  Value broadcast_to(Value v, const std::vector<int64_t>& shape);

  /// "onnx: model.onnx: node #3 'conv1' (Conv)".
  std::string where() const;
  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void invalid(const std::string& what) const;

 private:
  struct Pending;
  /// Imports subgraph `g` inline with its inputs bound to `inputs`, then calls `read_outputs`
  /// while its names are visible; the names it defines are dropped afterwards.
  void import_subgraph(const onnx::GraphProto& g, const std::string& scope, const std::vector<OnnxValue>& inputs,
                       const std::function<void()>& read_outputs);
  const onnx::AttributeProto* find_attr(const std::string& name) const;
  const onnx::AttributeProto& attr_of(const std::string& name, onnx::AttributeProto_AttributeType type);
  void resolve_input_shapes();
  void add_graph_inputs();
  std::vector<int> node_order(const onnx::GraphProto& g) const;
  void convert(const onnx::GraphProto& g, int index);
  void set_graph_outputs();

  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_;
  std::string source_, base_dir_;
  OnnxImportOptions opt_;
  int opset_ = 0;
  int ml_opset_ = 0;
  int preview_opset_ = 0;
  GraphBuilder builder_;
  std::map<std::string, OnnxValue> values_;       // by ONNX value name
  std::map<int, runtime::NDArray> constants_;     // by node index of the graph being built
  std::map<std::string, runtime::NDArray> empty_;  // values without elements (inputs, constants, outputs), by name
  std::map<std::string, int64_t> dim_values_;       // symbolic dims given an extent, by dim_param
  std::map<int, Value> reshaped_from_;               // reshape node index -> its input
  const onnx::NodeProto* node_ = nullptr;
  int node_index_ = -1;
  std::string scope_;  // ": node #3 'if1' (If): then_branch" inside a subgraph
  std::set<std::string> attrs_read_;
  int hint_counter_ = 0;
  FoldBudget fold_budget_;
  std::map<int, std::string> unfolded_;  // op nodes on constants left unfolded -> why
  std::map<Value, Dequantized> dequantized_;
};

/// The largest constant broadcast_to makes (the zeros it adds to broadcast).
inline constexpr int64_t kMaxBroadcastBytes = int64_t(256) << 20;

/// Converts the current node of the importer.
using Converter = std::function<void(Importer&)>;
/// The domain of ONNX's traditional machine-learning operators; their converters are keyed
/// "ai.onnx.ml.<op type>".
inline constexpr const char* kOnnxMlDomain = "ai.onnx.ml";
/// The domain of ONNX's preview operators (FlexAttention); their converters are keyed
/// "ai.onnx.preview.<op type>".
inline constexpr const char* kOnnxPreviewDomain = "ai.onnx.preview";
/// The newest ai.onnx.preview opset loom imports.
inline constexpr int kNewestOnnxPreviewOpset = 1;
/// Converters by ONNX op type.
const std::map<std::string, Converter>& converters();
/// The first default-domain opset that has operator `op_type` (kOldestOnnxOpset for the
/// older ones).
int first_opset(const std::string& op_type);

// The families of converters (convert_*.cc) register themselves into `out`.
void add_nn_converters(std::map<std::string, Converter>& out);
void add_elementwise_converters(std::map<std::string, Converter>& out);
void add_transform_converters(std::map<std::string, Converter>& out);
void add_shape_converters(std::map<std::string, Converter>& out);
void add_reduce_converters(std::map<std::string, Converter>& out);
void add_logic_converters(std::map<std::string, Converter>& out);
void add_window_converters(std::map<std::string, Converter>& out);
void add_normalization_converters(std::map<std::string, Converter>& out);
void add_resize_converters(std::map<std::string, Converter>& out);
void add_einsum_converters(std::map<std::string, Converter>& out);
void add_control_flow_converters(std::map<std::string, Converter>& out);
void add_grid_converters(std::map<std::string, Converter>& out);
void add_attention_converters(std::map<std::string, Converter>& out);
void add_quant_converters(std::map<std::string, Converter>& out);
void add_signal_converters(std::map<std::string, Converter>& out);
void add_misc_converters(std::map<std::string, Converter>& out);
void add_sequence_converters(std::map<std::string, Converter>& out);
void add_ml_converters(std::map<std::string, Converter>& out);
void add_loss_converters(std::map<std::string, Converter>& out);
void add_data_dependent_converters(std::map<std::string, Converter>& out);

/// The names node `n`'s subgraphs (recursively) read from outside themselves.
std::vector<std::string> outer_references(const onnx::NodeProto& n);

/// ONNX's MatMul of `a` and `b` (ONNX shapes `sa` and `sb`: numpy's matmul, 1-D operands
/// promoted and their dim dropped, batch dims broadcast) as matmul or batch_matmul; the result
/// has ONNX's shape ([1] where ONNX's is rank 0). For MatMul and the integer matmuls.
Value matmul_nd(Importer& im, Value a, Value b, std::vector<int64_t> sa, std::vector<int64_t> sb);
void add_recurrent_converters(std::map<std::string, Converter>& out);
void add_softmax_converters(std::map<std::string, Converter>& out);
void add_tensor_converters(std::map<std::string, Converter>& out);

/// The bytes of the model or tensor file at `path`: a regular file under protobuf's 2 GiB
/// limit, else loom::Error saying what it is.
std::string read_model_file(const std::string& path);
/// "[1,3,224,224]".
std::string shape_str(const std::vector<int64_t>& s);
/// Product of the dims.
int64_t product(const std::vector<int64_t>& s);
/// `axis` (negative counts from the end) in [0, rank), or an invalid() error naming `what`.
int64_t normalize_axis(const Importer& im, int64_t axis, size_t rank, const std::string& what);

}  // namespace loom::graph_opt::onnx_frontend
