// Test helpers: compiled schedules against the reference evaluator.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/loom.h"

namespace loom::test {

/// |got - want| <= atol + rtol * |want| is a match.
struct Tolerance {
  double rtol = 0, atol = 0;
};
/// Stated per dtype: float32 1e-3/1e-3 (reductions reassociate), float16 2e-2/2e-2,
/// integers and bool exact.
Tolerance tolerance_for(DataType t);

/// Random inputs for the placeholders among `args` (deterministic from `seed`).
std::map<te::Tensor, runtime::NDArray> random_inputs(const std::vector<te::Tensor>& args, uint64_t seed);

/// Builds `s` for `args` (placeholders are inputs, the rest outputs), runs it on random
/// inputs (on the GPU for a cuda target) and compares every output with te::evaluate. Returns "" on a match, else a
/// description of the first mismatch (or of the exception thrown).
std::string compare_with_reference(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                   uint64_t seed = 1, const Target& target = Target("llvm"));

/// Like compare_with_reference for target cuda, with the kernels run on the CPU by
/// codegen::build_cuda_emulated (which also fails on a race or an out-of-bounds access).
std::string compare_emulated_with_reference(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                            uint64_t seed = 1, const Target& target = Target("cuda"));
/// The same for a function already lowered for cuda from `args` (so that a test can change
/// its IR first).
std::string compare_emulated_with_reference(const lowering::LoweredFunc& f, const std::vector<te::Tensor>& args,
                                            uint64_t seed = 1, const Target& target = Target("cuda"));

/// Compares two arrays under a tolerance; "" or the first mismatch.
std::string compare_arrays(const runtime::NDArray& got, const runtime::NDArray& want, Tolerance tol,
                           const std::string& what);

/// The input file of tests/codegen/export_loader.c for a call with `args`: the count, then
/// each array's dtype, shape and bytes.
std::string export_loader_input(const std::vector<runtime::NDArray>& args);
/// export_loader's output file split into each argument's bytes after the call; throws
/// loom::Error if it does not hold `count` arguments.
std::vector<std::string> export_loader_output(const std::string& file, size_t count);

}  // namespace loom::test

#define EXPECT_MATCHES_REFERENCE(sched, args) EXPECT_EQ(::loom::test::compare_with_reference((sched), (args)), "")
