// Hand-written loop IR: the bodies of extern operations (te::extern_op) and the builder
// that writes them, as TVM's te.extern with tvm.tir.ir_builder. A body is built when the
// schedule is lowered, from the operation's tensors and its parameters (the defaults, with
// the schedule's Stage::extern_param values), and then goes through the same passes as any
// stage's loop nest: storage flattening, loop partitioning, vectorization of its vectorized
// loops, unrolling, storage rewriting and, for GPU kernels, host/device splitting.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/lower/stmt.h"
#include "loom/te/tensor.h"

namespace loom::lowering {

/// What an extern operation's body is built from.
struct ExternContext {
  std::string name;                       // the operation's name
  std::vector<Tensor> inputs;             // the tensors it reads, in the operation's order
  std::vector<Tensor> outputs;            // the tensors it writes
  std::map<std::string, int64_t> params;  // every parameter: the schedule's value or the default
  /// Parameter `key`; throws loom::Error naming the operation and its parameters when absent.
  int64_t param(const std::string& key) const;
};

/// Builds the statement that computes every element of `ctx.outputs` from `ctx.inputs`. It
/// reads and writes them with ProducerLoad/ProducerStore (multi-dimensional, `t(i, j)` and
/// IRBuilder::store), and may realize scratch tensors of its own, in any storage scope.
using LoopBodyBuilder = std::function<Stmt(const ExternContext& ctx)>;

/// An extern body written as loop IR, for te::extern_op: `name` names it in listings.
std::shared_ptr<const te::ExternBody> loop_body(std::string name, LoopBodyBuilder build);

/// The loop IR of extern operation `op` with the schedule's parameter values `params`
/// (overriding the operation's defaults). Throws loom::Error naming the operation when its
/// body is not loop IR (loop_body) or a parameter is unknown.
Stmt build_extern_body(const te::Operation& op, const std::map<std::string, int64_t>& params);

/// Writes nested loop IR in program order. Statements go into the current block; loop(),
/// if_then() and launch_thread() open nested blocks; let(), scratch() and launch_thread()
/// scope everything emitted after them in the current block (as TVM's ir_builder does with
/// let and allocate).
class IRBuilder {
 public:
  IRBuilder();
  /// Appends `s` to the current block.
  void emit(Stmt s);
  /// Appends `t(indices) = value` (the value cast to t's element type).
  void store(const Tensor& t, const std::vector<Expr>& indices, Expr value);
  /// for (v = begin; v < begin + extent; ++v) { body(v) }, of loop kind `kind`.
  void loop(const std::string& name, Expr begin, Expr extent, const std::function<void(const Var&)>& body,
            ForKind kind = ForKind::kSerial);
  /// if (cond) { then_body() } else { else_body() } (no else without one).
  void if_then(Expr cond, const std::function<void()>& then_body, const std::function<void()>& else_body = {});
  /// A variable bound to `value` for the rest of the current block.
  Var let(const std::string& name, Expr value);
  /// A scratch tensor of `shape` (elements `dtype`) in storage scope `scope` ("local",
  /// "shared", "global"), realized for the rest of the current block. Read it as `t(i, j)`.
  Tensor scratch(const std::string& name, std::vector<Expr> shape, DataType dtype, const std::string& scope = "local");
  /// The index of GPU thread `tag` ("blockIdx.x", "threadIdx.y", …) ranging over `extent`,
  /// launched around the rest of the current block.
  Var launch_thread(const std::string& tag, Expr extent);
  /// Everything emitted, as one statement (the builder is left empty).
  Stmt get();

 private:
  /// A statement, or a scope (let, realize, thread extent) around what follows it.
  struct Entry {
    Stmt stmt;
    std::function<Stmt(Stmt)> wrap;
  };
  static Stmt close(std::vector<Entry> block);
  std::vector<std::vector<Entry>> blocks_;
};

}  // namespace loom::lowering
