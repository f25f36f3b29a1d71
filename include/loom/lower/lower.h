// lower(): a schedule to a loop-IR function, through the pass pipeline of pipeline.cc.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "loom/lower/stmt.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"

namespace loom::lower {

/// One tensor argument of a lowered function.
struct BufferArg {
  std::string name;
  Var handle;  // DLTensor* handed in by the caller
  Var data;    // pointer to its first element, what Load/Store use
  DataType dtype;
  std::vector<Expr> shape;
  Tensor tensor;  // the te tensor it binds
};

/// A function in loop IR. Before make_packed_api its body uses `args[i].data` directly;
/// after, it begins by checking and unpacking each `args[i].handle`.
struct LoweredFunc {
  std::string name;
  std::vector<BufferArg> args;
  Stmt body;
  bool packed = false;  // true after make_packed_api
};

struct LowerOptions {
  Target target = Target("llvm");
  /// Print the IR after every pass to this stream (loom lower --print-after-all).
  std::ostream* print_after_all = nullptr;
  /// Stop before make_packed_api (tests of individual passes use this).
  bool skip_packed_api = false;
};

/// Lowers the schedule computing `args` (inputs and outputs, in call order).
LoweredFunc lower(const schedule::Schedule& s, const std::vector<Tensor>& args, const std::string& name,
                  const LowerOptions& opts = {});

std::string to_string(const LoweredFunc& f);
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);

}  // namespace loom::lower
