// How an auto-scheduled task is named in tuning records (records::Workload), so that a record
// is found again when the same computation is built again, and re-created from the record
// where that is possible.
//
//   op     "auto:" + a name: the registry operator ("auto:layer_norm"), the group's name
//          ("auto:dense+add+gelu"), or the user's name for a te computation ("auto:my_norm")
//   shape  empty          dtype  the first output's element type
//   attrs  {"graph": OpGraph::to_json()}   a registry operator or a group of them: re-created
//                                          from the record alone (loom show/build, MPI ranks)
//          {"hash": ComputeDag::hash(),    any te computation: re-created in a process that
//           "args": call order}            made its task (Task::create_auto registers it);
//                                          "args" lists each argument's stage position and
//                                          output, e.g. "0.0,1.0,3.0,"
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/te/op_registry.h"

namespace loom::tuner::autosched {

/// The prefix of an auto-scheduled workload's op.
inline constexpr const char* kAutoOpPrefix = "auto:";

/// A small graph of registry operators: one operator instance, or a fused kernel's group.
/// Values are numbered in order: the inputs 0 … n-1, then each node's outputs.
struct OpGraph {
  struct Node {
    std::string op;             // registry name (te::ops::get_op)
    te::ops::Attrs attrs;       // normalized by the constructors (defaults filled in)
    std::vector<int> inputs;    // value numbers, in the operator's input order
  };
  std::vector<te::ops::TensorType> inputs;
  std::vector<Node> nodes;
  /// The kernel's outputs (value numbers), in call order.
  std::vector<int> outputs;
  /// The name in the workload's op; empty: the nodes' ops joined by '+'.
  std::string name;

  /// One registry operator applied to inputs of these types; its outputs are the outputs.
  /// Throws loom::Error naming the operator for an unknown operator, a wrong input count,
  /// bad attributes or input types its type inference rejects.
  static OpGraph single(const std::string& op, std::vector<te::ops::TensorType> inputs, te::ops::Attrs attrs = {});
  /// Appends a node reading `inputs` (value numbers) and returns its first output's value
  /// number (attributes normalized; checks as `single` does).
  int add(const std::string& op, std::vector<int> inputs, te::ops::Attrs attrs = {});

  /// The computation: a placeholder per input (named in0, in1, …), then each node's registry
  /// compute; returns the inputs then the outputs, in call order.
  std::vector<te::Tensor> build() const;
  /// Canonical compact JSON (keys sorted): {"inputs": ["float32[128,768]", …],
  /// "nodes": [{"op": "layer_norm", "attrs": {"axis": -1, "eps": 1e-05}, "inputs": [0, 1, 2]}],
  /// "outputs": [3]}; attributes as JSON numbers, strings and arrays.
  std::string to_json() const;
  /// Parses to_json's output; attribute values are read by the operator's schema. Throws
  /// loom::Error naming what is malformed.
  static OpGraph from_json(const std::string& json);
  std::string display_name() const;
};

/// "float32[1,64,56,56]" (an optional "@layout" suffix) → TensorType; loom::Error otherwise.
te::ops::TensorType parse_tensor_type(const std::string& text);

/// The workload of an op graph (attrs {"graph": …}).
records::Workload workload_of(const OpGraph& g);
/// The workload of any te computation: `name` and the hash of its structure (attrs {"hash": …}).
records::Workload workload_of(const std::string& name, const std::vector<te::Tensor>& args);
/// Whether `w` names an auto-scheduled task.
bool is_auto_workload(const records::Workload& w);

/// Remembers, for this process, the computation of a hashed workload (Task::create_auto does),
/// so that Task::create of its workload (from a record, in a forked worker) finds it.
void register_computation(const records::Workload& w, std::vector<te::Tensor> args);
/// The registered computation of `w`; throws loom::Error saying how to make it otherwise.
std::vector<te::Tensor> registered_computation(const records::Workload& w);

}  // namespace loom::tuner::autosched
