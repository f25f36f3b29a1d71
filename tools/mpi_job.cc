// MpiJob: the MPI job of a tuning command, or nothing.
#include "mpi_job.h"

#include <cstdlib>
#include <iostream>

#include "cli.h"
#ifdef LOOM_CLI_HAVE_MPI
#include "loom/tuner/distributed.h"
#endif

namespace loom::cli {

struct MpiJob::Impl {
#ifdef LOOM_CLI_HAVE_MPI
  std::unique_ptr<tuner::distributed::Cluster> cluster;
#endif
  bool served = false;
};

MpiJob::MpiJob(bool quiet) : impl_(std::make_unique<Impl>()) {
#ifdef LOOM_CLI_HAVE_MPI
  if (tuner::distributed::launched_by_mpi() && tuner::distributed::launcher_world_size() != 1) {
    tuner::distributed::ClusterOptions co;
    co.progress = quiet ? nullptr : &std::cerr;
    impl_->cluster = std::make_unique<tuner::distributed::Cluster>(nullptr, nullptr, co);
    if (impl_->cluster->rank() != 0) {
      impl_->cluster->serve();
      impl_->served = true;
    }
  }
#else
  (void)quiet;
  if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE"); n && std::atoi(n) > 1)
    std::cerr << fmt::format("loom: warning: started by mpirun with {} ranks, but this loom was built without MPI "
                             "(LOOM_WITH_MPI off): every rank tunes on its own\n", n);
#endif
}

MpiJob::~MpiJob() = default;

bool MpiJob::served() const { return impl_->served; }

std::shared_ptr<tuner::MeasureService> MpiJob::service(const Target& target) {
#ifdef LOOM_CLI_HAVE_MPI
  if (impl_->cluster && impl_->cluster->rank() == 0 && impl_->cluster->size() > 1) {
    impl_->cluster->announce(target);
    return impl_->cluster->service();
  }
#else
  (void)target;
#endif
  return nullptr;
}

}  // namespace loom::cli
