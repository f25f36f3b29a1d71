// Distributed tuning: MPI ranks build and measure a tuning loop's candidates in parallel.
// Built only when CMake found MPI (LOOM_WITH_MPI, library loom_distributed); no header of it
// includes mpi.h.
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/target.h"
#include "loom/tuner/machine.h"
#include "loom/tuner/measure.h"

namespace loom::tuner::distributed {

/// Whether an MPI launcher started this process: mpirun (OMPI_COMM_WORLD_SIZE) or srun
/// (PMIX_RANK, PMI_RANK). Creating a Cluster without one would start a singleton MPI job.
bool launched_by_mpi();
/// The number of ranks mpirun started (OMPI_COMM_WORLD_SIZE), or 0 when it does not say
/// (not started by mpirun, or started by srun, where only MPI_Init tells).
int launcher_world_size();

struct ClusterOptions {
  /// Rank 0's account of the ranks (at start and for each new target) and their throughput
  /// after every batch; null: silent. Other ranks always say on stderr when they only compile.
  std::ostream* progress = nullptr;
  /// Work chunks (one round of a rank's workers each) queued at a rank, so that it starts the
  /// next while rank 0 is busy with its own.
  int chunks_in_flight = 2;
  /// Rank 0 builds and measures candidates too (between handing chunks to the others).
  bool rank0_measures = true;
};

/// One rank's share of the work so far.
struct RankStats {
  MachineInfo machine;
  bool measures = true;  // false: its CPU does not match the last target; it only compiled
  int built = 0;         // candidates compiled only (compile-only ranks)
  int measured = 0;      // candidates built and measured (or failed on the way)
};

/// The MPI job this process belongs to: MPI_Init on construction, MPI_Finalize on
/// destruction; at most one per process. Rank 0 runs the search and owns the log; it measures
/// its batches through service(), which hands chunks of each batch to every rank (itself
/// included). Every other rank runs serve(), which builds and measures the chunks in its own
/// forked worker processes (a Measurer, reused while the task stays the same) and returns the
/// results. A rank whose CPU does not match a task's target (local_measure_mismatch against
/// rank 0's machine) says so on stderr and only compiles: candidates that fail to instantiate
/// or compile are recorded from it, and those that build are measured by a matching rank.
///
/// Faults: a candidate that crashes or hangs is an error result, as with a local Measurer. A
/// lost rank ends the whole job (MPI's default error handler; mpirun kills the others): the
/// log keeps every record written before, and TuneOptions::resume continues without them.
/// Forked workers never call MPI; OMPI_MCA_mpi_warn_on_fork is set to 0 (unless already set)
/// before MPI_Init, as Open MPI otherwise warns about the fork.
class Cluster {
 public:
  Cluster(int* argc, char*** argv, ClusterOptions opt = {});
  /// Rank 0: stops the other ranks' serve(). Every rank: MPI_Finalize.
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int rank() const;
  int size() const;
  /// Every rank's machine, by rank (gathered at construction; on rank 0 only).
  const std::vector<MachineInfo>& machines() const;

  /// Rank 0: the MeasureService for TuneOptions::service (one for every task; valid while the
  /// Cluster lives). Throws loom::Error on other ranks.
  std::shared_ptr<MeasureService> service();
  /// Rank 0: asks every rank whether it measures `target` (each that does not says why on its
  /// stderr) and reports the answer on options' progress; service() asks for each new target
  /// by itself. Throws loom::Error when no rank can measure it.
  void announce(const Target& target);
  /// Rank 0: what each rank built and measured so far.
  std::vector<RankStats> stats() const;
  /// Ranks other than 0: builds and measures what rank 0 sends until it stops them.
  void serve();

 private:
  friend class ClusterService;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::tuner::distributed
