// The operator registry: one entry per operator that the graph level, the ONNX frontend and
// the tuner's templates share. An entry says what the operator takes (inputs, an attribute
// schema), what it produces (type inference), how it computes (a te compute built from the
// te::ops functions), how it fuses with its neighbours (its pattern) and, per target kind,
// which tuner template schedules it when it anchors a fused kernel.
//
// The registry sits in te/ so that every layer above can read it; the strategy names a
// template by string (templates live in tuner/, to the right of te/).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loom/runtime/data_type.h"
#include "loom/te/tensor.h"

namespace loom::te::ops {

/// How an operator fuses, in TVM's order: an operator fuses into a consumer of a larger or
/// equal pattern up to kInjective; kOutEWiseFusable (conv2d, dense, matmul) takes an
/// elementwise/broadcast epilogue; kOpaque fuses with nothing.
enum class OpPattern : int {
  kElemwise = 0,        // out[i] = f(in[i]), same shape
  kBroadcast = 1,       // out[i] = f(in[broadcast(i)])
  kInjective = 2,       // each output element reads one input element (transpose, pad, reshape)
  kCommReduce = 3,      // reductions (sum, mean, max, softmax's parts)
  kOutEWiseFusable = 4, // anchors: complex reductions whose output tile can take an epilogue
  kOpaque = 8,          // fuses with nothing
};
/// "elemwise", "broadcast", "injective", "reduce", "out_elemwise_fusable", "opaque".
const char* to_string(OpPattern p);

/// An attribute value as models carry them.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;
/// Attributes by name (sorted: two equal maps describe the same operator instance).
using Attrs = std::map<std::string, AttrValue>;
enum class AttrKind : uint8_t { kInt, kFloat, kString, kInts, kFloats };
/// "int", "float", "string", "ints", "floats".
const char* to_string(AttrKind k);

/// One attribute an operator accepts. Without a default it is required.
struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;
  std::string doc;
};

/// The static type of a tensor value in a graph: constant shape, element type and layout
/// ("" when the operator does not care, e.g. "NCHW", "NCHW16c", "OIHW16i16o").
struct TensorType {
  std::vector<int64_t> shape;
  DataType dtype = DataType::Float(32);
  std::string layout;
  bool operator==(const TensorType& o) const = default;
};
/// "float32[1,64,56,56]" (with "@NCHW16c" when a layout is set).
std::string to_string(const TensorType& t);

/// The tuner template that schedules an operator instance as a fused kernel's anchor and
/// the workload it is tuned as (the fields of records::Workload, which lives to the right).
struct TemplateCall {
  std::string name;                           // template, e.g. "conv2d_nchwc"
  std::vector<int64_t> shape;                 // the template's sizes, e.g. N,C,H,W,K,R,S
  std::string dtype = "float32";
  std::map<std::string, std::string> attrs;   // e.g. {"pad": "1", "stride": "2"}
  /// The operator's outputs from the template's output `core` and the operator's inputs, for
  /// an operator that computes more than its template does (a bias added after a conv). The
  /// template's placeholders stand for the operator's first inputs, in order. Absent: the
  /// template's output is the operator's output and its placeholders are all the inputs.
  std::function<std::vector<Tensor>(const Tensor& core, const std::vector<Tensor>& inputs)> finish;
};

/// A registered operator.
struct OpDef {
  std::string name;  // "conv2d"
  std::string doc;   // one line for `loom ops --graph`
  /// Input names in order ("data", "weight", "bias"); a single name ending in "..." takes any
  /// number of inputs (concat).
  std::vector<std::string> inputs;
  /// Inputs that may be left out at the end (e.g. conv2d's bias): the minimum count.
  size_t min_inputs = 0;
  std::vector<AttrSpec> attrs;
  OpPattern pattern = OpPattern::kOpaque;
  /// Output types from input types and normalized attributes; throws loom::Error naming the
  /// operator and what does not fit. Unset: derived by building `compute` on placeholders.
  std::function<std::vector<TensorType>(const std::vector<TensorType>& inputs, const Attrs& attrs)> infer_type;
  /// The operator's outputs as te tensors over `inputs` (normalized attributes).
  std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const Attrs& attrs)> compute;
  /// Per target kind ("llvm", "cuda"): the template that anchors a fused kernel of this
  /// operator, or nullopt when this instance has none (then the kernel gets a schedule
  /// generated from its pattern).
  std::map<std::string, std::function<std::optional<TemplateCall>(const std::vector<TensorType>& inputs,
                                                                  const Attrs& attrs)>>
      strategy;
};

/// Adds an operator (replacing one of the same name). The built-in operators are registered
/// on the registry's first use.
void register_op(OpDef def);
/// The operator `name`; throws loom::Error listing the registered ones if there is none.
const OpDef& get_op(const std::string& name);
/// Null if there is no such operator.
const OpDef* find_op(const std::string& name);
/// Registered operator names, sorted.
std::vector<std::string> op_names();

/// `attrs` checked against `def`'s schema and completed with defaults: an unknown name, a
/// missing required attribute or a value of the wrong kind is a loom::Error naming the
/// operator, the attribute and what was expected (`where` prefixes the message, e.g. a node).
Attrs normalize_attrs(const OpDef& def, const Attrs& attrs, const std::string& where = "");
/// Output types of `op` applied to `inputs` (checks the input count and the attributes).
std::vector<TensorType> infer_type(const std::string& op, const std::vector<TensorType>& inputs, const Attrs& attrs);

/// The outputs of `op` applied to `inputs` (te tensors, e.g. a fused group's placeholders or
/// other operators' outputs): the input count and attributes checked and the attributes
/// normalized as infer_type does, errors naming the operator.
std::vector<Tensor> apply_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs);
/// The template that schedules `op` on `inputs` as a fused kernel's anchor on target kind
/// `target_kind` ("llvm", "cuda"): OpDef::strategy with normalized attributes; nullopt when
/// the operator has no strategy for the target or this instance has no template.
std::optional<TemplateCall> select_template(const std::string& op, const std::string& target_kind,
                                            const std::vector<TensorType>& inputs, const Attrs& attrs);

/// The output types OpDef::infer_type's default derives: `def.compute` built on placeholders
/// of `inputs` (shape and dtype), and for elementwise and broadcast operators the layout of
/// an input of the output's shape. For infer_type functions that adjust it.
std::vector<TensorType> infer_from_compute(const OpDef& def, const std::vector<TensorType>& inputs, const Attrs& attrs);

/// Typed attribute access for compute/infer functions; throws naming the attribute when
/// absent or of another kind.
int64_t attr_int(const Attrs& a, const std::string& name);
double attr_float(const Attrs& a, const std::string& name);  // an int attribute converts
const std::string& attr_str(const Attrs& a, const std::string& name);
std::vector<int64_t> attr_ints(const Attrs& a, const std::string& name);
std::vector<double> attr_floats(const Attrs& a, const std::string& name);
/// "3", "1.5", "\"NCHW\"", "[1,2]" as a model's text dump shows them.
std::string to_string(const AttrValue& v);

}  // namespace loom::te::ops
