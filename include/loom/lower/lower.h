// lower(): a schedule to a loop-IR function, through the pass pipeline of pipeline.cc.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "loom/lower/stmt.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"

namespace loom::lowering {

/// One tensor argument of a lowered function.
struct BufferArg {
  std::string name;
  Var handle;  // DLTensor* handed in by the caller
  Var data;    // pointer to its first element, what Load/Store use
  DataType dtype;
  std::vector<Expr> shape;
  Tensor tensor;  // the te tensor it binds
};

/// A kernel split off for a GPU by split_host_device. Its body is what one thread runs;
/// thread and block indices appear as Vars named by their tag ("threadIdx.x", …), with no
/// thread_extent attributes left: thread_vars[i] is the index of thread_extents[i].first.
/// Shared and per-thread arrays are Allocate with scope "shared" / "local"; block barriers
/// are Evaluate(call("loom.sync_threads")) (passes.h kSyncThreads).
struct DeviceFunc {
  std::string name;                 // "<func>_kernel0"
  std::vector<Var> buffer_params;   // data pointers it uses (BufferArg::data vars), in order
  std::vector<DataType> buffer_dtypes;  // element type of each buffer param
  std::vector<Var> scalar_params;   // other free variables it uses (int32/int64)
  /// Launch extents by tag: blockIdx.{x,y,z} → grid, threadIdx.{x,y,z} → block.
  std::vector<std::pair<std::string, Expr>> thread_extents;
  std::vector<Var> thread_vars;     // the Vars bound to each tag in `body`
  int64_t shared_bytes = 0;         // static shared memory
  Stmt body;
};

/// A function in loop IR. Before make_packed_api its body uses `args[i].data` directly;
/// after, it begins by checking and unpacking each `args[i].handle`.
struct LoweredFunc {
  std::string name;
  std::vector<BufferArg> args;
  Stmt body;
  bool packed = false;  // true after make_packed_api
  /// GPU kernels; the host body launches them with Evaluate(call("loom.launch_kernel",
  /// {StringImm(name), buffer params…, scalar params…})).
  std::vector<DeviceFunc> device_funcs;
};

struct VectorizationReport;  // vectorization_report.h

struct LowerOptions {
  Target target = Target("llvm");
  /// Print the IR after every pass to this stream (loom lower --print-after-all).
  std::ostream* print_after_all = nullptr;
  /// Check every tensor access and integer division at run time (`loom build
  /// --check-bounds`): a failure returns an error code whose message names the stage,
  /// tensor and dimension (or the divisor). Slower; for debugging.
  bool check_accesses = false;
  /// Stop before make_packed_api (tests of individual passes use this).
  bool skip_packed_api = false;
  /// Fill this with the vectorization report (vectorization_report.h) of the function:
  /// every vector access that is not a dense load/store and every vector operation computed
  /// lane by lane, named by stage and buffer as the schedule names them. CPU targets only.
  VectorizationReport* vector_report = nullptr;
};

/// Lowers the schedule computing `args` (inputs and outputs, in call order).
LoweredFunc lower(const schedule::Schedule& s, const std::vector<Tensor>& args, const std::string& name,
                  const LowerOptions& opts = {});

std::string to_string(const LoweredFunc& f);
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);

}  // namespace loom::lowering
