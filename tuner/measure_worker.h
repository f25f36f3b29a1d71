// The measuring worker process: what a forked child of Measurer runs (internal).
#pragma once
#include "loom/tuner/measure.h"

namespace loom::tuner::detail {

/// Serves requests, one JSON object per line on the socket `fd`, until the parent closes it:
///   {"op":"build","index":N}  instantiates and compiles config N
///   {"op":"run"}              times the last built candidate and checks its outputs
/// Each is answered by {"error":code,"msg":…,"costs":[…]}. Never returns.
[[noreturn]] void worker_main(int fd, const Task& task, const MeasureOptions& opt);

/// Writes all of `data` to a socket (no SIGPIPE); false if the peer is gone.
bool send_all(int fd, const std::string& data);

}  // namespace loom::tuner::detail
