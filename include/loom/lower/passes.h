// The lowering passes, each a function from IR to IR in a file of its own.
// pipeline.cc lists the order in which lower() runs them.
#pragma once
#include <map>

#include "loom/lower/lower.h"
#include "loom/lower/stmt.h"
#include "loom/schedule/schedule.h"

namespace loom::lowering {

/// Inferred range of every iteration variable of every stage.
using BoundMap = std::unordered_map<const te::IterVarNode*, Range>;

// ---- schedule → loop nest
/// Ranges of all iteration variables, from the outputs' shapes back to their producers.
BoundMap infer_bound(const schedule::Schedule& s);
/// The loop nests of all stages, producers placed at their attach points, with
/// ProducerRealize around each non-input tensor.
Stmt schedule_ops(const schedule::Schedule& s, const BoundMap& bounds);
/// Throws loom::Error naming the stage, tensor, dimension, index range and extent when a
/// compute stage provably reads a tensor outside its extent (reads under a select or
/// another guard are not judged). `func` names the function in the message.
void check_reads_in_bounds(const schedule::Schedule& s, const std::string& func);
/// Before every ProducerStore, asserts that its indices and those of every read it makes
/// lie in the tensors' extents and that integer divisors are non-zero (LowerOptions::
/// check_accesses). Runs before storage_flatten.
Stmt inject_access_checks(const Stmt& s);
/// Substitutes compute_inline stages into their consumers (changes the schedule's ops).
void inline_stages(schedule::Schedule& s);
/// Throws loom::Error naming the stage and the call when a compute calls an intrinsic that
/// te/intrinsics.h does not declare, or with the wrong arity or types.
void check_stage_intrinsics(const schedule::Schedule& s, const std::string& func);
/// Throws loom::Error naming the call when `f` calls an undeclared or ill-typed intrinsic,
/// or one that the code generator of `target` does not lower (the CUDA code generator for
/// the kernels of a cuda target, LLVM otherwise).
void check_intrinsics(const LoweredFunc& f, const Target& target);

// ---- passes on the loop IR
Stmt simplify(const Stmt& s);
/// Multi-dimensional ProducerStore/Load/Realize → flat Store/Load/Allocate over buffers;
/// `args` binds the tensors that are function arguments.
Stmt storage_flatten(const Stmt& s, const std::vector<BufferArg>& args);
/// Replaces the loop nest under each tensorized axis of `sch` (Stage::tensorize, marked by
/// schedule_ops with attr::kTensorize) by its tensor intrinsic's implementation, after
/// checking that the nest computes what the intrinsic declares (loom::Error naming the
/// stage, the axis and what differs). Tiles that a bounds guard cuts short keep their loops.
/// Runs on flat buffers (after storage_flatten).
Stmt tensorize(const Stmt& s, const schedule::Schedule& sch);
/// Splits loops whose body has a boundary condition (relaxed over the loops inside) into a
/// main part without it, edge parts with it and dead parts where it fails throughout; a
/// loop whose condition is not linear in it gets its body versioned on the condition.
/// Unrolled loops and loops indexing a local tile are split only at constant points.
Stmt loop_partition(const Stmt& s);
/// Versions the body of a loop that picks a tile, `if (X >= c) {…} else {…}`, where its
/// unrolled or vectorized loops have extents min(X, c): full tiles get constant extents.
Stmt specialize_partial_tiles(const Stmt& s);
/// Vectorized loops → Ramp/Broadcast vector IR; scalarized when not vectorizable.
Stmt vectorize_loops(const Stmt& s);
/// Unrolled loops (and loops under pragma unroll_explicit, and small loop nests inside a loop
/// with pragma auto_unroll_max_step) → copies of the body.
Stmt unroll_loops(const Stmt& s, int auto_max_extent = 0);
/// Shares memory between temporaries whose lifetimes do not overlap.
Stmt storage_rewrite(const Stmt& s);
/// Loads under one arm of a select get that arm's condition as their predicate, so that
/// they never read where the arm is not taken (padding reads outside its input).
Stmt predicate_select_loads(const Stmt& s);
/// Removes loops and branches with no effect, and stores of a value to itself.
Stmt remove_no_op(const Stmt& s);
/// The packed-call entry: checks every argument (null, ndim, shape, dtype, device,
/// strides, byte offset, alignment) and unpacks data pointers. `device_type` is the DLPack
/// device the arguments must be on (kDLCPU = 1, kDLCUDA = 2 for cuda targets).
LoweredFunc make_packed_api(LoweredFunc f, int device_type = 1);

// ---- GPU (target cuda)
/// Intrinsic of a block-wide barrier: Evaluate(call(int32, "loom.sync_threads", {})), which
/// CUDA code generation prints as __syncthreads().
inline constexpr const char* kSyncThreads = "loom.sync_threads";
/// Intrinsic the host body uses in place of a kernel: call(int32, "loom.launch_kernel",
/// {StringImm(kernel name), buffer params…, scalar params…}) (see DeviceFunc).
inline constexpr const char* kLaunchKernel = "loom.launch_kernel";

/// Default storage scopes of stages computed inside kernels: "local" under threadIdx,
/// "shared" under blockIdx only (changes the schedule's stages).
void infer_gpu_scope(schedule::Schedule& s);
/// Throws loom::Error naming the first stage whose stores are not under a thread_extent.
void check_thread_binding(const Stmt& s);
/// Removes vthread attributes: the work of each virtual thread is interleaved in the one
/// real thread, buffers allocated under it are expanded per virtual thread.
Stmt inject_virtual_thread(const Stmt& s);
/// Double buffering of shared tiles fetched at the start of each step of a serial loop (the
/// allocation marked with attr::kDoubleBuffer by schedule_ops): 2x allocation, a prologue
/// fetch of the first step, and the fetch of step k + 1 into the other half inside the loop.
/// Allocations that do not match the pattern are left as they are.
Stmt inject_double_buffer(const Stmt& s);
/// Drops attr::kDoubleBuffer attributes (CPU targets ignore double_buffer).
Stmt strip_double_buffer(const Stmt& s);
/// Inserts kSyncThreads barriers between conflicting accesses to "shared" buffers.
Stmt thread_sync(const Stmt& s);
/// Cuts each outermost thread_extent region into a DeviceFunc of f.device_funcs, leaving
/// a kLaunchKernel call in the host body.
LoweredFunc split_host_device(LoweredFunc f);

/// What one GPU can run (defaults: CUDA compute capability 7.0 and later).
struct GpuLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_bytes = 48 * 1024;
  int64_t max_thread_x = 1024, max_thread_y = 1024, max_thread_z = 64;
  int64_t max_grid_x = 2147483647, max_grid_yz = 65535;
  /// Per-thread "local" arrays: 255 registers of 4 bytes.
  int64_t max_local_bytes = 255 * 4;
};
/// Throws loom::Error naming the kernel and the limit when a kernel of `f` exceeds `limits`.
void verify_gpu(const LoweredFunc& f, const GpuLimits& limits = {});

}  // namespace loom::lowering
