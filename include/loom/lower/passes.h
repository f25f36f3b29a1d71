// The lowering passes, each a function from IR to IR in a file of its own.
// pipeline.cc lists the order in which lower() runs them.
#pragma once
#include <map>

#include "loom/lower/lower.h"
#include "loom/lower/stmt.h"
#include "loom/schedule/schedule.h"

namespace loom::lower {

/// Inferred range of every iteration variable of every stage.
using BoundMap = std::unordered_map<const te::IterVarNode*, Range>;

// ---- schedule → loop nest
/// Ranges of all iteration variables, from the outputs' shapes back to their producers.
BoundMap infer_bound(const schedule::Schedule& s);
/// The loop nests of all stages, producers placed at their attach points, with
/// ProducerRealize around each non-input tensor.
Stmt schedule_ops(const schedule::Schedule& s, const BoundMap& bounds);
/// Substitutes compute_inline stages into their consumers (changes the schedule's ops).
void inline_stages(schedule::Schedule& s);

// ---- passes on the loop IR
Stmt simplify(const Stmt& s);
/// Multi-dimensional ProducerStore/Load/Realize → flat Store/Load/Allocate over buffers;
/// `args` binds the tensors that are function arguments.
Stmt storage_flatten(const Stmt& s, const std::vector<BufferArg>& args);
/// Splits loops whose body has a boundary condition into a main part without it and
/// edge parts with it.
Stmt loop_partition(const Stmt& s);
/// Vectorized loops → Ramp/Broadcast vector IR; scalarized when not vectorizable.
Stmt vectorize_loops(const Stmt& s);
/// Unrolled loops (and loops under pragma unroll_explicit) → copies of the body.
Stmt unroll_loops(const Stmt& s, int auto_max_extent = 0);
/// Shares memory between temporaries whose lifetimes do not overlap.
Stmt storage_rewrite(const Stmt& s);
/// Loads under one arm of a select get that arm's condition as their predicate, so that
/// they never read where the arm is not taken (padding reads outside its input).
Stmt predicate_select_loads(const Stmt& s);
/// Removes loops and branches with no effect, and stores of a value to itself.
Stmt remove_no_op(const Stmt& s);
/// The packed-call entry: checks every argument (null, ndim, shape, dtype, device,
/// strides, byte offset, alignment) and unpacks data pointers.
LoweredFunc make_packed_api(LoweredFunc f);

}  // namespace loom::lower
