// GraphPlan: a compiled network as the graph executor runs it (kernels in order over one
// planned arena), and GraphExecutor, a plan bound to kernel entry points. The C tables the
// executor reads are include/loom/runtime/graph_executor.h; this is their C++ description,
// what graph_opt's compiler produces and codegen::build_graph compiles.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/data_type.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {

/// Where a tensor's storage lives during a run.
enum class GraphTensorKind : int32_t {
  kInput = LOOM_GRAPH_INPUT,              // the caller's buffer
  kOutput = LOOM_GRAPH_OUTPUT,            // the caller's buffer, written by one kernel
  kConstant = LOOM_GRAPH_CONSTANT,        // the plan's constants (weights)
  kIntermediate = LOOM_GRAPH_INTERMEDIATE // the arena, at arena_offset
};
/// "input", "output", "constant", "intermediate".
const char* to_string(GraphTensorKind k);

/// A dense row-major tensor of the plan.
struct GraphTensor {
  std::string name;
  GraphTensorKind kind = GraphTensorKind::kIntermediate;
  DataType dtype = DataType::Float(32);
  std::vector<int64_t> shape;
  int64_t arena_offset = 0;  // intermediates: byte offset in the arena (aligned to the element size)
  NDArray value;             // constants: the data (host, same dtype and shape)
  /// A view: the id of the intermediate (input) whose bytes this intermediate (input) reads
  /// under its own shape (same size, and arena offset; no kernel writes it, its source's
  /// writer does), or -1.
  int32_t view_of = -1;
  /// Bytes of storage (0 for an empty tensor); throws on overflow.
  int64_t nbytes() const;
};

/// One call of a compiled function.
struct GraphKernel {
  std::string name;           // the function's name in the kernels' module
  std::vector<int32_t> args;  // tensor ids, in the function's argument order
  /// Per argument: whether the kernel writes it. Left empty, build_graph fills it from the
  /// function's signature (placeholders are read, computed tensors written).
  std::vector<bool> writes;
  std::string note;  // how it was made (template and config, pattern schedule), for reports
};

/// Kernels in order over tensors; run()'s arguments are `inputs` then `outputs`.
struct GraphPlan {
  std::string name = "run";  // the entry's name, prefixed to argument errors
  std::vector<GraphTensor> tensors;
  std::vector<GraphKernel> kernels;
  std::vector<int32_t> inputs;   // ids of the kInput tensors, each once
  /// Ids of the outputs. A kOutput tensor is written into the caller's buffer of the first
  /// output naming it; an output naming an input, a constant or an earlier output's tensor
  /// is copied there after the kernels ran.
  std::vector<int32_t> outputs;
  int64_t arena_bytes = 0;

  /// Throws loom::Error naming the tensor or kernel unless the plan is well formed: ids in
  /// range, kinds consistent with inputs/outputs, constants with values of their shape, every
  /// written tensor written by exactly one kernel before any kernel reads it, intermediates
  /// inside the arena, views at their source's bytes, and no two intermediates that are live
  /// at the same kernel sharing arena bytes (a view's uses count as its source's). Requires
  /// `writes` to be filled.
  void validate() const;
  /// Bytes the plan's intermediates would take with one buffer each (what the memory plan saves against).
  int64_t unplanned_bytes() const;
};

/// The plan's constants packed into one 64-byte aligned blob: `offsets[i]` is tensor i's
/// byte offset (0 for tensors that are not constants), every constant 64-byte aligned.
struct PackedConstants {
  NDArray blob;  // uint8[size]
  std::vector<uint64_t> offsets;
};
PackedConstants pack_constants(const GraphPlan& plan);

/// A validated plan bound to one packed entry per kernel, with its constants packed: the C
/// tables of graph_executor.h and their state. Not copyable (the tables point into it).
class GraphExecutor {
 public:
  /// `entries[k]` runs plan.kernels[k]. The plan's constant values are packed and dropped.
  GraphExecutor(GraphPlan plan, std::vector<loom_graph_kernel_fn> entries);
  ~GraphExecutor();
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  /// loom_graph_run: inputs then outputs; 0 or a negative status with loom_get_last_error().
  int32_t run(DLTensor** args, int32_t num_args) const;
  /// loom_graph_profile: one more argument, float64[kernels], receives each kernel's seconds.
  int32_t profile(DLTensor** args, int32_t num_args) const;

  /// The plan (constant values dropped; constants() holds them).
  const GraphPlan& plan() const { return plan_; }
  const PackedConstants& constants() const { return constants_; }
  const loom_graph_plan& c_plan() const { return c_plan_; }

 private:
  GraphPlan plan_;
  PackedConstants constants_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<std::string> dtype_names_;
  std::vector<loom_graph_tensor> tensors_;
  std::vector<loom_graph_kernel> kernels_;
  mutable loom_graph_state state_;
  loom_graph_plan c_plan_{};
};

}  // namespace loom::runtime
