// How `loom tune` and `loom tune-model` run under mpirun (tuner/distributed, when loom was
// built with MPI): rank 0 searches and writes the log, every other rank measures for it.
#pragma once
#include <memory>

#include "loom/runtime/target.h"
#include "loom/tuner/measure.h"

namespace loom::cli {

class MpiJob {
 public:
  /// Started by mpirun with more than one rank (and built with MPI): joins the job, and on a
  /// rank other than 0 serves rank 0's batches until rank 0 is done. Built without MPI:
  /// warns when mpirun started several ranks (each would tune on its own). `quiet`: rank 0
  /// reports nothing about the ranks.
  explicit MpiJob(bool quiet);
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;

  /// True on a rank that has served rank 0 and should exit now.
  bool served() const;
  /// On rank 0 of a job of several ranks: asks the ranks about `target` and returns the
  /// service for TuneOptions::service; null otherwise (measure locally).
  std::shared_ptr<tuner::MeasureService> service(const Target& target);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::cli
