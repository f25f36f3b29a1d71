// What the CUDA C code generator's intrinsic lowering table (intrinsics_cuda.cc) sees of
// the kernel printer (codegen_cuda.cc).
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/runtime/cuda.h"
#include "loom/te/expr.h"

namespace loom::codegen {

/// One call being printed, for one lane of its result.
struct CudaCall {
  const te::CallNode* call;
  DataType type;                  // the result's element type
  std::vector<std::string> args;  // the arguments, printed for this lane
  bool fast_math;                 // the fast approximate math functions may be used
  std::string kernel;             // for messages
  /// The C type of an element type ("float", "__half", …).
  std::function<std::string(DataType)> c_type;
};

/// Prints a call as a C expression.
using CudaIntrinsicLowering = std::function<std::string(const CudaCall&)>;

/// Every intrinsic the CUDA code generator lowers, by name.
const std::unordered_map<std::string, CudaIntrinsicLowering>& cuda_intrinsic_table();

/// The C type of a scalar of type `t` in kernel code ("float", "__half", "int", …); throws
/// naming `where` for a type CUDA C has none for.
std::string cuda_c_type(DataType t, const std::string& where);

/// How a packed call of `f` runs: the kernels its host body launches, in order, with their
/// operands and launch extents evaluated to constants (build_cuda.cc).
runtime::CudaFunctionPlan cuda_launch_plan(const lowering::LoweredFunc& f);

}  // namespace loom::codegen
