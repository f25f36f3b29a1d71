// The measuring worker process: what a forked child of Measurer runs (internal).
#pragma once
#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "loom/tuner/measure.h"

namespace loom::tuner::detail {

/// The reference outputs of a CUDA task (computed on the host) or of a CPU task too large for
/// te::evaluate (its default config compiled), in memory mapped shared before the
/// workers are forked: this header, then the outputs' bytes in argument order at
/// kDataOffset. One process (reference_main) fills it; the workers only read it, after the
/// parent has seen that process end.
struct SharedReference {
  enum State : int { kPending = 0, kReady = 1, kFailed = 2 };
  static constexpr size_t kDataOffset = 4096;
  std::atomic<int> state;
  char error[3072];
  unsigned char* data() { return reinterpret_cast<unsigned char*>(this) + kDataOffset; }
  const unsigned char* data() const { return reinterpret_cast<const unsigned char*>(this) + kDataOffset; }
};
static_assert(sizeof(SharedReference) <= SharedReference::kDataOffset);

/// Bytes of the outputs of `task`'s computation (what a SharedReference holds after its header).
size_t reference_bytes(const Task& task);

/// Serves requests, one JSON object per line on the socket `fd`, until the parent closes it:
///   {"op":"build","index":N}  instantiates and compiles config N
///   {"op":"run"}              times the last built candidate and checks its outputs
/// Each is answered by {"error":code,"msg":…,"costs":[…]}. `ref` is the shared reference (null
/// for small CPU tasks, whose workers evaluate their own). Never returns.
[[noreturn]] void worker_main(int fd, const Task& task, const MeasureOptions& opt, const SharedReference* ref);

/// Computes the reference outputs (a CUDA task's on the host, a large CPU task's with its
/// default config), on the same seeded inputs the workers use, into `ref` (state kReady, or
/// kFailed with the error). Never returns.
[[noreturn]] void reference_main(const Task& task, const MeasureOptions& opt, SharedReference* ref);

/// In a forked child: "" when this process can allocate, copy and free device memory, else why not.
std::string cuda_probe();

/// A plain CPU schedule of `outs` for reference results: every compute stage at the root with
/// its reduce axes moved inside all spatial axes but the innermost (so the inner loop walks
/// the output and, for matmul-like bodies, the inputs contiguously), the spatial axes outside
/// them fused and parallel. Simple enough to trust, fast enough for a 4096³ matmul (seconds
/// on a many-core host), where te::evaluate would take hours.
schedule::Schedule reference_cpu_schedule(const std::vector<te::Tensor>& outs);

/// Writes all of `data` to a socket (no SIGPIPE); false if the peer is gone.
bool send_all(int fd, const std::string& data);

}  // namespace loom::tuner::detail
