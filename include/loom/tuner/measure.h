// Measurement: builds and times candidate configs of a task in isolated worker processes.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "loom/records/record.h"
#include "loom/tuner/task.h"

namespace loom::tuner {

struct MeasureOptions {
  /// Runs per timed repeat; raised until one repeat takes at least min_repeat_ms.
  int number = 1;
  /// Timed repeats; each gives one cost.
  int repeat = 3;
  double min_repeat_ms = 100;
  /// Writes a 64 MiB buffer before every repeat so each starts with a cold cache.
  bool flush_cache = false;
  /// Limit for building one candidate and, separately, for running (timing and checking) it.
  double timeout_s = 10;
  /// Worker processes, i.e. candidates built in parallel; 0: one per core.
  int n_parallel = 0;
  /// Compares outputs with a reference result (see Measurer); a mismatch is kWrongAnswer.
  bool check_correctness = true;
  double rtol = 1e-3, atol = 1e-3;
  /// Seed of the random input data.
  uint64_t seed = 1;
  /// Address-space limit of a worker in bytes; 0: half the machine's memory, at most 8 GiB.
  int64_t worker_memory_bytes = 0;
  /// Tasks of at most this many floating point operations get their reference from
  /// te::evaluate; larger ones from the template's default config, compiled.
  double evaluate_flop_limit = 5e7;
};

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
/// with te::evaluate on the default instance (small tasks), or by running the template's
/// default config compiled (large tasks, where the evaluator would take minutes; default
/// schedules are trusted because every schedule primitive is differentially tested).
class Measurer {
 public:
  Measurer(Task task, MeasureOptions opt = {});
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  /// One result per config, in order.
  std::vector<records::MeasureResult> measure(const std::vector<ConfigEntity>& configs);
  std::vector<records::MeasureResult> measure(const std::vector<int64_t>& indices);

  const Task& task() const { return task_; }
  const MeasureOptions& options() const { return opt_; }
  int num_workers() const;

 private:
  struct Impl;
  Task task_;
  MeasureOptions opt_;
  std::unique_ptr<Impl> impl_;
};

/// The host CPU's model name from /proc/cpuinfo ("" if unknown).
std::string host_cpu_name();

}  // namespace loom::tuner
