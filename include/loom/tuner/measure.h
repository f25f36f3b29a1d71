// Measurement: builds and times candidate configs of a task in isolated worker processes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

/// (tuner/distributed/protocol.cc sends every field to other MPI ranks: add new ones there.)
struct MeasureOptions {
  /// Runs per timed repeat; raised until one repeat takes at least min_repeat_ms.
  int number = 1;
  /// Timed repeats; each gives one cost.
  int repeat = 3;
  double min_repeat_ms = 100;
  /// Writes a 64 MiB buffer before every repeat so each starts with a cold cache.
  bool flush_cache = false;
  /// CPU: the inputs in as many copies as fill 64 MiB (at most 64), each run on the next
  /// copy, so that no run finds its inputs in cache from the run before: as a kernel of a
  /// network finds its weights (a transformer's dense layers, whose weights are far larger
  /// than a core's cache, favour another tile order then than with a hot weight).
  bool rotate_inputs = false;
  /// Limit for building one candidate and, separately, for running (timing and checking) it.
  double timeout_s = 10;
  /// Worker processes, i.e. candidates built in parallel; 0: one per core.
  int n_parallel = 0;
  /// Compares outputs with a reference result (see Measurer); a mismatch is kWrongAnswer.
  bool check_correctness = true;
  /// Tolerance of float outputs; integer and bool outputs must match exactly.
  double rtol = 1e-3, atol = 1e-3;
  /// Seed of the random input data: floats in [-1, 1]; 8-bit integers over their whole
  /// range (so int8 kernels meet the products that would saturate an int16 sum); wider
  /// integers in [-4, 4] (unsigned: [0, 7]), which keeps index-like inputs small.
  uint64_t seed = 1;
  /// Address-space limit of a worker in bytes; 0: half the machine's memory, at most 8 GiB.
  int64_t worker_memory_bytes = 0;
  /// Tasks of at most this many floating point operations get their reference from
  /// te::evaluate; larger ones from the template's default config, compiled.
  double evaluate_flop_limit = 5e7;
};

/// The worker processes a Measurer with these options runs: n_parallel, or one per core.
int measure_workers(const MeasureOptions& opt);

/// Builds and times configs of one task. Candidates run in persistent worker processes,
/// created with fork() (so templates registered in this process exist there too): one that
/// crashes, hangs or exhausts memory is recorded as an error and its worker replaced.
///
/// Each batch is processed in rounds of n_parallel candidates: every worker builds one
/// (instantiate + codegen::build) concurrently, then the workers run theirs one at a time,
/// so timings are not disturbed by compiles. This process never compiles or runs a
/// candidate itself; it only forks while it is otherwise idle.
///
/// Correctness: each worker computes the reference outputs once, on the same seeded inputs,
/// with te::evaluate on the default instance (small tasks); for large tasks, where the
/// evaluator would take minutes, one process forked before the workers runs the task's default
/// config compiled (default schedules are trusted because every schedule primitive is
/// differentially tested), under the reference's own time limit rather than a candidate's,
/// and the workers read its outputs.
///
/// CUDA tasks (target kind "cuda"): the constructor first checks, in a forked child, that a
/// worker can use the GPU, and throws loom::Error "no CUDA driver/GPU: …" otherwise (CUDA does
/// not survive fork(), so a process must not use CUDA before it creates a Measurer). Workers
/// copy the seeded inputs to device arrays, time with CUDA events (number, repeat and
/// min_repeat_ms as for the CPU; flush_cache overwrites 64 MiB of device memory) and copy the
/// outputs back. The reference is computed once per Measurer, on the host, by one forked
/// process into shared memory: te::evaluate up to evaluate_flop_limit, else the computation
/// with a plain CPU schedule (reduce axes inside the outer spatial axes, those fused and
/// parallel) compiled for "llvm". worker_memory_bytes does not apply to CUDA workers.
class Measurer {
 public:
  Measurer(Task task, MeasureOptions opt = {});
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  /// One result per config, in order.
  std::vector<records::MeasureResult> measure(const std::vector<ConfigEntity>& configs);
  std::vector<records::MeasureResult> measure(const std::vector<int64_t>& indices);
  /// Only builds (instantiates and compiles) the configs: an error result for each that
  /// fails, as measure() would record it; kNoError with no costs for each that builds.
  std::vector<records::MeasureResult> build(const std::vector<int64_t>& indices);

  const Task& task() const { return task_; }
  const MeasureOptions& options() const { return opt_; }
  int num_workers() const;

 private:
  struct Impl;
  std::vector<records::MeasureResult> process(const std::vector<ConfigEntity>& configs, bool run);
  Task task_;
  MeasureOptions opt_;
  std::unique_ptr<Impl> impl_;
};

/// Where a tuning loop has its candidates measured in place of a Measurer of its own
/// (TuneOptions::service): tuner::distributed's MPI cluster is one. One service may serve
/// many tasks, one batch at a time.
class MeasureService {
 public:
  virtual ~MeasureService() = default;
  /// Candidates it builds at once with these options: a batch of this many keeps every
  /// worker busy (TuneOptions::batch_size 0 means this many).
  virtual int parallelism(const MeasureOptions& opt) = 0;
  /// One result per config index of `task`, in order, measured with `opt`. Results measured
  /// on another machine name it (MeasureResult::host, ::cpu).
  virtual std::vector<records::MeasureResult> measure(const Task& task, const MeasureOptions& opt,
                                                      const std::vector<int64_t>& indices) = 0;
};

/// "" when a forked child of this process can allocate and copy CUDA device memory, else
/// why not. Probes in a child (once per process), so this process does not initialize CUDA.
std::string cuda_worker_unavailable_reason();

/// The host CPU's model name from /proc/cpuinfo ("" if unknown).
std::string host_cpu_name();

/// This machine's host name (gethostname; "" if unknown).
std::string host_name();

}  // namespace loom::tuner
