// Cluster: MPI set-up, rank 0's scheduler of work chunks, and the serving ranks' loop.
// The only file of loom that includes mpi.h.
// The C API only: no MPI C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "loom/tuner/distributed.h"
#include "protocol.h"

namespace loom::tuner::distributed {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fail("distributed tuning: {} failed: {}", what, std::string(msg, size_t(len)));
}

struct Message {
  int source;
  int tag;
  std::string text;
};

/// One waiting message from `source` (or MPI_ANY_SOURCE), if any.
std::optional<Message> try_receive(int source) {
  int flag = 0;
  MPI_Status st;
  check_mpi(MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
  if (!flag) return std::nullopt;
  int count = 0;
  check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
  Message m{st.MPI_SOURCE, st.MPI_TAG, std::string(size_t(count), '\0')};
  check_mpi(MPI_Recv(m.text.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
  return m;
}

/// Waits for a message from `source`, sleeping between polls: a blocking MPI_Probe spins, and
/// would take a core from the worker processes that build and time candidates.
Message receive(int source) {
  for (;;) {
    if (std::optional<Message> m = try_receive(source)) return *m;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

json parse(const Message& m, int expected_tag) {
  LOOM_CHECK(m.tag == expected_tag, "distributed tuning: rank {} sent message tag {} where tag {} was expected",
             m.source, m.tag, expected_tag);
  try {
    return json::parse(m.text);
  } catch (const json::exception& e) {
    fail("distributed tuning: malformed message from rank {}: {}", m.source, e.what());
  }
}

/// Sends in flight, each with the buffer MPI reads from until it completes.
class Outbox {
 public:
  void send(int dest, int tag, std::string text) {
    sends_.emplace_back(MPI_REQUEST_NULL, std::move(text));
    auto& [req, buf] = sends_.back();
    check_mpi(MPI_Isend(buf.data(), int(buf.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &req), "MPI_Isend");
  }
  /// Forgets the sends that completed.
  void reap() {
    for (auto it = sends_.begin(); it != sends_.end();) {
      int done = 0;
      check_mpi(MPI_Test(&it->first, &done, MPI_STATUS_IGNORE), "MPI_Test");
      it = done ? sends_.erase(it) : std::next(it);
    }
  }
  void wait_all() {
    while (!sends_.empty()) {
      reap();
      if (!sends_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  std::list<std::pair<MPI_Request, std::string>> sends_;
};

/// A chunk handed to a rank: positions in the batch, and whether the rank measures them or
/// only builds them.
struct Chunk {
  int rank = 0;
  std::vector<size_t> positions;
  bool measure = true;
};

std::string per_minute(int n, double seconds) {
  return seconds > 0 ? fmt::format("{:.1f}/min", 60.0 * n / seconds) : "-";
}

}  // namespace

bool launched_by_mpi() { return !env("OMPI_COMM_WORLD_SIZE").empty() || !env("PMIX_RANK").empty() || !env("PMI_RANK").empty(); }

int launcher_world_size() {
  std::string s = env("OMPI_COMM_WORLD_SIZE");
  try {
    return s.empty() ? 0 : std::stoi(s);
  } catch (const std::exception&) {
    return 0;
  }
}

class ClusterService;

struct Cluster::Impl {
  ClusterOptions opt;
  int rank = 0;
  int size = 1;
  std::vector<MachineInfo> machines;
  Outbox out;
  // This rank's own Measurer, kept while the task and options stay the same.
  std::string measurer_key;
  std::unique_ptr<Measurer> measurer;
  // Rank 0.
  std::map<std::string, std::vector<std::string>> mismatch;  // target → per rank, "" if it measures
  std::vector<RankStats> stats;
  std::map<int64_t, Chunk> in_flight;  // chunk id → chunk
  std::vector<int> in_flight_at;       // per rank
  int64_t next_chunk = 0;
  double measuring_s = 0;
  int finished = 0;  // results handed back to the tuner
  std::shared_ptr<MeasureService> service;

  /// Builds, or builds and measures, configs of a task on this rank; a failure to set up the
  /// task or the Measurer (a template this binary lacks, no GPU) is an error result for each.
  std::vector<records::MeasureResult> run_chunk(const json& task, const json& mopt, const std::vector<int64_t>& idx,
                                                bool measure) {
    try {
      std::string key = task.dump() + mopt.dump();
      if (!measurer || key != measurer_key) {
        measurer.reset();
        measurer = std::make_unique<Measurer>(protocol::task_from_json(task), protocol::measure_options_from_json(mopt));
        measurer_key = key;
      }
      return measure ? measurer->measure(idx) : measurer->build(idx);
    } catch (const std::exception& e) {
      measurer.reset();
      measurer_key.clear();
      records::MeasureResult r;
      r.error = records::ErrorCode::kUnknown;
      r.error_msg = fmt::format("rank {} ({}): {}", rank, machines.empty() ? host_name() : machines[size_t(rank)].host,
                                e.what());
      return std::vector<records::MeasureResult>(idx.size(), r);
    }
  }

  std::string describe(int r) const { return fmt::format("rank {} on {}", r, machines[size_t(r)].describe()); }

  /// Takes up to a chunk's worth of positions for rank r: a measuring rank takes configs
  /// already built by a compile-only rank first.
  std::vector<size_t> take(int r, const MeasureOptions& mo, std::deque<size_t>& unchecked, std::deque<size_t>& built) {
    size_t n = size_t(mo.n_parallel > 0 ? mo.n_parallel : machines[size_t(r)].cores);
    std::vector<size_t> pos;
    if (stats[size_t(r)].measures) {
      while (pos.size() < n && !built.empty()) pos.push_back(built.front()), built.pop_front();
    }
    while (pos.size() < n && !unchecked.empty()) pos.push_back(unchecked.front()), unchecked.pop_front();
    return pos;
  }

  void announce(const Target& target);
  std::vector<records::MeasureResult> measure(const Task& task, const MeasureOptions& mo,
                                              const std::vector<int64_t>& indices);
  void report_throughput();
  void drain();
};

class ClusterService : public MeasureService {
 public:
  explicit ClusterService(Cluster::Impl* impl) : impl_(impl) {}
  int parallelism(const MeasureOptions& opt) override {
    int n = 0;
    for (int r = 0; r < impl_->size; ++r) {
      if (r == 0 && !impl_->opt.rank0_measures) continue;
      n += opt.n_parallel > 0 ? opt.n_parallel : impl_->machines[size_t(r)].cores;
    }
    return std::max(1, n);
  }
  std::vector<records::MeasureResult> measure(const Task& task, const MeasureOptions& opt,
                                              const std::vector<int64_t>& indices) override {
    return impl_->measure(task, opt, indices);
  }

 private:
  Cluster::Impl* impl_;
};

Cluster::Cluster(int* argc, char*** argv, ClusterOptions opt) : impl_(new Impl) {
  impl_->opt = opt;
  LOOM_CHECK(opt.chunks_in_flight >= 1, "ClusterOptions: chunks_in_flight must be at least 1, got {}",
             opt.chunks_in_flight);
  int initialized = 0;
  MPI_Initialized(&initialized);
  LOOM_CHECK(!initialized, "distributed tuning: MPI is initialized already (one Cluster per process)");
  // The measuring workers are forked after MPI_Init; they never call MPI.
  ::setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_rank(MPI_COMM_WORLD, &impl_->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl_->size);
  MachineInfo me = MachineInfo::local();
  // Test hook (tests/e2e/distributed_test.cc): "R:NAME" makes rank R present its CPU as LLVM's
  // NAME, so that its CPU differs from rank 0's and it only compiles.
  if (std::string hook = env("LOOM_DISTRIBUTED_TEST_FAKE_CPU"); !hook.empty()) {
    size_t colon = hook.find(':');
    if (colon != std::string::npos && hook.substr(0, colon) == std::to_string(impl_->rank)) me.cpu = hook.substr(colon + 1);
  }
  if (impl_->rank != 0) {
    std::string text = protocol::to_json(me).dump();
    check_mpi(MPI_Send(text.data(), int(text.size()), MPI_BYTE, 0, protocol::kHello, MPI_COMM_WORLD), "MPI_Send");
    impl_->machines.assign(size_t(impl_->size), MachineInfo{});
    impl_->machines[size_t(impl_->rank)] = me;
    return;
  }
  impl_->machines.push_back(me);
  for (int r = 1; r < impl_->size; ++r)
    impl_->machines.push_back(protocol::machine_from_json(parse(receive(r), protocol::kHello)));
  impl_->stats.resize(size_t(impl_->size));
  impl_->in_flight_at.assign(size_t(impl_->size), 0);
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < impl_->size; ++r) {
    impl_->stats[size_t(r)].machine = impl_->machines[size_t(r)];
    by_host[impl_->machines[size_t(r)].host].push_back(r);
  }
  if (std::ostream* os = opt.progress) {
    *os << fmt::format("[cluster] {} ranks on {} host(s)\n", impl_->size, by_host.size());
    for (const auto& [host, ranks] : by_host) {
      if (ranks.size() > 1)
        *os << fmt::format("[cluster] warning: ranks {} share host {}: their compiles and runs disturb each other's "
                           "timings (start one rank per machine: mpirun --map-by ppr:1:node, or Slurm "
                           "--ntasks-per-node=1)\n",
                           fmt::join(ranks, ","), host);
    }
  }
}

Cluster::~Cluster() {
  try {
    if (impl_->rank == 0) {
      impl_->service.reset();
      impl_->drain();
      for (int r = 1; r < impl_->size; ++r) impl_->out.send(r, protocol::kStop, "{}");
    }
    impl_->out.wait_all();
  } catch (const std::exception& e) {
    std::cerr << "loom: distributed tuning: " << e.what() << '\n';
  }
  impl_->measurer.reset();
  MPI_Finalize();
}

int Cluster::rank() const { return impl_->rank; }
int Cluster::size() const { return impl_->size; }
const std::vector<MachineInfo>& Cluster::machines() const { return impl_->machines; }

std::shared_ptr<MeasureService> Cluster::service() {
  LOOM_CHECK(impl_->rank == 0, "distributed tuning: only rank 0 measures through the cluster (this is rank {})",
             impl_->rank);
  if (!impl_->service) impl_->service = std::make_shared<ClusterService>(impl_.get());
  return impl_->service;
}

void Cluster::announce(const Target& target) {
  LOOM_CHECK(impl_->rank == 0, "distributed tuning: only rank 0 announces targets (this is rank {})", impl_->rank);
  impl_->announce(target);
}

std::vector<RankStats> Cluster::stats() const { return impl_->stats; }

void Cluster::Impl::announce(const Target& target) {
  const std::string key = target.str();
  if (!mismatch.count(key)) {
    std::vector<std::string> why(static_cast<size_t>(size));
    json probe = {{"target", key}, {"reference", protocol::to_json(machines[0])}};
    for (int r = 1; r < size; ++r) out.send(r, protocol::kProbe, probe.dump());
    try {
      why[0] = local_measure_mismatch(target, machines[0], machines[0]);
    } catch (const std::exception& e) {
      why[0] = e.what();
    }
    for (int r = 1; r < size; ++r) why[size_t(r)] = parse(receive(r), protocol::kProbeReply).at("why").get<std::string>();
    out.reap();
    mismatch[key] = why;
    if (std::ostream* os = opt.progress) {
      for (int r = 0; r < size; ++r) {
        if (r == 0 && !opt.rank0_measures)
          *os << fmt::format("[cluster] {}: runs the search only\n", describe(r));
        else if (why[size_t(r)].empty())
          *os << fmt::format("[cluster] {}: builds and measures \"{}\"\n", describe(r), key);
        else
          *os << fmt::format("[cluster] {}: only compiles for \"{}\": {}\n", describe(r), key, why[size_t(r)]);
      }
    }
  }
  const std::vector<std::string>& why = mismatch[key];
  std::vector<std::string> reasons;
  bool any = false;
  for (int r = 0; r < size; ++r) {
    stats[size_t(r)].measures = why[size_t(r)].empty();
    if (r == 0 && !opt.rank0_measures) continue;
    any = any || why[size_t(r)].empty();
    if (!why[size_t(r)].empty()) reasons.push_back(fmt::format("rank {}: {}", r, why[size_t(r)]));
  }
  if (any) return;
  fail("distributed tuning: no rank can measure target \"{}\" ({})", key, fmt::join(reasons, "; "));
}

std::vector<records::MeasureResult> Cluster::Impl::measure(const Task& task, const MeasureOptions& mo,
                                                           const std::vector<int64_t>& indices) {
  const auto t0 = Clock::now();
  drain();  // chunks of a batch that an exception abandoned
  announce(task.target());
  const json task_j = protocol::task_json(task), opt_j = protocol::to_json(mo);
  std::vector<records::MeasureResult> results(indices.size());
  std::deque<size_t> unchecked, built;
  for (size_t i = 0; i < indices.size(); ++i) unchecked.push_back(i);
  size_t done = 0;
  auto index_list = [&](const std::vector<size_t>& pos) {
    std::vector<int64_t> idx;
    for (size_t p : pos) idx.push_back(indices[p]);
    return idx;
  };
  auto finish = [&](const Chunk& c, std::vector<records::MeasureResult> rs) {
    LOOM_CHECK(rs.size() == c.positions.size(), "distributed tuning: rank {} returned {} results for {} configs",
               c.rank, rs.size(), c.positions.size());
    RankStats& st = stats[size_t(c.rank)];
    for (size_t k = 0; k < rs.size(); ++k) {
      records::MeasureResult& r = rs[k];
      if (c.rank != 0) {
        r.host = machines[size_t(c.rank)].host;
        r.cpu = machines[size_t(c.rank)].cpu_model;
      }
      if (c.measure) ++st.measured;
      else ++st.built;
      if (!c.measure && r.error == records::ErrorCode::kNoError) {
        built.push_back(c.positions[k]);  // compiles: a measuring rank times it
        continue;
      }
      results[c.positions[k]] = std::move(r);
      ++done;
    }
  };
  auto receive_results = [&](bool wait) {
    std::optional<Message> m = wait ? std::optional<Message>(receive(MPI_ANY_SOURCE)) : try_receive(MPI_ANY_SOURCE);
    if (!m) return false;
    json j = parse(*m, protocol::kResult);
    auto it = in_flight.find(j.at("id").get<int64_t>());
    LOOM_CHECK(it != in_flight.end() && it->second.rank == m->source,
               "distributed tuning: rank {} answered a chunk it was not given", m->source);
    std::vector<records::MeasureResult> rs;
    for (const json& r : j.at("results")) rs.push_back(protocol::result_from_json(r));
    Chunk c = std::move(it->second);
    in_flight.erase(it);
    --in_flight_at[size_t(c.rank)];
    finish(c, std::move(rs));
    return true;
  };

  while (done < indices.size()) {
    for (int r = 1; r < size; ++r) {
      while (in_flight_at[size_t(r)] < opt.chunks_in_flight) {
        Chunk c{r, take(r, mo, unchecked, built), stats[size_t(r)].measures};
        if (c.positions.empty()) break;
        int64_t id = next_chunk++;
        json work = {{"id", id}, {"task", task_j}, {"opt", opt_j}, {"measure", c.measure}, {"indices", index_list(c.positions)}};
        out.send(r, protocol::kWork, work.dump());
        in_flight[id] = std::move(c);
        ++in_flight_at[size_t(r)];
      }
    }
    while (receive_results(false)) {
    }
    out.reap();
    if (done >= indices.size()) break;
    if (opt.rank0_measures) {
      Chunk c{0, take(0, mo, unchecked, built), stats[0].measures};
      if (!c.positions.empty()) {
        finish(c, run_chunk(task_j, opt_j, index_list(c.positions), c.measure));
        continue;
      }
    }
    if (!in_flight.empty()) receive_results(true);
  }
  measuring_s += std::chrono::duration<double>(Clock::now() - t0).count();
  finished += int(indices.size());
  report_throughput();
  return results;
}

void Cluster::Impl::report_throughput() {
  std::ostream* os = opt.progress;
  if (!os) return;
  std::string ranks;
  for (int r = 0; r < size; ++r) {
    const RankStats& st = stats[size_t(r)];
    if (r == 0 && !opt.rank0_measures) continue;
    ranks += fmt::format("{}rank {} {}: {}{}", ranks.empty() ? "" : ", ", r, machines[size_t(r)].host,
                         per_minute(st.built + st.measured, measuring_s), st.measures ? "" : " (compiles only)");
  }
  int m, s;
  m = int(measuring_s) / 60, s = int(measuring_s) % 60;
  *os << fmt::format("[cluster] {} candidates in {}m{:02d}s of measuring: {} in all; {}\n", finished, m, s,
                     per_minute(finished, measuring_s), ranks);
}

void Cluster::Impl::drain() {
  while (!in_flight.empty()) {
    Message m = receive(MPI_ANY_SOURCE);
    if (m.tag != protocol::kResult) continue;
    json j = json::parse(m.text, nullptr, false);
    if (j.is_discarded() || !j.contains("id")) continue;
    auto it = in_flight.find(j["id"].get<int64_t>());
    if (it == in_flight.end()) continue;
    --in_flight_at[size_t(it->second.rank)];
    in_flight.erase(it);
  }
}

void Cluster::serve() {
  LOOM_CHECK(impl_->rank != 0, "distributed tuning: rank 0 runs the search; serve() is for the other ranks");
  Impl& im = *impl_;
  // Test hook (tests/e2e/distributed_test.cc): "R:N" makes rank R kill itself with SIGKILL
  // once it has finished N candidates, before it returns them: a rank lost mid-job.
  int kill_rank = -1, kill_after = 0, finished = 0;
  if (std::string hook = env("LOOM_DISTRIBUTED_TEST_KILL"); !hook.empty())
    std::sscanf(hook.c_str(), "%d:%d", &kill_rank, &kill_after);
  const MachineInfo& me = im.machines[size_t(im.rank)];
  for (;;) {
    Message m = receive(0);
    if (m.tag == protocol::kStop) break;
    if (m.tag == protocol::kProbe) {
      json j = parse(m, protocol::kProbe);
      std::string target = j.at("target").get<std::string>(), why;
      try {
        why = local_measure_mismatch(Target(target), me, protocol::machine_from_json(j.at("reference")));
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty())
        std::cerr << fmt::format("loom: rank {} on {}: only compiles candidates for \"{}\": {}\n", im.rank,
                                 me.describe(), target, why);
      im.out.send(0, protocol::kProbeReply, json{{"why", why}}.dump());
    } else {
      json j = parse(m, protocol::kWork);
      std::vector<int64_t> idx = j.at("indices").get<std::vector<int64_t>>();
      std::vector<records::MeasureResult> rs = im.run_chunk(j.at("task"), j.at("opt"), idx, j.at("measure").get<bool>());
      finished += int(idx.size());
      if (im.rank == kill_rank && finished >= kill_after) ::raise(SIGKILL);
      json results = json::array();
      for (const records::MeasureResult& r : rs) results.push_back(protocol::to_json(r));
      im.out.send(0, protocol::kResult, json{{"id", j.at("id")}, {"results", results}}.dump());
    }
    im.out.reap();
  }
  im.out.wait_all();
}

}  // namespace loom::tuner::distributed
